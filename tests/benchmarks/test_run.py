"""The benchmark runner end to end on tiny sizes, so that it cannot rot. Times are never asserted: only that every
entry runs and writes the documented structure (each entry's own checks sit in its module's test file)."""

import importlib
import json

import pytest

from benchmarks.run import ENTRIES, main

from .conftest import run_benchmarks


def test_entry_names_are_those_of_the_committed_results():
    # results/benchmarks.json and the model cards read the entries by these names.
    assert set(ENTRIES) == {"translation", "batch1_overhead", "incremental", "training", "scaling",
                            "transformer_vs_marian", "static_cache"}


def test_every_entry_module_has_run():
    for module in ENTRIES.values():
        assert callable(importlib.import_module(module).run), module


def test_machine_and_entry_structure(smoke_run):
    out, data = smoke_run
    assert {"cpu", "cpu_count", "torch_threads", "gpu", "torch", "transformers"} <= set(data["machine"])
    assert set(data["entries"]) == set(ENTRIES)
    for name, entry in data["entries"].items():
        assert {"title", "sizes", "rows", "summary", "targets", "notes", "seconds", "device", "smoke", "machine",
                "overrides"} <= set(entry)
        assert entry["smoke"] is True and entry["device"] == "cpu"
        assert entry["rows"], name
        for item in entry["targets"]:
            assert {"name", "value", "target", "met"} <= set(item)
    markdown = (out / "benchmarks.md").read_text()
    for entry in data["entries"].values():
        assert entry["title"] in markdown


def test_only_keeps_other_entries(smoke_run, tmp_path):
    _, data = smoke_run
    (tmp_path / "benchmarks.json").write_text(json.dumps(data))
    again = run_benchmarks(tmp_path, "--only", "incremental", "--set", "rounds=2")
    assert set(again["entries"]) == set(data["entries"])
    assert again["entries"]["incremental"]["ran_at"] >= data["entries"]["incremental"]["ran_at"]
    # each entry keeps the overrides it ran with, whatever the file's top level says of the last run
    assert again["overrides"] == again["entries"]["incremental"]["overrides"] == {"rounds": "2"}
    assert again["entries"]["training"]["overrides"] == data["overrides"]


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
