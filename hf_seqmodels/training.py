"""The Accelerate training loop the tasks share.

It runs unchanged on one process or under ``accelerate launch --multi_gpu --num_processes N`` (CPU-only
machines too): Accelerate shards the training batches and averages the gradients, evaluation sums losses and
token counts over processes, and only the main process logs, shows progress bars and writes the final model.

Files: the final model goes to ``output_dir`` through `save_model`, which builds a complete folder next to it
and swaps it into place (`files.replacing`); it replaces an earlier run's files only with
``--overwrite_output_dir``, which also deletes that run's checkpoints when a new run starts (`start_run` locks
both folders against a second run and checks them before any training; parsing the arguments reads no file).
Only what a run wrote is ever replaced or deleted: the files its `files.MANIFEST` lists (for a folder from before
manifests, the names in `RUN_OUTPUT_NAMES`); any other file or folder there is kept. The
checkpoints (``<checkpoint_dir>/step_<n>``, each with the run's tokenizer) and the one a run resumes from are a
`checkpoints.Checkpoints`.
"""

import dataclasses
import importlib.util
import inspect
import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import torch
import transformers
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_scheduler
from transformers.trainer_pt_utils import LabelSmoother

from . import models
from .checkpoints import Checkpoints
from .data import TokenBatchSampler
from .cli import check_at_least, check_choice, check_range
from .evaluation import perplexity
from .files import MANIFEST, foreign, lock_folders, matches, remove_temporaries_of, replacing, unlock_folders
from .models.pipeline_translation import SOURCE_TOKENIZER_DIR
from .nt_asgd import NTASGD, evaluate_with_averages
from .scheduled_sampling import SCHEDULES, TeacherForcing, check_arguments as check_scheduled_sampling
from .tokenization import TOKENIZER_FILES, save_tokenizer
from .training_state import TrainingState
from .word_vectors import set_embeddings_trainable

logger = get_logger(__name__)

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
TRACKER_PACKAGES = {"tensorboard": "tensorboard"}
# Environment variables `accelerate launch` sets for a sharded-training configuration -> its name.
SHARDED_BACKENDS = {"ACCELERATE_USE_FSDP": "FSDP", "ACCELERATE_USE_DEEPSPEED": "DeepSpeed"}
RUN_OUTPUT_FILES = ("config.json", "results.json")  # one of them marks a folder as the output of an earlier run
TEST_HYPOTHESES = "test_hypotheses.txt"  # translation's test translations, one line per sentence, in output_dir
ATTENTION_PLOT = "attention.png"  # translation's attention heatmap of an example, in output_dir
# What a run writes in output_dir (glob patterns): without a files.MANIFEST (an older version's run), these are the
# earlier run's files that --overwrite_output_dir replaces; a file of the user's with one of these names is refused.
RUN_OUTPUT_NAMES = ("*.safetensors", "model.safetensors.index.json", "config.json", "generation_config.json",
                    "results.json", *TOKENIZER_FILES, SOURCE_TOKENIZER_DIR, "custom_generate", TEST_HYPOTHESES,
                    ATTENTION_PLOT,
                    *sorted(path.name for path in Path(models.__file__).parent.glob("*.py")))  # remote code
EVAL_SIZE_OPTIONS = "--max_eval_samples and --block_size"  # what can leave an evaluation set empty


@dataclass
class TrainingArguments:
    """Options of `train`; every field is also a command-line flag of the scripts (through HfArgumentParser)."""

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
                          "1 - k*i, k**i or k/(k + exp(i/k)) (see hf_seqmodels.scheduled_sampling)."},
    )
    scheduled_sampling_k: float | None = field(
        default=None, metadata={"help": "The k of --scheduled_sampling: the slope (linear, > 0), the factor "
                                        "(exponential, in (0, 1)) or the scale (inverse_sigmoid, >= 1)."},
    )
    scheduled_sampling_floor: float = field(
        default=0.0, metadata={"help": "The lowest teacher-forcing ratio of --scheduled_sampling, in [0, 1)."}
    )

    def __post_init__(self):
        check_choice(self, "optimizer", OPTIMIZERS)
        if self.mixed_precision is not None:
            check_choice(self, "mixed_precision", MIXED_PRECISIONS)
        if self.report_to == "trackio":
            raise ValueError("--report_to trackio is not supported: trackio keeps its runs in its own database under "
                             "the Hugging Face cache, not in --logging_dir beside the run; pass --report_to "
                             "tensorboard (offline event files in --logging_dir) or none.")
        check_choice(self, "report_to", TRACKERS)
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
            self.checkpoint_dir = f"{self.output_dir.rstrip('/')}-checkpoints"
        if self.logging_dir is None:
            self.logging_dir = f"{self.output_dir.rstrip('/')}-runs"
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


