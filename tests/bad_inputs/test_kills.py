"""Kills at every step of a save (a model, a checkpoint, a Hub staging): whatever moment a run dies, the folder it
was replacing is afterwards the complete old or the complete new version, never a mix and never nothing (area
"kills").

A forked child makes the save while an audit hook (``sys.addaudithook``) counts the file-system operations on the
test's folder (opening, creating, renaming, deleting, and the ``renameat2`` call through ctypes); at operation
``k`` it dies with ``os._exit``, before that operation happens. The test first counts the operations of a whole
save, then kills one child at each of them and loads what is left. The weights themselves are written by Rust
(safetensors, tokenizers), unseen by the hook; the operations around them bracket them.
"""

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hf_seqmodels.cards import render_card, stage_hub_folder
from hf_seqmodels.cards.staging import STAGING_MARKER
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.training.checkpoints import Checkpoints

from ..cards.runs import NER_RUN
from ..cards.test_hub import bert_folder
from .outcomes import assert_outcome
from .saved_models import accelerator, loaded_version, save_version, training_state


def write_user_files(folder: Path) -> None:
    for name, text in USER_FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "link-to-notes").symlink_to("notes.txt")


def user_files(folder: Path) -> dict[str, str | None]:
    """The user's files in ``folder`` as they read now (None where one is missing), and where the link points."""
    found = {name: (folder / name).read_text() if (folder / name).is_file() else None for name in USER_FILES}
    link = folder / "link-to-notes"
    return {**found, "link-to-notes": os.readlink(link) if link.is_symlink() else None}


def intact(found: dict) -> bool:
    return found == {**USER_FILES, "link-to-notes": "notes.txt"}

OPERATIONS = {"open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "shutil.rmtree",
              "shutil.copyfile", "shutil.copymode", "os.chmod", "os.symlink", "os.link", "shutil.copytree",
              "ctypes.call_function"}
# Files and folders of the user's beside a run's files (a folder named like a checkpoint too): path -> content.
USER_FILES = {"notes.txt": "my notes", "data/important.csv": "a,b\n1,2\n", "step_1/mine.txt": "mine",
              "data/deep/er.txt": "deeper"}
KILLED = 77  # the exit status of a child killed by the hook


@pytest.fixture(autouse=True)
def no_tokenizer_threads(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # the children are forked


def _mentions(value, root: str) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_mentions(item, root) for item in value)
    if isinstance(value, bytes):
        return root.encode() in value
    return isinstance(value, (str, os.PathLike)) and root in os.fspath(value)


def run_killed(root: Path, kill_at: int, save: Callable[[], None]) -> tuple[int, int]:
    """Run ``save`` in a forked child that dies before its ``kill_at``-th file-system operation on ``root`` (never,
    for 0). Returns the child's exit status and the number of operations it made."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            seen = 0

            def hook(event, args):
                nonlocal seen
                if event in OPERATIONS and _mentions(args, str(root)):
                    seen += 1
                    os.write(write_end, b".")
                    if seen == kill_at:
                        os._exit(KILLED)

            sys.addaudithook(hook)
            save()
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        seen = len(reader.read())
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen


def remove_hidden_folders(folder: Path) -> None:
    """Reset ``folder`` between kills: remove the temporary folders of the last one."""
    for path in folder.glob(".*"):
        if path.is_dir():
            shutil.rmtree(path)


def kill_at_every_step(root: Path, prepare: Callable[[], None], save: Callable[[], None],
                       judge: Callable[[int], object], check: Callable[[object], bool]) -> None:
    """For every operation of ``save`` (counted in a whole run after ``prepare``): ``prepare``, run ``save`` killed
    there, and count the case ``judge(k)`` / ``check`` under "kills"."""
    prepare()
    save()
    judge(0)  # the first save and load in a process do one-time work (caches): the children must not differ in it
    prepare()
    status, total = run_killed(root, 0, save)
    assert status == 0 and total > 5, (status, total)
    for kill_at in range(1, total + 1):
        prepare()
        assert run_killed(root, kill_at, save)[0] == KILLED, (kill_at, total)
        assert_outcome("kills", lambda: judge(kill_at), check=check)


@pytest.mark.parametrize("exchange", ["renameat2", "two renames"])
@pytest.mark.parametrize("earlier", ["old", None])
@pytest.mark.slow
def test_a_model_folder_is_old_or_new_whatever_the_kill(tmp_path, monkeypatch, exchange, earlier):
    """save_model over an earlier model (or none) killed at every step: the folder loads as the old or the new
    model (or is absent when there was none). Without renameat2, a kill between the two renames leaves no folder
    until the next run starts; that start (lock + `remove_temporaries_of`) puts the old one back."""
    root, target = tmp_path / "runs", tmp_path / "runs" / "model"
    run_accelerator = accelerator(root)
    if exchange == "two renames":
        monkeypatch.setattr(atomic_folders, "_exchange", lambda a, b: False)

    def prepare():
        remove_hidden_folders(root)
        if earlier:
            save_version(run_accelerator, target, earlier)
        else:
            shutil.rmtree(target, ignore_errors=True)

    def judge(kill_at):
        if exchange == "two renames":  # the next run's start
            atomic_folders.lock_folder(target, "--output_dir")
            atomic_folders.remove_temporaries_of(target)
        return loaded_version(target)

    kill_at_every_step(root, prepare, lambda: save_version(run_accelerator, target, "new"), judge,
                       check=lambda version: version in (earlier, "new"))


def test_a_checkpoint_is_complete_or_absent_whatever_the_kill(tmp_path):
    """Checkpoints.save of step 2 next to step 1, killed at every step: step_1 stays whole, step_2 is whole or
    absent, and the next run's Checkpoints (under the lock) removes what the kill left."""
    folder = tmp_path / "checkpoints"
    run_accelerator = accelerator(tmp_path)
    checkpoints, state = Checkpoints(folder), training_state()
    checkpoints.save(run_accelerator, 1, state)
    files_of = lambda checkpoint: sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*"))  # noqa: E731
    complete = files_of(folder / "step_1")
    atomic_folders.lock_folder(folder, "--checkpoint_dir")

    def prepare():
        remove_hidden_folders(folder)
        shutil.rmtree(folder / "step_2", ignore_errors=True)

    def judge(kill_at):
        found = Checkpoints(folder).all()  # removes the temporaries: this process holds the lock
        leftovers = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
        return [p.name for p in found], [files_of(p) == complete for p in found], leftovers

    kill_at_every_step(folder, prepare, lambda: checkpoints.save(run_accelerator, 2, state), judge,
                       check=lambda result: result[0] in (["step_1"], ["step_1", "step_2"]) and all(result[1])
                       and result[2] == [])


