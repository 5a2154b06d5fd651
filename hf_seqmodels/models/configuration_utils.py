"""Validation shared by every family's configuration, in the shape of transformers' `configuration_utils`: each
check raises a `ValueError` that names the field, shows the value and says what is allowed.

Each family's `__init__` checks its own fields with the `check_*` functions, then hands them to `CheckedConfig`
(`set_fields`), the base of the three configurations, which sets them and checks the rest: the fields
PretrainedConfig keeps (labels, problem type, output flags, dtype, architectures), and, on loading (`from_dict`,
which `from_pretrained` and `AutoConfig` call), a config dict that lacks a field or was written for another model.
Keys that no one knows are kept as attributes, as transformers' configs keep them; the config files our loaders read
(`check_config_file`) may not hold them.

Sizes are bounded too: each family counts, from its fields alone, the memory its model would take (`size_terms`), and
`check_model_size` refuses a config whose model would not fit in `HF_SEQMODELS_MAX_MODEL_GB` before anything is
allocated.
"""

import dataclasses
import difflib
import functools
import inspect
import json
import math
import os
import re
from pathlib import Path
from typing import ClassVar

import torch
from transformers import PretrainedConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.utils import logging

logger = logging.get_logger(__name__)

CELL_TYPES = ("rnn", "lstm", "gru")  # the recurrent layers of the recurrent and attention encoder-decoder families
PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")
LABEL_KEYS = {"num_labels", "id2label", "label2id"}
# Keys PretrainedConfig takes besides its dataclass fields: those its `to_dict` and `save_pretrained` write, and those
# its `from_dict` and `__post_init__` read.
PRETRAINED_KEYS = {"model_type", "auto_map", "custom_pipelines", "num_labels", "torch_dtype", "output_attentions",
                   "attn_implementation", "experts_implementation", "name_or_path", "_name_or_path", "_commit_hash"}
PRETRAINED_FLAGS = ("return_dict", "output_hidden_states", "output_attentions", "is_encoder_decoder")
# The largest model a config may describe, in GB (10**9 bytes) of parameters and buffers, read from the environment at
# every check (see `max_model_gb`); a config field could not be trusted with it: config.json comes with the model.
MAX_MODEL_GB_VARIABLE = "HF_SEQMODELS_MAX_MODEL_GB"
DEFAULT_MAX_MODEL_GB = 64.0
GB = 10**9


def is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int to Python, not a size


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_choice(name: str, value, allowed) -> None:
    if not isinstance(value, (str, type(None))) or value not in allowed:
        raise ValueError(f"`{name}`={value!r} is not supported; choose one of {', '.join(map(repr, allowed))}.")


