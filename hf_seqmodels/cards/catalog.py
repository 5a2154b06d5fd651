"""What a card knows beyond the results file: each task's Auto class and scores, the bundled data sets and the
pretrained checkpoints, declared once."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Metric:
    """One score a card reports.

    Args:
        key: its key in the results file (``"eval_accuracy"``).
        hub_id: its metric type in the model-index (``"accuracy"``).
        name: its name in the card's table (``"Accuracy"``).
        percent: whether it is a fraction, shown in percent (`format_metric`).
        higher_is_better: whether a higher score is a better model (a lower perplexity is).
    """

    key: str
    hub_id: str
    name: str
    percent: bool
    higher_is_better: bool = True


@dataclass(frozen=True)
class CardTask:
    """A task a card can be rendered for: the Auto class its models load with, and the scores it reports."""

    auto_class: str
    metrics: tuple[Metric, ...]


TASKS = {
    "text-classification": CardTask("AutoModelForSequenceClassification", (
        Metric("eval_accuracy", "accuracy", "Accuracy", True), Metric("eval_f1", "f1", "Macro-F1", True))),
    "token-classification": CardTask("AutoModelForTokenClassification", (
        Metric("eval_accuracy", "accuracy", "Token accuracy", True), Metric("eval_f1", "f1", "Macro-F1", True),
        Metric("eval_seqeval_f1", "seqeval", "Entity F1 (seqeval)", True))),
    "text-generation": CardTask("AutoModelForCausalLM", (
        Metric("eval_perplexity", "perplexity", "Perplexity", False, higher_is_better=False),)),
    "translation": CardTask("AutoModelForSeq2SeqLM", (
        Metric("eval_bleu", "bleu", "BLEU", False), Metric("eval_chrf", "chrf", "chrF", False))),
}

# Bundled data set -> its Hub identity (for the model-index), a readable name and what the card says about it
# (shared/data/README.md says what each is, where it comes from and its license). ``split_sets``: a split scored on
# another Hub data set than the others (SST-2's labelled test sentences are not GLUE's, whose test has no labels).
# ``terms``: for data that names no license, the card's license "other", its name and link, and what it allows.
DATASETS = {
    "sst2": {
        "hub_id": "glue", "config": "sst2", "name": "SST-2 (GLUE)", "language": "en",
        "about": "Stanford Sentiment Treebank, binary (Socher et al., 2013), as packaged in GLUE: 67,349 training "
                 "phrases and sentences from Rotten Tomatoes movie reviews, lowercased and PTB-tokenized; validation: "
                 "GLUE's 872 labelled dev sentences; test: GLUE's 1,821 test sentences (unlabelled in GLUE) with the "
                 "gold labels of the standard binary SST test set (the data of Kim, 2014), the same sentences.",
        "split_sets": {"test": {"hub_id": "SetFit/sst2", "config": None,
                                "name": "SST-2, the binary SST test set (Socher et al., 2013; Kim, 2014)"}},
        "license": None,
        "terms": {"license_name": "sst2-research-use", "license_link": "https://nlp.stanford.edu/sentiment/",
                  "note": "SST-2 states no license (neither the Stanford Sentiment Treebank nor GLUE gives one); its "
                          "sentences are Rotten Tomatoes review snippets (Pang and Lee) published for research. "
                          "Use this model, trained on them, for research only."},
        "limitations": ["English movie-review snippets only, lowercased and PTB-tokenized as in GLUE; other domains, "
                        "casing or tokenization will lower accuracy.",
                        "Binary sentiment only: no neutral class; sarcasm, negation scope and mixed opinions remain "
                        "hard.",
                        "The reviews carry the opinions and biases of their writers."],
    },
    "ud_english_ewt": {
        "hub_id": "universal_dependencies", "config": "en_ewt", "name": "UD English-EWT (UPOS)", "language": "en",
        "about": "Universal Dependencies English Web Treebank (weblogs, newsgroups, emails, reviews, Yahoo! Answers): "
                 "12,544 training sentences (204,577 words) tagged with the 17 universal POS tags; validation: the "
                 "2,001 dev sentences (25,147 words); test: the 2,077 test sentences (25,094 words).",
        "license": "cc-by-sa-4.0",
        "limitations": ["English web text only; other genres (social media, transcribed speech) and other languages "
                        "will tag worse.",
                        "Words must be tokenized as UD does (clitics such as \"n't\" are words of their own).",
                        "The annotations are CC BY-SA 4.0: share derived models under the same license."],
    },
    "ptb": {
        "hub_id": "ptb_text_only", "config": None, "name": "Penn Treebank (Mikolov)", "language": "en",
        "about": "Mikolov's word-level Penn Treebank: 887k training words, 10k vocabulary.",
        "license": None,
        "terms": {"license_name": "ldc-ptb-research-use", "license_link": "https://catalog.ldc.upenn.edu/LDC99T42",
                  "note": "The Penn Treebank is the LDC's (LDC99T42), distributed with Mikolov's toolkit for "
                          "research use only. Use this model, trained on it, for research only."},
        "limitations": ["1989 Wall Street Journal text, lowercased, numbers as N, 10k words: samples reflect that "
                        "text's topics and biases and are not fit to show people.",
                        "Penn Treebank data is licensed by the LDC for research use."],
    },
    "multi30k_en_de": {
        "hub_id": "bentrevett/multi30k", "config": None, "name": "Multi30k English-German", "language": ["en", "de"],
        "about": "Multi30k (Elliott et al., 2016): 29,000 English image captions with German translations; "
                 "validation: 1,014 pairs; test: test2016, 1,000 pairs.",
        "license": None,
        "terms": {"license_name": "multi30k-research-use", "license_link": "https://github.com/multi30k/dataset",
                  "note": "Multi30k's repository names no license; its captions come from Flickr30k, whose terms "
                          "allow non-commercial research and educational use. Use this model, trained on them, for "
                          "non-commercial research and teaching only."},
        "limitations": ["Image captions only: short descriptive sentences; other domains translate poorly.",
                        "Flickr30k captions are for non-commercial research use."],
    },
    "tatoeba_en_zh": {
        "hub_id": "tatoeba", "config": None, "name": "Tatoeba English-Mandarin (manythings cmn-eng)",
        "language": ["en", "zh"],
        "about": "Tatoeba's English-Mandarin sentence pairs as manythings.org distributes them (cmn-eng): 27,155 "
                 "training pairs of short everyday sentences, 1,000 validation and 1,000 test pairs, split by English "
                 "sentence; the Mandarin mixes simplified and traditional characters.",
        "license": "cc-by-2.0",
        "limitations": ["Short everyday sentences (6 English words on average); longer or domain text translates "
                        "poorly.",
                        "The Mandarin mixes simplified and traditional characters, as Tatoeba's does.",
                        "CC BY 2.0 FR: credit tatoeba.org and manythings.org/anki (the data's attribution column "
                        "names each sentence's contributors)."],
    },
    "wnut17": {
        "hub_id": "wnut_17", "config": None, "name": "WNUT-17 emerging entities", "language": "en",
        "about": "WNUT 2017 Emerging and Rare Entities (Derczynski et al., 2017): 3,394 training tweets, 1,009 "
                 "validation and 1,287 test sentences from Reddit, YouTube, StackExchange and Twitter, BIO tags of "
                 "six entity types chosen so that few surface forms repeat.",
        "license": "cc-by-4.0",
        "limitations": ["Raw social-media English, including offensive language; entities are rare and new by "
                        "design, so F1 stays low for every model.",
                        "Six types only (person, location, corporation, product, creative-work, group)."],
    },
}

# Bundled pretrained checkpoints -> their Hub id (the card's base_model).
BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}


def split_set(dataset: dict, split: str) -> dict:
    """The Hub data set (``hub_id``, ``config``, ``name``) that holds ``split`` of the bundled ``dataset``."""
    return dataset.get("split_sets", {}).get(split) or {key: dataset[key] for key in ("hub_id", "config", "name")}


def dataset_of(run: dict) -> dict:
    """What the card says about the run's data set: the bundled one's entry in `DATASETS`, else a generic one."""
    name = run.get("dataset") or run.get("arguments", {}).get("dataset_name") or "custom"
    known = DATASETS.get(Path(str(name)).name)
    languages = list(run.get("languages", {}).values()) or None  # a translation run names its two languages
    return known or {"hub_id": str(name), "config": None, "name": str(name), "language": languages,
                     "about": f"The data set {name}.", "license": None,
                     "limitations": ["Only as good as its training data: check it on your own data before use."]}


def base_model_of(run: dict) -> str | None:
    """The Hub id of the checkpoint the run fine-tuned (its folder's name in `BASE_MODELS`, else its path); None
    for a model trained from scratch."""
    path = run.get("arguments", {}).get("model_name_or_path")
    return None if not path else BASE_MODELS.get(Path(path).name, path)
