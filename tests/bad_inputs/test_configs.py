"""Bad configs: every field of every family's config given a value of the wrong type or out of range, on construction
and in a loaded config dict or config.json; config.json files that lack a field or were written for another model,
and, read by our loaders, that hold an unknown key or another family's architectures; the fields PretrainedConfig
keeps (labels, problem type, flags, dtype). Each must give a clear error that names the field and shows the value;
good values must be kept as given, through saving and loading."""

import inspect
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoConfig
from transformers.testing_utils import CaptureLogger

from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.models import configuration_utils
from hf_seqmodels.models.configuration_attention_seq2seq import ATTENTION_TYPES
from hf_seqmodels.models.configuration_recurrent import NONLINEARITIES, POOLINGS
from hf_seqmodels.models.configuration_transformer import (
    ACTIVATIONS,
    NORM_POSITIONS,
    POSITION_EMBEDDINGS,
    TRANSFORMER_POOLINGS,
)
from hf_seqmodels.models.configuration_utils import (
    CELL_TYPES,
    PROBLEM_TYPES,
    check_config_file,
    known_keys,
    own_fields,
)

from .outcomes import assert_outcome

AREA = "configs"
CASES = settings(max_examples=25, deadline=None, database=None)
VOCAB, PAD, BOS, EOS = 50, 0, 1, 2
IDS = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
BASES = {  # a small valid config of each family: every case changes it
    RecurrentConfig: dict(vocab_size=VOCAB, embedding_size=8, hidden_size=8, **IDS),
    AttentionSeq2SeqConfig: dict(vocab_size=VOCAB, embedding_size=8, hidden_size=8, bidirectional_encoder=False, **IDS),
    TransformerConfig: dict(vocab_size=VOCAB, d_model=8, num_heads=1, encoder_layers=1, decoder_layers=1, ffn_dim=8,
                            **IDS),
}
CHOICES = {  # the fields of each family that hold one of a list of strings
    RecurrentConfig: {"cell_type": CELL_TYPES, "nonlinearity": NONLINEARITIES, "classifier_pooling": POOLINGS},
    AttentionSeq2SeqConfig: {"cell_type": CELL_TYPES, "attention_type": ATTENTION_TYPES},
    TransformerConfig: {"activation": ACTIVATIONS, "norm_position": NORM_POSITIONS,
                        "position_embedding": POSITION_EMBEDDINGS, "classifier_pooling": TRANSFORMER_POOLINGS},
}
FIELDS = [(config_class, name) for config_class in BASES for name in own_fields(config_class)]
FIELD_IDS = [f"{config_class.__name__}.{name}" for config_class, name in FIELDS]


def class_name(value):
    """Test ids: a class by its name, any other value by pytest's default."""
    return value.__name__ if isinstance(value, type) else None


def field_kind(config_class, name: str) -> str:
    """What a field holds, from its name and its annotation in `__init__` (a KeyError for a field of a new kind)."""
    if name.endswith("_token_id"):
        return "token id"
    if name in CHOICES[config_class]:
        return "choice"
    annotation = inspect.signature(config_class.__init__).parameters[name].annotation
    if annotation is float:
        if name == "teacher_forcing_ratio":
            return "probability"
        if name.endswith("regularization"):
            return "penalty"
        return "dropout" if name.endswith(("dropout", "weight_drop")) else "positive number"
    if annotation is int:
        return "count" if name == "spelling_features" else "size"
    return {bool: "flag", int | None: "optional size", list[int] | None: "cutoffs"}[annotation]


WRONG_TYPES = st.one_of(st.text(max_size=6), st.lists(st.integers(0, 3), max_size=2),
                        st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))