def check_flags(**flags) -> None:
    """Raise unless each flag is a bool: the string "false" would count as true."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"`{name}`={value!r} must be True or False (a bool).")


def check_sizes(**sizes) -> None:
    """Raise unless each size is a positive integer (not a bool, not a float)."""
    for name, value in sizes.items():
        if not is_integer(value) or value < 1:
            raise ValueError(f"`{name}`={value!r} must be a positive integer.")


def check_optional_sizes(**sizes) -> None:
    """Raise unless each size is None (its default applies) or a positive integer."""
    for name, value in sizes.items():
        if value is not None and (not is_integer(value) or value < 1):
            raise ValueError(f"`{name}`={value!r} must be a positive integer or None.")


def check_dropouts(**dropouts) -> None:
    """Raise unless each dropout is a probability in [0, 1)."""
    for name, value in dropouts.items():
        if not is_number(value):
            raise ValueError(f"`{name}`={value!r} must be a number in [0, 1): the probability of zeroing an "
                             "activation.")
        if not 0.0 <= value < 1.0:
            raise ValueError(f"`{name}`={value} must be in [0, 1): it is the probability of zeroing an activation.")


def check_positive_number(name: str, value, meaning: str) -> None:
    """Raise unless ``value`` is a finite positive number; ``meaning`` says what it is."""
    if not is_number(value) or not 0 < value < math.inf:
        raise ValueError(f"`{name}`={value!r} must be a positive number (finite): {meaning}.")


def check_initializer_range(value) -> None:
    check_positive_number("initializer_range", value, "the standard deviation of the initial weights")


def check_token_ids(vocab_size: int, vocabulary: str = "vocabulary", **token_ids) -> None:
    """Raise unless each special token id given is None or an id in the vocabulary; `eos_token_id` may also be a
    non-empty list of ids (generation stops at any of them)."""
    for name, value in token_ids.items():
        if value is None:
            continue
        several = name == "eos_token_id"
        ids = value if several and isinstance(value, (list, tuple)) else [value]
        if not ids or not all(is_integer(token_id) for token_id in ids):
            raise ValueError(f"`{name}`={value!r} must be None or a token id (an integer in the {vocabulary}, "
                             f"0..{vocab_size - 1}){' or a non-empty list of them' if several else ''}.")
        for token_id in ids:
            if not 0 <= token_id < vocab_size:
                which = "is" if token_id is value else f"holds {token_id},"
                raise ValueError(f"`{name}`={value} {which} outside the {vocabulary} (0..{vocab_size - 1}).")


def decoder_start_token_id(decoder_start_token_id: int | None, bos_token_id: int | None) -> int | None:
    """The one rule of every encoder-decoder: the decoder starts from `decoder_start_token_id`, else from
    `bos_token_id`."""
    return decoder_start_token_id if decoder_start_token_id is not None else bos_token_id


@functools.cache
def own_fields(cls) -> tuple[str, ...]:
    """The fields that the `__init__` of ``cls`` and of its bases down to `CheckedConfig` name."""
    names = {}
    for klass in cls.__mro__[: cls.__mro__.index(CheckedConfig)]:
        if "__init__" in vars(klass):
            names.update(dict.fromkeys(inspect.signature(klass.__init__).parameters))
    return tuple(name for name in names if name not in ("self", "kwargs"))


def pretrained_fields() -> set[str]:
    return {field.name for field in dataclasses.fields(PretrainedConfig)}


def known_keys(cls) -> set[str]:
    """The keys a config of class ``cls`` takes: its own fields and PretrainedConfig's."""
    return set(own_fields(cls)) | pretrained_fields() | PRETRAINED_KEYS


def check_keys(cls, config: dict, loading: bool = False, strict: bool = False) -> None:
    """Raise if ``config`` (the keyword arguments of `cls(...)`, or a loaded config dict) was written for another
    model or sets a field under another name; when ``loading``, if it lacks one of the fields that saving writes (a
    default in its place could change what the model computes). ``strict`` (a config file our loaders read:
    `check_config_file`) also refuses a key that neither `cls` nor PretrainedConfig knows, and `architectures` of
    another family. Without it such keys are kept as attributes, as transformers' configs keep them (its tests set
    `architectures=['BertModel']` and seven norm-epsilon names on every config); a key close to a field's name is
    logged as a likely misspelling."""
    model_type = config.get("model_type", cls.model_type)
    if model_type != cls.model_type and model_type not in cls.former_model_types:
        raise ValueError(f"`model_type`={model_type!r} is not {cls.__name__}'s ({cls.model_type!r}): the config was "
                         "written for another model; load it with AutoConfig or that model's config class.")
    check_architectures(cls, config.get("architectures"), strict)
    fields, known = own_fields(cls), known_keys(cls)
    for key, value in config.items():
        if key in cls.attribute_map:
            raise ValueError(f"`{key}`={value!r} is another name for `{cls.attribute_map[key]}`: set "
                             f"{cls.attribute_map[key]} instead.")
        if key not in known:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            if strict:
                raise ValueError(f"`{key}`={value!r} is not a field of {cls.__name__}{hint}; its fields are "
                                 f"{', '.join(fields)}, and PretrainedConfig's own.")
            if close:
                logger.warning(f"`{key}`={value!r} is not a field of {cls.__name__}{hint}: it is kept as an "
                               "attribute, which the model does not read.")
    later = getattr(cls, "fields_added_later", ())
    if loading and (missing := [name for name in fields if name not in config and name not in later]):
        raise ValueError(f"The config lacks {', '.join(f'`{name}`' for name in missing)} of {cls.__name__}: saving "
                         "writes every field, and a default in its place could change what the model computes; add "
                         "the value it was saved with.")


