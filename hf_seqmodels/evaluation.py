"""Metrics: perplexity from a mean loss, and thin wrappers over `evaluate` metrics.

The metric code is `evaluate`'s own (loaded through `paths.load_metric`, offline from the local copies when
``HF_SEQMODELS_METRICS`` points at them); these functions only adapt the inputs and name the outputs.
"""

import math

from .paths import load_metric


def perplexity(mean_loss: float) -> float:
    """``exp`` of the mean per-token cross-entropy (natural log); ``inf`` when it overflows."""
    try:
        return math.exp(mean_loss)
    except OverflowError:
        return math.inf


def classification_metrics(predictions: list[int], references: list[int], average: str = "macro") -> dict:
    """Accuracy and F1 (``average`` as in scikit-learn: "macro", "micro", "weighted", or "binary")."""
    return {
        **load_metric("accuracy").compute(predictions=predictions, references=references),
        **load_metric("f1").compute(predictions=predictions, references=references, average=average),
    }


def translation_metrics(predictions: list[str], references: list[str]) -> dict:
    """Corpus ``bleu`` (sacreBLEU, default 13a tokenization) and ``chrf``, on detokenized strings, one
    reference per prediction."""
    references = [[reference] for reference in references]
    return {
        "bleu": load_metric("sacrebleu").compute(predictions=predictions, references=references)["score"],
        "chrf": load_metric("chrf").compute(predictions=predictions, references=references)["score"],
    }


def tagging_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    """seqeval's overall precision, recall, F1 and accuracy for tag sequences (one list of tags per sentence)."""
    scores = load_metric("seqeval").compute(predictions=predictions, references=references)
    return {key.removeprefix("overall_"): float(value) for key, value in scores.items() if key.startswith("overall_")}
