"""The checks every family's config shares (models/configuration_utils.py): their messages name the field, show the
value and say what is allowed; `CheckedConfig` knows a subclass's fields, saves every field, compares every field,
and refuses a bad config.json in the saved code too, in a process without hf_seqmodels."""

import json
import subprocess
import sys
import textwrap

import pytest

import hf_seqmodels
from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.models.configuration_utils import (
    DEFAULT_MAX_MODEL_GB,
    GB,
    check_architectures,
    check_choice,
    check_dropouts,
    check_flags,
    check_keys,
    check_labels,
    check_optional_sizes,
    check_positive_number,
    check_pretrained_fields,
    check_sizes,
    check_token_ids,
    own_fields,
    parameter_count,
    with_heads,
)


def without(config_dict: dict, key: str) -> dict:
    return {name: value for name, value in config_dict.items() if name != key}


@pytest.mark.parametrize(
    "check, message",
    [
        (lambda: check_choice("cell_type", "LSTM", ("rnn", "lstm")),
         "`cell_type`='LSTM' is not supported; choose one of 'rnn', 'lstm'."),
        (lambda: check_flags(bidirectional="false"), "`bidirectional`='false' must be True or False (a bool)."),
        (lambda: check_sizes(hidden_size=8.0), "`hidden_size`=8.0 must be a positive integer."),
        (lambda: check_optional_sizes(attention_size=0), "`attention_size`=0 must be a positive integer or None."),
        (lambda: check_dropouts(dropout="0.1"),
         "`dropout`='0.1' must be a number in [0, 1): the probability of zeroing an activation."),
        (lambda: check_dropouts(dropout=float("nan")),
         "`dropout`=nan must be in [0, 1): it is the probability of zeroing an activation."),
        (lambda: check_positive_number("layer_norm_eps", float("inf"), "the epsilon"),
         "`layer_norm_eps`=inf must be a positive number (finite): the epsilon."),
        (lambda: check_token_ids(10, pad_token_id=5.0),
         "`pad_token_id`=5.0 must be None or a token id (an integer in the vocabulary, 0..9)."),
        (lambda: check_token_ids(10, pad_token_id=[1]),
         "`pad_token_id`=[1] must be None or a token id (an integer in the vocabulary, 0..9)."),
        (lambda: check_token_ids(10, eos_token_id=[]),
         "`eos_token_id`=[] must be None or a token id (an integer in the vocabulary, 0..9) or a non-empty list of "
         "them."),
        (lambda: check_token_ids(10, "source vocabulary", pad_token_id=10),
         "`pad_token_id`=10 is outside the source vocabulary (0..9)."),
        (lambda: check_labels({"num_labels": 0}),
         "`num_labels`=0 must be a positive integer: the number of classes (1 for regression)."),
        (lambda: check_labels({"id2label": {"1": "pos"}}),
         "`id2label`={'1': 'pos'} must be a non-empty dict that maps the label ids 0..n-1 to their names (strings)."),
        (lambda: check_labels({"num_labels": 3, "id2label": {"0": "neg", "1": "pos"}}),
         "`num_labels`=3 disagrees with `id2label`, which names 2 labels: give one of them, or both in agreement."),
        (lambda: check_labels({"id2label": {"0": "neg"}, "label2id": {"neg": 1}}),
         "`label2id`={'neg': 1} must come with `id2label` (here {'0': 'neg'}) and be its inverse: a dict that maps "
         "each label name to its id."),
        (lambda: check_labels({"problem_type": "regresion"}),
         "`problem_type`='regresion' is not supported; choose one of 'regression', 'single_label_classification', "
         "'multi_label_classification', None."),
        (lambda: check_pretrained_fields({"chunk_size_feed_forward": -1}),
         "`chunk_size_feed_forward`=-1 must be an integer >= 0 (kept, as transformers' configs keep it; hf_seqmodels "
         "models do not chunk, which gives the same results)."),
        (lambda: check_pretrained_fields({"dtype": "auto"}),
         "`dtype`='auto' must be None, a torch.dtype or its name (such as 'float32')."),
        (lambda: check_keys(RecurrentConfig, {"model_type": "bert"}),
         "`model_type`='bert' is not RecurrentConfig's ('recurrent'): the config was written for another model; "
         "load it with AutoConfig or that model's config class."),
        (lambda: check_keys(RecurrentConfig, {"num_hidden_layers": 2}),
         "`num_hidden_layers`=2 is another name for `num_layers`: set num_layers instead."),
        (lambda: check_keys(RecurrentConfig, {"hiden_size": 8}, strict=True),
         "`hiden_size`=8 is not a field of RecurrentConfig (did you mean `hidden_size`?); its fields are "
         f"{', '.join(own_fields(RecurrentConfig))}, and PretrainedConfig's own."),
        (lambda: check_keys(RecurrentConfig, without(RecurrentConfig().to_diff_dict(), "nonlinearity"), loading=True),
         "The config lacks `nonlinearity` of RecurrentConfig: saving writes every field, and a default in its place "
         "could change what the model computes; add the value it was saved with."),
        (lambda: check_architectures(TransformerConfig, ["RecurrentForCausalLM"], strict=True),
         "`architectures`=['RecurrentForCausalLM'] must be None or a list of TransformerConfig's model classes "
         "(Transformer...): the config was written for another model."),
    ],
)
def test_messages_name_the_field_the_value_and_what_is_allowed(check, message):
    with pytest.raises(ValueError) as error:
        check()
    assert str(error.value) == message


