"""Bad files and folders (area "files"): output and checkpoint folders that are files, links, unwritable, not empty
or someone else's; staging over a user's folder; bad Hub repository ids; a full disk while saving; what killed runs
left behind. Each is refused with a message naming the option or folder to change, or handled correctly, and
nothing of the user's is deleted."""

import errno
import os
import re
import shutil
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from hf_seqmodels.cards import prepare_hub_folder, render_card, stage_hub_folder
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.training.checkpoints import Checkpoints
from hf_seqmodels.training.loop import TrainingArguments, start_run

from ..cards.runs import NER_RUN
from ..cards.test_hub import bert_folder  # a token-classification model folder as run_ner.py writes it
from .outcomes import assert_outcome
from .saved_models import accelerator, loaded_version, save_version, training_state

AREA = "files"


def start(output_dir, **options):
    return start_run(TrainingArguments(output_dir=str(output_dir), **options))


def test_output_and_checkpoint_folders_that_cannot_be_used(tmp_path):
    (tmp_path / "file").write_text("a user's file")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "folder-link").symlink_to(tmp_path)
    cases = [
        (tmp_path / "file", {}, "--output_dir=.*file is an existing file; pass the path of a new or empty folder"),
        (tmp_path / "file" / "out", {}, "--output_dir=.*file/out lies inside a file, not a folder"),
        (tmp_path / "link", {}, "--output_dir=.*link is a symbolic link; .* pass the folder it points to"),
        (tmp_path / "folder-link", {}, "--output_dir=.*folder-link is a symbolic link"),
        (tmp_path / "out", {"checkpoint_dir": str(tmp_path / "file")},
         "--checkpoint_dir=.*file is an existing file"),
        (tmp_path / "out", {"checkpoint_dir": str(tmp_path / "file" / "checkpoints")},
         "--checkpoint_dir=.*file/checkpoints lies inside a file"),
        ("/proc/hf_seqmodels/out", {}, "--output_dir=/proc/hf_seqmodels/out: cannot write in /proc/hf_seqmodels "
                                       r"\(No such file or directory\).* Pass a folder where you can write"),
        ("/sys/out", {"checkpoint_dir": str(tmp_path / "c")}, r"--output_dir=/sys/out: cannot write in /sys \("),
        (tmp_path / "out2", {"checkpoint_dir": "/sys/out2-checkpoints"}, "--checkpoint_dir=/sys/out2-checkpoints: "
                                                                         "cannot write in /sys"),
        (tmp_path / "out", {"checkpoint_dir": str(tmp_path / "out")}, "--checkpoint_dir=.*out lies inside "
                                                                      "--output_dir=.*out, which the end of the run "
                                                                      "replaces whole"),
        (tmp_path / "out", {"checkpoint_dir": f"{tmp_path}/sub/../out/checkpoints"}, "--checkpoint_dir=.* lies inside "
                                                                                     "--output_dir"),
        (tmp_path / ("x" * 250), {"checkpoint_dir": str(tmp_path / "c")},
         r"--output_dir=.*x{250}: cannot write in .* \(File name too long\)"),  # .<name>.lock: over 255 bytes
        ("/", {}, "--output_dir=/ is not empty; pass --overwrite_output_dir"),
        ("/", {"overwrite_output_dir": True}, "--output_dir=/ is not empty and holds no earlier run"),
    ]
    for output_dir, options, message in cases:
        assert_outcome(AREA, lambda: start(output_dir, **options), error=message)
    assert (tmp_path / "file").read_text() == "a user's file"


