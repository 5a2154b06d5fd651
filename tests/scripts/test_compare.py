"""compare.py on a tiny budget: results/<suite>.json holds each run's results.json, the markdown table and the card
rendered from the suite file state the same numbers, and the chart is written."""

import json

import pytest

from test_run_classification_ner import script  # tests/scripts is on sys.path

from hf_seqmodels.cards import format_metric, load_run, render_card
from hf_seqmodels.tasks.arguments import parse_dict


def test_sentiment_suite_on_a_tiny_budget(tmp_path):
    compare = script("compare")
    results_dir, output_dir = tmp_path / "results", tmp_path / "outputs"
    [report] = compare.main(["sentiment", "--models", "LSTM,GRU", "--max_train_steps", "2", "--max_train_samples", "32",
                             "--max_eval_samples", "16", "--results_dir", str(results_dir), "--output_dir",
                             str(output_dir), "--seed", "7", "--jobs", "2"])
    saved = json.loads((results_dir / "sentiment.json").read_text())
    assert saved == json.loads(json.dumps(report))
    assert [run["name"] for run in saved["runs"]] == ["LSTM", "GRU"]  # the suite's order, though they ran at once
    assert saved["jobs"] == 2
    assert saved["budget"] == compare.SUITES["sentiment"].cpu_budget
    for run in saved["runs"]:
        assert "error" not in run, run.get("log_tail")
        folder = output_dir / "sentiment" / run["name"].lower()
        own = json.loads((folder / "results.json").read_text())
        assert {key: run[key] for key in own if key != "task"} == {key: own[key] for key in own if key != "task"}
        assert run["steps"] == 2 and run["arguments"]["seed"] == 7 and run["arguments"]["max_train_samples"] == 32
    assert saved["runs"][0]["arguments"]["cell_type"] == "lstm" and saved["runs"][1]["arguments"]["cell_type"] == "gru"

    table = (results_dir / "sentiment.md").read_text()
    for run in saved["runs"]:
        row = next(line for line in table.splitlines() if line.startswith(f"| {run['name']} |"))
        assert f"| {format_metric(run['eval_accuracy'], True)} | {format_metric(run['eval_f1'], True)} |" in row
        assert f"{run['num_parameters'] / 1e6:.2f}M" in row and run["device"] in row
    assert (results_dir / "sentiment.png").read_bytes()[:4] == b"\x89PNG"

    # The card of a run, rendered from the suite file, states that file's numbers.
    gru = load_run(results_dir / "sentiment.json", "GRU")
    card = render_card(gru)
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == {
        "accuracy": gru["eval_accuracy"], "f1": gru["eval_f1"]}
    assert f"| Accuracy | {format_metric(gru['eval_accuracy'], True)} |" in card.text


def test_update_replaces_only_the_rerun_models(tmp_path):
    compare = script("compare")
    tiny = ["--max_train_steps", "2", "--max_train_samples", "32", "--max_eval_samples", "16", "--results_dir",
            str(tmp_path / "results"), "--output_dir", str(tmp_path / "outputs")]
    compare.main(["sentiment", "--models", "RNN,GRU", "--seed", "7", *tiny])
    before = json.loads((tmp_path / "results" / "sentiment.json").read_text())
    [report] = compare.main(["sentiment", "--models", "RNN", "--update", "--seed", "7", *tiny])
    assert [run["name"] for run in report["runs"]] == ["RNN", "GRU"]  # the suite's order
    assert report["runs"][1] == before["runs"][1]  # GRU kept as it was
    assert report["runs"][0]["process_wall_time_s"] != before["runs"][0]["process_wall_time_s"]  # RNN ran again
    assert "| GRU |" in (tmp_path / "results" / "sentiment.md").read_text()
    with pytest.raises(SystemExit, match="was run with seed=7 but this run has 8"):
        compare.main(["sentiment", "--models", "RNN", "--update", "--seed", "8", *tiny])


@pytest.mark.parametrize("option, value", [("--max_train_steps", "0"), ("--max_eval_samples", "-1"),
                                           ("--jobs", "0"), ("--num_threads", "-1")])
def test_bad_numbers_are_refused(option, value, tmp_path, capsys):
    with pytest.raises(SystemExit):  # before any run: were they accepted, the folders are the test's own
        script("compare").main(["sentiment", option, value, "--results_dir", str(tmp_path / "results"),
                                "--output_dir", str(tmp_path / "outputs"), "--max_train_samples", "8"])
    assert f"{option} must be" in capsys.readouterr().err


def test_a_failed_run_is_recorded_and_fails_the_command(tmp_path):
    """The run fails at once (its output_dir is a user's file, which it refuses to replace); the results still
    record it, and compare.py exits non-zero."""
    compare = script("compare")
    user_file = tmp_path / "outputs" / "sentiment" / "lstm"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("a user's file")
    with pytest.raises(SystemExit, match="Failed runs .*: sentiment/LSTM"):
        compare.main(["sentiment", "--models", "LSTM", "--max_train_steps", "2", "--results_dir",
                      str(tmp_path / "results"), "--output_dir", str(tmp_path / "outputs")])
    [run] = json.loads((tmp_path / "results" / "sentiment.json").read_text())["runs"]
    assert run["error"] == "exit code 1" and "is an existing file" in run["log_tail"]
    assert user_file.read_text() == "a user's file"


def test_a_subset_without_update_keeps_the_saved_runs(tmp_path):
    """Without --update the results file would be rewritten with the subset only: refused before any run."""
    results = tmp_path / "results" / "sentiment.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"runs": [{"name": "RNN"}, {"name": "GRU"}]}))
    saved = results.read_text()
    with pytest.raises(SystemExit, match=r"holds the runs of \['GRU'\], which a run of only \['RNN'\] would drop: "
                                         "pass --update"):
        script("compare").main(["sentiment", "--models", "RNN", "--results_dir", str(results.parent),
                                "--output_dir", str(tmp_path / "outputs")])
    assert results.read_text() == saved and sorted(p.name for p in results.parent.iterdir()) == ["sentiment.json"]
    assert not (tmp_path / "outputs").exists()


def test_every_recipe_is_fields_of_its_task(tmp_path, data_dir):
    """Each model of each suite parses into its task's argument dataclasses, as its run will (no unknown field)."""
    compare = script("compare")
    args = compare.parse_args(["sentiment", "--results_dir", str(tmp_path), "--output_dir", str(tmp_path)])
    vectors = tmp_path / "vectors.vec"  # what a suite's word_vectors run writes, for the models that take it
    vectors.write_text("1 2\nfilm 0.5 -0.25\n")
    for suite_name, suite in compare.SUITES.items():
        for name in suite.models:
            fields = compare.run_fields(suite, name, compare.budget_of(suite, args), args, tmp_path / name, vectors)
            training_args = parse_dict(suite.module, fields)[2]  # (model, data, training[, generation])
            assert training_args.seed == args.seed and training_args.overwrite_output_dir, (suite_name, name)