def make_scheduler(optimizer: torch.optim.Optimizer, args: TrainingArguments, max_steps: int):
    """transformers' `get_scheduler` for ``--lr_scheduler_type`` over ``max_steps`` optimizer steps."""
    options = scheduler_options(args, args.lr_scheduler_kwargs, max_steps)
    return get_scheduler(args.lr_scheduler_type, optimizer, args.num_warmup_steps, max_steps, options)


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
        if not any((output / name).is_file() for name in (*RUN_OUTPUT_FILES, MANIFEST)):
            raise ValueError(f"--output_dir={output} is not empty and holds no earlier run (no "
                             f"{' or '.join(RUN_OUTPUT_FILES)}), so even --overwrite_output_dir does not replace "
                             f"it; pass the path of a new or empty folder.")
        theirs = foreign(output, RUN_OUTPUT_NAMES)
        if clashes := [name for name in theirs if matches(name, RUN_OUTPUT_NAMES)]:
            raise ValueError(f"--output_dir={output} holds {', '.join(clashes)}, which the earlier run there did not "
                             f"write and this run would (--overwrite_output_dir replaces only what a run wrote): "
                             f"move them out of {output} or pass another folder.")
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


def start_run(args: TrainingArguments) -> tuple[Accelerator, Checkpoints]:
    """Where a run starts: lock the output and checkpoint folders for this run (`files.lock_folder`: a second run
    into them is refused, naming this one) and remove what a killed run left beside them, check them
    (`check_earlier_run`), make the Accelerator (`make_accelerator`) and the run's `Checkpoints` (with the
    checkpoint it resumes from, if any).

    Under a launcher (``RANK`` set) only the first process locks: the others are part of the same run."""
    check_earlier_run(args)  # before the lock files are written beside the folders
    if os.environ.get("RANK", "0") == "0":
        taken = lock_folders({"--output_dir": args.output_dir, "--checkpoint_dir": args.checkpoint_dir})
        try:
            for folder in (args.output_dir, args.checkpoint_dir):
                remove_temporaries_of(folder)
            check_earlier_run(args)  # again under the lock: a run that ended meanwhile may have filled the folders
        except BaseException:
            unlock_folders(taken)  # a refused run holds nothing
            raise
    return make_accelerator(args), Checkpoints.for_run(args)


def keep_model_inputs(dataset: datasets.DatasetDict, tokenizer: PreTrainedTokenizerBase,
                      model: torch.nn.Module) -> datasets.DatasetDict:
    """``dataset`` without the columns ``model.forward`` does not take, as Trainer drops them (a BERT tokenizer's
    ``token_type_ids`` mean nothing to a recurrent model, whose forward refuses unknown arguments); the tokenizer
    stops producing them too, and saves so, so that a pipeline over the saved folder feeds the model what it takes."""
    accepted = inspect.signature(model.forward).parameters
    tokenizer.model_input_names = [name for name in tokenizer.model_input_names if name in accepted]
    tokenizer.init_kwargs["model_input_names"] = tokenizer.model_input_names
    unused = [name for name in next(iter(dataset.values())).column_names if name not in accepted]
    return dataset.remove_columns(unused) if unused else dataset


