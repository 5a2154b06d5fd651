"""Staging: the Hub folder holds what a repo needs and nothing else, check_hub_folder catches what it lacks, and
staging never deletes a folder it did not stage."""

import json

import pytest

from hf_seqmodels.cards import check_hub_folder, render_card, stage_hub_folder

from .runs import RUN, write_card


def test_check_hub_folder_catches_wrong_numbers_and_missing_files(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    (tmp_path / "tokenizer.json").write_text("{}")
    write_card(tmp_path, RUN)
    check_hub_folder(tmp_path, RUN)  # complete and consistent
    with pytest.raises(ValueError, match="differ from the results file"):
        check_hub_folder(tmp_path, {**RUN, "eval_accuracy": 0.9})
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


def test_staging_never_deletes_what_it_did_not_stage(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model.safetensors").write_bytes(b"\0")
    card = render_card(RUN)
    for target in (model_dir, tmp_path):  # the model folder itself, or a folder holding it
        with pytest.raises(ValueError, match="overlap"):
            stage_hub_folder(model_dir, target, card)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not a folder staged earlier"):
        stage_hub_folder(model_dir, notes, card)
    assert (notes / "thesis.txt").read_text() == "mine" and (model_dir / "model.safetensors").is_file()
    staged = tmp_path / "staged"
    stage_hub_folder(model_dir, staged, card)
    (staged / "stale.bin").write_bytes(b"\0")
    assert "stale.bin" not in stage_hub_folder(model_dir, staged, card)  # an earlier staging is replaced whole
