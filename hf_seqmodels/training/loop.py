"""The Accelerate training loop the tasks share, from the start of a run (`start_run`) through `train` to its end
(`finish_run`: results and the saved folder). Its options and their checks are `training_args.TrainingArguments`.

It runs unchanged on one process or under ``accelerate launch --multi_gpu --num_processes N`` (CPU-only
machines too): Accelerate shards the training batches and averages the gradients, evaluation sums losses and
token counts over processes, and only the main process logs, shows progress bars and writes the final model.

Files: the final model goes to ``output_dir`` through `save_model`, which builds a complete folder next to it
and swaps it into place (`atomic_folders.replacing`); it replaces an earlier run's files only with
``--overwrite_output_dir``, which also deletes that run's checkpoints when a new run starts (`start_run` locks
both folders against a second run and checks them before any training; parsing the arguments reads no file).
Only what a run wrote is ever replaced or deleted: the files its `atomic_folders.MANIFEST` lists (for a folder from
before manifests, those its content shows a run wrote: `earlier_runs.run_output`); any other file or folder there is
kept. The checkpoints (``<checkpoint_dir>/step_<n>``, each with the run's tokenizer) and the one a run resumes from are a
`checkpoints.Checkpoints`.
"""

import dataclasses
import importlib.util
import inspect
import json
import logging
import math
import os
import sys
import time
from pathlib import Path

import datasets
import numpy
import pyarrow
import pyarrow.compute
import torch
import transformers
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase, get_scheduler

from ..data.loading import TokenBatchSampler
from ..data.pretrained_embeddings import set_embeddings_trainable
from ..data.tokenization import save_tokenizer
from ..evaluation import perplexity
from ..models.modeling_utils import lm_loss
from ..provenance import describe_device, provenance
from ..storage.atomic_folders import lock_folders, remove_temporaries_of, replacing, unlock_folders
from ..storage.earlier_runs import run_output
from .arguments import METRIC_SCHEDULERS, TrainingArguments, check_earlier_run, scheduler_options
from .checkpoint_format import TrainingState
from .checkpoints import Checkpoints
from .nt_asgd import NTASGD, evaluate_with_averages
from .scheduled_sampling import TeacherForcing

logger = get_logger(__name__)

TRACKER_PACKAGES = {"tensorboard": "tensorboard"}  # --report_to -> the package its tracker needs
# Environment variables `accelerate launch` sets for a sharded-training configuration -> its name.
SHARDED_BACKENDS = {"ACCELERATE_USE_FSDP": "FSDP", "ACCELERATE_USE_DEEPSPEED": "DeepSpeed"}
EVAL_SIZE_OPTIONS = "--max_eval_samples and --block_size"  # what can leave an evaluation set empty


def start_run(args: TrainingArguments) -> tuple[Accelerator, Checkpoints]:
    """Where a run starts: lock the output and checkpoint folders for this run (`atomic_folders.lock_folder`: a second
    run into them is refused, naming this one) and remove what a killed run left beside them, check them
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
        ``evaluation_runtime_s`` (the part of ``train_runtime_s`` spent evaluating), ``stopped_by_time_budget``,
        ``train_tokens`` (the input tokens of the batches trained on, padding not
        counted, summed over processes), ``train_loss`` (mean over the last logging window), the final
        ``learning_rate``, the ``gradient_accumulation_steps`` and ``mixed_precision`` it ran with, the final
        ``eval_loss`` and ``eval_perplexity``, and ``eval_history`` (one entry per evaluation, with its
        ``learning_rate`` and its seconds, ``evaluation_s``); with ``metric_for_best_model``
        the ``eval_*`` values are those of the best evaluation, whose step is ``best_step``.
    """
    loop = TrainingLoop(accelerator, model, train_dataset, eval_dataset, collate_fn, args, evaluate_fn, train_sampler,
                        tokenizer, checkpoints)
    while loop.step < loop.max_steps and not (loop.stopped_by_time_budget or loop.stopped_early):
        loop.train_epoch()
        loop.end_epoch()
    return loop.finish()