def check_architectures(cls, architectures, strict: bool = False) -> None:
    """Raise unless ``architectures`` (the model classes a saved config names) is None or a list of class names;
    ``strict``, names of models of the family of ``cls``, whose model classes share its name without "Config"
    (`RecurrentConfig` -> `RecurrentForCausalLM`)."""
    prefixes = tuple(klass.__name__.removesuffix("Config") for klass in cls.__mro__[: cls.__mro__.index(CheckedConfig)])
    if architectures is None:
        return
    if not isinstance(architectures, list) or not all(isinstance(name, str) for name in architectures):
        raise ValueError(f"`architectures`={architectures!r} must be None or a list of model class names.")
    if strict and not all(name.startswith(prefixes) for name in architectures):
        raise ValueError(f"`architectures`={architectures!r} must be None or a list of {cls.__name__}'s model "
                         f"classes ({prefixes[-1]}...): the config was written for another model.")


def check_config_file(path) -> None:
    """Raise a ValueError naming the file unless the config.json at ``path``, if written for one of our families,
    holds only keys its config class knows, names models of that family, and has every field (see `check_keys`,
    strict): what our loaders read. Configs of other models are left to their classes."""
    config = json.loads(Path(path).read_text())
    model_type = config.get("model_type") if isinstance(config, dict) else None
    # CONFIG_MAPPING's `get` misses registered types; `in` and indexing see them
    if model_type not in CONFIG_MAPPING or not issubclass(CONFIG_MAPPING[model_type], CheckedConfig):
        return
    try:
        check_keys(CONFIG_MAPPING[model_type], config, loading=True, strict=True)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def label_id(key) -> int | None:
    """An `id2label` key (JSON writes the ids as strings) or `label2id` value as an int; None if it is no id."""
    if is_integer(key):
        return key
    return int(key) if isinstance(key, str) and re.fullmatch("[0-9]+", key) else None


def check_labels(config: dict) -> None:
    """Raise unless the label fields among ``config`` (keyword arguments) are usable: `num_labels` a positive integer,
    `id2label` names for the ids 0..n-1 (as many as `num_labels` when both are given), `label2id` its inverse, and
    `problem_type` one of PROBLEM_TYPES or None."""
    if "num_labels" in config and (not is_integer(config["num_labels"]) or config["num_labels"] < 1):
        raise ValueError(f"`num_labels`={config['num_labels']!r} must be a positive integer: the number of classes "
                         "(1 for regression).")
    id2label, label2id = config.get("id2label"), config.get("label2id")
    if id2label is not None:
        ids = [label_id(key) for key in id2label] if isinstance(id2label, dict) else [None]
        if None in ids or sorted(ids) != list(range(max(len(ids), 1))) or not all(
                isinstance(name, str) for name in id2label.values()):
            raise ValueError(f"`id2label`={id2label!r} must be a non-empty dict that maps the label ids 0..n-1 to "
                             "their names (strings).")
        if config.get("num_labels", len(id2label)) != len(id2label):
            raise ValueError(f"`num_labels`={config['num_labels']!r} disagrees with `id2label`, which names "
                             f"{len(id2label)} labels: give one of them, or both in agreement.")
    inverse = {name: label_id(i) for i, name in id2label.items()} if id2label is not None else None
    if label2id is not None and not (
            isinstance(label2id, dict) and {name: label_id(i) for name, i in label2id.items()} == inverse):
        raise ValueError(f"`label2id`={label2id!r} must come with `id2label` (here {id2label!r}) and be its inverse: "
                         "a dict that maps each label name to its id.")
    check_choice("problem_type", config.get("problem_type"), PROBLEM_TYPES + (None,))