BAD_VALUES = {  # kind: values it must refuse
    "size": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.floats(), st.integers(max_value=0)),
    "optional size": st.one_of(WRONG_TYPES, st.booleans(), st.floats(), st.integers(max_value=0)),
    "count": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.floats(), st.integers(max_value=-1)),
    "dropout": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.floats().filter(lambda p: not 0 <= p < 1),
                         st.integers().filter(lambda p: p != 0)),
    "positive number": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.integers(max_value=0),
                                 st.floats().filter(lambda x: not 0 < x < math.inf)),
    "probability": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.floats().filter(lambda p: not 0 <= p <= 1),
                             st.integers().filter(lambda p: p not in (0, 1))),
    "penalty": st.one_of(WRONG_TYPES, st.none(), st.booleans(), st.integers(max_value=-1),
                         st.floats().filter(lambda x: not 0 <= x < math.inf)),
    "flag": st.one_of(WRONG_TYPES, st.sampled_from(["false", "False", "true", "0", "no"]), st.none(), st.integers(),
                      st.floats()),
    "cutoffs": st.one_of(st.text(max_size=6), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
                         st.booleans(), st.integers(), st.floats(), st.just([]),
                         st.lists(st.one_of(st.integers(-3, VOCAB + 3), st.floats()), min_size=1, max_size=3).filter(
                             lambda ids: not (all(type(i) is int for i in ids) and 0 < ids[0] and ids[-1] < VOCAB
                                              and all(a < b for a, b in zip(ids, ids[1:]))))),
    "token id": st.one_of(st.integers(max_value=-1), st.integers(min_value=VOCAB), st.integers(0, VOCAB - 1).map(float),
                          st.booleans(), st.text(max_size=4), st.just([]),
                          st.lists(st.integers(-3, VOCAB + 3), min_size=1, max_size=3).filter(
                              lambda ids: not all(0 <= i < VOCAB for i in ids))),
}
GOOD_VALUES = {  # kind: values it must keep
    "size": st.integers(1, 2**31),
    "optional size": st.one_of(st.none(), st.integers(1, 2**31)),
    "count": st.integers(0, 1024),
    "dropout": st.one_of(st.just(0), st.floats(0, 1, exclude_max=True)),
    "positive number": st.one_of(st.integers(1, 10), st.floats(0, 1e300, exclude_min=True)),
    "probability": st.one_of(st.sampled_from([0, 1]), st.floats(0, 1)),
    "penalty": st.one_of(st.integers(0, 10), st.floats(0, 1e300)),
    "flag": st.booleans(),
    "token id": st.one_of(st.none(), st.integers(0, VOCAB - 1)),
    "cutoffs": st.none(),  # a list needs tie_word_embeddings=False: tests/models/test_adaptive_softmax.py
}
GOOD_FIELD_VALUES = {  # fields whose good values are narrower than their kind's, given the rest of BASES
    "vocab_size": st.integers(EOS + 1, 2**31),  # holds the special tokens
    "spelling_kernel_size": st.integers(0, 2**20).map(lambda n: 2 * n + 1),  # odd
    "num_heads": st.sampled_from([1, 2, 4, 8]),  # divides d_model
    "eos_token_id": st.one_of(st.none(), st.integers(0, VOCAB - 1), st.lists(st.integers(0, VOCAB - 1), min_size=1)),
    "crf_constrain_bio": st.just(False),  # True needs use_crf and BIO labels: tests/models/test_heads.py
    "adaptive_softmax_div_value": st.one_of(st.integers(2, 10), st.floats(1, 1e300, exclude_min=True)),  # > 1
}
TYPICAL_MISTAKES = {  # kind: the mistake a hand-edited config.json typically makes
    "size": 8.0, "optional size": 0, "count": -1, "dropout": "0.1", "positive number": math.inf, "probability": "0.5",
    "penalty": -1.0, "flag": "false", "choice": "LSTM", "token id": 5.0, "cutoffs": "2000,6000",
}


def bad_values(config_class, name: str):
    kind = field_kind(config_class, name)
    if kind == "token id" and name != "eos_token_id":  # only generation's eos_token_id may list several ids
        return st.one_of(BAD_VALUES[kind], st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=2))
    if kind != "choice":
        return BAD_VALUES[kind]
    allowed = CHOICES[config_class][name]
    return st.one_of(st.text(max_size=8), st.sampled_from(allowed).map(str.upper), st.none(), st.booleans(),
                     st.integers(), st.lists(st.sampled_from(allowed), min_size=1, max_size=1)).filter(
        lambda value: value not in allowed)


def good_values(config_class, name: str):
    kind = field_kind(config_class, name)
    if kind == "choice":
        return st.sampled_from(CHOICES[config_class][name])
    return GOOD_FIELD_VALUES.get(name, GOOD_VALUES[kind])


