"""results/peers.{md,png} and the table of docs/peers.md are rendered from results/peers.json by code
(benchmarks.peers.report)."""

import json
import statistics

from benchmarks.peers import report
from tools.render import figures


def make_run(toolkit: str, seed: int, bleu: float, train_s: float, seconds: float) -> dict:
    decoded = {"seconds": seconds, "sentences": 100, "peak_rss_mb": 500.0, "wall_s": seconds + 5,
               "command": f"{toolkit} decode"}
    return {
        "toolkit": toolkit, "seed": seed, "batch_size": 64, "mean_source_tokens": 15.0,
        "train": {"train_s": train_s, "wall_s": train_s + 30, "peak_rss_mb": 900.0 + seed, "parameters": 4_000_000,
                  "steps": 300, "command": f"{toolkit} train",
                  **({"tokenizer_is_the_pieces": seed == 1} if toolkit == "ours" else {})},
        "decode": {"test": {**decoded, "sentences": 1000, "seconds": 10 * seconds,
                            "mean_output_pieces": 12.0 + seed}},
        "scores": {"bleu": {"score": bleu, "mean": bleu, "ci": 0.5, "p_value": None if toolkit == "ours" else 0.01},
                   "chrf": {"score": bleu + 20, "mean": bleu + 20, "ci": 0.4,
                            "p_value": None if toolkit == "ours" else 0.02}},
    }


def make_results() -> dict:
    runs = [make_run(name, seed, bleu, train_s, seconds)
            for seed, shift in ((1, 0.0), (2, 1.0))
            for name, bleu, train_s, seconds in (("ours", 30.0 + shift, 100.0 + 10 * shift, 2.0),
                                                 ("joeynmt", 28.0 - shift, 200.0, 4.0 + shift))]
    return {"label": "check: a short budget", "command": "python -m benchmarks.peers.run", "toolkits": ["ours",
                                                                                                        "joeynmt"],
            "baseline": "ours", "budget": {"updates": 300, "main_job_updates": 1362, "seeds": [1, 2]},
            "recipe": {"batch_size": 64, "num_beams": 5, "length_penalty": 1.0, "max_new_tokens": 64},
            "jobs": 2, "decoding": {"batch_size": 64},
            "data": {"test": {"sentences": 1000}}, "machine": "a CPU", "signatures": {"bleu": "BLEU sig",
                                                                                      "chrf": "chrF sig"},
            "bootstrap": {"samples": 1000, "seed": 12345}, "versions": {"ours": {"torch": "2.13.0"},
                                                                       "joeynmt": {"joeynmt": "2.3.0"}},
            "same_for_all": "the data", "differences": {"joeynmt": ["its length penalty"]},
            "left_out": {"fairseq": "does not import"}, "runs": runs}


TIMING = {
    "training": {"command": "python -m benchmarks.peers.run --timing_rounds 3", "label": "speed", "threads": 2,
                 "machine": "a CPU, 2 cores", "rounds": 3, "recipe": {"updates": 100, "warmup_steps": 50},
                 "median": {"ours": {"train_tokens_per_s": 900.0, "train_tokens_per_s_without_validation": 1000.0},
                            "joeynmt": {"train_tokens_per_s": 450.0,
                                        "train_tokens_per_s_without_validation": 500.0},
                            "eole": {"train_tokens_per_s": 1800.0, "train_tokens_per_s_without_validation": 2000.0}},
                 "runs": []},
    "decoding": {"command": "python -m benchmarks.peers.run --decoding_rounds 3", "label": "speed", "threads": 2,
                 "machine": "a CPU, 2 cores", "seed": 1, "rounds": 3, "batch_sizes": [16, 64],
                 "select_sentences": 100, "batch1_sentences": 100, "runs": [],
                 "median": {name: {"best_batch_sents_per_s": speed, "best_batch_size": 64, "batch1_sents_per_s": 5.0,
                                   "mean_output_pieces": 13.0, "decode_peak_rss_mb": 500.0}
                            for name, speed in (("ours", 60.0), ("joeynmt", 20.0), ("eole", 30.0))}},
}


def test_summary_is_mean_and_sd_over_seeds():
    results = make_results()
    rows = {row["toolkit"]: row for row in report.summarize(results)}
    assert list(rows) == ["ours", "joeynmt"]
    assert rows["ours"]["bleu"]["mean"] == statistics.mean([30.0, 31.0])
    assert rows["ours"]["bleu"]["sd"] == statistics.stdev([30.0, 31.0])
    assert rows["joeynmt"]["train_s"]["mean"] == 200.0 and rows["joeynmt"]["seeds"] == [1, 2]
    assert rows["joeynmt"]["mean_output_pieces"]["mean"] == statistics.mean([12.0 + 1, 12.0 + 2])
    # a run whose seed is not scored yet counts nowhere (n = the scored seeds)
    del results["runs"][-1]["scores"]
    rows = {row["toolkit"]: row for row in report.summarize(results)}
    assert rows["joeynmt"]["seeds"] == [1] and rows["ours"]["seeds"] == [1, 2]