class TrainingLoop:
    """One `train` call: its state, and its steps in the order they run. ``__init__`` prepares (the model options,
    the batches, optimizer and schedule, the checkpoint to resume from); `train_epoch` trains to the end of an epoch
    (`train_batch`, `end_step`); `end_epoch` evaluates (`evaluate`), stops early and saves a checkpoint as the
    options say; `finish` takes the best evaluation's weights and returns the results."""

    def __init__(self, accelerator: Accelerator, model: PreTrainedModel, train_dataset, eval_dataset, collate_fn,
                 args: TrainingArguments, evaluate_fn, train_sampler, tokenizer, checkpoints: Checkpoints | None):
        _require_rows(train_dataset, "training", "--max_train_samples, --max_source_length, --block_size and the "
                      "filters of the data (e.g. rows without a label or target)")
        _require_rows(eval_dataset, "evaluation", EVAL_SIZE_OPTIONS)
        self.accelerator, self.args, self.tokenizer, self.train_sampler = accelerator, args, tokenizer, train_sampler
        self.eval_dataset, self.collate_fn, self.evaluate_fn = eval_dataset, collate_fn, evaluate_fn
        self.teacher_forcing = TeacherForcing.for_run(args, model)
        self.frozen_until_epoch = prepare_model(model, args, accelerator)
        train_dataloader = make_train_dataloader(train_dataset, collate_fn, args, train_sampler)
        optimizer = make_optimizer(model, args)
        self.model, self.optimizer, self.train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
        # Batches per optimizer step (fewer at an epoch's end): the option's, or the accelerate launch configuration's.
        self.accumulation = accelerator.gradient_accumulation_steps
        self.steps_per_epoch = math.ceil(len(self.train_dataloader) / self.accumulation)
        self.max_steps = args.max_train_steps or args.num_train_epochs * self.steps_per_epoch
        # Stepped once per optimizer step, so the schedule does not depend on the number of processes.
        self.scheduler = make_scheduler(self.optimizer, args, self.max_steps)
        self.steps_on_metric = args.lr_scheduler_type in METRIC_SCHEDULERS
        self.unwrapped = accelerator.unwrap_model(self.model)
        self.best = None
        if args.metric_for_best_model is not None:
            self.best = BestModel(args.metric_for_best_model, args.greater_is_better, self.unwrapped)
        self.state = TrainingState(self.unwrapped, self.optimizer, self.scheduler,
                                   {"best_model": self.best} if self.best is not None else {})

        self.checkpoints = checkpoints or Checkpoints.for_run(args)
        self.step = self.resumed_from_step = self.checkpoints.resume(accelerator, self.state)
        if self.checkpoints.resume_from is None and args.overwrite_output_dir:
            # A new run: the checkpoints of an earlier one must not be resumed later.
            self.checkpoints.delete_all(accelerator)
        accelerator.init_trackers(Path(args.output_dir).name, config={  # the options a tracker shows (simple values)
            key: value for key, value in dataclasses.asdict(args).items()
            if isinstance(value, (int, float, str, bool))})
        logger.info(
            f"{len(train_dataset)} training rows, {accelerator.num_processes} process(es) x batch "
            f"{args.per_device_train_batch_size}, {self.steps_per_epoch} steps per epoch, {self.max_steps} steps "
            "planned",
            main_process_only=True,
        )
        self.history, self.window_loss, self.window_batches, self.train_loss = [], torch.zeros(()), 0, math.nan
        self.stopped_by_time_budget = self.stopped_early = False
        # The input tokens read, padding not counted.
        self.train_tokens = torch.zeros((), dtype=torch.int64, device=accelerator.device)
        self.start = time.monotonic()
        self.progress = tqdm(total=self.max_steps, initial=self.step, desc="Training",
                             disable=not accelerator.is_local_main_process)
        self.model.train()

    def train_epoch(self) -> None:
        """Train from the current step (where a resumed run left the epoch) until the epoch ends, ``max_steps`` is
        reached or the time budget is spent."""
        epoch, done_in_epoch = divmod(self.step, self.steps_per_epoch)
        self.train_dataloader.set_epoch(epoch)
        if hasattr(self.train_sampler, "set_epoch"):  # a batch sampler Accelerate wrapped does not reach it
            self.train_sampler.set_epoch(epoch)
        if self.frozen_until_epoch:
            set_embeddings_trainable(self.unwrapped, epoch >= self.frozen_until_epoch)
        skipped = done_in_epoch * self.accumulation  # 0 unless resumed
        for batch in self.accelerator.skip_first_batches(self.train_dataloader, skipped):
            self.train_batch(batch)
            if self.accelerator.sync_gradients and self.end_step():
                break

    def train_batch(self, batch: dict) -> None:
        """The forward and backward pass of one batch; the optimizer steps (and zeroes) only on the last batch of an
        optimizer step."""
        accelerator, args = self.accelerator, self.args
        with accelerator.accumulate(self.model):
            self.teacher_forcing.update(self.unwrapped, self.step)
            loss = training_loss(self.model, batch, args.label_smoothing_factor, self.unwrapped)
            self.train_tokens += (batch["attention_mask"].sum() if "attention_mask" in batch
                                  else batch["input_ids"].numel())
            accelerator.backward(loss)
            if args.max_grad_norm > 0 and accelerator.sync_gradients:
                accelerator.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
            self.optimizer.step()
            self.optimizer.zero_grad()
        self.window_loss, self.window_batches = self.window_loss + loss.detach().float().cpu(), self.window_batches + 1

    def end_step(self) -> bool:
        """After an optimizer step: step the schedule, count the step, log, save a checkpoint every
        ``--checkpointing_steps``. Returns whether training stops here (``max_steps``, or the time budget spent)."""
        accelerator, args = self.accelerator, self.args
        if not self.steps_on_metric:
            self.scheduler.step()
        self.step += 1
        self.progress.update(1)
        if self.step % args.logging_steps == 0 or self.step == self.max_steps:
            self.train_loss = accelerator.reduce(self.window_loss.to(accelerator.device) / self.window_batches,
                                                 "mean").item()
            self.window_loss, self.window_batches = torch.zeros(()), 0
            learning_rate = self.scheduler.get_last_lr()[0]
            self.progress.set_postfix(loss=f"{self.train_loss:.3f}", lr=f"{learning_rate:.2e}")
            accelerator.log({"train_loss": self.train_loss, "learning_rate": learning_rate}, step=self.step)
        if args.checkpointing_steps not in (None, "epoch") and self.step % int(args.checkpointing_steps) == 0:
            self.checkpoints.save(accelerator, self.step, self.state, self.tokenizer)
        if args.time_budget_minutes is not None:
            if time.monotonic() - self.start > 60 * args.time_budget_minutes:
                accelerator.set_trigger()
            if accelerator.check_trigger():  # true on every process once any process has set it
                self.stopped_by_time_budget = True
                logger.info(f"Time budget of {args.time_budget_minutes} min spent at step {self.step}",
                            main_process_only=True)
                return True
        return self.step >= self.max_steps

    def evaluate(self) -> dict:
        """The validation loss and perplexity (and ``evaluate_fn``'s metrics) at this step, logged; the best model
        and a metric scheduler take them. Returns the entry of ``eval_history``."""
        accelerator, args, step = self.accelerator, self.args, self.step
        start = time.monotonic()
        loss = evaluate_with_averages(self.optimizer, self.model, lambda: evaluate_loss(
            accelerator, self.model, self.eval_dataset, self.collate_fn, args.per_device_eval_batch_size))
        entry = {"step": step, "epoch": step / self.steps_per_epoch, "eval_loss": loss,
                 "eval_perplexity": perplexity(loss)}
        if self.evaluate_fn is not None:
            entry.update(self.evaluate_fn(self.unwrapped))
        logger.info(f"step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in entry.items() if k.startswith("eval_")),
                    main_process_only=True)
        if self.best is not None:
            self.best.update(entry)
        if self.steps_on_metric:
            metric = args.metric_for_best_model or "eval_loss"
            if metric not in entry:
                raise ValueError(f"--lr_scheduler_type {args.lr_scheduler_type} steps on --metric_for_best_model="
                                 f"{metric!r}, which is not among the evaluation's metrics {sorted(entry)}.")
            self.scheduler.step(entry[metric])
        entry["learning_rate"] = self.scheduler.get_last_lr()[0]
        entry["evaluation_s"] = time.monotonic() - start
        accelerator.log({key: value for key, value in entry.items() if key != "step"}, step=step)
        return entry

    def end_epoch(self) -> None:
        """Evaluate where the epoch ended (or training stopped), then stop early after ``--early_stopping_patience``
        evaluations without progress, and save a checkpoint at the epoch's end or where the time budget stopped it."""
        args = self.args
        self.history.append(self.evaluate())
        if args.early_stopping_patience is not None and self.best.evaluations_since >= args.early_stopping_patience:
            self.stopped_early = True
            logger.info(f"No better {self.best.metric} for {self.best.evaluations_since} evaluations: stopping at "
                        f"step {self.step}", main_process_only=True)
        if args.checkpointing_steps is not None and (self.stopped_by_time_budget
                                                     or args.checkpointing_steps == "epoch"):
            self.checkpoints.save(self.accelerator, self.step, self.state, self.tokenizer)

    def finish(self) -> dict:
        """End the trackers, give the model the best evaluation's weights, and return `train`'s results."""
        accelerator = self.accelerator
        self.progress.close()
        if not self.history:  # resumed from a checkpoint of a finished run
            self.history.append(self.evaluate())
        for tracker in accelerator.trackers:  # not accelerator.end_training(), which ends the process group too
            tracker.finish()
        final = self.history[-1]
        if self.best is not None and self.best.entry is not None:  # else every evaluation was degenerate: the last
            self.unwrapped.load_state_dict(self.best.weights)     # model stays
            final = self.best.entry
        return {
            "steps": self.step,
            "resumed_from_step": self.resumed_from_step,
            "epochs": self.step / self.steps_per_epoch,
            "train_runtime_s": time.monotonic() - self.start,
            "evaluation_runtime_s": sum(entry["evaluation_s"] for entry in self.history),
            "stopped_by_time_budget": self.stopped_by_time_budget,
            "train_tokens": int(accelerator.reduce(self.train_tokens, reduction="sum")),
            "stopped_early": self.stopped_early,
            "best_step": final["step"],
            "train_loss": self.train_loss,
            "learning_rate": self.scheduler.get_last_lr()[0],
            "gradient_accumulation_steps": self.accumulation,  # these two as run: an accelerate launch config may
            "mixed_precision": accelerator.mixed_precision,    # set them
            **{key: value for key, value in final.items() if key.startswith("eval_")},
            "eval_history": self.history,
        }