def check_pretrained_fields(config: dict) -> None:
    """Raise unless the fields among ``config`` (keyword arguments) that PretrainedConfig keeps are usable: labels
    and problem type, output flags, `chunk_size_feed_forward` (the models here do not chunk) and dtype."""
    check_labels(config)
    check_flags(**{name: config[name] for name in PRETRAINED_FLAGS if name in config})
    chunks = config.get("chunk_size_feed_forward", 0)
    if not is_integer(chunks) or chunks < 0:
        raise ValueError(f"`chunk_size_feed_forward`={chunks!r} must be an integer >= 0 (kept, as transformers' "
                         "configs keep it; hf_seqmodels models do not chunk, which gives the same results).")
    for name in ("dtype", "torch_dtype"):
        value = config.get(name)
        if value is not None and not isinstance(value, torch.dtype) and not (
                isinstance(value, str) and isinstance(getattr(torch, value, None), torch.dtype)):
            raise ValueError(f"`{name}`={value!r} must be None, a torch.dtype or its name (such as 'float32').")


@dataclasses.dataclass(frozen=True)
class SizeTerm:
    """One part of a model, counted from its config without building it: ``what`` it is, the config ``fields`` its
    size follows (name -> value), and ``count`` elements of ``element_bytes`` bytes each (float32 weights: 4).
    ``kind`` says where it sits: "body" (embeddings and layers, which a base model and every head share), "lm_head"
    (the language model's output layer) or "classifier" (the classification heads'), which are parameters, saved in
    the weights file, and "buffer", a tensor the model builds and does not save (the sinusoidal position table) or
    saves beside its weights but is no parameter (token spellings)."""

    what: str
    fields: dict
    count: int
    kind: str = "body"
    element_bytes: int = 4

    @property
    def bytes(self) -> int:
        return self.count * self.element_bytes

    def describe(self) -> str:
        """``what`` and its fields, the largest value first: the field most likely to blame leads."""
        fields = sorted(self.fields.items(), key=lambda item: -item[1] if is_number(item[1]) else 0)
        return f"{self.what} ({', '.join(f'{name}={value}' for name, value in fields)})"


def linear(inputs: int, outputs: int, bias: bool = True) -> int:
    """The parameters of ``nn.Linear(inputs, outputs, bias)``."""
    return inputs * outputs + (outputs if bias else 0)


def recurrent_stack(cell_type: str, input_size: int, hidden_size: int, num_layers: int, directions: int = 1) -> int:
    """The parameters of ``num_layers`` torch recurrent layers (``cell_type``, ``directions`` each): every gate of
    every direction has ``W_ih``, ``W_hh`` and two biases; layers above the first read all directions' outputs."""
    gates = {"rnn": 1, "gru": 3, "lstm": 4}[cell_type] * hidden_size * directions
    first = gates * (input_size + hidden_size + 2)
    return first + (num_layers - 1) * gates * (directions * hidden_size + hidden_size + 2)


def with_heads(terms: list[SizeTerm], head: str | None = None) -> list[SizeTerm]:
    """``terms`` of the model with ``head`` ("lm_head" or "classifier"; "body": none, the base model), buffers kept;
    None: the largest head of those ``terms`` count, the largest model the config builds."""
    heads = {term.kind for term in terms} - {"body", "buffer"}
    if head is None and heads:
        head = max(heads, key=lambda kind: sum(term.bytes for term in terms if term.kind == kind))
    return [term for term in terms if term.kind in ("body", "buffer", head)]


