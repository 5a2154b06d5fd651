"""Every table of figures in README.md and docs/ is rendered from the results files by the key paths declared in
`tools.render.tables`: the committed text of each block must equal its rendering (`python -m tools.render` rewrites
them), so a hand-typed, changed or stale figure fails. The prose outside the blocks: test_prose.py; the labels:
test_labels.py."""

import json
import re
import statistics
import subprocess

import pytest

from tools.render import figures
from tools.render.figures import BLOCK, REPO_ROOT, Figure, OnGpu, Ratio, lookup, stale_blocks
from tools.render.tables import BENCH, DOCUMENTS, GRU


def text_of(name: str) -> str:
    return (REPO_ROOT / name).read_text()


def block(text: str, name: str) -> str:
    return next(m.group(3) for m in BLOCK.finditer(text) if m.group(2) == name)


def shallow() -> bool:
    return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--is-shallow-repository"], capture_output=True,
                          text=True).stdout.strip() != "false"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_figures_block_is_current(name):
    if name == "docs/results.md" and shallow():
        pytest.skip("docs/results.md lists every committed run: a shallow clone lacks that history")
    assert stale_blocks(text_of(name), DOCUMENTS[name], name) == [], (
        f"{name} has stale figures: run `python -m tools.render` and commit the result")


def results(file: str) -> dict:
    return json.loads(text_of(file))


def suite_row(suite: str, name: str) -> dict:
    return next(row for row in results(f"results/{suite}.json")["rows"] if row["name"] == name)


def main_job_gru() -> list[dict]:
    return [row for row in results("results/translation_bleu.json")["rows"] if row["cell_type"] == "gru"]


def changed_figures() -> list[tuple[str, str, str, str]]:
    """(document, block, a figure as rendered, a neighbouring figure of the same results that it must not be):
    each a mistake the test once let through."""
    ours = results(BENCH)["entries"]["translation"]["summary"][GRU]["custom_sorted_speedup_vs_beams_batched"]
    suite, en_zh = suite_row("translation", "Attention GRU"), suite_row("en_zh", "Attention GRU")
    seed = next(run for run in results("results/translation.json")["runs"] if run["name"] == "Attention GRU")
    gru = main_job_gru()
    mean, sd = statistics.fmean(row["test_bleu"] for row in gru), statistics.stdev(row["test_bleu"] for row in gru)
    one_seed = max((row["test_bleu"] for row in gru), key=lambda value: abs(value - mean))
    lstm = next(row for row in results("results/gpu/translation_bleu.json")["rows"] if row["cell_type"] == "lstm")
    return [
        ("README.md", "speed", f"{ours['ratio']}x (IQR", f"{ours['quartiles'][1]}x (IQR"),  # the upper quartile
        ("README.md", "quality", f"{suite['test_bleu']['mean']:.2f} ± {suite['test_bleu']['sd']:.2f}",
         f"{seed['test_bleu']:.2f} ± {suite['test_bleu']['sd']:.2f}"),  # one run's score for the mean over seeds
        ("README.md", "quality", f"{mean:.2f} ± {sd:.2f}", f"{one_seed:.2f} ± {sd:.2f}"),  # one seed's value
        ("README.md", "quality", f"{en_zh['test_bleu']['mean']:.2f} ± {en_zh['test_bleu']['sd']:.2f}",
         f"{en_zh['eval_bleu']['mean']:.2f} ± {en_zh['test_bleu']['sd']:.2f}"),  # the validation mean
        ("docs/results.md", "gpu-quality", f"attention LSTM | seeds not recorded | {lstm['epochs']:g} |",
         f"attention LSTM | seeds not recorded | {lstm['epochs'] + 2:g} |"),  # epochs it did not run
    ]


@pytest.mark.parametrize("document, block_name, old, new", changed_figures(),
                         ids=["upper-quartile", "one-run", "one-seed", "validation-mean", "epochs"])
def test_a_changed_figure_fails(document, block_name, old, new):
    text = text_of(document)
    assert old != new and old in block(text, block_name)
    changed = text.replace(old, new, 1)
    assert stale_blocks(changed, DOCUMENTS[document], document) == [block_name]


def test_a_changed_results_file_makes_the_text_stale(monkeypatch):
    data = json.loads(text_of(BENCH))
    data["entries"]["translation"]["summary"][GRU]["custom_sorted_speedup_vs_beams_batched"]["ratio"] += 1
    real = figures.load
    monkeypatch.setattr(figures, "load", lambda file: data if file == BENCH else real(file))
    assert "speed" in stale_blocks(text_of("README.md"), DOCUMENTS["README.md"], "README.md")


def test_a_block_without_a_table_or_a_table_without_a_block_is_refused():
    readme = text_of("README.md")
    with pytest.raises(ValueError, match=r"figures blocks \['typed'\] have no table"):
        stale_blocks(readme + "<!-- figures:typed -->\n| a |\n<!-- /figures -->\n", DOCUMENTS["README.md"], "x")
    with pytest.raises(ValueError, match=r"no figures block for the tables \['speed'\]"):
        stale_blocks(BLOCK.sub(lambda m: "" if m.group(2) == "speed" else m.group(0), readme),
                     DOCUMENTS["README.md"], "x")