def finish_run(accelerator: Accelerator, checkpoints: Checkpoints, args: TrainingArguments, task_arguments: tuple,
               model: PreTrainedModel, tokenizer, results: dict, fields: dict, *, start: float,
               splits: list[str], word_vectors_coverage, texts: dict[str, str] | None = None) -> dict:
    """The end of every task's run. Adds to ``results`` the task's ``fields`` (in their order), then
    ``word_vectors_coverage``, ``num_processes``, ``device``, ``wall_time_s`` (since ``start``), ``arguments``
    (every field of the ``task_arguments`` dataclasses and of ``args``; ``resume_from_checkpoint``: the folder the
    run resumed from, also when 'latest' named it) and ``provenance`` (the seed, and the ``splits`` the figures come
    from); saves the model, tokenizer, ``results.json`` and the ``texts`` to ``--output_dir`` (`save_model`); prints
    the results but ``eval_history`` and ``arguments``, and their ``warnings`` on stderr (main process).
    Returns ``results``."""
    recorded = {key: value for parsed in (*task_arguments, args) for key, value in dataclasses.asdict(parsed).items()}
    if checkpoints.resume_from is not None:
        recorded["resume_from_checkpoint"] = str(checkpoints.resume_from)
    results.update(fields)
    results.update(word_vectors_coverage=word_vectors_coverage, num_processes=accelerator.num_processes,
                   device=describe_device(accelerator.device), wall_time_s=time.monotonic() - start,
                   arguments=recorded, provenance=provenance([args.seed], splits, accelerator.device))
    save_model(accelerator, model, tokenizer, args.output_dir, results, texts)
    if accelerator.is_main_process:
        print(json.dumps({k: v for k, v in results.items() if k not in ("eval_history", "arguments")}, indent=2))
        for warning in results.get("warnings", []):
            print(warning, file=sys.stderr)
    return results


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
    `atomic_folders.replacing` swaps the complete folder in, with what an earlier run did not write there (kept); a
    failed write (a full disk) keeps the previous one. When ``output_dir`` is the working folder (``.``), a note on
    stderr says that a shell in it still shows the old folder, now deleted."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        target, working = Path(os.path.abspath(output_dir)), Path.cwd()
        with replacing(output_dir, run_output) as temp:
            accelerator.unwrap_model(model).save_pretrained(temp)
            save_tokenizer(tokenizer, temp)
            if results is not None:
                (temp / "results.json").write_text(json.dumps(results, indent=2) + "\n")
            for name, text in (texts or {}).items():
                (temp / name).write_text(text)
        if target in (working, *working.parents):
            print(f"--output_dir={output_dir}: the model is in {target}, which the run replaced whole with a new "
                  f"folder; a shell whose working folder is inside it still shows the old one, now deleted: run "
                  f"`cd {working}` there to see the new files.", file=sys.stderr)
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


