"""benchmarks.peers.run's bookkeeping: each quality run is a row of peers.json stored when it ends (other seeds
kept, a re-run replacing its row, atomically), every seed scored from the stored translations, and the recorded
commands free of this machine's paths."""

import argparse
import dataclasses
import copy
import json
import statistics
import sys
import threading
import time

import pytest
import sacrebleu

from benchmarks.peers import run, toolkits

REFERENCES = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest ein Buch."]
GOOD = ["Ein Mann fährt ein Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest ein Buch."]
POOR = ["Ein Mann.", "Hunde im Schnee.", "Eine Frau liest."]


RECIPE = run.Recipe.main_job(29_000, 300)
TUNINGS = {name: (RECIPE.untuned(name), 1.0) for name in ("ours", "joeynmt", "eole")}


def row(toolkit: str, seed: int) -> dict:
    return {"toolkit": toolkit, "seed": seed, "train": {"command": "python x"}, "decode": {"test": {}},
            "tuning": dataclasses.asdict(TUNINGS[toolkit][0]), "length_penalty": TUNINGS[toolkit][1]}


def header() -> dict:
    return {"label": "check", "baseline": "ours", "budget": {"updates": 300}, "runs": []}


def test_portable_commands_name_no_machine_paths(tmp_path):
    work = tmp_path / "work"
    (work / "bin").mkdir(parents=True)
    (work / "bin" / "python").symlink_to(sys.executable)  # as a peer's virtual environment has it
    assert run.portable(f"{work}/bin/python -m joeynmt", work) == "'<work>/bin/python' -m joeynmt"
    line = " ".join([sys.executable, str(toolkits.REPO_ROOT / "scripts" / "run_translation.py"), "--output_dir",
                     str(work / "ours" / "seed1" / "model"), "--data", str(toolkits.REPO_ROOT / "outputs" / "d"),
                     "--seed", "1", "/usr/share/dict"])
    assert run.portable(line, work) == ("python scripts/run_translation.py --output_dir '<work>/ours/seed1/model' "
                                        "--data outputs/d --seed 1 /usr/share/dict")
    record = {"train": {"command": line, "train_s": 1.0}, "decode": {"test": {"command": line}}, "seed": 1}
    portable = run.made_portable(record, work)
    assert portable["train"]["command"] == portable["decode"]["test"]["command"] == run.portable(line, work)
    assert portable["train"]["train_s"] == 1.0 and portable["seed"] == 1


def test_rows_are_kept_replaced_and_scored_by_seed(tmp_path):
    results = header()
    run.store(results, row("ours", 1), GOOD, tmp_path, REFERENCES)
    assert "scores" not in results["runs"][0]  # a seed is scored once its baseline and a peer are stored
    run.store(results, row("joeynmt", 1), POOR, tmp_path, REFERENCES)
    run.store(results, row("ours", 2), GOOD, tmp_path, REFERENCES)
    stored = json.loads((tmp_path / "peers.json").read_text())
    assert stored == results
    assert [(r["toolkit"], r["seed"]) for r in stored["runs"]] == [("ours", 1), ("joeynmt", 1), ("ours", 2)]
    assert stored["budget"]["seeds"] == [1, 2] and stored["toolkits"] == ["ours", "joeynmt"]
    for name, hypotheses in (("ours", GOOD), ("joeynmt", POOR)):
        scores = next(r for r in stored["runs"] if r["toolkit"] == name and r["seed"] == 1)["scores"]
        assert scores["bleu"]["score"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [REFERENCES]).score,
                                                        abs=0.01)
        assert scores["chrf"]["score"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [REFERENCES]).score,
                                                        abs=0.01)
    assert "scores" not in stored["runs"][2]
    assert (tmp_path / run.TRANSLATIONS / "joeynmt.seed1.txt").read_text().splitlines() == POOR
    # a re-run of a seed replaces its row and rescores the seed
    run.store(results, row("joeynmt", 1), GOOD, tmp_path, REFERENCES)
    runs = json.loads((tmp_path / "peers.json").read_text())["runs"]
    assert len(runs) == 3
    assert runs[1]["scores"]["bleu"]["score"] == pytest.approx(runs[0]["scores"]["bleu"]["score"])


def test_a_failed_store_leaves_the_earlier_rows(tmp_path):
    results = header()
    run.store(results, row("ours", 1), GOOD, tmp_path, REFERENCES)
    before = (tmp_path / "peers.json").read_text()
    broken = {**row("eole", 1), "train": {"command": "python x", "seconds": object()}}  # not JSON
    with pytest.raises(TypeError):
        run.store(copy.deepcopy(results), broken, POOR, tmp_path, REFERENCES)
    assert (tmp_path / "peers.json").read_text() == before


