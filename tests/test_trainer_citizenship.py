"""transformers' Trainer and Seq2SeqTrainer on every head, beyond what ModelTesterMixin.test_trainer checks (a few
steps, evaluate, predict): the training loss falls, a checkpoint the Trainer saves loads back as the model it
trained, a run resumed from a checkpoint ends with the weights of the run that was not stopped, and
Seq2SeqTrainer's predict_with_generate returns what model.generate gives for the same inputs. And our own training
loop (hf_seqmodels.training.loop) with --gradient_checkpointing."""

import importlib

import pytest
import torch
from transformers import (
    DataCollatorForSeq2Seq,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    Trainer,
    TrainingArguments,
)

from hf_seqmodels import AttentionSeq2SeqForConditionalGeneration, TransformerForConditionalGeneration
from hf_seqmodels.tasks.arguments import task_parser
from hf_seqmodels.training.loop import TrainingArguments as TrainingLoopArguments

from .models.test_modeling_attention_seq2seq import AttentionSeq2SeqModelTester
from .models.test_modeling_recurrent import RecurrentModelTester
from .models.test_modeling_transformer import TransformerModelTester
from .test_modeling_common import collate, make_model, make_tokenizer, random_labels, takes_labels
from .training.test_loop import run as run_training

TESTERS = [RecurrentModelTester("lstm"), AttentionSeq2SeqModelTester(("gru", "bahdanau", False, True)),
           TransformerModelTester("paper")]
HEADS = [(tester, model_class) for tester in TESTERS for model_class in tester.all_model_classes
         if takes_labels(model_class)]


def dataset_of(model, config, examples) -> list[dict]:
    """The examples with random labels in the head's output space, unpadded (``collate`` pads them)."""
    labels = random_labels(model, collate(examples, config.pad_token_id))
    return [{**example, "labels": row[row != -100] if row.dim() else row} for example, row in zip(examples, labels)]


def trainer_for(model, config, dataset, output_dir, **changes) -> Trainer:
    args = TrainingArguments(**{
        "output_dir": str(output_dir), "max_steps": 4, "per_device_train_batch_size": 2,
        "per_device_eval_batch_size": 4, "learning_rate": 1e-2, "report_to": [], "use_cpu": True,
        "save_strategy": "steps", "save_steps": 2, "logging_steps": 1, "disable_tqdm": True, "seed": 0,
        "dataloader_pin_memory": False, **changes,
    })
    return Trainer(model=model, args=args, train_dataset=dataset, eval_dataset=dataset,
                   data_collator=lambda features: collate(features, config.pad_token_id))


@pytest.mark.parametrize("tester, model_class", HEADS, ids=[cls.__name__ for _, cls in HEADS])
@pytest.mark.slow
def test_trainer_trains_saves_and_resumes(tester, model_class, tmp_path):
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    dataset = dataset_of(model, config, tester.get_examples(config))
    first_eval = trainer_for(model, config, dataset, tmp_path / "unused").evaluate()["eval_loss"]

    trainer = trainer_for(model, config, dataset, tmp_path / "run")
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses))), losses
    last_eval = trainer.evaluate()["eval_loss"]
    assert last_eval < first_eval, (first_eval, last_eval)  # trained on the evaluation set itself

    # The Trainer's last checkpoint is the trained model, and evaluates the same.
    trained = {name: tensor.detach().clone() for name, tensor in trainer.model.state_dict().items()}
    loaded = model_class.from_pretrained(tmp_path / "run" / "checkpoint-4")
    assert loaded.state_dict().keys() == trained.keys()
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, trained[name]), name
    reloaded_eval = trainer_for(loaded, config, dataset, tmp_path / "unused").evaluate()["eval_loss"]
    assert reloaded_eval == pytest.approx(last_eval, abs=1e-6)

    # Resumed from step 2 (weights, optimizer, scheduler, RNG and data order from the checkpoint), the run ends
    # where the uninterrupted one did.
    resumed = trainer_for(make_model(model_class, config, seed=1), config, dataset, tmp_path / "resumed")
    resumed.train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))
    assert resumed.state.global_step == 4
    for name, tensor in resumed.model.state_dict().items():
        torch.testing.assert_close(tensor, trained[name], rtol=0, atol=1e-6, msg=name)