def names(field: str, value) -> str:
    """The start of a message that names ``field`` and shows ``value``."""
    return rf"`{field}`={re.escape(repr(value))}"


def saved_dict(config_class, **changes) -> dict:
    """What save_pretrained writes for the base config of ``config_class`` (changed), as config.json reads back."""
    return json.loads(config_class(**{**BASES[config_class], **changes}).to_json_string())


def save_edited(folder, config_class, drop: str = "", **edits) -> str:
    """Save the base config of ``config_class`` to ``folder`` and edit its config.json: ``drop`` a key, set others."""
    config_class(**BASES[config_class]).save_pretrained(folder)
    path = folder / "config.json"
    saved = {key: value for key, value in json.loads(path.read_text()).items() if key != drop}
    path.write_text(json.dumps({**saved, **edits}))
    return str(folder)


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_every_field_has_a_kind(config_class, name):
    """The cases below cover every field: a new field must be of a kind they know (or the kinds must grow)."""
    assert field_kind(config_class, name) in BAD_VALUES.keys() | {"choice"}


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_bad_values_on_construction(config_class, name):
    @CASES
    @given(value=bad_values(config_class, name))
    def case(value):
        assert_outcome(AREA, lambda: config_class(**{**BASES[config_class], name: value}), error=names(name, value))

    case()


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_bad_values_on_loading(config_class, name):
    saved = saved_dict(config_class)

    @CASES
    @given(value=bad_values(config_class, name))
    def case(value):
        assert_outcome(AREA, lambda: config_class.from_dict({**saved, name: value}), error=names(name, value))

    case()


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_typical_mistake_in_config_json(config_class, name, tmp_path):
    """A hand-edited config.json read by AutoConfig: `"dropout": "0.1"`, `"bidirectional": "false"`, ..."""
    value = TYPICAL_MISTAKES[field_kind(config_class, name)]
    folder = save_edited(tmp_path, config_class, **{name: value})
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder), error=names(name, value))


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_good_values_are_kept(config_class, name, monkeypatch):
    # Any value of a size's kind, up to 2**31: whether the model then fits in memory is test_sizes.py's.
    monkeypatch.setenv("HF_SEQMODELS_MAX_MODEL_GB", "inf")

    def kept(value, expected):
        def check(config):
            loaded = config_class.from_dict(json.loads(config.to_json_string()))
            return all(getattr(c, name) == expected and type(getattr(c, name)) is type(expected)
                       for c in (config, loaded))
        return check

    @CASES
    @given(value=good_values(config_class, name))
    def case(value):
        expected = BOS if name == "decoder_start_token_id" and value is None else value  # starts from bos
        assert_outcome(AREA, lambda: config_class(**{**BASES[config_class], name: value}), check=kept(value, expected))

    case()


@pytest.mark.parametrize("config_class, name", FIELDS, ids=FIELD_IDS)
def test_config_json_without_a_field(config_class, name, tmp_path):
    """A config.json that lacks `nonlinearity` would load with the default, and the model compute other logits;
    one written before a field of `fields_added_later` existed loads with its default, which computes what it meant."""
    folder = save_edited(tmp_path, config_class, drop=name)
    if name in config_class.fields_added_later:
        assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder),
                       check=lambda config: getattr(config, name) == getattr(config_class(), name))
    else:
        assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder), error=rf"lacks `{name}`")


def load_config_file(folder):
    """What our loaders do with a model folder's config.json (load_pretrained checks it before loading)."""
    check_config_file(folder / "config.json")
    return AutoConfig.from_pretrained(folder)


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
@pytest.mark.slow
def test_unknown_keys(config_class, tmp_path):
    """Kept as attributes by the config (transformers' configs keep them, and its tests set some on every config);
    refused in a config.json our loaders read."""
    saved = saved_dict(config_class)
    unknown = st.from_regex(r"\A[a-z][a-z_]{0,15}\Z").filter(
        lambda key: key not in known_keys(config_class) and key not in config_class.attribute_map)

    @CASES
    @given(key=unknown, value=st.one_of(st.integers(), st.text(max_size=4), st.none()))
    def case(key, value):
        assert_outcome(AREA, lambda: config_class.from_dict({**saved, key: value}),
                       check=lambda config: getattr(config, key) == value)
        assert_outcome(AREA, lambda: config_class(**{key: value}), check=lambda config: getattr(config, key) == value)
        folder = Path(save_edited(tmp_path / "case", config_class, **{key: value}))
        assert_outcome(AREA, lambda: load_config_file(folder), error=names(key, value))

    case()


