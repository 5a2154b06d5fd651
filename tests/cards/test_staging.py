"""Staging: the Hub folder holds what a repo needs and nothing else, check_hub_folder catches what it lacks, and
staging never deletes a folder it did not stage."""

import json

import pytest
import torch
from safetensors.torch import save_file

from hf_seqmodels.cards import check_hub_folder, render_card, stage_hub_folder
from hf_seqmodels.cards.staging import STAGING_MARKER

from .runs import RUN, write_card


def test_check_hub_folder_catches_wrong_numbers_and_missing_files(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    (tmp_path / "tokenizer.json").write_text("{}")
    run = {**RUN, "test_accuracy": 0.8412}
    write_card(tmp_path, run)
    check_hub_folder(tmp_path, run)  # complete and consistent
    for wrong in ({"eval_accuracy": 0.9}, {"test_accuracy": 0.9}, {"test_f1": 0.9}):
        with pytest.raises(ValueError, match="differ from the results file"):
            check_hub_folder(tmp_path, {**run, **wrong})
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "recurrent", "source_vocab_size": 300,
                                                      "auto_map": {"AutoConfig": "configuration_recurrent.X"}}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0")
    with pytest.raises(ValueError) as error:
        check_hub_folder(tmp_path, RUN)
    assert "configuration_recurrent.py, which is missing" in str(error.value)
    assert "pickle weights present" in str(error.value)
    assert "(source_vocab_size 300) but source_tokenizer/tokenizer.json is missing" in str(error.value)
    (tmp_path / "README.md").write_text("---\nmodel-index:\n- name: x\n  results: [{task: 3}]\n---\ntext\n")
    with pytest.raises(ValueError, match="does not validate"):
        check_hub_folder(tmp_path)


def saved_model(folder):
    """A folder as ``save_pretrained`` leaves it, without a manifest: config.json and model.safetensors."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "recurrent", "transformers_version": "5.0.0"}))
    save_file({"weight": torch.zeros(2)}, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_staging_never_deletes_what_it_did_not_stage(tmp_path):
    model_dir = tmp_path / "model"
    saved_model(model_dir)
    card = render_card(RUN)
    for target in (model_dir, tmp_path):  # the model folder itself, or a folder holding it
        with pytest.raises(ValueError, match="overlap"):
            stage_hub_folder(model_dir, target, card)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.txt").write_text("mine")
    other_model = tmp_path / "other-model"  # looks like a staged folder (a card and a config), but is the user's
    other_model.mkdir()
    (other_model / "README.md").write_text("my notes")
    (other_model / "config.json").write_text("{}")
    for folder in (notes, other_model):
        with pytest.raises(ValueError, match=f"is not a folder staged earlier \\(it has no {STAGING_MARKER} file"):
            stage_hub_folder(model_dir, folder, card)
    assert (notes / "thesis.txt").read_text() == "mine" and (other_model / "README.md").read_text() == "my notes"
    assert (model_dir / "model.safetensors").is_file()
    (tmp_path / "a-file").write_text("mine")
    with pytest.raises(ValueError, match="a-file exists and is not a folder"):
        stage_hub_folder(model_dir, tmp_path / "a-file", card)
    staged = tmp_path / "staged"
    staged.mkdir()  # empty: staged into
    assert stage_hub_folder(model_dir, staged, card) == ["README.md", "config.json", "model.safetensors"]
    (staged / "stale.bin").write_bytes(b"\0")  # not the staging's: it would be uploaded, and is never deleted
    with pytest.raises(ValueError, match="staged holds stale.bin, which no staging wrote: .* Move them out"):
        stage_hub_folder(model_dir, staged, card)
    (staged / "stale.bin").unlink()
    (staged / "config.json").write_text("{}")  # the staging's own files are replaced
    assert stage_hub_folder(model_dir, staged, card) == ["README.md", "config.json", "model.safetensors"]
    assert (staged / "config.json").read_text() == (model_dir / "config.json").read_text()
    assert (staged / STAGING_MARKER).is_file() and not list(tmp_path.glob(".staged.tmp*"))  # no temporary left
