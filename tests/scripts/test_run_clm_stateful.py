"""run_clm.py --lm_protocol stateful with the AWD options and NT-ASGD, and the protocol's refusals."""

import importlib.util
import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from hf_seqmodels.data.loading import load_text_dataset
from tests.scripts.test_scripts_smoke import RUN_CLM, TINY_CLM

AWD_OPTIONS = ["--lm_protocol", "stateful", "--variable_bptt", "--locked_dropout", "--embedding_dropout", "0.2",
               "--weight_drop", "0.3", "--word_type_dropout", "0.1", "--activation_regularization", "2",
               "--temporal_activation_regularization", "1", "--optimizer", "nt_asgd", "--learning_rate", "20",
               "--lr_scheduler_type", "constant", "--num_warmup_steps", "0"]


def run_clm():
    spec = importlib.util.spec_from_file_location("run_clm", RUN_CLM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def test_stateful_awd_run_scores_every_token(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run_clm()(["--output_dir", str(tmp_path / "lm"), *TINY_CLM, *AWD_OPTIONS])
    results = json.loads((tmp_path / "lm" / "results.json").read_text())
    assert results["steps"] == 3 and results["lm_protocol"] == "stateful"
    assert results["eval_protocol"].startswith("stateful, bptt=20, batch 16")
    raw = load_text_dataset("ptb")
    for split, prefix in (("validation", "eval"), ("test", "test")):
        texts = raw[split]["sentence"][:50]  # --max_eval_samples 50
        assert results[f"{prefix}_tokens_scored"] == sum(len(text.split()) + 1 for text in texts)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "lm")
    assert (model.config.weight_drop, model.config.locked_dropout, model.config.activation_regularization) == (
        0.3, True, 2.0)


@pytest.mark.parametrize("options, match", [
    (["--model_type", "transformer"], "--model_type transformer has none"),
    (["--checkpointing_steps", "1"], "--checkpointing_steps"),
])
def test_stateful_refusals(tmp_path, options, match):
    with pytest.raises(ValueError, match=match):
        run_clm()(["--output_dir", str(tmp_path / "lm"), "--lm_protocol", "stateful", *options])


def test_variable_bptt_needs_the_stateful_protocol(tmp_path):
    with pytest.raises(ValueError, match="--variable_bptt needs --lm_protocol stateful"):
        run_clm()(["--output_dir", str(tmp_path / "lm"), "--variable_bptt"])


def test_adaptive_softmax_run_saves_and_reloads_it(data_dir, tmp_path, monkeypatch):
    """The options reach the config, the saved folder reloads with its clusters, and its log-probabilities are a
    distribution over the whole vocabulary (generate() and the printed samples read them)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run_clm()(["--output_dir", str(tmp_path / "lm"), *TINY_CLM, "--lm_protocol", "stateful",
               "--adaptive_softmax_cutoffs", "50", "200", "--no_tie_word_embeddings"])
    results = json.loads((tmp_path / "lm" / "results.json").read_text())
    assert results["test_perplexity"] < results["vocab_size"]
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "lm")
    assert model.config.adaptive_softmax_cutoffs == [50, 200] and not model.config.tie_word_embeddings
    log_probs = model(input_ids=torch.tensor([[1, 2, 3]])).logits
    assert log_probs.shape[-1] == results["vocab_size"]
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(1, 3))


@pytest.mark.slow
def test_adaptive_softmax_with_tied_embeddings_is_refused(tmp_path):
    with pytest.raises(ValueError, match="tie_word_embeddings=False"):
        run_clm()(["--output_dir", str(tmp_path / "lm"), "--adaptive_softmax_cutoffs", "50", "200"])