TYPOS = {RecurrentConfig: ("dropuot", "dropout"), AttentionSeq2SeqConfig: ("atention_type", "attention_type"),
         TransformerConfig: ("num_head", "num_heads")}


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_misspelt_field_names_the_right_one(config_class, tmp_path):
    """Refused in a config.json our loaders read; logged by the config, which keeps it."""
    typo, field = TYPOS[config_class]
    folder = Path(save_edited(tmp_path, config_class, **{typo: 1}))
    assert_outcome(AREA, lambda: load_config_file(folder), error=rf"`{typo}`=1 is not a field.*did you mean `{field}`")
    with CaptureLogger(configuration_utils.logger) as captured:
        config_class(**{typo: 1})
    assert re.search(rf"`{typo}`=1 is not a field.*did you mean `{field}`", captured.out)


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_other_names_of_fields(config_class):
    """`num_hidden_layers` (PretrainedConfig's name for the depth) would overwrite a checked field unchecked."""
    for alias, field in config_class.attribute_map.items():
        assert_outcome(AREA, lambda: config_class(**{alias: 0}), error=rf"`{alias}`=0 is another name for `{field}`")


MODEL_TYPES = {RecurrentConfig: "recurrent", AttentionSeq2SeqConfig: "attention_seq2seq",
               TransformerConfig: "transformer"}


@pytest.mark.parametrize("config_class, model_type", [
    (config_class, model_type) for config_class in BASES for model_type in [*MODEL_TYPES.values(), "bert", ""]
    if model_type != MODEL_TYPES[config_class]], ids=class_name)
def test_changed_model_type(config_class, model_type, tmp_path):
    saved = saved_dict(config_class)
    assert_outcome(AREA, lambda: config_class.from_dict({**saved, "model_type": model_type}),
                   error=names("model_type", model_type))
    if model_type in MODEL_TYPES.values():  # AutoConfig takes the other family's class: the saved models give it away
        folder = save_edited(tmp_path, config_class, model_type=model_type,
                             architectures=[f"{config_class.__name__.removesuffix('Config')}Model"])
        assert_outcome(AREA, lambda: load_config_file(Path(folder)), error=r"`architectures`=\[")


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_architectures_of_another_family(config_class, tmp_path):
    """Kept by the config, as transformers' (its ConfigTester passes `architectures=['BertModel']`); refused in a
    config.json our loaders read."""
    for other in set(BASES) - {config_class}:
        architectures = [f"{other.__name__.removesuffix('Config')}Model"]
        saved = {**saved_dict(config_class), "architectures": architectures}
        assert_outcome(AREA, lambda: config_class.from_dict(saved), check=lambda c: c.architectures == architectures)
        folder = Path(save_edited(tmp_path / other.__name__, config_class, architectures=architectures))
        assert_outcome(AREA, lambda: load_config_file(folder), error=names("architectures", architectures))
    assert_outcome(AREA, lambda: config_class(architectures="Model"), error=names("architectures", "Model"))


