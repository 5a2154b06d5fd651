"""The labels of the rendered tables are read from the results entries they render (`tools.render.labels`): a
results file whose seeds or split change makes ``python -m tools.render --check`` fail, naming the document and the
file; an entry that does not record a label says so in the table."""

import copy
import json

import pytest

from tools.render import figures
from tools.render.figures import REPO_ROOT, stale_documents
from tools.render.labels import BACKFILLED, BACKFILLED_LABEL, Code, Device, Entries, Seeds, Split
from tools.render import tables
from tools.render.tables import DOCUMENTS

SUITE = "results/translation.json"
MAIN_JOB = "results/translation_bleu.json"


@pytest.fixture
def results(monkeypatch):
    """Replace a results file, as every renderer reads it, by a changed copy: ``results(file, change)``."""
    real = figures._read

    def replace(file: str, change) -> dict:
        data = copy.deepcopy(real(REPO_ROOT / file))
        change(data)
        monkeypatch.setattr(figures, "_read", lambda path: data if path == REPO_ROOT / file else real(path))
        return data
    return replace


def check() -> list[str]:
    return stale_documents(DOCUMENTS)


def provenances(data: dict) -> list[dict]:
    """A suite entry's own provenance and each of its runs'."""
    return [data["provenance"]] + [run["provenance"] for run in data["runs"]]


def as_backfilled(data: dict) -> None:
    """A suite's entry as one written before provenance was recorded: the file's own provenance and every run's
    backfilled from git history (no commit, no device of the process that started the runs)."""
    data["provenance"].pop("device", None)
    for provenance in provenances(data):
        provenance.update(recorded=BACKFILLED, commit=None, tree_clean=None)


def test_the_committed_labels_are_current():
    assert [line for line in check() if "README.md" in line or "docs/results.md" in line] == []


def set_seeds(data: dict, seeds: list) -> None:
    data["seeds"] = data["provenance"]["seeds"] = seeds


@pytest.mark.parametrize("change, words", [
    (lambda data: set_seeds(data, [1, 2, 3]), "results/translation.json: 1, 2, 3"),  # a suite re-run on other seeds
    (lambda data: data["provenance"].update(seeds=[1, 2, 3]),  # its provenance and its own seeds disagree
     "its provenance records the seeds [1, 2, 3] but the entry itself [42, 43, 44]"),
], ids=["suite-seeds", "provenance-seeds"])
def test_a_changed_seed_list_fails_the_check(results, change, words):
    results(SUITE, change)
    stale = check()
    readme = [line for line in stale if line.startswith("README.md: ")]
    assert len(readme) == 1 and SUITE in readme[0] and words in readme[0], stale
    assert "seeds" in readme[0]


def reseed(data: dict) -> None:
    """The main job's GRU of seed 43 recorded as seed 7, as a run of that seed would record it."""
    row = next(row for row in data["rows"] if (row["cell_type"], row["seed"]) == ("gru", 43))
    row["seed"], row["provenance"]["seeds"] = 7, [7]


def test_a_changed_seed_of_a_main_job_row_fails_the_check(results):
    results(MAIN_JOB, reseed)
    readme = [line for line in check() if line.startswith("README.md: ")]
    assert readme and "results/translation_bleu.json {'cell_type': 'gru'}: 42, 7, 44" in readme[0]


def test_the_suites_table_shows_a_changed_seed_list(results):
    results(SUITE, lambda data: set_seeds(data, [1, 2, 3]))
    assert "docs/results.md: suite-budgets" in check()


@pytest.mark.parametrize("splits", [["validation"], ["train", "validation"]])
def test_a_changed_split_fails_the_check(results, splits):
    results(SUITE, lambda data: data["provenance"].update(split=splits))
    stale = check()
    readme = [line for line in stale if line.startswith("README.md: ")]
    assert readme == [f"README.md: {SUITE}: its figure test_bleu is a test score, but the entry records the splits "
                      f"{splits}"], stale
    assert any(line.startswith("docs/results.md: ") and SUITE in line for line in stale), stale


