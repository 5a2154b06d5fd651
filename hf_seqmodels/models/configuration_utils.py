"""Validation shared by every family's configuration, in the shape of transformers' `configuration_utils`: each
check raises a `ValueError` that names the field, shows the value and says what is allowed."""

CELL_TYPES = ("rnn", "lstm", "gru")  # the recurrent layers of the recurrent and attention encoder-decoder families


def check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"`{name}`={value!r} is not supported; choose one of {', '.join(map(repr, allowed))}.")


def check_dropout(name: str, value: float) -> None:
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`{name}`={value} must be in [0, 1): it is the probability of zeroing an activation.")


def is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int to Python, not a size


def check_positive(name: str, value: int) -> None:
    if not is_integer(value) or value < 1:
        raise ValueError(f"`{name}`={value!r} must be a positive integer.")


def check_initializer_range(value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(
            f"`initializer_range`={value!r} must be a positive number: the standard deviation of the initial weights."
        )


def check_token_ids(vocab_size: int, vocabulary: str = "vocabulary", **token_ids) -> None:
    """Raise unless each special token id given (an id, a list of ids as `eos_token_id` may be, or None) is in the
    vocabulary."""
    for name, value in token_ids.items():
        for token_id in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(token_id, int) and not 0 <= token_id < vocab_size:
                which = "is" if token_id is value else f"holds {token_id},"
                raise ValueError(f"`{name}`={value} {which} outside the {vocabulary} (0..{vocab_size - 1}).")


def decoder_start_token_id(decoder_start_token_id: int | None, bos_token_id: int | None) -> int | None:
    """The one rule of every encoder-decoder: the decoder starts from `decoder_start_token_id`, else from
    `bos_token_id`."""
    return decoder_start_token_id if decoder_start_token_id is not None else bos_token_id