def prepare_model(model: PreTrainedModel, args: TrainingArguments, accelerator: Accelerator) -> int:
    """Apply the options that change the model before Accelerate wraps it (``--gradient_checkpointing``,
    ``--freeze_embeddings``) and refuse what it cannot train with (``--mixed_precision``). Returns the epoch from
    which frozen embeddings train (0: none)."""
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
    return frozen_until_epoch


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
    """``--optimizer``'s optimizer of the trainable parameters. AdamW runs torch's fused kernel where every parameter
    allows it (floating point, on a CPU or a GPU): one pass over each tensor instead of a dozen, a quarter of the
    time of the default per-parameter loop on a CPU, with the same update up to float rounding."""
    if args.optimizer == "nt_asgd":
        return NTASGD(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay, nonmono=args.nonmono)
    if args.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)
    fused = all(parameter.is_floating_point() and parameter.device.type in ("cpu", "cuda")
                for parameter in model.parameters())
    return torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay,
                             fused=fused or None)


def make_scheduler(optimizer: torch.optim.Optimizer, args: TrainingArguments, max_steps: int):
    """transformers' `get_scheduler` for ``--lr_scheduler_type`` over ``max_steps`` optimizer steps."""
    options = scheduler_options(args, args.lr_scheduler_kwargs, max_steps)
    return get_scheduler(args.lr_scheduler_type, optimizer, args.num_warmup_steps, max_steps, options)