def make_accelerator(args: TrainingArguments) -> Accelerator:
    """Create the Accelerator, seed every RNG, quiet the libraries on non-main processes, and share the CPU cores
    among the local processes (unless ``OMP_NUM_THREADS`` is set, as the launchers do). Sharded training (FSDP,
    DeepSpeed) is refused.

    Without a GPU (or other accelerator) it asks for the CPU explicitly: only then does Accelerate join the
    processes started by ``torchrun`` / ``accelerate launch --multi_gpu`` into one gloo process group.
    """
    for variable, backend in SHARDED_BACKENDS.items():
        if os.environ.get(variable, "false").lower() in ("1", "true"):
            raise ValueError(
                f"{backend} (set by the accelerate launch configuration) shards every model's parameters over the "
                "processes, while these scripts evaluate, generate and save with the whole model in each process: "
                "they would hang. The models here fit on one device, so launch them data-parallel instead "
                "(configs/accelerate/multi_gpu.yaml or multi_node.yaml, or --multi_gpu).")
    tracker = None if args.report_to == "none" else args.report_to
    if tracker is not None and importlib.util.find_spec(TRACKER_PACKAGES[tracker]) is None:
        raise ValueError(f"--report_to {tracker} needs the {TRACKER_PACKAGES[tracker]} package: pip install "
                         f"{TRACKER_PACKAGES[tracker]} (or pip install 'hf_seqmodels[tracking]'), or drop the option.")
    accelerator = Accelerator(
        cpu=not torch.accelerator.is_available(),
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        mixed_precision=args.mixed_precision,
        log_with=tracker,
        project_dir=args.logging_dir,
    )
    if accelerator.mixed_precision == "fp16" and accelerator.device.type == "cpu":
        raise ValueError("--mixed_precision fp16 (or the accelerate launch configuration's) needs a GPU (on the CPU "
                         "Accelerate would train in float32 unawares); pass --mixed_precision bf16, which the CPU "
                         "runs, or no.")
    set_seed(args.seed)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    if not accelerator.is_local_main_process:
        datasets.utils.logging.set_verbosity_error()
        datasets.disable_progress_bars()
        transformers.utils.logging.set_verbosity_error()
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // accelerator.num_processes))
    return accelerator


def make_train_dataloader(dataset, collate_fn, args: TrainingArguments, sampler=None) -> DataLoader:
    """The training batches: ``sampler``'s order (shuffled rows without one), in batches of
    ``--per_device_train_batch_size``; or ``sampler``'s batches when it is a `data.TokenBatchSampler`
    (``--max_tokens``), which no other task makes."""
    if isinstance(sampler, TokenBatchSampler):
        batches = {"batch_sampler": sampler}
    elif args.max_tokens is not None:
        raise ValueError("--max_tokens batches translation pairs by their source and target lengths; this task "
                         "batches rows: drop it and set --per_device_train_batch_size.")
    else:
        batches = {"batch_size": args.per_device_train_batch_size,
                   **({"shuffle": True} if sampler is None else {"sampler": sampler})}
    # Its own generator keeps the global RNG (dropout) untouched by starting an epoch, so a resumed run matches.
    return DataLoader(dataset, collate_fn=collate_fn, generator=torch.Generator(), **batches)


def check_mixed_precision(model: torch.nn.Module, accelerator: Accelerator) -> None:
    """Refuse bf16 autocast of an LSTM on a CPU whose kernels lack it (torch's oneDNN LSTM without AVX-512 BF16)
    with a ValueError naming the option, rather than a crash deep in the first step."""
    if accelerator.mixed_precision != "bf16" or accelerator.device.type != "cpu":
        return
    if not any(isinstance(module, torch.nn.LSTM) for module in model.modules()):
        return
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.LSTM(1, 1)(torch.zeros(1, 1, 1))
    except RuntimeError as error:
        raise ValueError("--mixed_precision bf16: torch on this CPU has no bf16 LSTM kernel; train the LSTM in "
                         "float32 (--mixed_precision no), on a GPU, or choose --cell_type gru.") from error


def make_optimizer(model: torch.nn.Module, args: TrainingArguments) -> torch.optim.Optimizer:
    if args.optimizer == "nt_asgd":
        return NTASGD(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay, nonmono=args.nonmono)
    if args.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)