def test_train_tokens_per_second_counts_the_updates_source_tokens():
    run = make_run("ours", 1, 30.0, 100.0, 2.0)
    run["train"]["validation_s"] = 20.0
    # updates x batch x mean source tokens over the loop's seconds (less its validations)
    assert report.train_tokens_per_second(run) == 300 * 64 * 15 / 100
    assert report.train_tokens_per_second(run, without_validation=True) == 300 * 64 * 15 / 80


def test_targets_against_each_peer():
    results = make_results()
    assert [t["name"] for t in report.targets(results)] == ["test BLEU, ours - joeynmt (mean over seeds)"]
    found = {target["name"]: target for target in report.targets(results, TIMING)}
    bleu = found["test BLEU, ours - joeynmt (mean over seeds)"]
    assert bleu["value"] == round(statistics.mean([30.0, 31.0]) - statistics.mean([28.0, 27.0]), 2) and bleu["met"]
    speed = found["beam-5 sentences/s at the best batch, ours / eole (the faster peer)"]
    assert speed["value"] == 2.0 and speed["met"]
    assert "training tokens/s, ours / joeynmt" not in found  # no rounds stored: no verdict
    # a peer better in one seed's bootstrap misses the BLEU target, though ours is better on the mean
    results["runs"][1]["scores"]["bleu"].update(score=30.5, p_value=0.001)  # seed 1: 30.5 > ours 30.0
    changed = {t["name"]: t for t in report.targets(results)}["test BLEU, ours - joeynmt (mean over seeds)"]
    assert changed["value"] > 0 and not changed["met"]


def timed_rounds(speeds: dict[str, list[float]]) -> dict:
    """A training speed phase whose toolkits trained in turns, round by round, at 2 threads, at ``speeds``
    (tokens/s by round)."""
    runs = [{"toolkit": name, "round": round_, "threads": 2, "batch_size": 64, "mean_source_tokens": 10.0,
             "train": {"steps": 100, "train_s": 100 * 64 * 10.0 / speed, "validation_s": 0.0}}
            for name, values in speeds.items() for round_, speed in enumerate(values)]
    return {"runs": runs, "median": {name: {"train_threads": 2, "train_tokens_per_s": statistics.median(values)}
                                     for name, values in speeds.items()}}


def test_faster_in_training_only_where_every_paired_round_agrees():
    training = timed_rounds({"ours": [1000.0, 1100.0, 900.0], "eole": [950.0, 1000.0, 1000.0],
                             "joeynmt": [500.0, 600.0, 400.0]})
    on_par = report.training_verdict(training, "ours", "eole")
    assert on_par["verdict"] == "on par" and on_par["value"] == "1.05 (0.90-1.10 over 3 paired rounds)"
    assert report.training_verdict(training, "ours", "joeynmt")["verdict"] == "faster"
    assert report.training_verdict(training, "joeynmt", "eole")["verdict"] == "slower"
    # ahead on the median (1010 against 1000), but one round trails: no claim
    training = timed_rounds({"ours": [1010.0, 1010.0, 990.0], "eole": [1000.0, 1000.0, 1000.0]})
    assert report.training_verdict(training, "ours", "eole")["verdict"] == "on par"


def test_markdown_has_every_row_and_run(tmp_path):
    results = make_results()
    table = report.markdown(results, tmp_path / report.CTRANSLATE2, TIMING)
    assert "**check: a short budget**" in table
    assert "| ours | the main job's | 30.50 ± 0.71 | 50.50 ± 0.71 | 4,000,000 |" in table
    assert "n = 2: [1, 2]" in table and "no speed figures" in table
    assert "| eole | 1800 | 2000 | 30.0 (64) | 5.0 | 13.0 |" in table
    assert "| joeynmt | the main job's | 27.50 ± 0.71 |" in table
    assert table.count("| joeynmt | ") == 4  # its quality and speed rows and one per seed
    assert "BLEU p = 0.010, chrF p = 0.020" in table and "| ours | 2 | 31.00 (31.00 ± 0.50) | 51.00 | baseline |" \
        in table
    assert "- its length penalty" in table and "fairseq: does not import" in table
    assert "the one that cut the peers' pieces: seed 1: yes, seed 2: NO." in table
    for target in report.targets(results, TIMING):
        met = target.get("verdict", "met" if target["met"] else "missed")
        assert f"| {target['name']} | {target['value']} | {target['wanted']} | {met} |" in table
    assert "CTranslate2" not in table  # no file, no section
    assert "Not measured yet." in report.markdown(results)  # no speed phase yet