class TaggerConfig(RecurrentConfig):
    """A user's config on top of a family's, with a field of its own."""

    def __init__(self, crf: bool = False, **kwargs):
        self.crf = crf
        super().__init__(**kwargs)


def test_a_subclass_knows_its_fields_and_its_bases():
    assert own_fields(TaggerConfig) == ("crf", *own_fields(RecurrentConfig))
    config = TaggerConfig(crf=True, hidden_size=8, architectures=["TaggerModel", "RecurrentModel"])
    loaded = TaggerConfig.from_dict(config.to_diff_dict())
    assert (loaded.crf, loaded.hidden_size) == (True, 8)
    with pytest.raises(ValueError, match="lacks `crf`"):
        TaggerConfig.from_dict(RecurrentConfig().to_diff_dict())


def test_saving_writes_every_field():
    """PretrainedConfig's diff leaves out a value equal to its own default: `is_encoder_decoder=False` would come
    back True."""
    config = TransformerConfig(is_encoder_decoder=False)
    assert set(own_fields(TransformerConfig)) <= config.to_diff_dict().keys()
    assert TransformerConfig.from_dict(config.to_diff_dict()).is_encoder_decoder is False


FIELD_VALUES = {  # a value other than the default for every field each family's __init__ hands to `set_fields`
    RecurrentConfig: dict(vocab_size=30, embedding_size=6, hidden_size=12, num_layers=3, cell_type="gru",
                          nonlinearity="relu", bidirectional=True, embedding_dropout=0.1, dropout=0.2,
                          output_dropout=0.3, locked_dropout=True, weight_drop=0.4, word_type_dropout=0.05,
                          activation_regularization=2.0, temporal_activation_regularization=1.0,
                          tie_word_embeddings=False, adaptive_softmax_cutoffs=(10, 20), adaptive_softmax_div_value=2.0,
                          spelling_features=4, spelling_embedding_size=5, spelling_kernel_size=5,
                          max_spelling_length=9, classifier_pooling="max", use_crf=True, crf_constrain_bio=False,
                          initializer_range=0.5, use_cache=False, pad_token_id=0, bos_token_id=1, eos_token_id=[2, 3]),
    TransformerConfig: dict(vocab_size=30, source_vocab_size=40, d_model=16, num_heads=2, encoder_layers=1,
                            decoder_layers=2, ffn_dim=20, activation="gelu", dropout=0.2, attention_dropout=0.1,
                            activation_dropout=0.3, norm_position="pre", position_embedding="learned",
                            max_position_embeddings=64, scale_embedding=False, share_encoder_decoder_embeddings=False,
                            tie_word_embeddings=False, layer_norm_eps=1e-6, classifier_pooling="max",
                            classifier_dropout=0.4, use_crf=True, crf_constrain_bio=False, use_cache=False,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
                            is_encoder_decoder=False),
    AttentionSeq2SeqConfig: dict(vocab_size=30, source_vocab_size=40, embedding_size=6, hidden_size=12,
                                 cell_type="lstm", encoder_layers=2, decoder_layers=3, bidirectional_encoder=False,
                                 attention_type="bahdanau", attention_size=7, input_feeding=False, dropout=0.2,
                                 teacher_forcing_ratio=0.5, tie_word_embeddings=False, initializer_range=0.5,
                                 use_cache=False, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                 decoder_start_token_id=3),
}


