"""Results lookup: the run a card states, its task's scores, and benchmark figures found by family and measure
(never by matching label text)."""

import json

import pytest

from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.cards import (
    benchmark_family, benchmark_figure, find_results_file, format_metric, load_benchmarks, load_run, run_scores,
)
from hf_seqmodels.cards.results import DEFAULT_BENCHMARKS, IDENTITY, timed_is

from .runs import BENCHMARKS, NER_RUN, RUN

GRU_SEQ2SEQ = AttentionSeq2SeqConfig(vocab_size=100, cell_type="gru").to_dict()
LSTM_LM = RecurrentConfig(vocab_size=100, cell_type="lstm").to_dict()


def test_format_metric():
    assert format_metric(0.8337155963302753, True) == "83.37"
    assert format_metric(33.530390792, False) == "33.53"


def test_load_run_from_a_suite_file(tmp_path):
    path = tmp_path / "sentiment.json"
    path.write_text(json.dumps({"suite": "sentiment", "runs": [RUN, {**RUN, "name": "GRU"}]}))
    assert load_run(path, "BiLSTM") == RUN
    with pytest.raises(ValueError, match="pick one with --model"):
        load_run(path, "LSTM")
    single = tmp_path / "results.json"
    single.write_text(json.dumps(RUN))
    assert load_run(single) == RUN


def test_find_results_file(tmp_path):
    with pytest.raises(ValueError, match="results.json is missing: the model card is rendered from the results.json"):
        find_results_file(tmp_path)
    (tmp_path / "results.json").write_text("{}")
    assert find_results_file(tmp_path) == tmp_path / "results.json"
    assert find_results_file(tmp_path, tmp_path / "results.json") == tmp_path / "results.json"
    with pytest.raises(ValueError, match="--results /nowhere.json: no such file"):
        find_results_file(tmp_path, "/nowhere.json")


def test_load_benchmarks(tmp_path):
    assert DEFAULT_BENCHMARKS.is_file() and load_benchmarks() == BENCHMARKS  # the checkout's, by default
    assert load_benchmarks("") is None
    (tmp_path / "benchmarks.json").write_text(json.dumps({"entries": {}}))
    assert load_benchmarks(tmp_path / "benchmarks.json") == {"entries": {}}
    with pytest.raises(ValueError, match="--benchmarks /nowhere.json: no such file"):
        load_benchmarks("/nowhere.json")


def test_run_scores_follow_the_task():
    assert [(metric.key, value) for metric, value in run_scores(NER_RUN)] == [
        ("eval_accuracy", 0.9612), ("eval_f1", 0.90125), ("eval_seqeval_f1", 0.8765432)]
    assert [metric.hub_id for metric, _ in run_scores({k: v for k, v in RUN.items() if k != "eval_f1"})] == [
        "accuracy"]


@pytest.mark.parametrize("config, family", [
    (GRU_SEQ2SEQ, "attention_seq2seq"),
    (TransformerConfig(vocab_size=100).to_dict(), "transformer_seq2seq"),
    (TransformerConfig(vocab_size=100, is_encoder_decoder=False).to_dict(), "transformer_lm"),
    (LSTM_LM, "recurrent_lm"),
    ({"model_type": "bert"}, None),
])
def test_benchmark_family(config, family):
    assert benchmark_family(config) == family


def test_benchmark_figures_are_found_by_family_measure_and_config():
    incremental = BENCHMARKS["entries"]["incremental"]
    sizes = incremental["sizes"]
    timed = RecurrentConfig(vocab_size=sizes["vocab_size"], cell_type=sizes["cell_type"],
                            hidden_size=sizes["hidden_size"], num_layers=sizes["num_layers"]).to_dict()
    figure = benchmark_figure(BENCHMARKS, "recurrent_lm", "cached_token_growth", timed)
    assert figure == ("recurrent LM (lstm)",
                      incremental["summary"]["recurrent LM (lstm)"]["per_token_growth_1024_vs_16"]["cached"]["ratio"],
                      "incremental")
    assert benchmark_figure(BENCHMARKS, "recurrent_lm", "cache_speedup", {**timed, "cell_type": "gru"}) is None
    with pytest.raises(KeyError):
        benchmark_figure(BENCHMARKS, "recurrent_lm", "beam_speedup", timed)  # not a measure of the family


def test_benchmark_figures_need_the_same_model():
    """Every identity field must be recorded in the entry and equal: one missing or different is another model."""
    identity = {field: GRU_SEQ2SEQ[field] for field in IDENTITY["attention_seq2seq"]}
    ratio = {"sorted_speedup_vs_beams_batched": {"ratio": 9.0, "quartiles": [8.5, 9.5]}}
    label = f"attention GRU ({GRU_SEQ2SEQ['attention_type']})"
    translation = {"sizes": identity, "summary": {label: ratio}}
    assert timed_is(translation, "attention_seq2seq", GRU_SEQ2SEQ)
    assert benchmark_figure({"entries": {"translation": translation}}, "attention_seq2seq", "beam_speedup",
                            GRU_SEQ2SEQ) == (label, 9.0, "translation")
    for field in IDENTITY["attention_seq2seq"]:
        partial = {"sizes": {k: v for k, v in identity.items() if k != field}, "summary": {label: ratio}}
        assert not timed_is(partial, "attention_seq2seq", GRU_SEQ2SEQ), field
    bahdanau = {**GRU_SEQ2SEQ, "attention_type": "bahdanau"}
    assert benchmark_figure({"entries": {"translation": translation}}, "attention_seq2seq", "beam_speedup",
                            bahdanau) is None
    assert benchmark_figure({}, "attention_seq2seq", "beam_speedup", GRU_SEQ2SEQ) is None