def test_a_sweep_over_thread_counts_names_each_rows_count_and_lists_every_count(tmp_path):
    timing = json.loads(json.dumps(TIMING))
    training = timing["training"]
    training["threads"] = [1, 2]
    training["by_threads"] = {name: {"1": {"train_tokens_per_s": 1.0, "train_tokens_per_s_without_validation": 2.0},
                                     "2": dict(medians)} for name, medians in training["median"].items()}
    for medians in training["median"].values():
        medians["train_threads"] = 2
    training["median"]["eole"] = {**training["by_threads"]["eole"]["1"], "train_threads": 1}
    table = report.markdown(make_results(), tmp_path / report.CTRANSLATE2, timing)
    assert "every toolkit at OMP_NUM_THREADS=1, 2 in turn" in table
    training["median"]["eole"]["train_threads_without_validation"] = 1
    table = report.markdown(make_results(), tmp_path / report.CTRANSLATE2, timing)
    assert "| eole | 1 (1 thread) | 2 (1 thread) | 30.0 (64) | 5.0 | 13.0 |" in table
    assert "| ours | 900 (2 threads) | 1000 |" in table  # no count stored for that figure: none named
    assert "| eole | 2 | 1800 | 2000 |" in table and "| eole | 1 | 1 | 2 |" in table
    assert "OMP_NUM_THREADS=2. `python -m benchmarks.peers.run --decoding_rounds 3`" in table  # decoding: one count


def test_ctranslate2_rows_are_included_when_present(tmp_path):
    (tmp_path / report.CTRANSLATE2).write_text(json.dumps({"title": "CTranslate2 vs generate()", "rows": [
        {"engine": "ctranslate2 int8", "bleu": 30.1, "sentences_per_s": {"median": 50.5, "quartiles": [49.0, 52.0]},
         "details": {"nested": {"deeper": 1}}},
        {"engine": "generate", "bleu": 30.0, "sentences_per_s": {"median": 20.0, "quartiles": [19.5, 21.0]}}]}))
    table = report.markdown(make_results(), tmp_path / report.CTRANSLATE2)
    assert "CTranslate2 vs generate()" in table
    assert "| engine | bleu | sentences_per_s.median | sentences_per_s.quartiles |" in table
    assert "| ctranslate2 int8 | 30.1 | 50.5 | 49.0-52.0 |" in table
    assert "| generate | 30.0 | 20.0 | 19.5-21.0 |" in table
    assert "deeper" not in table