def parameter_count(terms: list[SizeTerm], head: str | None = None) -> int:
    """The parameters of the model that ``terms`` describe, with ``head`` (see `with_heads`): no buffers."""
    return sum(term.count for term in with_heads(terms, head) if term.kind != "buffer")


def max_model_gb() -> float:
    """The largest model a config may describe, in GB: ``$HF_SEQMODELS_MAX_MODEL_GB``, else 64.

    64 GB holds 16 billion float32 parameters: 50 times GPT-2 XL, 5,000 times the models this repository trains, and
    no less than what a workstation's memory holds (training needs four times the parameters' memory, for gradients
    and Adam's two moments). A config that asks for more is a typing slip (`hidden_size=1000000000`) or an edited
    config.json, and a clear error now beats minutes of allocation and an out-of-memory kill later. Machines that do
    hold larger models set the variable (a number of GB; ``inf`` turns the check off). It is read at every check and
    is no config field, so that a config.json cannot raise it."""
    value = os.environ.get(MAX_MODEL_GB_VARIABLE)
    if value is None:
        return DEFAULT_MAX_MODEL_GB
    try:
        limit = float(value)
    except ValueError:
        limit = math.nan
    if not limit > 0:  # also NaN
        raise ValueError(f"${MAX_MODEL_GB_VARIABLE}={value!r} must be a positive number of GB (10**9 bytes; 'inf': no "
                         f"limit): the largest model a config may describe. Unset, it is {DEFAULT_MAX_MODEL_GB:g}.")
    return limit


def check_model_size(config) -> None:
    """Raise a ValueError unless the largest model ``config`` builds (its `size_terms`, with the largest head) fits
    in `max_model_gb`: it names the term that takes most of the memory and its fields, the memory the model would
    need and how to raise the limit. Counted from the fields, never by building the model."""
    terms = with_heads(config.size_terms())
    needed, limit = sum(term.bytes for term in terms), max_model_gb()
    if needed <= limit * GB:
        return
    largest = max(terms, key=lambda term: term.bytes)
    raise ValueError(
        f"{type(config).__name__} describes a model of {needed / GB:,.1f} GB (float32 parameters and buffers), more "
        f"than the limit of {limit:g} GB; {largest.bytes / GB:,.1f} GB of it are {largest.describe()}. Lower those "
        f"sizes, or, on a machine with the memory for it, raise the limit: {MAX_MODEL_GB_VARIABLE}="
        f"{math.ceil(needed / GB)} (in GB; inf turns the check off)."
    )


