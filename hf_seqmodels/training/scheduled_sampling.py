"""Scheduled sampling (Bengio et al., 2015, "Scheduled Sampling for Sequence Prediction with Recurrent Neural
Networks", section 2.4): the teacher-forcing ratio, the probability of feeding the decoder the gold previous token,
decays with the optimizer step ``i`` towards a floor:

- ``linear``: ``max(floor, 1 - k * i)`` (the paper's ``max(epsilon, k - c i)`` with offset 1 and slope ``k``);
- ``exponential``: ``max(floor, k ** i)``, ``0 < k < 1``;
- ``inverse_sigmoid``: ``max(floor, k / (k + exp(i / k)))``, ``k >= 1``.

`TeacherForcing` sets the ratio of a model whose config has ``teacher_forcing_ratio`` (the attention seq2seq) at
every training step, from the ``--teacher_forcing_ratio`` / ``--scheduled_sampling`` options of `TrainingArguments`.
"""

import math

from ..models.configuration_utils import check_choice
from .argument_checks import check_range

SCHEDULES = ("linear", "exponential", "inverse_sigmoid")
# What k means for each schedule, and the values it takes.
K_MEANING = {"linear": "the decrease per step, > 0 (e.g. 1e-4)",
             "exponential": "the factor per step, in (0, 1) (e.g. 0.9995)",
             "inverse_sigmoid": "the steps' scale, >= 1 (e.g. 1000)"}


def linear(step: int, k: float) -> float:
    return 1.0 - k * step


def exponential(step: int, k: float) -> float:
    return k**step


def inverse_sigmoid(step: int, k: float) -> float:
    # k / (k + exp(i / k)), written so that exp cannot overflow for large i
    return 1.0 / (1.0 + math.exp(step / k - math.log(k))) if step / k < 700 else 0.0


FORMULAS = {"linear": linear, "exponential": exponential, "inverse_sigmoid": inverse_sigmoid}


def check_k(schedule: str, k) -> None:
    """Raise a ValueError naming ``--scheduled_sampling_k`` unless ``k`` suits ``schedule``."""
    valid = isinstance(k, (int, float)) and not isinstance(k, bool) and math.isfinite(k) and {
        "linear": lambda: k > 0, "exponential": lambda: 0 < k < 1, "inverse_sigmoid": lambda: k >= 1}[schedule]()
    if not valid:
        raise ValueError(f"--scheduled_sampling_k={k!r} does not suit --scheduled_sampling {schedule}: k is "
                         f"{K_MEANING[schedule]}.")


def check_arguments(args) -> None:
    """Raise a ValueError naming the option unless the scheduled-sampling options of ``args`` (`TrainingArguments`)
    make sense: a constant ratio in [0, 1] or a schedule with its k and a floor in [0, 1), not both."""
    check_range(args, "teacher_forcing_ratio", 0, 1)
    check_choice("--scheduled_sampling", args.scheduled_sampling, (None, *SCHEDULES))
    check_range(args, "scheduled_sampling_floor", 0, 1, high_open=True)
    if args.scheduled_sampling is None:
        if args.scheduled_sampling_k is not None or args.scheduled_sampling_floor != 0:
            raise ValueError("--scheduled_sampling_k and --scheduled_sampling_floor need --scheduled_sampling (one of "
                             f"{SCHEDULES}).")
        return
    if args.teacher_forcing_ratio is not None:
        raise ValueError(f"--teacher_forcing_ratio (a constant) and --scheduled_sampling {args.scheduled_sampling} "
                         "(a ratio that decays from 1) exclude each other: pass one of them.")
    if args.scheduled_sampling_k is None:
        raise ValueError(f"--scheduled_sampling {args.scheduled_sampling} needs --scheduled_sampling_k: "
                         f"{K_MEANING[args.scheduled_sampling]}.")
    check_k(args.scheduled_sampling, args.scheduled_sampling_k)


def teacher_forcing_ratio(schedule: str, step: int, k: float, floor: float = 0.0) -> float:
    """The ratio of ``schedule`` (one of `SCHEDULES`) at optimizer step ``step`` (0 for the first), never below
    ``floor``."""
    return max(floor, FORMULAS[schedule](step, k))


class TeacherForcing:
    """The teacher-forcing ratio a training run gives its model: a constant, or a schedule of the step.

    Args:
        ratio: the constant ratio (`None`: the model's own, left as it is), without ``schedule``.
        schedule: one of `SCHEDULES`, with its ``k`` and ``floor``.
    """

    def __init__(self, ratio: float | None = None, schedule: str | None = None, k: float | None = None,
                 floor: float = 0.0):
        self.ratio, self.schedule, self.k, self.floor = ratio, schedule, k, floor

    @classmethod
    def for_run(cls, args, model) -> "TeacherForcing":
        """The ratio that `TrainingArguments` ``args`` (checked by `check_arguments`) give ``model``; a ValueError
        when they set one and ``model`` cannot take it."""
        teacher_forcing = cls(args.teacher_forcing_ratio, args.scheduled_sampling, args.scheduled_sampling_k,
                              args.scheduled_sampling_floor)
        teacher_forcing.check_model(model)
        return teacher_forcing

    @property
    def active(self) -> bool:
        return self.ratio is not None or self.schedule is not None

    def ratio_at(self, step: int) -> float:
        """The ratio for the optimizer step ``step`` (0 for the first)."""
        if self.schedule is None:
            return self.ratio
        return teacher_forcing_ratio(self.schedule, step, self.k, self.floor)

    def check_model(self, model) -> None:
        """Raise a ValueError when this run sets a ratio and ``model`` cannot take one."""
        if self.active and not hasattr(model.config, "set_teacher_forcing_ratio"):
            option = "--scheduled_sampling" if self.schedule is not None else "--teacher_forcing_ratio"
            raise ValueError(
                f"{option} needs a decoder that feeds its own predictions back while training, which "
                f"{type(model).__name__} does not: use --model_type attention_seq2seq, or drop {option}. (For the "
                "Transformer, two-pass scheduled sampling (Mihaylova & Martins 2019) is not implemented.)"
            )

    def update(self, model, step: int) -> None:
        """Give ``model`` the ratio of ``step`` (nothing when this run sets none)."""
        if self.active:
            model.config.set_teacher_forcing_ratio(self.ratio_at(step))
