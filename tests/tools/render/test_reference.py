"""``model_cards/``: the reference models' cards are current (rendered from the suites' results files), they are each
suite's best model of each of our families, and an attention variant's card names its own attention only."""

import json

from huggingface_hub import ModelCard

from tools.render.figures import REPO_ROOT
from tools.render.reference import MODEL_CARDS, reference_models, stale_reference_cards
from tools.render.tables import SUITES


def test_model_cards_are_current():
    assert stale_reference_cards() == [], "run `python -m tools.render` and commit model_cards/"


def test_reference_models_are_each_suites_best_per_family():
    chosen = set(reference_models())
    for suite in SUITES:
        data = json.loads((REPO_ROOT / "results" / f"{suite}.json").read_text())
        families = {}
        for run in data["runs"]:
            kind = (run.get("model_config") or {}).get("model_type", run.get("model_type"))
            # (results recorded before the Transformer's model_type was "transformer" say "vanilla_transformer")
            if kind in ("recurrent", "attention_seq2seq", "transformer", "vanilla_transformer"):
                families.setdefault(kind, set()).add(run["name"])
        for names in families.values():
            scores = {row["name"]: row[data["metric"]]["mean"] for row in data["rows"] if row["name"] in names}
            best = (min if "perplexity" in data["metric"] else max)(scores, key=scores.get)
            assert (suite, best) in chosen, (suite, best)
            assert not any((suite, name) in chosen for name in names - {best, "Bahdanau", "Luong"}), suite


def test_attention_variant_cards_name_their_own_attention_and_test_scores():
    for name, attention in (("translation-bahdanau.md", "Bahdanau (additive) attention"),
                            ("translation-luong.md", "with input feeding")):
        text = (MODEL_CARDS / name).read_text()
        assert attention in text and "luong_general" not in text
        card = ModelCard.load(MODEL_CARDS / name)
        splits = {(result.dataset_split, result.metric_type) for result in card.data.eval_results}
        assert {("test", "bleu"), ("test", "chrf")} <= splits
        assert all(result.metric_args["signature"].startswith("nrefs:1|") for result in card.data.eval_results)
