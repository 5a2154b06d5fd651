"""The main job's card: the attention GRU that ``python -m hf_seqmodels.comparison.translation_bleu`` trains with
run_translation.py's defaults, seed 42 (its folder ``multi30k-attention-gru`` is the one the speed benchmarks time),
rendered from its row of ``results/translation_bleu.json`` (`main_job_run`) by `render_card`, as the other
reference cards are.

The card states the model from the row's ``config`` (the saved config.json) only; a row without one gets no card
(`NoMainJobCard` says why). Its mean ± sd is over the rows of the same cell whose recipe is the card's: the
``recipe`` each row records when translation_bleu writes it (`translation_bleu.recipe`: the same
``config_overrides``, the same run_translation.py arguments, the same number of epochs and updates, the time budget
only where it stopped a run), and, where both rows record them, the same sacreBLEU signatures and model
configuration. A row that records neither a recipe nor the command it was written by does not count.
"""

from hf_seqmodels.cards.results import IDENTITY, SUITE_ROW
from hf_seqmodels.comparison.aggregate import mean_sd
from hf_seqmodels.comparison.translation_bleu import FOLDER_SEED, recipe

MAIN_JOB_FILE = "results/translation_bleu.json"
MAIN_JOB = "multi30k-attention-gru"  # translation_bleu's folder of the GRU's seed 42: the card's name
CELL = "gru"
COMMAND = "python -m hf_seqmodels.comparison.translation_bleu"
SIGNATURES = ("bleu_signature", "chrf_signature")
MATCH = ("; a seed counts when its row has the same `config_overrides`, the same run_translation.py arguments in its "
         "`command` (those after `--`), the same epochs and updates, the same time budget where one stopped a run "
         "and, where both rows record them, the same sacreBLEU signatures and model configuration")


class NoMainJobCard(ValueError):
    """The main job's row cannot state its model: the message says why and what to run."""


def same_where_recorded(row: dict, other: dict) -> bool:
    """The sacreBLEU signatures and the model configuration's `IDENTITY` fields agree where both rows record them."""
    configs = [row.get("config") or row.get("model_config") or {}, other.get("config") or other.get("model_config")
               or {}]
    fields = [(row.get(key), other.get(key)) for key in SIGNATURES]
    fields += [(configs[0].get(key), configs[1].get(key)) for key in IDENTITY["attention_seq2seq"]]
    return all(mine == theirs for mine, theirs in fields if mine is not None and theirs is not None)


def main_job_run(rows: list[dict]) -> dict:
    """The main job's run as `render_card` reads it: seed 42's GRU row with ``config`` as its model's
    configuration, and the mean ± sd of its test scores over the seeds of its recipe under `SUITE_ROW`."""
    row = next((row for row in rows if row["cell_type"] == CELL and row.get("seed") == FOLDER_SEED), None)
    if row is None or not row.get("config"):
        state = "has no row" if row is None else "row records no `config` (the saved config.json)"
        raise NoMainJobCard(
            f"No card for the main job: {MAIN_JOB_FILE}'s seed-{FOLDER_SEED} {CELL.upper()} {state}, so nothing "
            "states its family, sizes and attention; train it again with "
            f"`{COMMAND} --cells {CELL}` (its rows record `config`).")
    own = recipe(row)
    same = [other for other in rows if other is row or (other["cell_type"] == CELL and own is not None
                                                        and recipe(other) == own and same_where_recorded(row, other))]
    others = [str(other["seed"]) for other in rows if other["cell_type"] == CELL and other not in same]
    match = MATCH + (f"; not counted: seed {', '.join(others)}" if others else "")
    summary = {"seeds": [other["seed"] for other in same], "trained_by": f"`{COMMAND}`", "match": match,
               **{key: mean_sd([other[key] for other in same]) for key in ("test_bleu", "test_chrf")}}
    return {"task": "translation", **row, "name": MAIN_JOB, "model_config": row["config"], SUITE_ROW: summary}

