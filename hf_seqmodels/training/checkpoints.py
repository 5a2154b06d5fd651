"""The training state of a run on disk: its ``step_<n>`` checkpoints, and the one it resumes from.

A checkpoint is a `checkpoint_format.TrainingState` (weights, optimizer, scheduler, the run's extra objects and each
process's RNG states, as safetensors and JSON: nothing in it is ever unpickled) in ``<folder>/step_<n>``, plus the
run's tokenizer in ``step_<n>/tokenizer/`` (so a resumed run uses exactly the vocabulary its model was trained
with) and the model's ``config.json`` (and ``generation_config.json``), so that `averaging` can make a model folder
of checkpoints. Each is written to a hidden temporary folder and renamed into place once complete, so a killed run never
leaves half a checkpoint behind.

Each checkpoint holds an `atomic_folders.MANIFEST`: rotation and ``--overwrite_output_dir`` delete only folders that
have one (or an older version's optimizer state), never a ``step_<n>`` folder of the user's, which a checkpoint never
replaces.

`Checkpoints` finds the latest, saves, keeps at most ``limit`` (all when None), resumes, and loads the tokenizer of
the checkpoint it resumes from. It resolves ``--resume_from_checkpoint`` ('latest' or a folder) once, when it is
made, and refuses then a checkpoint holding a pickle (an older version's, written by ``accelerator.save_state``)
unless ``--trust_pickled_checkpoint``: the tokenizer and the training state then come from the same checkpoint.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import AutoTokenizer

from ..data.tokenization import load_tokenizer as load_saved_tokenizer
from ..data.tokenization import save_tokenizer
from ..storage.atomic_folders import (
    MANIFEST,
    check_digests,
    delete_dir,
    ours,
    remove_temporaries,
    replace_dir,
    rotate,
    saving,
    write_manifest,
)
from ..storage.earlier_runs import read_json, starts_with
from .checkpoint_format import TrainingState, pickle_files

logger = get_logger(__name__)

TOKENIZER_DIR = "tokenizer"  # the run's tokenizer, inside every step_<n> checkpoint
PREFIX = "step_"
ZIP_SIGNATURE = b"PK\x03\x04"  # torch.save's format


def earlier_checkpoint(folder: Path) -> set[str]:
    """The entries of ``folder`` if it is a checkpoint written before checkpoints held an `atomic_folders.MANIFEST`,
    known by its optimizer's state: ours (``optimizer.json``, a JSON object with ``param_groups``) or
    accelerator.save_state's (``optimizer.bin``, a torch archive); else none."""
    state = read_json(folder / "optimizer.json")
    if (isinstance(state, dict) and "param_groups" in state) or starts_with(folder / "optimizer.bin", ZIP_SIGNATURE):
        return {path.name for path in folder.iterdir()}
    return set()


def save_config(model, folder: Path) -> None:
    """The config (naming the model's class, as ``save_pretrained`` does) and generation config of ``model`` (a
    `transformers.PreTrainedModel`; other modules have none) in ``folder``."""
    if not hasattr(model, "config"):
        return
    model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(folder)
    if model.can_generate():
        model.generation_config.save_pretrained(folder)


