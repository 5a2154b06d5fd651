"""The translation and lm suites of compare.py in smoke size (two steps, a few rows, one seed): every model trains
and is scored on the test split; translation keeps each run's test translations, which sacreBLEU scores to the
run's own figures, and compares them by paired bootstrap; the language models run the protocol the suite names."""

import json

import pytest
from sacrebleu.metrics import BLEU
from test_run_classification_ner import script  # tests/scripts is on sys.path

from hf_seqmodels.comparison import SUITES
from hf_seqmodels.comparison.significance import paired_bootstrap
from hf_seqmodels.tasks import translation

SMOKE = ["--max_train_steps", "2", "--max_train_samples", "48", "--max_eval_samples", "8", "--jobs", "2", "--seed",
         "1"]


def run_suite(suite: str, tmp_path) -> tuple[dict, str]:
    results_dir = tmp_path / "results"
    script("compare").main([suite, *SMOKE, "--results_dir", str(results_dir), "--output_dir",
                            str(tmp_path / "outputs")])
    saved = json.loads((results_dir / f"{suite}.json").read_text())
    assert [run["name"] for run in saved["runs"]] == list(SUITES[suite].models)
    for run in saved["runs"]:
        assert "error" not in run, run.get("log_tail")
        assert run["steps"] == 2 and run["seed"] == 1 and SUITES[suite].metric in run
    assert (results_dir / f"{suite}.png").read_bytes()[:4] == b"\x89PNG"
    return saved, (results_dir / f"{suite}.md").read_text()


@pytest.mark.slow
def test_translation_suite(tmp_path, data_dir):
    saved, table = run_suite("translation", tmp_path)
    runs = {run["name"]: run for run in saved["runs"]}
    assert runs["Marian"]["model_config"]["model_type"] == "marian"
    assert runs["Luong"]["model_config"]["input_feeding"] and runs["Bahdanau"]["model_config"]["attention_type"] == (
        "bahdanau")
    references = translation.DataArguments(max_eval_samples=8).load()["test"]["de"]  # Multi30k test2016
    systems = {}
    for name, run in runs.items():
        assert run["hypotheses"] == f"hypotheses/translation/{run['name'].lower().replace(' ', '-')}.seed1.txt"
        hypotheses = (tmp_path / "results" / run["hypotheses"]).read_text().splitlines()
        assert len(hypotheses) == len(references) == 8
        assert BLEU().corpus_score(hypotheses, [references]).score == run["test_bleu"]  # the strings scored
        systems[name] = hypotheses
    compared = saved["paired_bootstrap"]["1"]
    assert compared == json.loads(json.dumps(paired_bootstrap(systems, references)))
    assert compared["baseline"] == "Attention GRU"
    assert runs["Transformer"]["bleu_signature"] in table and compared["signatures"]["bleu"] in table
    bleu = compared["systems"]["Marian"]["bleu"]
    marian = next(line for line in table.splitlines() if line.startswith("| Marian |"))
    assert marian.endswith(f"| {bleu['mean']:.2f} ± {bleu['ci']:.2f} (p = {bleu['p_value']:.3f}) |")


@pytest.mark.slow
def test_lm_suite(tmp_path, data_dir):
    saved, table = run_suite("lm", tmp_path)
    for run in saved["runs"]:
        if run["name"] == "Transformer":  # no state to carry: blocks, scored by a sliding window
            assert run["lm_protocol"] == "blocks" and "stride 64, every token scored once" in run["eval_protocol"]
        else:
            assert run["lm_protocol"] == "stateful" and run["arguments"]["block_size"] == 35
        assert run["test_tokens_scored"] > 0
    awd = next(run for run in saved["runs"] if run["name"] == "AWD-LSTM")
    assert awd["model_config"]["weight_drop"] == 0.2 and awd["model_config"]["locked_dropout"]
    assert "one seed (n=1)" in table
