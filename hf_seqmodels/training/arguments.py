"""`TrainingArguments`, the options of the training loop (`training.train`), and their checks.

`TrainingArguments.__post_init__` checks each option and the options together when they are parsed, reading no
file. `check_earlier_run` checks the folders the options name against what is on disk: `training.start_run` calls
it when a run starts (and again under the run's locks). Only what a run wrote is ever replaced or deleted: the files
its `atomic_folders.MANIFEST` lists (for a folder from before manifests, those its content shows a run wrote:
`earlier_runs.run_output`).
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import get_scheduler

from .. import models
from ..data.tokenization import TOKENIZER_FILES
from ..models.configuration_utils import check_choice
from ..models.pipeline_translation import SOURCE_TOKENIZER_DIR
from ..storage.atomic_folders import MANIFEST, foreign, matches
from ..storage.earlier_runs import run_output
from .argument_checks import check_at_least, check_range
from .checkpoints import Checkpoints
from .scheduled_sampling import SCHEDULES
from .scheduled_sampling import check_arguments as check_scheduled_sampling

OPTIMIZERS = ("adamw", "sgd", "nt_asgd")
# The transformers SchedulerType names stepped after each optimizer step, and those stepped on the validation metric
# (metric_for_best_model, else eval_loss) after each evaluation.
STEP_SCHEDULERS = ("linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup",
                   "inverse_sqrt", "cosine_with_min_lr", "cosine_warmup_with_min_lr", "warmup_stable_decay")
METRIC_SCHEDULERS = ("reduce_lr_on_plateau", "greedy")
LR_SCHEDULERS = STEP_SCHEDULERS + METRIC_SCHEDULERS
MIN_LR_SCHEDULERS = ("cosine_with_min_lr", "cosine_warmup_with_min_lr")  # they need min_lr or min_lr_rate
WSD_DECAY_SHARE = 0.1  # warmup_stable_decay without num_decay_steps decays over the last 10% of the steps
MIXED_PRECISIONS = ("no", "fp16", "bf16")
TRACKERS = ("none", "tensorboard")
TEST_HYPOTHESES = "test_hypotheses.txt"  # translation's test translations, one line per sentence, in output_dir
ATTENTION_PLOT = "attention.png"  # translation's attention heatmap of an example, in output_dir
# What a run may write in output_dir (glob patterns): a file of the user's with one of these names is refused before
# the run starts.
RUN_OUTPUT_NAMES = ("*.safetensors", "model.safetensors.index.json", "config.json", "generation_config.json",
                    "results.json", *TOKENIZER_FILES, SOURCE_TOKENIZER_DIR, "custom_generate", TEST_HYPOTHESES,
                    ATTENTION_PLOT,
                    *sorted(path.name for path in Path(models.__file__).parent.glob("*.py")))  # remote code


def beside(folder: str, kind: str) -> str:
    """``<folder>-<kind>``: the folder of that kind beside ``folder`` (of ``.`` or ``..``, beside the folder they
    name)."""
    folder = os.path.normpath(folder)
    if os.path.basename(folder) in (".", ".."):
        folder = os.path.abspath(folder)
    return f"{folder}-{kind}"


@dataclass
class TrainingArguments:
    """Options of `training.train`; every field is also a command-line flag of the scripts (through
    HfArgumentParser)."""

    output_dir: str = field(metadata={"help": "Folder for the final model, tokenizer and results.json; absent or "
                                              "empty unless --overwrite_output_dir."})
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Replace the files an earlier run wrote in output_dir (a folder with config.json or "
                          f"results.json; those its {MANIFEST} lists) and delete the step_<n> checkpoints it wrote "
                          "in checkpoint_dir at the start of a new run. Every other file and folder there is kept."},
    )
    per_device_train_batch_size: int = field(default=20, metadata={"help": "Training batch size per process."})
    per_device_eval_batch_size: int = field(default=64, metadata={"help": "Evaluation batch size per process."})
    optimizer: str = field(default="adamw", metadata={"help": f"One of {OPTIMIZERS} (nt_asgd: SGD that switches to "
                                                              "weight averaging, AWD-LSTM's; see --nonmono)."})
    nonmono: int = field(default=5, metadata={"help": "nt_asgd: start averaging when an evaluation's loss is worse "
                                                      "than the best before the last this many evaluations."})
    learning_rate: float = field(default=2e-3, metadata={"help": "Peak learning rate."})
    weight_decay: float = field(default=0.0, metadata={"help": "Weight decay (decoupled for AdamW)."})
    max_grad_norm: float = field(default=0.25, metadata={"help": "Clip the gradient norm to this; 0 = no clipping."})
    lr_scheduler_type: str = field(
        default="linear",
        metadata={"help": f"One of {LR_SCHEDULERS} (transformers' SchedulerType); {METRIC_SCHEDULERS} step on the "
                          f"validation metric (--metric_for_best_model, else eval_loss) at each evaluation."},
    )
    lr_scheduler_kwargs: str | None = field(
        default=None,
        metadata={"help": "A JSON object of the scheduler's own options (transformers' get_scheduler "
                          "scheduler_specific_kwargs), e.g. '{\"num_cycles\": 2}', '{\"min_lr_rate\": 0.1}', "
                          "'{\"num_decay_steps\": 500}' or '{\"factor\": 0.5, \"patience\": 1}'. "
                          # "%%": argparse formats help strings with %
                          f"warmup_stable_decay decays over the last {WSD_DECAY_SHARE:.0%}% of the steps unless "
                          "it names num_decay_steps or num_stable_steps."},
    )
    min_lr: float | None = field(
        default=None, metadata={"help": f"The learning rate the {MIN_LR_SCHEDULERS} schedules end at."}
    )
    num_warmup_steps: int = field(default=0, metadata={"help": "Steps of linear warmup from 0 to the peak LR."})
    num_train_epochs: int = field(default=1, metadata={"help": "Epochs, unless max_train_steps is set."})
    max_train_steps: int | None = field(default=None, metadata={"help": "Optimizer steps; overrides the epochs."})
    gradient_accumulation_steps: int = field(
        default=1,
        metadata={"help": "Add the gradients of this many batches before each optimizer step (Accelerate's "
                          "gradient accumulation): the batch of a step is this many times larger. Steps (the LR "
                          "schedule, logging, checkpoints, max_train_steps) count optimizer steps."},
    )
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "Translation: batches of similar lengths holding at most this many source + target "
                          "tokens, padding counted (fairseq's --max-tokens), in place of "
                          "--per_device_train_batch_size rows."},
    )
    mixed_precision: str | None = field(
        default=None,
        metadata={"help": f"One of {MIXED_PRECISIONS} (Accelerate's autocast; bf16 also on the CPU, fp16 needs a "
                          f"GPU); default: the accelerate launch configuration's, else no. The weights stay "
                          f"float32."},
    )
    report_to: str = field(
        default="none",
        metadata={"help": f"One of {TRACKERS}: log the training loss, learning rate and evaluation metrics "
                          f"through an Accelerate tracker (offline) into --logging_dir."},
    )
    logging_dir: str | None = field(
        default=None, metadata={"help": "Folder of the --report_to logs; default: '<output_dir>-runs'."}
    )
    time_budget_minutes: float | None = field(
        default=None,
        metadata={"help": "Stop training (then evaluate and save) after this many minutes, evaluations included. "
                          "The LR schedule still spans the planned steps."},
    )
    seed: int = field(default=42, metadata={"help": "Seed for initialisation, shuffling and dropout."})
    logging_steps: int = field(default=100, metadata={"help": "Log the mean training loss every this many steps."})
    checkpointing_steps: str | None = field(
        default=None, metadata={"help": "Save a checkpoint every N steps (an integer) or at every 'epoch' end."}
    )
    checkpoint_dir: str | None = field(
        default=None, metadata={"help": "Folder of the step_<n> checkpoints; default: '<output_dir>-checkpoints'."}
    )
    resume_from_checkpoint: str | None = field(
        default=None, metadata={"help": "A step_<n> checkpoint folder, or 'latest' (newest in checkpoint_dir)."}
    )
    save_total_limit: int | None = field(
        default=None, metadata={"help": "Keep only the newest N checkpoints (default: all)."}
    )
    trust_pickled_checkpoint: bool = field(
        default=False,
        metadata={"help": "Resume from a checkpoint holding pickles (*.pkl, *.bin, ...: one written by "
                          "accelerator.save_state, as older versions did) through Accelerate. Unpickling runs any "
                          "code its author put in it: only for checkpoints you trust."},
    )
    ignore_missing_rng_state: bool = field(
        default=False,
        metadata={"help": "Resume even when the checkpoint lacks this process's random states (or has ones that "
                          "do not fit this machine), with a warning: the run then differs from an uninterrupted one."},
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata={"help": "Keep fewer activations for the backward pass and compute them again there (transformers' "
                          "activation_checkpointing_enable): less memory for more time, the same gradients. Also "
                          "--activation_checkpointing, the name transformers' TrainingArguments give it.",
                  "aliases": ["--activation_checkpointing"]},
    )
    label_smoothing_factor: float = field(
        default=0.0, metadata={"help": "Label smoothing of the training loss (0 = none); evaluation stays plain."}
    )
    metric_for_best_model: str | None = field(
        default=None,
        metadata={"help": "A metric of the evaluations, e.g. 'eval_loss' or 'eval_bleu': the final model is the "
                          "evaluated one that scored best on it, and early stopping watches it."},
    )
    greater_is_better: bool | None = field(
        default=None, metadata={"help": "Whether a higher metric_for_best_model is better; default: not for "
                                        "losses and perplexities, yes for anything else."},
    )
    early_stopping_patience: int | None = field(
        default=None, metadata={"help": "Stop after this many evaluations without a better metric_for_best_model."}
    )
    freeze_embeddings: bool = field(
        default=False,
        metadata={"help": "Do not train the input embeddings (e.g. started from --word_vectors): the optimizer leaves "
                          "them as they are. Output embeddings tied to them (the language models' default) too."},
    )
    unfreeze_embeddings_after_epochs: int | None = field(
        default=None, metadata={"help": "With --freeze_embeddings: train the embeddings too from this epoch on."}
    )
    teacher_forcing_ratio: float | None = field(
        default=None,
        metadata={"help": "A constant teacher-forcing ratio in [0, 1] for the attention seq2seq: the probability "
                          "that the decoder reads the gold previous token rather than its own prediction, per row "
                          "and position (default: the model config's, 1.0 = always)."},
    )
    scheduled_sampling: str | None = field(
        default=None,
        metadata={"help": f"Scheduled sampling (Bengio et al. 2015) for the attention seq2seq: one of {SCHEDULES}; "
                          "the teacher-forcing ratio decays with each optimizer step i from 1 to the floor: "
                          "1 - k*i, k**i or k/(k + exp(i/k)) (see hf_seqmodels.training.scheduled_sampling)."},
    )
    scheduled_sampling_k: float | None = field(
        default=None, metadata={"help": "The k of --scheduled_sampling: the slope (linear, > 0), the factor "
                                        "(exponential, in (0, 1)) or the scale (inverse_sigmoid, >= 1)."},
    )
    scheduled_sampling_floor: float = field(
        default=0.0, metadata={"help": "The lowest teacher-forcing ratio of --scheduled_sampling, in [0, 1)."}
    )

    def __post_init__(self):
        check_choice("--optimizer", self.optimizer, OPTIMIZERS)
        if self.mixed_precision is not None:
            check_choice("--mixed_precision", self.mixed_precision, MIXED_PRECISIONS)
        if self.report_to == "trackio":
            raise ValueError("--report_to trackio is not supported: trackio keeps its runs in its own database under "
                             "the Hugging Face cache, not in --logging_dir beside the run; pass --report_to "
                             "tensorboard (offline event files in --logging_dir) or none.")
        check_choice("--report_to", self.report_to, TRACKERS)
        if self.lr_scheduler_type not in LR_SCHEDULERS:
            raise ValueError(f"--lr_scheduler_type={self.lr_scheduler_type!r} is not a SchedulerType this training "
                             f"loop runs; choose one of {LR_SCHEDULERS}.")
        for name in ("per_device_train_batch_size", "per_device_eval_batch_size", "num_train_epochs", "logging_steps",
                     "max_train_steps", "early_stopping_patience", "save_total_limit", "gradient_accumulation_steps",
                     "max_tokens"):
            check_at_least(self, name, 1)
        check_at_least(self, "nonmono", 1)
        for name in ("num_warmup_steps", "seed"):
            check_at_least(self, name, 0)
        check_range(self, "seed", 0, 2**32 - 1)  # what numpy's seeding takes
        check_range(self, "time_budget_minutes", 0, low_open=True)
        for name in ("learning_rate", "weight_decay", "max_grad_norm"):  # a learning rate of 0: a frozen model
            check_range(self, name, 0)
        check_range(self, "label_smoothing_factor", 0, 1, high_open=True)
        check_scheduled_sampling(self)
        if self.checkpointing_steps not in (None, "epoch") and not (
            isinstance(self.checkpointing_steps, str) and self.checkpointing_steps.isdecimal()
            and int(self.checkpointing_steps) > 0
        ):
            raise ValueError(f"--checkpointing_steps must be a positive integer or 'epoch', "
                             f"got {self.checkpointing_steps!r}.")
        if not (isinstance(self.output_dir, str) and self.output_dir.strip()):
            raise ValueError(f"--output_dir must name a folder, got {self.output_dir!r}.")
        if self.checkpoint_dir is None:
            self.checkpoint_dir = beside(self.output_dir, "checkpoints")
        if self.logging_dir is None:
            self.logging_dir = beside(self.output_dir, "runs")
        check_range(self, "min_lr", 0)
        self.lr_scheduler_kwargs = check_scheduler_options(self)
        check_at_least(self, "unfreeze_embeddings_after_epochs", 1)
        if self.unfreeze_embeddings_after_epochs is not None and not self.freeze_embeddings:
            raise ValueError("--unfreeze_embeddings_after_epochs needs --freeze_embeddings (frozen until then).")
        if self.early_stopping_patience is not None and self.metric_for_best_model is None:
            raise ValueError("--early_stopping_patience needs --metric_for_best_model (e.g. 'eval_loss').")
        if self.metric_for_best_model is not None and self.greater_is_better is None:
            self.greater_is_better = not self.metric_for_best_model.endswith(("loss", "perplexity"))


def check_scheduler_options(args: TrainingArguments) -> dict:
    """``--lr_scheduler_kwargs`` as a dict, refused (a ValueError naming the option) unless the scheduler, built
    with it and ``--min_lr`` on a stand-in optimizer, takes them, and has the options it needs."""
    name, options = args.lr_scheduler_type, args.lr_scheduler_kwargs
    if isinstance(options, str):
        try:
            options = json.loads(options)
        except ValueError as error:
            raise ValueError(f"--lr_scheduler_kwargs={options!r} is not JSON ({error}); write an object such as "
                             f"'{{\"num_cycles\": 2}}'.") from error
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise ValueError(f"--lr_scheduler_kwargs={options!r} is not a JSON object of the scheduler's options.")
    if args.min_lr is not None and name not in MIN_LR_SCHEDULERS:
        raise ValueError(f"--min_lr is the end of the {MIN_LR_SCHEDULERS} schedules, not of --lr_scheduler_type "
                         f"{name}; drop it.")
    if name in MIN_LR_SCHEDULERS and args.min_lr is None and "min_lr_rate" not in options and "min_lr" not in options:
        raise ValueError(f"--lr_scheduler_type {name} needs the learning rate it ends at: pass --min_lr (or "
                         f"min_lr_rate, a share of --learning_rate, in --lr_scheduler_kwargs).")
    if name in METRIC_SCHEDULERS and args.num_warmup_steps:
        raise ValueError(f"--num_warmup_steps={args.num_warmup_steps}: --lr_scheduler_type {name} has no warmup (it "
                         f"steps on the validation metric); pass --num_warmup_steps 0.")
    stand_in = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    planned = args.num_warmup_steps + 100  # any plan longer than the warmup
    try:
        get_scheduler(name, stand_in, args.num_warmup_steps, planned, scheduler_options(args, options, planned))
    except (TypeError, ValueError) as error:
        raise ValueError(f"--lr_scheduler_kwargs={json.dumps(options)} does not fit --lr_scheduler_type {name} "
                         f"({error}); see transformers' get_scheduler for its options.") from error
    return options


def scheduler_options(args: TrainingArguments, options: dict, max_steps: int) -> dict:
    """The scheduler's own ``options`` with ``--min_lr`` and the defaults of this loop: warmup_stable_decay decays
    over the last `WSD_DECAY_SHARE` of the steps, a metric scheduler minimises its metric unless it is
    greater-is-better."""
    options = dict(options)
    if args.min_lr is not None:
        options["min_lr"] = args.min_lr
    if args.lr_scheduler_type == "warmup_stable_decay":
        options.setdefault("num_decay_steps", max(1, round(WSD_DECAY_SHARE * max_steps)))
    if args.lr_scheduler_type in METRIC_SCHEDULERS:
        options.setdefault("mode", "max" if args.metric_for_best_model and args.greater_is_better else "min")
    return options


def listing(names: list[str], shown: int = 8) -> str:
    """``names`` for a message: the first ``shown``, then how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def check_earlier_run(args: TrainingArguments) -> None:
    """Refuse, before any training, to replace what ``args.output_dir`` holds or to start a new run next to the
    checkpoints of another, unless --overwrite_output_dir (which replaces only an earlier run's output)."""
    output = Path(args.output_dir)
    for option, folder in (("--output_dir", output), ("--checkpoint_dir", Path(args.checkpoint_dir))):
        if folder.is_symlink():
            raise ValueError(f"{option}={folder} is a symbolic link; a run replaces its folder whole, so pass the "
                             f"folder it points to ({folder.resolve()}) or a new one.")
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{option}={folder} is an existing file; pass the path of a new or empty folder.")
        if any(parent.exists() and not parent.is_dir() for parent in folder.absolute().parents):
            raise ValueError(f"{option}={folder} lies inside a file, not a folder; pass another path.")
    if output.is_dir() and any(output.iterdir()):
        if not args.overwrite_output_dir:
            raise ValueError(f"--output_dir={output} is not empty; pass --overwrite_output_dir to replace the "
                             f"earlier run there, or another folder.")
        theirs = foreign(output, run_output)
        if not (output / MANIFEST).is_file() and not run_output(output):
            raise ValueError(f"--output_dir={output} is not empty and holds no earlier run (no {MANIFEST}, nor a "
                             f"config.json saved with the model.safetensors it describes), so even "
                             f"--overwrite_output_dir replaces nothing there: {listing(theirs)} are not a run's. Pass "
                             f"the path of a new or empty folder.")
        if clashes := [name for name in theirs if matches(name, RUN_OUTPUT_NAMES)]:
            raise ValueError(f"--output_dir={output} holds {', '.join(clashes)}, which the earlier run there did not "
                             f"write and this run would (--overwrite_output_dir replaces only what a run wrote): "
                             f"move them out of {output} or pass another folder.")
        if (owner := output.stat().st_uid) != os.geteuid() and os.geteuid() != 0:
            raise ValueError(f"--output_dir={output} belongs to another user (uid {owner}); the run replaces the "
                             f"folder whole and could not give the new one that owner. Pass a folder of your own.")
    written = [("--checkpoint_dir", args.checkpoint_dir, "checkpoints")]
    if args.report_to != "none":
        written.append(("--logging_dir", args.logging_dir, "runs"))
    for option, folder, default in written:
        inside = Path(os.path.abspath(folder))
        if Path(os.path.abspath(output)) in (inside, *inside.parents):
            raise ValueError(f"{option}={folder} lies inside --output_dir={output}, which the end of the run replaces "
                             f"whole (deleting what is there); pass a folder outside it (the default is "
                             f"'<output_dir>-{default}').")
    checkpoints = Checkpoints(args.checkpoint_dir)
    if theirs := checkpoints.foreign():
        raise ValueError(f"--checkpoint_dir {args.checkpoint_dir} holds {', '.join(p.name for p in theirs)}, named "
                         f"like the run's step_<n> checkpoints but not written by one (no {MANIFEST}); a run "
                         f"replaces and deletes its checkpoints by these names, so it does not start here. Move or "
                         f"rename them, or pass another --checkpoint_dir.")
    if not (args.resume_from_checkpoint or args.overwrite_output_dir) and checkpoints.all():
        raise ValueError(f"--checkpoint_dir {args.checkpoint_dir} holds the step_<n> checkpoints of an earlier "
                         f"run; resume it with --resume_from_checkpoint latest, or pass --overwrite_output_dir to "
                         f"start afresh (deleting them; nothing else there).")
