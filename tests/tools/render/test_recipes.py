"""The recipe check (tools/render/recipes.py): a suite model trains with the recipe its search chose on validation."""

import dataclasses
import json

from hf_seqmodels.comparison import SUITES
from tools.render.figures import REPO_ROOT
from tools.render.recipes import stale_recipes


def search_file(folder, suite: str, base: str, ranked: list[tuple[str, dict]]) -> None:
    """A results/<suite>_recipe_search.json whose candidates (name, fields over the base) rank in this order."""
    candidates = [{"name": name, "over_the_base": over, "eval_score": 1.0 - i / 10}
                  for i, (name, over) in enumerate(ranked)]
    (folder / f"{suite}_recipe_search.json").write_text(json.dumps(
        {"suite": suite, "base": base, "base_fields": SUITES[suite].models[base], "candidates": candidates}))


def test_the_committed_searches_are_the_suites_recipes():
    assert stale_recipes(REPO_ROOT / "results") == [], "set the suite's model to the chosen recipe (suites.py)"


def test_a_suite_model_other_than_the_chosen_recipe_is_stale(tmp_path):
    search_file(tmp_path, "wnut17", "BiLSTM-CRF", [("as in the suite", {}), ("wider", {"hidden_size": 512})])
    assert stale_recipes(tmp_path) == []
    search_file(tmp_path, "wnut17", "BiLSTM-CRF", [("wider", {"hidden_size": 512}), ("as in the suite", {})])
    [stale] = stale_recipes(tmp_path)
    assert "results/wnut17_recipe_search.json" in stale and "'wider'" in stale and "'hidden_size': 512" in stale
    # the suite that trains it is current
    model = {**SUITES["wnut17"].models["BiLSTM-CRF"], "hidden_size": 512}
    suites = {"wnut17": dataclasses.replace(SUITES["wnut17"], models={"BiLSTM-CRF": model})}
    assert stale_recipes(tmp_path, suites) == []


def test_the_chosen_epochs_are_the_suites_budget(tmp_path):
    suite = SUITES["wnut17"]
    epochs = suite.cpu_budget["num_train_epochs"]
    search_file(tmp_path, "wnut17", "BiLSTM-CRF", [("longer", {"num_train_epochs": epochs + 5}), ("as is", {})])
    [stale] = stale_recipes(tmp_path)
    assert f"num_train_epochs={epochs}," in stale and stale.endswith(f" {epochs + 5}")
    suites = {"wnut17": dataclasses.replace(suite, cpu_budget={**suite.cpu_budget, "num_train_epochs": epochs + 5})}
    assert stale_recipes(tmp_path, suites) == []


def test_a_search_whose_candidates_all_failed_chose_nothing(tmp_path):
    (tmp_path / "upos_recipe_search.json").write_text(json.dumps(
        {"suite": "upos", "base": "BiLSTM", "base_fields": {}, "candidates": [{"name": "a", "error": "exit code 1"}]}))
    assert stale_recipes(tmp_path) == ["results/upos_recipe_search.json: every candidate failed; no recipe was chosen"]