@torch.no_grad()
def evaluate_loss(accelerator: Accelerator, model: PreTrainedModel, dataset, collate_fn, batch_size: int) -> float:
    """Mean loss per target over ``dataset`` (rows with ``labels``; -100 = not a target).

    A target is a label that is not -100: a token for language models and taggers, a row for sequence
    classification. A causal LM (a model that generates and is not an encoder-decoder) shifts its labels, so
    ``labels[:, 0]`` is never a target. Each process takes a contiguous shard (no row twice, none dropped) and sums
    ``loss * targets`` per batch; the sums are added over processes.
    """
    _require_rows(dataset, "evaluation", EVAL_SIZE_OPTIONS)
    model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    shifted = model.can_generate() and not model.config.is_encoder_decoder
    shard = dataset.shard(accelerator.num_processes, accelerator.process_index, contiguous=True)
    totals = torch.zeros(2, dtype=torch.float64, device=accelerator.device)  # [sum of losses, number of targets]
    loader = DataLoader(shard, batch_size=batch_size, collate_fn=collate_fn)
    for batch in tqdm(loader, desc="Evaluating", leave=False, disable=not accelerator.is_local_main_process):
        batch = {key: value.to(accelerator.device) for key, value in batch.items()}
        targets = ((batch["labels"][:, 1:] if shifted else batch["labels"]) != -100).sum()
        if targets > 0:
            totals += torch.stack([model(**batch).loss.double() * targets, targets.double()])
    model.train(was_training)
    totals = accelerator.reduce(totals, reduction="sum")
    return (totals[0] / totals[1]).item()


def _require_rows(dataset, name: str, options: str) -> None:
    if len(dataset) == 0:
        raise ValueError(f"The {name} set is empty after preprocessing; check {options}.")


def save_model(
    accelerator: Accelerator,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    output_dir: str,
    results: dict | None = None,
    texts: dict[str, str] | None = None,
) -> None:
    """Write model, tokenizer, (if given) ``results.json`` and the ``texts`` (file name -> content, e.g. the test
    translations) to ``output_dir``, atomically (main process only):
    `files.replacing` swaps the complete folder in, with what an earlier run did not write there (kept); a failed
    write (a full disk) keeps the previous one."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        with replacing(output_dir, RUN_OUTPUT_NAMES) as temp:
            accelerator.unwrap_model(model).save_pretrained(temp)
            save_tokenizer(tokenizer, temp)
            if results is not None:
                (temp / "results.json").write_text(json.dumps(results, indent=2) + "\n")
            for name, text in (texts or {}).items():
                (temp / name).write_text(text)
    accelerator.wait_for_everyone()


class BestModel:
    """The best value of ``metric`` among the evaluations so far, the weights of ``model`` then (on the CPU) and
    the number of evaluations since. Saved in the checkpoints (as ``best_model``), so a resumed run keeps them.

    An evaluation whose entry says ``eval_degenerate`` (the task judged its outputs unusable, e.g. translations empty
    or all alike) never becomes the best, whatever its metric; it counts as one without progress only once there is
    a best, so early stopping never ends a run before its outputs are usable."""

    def __init__(self, metric: str, greater_is_better: bool, model: torch.nn.Module):
        self.metric, self.greater_is_better, self.model = metric, greater_is_better, model
        self.entry, self.weights, self.evaluations_since = None, None, 0

    def update(self, entry: dict) -> None:
        if self.metric not in entry:
            raise ValueError(f"--metric_for_best_model={self.metric!r} is not among the evaluation's metrics "
                             f"{sorted(entry)}.")
        if entry.get("eval_degenerate"):
            if self.entry is not None:
                self.evaluations_since += 1
            return
        value, best = entry[self.metric], None if self.entry is None else self.entry[self.metric]
        if best is None or (value > best if self.greater_is_better else value < best):
            self.entry, self.evaluations_since = entry, 0
            self.weights = {name: tensor.detach().cpu().clone() for name, tensor in self.model.state_dict().items()}
        else:
            self.evaluations_since += 1

    def state_dict(self) -> dict:
        return {"entry": self.entry, "weights": self.weights, "evaluations_since": self.evaluations_since}

    def load_state_dict(self, state: dict) -> None:
        """Take a saved state, refused (ValueError) unless it is one of this metric and model: no evaluation yet
        (no entry, no weights), or an entry with the metric and weights shaped like the model's."""
        entry, weights, since = state["entry"], state["weights"], state["evaluations_since"]
        if not (type(since) is int and since >= 0):
            raise ValueError(f"evaluations_since is {since!r}, not a count.")
        if entry is None or weights is None:
            if (entry, weights) != (None, None):
                raise ValueError("it has an entry without weights, or weights without an entry.")
        else:
            if not (isinstance(entry, dict) and isinstance(entry.get(self.metric), (int, float))):
                raise ValueError(f"its entry has no {self.metric!r} value (--metric_for_best_model).")
            if not (type(entry.get("step")) is int and entry["step"] >= 0):
                raise ValueError(f"its entry's step is {entry.get('step')!r}, not a step number.")
            shapes = {name: tensor.shape for name, tensor in self.model.state_dict().items()}
            if not isinstance(weights, dict) or {
                    name: getattr(tensor, "shape", None) for name, tensor in weights.items()} != shapes:
                raise ValueError("its weights are not those of this model (other names or shapes).")
        self.entry, self.weights, self.evaluations_since = entry, weights, since


