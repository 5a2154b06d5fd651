"""Folders a careless or hostile user hands to a run (area "files"): a Python project or a home folder as
``--output_dir``, ``--output_dir .``, secrets and links beside a model that is staged for the Hub, weights whose bytes
changed after the run saved them, and a disk that fills while a model is saved. A run replaces only what it can
prove it wrote; staging copies only the model; damaged weights are refused by name."""

import json
import os
import stat
import struct
import subprocess
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.cards import render_card, stage_hub_folder
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.storage.safe_loading import load_pretrained
from hf_seqmodels.training.checkpoints import Checkpoints
from hf_seqmodels.training.loop import save_model

from ..cards.runs import NER_RUN
from .outcomes import assert_outcome
from .saved_models import accelerator, loaded_version, save_version, training_state
from .test_checkpoints import run_clm  # noqa: F401  (run_clm: the fixture running scripts/run_clm.py)

AREA = "files"
# A Python project of the user's: its own config.json and files named like those a run writes.
PROJECT = {"config.json": '{"name": "my-tool", "debug": true}\n', "__init__.py": "from .decoding import run\n",
           "decoding.py": "def run():\n    return 42\n", "cache.py": "CACHE = {}\n", "vocab.txt": "hello\nworld\n",
           "model.safetensors.index.json": '{"weight_map": {"w": "elsewhere.safetensors"}}\n'}


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> bytes), links as where they point."""
    return {str(path.relative_to(folder)): os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() or path.is_symlink()}


def write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def flip_a_weight_byte(path: Path) -> None:
    """Change one byte inside the tensor data of the safetensors file ``path``, its header intact."""
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    data[8 + length + 5] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_python_project_as_output_dir_is_refused_and_untouched(run_clm, tmp_path):
    project = tmp_path / "project"
    write(project, PROJECT)
    before = contents(project)
    assert_outcome(AREA, lambda: run_clm(project, "--overwrite_output_dir"),
                   error=r"--output_dir=.*project is not empty and holds no earlier run .*: __init__.py, cache.py, "
                         r"config.json, decoding.py, model.safetensors.index.json, vocab.txt are not a run's. Pass "
                         r"the path of a new or empty folder")
    assert_outcome(AREA, lambda: contents(project), check=lambda after: after == before)


@pytest.mark.slow
def test_a_folder_from_before_manifests_loses_only_what_its_content_shows_a_run_wrote(run_clm, tmp_path):
    """An older version's run (no manifest), with the user's files beside it: those not a run's by content (a
    vocab.txt that is no tokenizer's, a notes.py no auto_map names) are kept; one of a name the new run may write is
    refused, naming it, before any training."""
    out = tmp_path / "older-version"
    run_clm(out)
    (out / atomic_folders.MANIFEST).unlink()
    write(out, {"vocab.txt": "mine\n", "notes.py": "SECRET = 1\n"})
    assert_outcome(AREA, lambda: run_clm(out, "--overwrite_output_dir"),
                   error=r"older-version holds vocab.txt, which the earlier run there did not write and this run "
                         r"would .*move them out of")
    (out / "vocab.txt").rename(tmp_path / "vocab.txt")
    assert_outcome(AREA, lambda: run_clm(out, "--overwrite_output_dir", "--seed", "7")["arguments"]["seed"],
                   check=lambda seed: seed == 7)
    assert_outcome(AREA, lambda: ((out / "notes.py").read_text(), atomic_folders.foreign(out)),
                   check=lambda found: found == ("SECRET = 1\n", ["notes.py"]))
    (out / atomic_folders.MANIFEST).unlink()
    (out / "modeling_recurrent.py").write_text("# mine now\n")  # no longer the code auto_map names with its siblings
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "auto_map": {}}))
    assert_outcome(AREA, lambda: run_clm(out, "--overwrite_output_dir"),
                   error=r"holds .*modeling_recurrent.py.*, which the earlier run there did not write and this run "
                         r"would .*move them out of")
    assert_outcome(AREA, lambda: (out / "modeling_recurrent.py").read_text(), check=lambda text: text == "# mine now\n")


@pytest.mark.slow
def test_a_home_folder_is_refused_and_a_swap_keeps_the_folders_mode(run_clm, tmp_path):
    home = tmp_path / "home"
    write(home / ".ssh", {"id_ed25519": "PRIVATE KEY"})
    write(home, {"config.json": '{"theme": "dark"}', ".bashrc": "export PATH\n"})
    home.chmod(0o700)
    before = contents(home)
    assert_outcome(AREA, lambda: run_clm(home, "--overwrite_output_dir"),
                   error=r"--output_dir=.*home is not empty and holds no earlier run .*: .bashrc, .ssh, config.json "
                         r"are not a run's")
    assert_outcome(AREA, lambda: (contents(home), stat.S_IMODE(home.stat().st_mode)),
                   check=lambda found: found == (before, 0o700))
    out = tmp_path / "private-run"
    run_clm(out)
    out.chmod(0o700)
    assert_outcome(AREA, lambda: (run_clm(out, "--overwrite_output_dir")["steps"], stat.S_IMODE(out.stat().st_mode)),
                   check=lambda found: found == (4, 0o700))


@pytest.mark.slow
def test_output_dir_dot_and_other_relative_paths(run_clm, tmp_path, monkeypatch):
    here = tmp_path / "work" / "run"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert_outcome(AREA, lambda: run_clm(Path("."))["steps"], check=lambda steps: steps == 4)
    assert_outcome(AREA, lambda: (Path.cwd() == here, (here / "results.json").is_file(),
                                  (tmp_path / "work" / "run-checkpoints").is_dir()),
                   check=lambda found: found == (True, True, True))
    assert_outcome(AREA, lambda: run_clm(Path("."), "--overwrite_output_dir", "--seed", "3")["arguments"]["seed"],
                   check=lambda seed: seed == 3)
    assert_outcome(AREA, lambda: (Path.cwd() == here, os.path.samefile(".", here),
                                  AutoModelForCausalLM.from_pretrained(".").config.model_type),
                   check=lambda found: found == (True, True, "recurrent"))
    monkeypatch.chdir(tmp_path / "work")
    assert_outcome(AREA, lambda: run_clm(Path("run/../sibling"))["steps"], check=lambda steps: steps == 4)
    assert_outcome(AREA, lambda: sorted(path.name for path in (tmp_path / "work").iterdir() if path.is_dir()),
                   check=lambda names: names == ["run", "run-checkpoints", "sibling", "sibling-checkpoints"])


def test_staging_copies_the_model_never_a_secret_or_a_link(tmp_path):
    model_dir = tmp_path / "model"
    save_version(accelerator(tmp_path), model_dir, "old")
    secret = tmp_path / "outside" / "keys.txt"
    write(secret.parent, {"keys.txt": "TOKEN=s3cr3t-9f2"})
    (model_dir / "notes.py").symlink_to(secret)
    (model_dir / "my_keys.py").write_text("API_KEY = 's3cr3t-9f2'\n")
    card = render_card(NER_RUN)
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "hub", card),
                   check=lambda staged: "notes.py" not in staged and "my_keys.py" not in staged
                   and "model.safetensors" in staged and "config.json" in staged)
    assert_outcome(AREA, lambda: [data for data in contents(tmp_path / "hub").values() if b"s3cr3t-9f2" in data],
                   check=lambda leaked: leaked == [])
    tokenizer = model_dir / "tokenizer.json"
    tokenizer.rename(tmp_path / "tokenizer.json")
    tokenizer.symlink_to(tmp_path / "tokenizer.json")  # a file of the model's, replaced by a link
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "hub2", card),
                   error=r"model/tokenizer.json is a symbolic link \(to .*tokenizer.json\): staging copies only the "
                         r"files of the model itself")
    assert_outcome(AREA, lambda: (tmp_path / "hub2").exists(), check=lambda exists: not exists)


def test_damaged_weights_are_refused_by_name(tmp_path):
    model_dir = tmp_path / "model"
    save_version(accelerator(tmp_path), model_dir, "old")
    flip_a_weight_byte(model_dir / "model.safetensors")
    damaged = r"model/model.safetensors does not hold the bytes the run saved \(its sha256 differs"
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, model_dir), error=damaged)
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, tmp_path / "hub", render_card(NER_RUN)), error=damaged)
    checkpoints = Checkpoints(tmp_path / "checkpoints")
    checkpoints.save(accelerator(tmp_path), 1, training_state())
    flip_a_weight_byte(tmp_path / "checkpoints" / "step_1" / "optimizer.safetensors")
    resumed = Checkpoints(tmp_path / "checkpoints", resume_from="latest")
    assert_outcome(AREA, lambda: resumed.resume(accelerator(tmp_path), training_state()),
                   error=r"step_1/optimizer.safetensors does not hold the bytes the run saved")


def test_weights_saved_again_by_a_run_load(tmp_path):
    """The digest follows the weights a run saves: a second save into the folder loads (the check can pass)."""
    model_dir = tmp_path / "model"
    save_version(accelerator(tmp_path), model_dir, "old")
    save_version(accelerator(tmp_path), model_dir, "new")
    assert_outcome(AREA, lambda: (loaded_version(model_dir), load_pretrained(AutoModelForCausalLM, model_dir).config
                                  .model_type), check=lambda found: found == ("new", "recurrent"))


@pytest.fixture
def small_disk(tmp_path):
    """A 768 KiB file system (tmpfs), where the machine lets this process mount one."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=768k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs is not allowed here (not root)")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_names_the_folder_and_keeps_the_earlier_model(small_disk, tmp_path):
    """A real full disk (no mock): the tiny model fits, and a second copy of its code, but not the weights of a
    larger one (about 1.6 MB), which safetensors reports in its own words; the run names the folder and what is
    kept."""
    model = small_disk / "model"
    save_version(accelerator(tmp_path), model, "old")
    larger = RecurrentForCausalLM(RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=200, cell_type="lstm"))
    assert_outcome(AREA, lambda: save_model(accelerator(tmp_path), larger, train_tokenizer(["a b c"], "word"),
                                            str(model), {"version": "larger"}),
                   error=r"Saving .*disk/model failed \(\[Errno 28\] No space left on device\); the previous .*model "
                         r"is kept unchanged and the partial copy .* was removed. Free disk space")
    assert_outcome(AREA, lambda: (loaded_version(model), sorted(p.name for p in small_disk.iterdir())),
                   check=lambda found: found == ("old", ["model"]))