@pytest.mark.parametrize("config_class", FIELD_VALUES)
def test_every_field_keeps_the_value_given(config_class):
    """`set_fields` sets each field, `use_cache` too (PretrainedConfig's `__init__` drops it as a generation option),
    and `is_encoder_decoder`, which PretrainedConfig declares, through PretrainedConfig."""
    values = FIELD_VALUES[config_class]
    assert set(values) == set(own_fields(config_class))
    expected = {**values, "adaptive_softmax_cutoffs": [10, 20]} if config_class is RecurrentConfig else values
    config = config_class(**values)
    for made in (config, config_class.from_dict(config.to_diff_dict())):
        assert {name: getattr(made, name) for name in values} == expected


def test_equality_compares_every_field():
    """transformers' dataclass `__eq__` compared PretrainedConfig's fields alone: any two dropouts were equal."""
    assert RecurrentConfig(dropout=0.1) != RecurrentConfig(dropout=0.2)
    assert RecurrentConfig(dropout=0.1) == RecurrentConfig(dropout=0.1)


REFUSALS_SCRIPT = textwrap.dedent(
    """
    import json
    import re
    import sys

    sys.modules["hf_seqmodels"] = None  # makes `import hf_seqmodels` fail: only the saved code may load
    from transformers import AutoConfig

    for folder, message in json.loads(sys.argv[1]):
        try:
            config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
            assert message is None and type(config).__module__.startswith("transformers_modules."), folder
            print("loaded", folder)
        except ValueError as error:
            assert message is not None and re.search(message, str(error)), (folder, str(error))
            print("refused", folder)
    """
)


@pytest.mark.slow
def test_saved_code_refuses_a_bad_config_json(tmp_path):
    """The checks travel with a saved folder: trust_remote_code loads a folder's own configuration_utils.py."""
    edits = {  # name: (the key to remove, the keys to set, what the error must say; None: it loads)
        "good": ("", {}, None),
        "missing": ("nonlinearity", {}, "lacks `nonlinearity`"),
        "model_type": ("", {"model_type": "transformer"}, "`model_type`='transformer'"),
        "flag": ("", {"bidirectional": "false"}, "`bidirectional`='false' must be True or False"),
        "unknown": ("", {"dropuot": 0.1}, None),  # kept, as transformers' configs keep it; load_pretrained refuses
        "size": ("", {"num_layers": 10**9}, r"num_layers=1000000000.*HF_SEQMODELS_MAX_MODEL_GB"),
    }
    cases = []
    for name, (drop, changes, message) in edits.items():
        folder = tmp_path / name
        RecurrentConfig(vocab_size=20, embedding_size=4, hidden_size=4).save_pretrained(folder)
        saved = without(json.loads((folder / "config.json").read_text()), drop)
        (folder / "config.json").write_text(json.dumps(saved | changes))
        cases.append((str(folder), message))
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", REFUSALS_SCRIPT, json.dumps(cases)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    refused = sum(message is not None for _, message in cases)
    assert result.stdout.count("refused") == refused and result.stdout.count("loaded") == len(cases) - refused, \
        result.stdout


@pytest.mark.parametrize("config_class", [RecurrentConfig, AttentionSeq2SeqConfig, TransformerConfig])
def test_a_config_saved_before_the_later_fields_loads_with_their_defaults(config_class, tmp_path):
    """A config.json written before `fields_added_later` existed loads, with their defaults; any other missing
    field is still refused."""
    config_class().save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert config_class.fields_added_later and set(config_class.fields_added_later) <= set(saved)
    older = {key: value for key, value in saved.items() if key not in config_class.fields_added_later}
    (tmp_path / "config.json").write_text(json.dumps(older))
    loaded = config_class.from_pretrained(tmp_path)
    for name in config_class.fields_added_later:
        assert getattr(loaded, name) == getattr(config_class(), name)
    del older["dropout"]
    (tmp_path / "config.json").write_text(json.dumps(older))
    with pytest.raises(ValueError, match="lacks `dropout`"):
        config_class.from_pretrained(tmp_path)


# The size estimate (`size_terms`) against the parameters torch builds: the independent count

def R(**fields) -> RecurrentConfig:
    return RecurrentConfig(**{"vocab_size": 50, "embedding_size": 8, "hidden_size": 12, "num_layers": 2,
                              "num_labels": 5, **fields})


def A(**fields) -> AttentionSeq2SeqConfig:
    return AttentionSeq2SeqConfig(**{"vocab_size": 50, "embedding_size": 8, "hidden_size": 12, "encoder_layers": 2,
                                     "decoder_layers": 2, **fields})