def test_the_split_a_model_was_chosen_on_is_the_entrys(results):
    results(SUITE, lambda data: data["provenance"].update(split=["test", "dev"]))
    assert Split(Entries(SUITE), "test_bleu", chosen_on=True).text() == "dev"
    assert "docs/results.md: suite-budgets" in check()


def test_a_label_an_entry_lacks_is_said_not_invented(results):
    def forget(data):
        del data["seeds"], data["provenance"]["seeds"], data["provenance"]["split"]
        data["provenance"].pop("device", None)
        for run in data["runs"]:
            run.pop("device"), run["provenance"].pop("device")
    results(SUITE, forget)
    assert Seeds(Entries(SUITE)).text() == "seeds not recorded"
    assert Split(Entries(SUITE), "test_bleu").text() == "split not recorded"
    assert Device(Entries(SUITE)).text() == "device not recorded, 2 runs at once"


def test_the_device_and_its_threads_are_the_entrys(results):
    results(SUITE, lambda data: [run["provenance"].update(device="cpu: Other (4 threads)") for run in data["runs"]])
    assert Device(Entries(SUITE)).text() == "cpu: Other (4 threads), 2 runs at once"
    assert any(line.startswith("README.md: ") for line in check())


def test_the_loop_row_names_the_model_it_timed(results):
    model = json.loads((REPO_ROOT / "results" / "decoding_loop.json").read_text())["model"]
    readme = (REPO_ROOT / "README.md").read_text()
    assert f"timing `{model['model_dir']}` (test BLEU {model['test_bleu']:.2f})" in readme
    results("results/decoding_loop.json", lambda data: data["model"].update(model_dir="outputs/another-model"))
    assert "README.md: speed" in check()


def test_the_code_a_figure_came_from_is_the_entrys(results):
    """README's code column: a suite run again on today's code names its commit (the check fails until README says
    so); entries written before provenance was recorded say they are backfilled; a mix is counted."""
    results(SUITE, as_backfilled)
    assert Code(Entries(SUITE)).text() == BACKFILLED_LABEL

    def rerun(data):
        as_backfilled(data)
        data["provenance"].update(recorded="at run time", commit="0123456789abcdef", tree_clean=True)
    results(SUITE, rerun)
    assert Code(Entries(SUITE)).text() == "`0123456`"
    assert any(line.startswith("README.md: ") for line in check())

    def mixed(data):  # the first row recorded at run time, the others backfilled
        data["rows"][0]["provenance"].update(recorded="at run time", commit="0123456789abcdef", tree_clean=True)
        for row in data["rows"][1:]:
            row["provenance"].update(recorded=BACKFILLED, commit=None, tree_clean=None)
    rows = len(results(MAIN_JOB, mixed)["rows"])
    main_job = Code(Entries(MAIN_JOB, ("rows",), {})).text()
    assert main_job == f"`0123456` (1 of {rows}) / {BACKFILLED_LABEL} ({rows - 1} of {rows})"


def test_a_run_from_a_changed_tree_says_so(results):
    def changed(data):
        as_backfilled(data)
        for run in data["runs"]:
            run["provenance"].update(recorded="at run time", commit="fedcba9876543210", tree_clean=False)
    results(SUITE, changed)
    assert Code(Entries(SUITE)).text() == "`fedcba9` (changed tree)"


def test_docs_list_the_files_still_holding_backfilled_entries(results):
    """docs/results.md's list counts, per results file, the provenances that are backfilled (each run's and the
    file's own): a suite re-run on today's code leaves the list, and the check fails until the docs say so."""
    runs = len(results(SUITE, as_backfilled)["runs"])
    counted = {row[0]: (int(row[1]), int(row[2])) for row in tables.backfilled_rows()}
    assert counted[f"`{SUITE}`"] == (1 + runs, 1 + runs)
    assert "docs/results.md: backfilled" in check()

    def rerun(data):
        for provenance in provenances(data):
            provenance.update(recorded="at run time", commit="0123456789abcdef")
    results(SUITE, rerun)
    assert f"`{SUITE}`" not in {row[0] for row in tables.backfilled_rows()}
