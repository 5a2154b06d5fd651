"""hf_seqmodels.tasks.arguments: the same --model_type names in every task (the old spelling still works, with a
warning), one route from them to a config, and the same arguments from a command line or a dict of fields."""

import pytest

import hf_seqmodels  # noqa: F401  (registers the model types)
from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.tasks import language_modeling, text_classification, token_classification, translation
from hf_seqmodels.tasks.arguments import MODEL_TYPES, ModelArguments, parse_dict, task_parser

TASKS = (translation, language_modeling, text_classification, token_classification)


@pytest.mark.parametrize("task", TASKS, ids=lambda task: task.__name__.rsplit(".", 1)[-1])
def test_every_task_names_model_types_alike(task):
    assert set(task.ModelArguments.CHOICES) <= set(MODEL_TYPES)
    assert "transformer" in task.ModelArguments.CHOICES
    parser = task_parser(task)
    with pytest.warns(FutureWarning, match="--model_type vanilla_transformer is an old name: write --model_type "
                                           "transformer"):
        model_args = parser.parse_args_into_dataclasses(["--output_dir", "x", "--model_type", "vanilla_transformer"])[0]
    assert model_args.model_type == "transformer"
    with pytest.raises(ValueError, match="`--model_type`='lstm' is not supported; choose one of"):
        parser.parse_args_into_dataclasses(["--output_dir", "x", "--model_type", "lstm"])


@pytest.mark.parametrize("model_type, config_class", [("recurrent", RecurrentConfig),
                                                      ("attention_seq2seq", AttentionSeq2SeqConfig),
                                                      ("transformer", TransformerConfig)])
def test_config_from_model_type_fields_and_overrides(model_type, config_class):
    overrides = "dropout=0.25" if model_type != "recurrent" else "output_dropout=0.25"
    field = overrides.split("=")[0]
    tokenizer = train_tokenizer(["a b c d"], "word")
    config = ModelArguments(model_type=model_type, config_overrides=overrides).config(tokenizer, **{field: 0.5})
    assert type(config) is config_class and config.vocab_size == len(tokenizer)
    assert (config.pad_token_id, config.eos_token_id) == (tokenizer.pad_token_id, tokenizer.eos_token_id)
    assert getattr(config, field) == 0.25  # the overrides win over the task's fields
    assert config.model_type == model_type


def test_translation_refuses_a_language_model_family():
    with pytest.raises(ValueError, match="`--model_type`='recurrent' is not supported"):
        translation.ModelArguments(model_type="recurrent")


def test_a_dict_of_fields_gives_what_the_command_line_gives():
    from_cli = task_parser(translation).parse_args_into_dataclasses(["--output_dir", "x", "--num_beams", "2"])
    from_dict = parse_dict(translation, {"output_dir": "x", "num_beams": 2})
    assert from_dict == tuple(from_cli)
    assert from_dict[2].learning_rate == translation.TRAINING_DEFAULTS["learning_rate"]  # the task's defaults
    with pytest.raises(ValueError, match="nope"):
        parse_dict(translation, {"output_dir": "x", "nope": 1})
