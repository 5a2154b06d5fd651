"""`hf_seqmodels.provenance`: what every results entry records of its run, checked against git, the interpreter and
the environment themselves."""

import os
import subprocess
import sys

import pytest
import torch
import transformers

from hf_seqmodels import provenance as module
from hf_seqmodels.data.paths import REPO_ROOT
from hf_seqmodels.provenance import (
    BACKFILLED,
    ENVIRONMENT,
    KEYS,
    RECORDED,
    git_state,
    missing_provenance,
    provenance,
)


def git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_keys_and_what_the_run_s_process_is(monkeypatch):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("SOME_UNRELATED_VARIABLE", "x")
    monkeypatch.chdir(REPO_ROOT / "tests")
    record = provenance([1, 2], ["validation", "test"], note="shared machine")
    assert list(record) == ["recorded", *KEYS] and record["recorded"] == RECORDED
    assert record["argv"] == sys.orig_argv and record["cwd"] == "tests"
    assert (record["python"], record["torch"], record["transformers"]) == (
        ".".join(map(str, sys.version_info[:3])), torch.__version__, transformers.__version__)
    assert record["threads"] == torch.get_num_threads()
    assert record["device"].startswith("cpu: ") and record["device"].endswith(f"({torch.get_num_threads()} threads)")
    assert record["machine"]["cpu_count"] == os.cpu_count() and record["machine"]["note"] == "shared machine"
    assert record["environment"] == {"OMP_NUM_THREADS": "3"}
    assert record["seeds"] == [1, 2] and record["split"] == ["validation", "test"]


def test_commit_and_clean_tree_come_from_git(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("a = 1\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.json").write_text("{}\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "first")
    assert git_state(tmp_path) == (git(tmp_path, "rev-parse", "HEAD"), [])
    (tmp_path / "results" / "run.json").write_text('{"new": 1}\n')  # what a run writes leaves the tree clean
    assert git_state(tmp_path)[1] == []
    (tmp_path / "code.py").write_text("a = 2\n")
    (tmp_path / "new.py").write_text("b = 1\n")
    assert git_state(tmp_path)[1] == ["code.py", "new.py"]

    outside = tmp_path / "not-a-checkout"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git must not find the checkout above
    assert git_state(outside) == (None, None)

    # provenance states the checkout as the process imported it, whatever happens to it later
    monkeypatch.setattr(module, "LOADED", (git(tmp_path, "rev-parse", "HEAD"), ["code.py"]))
    git(tmp_path, "commit", "-qam", "second")
    record = provenance([0], [])
    assert (record["commit"], record["tree_clean"], record["changed_files"]) == (module.LOADED[0], False, ["code.py"])


def test_the_repository_s_own_commit():
    assert provenance([0], [])["commit"] == git(REPO_ROOT, "rev-parse", "HEAD")  # no commit since the import


def test_missing_provenance_fills_only_what_is_known():
    record = missing_provenance(BACKFILLED, "the entry's seed; commit from git log", commit="abc", seeds=[42])
    assert list(record) == ["recorded", *KEYS, "evidence"] and record["recorded"] == BACKFILLED
    assert record["commit"] == "abc" and record["seeds"] == [42]
    assert record["evidence"] == "the entry's seed; commit from git log"
    assert all(record[key] is None for key in KEYS if key not in ("commit", "seeds"))
    assert missing_provenance()["recorded"] == "unknown"
    with pytest.raises(ValueError, match=r"\['gpu'\] are not provenance keys"):
        missing_provenance(gpu="H100")
