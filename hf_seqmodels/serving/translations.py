"""What every translation back end returns, `Hypothesis`, and the options each checks alike (the transformers model
of `inference` and the CTranslate2 export of `ctranslate2_export`)."""

from dataclasses import dataclass


@dataclass
class Hypothesis:
    """One translation of a sentence: its text and, from beam search, its score (``generate``'s
    ``sequences_scores``: the log-probability of its tokens divided by its length ** ``length_penalty``)."""

    text: str
    score: float | None = None


def check_positive(name: str, value) -> None:
    """Raise a ValueError naming the option ``--name`` unless ``value`` is None or an integer of at least 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"--{name} must be an integer of at least 1, got {value!r}.")


def check_translation_options(model, num_beams: int | None, num_return_sequences: int, **sizes) -> None:
    """Raise a ValueError naming the option when a count (``num_beams``, ``num_return_sequences``, or one of
    ``sizes`` such as ``batch_size``) is below 1, or when more translations are asked than the beams (``num_beams``,
    or the model's saved default) keep."""
    for name, value in {"num_beams": num_beams, "num_return_sequences": num_return_sequences, **sizes}.items():
        check_positive(name, value)
    beams = num_beams or model.generation_config.num_beams or 1  # transformers leaves an unset default None
    if num_return_sequences > beams:
        raise ValueError(f"--num_return_sequences={num_return_sequences} is more than the {beams} beam(s) "
                         f"{'asked' if num_beams else 'the model decodes with by default'}: beam search returns at "
                         f"most one translation per beam. Raise --num_beams to at least {num_return_sequences}.")