def test_earlier_rows_are_kept_only_for_the_same_recipe_and_tuning(tmp_path):
    recipe = run.Recipe.main_job(29_000, 300)
    assert run.earlier_results(tmp_path, recipe, tuned=False) is None
    stored = {**header(), "recipe": run.dataclasses.asdict(recipe), "jobs": 2, "tuned": True}
    (tmp_path / "peers.json").write_text(json.dumps(stored))
    assert run.earlier_results(tmp_path, recipe, tuned=True) == stored
    assert run.earlier_results(tmp_path, recipe, tuned=False) is None
    assert run.earlier_results(tmp_path, run.Recipe.main_job(29_000, 400), tuned=True) is None


def test_the_speed_phase_runs_one_command_at_a_time():
    with pytest.raises(SystemExit):
        run.main(["--timing_rounds", "1", "--jobs", "2"])


def test_the_old_decoding_speed_phase_is_gone():
    """Decoding speed is the decoding grid's (benchmarks.peers.decoding_grid): run.py takes none of its options."""
    for option in ("--decoding_rounds", "--batch_sizes", "--select_sentences", "--batch1_sentences"):
        with pytest.raises(SystemExit):
            run.main([option, "3"])


def test_the_speed_phase_writes_the_training_part_alone(tmp_path, monkeypatch):
    """peers_timing.json holds the training speed phase only: an older decoding part is not carried over."""
    (tmp_path / run.report.TIMING).write_text(json.dumps({"decoding": {"median": {}}, "training": {"median": {}}}))
    medians = {"ours": {"train_tokens_per_s": 900.0}}
    monkeypatch.setattr(run, "training_speed", lambda recipe, data, args: {"median": medians, "runs": []})
    args = argparse.Namespace(seeds=[1], label="check", threads=[2], out=tmp_path)
    run.speed(run.Recipe.main_job(29_000, 100), FakeData(), args, "python -m benchmarks.peers.run --timing_rounds 1")
    stored = json.loads((tmp_path / run.report.TIMING).read_text())
    assert list(stored) == ["training"] and stored["training"]["median"] == medians
    assert stored["training"]["command"] == "python -m benchmarks.peers.run --timing_rounds 1"


def test_the_quality_phase_runs_at_one_thread_count():
    with pytest.raises(SystemExit):
        run.main(["--seeds", "1", "--threads", "1", "2"])


def test_each_toolkit_is_timed_at_each_thread_count_and_shown_at_its_fastest(tmp_path, monkeypatch):
    """Every toolkit trains at every --threads in turn, each command under its own OMP_NUM_THREADS; each figure of
    a toolkit's row is at the count where it was highest (eole here at 1, ours at 2), every count in ``by_threads``."""
    seconds = {("ours", "1"): 40.0, ("ours", "2"): 30.0, ("eole", "1"): 25.0, ("eole", "2"): 35.0}
    calls = []

    def fake_train(name, recipe, data, folder, seed, tuning):
        threads = run.os.environ["OMP_NUM_THREADS"]
        calls.append((name, threads, folder.name))
        validation = 20.0 if (name, threads) == ("eole", "2") else 5.0  # without it, eole is fastest at 2
        return {"train_s": seconds[name, threads] + len(calls) % 2, "validation_s": validation,
                "steps": recipe.updates}

    monkeypatch.setattr(toolkits, "train", fake_train)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    recipe = run.Recipe.main_job(29_000, 100)
    args = argparse.Namespace(seeds=[1], toolkits=["ours", "eole"], timing_rounds=2, threads=[1, 2],
                              work=tmp_path / "work",
                              tunings={name: (recipe.untuned(name), 1.0) for name in ("ours", "eole")})
    timed = run.training_speed(recipe, FakeData(), args)
    assert calls == [(name, threads, f"round{round_}-threads{threads}") for round_ in range(2)
                     for threads in ("1", "2") for name in ("ours", "eole")]
    tokens = 100 * recipe.batch_size * 400_000 / 29_000
    for name, best in (("ours", 2), ("eole", 1)):
        assert timed["median"][name]["train_threads"] == best
        for count in (1, 2):
            mine = [seconds[name, str(count)] + i % 2 for i, call in enumerate(calls, 1)
                    if call[:2] == (name, str(count))]
            assert timed["by_threads"][name][str(count)]["train_tokens_per_s"] == pytest.approx(
                statistics.median(tokens / s for s in mine))
        assert timed["median"][name]["train_tokens_per_s"] == timed["by_threads"][name][str(best)]["train_tokens_per_s"]
    # each figure at its own best count: without validations eole is fastest at 2 threads
    assert timed["median"]["eole"]["train_threads_without_validation"] == 2
    assert timed["median"]["eole"]["train_tokens_per_s_without_validation"] == (
        timed["by_threads"]["eole"]["2"]["train_tokens_per_s_without_validation"])
    assert timed["median"]["ours"]["train_threads_without_validation"] == 2


class FakeData:
    """What the quality phase reads of the prepared data besides the runs: its statistics and references."""

    target_lang = "de"

    def stats(self) -> dict:
        return {"train": {"sentences": 29_000, "longest_pieces": 58, "source_tokens": 400_000},
                "validation": {"sentences": 1014}, "test": {"sentences": 3}, "vocab_size": 6000}

    def lines(self, split: str, lang: str) -> list[str]:
        return REFERENCES