def test_lookup_follows_named_keys_only():
    rows = {"rows": [{"seed": 42, "bleu": 1.0}, {"seed": 43, "bleu": 2.0}, {"seed": 43, "bleu": 3.0}]}
    assert lookup(rows, ("rows", {"seed": 42}, "bleu"), "f") == 1.0
    with pytest.raises(ValueError, match=r"f: 2 items match \{'seed': 43\}"):
        lookup(rows, ("rows", {"seed": 43}, "bleu"), "f")
    with pytest.raises(ValueError, match=r"f: no key 'chrf' at \['rows', \{'seed': 42\}\]"):
        lookup(rows, ("rows", {"seed": 42}, "chrf"), "f")


def test_every_committed_run_of_the_headline_entry_is_listed():
    """Each commit of results/benchmarks.json: its translation entry's medians stand in docs/results.md's history."""
    if shallow():
        pytest.skip("a shallow clone lacks the history")
    history = block(text_of("docs/results.md"), "headline-history")
    commits = subprocess.run(["git", "-C", str(REPO_ROOT), "log", "--format=%h", "--", BENCH], capture_output=True,
                             text=True, check=True).stdout.split()
    assert commits
    for commit in commits:
        data = json.loads(subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{commit}:{BENCH}"],
                                         capture_output=True, text=True, check=True).stdout)
        summary = data["entries"]["translation"]["summary"][GRU]
        medians = [value["ratio"] if isinstance(value, dict) else value for key, value in summary.items()
                   if key in ("custom_sorted_speedup_vs_beams_batched", "sorted_speedup_vs_beams_batched",
                              "sorted_speedup_vs_matched")]
        assert medians, commit
        for median in medians:
            assert re.search(rf"\| {re.escape(str(median))}x", history), (commit, median)


CPU_RUN = {"machine": {"git_commit": "cpu1234"}, "model": {"test_bleu": 29.36}, "speedup": {"ratio": 9.1,
                                                                                          "quartiles": [8.9, 9.5]}}


@pytest.mark.parametrize("gpu_run, expected", [
    ({**CPU_RUN, "machine": {"git_commit": "gpu5678", "gpu": "H100"}, "speedup": {"ratio": 30.5,
                                                                                  "quartiles": [29.0, 31.0]}},
     "30.5x (IQR 29.0-31.0) (H100, code `gpu5678`)"),
    ({**CPU_RUN, "provenance": {"commit": "abcdef0123456789", "device": "cuda: H200"}},  # provenance, full commit
     "9.1x (IQR 8.9-9.5) (cuda: H200, code `abcdef0`)"),
    ({**CPU_RUN, "machine": {"git_commit": "gpu5678"}, "model": {"test_bleu": 29.78}},  # another copy of the recipe
     "not measured since `cpu1234`"),
    ({**CPU_RUN, "machine": {}}, "not measured since `cpu1234`"),  # names no code
    ({**CPU_RUN, "machine": {"git_commit": "gpu5678"}, "model": {}}, "not measured since `cpu1234`"),  # no model
    (None, "not measured since `cpu1234`"),  # no GPU file
])
def test_a_gpu_cell_holds_only_a_run_of_the_same_model_naming_its_code(gpu_run, expected, tmp_path, monkeypatch):
    (tmp_path / "results" / "gpu").mkdir(parents=True)
    (tmp_path / "results" / "cpu.json").write_text(json.dumps({"entries": {"e": CPU_RUN}}))
    if gpu_run is not None:
        (tmp_path / "results" / "gpu" / "cpu.json").write_text(json.dumps({"entries": {"e": gpu_run}}))
    monkeypatch.setattr(figures, "REPO_ROOT", tmp_path)
    figures._read.cache_clear()
    cell = OnGpu(Ratio("results/cpu.json", ("entries", "e", "speedup")), "results/gpu/cpu.json", ("entries", "e"),
                 ("model", "test_bleu"))
    assert cell.text() == expected
    assert Figure("results/cpu.json", ("entries", "e", "model", "test_bleu")).text() == "29.36"
    figures._read.cache_clear()


def test_a_peer_the_speed_phase_did_not_run_says_so_in_the_readme(monkeypatch):
    """The peers' training tokens/s: a figure where the speed phase timed the toolkit, else which toolkits it ran."""
    from tools.render import tables

    timing = json.loads(text_of(tables.PEERS_TIMING_FILE))
    timed = list(timing["training"]["median"])
    real = tables.load
    monkeypatch.setattr(tables, "load", lambda file: timing if file == tables.PEERS_TIMING_FILE else real(file))
    name = timed[0]
    assert figures.cell_text(tables.peers_speed(name)).endswith(" (threads: "
                                                               f"{timing['training']['median'][name]['train_threads']})")
    del timing["training"]["median"][name]
    assert tables.peers_speed(name) == f"not measured yet (the speed phase ran {', '.join(timed[1:])})"
