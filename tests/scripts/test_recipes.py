"""The Recipes of docs/training.md, each the command `python scripts/compare.py <suite>` of a walkthrough of the
course notes, run here on the bundled data in smoke size (two steps, a few rows, one seed): every model of the suite
trains, is scored on the test split and lands in the suite's results file with what the run used."""

import json

import pytest
from test_run_classification_ner import script  # tests/scripts is on sys.path

from hf_seqmodels.comparison import SUITES
from hf_seqmodels.data.paths import REPO_ROOT

SMOKE = ["--max_train_steps", "2", "--max_train_samples", "48", "--max_eval_samples", "16", "--jobs", "2", "--seeds",
         "1"]


def recipes() -> list[str]:
    """The suites the Recipes section of docs/training.md runs, read from that file itself."""
    training = (REPO_ROOT / "docs" / "training.md").read_text()
    section = training.split("## Recipes", 1)[1].split("\n## ", 1)[0]
    return [line.split("scripts/compare.py ", 1)[1].split()[0] for line in section.splitlines()
            if line.startswith("python scripts/compare.py ")]


def test_the_docs_list_the_walkthroughs():
    assert recipes() == ["en_zh", "zh_en", "wnut17", "upos", "sst2_word_vectors"]


@pytest.mark.parametrize("suite", recipes())
@pytest.mark.slow
def test_recipe_runs_in_smoke_size(suite, tmp_path):
    compare = script("compare")
    results_dir = tmp_path / "results"
    [report] = compare.main([suite, *SMOKE, "--results_dir", str(results_dir), "--output_dir",
                             str(tmp_path / "outputs")])
    saved = json.loads((results_dir / f"{suite}.json").read_text())
    definition = SUITES[suite]
    assert [run["name"] for run in saved["runs"]] == list(definition.models)
    for run in saved["runs"]:
        assert "error" not in run, run.get("log_tail")
        assert definition.metric in run and run["steps"] == 2
        assert run["arguments"]["dataset_name"] == definition.common["dataset_name"]
    assert (results_dir / f"{suite}.md").is_file() and (results_dir / f"{suite}.png").is_file()
    if definition.task == "translation":
        target = definition.common["target_lang"]
        for run in saved["runs"]:
            assert f"|tok:{'zh' if target == 'zh' else '13a'}|" in run["bleu_signature"]
            assert len((results_dir / run["hypotheses"]).read_text().splitlines()) == 16
        assert list(saved["paired_bootstrap"]["1"]["systems"]) == list(definition.models)
    if definition.word_vectors is not None:
        vectors = report["word_vectors"]["file"]
        with_vectors = [run for run in saved["runs"] if run["arguments"].get("word_vectors")]
        assert with_vectors and all(run["arguments"]["word_vectors"] == vectors for run in with_vectors)
        assert [run["arguments"].get("freeze_embeddings") for run in with_vectors] == [True, False]
