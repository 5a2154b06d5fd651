"""compare.py on a tiny budget: results/<suite>.json holds each run's results.json (one per model and seed) and the
rows (mean ± sd over the seeds, recomputed here with `statistics`); the markdown table and the card rendered from
the suite file state the same numbers, and the chart is written. The option checks come before any run. The command a
table states runs the same models with the same settings."""

import json
import shlex
import statistics
import sys

import pytest

from test_run_classification_ner import script  # tests/scripts is on sys.path

from hf_seqmodels.cards import format_metric, load_run, render_card
from hf_seqmodels.comparison import DEFAULT_SEEDS, SUITES, RunOptions
from hf_seqmodels.comparison.report import command
from hf_seqmodels.comparison.runner import budget_of, run_fields
from hf_seqmodels.tasks.arguments import parse_dict

TINY = ["--max_train_steps", "2", "--max_train_samples", "32", "--max_eval_samples", "16"]


def folders(tmp_path) -> list[str]:
    return ["--results_dir", str(tmp_path / "results"), "--output_dir", str(tmp_path / "outputs")]


@pytest.mark.slow
def test_sentiment_suite_with_two_seeds(tmp_path):
    compare = script("compare")
    results_dir, output_dir = tmp_path / "results", tmp_path / "outputs"
    [report] = compare.main(["sentiment", "--models", "LSTM,GRU", *TINY, *folders(tmp_path), "--seeds", "7,8",
                             "--jobs", "2"])
    saved = json.loads((results_dir / "sentiment.json").read_text())
    assert saved == json.loads(json.dumps(report))
    # The suite's order, model by model and seed by seed, though they ran two at once.
    assert [(run["name"], run["seed"]) for run in saved["runs"]] == [("LSTM", 7), ("LSTM", 8), ("GRU", 7), ("GRU", 8)]
    assert saved["jobs"] == 2 and saved["seeds"] == [7, 8]
    assert saved["budget"] == SUITES["sentiment"].cpu_budget
    for run in saved["runs"]:
        assert "error" not in run, run.get("log_tail")
        folder = output_dir / "sentiment" / run["name"].lower() / f"seed{run['seed']}"
        own = json.loads((folder / "results.json").read_text())
        assert {key: run[key] for key in own if key != "task"} == {key: own[key] for key in own if key != "task"}
        assert run["steps"] == 2 and run["arguments"]["seed"] == run["seed"]
        assert run["arguments"]["max_train_samples"] == 32 and run["peak_memory_bytes"] > 0
        assert run["arguments"]["cell_type"] == run["name"].lower()
        # each run's provenance, taken in its own process: the command that started the suite, its seed, the splits
        record = run["provenance"]
        assert record["argv"] == sys.orig_argv and record["seeds"] == [run["seed"]]
        assert record["split"] == ["validation", "test"] and record["commit"] == saved["provenance"]["commit"]
    assert saved["provenance"]["seeds"] == [7, 8] and saved["provenance"]["argv"] == sys.orig_argv

    table = (results_dir / "sentiment.md").read_text()
    for row in saved["rows"]:
        runs = [run for run in saved["runs"] if run["name"] == row["name"]]
        accuracies = [run["test_accuracy"] for run in runs]
        assert row["seeds"] == [7, 8] and row["test_accuracy"]["n"] == 2
        assert row["test_accuracy"]["mean"] == pytest.approx(statistics.fmean(accuracies))
        assert row["test_accuracy"]["sd"] == pytest.approx(statistics.stdev(accuracies))
        line = next(line for line in table.splitlines() if line.startswith(f"| {row['name']} |"))
        mean, sd = statistics.fmean(accuracies), statistics.stdev(accuracies)
        assert line.startswith(f"| {row['name']} | {format_metric(mean, True)} ± {format_metric(sd, True)} |")
        assert f"{runs[0]['num_parameters'] / 1e6:.2f}M" in line and runs[0]["device"] in line
    assert "--seeds 7,8" in table
    assert (results_dir / "sentiment.png").read_bytes()[:4] == b"\x89PNG"

    # The card of a run, rendered from the suite file, states that file's numbers (the model's first seed, and the
    # model's row over its seeds).
    gru = load_run(results_dir / "sentiment.json", "GRU")
    assert gru["seed"] == 7 and load_run(results_dir / "sentiment.json", "GRU", seed=8) == {
        **saved["runs"][3], "suite_row": {"suite": "sentiment", **saved["rows"][1]}}
    with pytest.raises(ValueError, match=r"runs of 'GRU' with seeds \[7, 8\], not 9"):
        load_run(results_dir / "sentiment.json", "GRU", seed=9)
    card = render_card(gru)
    assert {(r.dataset_split, r.metric_type): r.metric_value for r in card.data.eval_results} == {
        (split, name): gru[f"{prefix}_{name}"] for prefix, split in (("eval", "validation"), ("test", "test"))
        for name in ("accuracy", "f1")}


@pytest.mark.slow
def test_update_replaces_only_the_rerun_models(tmp_path):
    compare = script("compare")
    compare.main(["sentiment", "--models", "RNN,GRU", "--seed", "7", *TINY, *folders(tmp_path)])
    before = json.loads((tmp_path / "results" / "sentiment.json").read_text())
    [report] = compare.main(["sentiment", "--models", "RNN", "--update", "--seed", "7", *TINY, *folders(tmp_path)])
    assert [run["name"] for run in report["runs"]] == ["RNN", "GRU"]  # the suite's order
    assert report["runs"][1] == before["runs"][1]  # GRU kept as it was
    assert report["runs"][0]["process_wall_time_s"] != before["runs"][0]["process_wall_time_s"]  # RNN ran again
    assert [row["name"] for row in report["rows"]] == ["RNN", "GRU"]
    assert "| GRU |" in (tmp_path / "results" / "sentiment.md").read_text()
    with pytest.raises(SystemExit, match=r"was run with seeds=\[7\] but this run has \[8\]"):
        compare.main(["sentiment", "--models", "RNN", "--update", "--seed", "8", *TINY, *folders(tmp_path)])


