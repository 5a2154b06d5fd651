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


def reference_card_files() -> list:
    return sorted(path for path in MODEL_CARDS.glob("*.md") if path.name != "README.md")


def test_a_taggers_card_is_named_after_the_tags_it_predicts():
    """The `ner` suite tags UPOS: its cards are named upos-*, as the upos suite's are; WNUT-17's tag entities."""
    for path in reference_card_files():
        card = ModelCard.load(path)
        if card.data.pipeline_tag == "token-classification":
            dataset = card.data.eval_results[0].dataset_name
            expected = {"UD English-EWT (UPOS)": "upos-", "WNUT-17 emerging entities": "wnut17-"}[dataset]
            assert path.name.startswith(expected), path.name
    assert not list(MODEL_CARDS.glob("ner-*"))


def test_each_card_says_the_splits_its_scores_are_on():
    for path in reference_card_files():
        card = ModelCard.load(path)
        splits = sorted({result.dataset_split for result in card.data.eval_results}, key=["validation", "test"].index)
        words = " and ".join(splits) + (" splits" if len(splits) > 1 else " split")
        assert f"with its evaluation on the {words}." in card.text, path.name


def test_no_card_of_research_data_says_apache():
    for path in reference_card_files():
        card = ModelCard.load(path)
        if card.data.datasets[0] in ("bentrevett/multi30k", "glue", "ptb_text_only"):
            assert card.data.license == "other" and card.data.license_name.endswith("research-use"), path.name