def test_folders_of_the_user_are_never_replaced(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("a user's notes")
    assert_outcome(AREA, lambda: start(folder), error="--output_dir=.*folder is not empty; pass "
                                                       "--overwrite_output_dir to replace the earlier run there")
    assert_outcome(AREA, lambda: start(folder, overwrite_output_dir=True),
                   error="holds no earlier run .*so even --overwrite_output_dir replaces nothing there: "
                         "notes.txt are not a run's. Pass the path of a new or empty folder")
    checkpoints = tmp_path / "folder-checkpoints"
    Checkpoints(checkpoints).save(accelerator(tmp_path), 3, training_state())
    assert_outcome(AREA, lambda: start(tmp_path / "new", checkpoint_dir=str(checkpoints)),
                   error="--checkpoint_dir .*folder-checkpoints holds the step_<n> checkpoints of an earlier run; "
                         "resume it with --resume_from_checkpoint latest")
    (checkpoints / "step_1").mkdir()  # the user's, named like a checkpoint
    for options in ({}, {"overwrite_output_dir": True}, {"resume_from_checkpoint": "latest"}):
        assert_outcome(AREA, lambda: start(tmp_path / "new", checkpoint_dir=str(checkpoints), **options),
                       error="--checkpoint_dir .*folder-checkpoints holds step_1, named like the run's step_<n> "
                             "checkpoints but not written by one .* Move or rename them, or pass another "
                             "--checkpoint_dir")
    assert_outcome(AREA, lambda: (folder / "notes.txt").read_text(), check=lambda text: text == "a user's notes")
    save_version(accelerator(tmp_path), tmp_path / "earlier", "old")
    assert_outcome(AREA, lambda: start(tmp_path / "earlier", overwrite_output_dir=True) and
                   loaded_version(tmp_path / "earlier"), check=lambda version: version == "old")  # kept until saved
    assert_outcome(AREA, lambda: save_version(accelerator(tmp_path), folder / "notes.txt", "new"),
                   error="notes.txt is not a folder .*so it is not replaced")


def test_what_killed_runs_left_is_removed_when_the_next_run_starts(tmp_path):
    """A model folder, a half-written one (``.out.tmp-<pid>``), an old one moved aside between the two renames
    with the folder missing (``.out.old-<pid>``: put back), half-written checkpoints: the next run starts clean."""
    out, checkpoints = tmp_path / "out", tmp_path / "out-checkpoints"
    save_version(accelerator(tmp_path), tmp_path / ".out.old-99", "old")
    (tmp_path / ".out.tmp-12").mkdir()
    (tmp_path / ".out.tmp-12" / "config.json").write_text("{")
    Checkpoints(checkpoints).save(accelerator(tmp_path), 2, training_state())
    for name in (".step_4.tmp", ".step_2.old-7"):
        (checkpoints / name).mkdir(parents=True)
    (checkpoints / "notes.txt").write_text("mine")

    def start_resumed():
        start(out, overwrite_output_dir=True, resume_from_checkpoint="latest")
        return sorted(p.name for p in tmp_path.iterdir()), sorted(p.name for p in checkpoints.iterdir())

    assert_outcome(AREA, start_resumed, check=lambda found: found == (
        [".out-checkpoints.lock", ".out.lock", "out", "out-checkpoints"], ["notes.txt", "step_2"]))
    assert_outcome(AREA, lambda: loaded_version(out), check=lambda version: version == "old")


def fail_writes(monkeypatch, part: str) -> None:
    """A full disk for every file whose path contains ``part``: each module's reference to safetensors' and torch's
    writers (whatever name it imported them under) raises ENOSPC for such a file."""
    import safetensors.torch
    import torch
    writers = {safetensors.torch.save_file, safetensors.torch.save_model, torch.save}

    def full(writer):
        def write(obj, path, *args, **kwargs):
            if part in str(path):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return writer(obj, path, *args, **kwargs)
        return write

    for module in list(sys.modules.values()):
        for name, value in list(vars(module).items()) if module is not None else []:
            if callable(value) and any(value is writer for writer in writers):
                monkeypatch.setattr(module, name, full(value))


def test_a_full_disk_keeps_the_previous_model_and_checkpoint(tmp_path, monkeypatch):
    run_accelerator = accelerator(tmp_path)
    model = tmp_path / "model"
    save_version(run_accelerator, model, "old")
    checkpoints, state = Checkpoints(tmp_path / "checkpoints"), training_state()
    checkpoints.save(run_accelerator, 1, state)
    fail_writes(monkeypatch, "safetensors")
    assert_outcome(AREA, lambda: save_version(run_accelerator, model, "new"),
                   error=r"Saving .*model failed \(.*No space left on device.*\); the previous .*model is kept "
                         r"unchanged and the partial copy .*\.model\.tmp-\d+ was removed. Free disk space")
    assert_outcome(AREA, lambda: save_version(run_accelerator, tmp_path / "other", "new"),
                   error=r"Saving .*other failed \(.*No space left.*\); .*other was not created")
    assert_outcome(AREA, lambda: loaded_version(model), check=lambda version: version == "old")
    monkeypatch.undo()
    fail_writes(monkeypatch, "optimizer")
    assert_outcome(AREA, lambda: checkpoints.save(run_accelerator, 2, state),
                   error=r"Saving .*checkpoints/step_2 failed \(.*No space left on device.*optimizer.*\); "
                         r".*step_2 was not created \(what is beside it is untouched\)")
    assert_outcome(AREA, lambda: sorted(p.name for p in (tmp_path / "checkpoints").iterdir()),
                   check=lambda names: names == ["step_1"])
    assert_outcome(AREA, lambda: sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")),
                   check=lambda names: names == [])


NAMES = st.text(st.sampled_from("ab-_ .[]*?é"), min_size=1, max_size=8).filter(lambda name: name.strip(" .") == name)


@settings(max_examples=12, deadline=None)
@given(name=NAMES)
def test_any_folder_name_is_saved_replaced_and_cleaned(tmp_path_factory, name):
    """Folder names with spaces, glob characters ([]*?) and non-ASCII: replaced whole, and the next start removes
    only that folder's temporaries (not those of 'a*' when the folder is 'a')."""
    root = tmp_path_factory.mktemp("names")
    target = root / name
    run_accelerator = accelerator(root)
    save_version(run_accelerator, target, "old")
    (root / f".{name}.tmp-1").mkdir()
    (root / f".{name}x.tmp-1").mkdir()  # another folder's, which may be written right now

    def replace_and_clean():
        save_version(run_accelerator, target, "new")
        atomic_folders.lock_folder(target, "--output_dir")
        atomic_folders.remove_temporaries_of(target)
        return loaded_version(target), sorted(p.name for p in root.iterdir())

    assert_outcome(AREA, replace_and_clean,
                   check=lambda found: found == ("new", sorted([name, f".{name}.lock", f".{name}x.tmp-1"])))


def test_staging_never_deletes_what_it_did_not_stage(tmp_path):
    model_dir = bert_folder(tmp_path)
    theirs = tmp_path / "their-model"  # holds what a staged folder holds, but was not staged
    theirs.mkdir()
    (theirs / "README.md").write_text("my card")
    (theirs / "config.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    card = render_card(NER_RUN)
    cases = [
        (theirs, "their-model exists and is not a folder staged earlier .*nothing there is deleted"),
        (tmp_path / "notes.txt", "notes.txt exists and is not a folder"),
        (model_dir, "overlap"),
        (tmp_path, "overlap"),
        (model_dir / "hub", "overlap"),
    ]
    for target, message in cases:
        assert_outcome(AREA, lambda: stage_hub_folder(model_dir, target, card), error=message)
    (model_dir / "pytorch_model.bin").write_bytes(b"\0")
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "hub", card),
                   error=r"holds pickle weights \['pytorch_model.bin'\]")
    (model_dir / "pytorch_model.bin").unlink()
    assert_outcome(AREA, lambda: stage_hub_folder(tmp_path / "nowhere", tmp_path / "hub", card),
                   error="nowhere: no such folder .*pass the output_dir of a training script")
    assert_outcome(AREA, lambda: {p.name: p.read_text() for p in theirs.iterdir()},
                   check=lambda found: found == {"README.md": "my card", "config.json": "{}"})
    (tmp_path / ".hub.tmp-12").mkdir()  # left by a killed staging
    assert_outcome(AREA, lambda: (stage_hub_folder(model_dir, tmp_path / "hub", card),
                                  sorted(p.name for p in tmp_path.glob(".hub*"))),
                   check=lambda result: "README.md" in result[0] and result[1] == [".hub.lock"])