PRETRAINED_BAD_VALUES = {  # a field PretrainedConfig keeps: values it must refuse
    "num_labels": st.one_of(st.integers(max_value=0), st.floats(), st.booleans(), st.none(), st.text(max_size=3)),
    "id2label": st.one_of(st.just({}), st.dictionaries(st.integers(1, 5), st.text(max_size=3), min_size=1),
                          st.dictionaries(st.text(max_size=3).filter(lambda key: not key.isdigit()), st.text(),
                                          min_size=1),
                          st.just({0: 1}), st.lists(st.text(max_size=3), min_size=1), st.text(max_size=3)),
    "label2id": st.one_of(st.just({"LABEL_0": 1, "LABEL_1": 0}), st.just({"a": 0, "b": 1}), st.lists(st.integers()),
                          st.text(max_size=3)),
    "problem_type": st.one_of(st.text(max_size=8).filter(lambda text: text not in PROBLEM_TYPES), st.integers(),
                              st.sampled_from(PROBLEM_TYPES).map(str.upper)),
    "return_dict": st.one_of(st.text(max_size=5), st.integers(), st.none()),
    "output_hidden_states": st.one_of(st.text(max_size=5), st.integers(), st.none()),
    "output_attentions": st.one_of(st.text(max_size=5), st.integers(), st.none()),
    "chunk_size_feed_forward": st.one_of(st.integers(max_value=-1), st.booleans(), st.text(max_size=3), st.floats()),
    "dtype": st.one_of(st.sampled_from(["auto", "fp16", "float_32", "torch.float32"]), st.integers()),
    "torch_dtype": st.sampled_from(["bf16", "Float32", "nn"]),
}


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
@pytest.mark.parametrize("name", PRETRAINED_BAD_VALUES)
def test_bad_pretrained_fields(config_class, name):
    saved = saved_dict(config_class)

    @CASES
    @given(value=PRETRAINED_BAD_VALUES[name])
    def case(value):
        assert_outcome(AREA, lambda: config_class(**{**BASES[config_class], name: value}), error=names(name, value))
        assert_outcome(AREA, lambda: config_class.from_dict({**saved, name: value}), error=names(name, value))

    case()


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_num_labels_that_disagree_with_id2label(config_class):
    """transformers keeps `num_labels` and drops the names with only a warning."""
    assert_outcome(AREA, lambda: config_class(num_labels=3, id2label={0: "neg", 1: "pos"}),
                   error=r"`num_labels`=3 disagrees with `id2label`, which names 2 labels")
    assert_outcome(AREA, lambda: config_class(num_labels=2, id2label={0: "neg", 1: "pos"}, label2id={"neg": 0}),
                   error=r"`label2id`=\{'neg': 0\} must come with `id2label`")
    assert_outcome(AREA, lambda: config_class(label2id={"neg": 0, "pos": 1}), error=r"`label2id`=.* must come with")


BAD_OVERRIDES = {RecurrentConfig: ("dropout", "0.1"), AttentionSeq2SeqConfig: ("attention_type", "luong"),
                 TransformerConfig: ("num_heads", 3)}


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_overrides_when_loading(config_class, tmp_path):
    """`from_pretrained(folder, field=value)` checks the value like the file's; new labels replace the saved ones."""
    labels = {0: "neg", 1: "pos", 2: "mixed"}
    folder = save_edited(tmp_path, config_class, id2label=labels, label2id={v: k for k, v in labels.items()})
    field, value = BAD_OVERRIDES[config_class]
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, **{field: value}), error=names(field, value))
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, num_labels=0), error=names("num_labels", 0))
    alias, depth = next(iter(config_class.attribute_map.items()))
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, **{alias: 0}), error=names(depth, 0))
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, num_labels=5),
                   check=lambda config: config.id2label == {i: f"LABEL_{i}" for i in range(5)})
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, num_labels=3),
                   check=lambda config: config.id2label == labels)
    new_labels = {"id2label": {0: "a", 1: "b"}, "label2id": {"a": 0, "b": 1}}
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, **new_labels),
                   check=lambda config: config.num_labels == 2 and config.label2id == new_labels["label2id"])
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(folder, use_cache=False, return_unused_kwargs=True),
                   check=lambda result: result[0].use_cache is False and result[1] == {})


@pytest.mark.parametrize("config_class", BASES, ids=class_name)
def test_transformers_own_uses(config_class, tmp_path):
    """Defaults, the diff dict, save/load through AutoConfig and equality keep working, and see every field."""
    assert_outcome(AREA, config_class, check=lambda config: config.to_dict()["model_type"] == MODEL_TYPES[config_class])
    config = config_class(**BASES[config_class], num_labels=3, problem_type="multi_label_classification")

    def same(loaded):
        return loaded.to_diff_dict() == config.to_diff_dict()

    assert_outcome(AREA, lambda: config_class.from_dict(config.to_diff_dict()), check=same)
    assert_outcome(AREA, lambda: config_class.from_dict(config.to_dict()), check=same)
    config.save_pretrained(tmp_path)
    assert_outcome(AREA, lambda: AutoConfig.from_pretrained(tmp_path), check=same)
    other = config_class(**BASES[config_class], dropout=0.5)
    assert_outcome(AREA, lambda: other == config_class(**BASES[config_class]), check=lambda equal: equal is False)
