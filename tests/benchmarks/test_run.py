"""The benchmark runner end to end on tiny sizes, so that it cannot rot. Times are never asserted: only that every
entry runs and writes the documented structure (each entry's own checks sit in its module's test file)."""

import importlib
import json
import subprocess

import pytest

from benchmarks.run import ENTRIES, main

from .conftest import ROOT, run_benchmarks


def test_entry_names_are_those_of_the_committed_results():
    # results/benchmarks.json and the model cards read the entries by these names.
    assert set(ENTRIES) == {"translation", "batch1_overhead", "incremental", "training", "scaling",
                            "transformer_vs_marian", "static_cache"}


def test_every_entry_module_has_run():
    for module in ENTRIES.values():
        assert callable(importlib.import_module(module).run), module


def test_provenance_and_entry_structure(smoke_run):
    out, data = smoke_run
    assert set(data) == {"entries"}  # no file-wide machine or commit: each entry has its own
    assert set(data["entries"]) == set(ENTRIES)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for name, entry in data["entries"].items():
        assert {"title", "sizes", "rows", "summary", "targets", "notes", "seconds", "device", "smoke", "provenance",
                "overrides", "history"} <= set(entry)
        assert entry["smoke"] is True and entry["device"] == "cpu"
        record = entry["provenance"]
        assert record["commit"] == head and record["argv"][1:4] == ["-m", "benchmarks.run", "--smoke"]
        assert record["seeds"] == [0] and record["split"] == importlib.import_module(ENTRIES[name]).SPLIT
        assert record["threads"] == 1 and record["device"].startswith("cpu: ")
        assert entry["rows"], name
        for item in entry["targets"]:
            assert {"name", "value", "target", "met"} <= set(item)
    markdown = (out / "benchmarks.md").read_text()
    for entry in data["entries"].values():
        assert entry["title"] in markdown


@pytest.mark.slow
def test_only_keeps_other_entries(smoke_run, tmp_path):
    _, data = smoke_run
    (tmp_path / "benchmarks.json").write_text(json.dumps(data))
    again = run_benchmarks(tmp_path, "--only", "incremental", "--set", "rounds=2")
    assert set(again["entries"]) == set(data["entries"])
    assert again["entries"]["incremental"]["ran_at"] >= data["entries"]["incremental"]["ran_at"]
    # each entry keeps the overrides and provenance it ran with
    assert again["entries"]["incremental"]["overrides"] == {"rounds": "2"}
    assert again["entries"]["incremental"]["provenance"]["argv"][-2:] == ["--set", "rounds=2"]
    assert again["entries"]["training"] == data["entries"]["training"]
    # the earlier run of the re-run entry goes to its history, with its figures over rounds
    earlier = data["entries"]["incremental"]
    [record] = again["entries"]["incremental"]["history"]
    assert record["ran_at"] == earlier["ran_at"] and record["commit"] == earlier["provenance"]["commit"]
    assert record["overrides"] == earlier["overrides"]
    assert set(record["figures"]) == set(earlier["summary"])
    for label, summary in earlier["summary"].items():
        kept = record["figures"][label]
        speedup = next(key for key in summary if key.startswith("cache_speedup_at_"))
        growth = next(key for key in summary if key.startswith("per_token_growth_"))
        assert kept[speedup] == summary[speedup] and kept[growth]["cached"] == summary[growth]["cached"]
        assert kept[growth]["generate_of_medians"] == summary[growth]["generate_of_medians"]
        assert "tokens_agree" not in kept  # figures only


def test_a_size_no_chosen_entry_has_is_refused(capsys):
    """``--set`` of a size the chosen entries lack (the translation entry's batch size is ``batch_sizes``) would be
    ignored: it is refused before anything runs, with the sizes they have."""
    with pytest.raises(SystemExit) as exit:
        main(["--smoke", "--only", "translation", "--set", "batch_size=64"])
    assert exit.value.code == 2
    message = capsys.readouterr().err
    assert "--set batch_size: no size of that name in translation" in message and "batch_sizes" in message


def test_help_lists_every_entry(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    assert exit.value.code == 0
    printed = capsys.readouterr().out
    assert "--smoke" in printed and all(name in printed for name in ENTRIES)