def test_a_staged_hub_folder_is_old_or_new_whatever_the_kill(tmp_path):
    """stage_hub_folder over an earlier staging killed at every step: the staging folder holds every file of the
    old or of the new staging, and the next staging removes what the kill left."""
    card, staging = render_card(NER_RUN), tmp_path / "hub"
    models = {}
    for version in ("old", "new"):
        (tmp_path / version).mkdir()
        models[version] = bert_folder(tmp_path / version)
        (models[version] / "model.safetensors").write_text(version)
        atomic_folders.add_to_manifest(models[version], "model.safetensors")  # its digest, as the run records it
    complete = stage_hub_folder(models["old"], staging, card)

    def judge(kill_at):
        staged = sorted(str(p.relative_to(staging)) for p in staging.rglob("*")
                        if p.name not in (STAGING_MARKER, atomic_folders.MANIFEST))
        atomic_folders.remove_temporaries_of(staging)  # what the next staging does first (this process holds the lock)
        leftovers = [p.name for p in tmp_path.glob(".hub.*") if p.name != ".hub.lock"]
        return staged == complete and not leftovers and (staging / "model.safetensors").read_text()

    kill_at_every_step(tmp_path, lambda: stage_hub_folder(models["old"], staging, card),
                       lambda: stage_hub_folder(models["new"], staging, card), judge,
                       check=lambda version: version in ("old", "new"))


@pytest.mark.parametrize("earlier", ["with a manifest", "of an older version (no manifest)"])
@pytest.mark.slow
def test_the_users_files_beside_a_model_survive_every_kill(tmp_path, earlier):
    """save_model over an earlier model whose folder also holds files of the user's (a file, nested folders, a
    folder named like a checkpoint, a link), killed at every step: the folder is the old or the new model, with
    every file of the user's unchanged (carried into the new folder before the swap)."""
    root, target = tmp_path / "runs", tmp_path / "runs" / "model"
    run_accelerator = accelerator(root)

    def prepare():
        remove_hidden_folders(root)
        save_version(run_accelerator, target, "old")
        if earlier != "with a manifest":
            (target / atomic_folders.MANIFEST).unlink()
        if not (target / "notes.txt").exists():  # the first time
            write_user_files(target)

    def judge(kill_at):
        return loaded_version(target), user_files(target)

    kill_at_every_step(root, prepare, lambda: save_version(run_accelerator, target, "new"), judge,
                       check=lambda found: found[0] in ("old", "new") and intact(found[1]))
    assert intact(user_files(target)) and atomic_folders.foreign(target) == sorted(["data", "link-to-notes",
                                                                                    "notes.txt", "step_1"])


def test_the_users_files_beside_checkpoints_survive_every_kill_and_rotation(tmp_path):
    """Checkpoints.save of step 3 with --save_total_limit 1 next to step 2 and the user's files (a ``step_1/`` of
    theirs among them), killed at every step: the user's files stay, and rotation deletes only step 2."""
    folder = tmp_path / "checkpoints"
    run_accelerator = accelerator(tmp_path)
    state = training_state()
    folder.mkdir()
    write_user_files(folder)
    atomic_folders.lock_folder(folder, "--checkpoint_dir")

    def prepare():
        remove_hidden_folders(folder)
        shutil.rmtree(folder / "step_3", ignore_errors=True)
        if not (folder / "step_2").exists():
            Checkpoints(folder).save(run_accelerator, 2, state)

    def judge(kill_at):
        checkpoints = Checkpoints(folder)  # removes the temporaries: this process holds the lock
        return [p.name for p in checkpoints.written()], user_files(folder)

    kill_at_every_step(folder, prepare, lambda: Checkpoints(folder, limit=1).save(run_accelerator, 3, state), judge,
                       check=lambda found: found[0] in (["step_2"], ["step_2", "step_3"], ["step_3"])
                       and intact(found[1]))
    assert [p.name for p in Checkpoints(folder).foreign()] == ["step_1"]