class Checkpoints:
    """The ``step_<n>`` checkpoints in ``folder``; ``resume_from`` ('latest', a checkpoint folder, or None for a
    new run) is resolved at once into `self.resume_from` (a Path or None); ``limit`` keeps only the newest.
    ``trust_pickled`` lets `resume` unpickle an older version's checkpoint through Accelerate;
    ``ignore_missing_rng_state`` lets it resume without the saved random states (see `TrainingState.load`)."""

    def __init__(self, folder: str | Path, resume_from: str | None = None, limit: int | None = None,
                 trust_pickled: bool = False, ignore_missing_rng_state: bool = False):
        self.folder, self.limit = Path(folder), limit
        self.trust_pickled, self.ignore_missing_rng_state = trust_pickled, ignore_missing_rng_state
        remove_temporaries(self.folder, f"{PREFIX}*")  # the half-written checkpoints of a killed run
        self.resume_from = self._find(resume_from) if resume_from else None

    @classmethod
    def for_run(cls, args) -> "Checkpoints":
        """The checkpoints of a run with these `training_args.TrainingArguments`."""
        return cls(args.checkpoint_dir, args.resume_from_checkpoint, args.save_total_limit,
                   args.trust_pickled_checkpoint, args.ignore_missing_rng_state)

    @staticmethod
    def step(checkpoint: Path) -> int:
        return int(checkpoint.name.removeprefix(PREFIX))

    def all(self) -> list[Path]:
        """The complete checkpoint folders, oldest first (``step_<digits>`` folders: not a ``step_old`` of yours)."""
        found = [path for path in self.folder.glob(f"{PREFIX}*") if path.name[len(PREFIX):].isdigit() and path.is_dir()]
        return sorted(found, key=self.step)

    def written(self) -> list[Path]:
        """The checkpoints of `all` that a run wrote (they hold an `atomic_folders.MANIFEST`, or an older version's
        optimizer state): the only ones rotation and --overwrite_output_dir delete."""
        return [path for path in self.all() if ours(path, earlier_checkpoint)]

    def foreign(self) -> list[Path]:
        """The checkpoint-named folders of `all` that no run wrote (e.g. a ``step_1/`` of the user's)."""
        return [path for path in self.all() if not ours(path, earlier_checkpoint)]

    def latest(self) -> Path | None:
        found = self.all()
        return found[-1] if found else None

    def _find(self, name: str) -> Path:
        if name != "latest":
            path = Path(name)
            if not (path.is_dir() and path.name.startswith(PREFIX)):
                raise ValueError(f"--resume_from_checkpoint={path} is not a step_<n> checkpoint folder; pass one "
                                 f"from {self.folder} or 'latest'.")
        else:
            path = self.latest()
            if path is None:
                raise ValueError(f"--resume_from_checkpoint=latest, but {self.folder} has no step_<n> checkpoint.")
        if pickled := pickle_files(path):
            if not self.trust_pickled:
                raise ValueError(
                    f"--resume_from_checkpoint: {pickled[0]} is a pickle (the format of checkpoints written by "
                    f"accelerator.save_state), and unpickling a file can run any code its author put in it, so "
                    f"{path} is not loaded. Resume from a checkpoint written by this version (safetensors and JSON "
                    f"only), start a new run without --resume_from_checkpoint, or, only if you trust whoever wrote "
                    f"it, pass --trust_pickled_checkpoint."
                )
            logger.warning(f"--trust_pickled_checkpoint: {path} holds pickles ({', '.join(p.name for p in pickled)}) "
                           f"that will be unpickled through Accelerate", main_process_only=True)
        return path

    def save(self, accelerator: Accelerator, step: int, state: TrainingState, tokenizer=None) -> None:
        """Save ``state`` into ``step_<step>`` (each process its RNG states), with ``tokenizer`` (anything with
        ``save_pretrained``, if given) in its ``tokenizer/`` sub-folder; then drop the oldest beyond ``limit``,
        never the checkpoint of the best evaluation (of ``state.extras["best_model"]``, a `training.BestModel`). A
        failed save (a full disk) keeps the previous checkpoints."""
        target = self.folder / f"{PREFIX}{step}"
        if target.is_dir() and not ours(target, earlier_checkpoint):
            raise ValueError(f"{target} is a folder that no run wrote (no {MANIFEST}), so the checkpoint of step "
                             f"{step} does not replace it: move it, or pass another --checkpoint_dir.")
        temp = target.with_name(f".{target.name}.tmp")  # the same name on every process: each writes its RNG state
        if accelerator.is_main_process:
            shutil.rmtree(temp, ignore_errors=True)
            temp.mkdir(parents=True)
        accelerator.wait_for_everyone()
        with saving(temp, target):
            state.save(temp, accelerator.process_index, accelerator.is_main_process)
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            with saving(temp, target):
                save_config(state.model, temp)
                if tokenizer is not None:
                    save_tokenizer(tokenizer, temp / TOKENIZER_DIR)
                write_manifest(temp)
                replace_dir(temp, target)
            if self.limit is not None:
                best = state.extras.get("best_model")
                best_step = None if best is None or best.entry is None else best.entry["step"]
                best_folder = None if best_step is None else self.folder / f"{PREFIX}{best_step}"
                rotate(self.written(), self.limit, keep=best_folder)
        accelerator.wait_for_everyone()

    def resume(self, accelerator: Accelerator, state: TrainingState) -> int:
        """Load the state of `resume_from` into ``state`` (``accelerator`` prepared its model and optimizer); the
        step to go on from (0 for a new run). A pickled checkpoint, let through by ``trust_pickled``, is loaded by
        ``accelerator.load_state``."""
        if self.resume_from is None:
            return 0
        check_digests(self.resume_from)
        if self.trust_pickled and pickle_files(self.resume_from):
            accelerator.register_for_checkpointing(state.scheduler, *state.extras.values())
            accelerator.load_state(str(self.resume_from))
        else:
            state.load(self.resume_from, accelerator.process_index, self.ignore_missing_rng_state)
        step = self.step(self.resume_from)
        logger.info(f"Resumed from {self.resume_from} at step {step}", main_process_only=True)
        return step

    def delete_all(self, accelerator: Accelerator) -> None:
        """Delete every checkpoint a run wrote (those of an earlier run, which a new run must not resume later)."""
        if accelerator.is_main_process:
            for stale in self.written():
                logger.info(f"Deleting {stale} of an earlier run (--overwrite_output_dir)")
                delete_dir(stale)
        accelerator.wait_for_everyone()

    def tokenizer(self, make_tokenizer: Callable[[], object],
                  load_tokenizer: Callable[[Path], object] = AutoTokenizer.from_pretrained):
        """The tokenizer of the run: ``make_tokenizer()`` (e.g. trained on the data) for a new run; when resuming,
        the one saved in `resume_from` (``load_tokenizer(<checkpoint>/tokenizer)``), never a retrained one, so the
        resumed model sees the ids it was trained with."""
        if self.resume_from is None:
            return make_tokenizer()
        folder = self.resume_from / TOKENIZER_DIR
        if not folder.is_dir():
            raise ValueError(
                f"--resume_from_checkpoint: {self.resume_from} has no {TOKENIZER_DIR}/ folder, so the tokenizer its "
                f"model was trained with is unknown (checkpoints written before they held their tokenizer lack it). "
                f"Resume from a checkpoint that has one, put that run's tokenizer there (tokenizer.save_pretrained("
                f"'{folder}')), or start a new run without --resume_from_checkpoint."
            )
        logger.info(f"Loading the tokenizer of {self.resume_from} from {folder} (not training one)",
                    main_process_only=True)
        return load_saved_tokenizer(folder, "--resume_from_checkpoint", load_tokenizer)
