"""hf_seqmodels.storage.atomic_folders: folders replaced whole (atomic exchange, or two renames put right by the next start),
failed saves that keep the previous folder, the per-folder lock, the removal of what killed runs left, and checkpoint
rotation that keeps the best one (also through a whole training run)."""

import errno
import os
import subprocess
import sys

import datasets
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import default_data_collator

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.training.loop import TrainingArguments, make_accelerator, train


def write_tree(folder, tree: dict[str, bytes]) -> None:
    for name, data in tree.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def read_tree(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


TREES = st.dictionaries(st.sampled_from(["a.json", "b.txt", "sub/c.bin", "sub/deeper/d"]), st.binary(max_size=20),
                        max_size=4)


@settings(max_examples=30, deadline=None)
@given(old=st.none() | TREES, new=TREES, exchange=st.booleans())
def test_replace_dir_puts_exactly_the_new_folder_in_place(tmp_path_factory, old, new, exchange):
    root = tmp_path_factory.mktemp("replace")
    target, temp = root / "model", atomic_folders.temp_path(root / "model")
    if old is not None:
        target.mkdir()
        write_tree(target, old)
    temp.mkdir()
    write_tree(temp, new)
    original = atomic_folders._exchange
    atomic_folders._exchange = original if exchange else (lambda a, b: False)
    try:
        atomic_folders.replace_dir(temp, target)
    finally:
        atomic_folders._exchange = original
    assert read_tree(target) == new and [p.name for p in root.iterdir()] == ["model"]


def test_the_exchange_is_atomic_on_linux(tmp_path):
    """renameat2(RENAME_EXCHANGE) is there (Linux, glibc >= 2.28) and swaps two folders."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "from_a").write_text("")
    assert atomic_folders._exchange(tmp_path / "a", tmp_path / "b")
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["from_a"] and not any((tmp_path / "a").iterdir())
    with pytest.raises(FileNotFoundError):
        atomic_folders._exchange(tmp_path / "a", tmp_path / "missing")


def test_a_failed_save_keeps_the_previous_folder_and_says_so(tmp_path):
    target = tmp_path / "model"
    with atomic_folders.replacing(target) as temp:
        (temp / "weights").write_text("old")
    for existed, kept in ((True, "the previous .*model is kept unchanged"),
                          (False, ".*new-model was not created \\(what is beside it is untouched\\)")):
        if not existed:
            target = tmp_path / "new-model"
        with pytest.raises(OSError, match=f"Saving .*model failed \\(.*No space left on device\\); {kept} and the "
                                          f"partial copy .* was removed. Free disk space") as error:
            with atomic_folders.replacing(target) as temp:
                (temp / "weights").write_text("half")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        assert error.value.errno == errno.ENOSPC
        assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary folder left
    assert (tmp_path / "model" / "weights").read_text() == "old"
    with pytest.raises(KeyError):  # not a file-system error: passed on as it is, the copy removed all the same
        with atomic_folders.replacing(tmp_path / "model"):
            raise KeyError("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_temporaries_are_removed_only_under_the_lock_and_an_old_folder_is_put_back(tmp_path):
    for name in (".model.tmp-123", ".model.old-123", ".other.tmp-5", ".step_3.tmp"):
        (tmp_path / name).mkdir()
    (tmp_path / ".model.old-123" / "weights").write_text("old")
    target = tmp_path / "model"
    assert atomic_folders.remove_temporaries_of(target) == []  # not locked: another run may be writing them
    atomic_folders.lock_folder(target, "--output_dir")
    assert [p.name for p in atomic_folders.remove_temporaries_of(target)] == [".model.tmp-123"]
    assert (target / "weights").read_text() == "old"  # killed between the two renames: the old folder is back
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", ".other.tmp-5", ".step_3.tmp", "model"]
    assert atomic_folders.remove_temporaries(tmp_path, "step_*") == []  # tmp_path itself is not locked


HOLD_LOCK = """
import sys
from hf_seqmodels.storage.atomic_folders import lock_folder
lock_folder(sys.argv[1], "--output_dir")
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_the_lock_names_the_process_that_holds_it_and_dies_with_it(tmp_path):
    folder = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(BlockingIOError, match=f"--output_dir={folder} is in use by another run \\(process "
                                                  f"{holder.pid} on host .*, started .*; lock file .*out.lock\\)"):
            atomic_folders.lock_folder(tmp_path / "elsewhere" / ".." / "out", "--output_dir")
    finally:
        holder.kill()
        holder.wait()
    atomic_folders.lock_folder(folder, "--output_dir")  # the holder is gone: its lock went with it
    atomic_folders.lock_folder(folder, "--output_dir")  # held already by this process: nothing to do
    assert atomic_folders.holds_lock(tmp_path / "out")


@settings(max_examples=200, deadline=None)
@given(count=st.integers(0, 8), limit=st.integers(1, 5), best=st.none() | st.integers(0, 7))
def test_rotation_keeps_the_newest_and_the_best(tmp_path_factory, count, limit, best):
    root = tmp_path_factory.mktemp("rotate")
    folders = [root / f"step_{i}" for i in range(count)]
    for folder in folders:
        folder.mkdir()
    keep = root / f"step_{best}" if best is not None else None
    deleted = atomic_folders.rotate(folders, limit, keep)
    left = [folder for folder in folders if folder.exists()]
    assert left == [folder for folder in folders if folder not in deleted]
    assert len(left) == (count if count <= limit else 2 if limit == 1 and keep in folders[:-1] else limit)
    assert folders[-1:] == left[-1:] and (keep not in folders or keep in left)
    others = [folder for folder in left if folder != keep]  # oldest first out: every deleted one is older
    assert all(folders.index(gone) < folders.index(other) for gone in deleted for other in others)


def test_a_run_with_save_total_limit_keeps_its_best_checkpoint(tmp_path, monkeypatch):
    """Scores 1, 3, 2, 2.5 over four epochs (a checkpoint each), --save_total_limit 2: the best epoch's (step 10)
    and the newest (step 20) remain."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    scores = iter([1.0, 3.0, 2.0, 2.5])
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_train_epochs=4,
                             checkpointing_steps="epoch", save_total_limit=2, metric_for_best_model="eval_score")
    ids = torch.randint(0, 12, (20, 6), generator=torch.Generator().manual_seed(0)).tolist()
    data = datasets.Dataset.from_dict({"input_ids": ids, "labels": ids})
    torch.manual_seed(0)
    model = RecurrentForCausalLM(RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=8))
    results = train(make_accelerator(args), model, data, data, default_data_collator, args,
                    evaluate_fn=lambda model: {"eval_score": next(scores)})
    assert results["best_step"] == 10
    assert sorted(p.name for p in (tmp_path / "out-checkpoints").iterdir()) == ["step_10", "step_20"]