class CheckedConfig(PretrainedConfig):
    """The base of every family's configuration: it checks PretrainedConfig's own fields on construction (keys that
    neither the family nor PretrainedConfig knows are kept, as transformers keeps them), and refuses a config dict
    that lacks a field or was written for another model on loading. The family's `__init__` checks its own fields,
    then hands them to `set_fields`, which also bounds the size of the model (`check_model_size`, from the family's
    `size_terms`).

    A family lists in ``fields_added_later`` the fields it gained after configs were first saved and whose default
    computes what the model computed before them: a config saved without them loads with their defaults; and in
    ``former_model_types`` the names its configs were saved under before its ``model_type``: they load as this class
    (the package registers them with AutoConfig too), which saves its own ``model_type``."""

    fields_added_later: ClassVar[tuple[str, ...]] = ()
    former_model_types: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # transformers makes every config class a dataclass, whose `__eq__` compares PretrainedConfig's fields alone.
        cls.__eq__ = PretrainedConfig.__eq__

    def __init__(self, **kwargs):
        check_keys(type(self), kwargs)
        check_pretrained_fields(kwargs)
        super().__init__(**kwargs)

    def set_fields(self, arguments: dict) -> None:
        """The end of a family's `__init__`, once it has checked its arguments: ``arguments`` (its ``locals()``) give
        each of its fields (`own_fields`). Those PretrainedConfig declares (`is_encoder_decoder`) go to its
        `__init__` with the other keyword arguments (``arguments["kwargs"]``), which it checks and keeps; the rest
        become attributes first, since PretrainedConfig's `__init__` would drop `use_cache` as a generation option."""
        fields = [name for name in own_fields(type(self)) if name in arguments]
        declared = pretrained_fields()
        for name in fields:
            if name not in declared:
                setattr(self, name, arguments[name])
        CheckedConfig.__init__(self, **{name: arguments[name] for name in fields if name in declared},
                               **arguments["kwargs"])
        check_model_size(self)

    def size_terms(self, stacks: str | None = None) -> list[SizeTerm]:
        """The parts of the model this config describes, counted from its fields (`SizeTerm`): the dominant ones,
        within a factor of 2 of the real parameter count, the heads of all kinds the family has (`with_heads` picks
        one). ``stacks`` (encoder-decoder families with encoder-only and decoder-only models): "encoder", "decoder"
        or "both"; None, the largest model the config builds."""
        raise NotImplementedError(f"{type(self).__name__} does not count its model's size (`size_terms`).")

    def to_diff_dict(self) -> dict:
        """What `save_pretrained` writes: PretrainedConfig's diff, with every field of the family even where it
        equals PretrainedConfig's default (`is_encoder_decoder=False` of a decoder-only Transformer), so that a
        loaded config holds all of them."""
        return {**{name: getattr(self, name) for name in own_fields(type(self))}, **super().to_diff_dict()}

    @classmethod
    def get_config_dict(cls, *args, **kwargs) -> tuple[dict, dict]:
        """`PretrainedConfig.get_config_dict` (what `from_pretrained` reads), a former `model_type` renamed: loading
        a config saved under it is no mismatch to warn about."""
        config_dict, kwargs = super().get_config_dict(*args, **kwargs)
        return with_current_model_type(cls, config_dict), kwargs

    @classmethod
    def from_dict(cls, config_dict: dict, **kwargs):
        """`PretrainedConfig.from_dict`, which `from_pretrained` and `AutoConfig` call, refusing a config dict that
        lacks a field or was written for another model. The keyword arguments that are config fields
        (`from_pretrained(folder, dropout=0.2)`) join the dict first, so that they are checked like it."""
        config_dict = with_overrides(cls, with_current_model_type(cls, config_dict), kwargs)
        check_keys(cls, config_dict, loading=True)
        return super().from_dict(config_dict, **kwargs)


def with_current_model_type(cls, config_dict: dict) -> dict:
    """``config_dict`` with a former `model_type` of ``cls`` (``former_model_types``) replaced by its own."""
    if config_dict.get("model_type") in cls.former_model_types:
        return {**config_dict, "model_type": cls.model_type}
    return config_dict


def with_overrides(cls, config_dict: dict, kwargs: dict) -> dict:
    """``config_dict`` with the config fields among ``kwargs`` moved into it (other names of fields resolved). New
    labels (`num_labels`, `id2label` or `label2id`) replace the saved ones, as in transformers; dtype stays in
    ``kwargs``, where transformers reads "auto"."""
    overrides, known = {}, known_keys(cls) - {"dtype", "torch_dtype"}
    for key in [key for key in kwargs if cls.attribute_map.get(key, key) in known]:
        overrides[cls.attribute_map.get(key, key)] = kwargs.pop(key)
    new_labels, saved_labels = overrides.keys() & LABEL_KEYS, config_dict.get("id2label")
    if new_labels == {"num_labels"} and isinstance(saved_labels, dict) and len(saved_labels) == overrides["num_labels"]:
        new_labels = set()  # as many labels as were saved: their names stay
    saved = {key: value for key, value in config_dict.items() if not (new_labels and key in LABEL_KEYS)}
    return {**saved, **overrides}
