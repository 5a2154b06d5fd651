"""The cards of the reference models this repository trains, in the top-level ``model_cards/``: for each
``compare.py`` suite, its best model of each of our families (by the suite's metric, mean over its seeds), plus the
translation suite's other attention variants; each the card of the model's first seed, rendered from the suite's
results file by `render_card` with the checkout's benchmarks; the main job's card (`main_job`), from its row of
``results/translation_bleu.json``, where that row states its model; and an index (``README.md``).
"""

import re

from hf_seqmodels.cards import render_card
from hf_seqmodels.cards.results import (
    SUITE_ROW,
    TRANSFORMER_MODEL_TYPES,
    format_metric,
    load_benchmarks,
    load_run,
)

from .figures import REPO_ROOT, load
from .main_job import CELL, COMMAND, MAIN_JOB, MAIN_JOB_FILE, NoMainJobCard, main_job_run
from .tables import SUITES

MODEL_CARDS = REPO_ROOT / "model_cards"
# model_type -> family; others (BERT, Marian) are not ours
FAMILIES = {"recurrent": "recurrent", "attention_seq2seq": "attention encoder-decoder",
            **dict.fromkeys(TRANSFORMER_MODEL_TYPES, "Transformer")}
EXTRA = (("translation", "Bahdanau"), ("translation", "Luong"))  # the main job's family with its other attentions


def family_of(run: dict) -> str | None:
    """Our family of a suite's run (its config's model_type), None for a model of another library."""
    return FAMILIES.get((run.get("model_config") or {}).get("model_type", run.get("model_type")))


def reference_models() -> list[tuple[str, str]]:
    """(suite, model name) of every reference model, in `SUITES` order."""
    chosen = []
    for suite in SUITES:
        data = load(f"results/{suite}.json")
        family = {run["name"]: family_of(run) for run in data["runs"]}
        sign = 1 if "perplexity" in data["metric"] else -1  # lower perplexity is better; higher else
        best: dict[str, tuple[float, str]] = {}
        for row in data["rows"]:
            if family[row["name"]] and row.get(data["metric"]):
                score = (sign * row[data["metric"]]["mean"], row["name"])
                best[family[row["name"]]] = min(best.get(family[row["name"]], score), score)
        chosen += [(suite, name) for _, name in sorted(best.values(), key=lambda item: item[1])]
    return chosen + [extra for extra in EXTRA if extra not in chosen]


def task_name(suite: str, run: dict) -> str:
    """What a card's name says the model does: the suite's name, or for a tagger of per-word categories (not BIO
    entities) the tag set it predicts, its label column (the ``ner`` suite tags UPOS: its cards are ``upos-*``)."""
    tags = (run.get("arguments") or {}).get("label_column_name")
    if run.get("task") == "token-classification" and run.get("tag_scheme") != "BIO" and tags:
        return tags
    return suite


def slug(task: str, name: str) -> str:
    return f"{task}-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def reference_cards() -> dict[str, str]:
    """File name in ``model_cards/`` -> its text: every reference model's card and the index."""
    benchmarks = load_benchmarks()
    cards, index = {}, []
    for suite, name in reference_models():
        file = f"results/{suite}.json"
        run = load_run(REPO_ROOT / file, name)
        card_name = slug(task_name(suite, run), name)
        if f"{card_name}.md" in cards:
            raise ValueError(f"Two reference models would share the card {card_name}.md (the second from "
                             f"`compare.py {suite}`, {name!r}): name one otherwise in tools/render/reference.py.")
        cards[f"{card_name}.md"] = str(render_card(run, model_name=card_name, benchmarks=benchmarks)) + "\n"
        metric = load(file)["metric"]
        row = run["suite_row"][metric]
        percent = metric.endswith(("accuracy", "f1"))
        index.append(f"| [{card_name}]({card_name}.md) | `compare.py {suite}` | {name} | {family_of(run)} | "
                     f"{metric} {format_metric(row['mean'], percent)} ± {format_metric(row['sd'], percent)} "
                     f"(n={row['n']}) | {run['seed']} |")
    try:
        run = main_job_run(load(MAIN_JOB_FILE)["rows"])
        cards[f"{MAIN_JOB}.md"] = str(render_card(run, model_name=MAIN_JOB, benchmarks=benchmarks)) + "\n"
        row = run[SUITE_ROW]["test_bleu"]
        main_job = (f"The main job's card, [{MAIN_JOB}]({MAIN_JOB}.md), is rendered from its own row of "
                    f"`{MAIN_JOB_FILE}` (the {CELL.upper()} of seed {run['seed']}, `{COMMAND}`): test_bleu "
                    f"{format_metric(row['mean'], False)}"
                    + ("" if row["sd"] is None else f" ± {format_metric(row['sd'], False)}")
                    + f" (n={row['n']}) over the seeds of its recipe ({', '.join(map(str, run[SUITE_ROW]['seeds']))}).")
    except NoMainJobCard as error:
        main_job = str(error)
    cards["README.md"] = (
        "# Reference model cards\n\nRendered by `python -m tools.render` from the results files "
        "(`tools/render/reference.py`, `main_job.py`; `tests/tools/render/test_reference.py` fails when one is "
        "stale): the main job's model, each suite's best model of each of our families, and the translation suite's "
        "other attention variants. Each suite card is the model's first seed; the suite's mean ± sd over its seeds "
        f"stands in the card and below.\n\n{main_job}\n\n"
        "| card | suite | model | family | test score over the seeds | seed of the card |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(index) + "\n")
    return cards


def render_reference_cards() -> list[str]:
    """Write `reference_cards` into ``model_cards/`` (removing any other file there); returns what changed."""
    MODEL_CARDS.mkdir(exist_ok=True)
    cards, changed = reference_cards(), []
    for path in MODEL_CARDS.iterdir():
        if path.name not in cards:
            path.unlink()
            changed.append(f"model_cards/{path.name}")
    for name, text in cards.items():
        path = MODEL_CARDS / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(f"model_cards/{name}")
    return changed


def stale_reference_cards() -> list[str]:
    """The files of ``model_cards/`` that differ from their rendering, are missing, or should not be there."""
    cards = reference_cards()
    present = {path.name for path in MODEL_CARDS.iterdir()} if MODEL_CARDS.is_dir() else set()
    stale = [f"model_cards/{name}" for name, text in cards.items()
             if name not in present or (MODEL_CARDS / name).read_text() != text]
    return stale + [f"model_cards/{name} (not a reference card)" for name in sorted(present - set(cards))]