def test_write_renders_json_md_png_and_the_docs_table(tmp_path):
    results = make_results()
    docs = tmp_path / "peers_doc.md"
    docs.write_text(f"intro\n{report.DOCS_BEGIN}\nold table\n{report.DOCS_END}\nafter\n")
    (tmp_path / report.TIMING).write_text(json.dumps(TIMING))
    report.write(results, tmp_path, docs)
    assert json.loads((tmp_path / "peers.json").read_text()) == results
    assert (tmp_path / "peers.md").read_text() == report.markdown(results, tmp_path / report.CTRANSLATE2, TIMING)
    assert (tmp_path / "peers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = docs.read_text()
    assert "old table" not in page and page.startswith("intro\n") and page.endswith(f"{report.DOCS_END}\nafter\n")
    assert "\n".join(report.summary_table(results)) in page and "**check: a short budget**" in page
    assert "\n".join(report.speed_table(TIMING)) in page
    (tmp_path / "peers.md").unlink()
    report.main(["--out", str(tmp_path), "--docs", str(docs)])  # rerendered from the json files alone
    assert (tmp_path / "peers.md").read_text() == report.markdown(results, tmp_path / report.CTRANSLATE2, TIMING)
    assert docs.read_text() == page


def test_wall_table_gives_each_phase_of_each_toolkit():
    timing = json.loads(json.dumps(TIMING))
    timing["training"]["runs"] = [{"toolkit": "ours", "train": {"wall_s": wall}} for wall in (60.0, 90.0, 66.0)]
    timing["decoding"]["runs"] = [{"toolkit": "eole", "select": {"16": {"wall_s": 6.0}, "64": {"wall_s": 12.0}},
                                   "test": {"wall_s": 30.0}, "batch1": {"wall_s": 12.0}}]
    lines = report.wall_table(make_results(), timing)
    # quality: the mean over the seeds (train_s + 30 s; decoding seconds + 5 s); speed: medians, in minutes
    assert "| ours | 2.2 | 7 | 1.1 |  |" in lines  # (130 + 140) / 2 s; 7 s; median 66 s
    assert "| joeynmt | 3.8 | 10 |  |  |" in lines  # 230 s; (9 + 10) / 2 = 9.5 s, rounded to even
    assert "| eole |  |  |  | 1.0 |" in lines  # one round: 6 + 12 + 30 + 12 s


def test_the_committed_docs_table_is_what_the_committed_results_give(tmp_path):
    """docs/peers.md's block rerendered from results/peers.json and results/peers_timing.json: unchanged."""
    results = json.loads((report.REPO_ROOT / "results" / "peers.json").read_text())
    timing = json.loads((report.REPO_ROOT / "results" / report.TIMING).read_text())
    copy = tmp_path / "peers.md"
    copy.write_text(report.DOCS.read_text())
    report.update_docs(results, timing, copy)
    assert copy.read_text() == report.DOCS.read_text()


def test_the_docs_prose_quotes_no_measured_figure():
    assert figures.figures_outside_blocks(report.DOCS.read_text()) == []


def test_resummarize_recomputes_the_medians_from_the_runs(tmp_path):
    runs = [{"toolkit": "eole", "threads": threads, "best_batch_size": 64, "test": {
        "sentences": 100, "seconds": seconds, "mean_output_pieces": 12.0, "peak_rss_mb": 500.0},
        "batch1": {"sentences": 10, "seconds": batch1}} for threads, seconds, batch1 in
        ((1, 2.0, 1.0), (2, 1.0, 2.0), (1, 2.2, 1.2), (2, 1.2, 2.2))]
    path = tmp_path / report.TIMING
    path.write_text(json.dumps({"decoding": {"runs": runs, "median": {"eole": {"best_batch_sents_per_s": 1.0}}}}))
    report.resummarize(path)
    part = json.loads(path.read_text())["decoding"]
    eole = part["median"]["eole"]
    # at its best batch eole is fastest at 2 threads (100 / 1.1 s), at batch 1 at 1 thread (10 / 1.1 s)
    assert eole["best_batch_sents_per_s"] == statistics.median([100 / 1.0, 100 / 1.2]) and eole["decode_threads"] == 2
    assert eole["batch1_sents_per_s"] == statistics.median([10 / 1.0, 10 / 1.2]) and eole["batch1_threads"] == 1
    assert set(part["by_threads"]["eole"]) == {"1", "2"}
    assert part["summarized"]["by"] == "benchmarks.peers.report.speed_medians" and part["summarized"]["commit"]


def test_the_decoding_ceiling_is_what_the_clocked_model_computation_allows(tmp_path):
    """Ours' test decodes clocked inside the model (decode_ours.model_clock): the sentence under the targets names
    the median model-only speed, its ratio to the faster peer and the shares, recomputed here from the runs."""
    runs = [{"toolkit": "ours", "threads": 2, "best_batch_size": 64, "batch1": {"sentences": 10, "seconds": 1.0},
             "test": {"sentences": 1000, "seconds": seconds, "model_seconds": inside, "output_layer_seconds": layer,
                      "mean_output_pieces": 12.0, "peak_rss_mb": 500.0}}
            for seconds, inside, layer in ((5.0, 3.5, 2.0), (6.0, 4.0, 2.5), (5.5, 3.0, 2.2))]
    summary = report.decoding_summary(runs)
    assert summary["model_only_sents_per_s"] == statistics.median([1000 / 3.5, 1000 / 4.0, 1000 / 3.0])
    assert summary["model_share"] == statistics.median([3.5 / 5.0, 4.0 / 6.0, 3.0 / 5.5])
    assert summary["output_layer_share"] == statistics.median([2.0 / 5.0, 2.5 / 6.0, 2.2 / 5.5])
    assert "model_only_sents_per_s" not in report.decoding_summary([{**runs[0], "test": {
        key: value for key, value in runs[0]["test"].items() if key != "model_seconds"}}])

    timing = json.loads(json.dumps(TIMING))
    timing["decoding"]["median"]["ours"].update(summary)
    table = report.markdown(make_results(), tmp_path / report.CTRANSLATE2, timing)
    alone = summary["model_only_sents_per_s"]
    assert (f"ours would decode {alone:.1f} sentences/s, {alone / 30.0:.2f}x eole's 30.0; 1.5x that is 45.0."
            in table)
    assert (f"took a median {summary['model_share']:.0%} of the seconds, the output layer alone "
            f"{summary['output_layer_share']:.0%}" in table)
    assert "would decode" not in report.markdown(make_results(), tmp_path / report.CTRANSLATE2, TIMING)