BAD_REPO_IDS = ["", "sst2", "me/", "/sst2", "me/models/sst2", "me sst2", "me/sst2 bilstm", "me/sst2--x", "me/..x",
                "me/.x", "me/x.", "me/x.git", "me/" + "x" * 100, "me/ssté", "me\\sst2", "https://hf.co/me/x"]


def test_bad_repo_ids_are_refused_before_anything_is_staged(tmp_path):
    model_dir = bert_folder(tmp_path)
    for repo_id in BAD_REPO_IDS:
        assert_outcome(AREA, lambda: prepare_hub_folder(model_dir, repo_id, benchmarks=""),
                       error=re.escape(f"--repo_id {repo_id!r} is not ") + "(of the form 'user/name'|a valid Hub "
                                                                           "repository id)")
    assert_outcome(AREA, lambda: sorted(p.name for p in tmp_path.iterdir()), check=lambda names: names == ["ner"])
    assert_outcome(AREA, lambda: prepare_hub_folder(model_dir, "me/ner.v2_x-y", benchmarks="").files,
                   check=lambda names: "README.md" in names)


def test_a_full_disk_while_staging_keeps_the_earlier_staging(tmp_path, monkeypatch):
    model_dir, card = bert_folder(tmp_path), render_card(NER_RUN)
    staged = stage_hub_folder(model_dir, tmp_path / "hub", card)

    def full_disk(source, target, **options):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(shutil, "copy2", full_disk)
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "hub", card),
                   error=r"Saving .*hub failed \(.*No space left on device.*\); the previous .*hub is kept unchanged")
    assert_outcome(AREA, lambda: (sorted(p.name for p in (tmp_path / "hub").iterdir() if p.name[0] != "."),
                                  sorted(p.name for p in tmp_path.glob(".hub.tmp*"))),
                   check=lambda found: found == (staged, []))
