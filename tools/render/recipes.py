"""The recipe check: a suite model whose recipe was searched on validation (``results/<suite>_recipe_search.json``,
`hf_seqmodels.comparison.recipe_search`) trains with the candidate that ranked first there: its fields over the base
the search started from, and its epochs as the suite's budget (paths in the bundled data folder compared as
``$HF_SEQMODELS_DATA``: the file's are written so)."""

import json
from pathlib import Path

from hf_seqmodels.comparison import SUITES
from hf_seqmodels.comparison.recipe_search import over_the_base, portable


def chosen(search: dict) -> tuple[dict, dict] | None:
    """The model fields and budget fields of the search's best candidate (the first: ranked best first, failed runs
    last); None when every candidate failed."""
    best = search["candidates"][0]
    if "error" in best:
        return None
    return over_the_base(search["base_fields"], best["over_the_base"])


def stale_recipes(results_dir: Path, suites: dict = SUITES) -> list[str]:
    """Each search of ``results_dir`` whose chosen recipe its suite's model (or budget) does not train with."""
    stale = []
    for path in sorted(results_dir.glob("*_recipe_search.json")):
        search = json.loads(path.read_text())
        where = f"results/{path.name}"
        picked = chosen(search)
        if picked is None:
            stale.append(f"{where}: every candidate failed; no recipe was chosen")
            continue
        model, budget = picked
        suite, name = suites[search["suite"]], search["base"]
        if portable(suite.models.get(name)) != model:
            stale.append(f"{where}: the {search['suite']} suite's {name} does not train with the recipe chosen on "
                         f"validation ({search['candidates'][0]['name']!r}): set its fields in "
                         f"hf_seqmodels/comparison/suites.py to {model}")
        for key, value in budget.items():
            if suite.cpu_budget.get(key) != value:
                stale.append(f"{where}: the {search['suite']} suite's budget has {key}={suite.cpu_budget.get(key)!r}, "
                             f"the recipe chosen on validation {value!r}")
    return stale