def test_quality_runs_two_at_a_time_and_keeps_what_ended(tmp_path, monkeypatch):
    """Two runs in flight at once, the slowest trainer started first, every run stored as it ends, and a failed
    run leaving the others stored (and named in the error)."""
    started, in_flight, most = [], [], []
    lock = threading.Lock()

    def fake_run(name, recipe, data, seed, args):
        with lock:
            started.append((name, seed))
            in_flight.append(name)
            most.append(len(in_flight))
        time.sleep(0.2)
        with lock:
            in_flight.remove(name)
        if (name, seed) == ("eole", 2):
            raise RuntimeError("eole failed: see its log")
        return row(name, seed), GOOD if name == "ours" else POOR

    monkeypatch.setattr(run, "quality_run", fake_run)
    monkeypatch.setattr(toolkits, "version", lambda name: {name: "1.0"})
    monkeypatch.setattr(run.report, "render", lambda results, out, docs: None)
    args = argparse.Namespace(seeds=[1, 2], toolkits=["ours", "joeynmt", "eole"], jobs=2, threads=[1], tuned=False,
                              decoding_batch_size=64, label="check", out=tmp_path, work=tmp_path / "work",
                              tunings=TUNINGS, rerun=False)
    with pytest.raises(RuntimeError, match=r"\('eole', 2\).*eole failed"):
        run.quality(RECIPE, FakeData(), args, "python -m benchmarks.peers.run")
    assert max(most) == 2 and started[0] == ("joeynmt", 1)
    stored = json.loads((tmp_path / "peers.json").read_text())
    assert sorted((r["toolkit"], r["seed"]) for r in stored["runs"]) == [
        ("eole", 1), ("joeynmt", 1), ("joeynmt", 2), ("ours", 1), ("ours", 2)]
    assert all("scores" in r for r in stored["runs"]) and stored["jobs"] == 2
    assert "not speed figures" in stored["machine"]
    # each row names the command, commit and threads that made it (several invocations fill one file)
    assert {(r["run_by"]["command"], r["run_by"]["commit"], r["run_by"]["threads"], r["run_by"]["jobs"])
            for r in stored["runs"]} == {("python -m benchmarks.peers.run", stored["provenance"]["commit"], 1, 2)}
    # run again: only what is not stored with the same configuration (the failed run) is tried; --rerun tries all
    started.clear()
    with pytest.raises(RuntimeError, match="eole failed"):
        run.quality(RECIPE, FakeData(), args, "python -m benchmarks.peers.run")
    assert started == [("eole", 2)]
    jobs = [("ours", 1), ("eole", 1)]
    assert run.left_to_run(stored, jobs, TUNINGS, rerun=True) == jobs
    moved = {**TUNINGS, "ours": (TUNINGS["ours"][0], 1.2)}  # another length penalty chosen: ours runs again
    assert run.left_to_run(stored, jobs, moved, rerun=False) == [("ours", 1)]


def test_the_tuned_seed_the_sweep_trained_is_decoded_not_trained_again(tmp_path, monkeypatch):
    """--tuned: the sweep's run of the chosen configuration and seed is decoded from its folder, with the sweep's
    training record; another seed is trained."""
    recipe = run.Recipe.main_job(29_000, 300)
    tuning = recipe.untuned("eole")
    (tmp_path / "work" / "sweep" / "eole" / tuning.name / "model").mkdir(parents=True)
    swept = {"runs": [{"toolkit": "eole", "configuration": tuning.name, "seed": 1,
                       "train": {"train_s": 5.0, "command": "eole train"}}]}
    trained, decoded = [], []
    monkeypatch.setattr(toolkits, "train", lambda name, recipe, data, folder, seed, tuning: trained.append(
        (folder.name, seed)) or {"train_s": 9.0, "command": "eole train again"})
    monkeypatch.setattr(toolkits, "decode", lambda name, recipe, data, folder, rows, size, seed, tag: decoded.append(
        (folder, recipe.length_penalty)) or (["x"], {"seconds": 1.0, "sentences": 1, "command": "eole predict"}))
    monkeypatch.setattr(run.peers_data, "mean_pieces", lambda tokenizer, texts: 1.0)

    class Data(FakeData):
        folder = tmp_path / "data"

        def tokenizer(self):
            return None

    args = argparse.Namespace(tunings={"eole": (tuning, 0.8)}, swept=swept, work=tmp_path / "work",
                              decoding_batch_size=64)
    first, _ = run.quality_run("eole", recipe, Data(), 1, args)
    assert not trained and decoded[0] == (tmp_path / "work" / "sweep" / "eole" / tuning.name, 0.8)
    assert first["train"]["train_s"] == 5.0 and first["train"]["trained_by"] == "benchmarks.peers.sweep"
    second, _ = run.quality_run("eole", recipe, Data(), 2, args)
    assert trained == [("seed2", 2)] and second["train"]["train_s"] == 9.0 and second["length_penalty"] == 0.8