@pytest.mark.parametrize("option, value, message", [
    ("--max_train_steps", "0", "--max_train_steps must be"), ("--max_eval_samples", "-1", "--max_eval_samples must be"),
    ("--jobs", "0", "--jobs must be"), ("--num_threads", "-1", "--num_threads must be"),
    ("--seeds", "1,1", "--seeds must name distinct seeds"), ("--seeds", "1,x", "--seeds takes comma-separated"),
])
def test_bad_options_are_refused(option, value, message, tmp_path, capsys):
    with pytest.raises(SystemExit):  # before any run: were they accepted, the folders are the test's own
        script("compare").main(["sentiment", option, value, *folders(tmp_path), "--max_train_samples", "8"])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "outputs").exists()


def test_seed_is_one_seed_and_seeds_default_to_three(capsys):
    compare = script("compare")
    assert compare.parse_args(["sentiment"])[1].seeds == [42, 43, 44] == list(RunOptions().seeds)
    assert compare.parse_args(["sentiment", "--seed", "5"])[1].seeds == [5]
    assert compare.parse_args(["sentiment", "--seeds", "1,2"])[1].seeds == [1, 2]
    with pytest.raises(SystemExit):
        compare.parse_args(["sentiment", "--seed", "5", "--seeds", "1,2"])
    assert "--seed is one seed, --seeds a list: pass one of them." in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare.parse_args(["--help"])
    assert "--seeds SEEDS" in capsys.readouterr().out


def test_a_failed_run_is_recorded_and_fails_the_command(tmp_path):
    """The run fails at once (its output_dir is a user's file, which it refuses to replace); the results still
    record it, and compare.py exits non-zero."""
    compare = script("compare")
    user_file = tmp_path / "outputs" / "sentiment" / "lstm" / "seed42"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("a user's file")
    with pytest.raises(SystemExit, match=r"Failed runs .*: sentiment/LSTM \(seed 42\)"):
        compare.main(["sentiment", "--models", "LSTM", "--seed", "42", "--max_train_steps", "2", *folders(tmp_path)])
    saved = json.loads((tmp_path / "results" / "sentiment.json").read_text())
    [run] = saved["runs"]
    assert run["error"] == "exit code 1" and "is an existing file" in run["log_tail"]
    assert saved["rows"] == [{"name": "LSTM", "seeds": [], "failed_seeds": [42], "devices": []}]
    assert "| LSTM | failed (seeds [42]" in (tmp_path / "results" / "sentiment.md").read_text()
    assert user_file.read_text() == "a user's file"


def test_a_subset_without_update_keeps_the_saved_runs(tmp_path):
    """Without --update the results file would be rewritten with the subset only: refused before any run."""
    results = tmp_path / "results" / "sentiment.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"runs": [{"name": "RNN", "seed": 1}, {"name": "GRU", "seed": 1},
                                            {"name": "GRU", "seed": 2}]}))
    saved = results.read_text()
    with pytest.raises(SystemExit, match=r"holds the runs of \['GRU'\], which a run of only \['RNN'\] would drop: "
                                         "pass --update"):
        script("compare").main(["sentiment", "--models", "RNN", *folders(tmp_path)])
    assert results.read_text() == saved and sorted(p.name for p in results.parent.iterdir()) == ["sentiment.json"]
    assert not (tmp_path / "outputs").exists()


def test_every_recipe_is_fields_of_its_task(tmp_path, data_dir):
    """Each model of each suite parses into its task's argument dataclasses, as its run will (no unknown field)."""
    options = RunOptions(results_dir=tmp_path, output_dir=tmp_path)
    vectors = tmp_path / "vectors.vec"  # what a suite's word_vectors run writes, for the models that take it
    vectors.write_text("1 2\nfilm 0.5 -0.25\n")
    for suite_name, suite in SUITES.items():
        for name in suite.models:
            fields = run_fields(suite, name, 43, budget_of(suite, options), options, tmp_path / name, vectors)
            training_args = parse_dict(suite.module, fields)[2]  # (model, data, training[, generation])
            assert training_args.seed == 43 and training_args.overwrite_output_dir, (suite_name, name)


@pytest.mark.parametrize("names, seeds, threads, jobs, full", [
    (["BiLSTM", "BiLSTM + MiniLM emb.", "BERT (MiniLM-L6)"], [42, 43, 44], 1, 2, False),
    (list(SUITES["sentiment"].models), list(DEFAULT_SEEDS), 1, 1, False),
    (["GRU"], [7], 0, 3, True),
])
def test_the_stated_command_runs_the_reports_models_and_settings(names, seeds, threads, jobs, full):
    report = {"full": full, "seeds": seeds, "num_threads": threads, "jobs": jobs,
              "runs": [{"name": name, "seed": seed} for name in names for seed in seeds]}
    line = command("sentiment", SUITES["sentiment"], report)
    suites, options = script("compare").parse_args(shlex.split(line)[2:])
    assert suites == ["sentiment"]
    assert (options.models or list(SUITES["sentiment"].models)) == names
    assert (options.seeds, options.num_threads, options.jobs, options.full) == (seeds, threads, jobs, full)
