"""hf_seqmodels.comparison.recipe_search end to end on a tiny budget: two candidates of the WNUT-17 search, each its
own training run, ranked by what their runs scored on validation."""

import json
from pathlib import Path

import pytest

from hf_seqmodels.comparison import SUITES, RunOptions, recipe_search
from hf_seqmodels.comparison.runner import run_fields, slug
from hf_seqmodels.tasks.arguments import parse_dict

CANDIDATES = ["as in the suite", "30 epochs, spelling CNN, dropout 0.5"]


@pytest.mark.slow
def test_two_candidates_ranked_by_their_validation_score(data_dir, tmp_path):
    results = recipe_search.main(["wnut17", "--candidates", *CANDIDATES, "--jobs", "2", "--max_train_steps", "2",
                                  "--max_train_samples", "32", "--max_eval_samples", "16", "--results_dir",
                                  str(tmp_path / "results"), "--output_dir", str(tmp_path / "runs")])
    assert json.loads((tmp_path / "results" / "wnut17_recipe_search.json").read_text()) == results
    assert results["metric"] == "eval_seqeval_f1" and results["split"] == "validation"
    assert results["provenance"]["split"] == ["validation"]
    scores = {}
    for run in results["candidates"]:
        folder = Path(run["fields"]["output_dir"])
        assert folder.parent == tmp_path / "runs" / "wnut17_recipe_search"
        saved = json.loads((folder / "results.json").read_text())
        scores[run["name"]] = saved["eval_seqeval_f1"]
        assert run["eval_seqeval_f1"] == saved["eval_seqeval_f1"]
        assert not any(key.startswith("test_") for key in run)  # the search reads validation only
        config = json.loads((folder / "config.json").read_text())
        # the candidate's fields over the base's (its dropout, its spelling CNN), and its epochs
        fields = {**results["base_fields"], **run["over_the_base"]}
        assert run["fields"]["dropout"] == fields["dropout"]
        assert config.get("spelling_features", 0) == fields.get("spelling_features", 0)
        assert run["fields"]["num_train_epochs"] == fields.get("num_train_epochs",
                                                                SUITES["wnut17"].cpu_budget["num_train_epochs"])
        assert run["fields"]["crf_constrain_bio"] is True and run["fields"]["seed"] == 42
    assert sorted(scores) == sorted(CANDIDATES)
    assert [run["eval_seqeval_f1"] for run in results["candidates"]] == sorted(scores.values(), reverse=True)
    table = (tmp_path / "results" / "wnut17_recipe_search.md").read_text()
    assert "| 30 epochs, spelling CNN, dropout 0.5 | num_train_epochs=30, spelling_features=32, dropout=0.5 |" in table


def test_unknown_candidates_are_named():
    with pytest.raises(SystemExit, match="Unknown candidate"):
        recipe_search.main(["wnut17", "--candidates", "no such recipe"])


@pytest.mark.parametrize("search", recipe_search.SEARCHES)
def test_every_candidate_is_a_valid_run_of_its_suites_task(search, tmp_path):
    """Each candidate's fields, over the base's, parse as its task's arguments (a misspelt field or value is caught
    here, not an hour into a search)."""
    suite, options = recipe_search.candidate_suite(recipe_search.SEARCHES[search]), RunOptions(output_dir=tmp_path)
    for name in suite.models:
        fields = run_fields(suite, name, 42, recipe_search.budget(recipe_search.SEARCHES[search], name, options),
                            options, tmp_path / slug(name))
        parse_dict(suite.module, fields)


def test_candidates_keep_the_updates_the_suite_caps_its_model_at():
    search = recipe_search.Search(suite="en_zh", base="Transformer", candidates={"a": {}, "b": {"learning_rate": 1}})
    assert recipe_search.candidate_suite(search).cpu_steps == {"a": 900, "b": 900} == {
        name: SUITES["en_zh"].cpu_steps["Transformer"] for name in "ab"}


def test_results_name_the_data_folder_by_its_setting(monkeypatch):
    """A search's file reads the same on every machine: the bundled data folder is written $HF_SEQMODELS_DATA."""
    monkeypatch.setenv("HF_SEQMODELS_DATA", "/somewhere/data")
    fields = {"embeddings_from": "/somewhere/data/models/m", "list": ["/somewhere/data/x", "/elsewhere"], "steps": 3}
    assert recipe_search.portable(fields) == {"embeddings_from": "$HF_SEQMODELS_DATA/models/m",
                                              "list": ["$HF_SEQMODELS_DATA/x", "/elsewhere"], "steps": 3}