@torch.no_grad()
def evaluate_loss(accelerator: Accelerator, model: PreTrainedModel, dataset, collate_fn, batch_size: int) -> float:
    """Mean loss per target over ``dataset`` (rows with ``labels``; -100 = not a target).

    A target is a label that is not -100: a token for language models and taggers, a row for sequence
    classification. A causal LM (a model that generates and is not an encoder-decoder) shifts its labels, so
    ``labels[:, 0]`` is never a target. Each process takes a contiguous shard (no row twice, none dropped) and sums
    ``loss * targets`` per batch; the sums are added over processes. The rows are batched by length
    (`sorted_by_length`): the mean does not depend on their order, and random batches of sentences pad about half.
    """
    _require_rows(dataset, "evaluation", EVAL_SIZE_OPTIONS)
    model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    shifted = model.can_generate() and not model.config.is_encoder_decoder
    shard = sorted_by_length(dataset.shard(accelerator.num_processes, accelerator.process_index, contiguous=True))
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


def length_order(dataset: datasets.Dataset) -> list[int]:
    """The indices of ``dataset``'s rows, shortest first: by the length of ``input_ids``, then of ``labels`` when they
    are sequences (stable: rows of equal lengths keep their order; all of them when it has no ``input_ids``)."""
    columns = dataset.with_format("arrow")
    keys = [pyarrow.compute.list_value_length(columns[name]).to_numpy(zero_copy_only=False)
            for name in ("labels", "input_ids")  # np.lexsort sorts by the last key first
            if name in dataset.column_names and pyarrow.types.is_list(dataset.data.schema.field(name).type)]
    return numpy.lexsort(keys).tolist() if keys else list(range(len(dataset)))


def sorted_by_length(dataset: datasets.Dataset) -> datasets.Dataset:
    """``dataset``'s rows in `length_order`, which batch with little padding (for evaluations, whose scores do not
    depend on the order)."""
    return dataset.select(length_order(dataset))


def training_loss(model: torch.nn.Module, batch: dict, label_smoothing: float,
                  unwrapped: PreTrainedModel | None = None) -> torch.Tensor:
    """The loss the loop trains ``batch`` on: ``model(**batch).loss``, label-smoothed (``modeling_utils.lm_loss``)
    when ``label_smoothing`` > 0. A model whose forward takes ``smoothing`` (the attention seq2seq) computes it
    itself, from the logits of the labelled positions only (``logits_to_keep=labels != -100``: no output layer over
    padding, no unsmoothed loss beside it); any other model's logits are smoothed here (shifted for a causal LM).
    ``unwrapped``: ``model`` without Accelerate's wrapper (default: ``model`` itself)."""
    unwrapped = model if unwrapped is None else unwrapped
    if label_smoothing == 0:
        return model(**batch).loss
    if "smoothing" in inspect.signature(unwrapped.forward).parameters:
        return model(**batch, smoothing=label_smoothing, logits_to_keep=batch["labels"] != -100).loss
    shift = unwrapped.can_generate() and not unwrapped.config.is_encoder_decoder
    return lm_loss(model(**batch).logits, batch["labels"], shift, label_smoothing=label_smoothing)


def _require_rows(dataset, name: str, options: str) -> None:
    if len(dataset) == 0:
        raise ValueError(f"The {name} set is empty after preprocessing; check {options}.")