def train(
    accelerator: Accelerator,
    model: PreTrainedModel,
    train_dataset,
    eval_dataset,
    collate_fn,
    args: TrainingArguments,
    evaluate_fn=None,
    train_sampler=None,
    tokenizer=None,
    checkpoints: Checkpoints | None = None,
) -> dict:
    """Train ``model`` (in place) on ``train_dataset``, evaluating on ``eval_dataset`` after every epoch and at
    the end. Batches are dicts the model takes as keyword arguments, including ``labels``.

    Training stops at ``max_train_steps`` (default: ``num_train_epochs`` epochs), when the time budget is
    spent, or after ``early_stopping_patience`` evaluations without progress, whichever comes first. With
    ``metric_for_best_model``, the model ends with the weights of its best evaluation.

    ``evaluate_fn(model)``, if given, returns more metrics for each evaluation (e.g. ``{"eval_bleu": 35.2}`` from
    decoding the validation set); it gets the unwrapped model. ``train_sampler`` replaces the uniform shuffling of
    the training rows (e.g. batches of similar lengths); give it a ``set_epoch(epoch)`` that fixes its order per
    epoch, so that a resumed run sees the same batches. ``tokenizer`` (anything with ``save_pretrained``), if
    given, is saved into every checkpoint, where `Checkpoints.tokenizer` finds it on resuming. ``checkpoints``
    saves and resumes (default: ``Checkpoints.for_run(args)``).

    Returns:
        ``steps``, ``resumed_from_step`` (0 for a new run), ``epochs`` (fractional), ``train_runtime_s``,
        ``stopped_by_time_budget``, ``train_tokens`` (the input tokens of the batches trained on, padding not
        counted, summed over processes), ``train_loss`` (mean over the last logging window), the final
        ``learning_rate``, the ``gradient_accumulation_steps`` and ``mixed_precision`` it ran with, the final
        ``eval_loss`` and ``eval_perplexity``, and ``eval_history`` (one entry per evaluation, with its
        ``learning_rate``); with ``metric_for_best_model``
        the ``eval_*`` values are those of the best evaluation, whose step is ``best_step``.
    """
    _require_rows(train_dataset, "training", "--max_train_samples, --max_source_length, --block_size and the "
                 "filters of the data (e.g. rows without a label or target)")
    _require_rows(eval_dataset, "evaluation", EVAL_SIZE_OPTIONS)
    teacher_forcing = TeacherForcing.for_run(args, model)
    if args.gradient_checkpointing:
        if not model.supports_gradient_checkpointing:
            raise ValueError(f"--gradient_checkpointing: {type(model).__name__} does not support gradient "
                             "checkpointing; drop the option.")
        # Non-reentrant: the checkpointed layers' inputs need not require gradients (embeddings may be frozen).
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    frozen_until_epoch = args.unfreeze_embeddings_after_epochs if args.freeze_embeddings else 0
    if frozen_until_epoch and accelerator.num_processes > 1:
        raise ValueError("--unfreeze_embeddings_after_epochs trains on one process only (DistributedDataParallel "
                         "fixes the trained parameters when it wraps the model): drop it or run one process.")
    if args.freeze_embeddings:  # before DistributedDataParallel wraps the model
        set_embeddings_trainable(model, False)
    check_mixed_precision(model, accelerator)
    train_dataloader = make_train_dataloader(train_dataset, collate_fn, args, train_sampler)
    optimizer = make_optimizer(model, args)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    # Batches per optimizer step (fewer at an epoch's end): the option's, or the accelerate launch configuration's.
    accumulation = accelerator.gradient_accumulation_steps
    steps_per_epoch = math.ceil(len(train_dataloader) / accumulation)
    max_steps = args.max_train_steps or args.num_train_epochs * steps_per_epoch
    # Stepped once per optimizer step, so the schedule does not depend on the number of processes.
    scheduler = make_scheduler(optimizer, args, max_steps)
    steps_on_metric = args.lr_scheduler_type in METRIC_SCHEDULERS
    scheduler_metric = args.metric_for_best_model or "eval_loss"
    unwrapped = accelerator.unwrap_model(model)
    best = None
    if args.metric_for_best_model is not None:
        best = BestModel(args.metric_for_best_model, args.greater_is_better, unwrapped)
    state = TrainingState(unwrapped, optimizer, scheduler, {"best_model": best} if best is not None else {})
    label_smoother = LabelSmoother(args.label_smoothing_factor) if args.label_smoothing_factor > 0 else None
    shifts_labels = unwrapped.can_generate() and not unwrapped.config.is_encoder_decoder

    checkpoints = checkpoints or Checkpoints.for_run(args)
    step = checkpoints.resume(accelerator, state)
    if checkpoints.resume_from is None and args.overwrite_output_dir:
        checkpoints.delete_all(accelerator)  # a new run: the checkpoints of an earlier one must not be resumed later
    resumed_from_step = step
    accelerator.init_trackers(Path(args.output_dir).name, config={  # the options a tracker shows (simple values)
        key: value for key, value in dataclasses.asdict(args).items() if isinstance(value, (int, float, str, bool))})
    logger.info(
        f"{len(train_dataset)} training rows, {accelerator.num_processes} process(es) x batch "
        f"{args.per_device_train_batch_size}, {steps_per_epoch} steps per epoch, {max_steps} steps planned",
        main_process_only=True,
    )

    def evaluate() -> dict:
        loss = evaluate_with_averages(optimizer, model, lambda: evaluate_loss(
            accelerator, model, eval_dataset, collate_fn, args.per_device_eval_batch_size))
        entry = {"step": step, "epoch": step / steps_per_epoch, "eval_loss": loss, "eval_perplexity": perplexity(loss)}
        if evaluate_fn is not None:
            entry.update(evaluate_fn(unwrapped))
        logger.info(f"step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in entry.items() if k.startswith("eval_")),
                    main_process_only=True)
        if best is not None:
            best.update(entry)
        if steps_on_metric:
            if scheduler_metric not in entry:
                raise ValueError(f"--lr_scheduler_type {args.lr_scheduler_type} steps on --metric_for_best_model="
                                 f"{scheduler_metric!r}, which is not among the evaluation's metrics {sorted(entry)}.")
            scheduler.step(entry[scheduler_metric])
        entry["learning_rate"] = scheduler.get_last_lr()[0]
        accelerator.log({key: value for key, value in entry.items() if key != "step"}, step=step)
        return entry

    history, window_loss, window_batches, train_loss = [], torch.zeros(()), 0, math.nan
    stopped_by_time_budget = stopped_early = False
    train_tokens = torch.zeros((), dtype=torch.int64, device=accelerator.device)  # input tokens read, padding not
    start = time.monotonic()
    progress = tqdm(total=max_steps, initial=step, desc="Training", disable=not accelerator.is_local_main_process)
    model.train()
    while step < max_steps and not (stopped_by_time_budget or stopped_early):
        epoch, done_in_epoch = divmod(step, steps_per_epoch)
        train_dataloader.set_epoch(epoch)
        if hasattr(train_sampler, "set_epoch"):  # a batch sampler Accelerate wrapped does not reach it
            train_sampler.set_epoch(epoch)
        if frozen_until_epoch:
            set_embeddings_trainable(unwrapped, epoch >= frozen_until_epoch)
        skipped = done_in_epoch * accumulation  # 0 unless resumed
        for batch in accelerator.skip_first_batches(train_dataloader, skipped):
            with accelerator.accumulate(model):  # the optimizer steps (and zeroes) only on the last batch of a step
                teacher_forcing.update(unwrapped, step)
                outputs = model(**batch)
                train_tokens += (batch["attention_mask"].sum() if "attention_mask" in batch
                                 else batch["input_ids"].numel())
                loss = outputs.loss
                if label_smoother is not None:
                    loss = label_smoother(outputs, batch["labels"], shift_labels=shifts_labels)
                accelerator.backward(loss)
                if args.max_grad_norm > 0 and accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
            window_loss, window_batches = window_loss + loss.detach().float().cpu(), window_batches + 1
            if not accelerator.sync_gradients:
                continue
            if not steps_on_metric:
                scheduler.step()
            step += 1
            progress.update(1)
            if step % args.logging_steps == 0 or step == max_steps:
                train_loss = accelerator.reduce(window_loss.to(accelerator.device) / window_batches, "mean").item()
                window_loss, window_batches = torch.zeros(()), 0
                learning_rate = scheduler.get_last_lr()[0]
                progress.set_postfix(loss=f"{train_loss:.3f}", lr=f"{learning_rate:.2e}")
                accelerator.log({"train_loss": train_loss, "learning_rate": learning_rate}, step=step)
            if args.checkpointing_steps not in (None, "epoch") and step % int(args.checkpointing_steps) == 0:
                checkpoints.save(accelerator, step, state, tokenizer)
            if args.time_budget_minutes is not None:
                if time.monotonic() - start > 60 * args.time_budget_minutes:
                    accelerator.set_trigger()
                if accelerator.check_trigger():  # true on every process once any process has set it
                    stopped_by_time_budget = True
                    logger.info(f"Time budget of {args.time_budget_minutes} min spent at step {step}",
                                main_process_only=True)
                    break
            if step >= max_steps:
                break
        history.append(evaluate())  # at the end of an epoch, or where training stopped
        if args.early_stopping_patience is not None and best.evaluations_since >= args.early_stopping_patience:
            stopped_early = True
            logger.info(f"No better {best.metric} for {best.evaluations_since} evaluations: stopping at step {step}",
                        main_process_only=True)
        if args.checkpointing_steps is not None and (stopped_by_time_budget or args.checkpointing_steps == "epoch"):
            checkpoints.save(accelerator, step, state, tokenizer)
    progress.close()
    if not history:  # resumed from a checkpoint of a finished run
        history.append(evaluate())
    for tracker in accelerator.trackers:  # not accelerator.end_training(), which ends the process group too
        tracker.finish()
    final = history[-1]
    if best is not None and best.entry is not None:  # else every evaluation was degenerate: the last model stays
        unwrapped.load_state_dict(best.weights)
        final = best.entry
    return {
        "steps": step,
        "resumed_from_step": resumed_from_step,
        "epochs": step / steps_per_epoch,
        "train_runtime_s": time.monotonic() - start,
        "stopped_by_time_budget": stopped_by_time_budget,
        "train_tokens": int(accelerator.reduce(train_tokens, reduction="sum")),
        "stopped_early": stopped_early,
        "best_step": final["step"],
        "train_loss": train_loss,
        "learning_rate": scheduler.get_last_lr()[0],
        "gradient_accumulation_steps": accumulation,  # these two as run: an accelerate launch config may set them
        "mixed_precision": accelerator.mixed_precision,
        **{key: value for key, value in final.items() if key.startswith("eval_")},
        "eval_history": history,
    }