def T(**fields) -> TransformerConfig:
    return TransformerConfig(**{"vocab_size": 50, "d_model": 16, "num_heads": 2, "encoder_layers": 2,
                                "decoder_layers": 3, "ffn_dim": 24, "max_position_embeddings": 32, "num_labels": 5,
                                **fields})


ESTIMATED = {  # name: (model class, config, the stacks and head it builds)
    **{f"recurrent LM {cell}": ("RecurrentForCausalLM", R(cell_type=cell), None, "lm_head") for cell in
       ("rnn", "lstm", "gru")},
    "recurrent LM untied": ("RecurrentForCausalLM", R(tie_word_embeddings=False), None, "lm_head"),
    "recurrent LM adaptive softmax": ("RecurrentForCausalLM", R(tie_word_embeddings=False, hidden_size=16,
                                      adaptive_softmax_cutoffs=[10, 30], adaptive_softmax_div_value=2.0), None,
                                      "lm_head"),
    "recurrent LM spelling": ("RecurrentForCausalLM", R(spelling_features=6), None, "lm_head"),
    "recurrent base": ("RecurrentModel", R(bidirectional=True), None, "body"),
    "bidirectional classifier": ("RecurrentForSequenceClassification", R(bidirectional=True, cell_type="gru",
                                 classifier_pooling="attention"), None, "classifier"),
    "tagger with CRF": ("RecurrentForTokenClassification", R(bidirectional=True, use_crf=True), None, "classifier"),
    **{f"attention {kind} {cell}": ("AttentionSeq2SeqForConditionalGeneration",
                                    A(cell_type=cell, attention_type=kind, bidirectional_encoder=kind != "luong_dot",
                                      input_feeding=kind.startswith("luong")), None, "lm_head")
       for kind in ("bahdanau", "luong_dot", "luong_general", "luong_concat", "none") for cell in ("gru", "lstm")},
    "attention untied, own source vocabulary": ("AttentionSeq2SeqForConditionalGeneration",
                                                A(tie_word_embeddings=False, source_vocab_size=70, attention_size=5),
                                                None, "lm_head"),
    "attention base": ("AttentionSeq2SeqModel", A(), None, "body"),
    "transformer encoder-decoder": ("TransformerForConditionalGeneration", T(), "both", "lm_head"),
    "transformer untied, learned positions, pre-norm": ("TransformerForConditionalGeneration",
                                                        T(tie_word_embeddings=False, position_embedding="learned",
                                                          norm_position="pre", source_vocab_size=70), "both",
                                                        "lm_head"),
    "transformer shared embeddings": ("TransformerForConditionalGeneration", T(share_encoder_decoder_embeddings=True),
                                      "both", "lm_head"),
    "transformer base": ("TransformerModel", T(), "both", "body"),
    "transformer decoder-only": ("TransformerForCausalLM", T(tie_word_embeddings=False), "decoder", "lm_head"),
    "transformer encoder-only": ("TransformerEncoderModel", T(), "encoder", "body"),
    "transformer classifier": ("TransformerForSequenceClassification", T(classifier_pooling="attention"), "encoder",
                               "classifier"),
    "transformer tagger with CRF": ("TransformerForTokenClassification", T(use_crf=True), "encoder", "classifier"),
}


@pytest.mark.parametrize("name", ESTIMATED)
def test_the_size_estimate_is_within_a_factor_of_2_of_the_parameters(name):
    """Counted from the fields, never built: within a factor of 2 of `sum(p.numel() for p in model.parameters())`
    for the model built, and the bound the config check uses (the largest model the config builds) no less than half
    of it. Tied weights count once, as `parameters()` does."""
    class_name, config, stacks, head = ESTIMATED[name]
    model = getattr(hf_seqmodels, class_name)(config)
    parameters = sum(p.numel() for p in model.parameters())
    estimate = parameter_count(config.size_terms(stacks), head)
    assert parameters / 2 <= estimate <= 2 * parameters, (estimate, parameters)
    bound = sum(term.bytes for term in with_heads(config.size_terms())) / 4
    assert bound >= parameters / 2, (bound, parameters)


def test_the_default_limit_holds_what_the_size_terms_count():
    """`check_model_size` refuses from the terms' bytes, and not below the limit: a config just under it is made."""
    terms = RecurrentConfig(hidden_size=60_000).size_terms()
    assert sum(term.bytes for term in with_heads(terms)) < DEFAULT_MAX_MODEL_GB * GB
    RecurrentConfig(hidden_size=60_000)
    with pytest.raises(ValueError, match=r"\(hidden_size=70000, "):
        RecurrentConfig(hidden_size=70_000)
