"""prepare_hub_folder: from a trained model folder and its results to a staged, checked folder with the run's card.
(load_check and upload run in tests/scripts/test_push_to_hub.py, through the script.)"""

import json
import re

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors.torch import save_file

from hf_seqmodels.cards import prepare_hub_folder
from hf_seqmodels.cards.hub import check_repo_id
from hf_seqmodels.storage.atomic_folders import add_to_manifest, write_manifest

from .runs import NER_RUN


def bert_folder(tmp_path):
    """A fine-tuned BERT's output_dir, as run_ner.py writes it (weights and tokenizer stubbed, with its manifest),
    plus a file of the user's not to upload."""
    model_dir = tmp_path / "ner"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"model_type": "bert", "transformers_version": "5.0.0"}))
    save_file({"weight": torch.zeros(2)}, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    (model_dir / "tokenizer.json").write_text(json.dumps({"model": {}, "added_tokens": []}))
    (model_dir / "results.json").write_text(json.dumps(NER_RUN))
    write_manifest(model_dir)
    (model_dir / "train_log.txt").write_text("step 1")
    return model_dir


def test_prepare_stages_the_model_with_its_runs_card(tmp_path):
    folder = prepare_hub_folder(bert_folder(tmp_path), "me/ner-bert", benchmarks="")
    assert folder.path == tmp_path / "ner-hub"
    assert folder.files == ["README.md", "config.json", "model.safetensors", "results.json", "tokenizer.json"]
    assert folder.run == NER_RUN and folder.auto_class == "AutoModelForTokenClassification"
    card = ModelCard.load(folder.path / "README.md")
    assert card.data.model_name == "ner-bert"  # the repository's name
    assert {r.metric_type: r.metric_value for r in card.data.eval_results}["seqeval"] == NER_RUN["eval_seqeval_f1"]


def test_prepare_takes_a_named_run_of_a_suite_file(tmp_path):
    model_dir = bert_folder(tmp_path)
    suite = tmp_path / "ner.json"
    suite.write_text(json.dumps({"suite": "ner", "runs": [{**NER_RUN, "name": "BiLSTM"}, NER_RUN]}))
    folder = prepare_hub_folder(model_dir, "me/ner-bert", results=suite, model="BERT (MiniLM-L6)", license="mit",
                                staging_dir=tmp_path / "staged")
    assert folder.path == tmp_path / "staged" and folder.run == NER_RUN
    card = ModelCard.load(folder.path / "README.md")
    assert (card.data.model_name, card.data.license) == ("BERT (MiniLM-L6)", "mit")


@pytest.mark.parametrize("repo_id, message", [
    ("sst2-bilstm", "is not of the form 'user/name'"),
    ("me/models/sst2", "is not of the form 'user/name'"),
    ("/sst2", "is not of the form 'user/name'"),
    ("me/", "is not of the form 'user/name'"),
    ("me/sst2 bilstm", "is not a valid Hub repository id: Repo id must use alphanumeric chars"),
    ("me/sst2--bilstm", "is not a valid Hub repository id: Cannot have -- or .."),
    ("me/sst2.git", "is not a valid Hub repository id: Repo_id cannot end by '.git'"),
    ("me/" + "x" * 100, "is not a valid Hub repository id"),
])
def test_bad_repo_ids_are_refused_before_staging(tmp_path, repo_id, message):
    with pytest.raises(ValueError, match=f"--repo_id '.*' {re.escape(message)}"):
        prepare_hub_folder(bert_folder(tmp_path), repo_id, benchmarks="")
    assert not (tmp_path / "ner-hub").exists()
    check_repo_id("me/sst2-bilstm.v2")


def test_the_model_s_decoding_loop_is_staged_with_it(tmp_path):
    """save_pretrained writes custom_generate/ (models/decoding.py) beside the weights; the Hub repo needs it whole."""
    model_dir = bert_folder(tmp_path)
    (model_dir / "custom_generate").mkdir()
    for name in ("generate.py", "decoding.py"):
        (model_dir / "custom_generate" / name).write_text(f"# {name}\n")
    (model_dir / "custom_generate" / "__pycache__").mkdir()
    add_to_manifest(model_dir, "custom_generate")
    folder = prepare_hub_folder(model_dir, "me/ner-bert", benchmarks="")
    assert "custom_generate/generate.py" in folder.files and "custom_generate/decoding.py" in folder.files
    assert not any("__pycache__" in name for name in folder.files)
    assert (folder.path / "custom_generate" / "generate.py").read_text() == "# generate.py\n"
