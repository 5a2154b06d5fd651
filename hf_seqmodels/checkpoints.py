"""The training state of a run on disk: its ``step_<n>`` checkpoints, and the one it resumes from.

A checkpoint is ``accelerator.save_state`` (weights, optimizer, scheduler, RNG states and whatever was registered
with ``register_for_checkpointing``) in ``<folder>/step_<n>``, plus the run's tokenizer in ``step_<n>/tokenizer/``
(so a resumed run uses exactly the vocabulary its model was trained with). Each is written to a hidden temporary
folder and renamed into place once complete, so a killed run never leaves half a checkpoint behind.

`Checkpoints` finds the latest, saves, keeps at most ``limit`` (all when None), resumes, and loads the tokenizer of
the checkpoint it resumes from. It resolves ``--resume_from_checkpoint`` ('latest' or a folder) once, when it is
made: the tokenizer and the training state then come from the same checkpoint.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import AutoTokenizer

logger = get_logger(__name__)

TOKENIZER_DIR = "tokenizer"  # the run's tokenizer, inside every step_<n> checkpoint
PREFIX = "step_"


def replace_dir(new: Path, target: Path) -> None:
    """Rename the complete folder ``new`` to ``target``. An existing ``target`` is moved aside first and deleted
    last, so ``target`` is never a mix of old and new files."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)


class Checkpoints:
    """The ``step_<n>`` checkpoints in ``folder``; ``resume_from`` ('latest', a checkpoint folder, or None for a
    new run) is resolved at once into `self.resume_from` (a Path or None); ``limit`` keeps only the newest."""

    def __init__(self, folder: str | Path, resume_from: str | None = None, limit: int | None = None):
        self.folder, self.limit = Path(folder), limit
        self.resume_from = self._find(resume_from) if resume_from else None

    @classmethod
    def for_run(cls, args) -> "Checkpoints":
        """The checkpoints of a run with these `training.TrainingArguments`."""
        return cls(args.checkpoint_dir, args.resume_from_checkpoint, args.save_total_limit)

    @staticmethod
    def step(checkpoint: Path) -> int:
        return int(checkpoint.name.removeprefix(PREFIX))

    def all(self) -> list[Path]:
        """The complete checkpoint folders, oldest first."""
        return sorted(self.folder.glob(f"{PREFIX}*"), key=self.step)

    def latest(self) -> Path | None:
        found = self.all()
        return found[-1] if found else None

    def _find(self, name: str) -> Path:
        if name != "latest":
            path = Path(name)
            if not (path.is_dir() and path.name.startswith(PREFIX)):
                raise ValueError(f"--resume_from_checkpoint={path} is not a step_<n> checkpoint folder; pass one "
                                 f"from {self.folder} or 'latest'.")
            return path
        latest = self.latest()
        if latest is None:
            raise ValueError(f"--resume_from_checkpoint=latest, but {self.folder} has no step_<n> checkpoint.")
        return latest

    def save(self, accelerator: Accelerator, step: int, tokenizer=None) -> None:
        """``accelerator.save_state`` into ``step_<step>``, with ``tokenizer`` (anything with ``save_pretrained``,
        if given) in its ``tokenizer/`` sub-folder; then drop the oldest beyond ``limit``."""
        target = self.folder / f"{PREFIX}{step}"
        temp = target.with_name(f".{target.name}.tmp")  # the same name on every process: each writes its RNG state
        if accelerator.is_main_process:
            shutil.rmtree(temp, ignore_errors=True)
        accelerator.wait_for_everyone()
        accelerator.save_state(str(temp))
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            if tokenizer is not None:
                tokenizer.save_pretrained(temp / TOKENIZER_DIR)
            replace_dir(temp, target)
            if self.limit is not None:
                for old in self.all()[: -self.limit]:
                    shutil.rmtree(old)
        accelerator.wait_for_everyone()

    def resume(self, accelerator: Accelerator) -> int:
        """Load the state of `resume_from` into the objects ``accelerator`` prepared and registered; the step to
        go on from (0 for a new run)."""
        if self.resume_from is None:
            return 0
        accelerator.load_state(str(self.resume_from))
        step = self.step(self.resume_from)
        logger.info(f"Resumed from {self.resume_from} at step {step}", main_process_only=True)
        return step

    def delete_all(self, accelerator: Accelerator) -> None:
        """Delete every checkpoint (those of an earlier run, which a new run must not resume later)."""
        if accelerator.is_main_process:
            for stale in self.all():
                logger.info(f"Deleting {stale} of an earlier run (--overwrite_output_dir)")
                shutil.rmtree(stale)
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
        return load_tokenizer(folder)
