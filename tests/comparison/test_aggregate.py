"""The rows of a suite: mean and sample standard deviation over the seeds, recomputed here with `statistics`, and
the table and chart drawn from them."""

import statistics

import pytest

from hf_seqmodels.cards import format_metric
from hf_seqmodels.comparison import SUITES
from hf_seqmodels.comparison.aggregate import mean_sd, rows, training_throughput
from hf_seqmodels.comparison.report import bar_chart, markdown

ACCURACIES = {"LSTM": [0.81, 0.84, 0.78], "GRU": [0.80, 0.86, 0.83]}


def hand_made_runs(seeds=(42, 43, 44)) -> list[dict]:
    """Runs as the runner records them, with made-up figures that differ by seed."""
    return [{"name": name, "seed": seed, "test_accuracy": accuracies[i], "test_f1": accuracies[i] - 0.01,
             "eval_accuracy": accuracies[i] + 0.01, "num_parameters": 1000, "train_runtime_s": 60.0 + 7 * i,
             "train_tokens": 12000 + 500 * i, "train_tokens_per_second": (12000 + 500 * i) / (60.0 + 7 * i),
             "peak_memory_bytes": 2 ** 20 * (300 + i), "steps": 100, "epochs": 2.0, "device": "cpu: test"}
            for name, accuracies in ACCURACIES.items() for i, seed in enumerate(seeds)]


def test_mean_and_sample_standard_deviation():
    values = [0.81, 0.84, 0.78]
    assert mean_sd(values) == {"mean": pytest.approx(statistics.fmean(values)),
                               "sd": pytest.approx(statistics.stdev(values)), "n": 3}
    assert mean_sd([0.81]) == {"mean": 0.81, "sd": None, "n": 1}  # one seed: no spread to state
    with pytest.raises(ValueError, match="at least one"):
        mean_sd([])


def test_rows_summarise_each_model_over_its_seeds():
    runs = hand_made_runs()
    runs.append({"name": "GRU", "seed": 45, "error": "exit code 1"})
    lstm, gru = rows(runs, ["RNN", "LSTM", "GRU"], ["test_accuracy", "test_f1"])  # RNN has no runs: no row
    assert lstm["name"] == "LSTM" and lstm["seeds"] == [42, 43, 44] and lstm["failed_seeds"] == []
    assert gru["failed_seeds"] == [45]
    for row, accuracies in ((lstm, ACCURACIES["LSTM"]), (gru, ACCURACIES["GRU"])):
        assert row["test_accuracy"]["mean"] == pytest.approx(statistics.fmean(accuracies))
        assert row["test_accuracy"]["sd"] == pytest.approx(statistics.stdev(accuracies))
        assert row["test_f1"]["sd"] == pytest.approx(statistics.stdev([a - 0.01 for a in accuracies]))
        assert row["train_runtime_s"]["sd"] == pytest.approx(statistics.stdev([60.0, 67.0, 74.0]))
        assert row["num_parameters"] == {"mean": 1000, "sd": 0.0, "n": 3}
        assert row["devices"] == ["cpu: test"]
    assert "eval_accuracy" not in lstm  # only the keys asked for, and the run figures


def test_training_throughput():
    assert training_throughput({"train_tokens": 6000, "train_runtime_s": 30.0}) == 200.0
    assert training_throughput({"train_runtime_s": 30.0}) is None  # the run did not count its tokens


def report_of(runs: list[dict], seeds: list[int]) -> dict:
    suite = SUITES["sentiment"]
    return {"budget": suite.cpu_budget, "seeds": seeds, "num_threads": 1, "jobs": 1, "full": False, "runs": runs,
            "rows": rows(runs, list(suite.models), [suite.metric, *(key for key, _ in suite.extra_columns)])}


def test_table_and_chart_state_mean_and_sd(tmp_path):
    suite = SUITES["sentiment"]
    report = report_of(hand_made_runs(), [42, 43, 44])
    table = markdown("sentiment", suite, report)
    assert "sample standard deviation (n-1) over the seeds [42, 43, 44]" in table
    for name, accuracies in ACCURACIES.items():
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
        mean, sd = statistics.fmean(accuracies), statistics.stdev(accuracies)
        assert row.startswith(f"| {name} | {format_metric(mean, True)} ± {format_metric(sd, True)} |")
        assert "| 3 |" in row and "| 0.00M |" in row and "| cpu: test |" in row
        memory = statistics.fmean([300, 301, 302])
        assert f"| {memory:.0f} ± {statistics.stdev([300, 301, 302]):.0f} |" in row
    bar_chart(tmp_path / "chart.png", suite, report["rows"])
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_one_seed_has_no_sd_and_says_n_is_1():
    report = report_of(hand_made_runs(seeds=(7,))[:1], [7])
    table = markdown("sentiment", SUITES["sentiment"], report)
    assert "one seed (n=1): no standard deviation" in table and "--seeds 7" in table
    row = next(line for line in table.splitlines() if line.startswith("| LSTM |"))
    assert row.startswith(f"| LSTM | {format_metric(0.81, True)} |") and "±" not in row
