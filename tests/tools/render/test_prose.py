"""The prose of README.md and of every document under docs/ quotes no measured figure outside the rendered blocks
(`tools.render.prose`): every number counts, with or without decimals, unless a rule of ``NOT_MEASURED`` says what
else it is; a figure typed into a copy of a document makes the check fail, naming the document."""

import shutil

import pytest

from tools.render.figures import REPO_ROOT, figures_outside_blocks, stale_prose
from tools.render.prose import NOT_MEASURED, prose_documents


def test_every_document_under_docs_and_the_readme_is_checked():
    documents = prose_documents(REPO_ROOT)
    assert documents[0] == "README.md"
    assert {"docs/gpu.md", "docs/peers.md", "docs/results.md", "docs/architecture.md"} <= set(documents)
    assert set(documents) == {"README.md"} | {path.relative_to(REPO_ROOT).as_posix()
                                             for path in (REPO_ROOT / "docs").rglob("*.md")}


@pytest.mark.parametrize("name", prose_documents(REPO_ROOT))
def test_prose_quotes_no_measured_figure(name):
    assert figures_outside_blocks((REPO_ROOT / name).read_text()) == []


@pytest.fixture
def documents(tmp_path):
    """A copy of README.md and docs/ to type figures into."""
    shutil.copy(REPO_ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO_ROOT / "docs", tmp_path / "docs")
    return tmp_path


@pytest.mark.parametrize("sentence, figure", [
    ("the BLEU it reports is comparable (35.1 after the 3 epochs).", "35.1"),  # one decimal
    ("The GRU scores 35 BLEU on test2016.", "35"),  # none
    ("Our loop ran 9.131x as fast.", "9.131x"),
    ("About 85 s a pass.", "85"),
])
def test_a_figure_typed_into_a_document_fails_the_check(documents, sentence, figure):
    assert stale_prose(documents) == []
    gpu = documents / "docs" / "gpu.md"
    gpu.write_text(gpu.read_text() + f"\n{sentence}\n")
    assert stale_prose(documents) == [f"docs/gpu.md: the prose quotes the figure {figure!r} (render it in a block "
                                      "from its results entry, or drop it)"]


def test_a_figure_typed_into_the_readme_fails_the_check(documents):
    readme = documents / "README.md"
    readme.write_text(readme.read_text().replace("## Results\n", "## Results\n\nThe main job scores 35.4.\n"))
    assert [line.split(":")[0] for line in stale_prose(documents)] == ["README.md"]


def test_the_prose_check_catches_figures_with_or_without_decimals():
    assert figures_outside_blocks("Our loop ran 9.131x as fast (189.67 sentences/s), 8x the goal; BLEU 35, "
                                  "35.1 after 3 epochs, 4.7M parameters, 5% faster.") == [
        "9.131x", "189.67", "8x", "35", "35.1", "4.7M", "5%"]


@pytest.mark.parametrize("text", [
    "`9.131x` in code, and\n```\n9.131x\n```\n",  # code
    "run it:\n\n    python -m x --seed 35\n",  # indented code
    "transformers 5.24, Python 3.10, torch<2.3, JoeyNMT 2.3.0",  # versions
    "on 2026-11-28, as Vaswani et al. 2017 and Zaremba et al. (2014: small) did",  # dates
    "ids 0-3, lines 700-745, batches 16-256.",  # ranges of whole numbers, one ending a sentence
    "SST-2, WNUT-17, a beam-5 step, a 2-core machine",  # names
    "issue 53, #2741, exit status 124, ISO 8601, seeds 42, 43 and 44, update 100",  # identifiers
    "1. parse the options",  # a list item
    "beam 5, batches of 32, length penalty 1.0, dropout 0.1, 2 CPU cores, 3 epochs, 1,000 test2016 sentences",
    "N(0, 0.1), U(-0.1, 0.1), a 6,000 x 256 table",  # a formula, a shape
    "2 failed, 1016 passed, 1178 skipped, 5771 subtests passed",  # a test run's counts
    "| stage | time limit |\n|---|---|\n| a | 110 s |\n",  # a table cell read after its column's header
    "see [the file](results/x2.json) or https://example.org/v35.1",  # link targets
])
def test_numbers_a_rule_says_are_not_measured_pass(text):
    assert figures_outside_blocks(text) == []


@pytest.mark.parametrize("text, figure", [
    ("a ratio of 1.5 would need", "1.5"),  # a decimal after no setting's name
    ("the installed 5.24 library", "5.24"),  # a version whose program is not named
    ("2 to 5.5 minutes", "2"),  # a measured range is no range of whole numbers
    ("between 16-256.5 s", "16"),  # nor one whose end has decimals
    ("| stage | took |\n|---|---|\n| a | 110 s |\n", "110"),  # a column that measures
    ("1.6 epochs in 9 minutes", "1.6"),  # epochs a run reached, not given
])
def test_a_number_near_a_rule_is_still_a_figure(text, figure):
    assert figure in figures_outside_blocks(text)


def test_every_rule_gives_its_reason():
    assert all(rule.name and rule.pattern and rule.reason for rule in NOT_MEASURED)