@pytest.mark.parametrize("tester, model_class", HEADS, ids=[cls.__name__ for _, cls in HEADS])
def test_trainer_gradient_checkpointing_gives_the_same_training(tester, model_class, tmp_path):
    """TrainingArguments(activation_checkpointing=True): the Trainer turns it on, and the run ends with the weights of
    the run without it."""
    config = tester.get_config(model_class)
    dataset = dataset_of(make_model(model_class, config), config, tester.get_examples(config))
    runs = {}
    for checkpointing in (False, True):
        trainer = trainer_for(make_model(model_class, config), config, dataset, tmp_path / str(checkpointing),
                              save_strategy="no", activation_checkpointing=checkpointing)
        trainer.train()
        assert trainer.model.is_activation_checkpointing == checkpointing
        runs[checkpointing] = trainer.model.state_dict()
    for name, tensor in runs[False].items():
        torch.testing.assert_close(runs[True][name], tensor, rtol=0, atol=1e-6, msg=name)


SEQ2SEQ = [(AttentionSeq2SeqModelTester(("lstm", "luong_general", True, True)), AttentionSeq2SeqForConditionalGeneration),
           (TransformerModelTester("paper"), TransformerForConditionalGeneration)]


@pytest.mark.parametrize("tester, model_class", SEQ2SEQ, ids=[cls.__name__ for _, cls in SEQ2SEQ])
def test_seq2seq_trainer_predicts_with_generate(tester, model_class, tmp_path):
    """Seq2SeqTrainer with predict_with_generate: train, evaluate (generating), predict; the predictions are the
    ids model.generate gives for the same batch and options (then padding)."""
    config = tester.get_config(model_class)
    model = make_model(model_class, config)
    examples = tester.get_examples(config)
    # Source ids, and labels ending with EOS: DataCollatorForSeq2Seq pads them and the model builds the decoder
    # inputs from the labels.
    rows = [{"input_ids": example["input_ids"].tolist(),
             "labels": example["decoder_input_ids"][1:].tolist() + [config.eos_token_id]} for example in examples]
    tokenizer = make_tokenizer(config.vocab_size)  # pads with id 0, the models' pad_token_id
    assert tokenizer.pad_token_id == config.pad_token_id
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, per_device_eval_batch_size=len(rows),
        learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True, seed=0,
        predict_with_generate=True, generation_max_length=6, generation_num_beams=2, dataloader_pin_memory=False,
    )
    collator = DataCollatorForSeq2Seq(tokenizer, model=model)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=rows, eval_dataset=rows, data_collator=collator)
    trainer.train()
    metrics = trainer.evaluate()
    assert torch.isfinite(torch.tensor(metrics["eval_loss"])), metrics

    options = {"max_new_tokens": 4, "num_beams": 2, "do_sample": False}
    predictions = torch.as_tensor(trainer.predict(rows, **options).predictions)
    batch = collator([{"input_ids": row["input_ids"]} for row in rows])
    trainer.model.eval()
    with torch.no_grad():
        expected = trainer.model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                          **options)
    assert predictions.shape[0] == len(rows)
    assert torch.equal(predictions[:, : expected.shape[1]], expected)
    assert bool((predictions[:, expected.shape[1]:] == config.pad_token_id).all())


# --- hf_seqmodels.training.loop: --gradient_checkpointing -------------------------------------------------------------


@pytest.mark.parametrize("task", ["language_modeling", "text_classification", "token_classification",
                                  "translation"])
def test_every_task_script_parses_gradient_checkpointing(task, tmp_path):
    """The run_* scripts parse their arguments with task_parser: the flag reaches training_args.TrainingArguments."""
    module = importlib.import_module(f"hf_seqmodels.tasks.{task}")
    for flag in ("--gradient_checkpointing", "--activation_checkpointing"):  # ours, and TrainingArguments' name
        parsed = task_parser(module).parse_args_into_dataclasses(["--output_dir", str(tmp_path), flag])
        assert [args.gradient_checkpointing for args in parsed if isinstance(args, TrainingLoopArguments)] == [True]


def test_training_with_gradient_checkpointing_ends_with_the_same_weights(tmp_path):
    """training.train with --gradient_checkpointing (dropout on: the recomputation must draw the same masks) ends
    where the run without it does, and the model did checkpoint."""
    plain, plain_results = run_training(tmp_path / "plain")
    checkpointed, results = run_training(tmp_path / "checkpointed", gradient_checkpointing=True)
    assert checkpointed.is_activation_checkpointing and not plain.is_activation_checkpointing
    assert results["steps"] == plain_results["steps"] > 0
    for name, tensor in plain.state_dict().items():
        torch.testing.assert_close(checkpointed.state_dict()[name], tensor, rtol=0, atol=1e-6, msg=name)
