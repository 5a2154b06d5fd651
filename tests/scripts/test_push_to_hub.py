"""push_to_hub.py: --dry-run stages a complete, validated Hub folder that loads back with trust_remote_code in a
clean subprocess (hf_seqmodels not importable); the real upload goes through huggingface_hub's own HTTP code
(create_repo, preupload, git-LFS batch + PUT, commit) against a local stand-in for the Hub API, and the stand-in
ends up with exactly the staged files."""

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from hub_standin import HubStandIn  # tests/scripts is on sys.path (pytest rootdir-relative import)
from huggingface_hub import ModelCard
from test_run_classification_ner import TINY, script

from hf_seqmodels.cards import load_check
from hf_seqmodels.cards.staging import STAGING_MARKER
from hf_seqmodels.data.paths import REPO_ROOT
from hf_seqmodels.storage.atomic_folders import MANIFEST


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny SST-2 BiLSTM folder as run_classification.py writes it."""
    output = tmp_path_factory.mktemp("push") / "sst2-bilstm"
    script("run_classification").main(
        ["--bidirectional", "--tokenizer_type", "word", "--max_train_samples", "32", "--max_eval_samples", "16",
         "--output_dir", str(output), *TINY])
    return output


def digests(folder) -> dict[str, str]:
    """The files to upload (staging's marker and manifest are not), by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name not in (STAGING_MARKER, MANIFEST)}


@pytest.fixture(scope="module")
def staged(trained, tmp_path_factory):
    """push_to_hub.py --dry-run's folder and what it printed (it loads the folder back in a clean subprocess)."""
    staging = tmp_path_factory.mktemp("dry-run") / "hub"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert script("push_to_hub").main([str(trained), "--repo_id", "me/sst2-bilstm", "--dry-run",
                                           "--staging_dir", str(staging)]) == staging
    return staging, stdout.getvalue()


@pytest.mark.slow
def test_dry_run_stages_a_folder_that_loads_without_our_package(trained, staged):
    staging, printed = staged
    names = set(digests(staging))
    config = json.loads((staging / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSequenceClassification"] == \
        "modeling_recurrent.RecurrentForSequenceClassification"
    assert {"model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "README.md",
            "results.json", "modeling_recurrent.py", "configuration_recurrent.py"} <= names
    assert not any(name.endswith((".bin", ".pt")) for name in names)
    results = json.loads((trained / "results.json").read_text())
    card = ModelCard.load(staging / "README.md")
    assert {(r.dataset_split, r.metric_type): r.metric_value for r in card.data.eval_results} == {
        (split, name): results[f"{prefix}_{name}"] for prefix, split in (("eval", "validation"), ("test", "test"))
        for name in ("accuracy", "f1")}
    # Loaded in a fresh interpreter where `import hf_seqmodels` fails: the classes come from the folder's code.
    assert "Loads back: transformers_modules." in printed
    assert "RecurrentForSequenceClassification (2, 2)" in printed and "nothing uploaded" in printed


@pytest.mark.slow
def test_load_check_really_blocks_our_package(staged, tmp_path):
    """Without the remote code (config.json's auto_map removed) the folder must not load: proof that the check does
    not quietly fall back on the installed hf_seqmodels."""
    staging = shutil.copytree(staged[0], tmp_path / "hub")
    config = json.loads((staging / "config.json").read_text())
    del config["auto_map"]
    (staging / "config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match="does not load"):
        load_check(staging, "AutoModelForSequenceClassification")


@pytest.mark.slow
def test_upload_to_a_local_hub_stand_in(trained, tmp_path):
    staging = tmp_path / "hub"
    with HubStandIn() as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_XET": "1", "HF_HUB_OFFLINE": "0",
               "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf_home")}
        result = subprocess.run(
            [sys.executable, str(REPO_ROOT / "scripts" / "push_to_hub.py"), str(trained), "--repo_id",
             "me/sst2-bilstm", "--staging_dir", str(staging), "--commit_message", "first upload"],
            env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"{hub.endpoint}/me/sst2-bilstm/commit/" in result.stdout
        uploaded = hub.repos["me/sst2-bilstm"]
        assert {name: hashlib.sha256(data).hexdigest() for name, data in uploaded.items()} == digests(staging)
        oid = hashlib.sha256((staging / "model.safetensors").read_bytes()).hexdigest()
        calls = [call for call in hub.requests if call[0] in ("POST", "PUT")]
        endpoints = [call for i, call in enumerate(calls) if i == 0 or call != calls[i - 1]]  # repeats collapsed
        assert endpoints == [
            ("POST", "/api/repos/create"),
            ("POST", "/api/validate-yaml"),  # the card's metadata, checked before anything is sent
            ("POST", "/api/models/me/sst2-bilstm/preupload/main"),
            ("POST", "/me/sst2-bilstm.git/info/lfs/objects/batch"),
            ("PUT", f"/lfs/{oid}"),  # the weights go through git-LFS, the text files inline in the commit
            ("POST", "/api/models/me/sst2-bilstm/commit/main"),
        ]
        assert "Bearer hf_test_token" in hub.tokens

        # A second upload into the existing repository (create_repo answers 409, exist_ok) works too.
        again = subprocess.run(
            [sys.executable, str(REPO_ROOT / "scripts" / "push_to_hub.py"), str(trained), "--repo_id",
             "me/sst2-bilstm", "--staging_dir", str(staging)], env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        assert hub.repos["me/sst2-bilstm"] == uploaded


def test_bad_model_folders_are_refused_before_staging(tmp_path):
    push = script("push_to_hub")
    model_dir, staging = tmp_path / "model", tmp_path / "hub"
    with pytest.raises(ValueError, match=f"no such folder \\({model_dir}\\); pass the output_dir of a training"):
        push.main([str(model_dir), "--repo_id", "me/model", "--dry-run", "--staging_dir", str(staging)])
    model_dir.mkdir()
    with pytest.raises(ValueError, match="has no config.json: pass the output_dir of a training script"):
        push.main([str(model_dir), "--repo_id", "me/model", "--dry-run", "--staging_dir", str(staging)])
    (model_dir / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="results.json is missing: the model card is rendered from the results.json "
                                         "that the training script writes .* --results.* --model <run name>"):
        push.main([str(model_dir), "--repo_id", "me/model", "--dry-run", "--staging_dir", str(staging)])
    with pytest.raises(ValueError, match="--results /nowhere.json: no such file"):
        push.main([str(model_dir), "--repo_id", "me/model", "--results", "/nowhere.json", "--staging_dir",
                   str(staging)])
    assert not staging.exists()


@pytest.mark.slow
def test_dry_run_never_deletes_a_folder_of_the_users(trained, tmp_path):
    """--staging_dir naming a folder of the user's that holds a README.md and a config.json (what staging writes)
    is refused, and nothing in it changes; a bad --repo_id is refused before anything is staged."""
    push = script("push_to_hub")
    mine = tmp_path / "my-model"
    mine.mkdir()
    (mine / "README.md").write_text("my card")
    (mine / "config.json").write_text("{}")
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(ValueError, match="my-model exists and is not a folder staged earlier"):
        push.main([str(trained), "--repo_id", "me/sst2-bilstm", "--dry-run", "--staging_dir", str(mine)])
    assert {p.name: p.read_text() for p in mine.iterdir()} == {"README.md": "my card", "config.json": "{}",
                                                               "notes.txt": "my notes"}
    with pytest.raises(ValueError, match="--repo_id 'sst2-bilstm' is not of the form 'user/name'"):
        push.main([str(trained), "--repo_id", "sst2-bilstm", "--dry-run", "--staging_dir", str(tmp_path / "hub")])
    assert not (tmp_path / "hub").exists()
