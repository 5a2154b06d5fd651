"""The checks of the scripts' options (the tasks' and the training's argument dataclasses): range checks (each
message names the ``--option``, the value seen and what is allowed) and typed ``--config_overrides``. A choice is
checked by `models.configuration_utils.check_choice`, called with the option's name (``"--optimizer"``), as the
configs call it with a field's."""

import math

from transformers import AutoConfig

# Config fields the scripts set themselves, and what sets them.
SET_BY_SCRIPT = {
    "vocab_size": "--vocab_size (the trained tokenizer's size)",
    "source_vocab_size": "--vocab_size and --vocabulary",
    **{f"{token}_token_id": "the tokenizer" for token in ("pad", "bos", "eos", "decoder_start")},
    **dict.fromkeys(("num_labels", "id2label", "label2id"), "the labels found in the data"),
}


def check_at_least(arguments, name: str, minimum: int, why: str = "") -> None:
    """Raise a ValueError naming ``--name`` when that option of ``arguments`` is set (not None) and is not an
    integer of at least ``minimum``; ``why`` follows the bound in the message."""
    value = getattr(arguments, name)
    if value is None:
        return
    if not _is_number(value, int):
        raise ValueError(f"--{name} must be an integer of at least {minimum}{why}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"--{name} must be at least {minimum}{why}, got {value}.")


def check_range(arguments, name: str, low: float, high: float = math.inf, *, low_open: bool = False,
                high_open: bool = False, why: str = "") -> None:
    """Raise a ValueError naming ``--name`` when that option of ``arguments`` is set (not None) and is not a finite
    number between ``low`` and ``high`` (each excluded when ``*_open``): NaN and infinity are refused too."""
    value = getattr(arguments, name)
    if value is None:
        return
    above_low = _is_number(value, (int, float)) and (value > low if low_open else value >= low)
    if not (above_low and math.isfinite(value) and (value < high if high_open else value <= high)):
        opening, closing = "(" if low_open or low == -math.inf else "[", ")" if high_open or high == math.inf else "]"
        interval = f"{opening}{low}, {high}{closing}"
        raise ValueError(f"--{name} must be a finite number in {interval}{why}, got {value!r}.")


def check_different(arguments, first: str, second: str) -> None:
    """Raise a ValueError when the options ``--first`` and ``--second`` (two column names) are the same."""
    if getattr(arguments, first) == getattr(arguments, second):
        raise ValueError(f"--{first} and --{second} are both {getattr(arguments, first)!r}: they name two different "
                         "columns.")


def _is_number(value, kinds) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


def parse_config_overrides(model_type: str, text: str | None) -> dict:
    """``--config_overrides "a=1,b=pre,c=true"`` -> ``{"a": 1, "b": "pre", "c": True}``.

    Each value is typed like the field's default in the ``model_type`` config (a field whose default is None takes an
    int, else a float, else the string). The config's own ``__init__`` validates the values afterwards.
    """
    if not text:
        return {}
    defaults = AutoConfig.for_model(model_type)
    overrides = {}
    for item in text.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not hasattr(defaults, name):
            raise ValueError(f"--config_overrides: {item!r} is not 'field=value' for a field of {model_type}.")
        if name in SET_BY_SCRIPT:
            raise ValueError(f"--config_overrides: {name} is set by the script from {SET_BY_SCRIPT[name]}; "
                             f"leave it out of --config_overrides.")
        overrides[name] = _typed_like(getattr(defaults, name), name, value)
    return overrides


def _typed_like(default, name: str, value: str):
    if isinstance(default, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"--config_overrides: {name} takes true or false, got {value!r}.")
        return value.lower() in ("true", "1")
    if isinstance(default, (int, float)):
        try:
            return type(default)(value)
        except ValueError:
            raise ValueError(f"--config_overrides: {name} takes a {type(default).__name__}, got {value!r}.") from None
    if default is None:
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value
