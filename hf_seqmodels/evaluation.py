"""Metrics: perplexity from a mean loss, thin wrappers over `evaluate` metrics, and sacreBLEU's BLEU and chrF.

Translation is scored by the `sacrebleu` package itself, which gives each score's signature (``evaluate``'s wrapper
does not). The other metric code is `evaluate`'s own (loaded through `load_metric`); these functions only adapt the
inputs and name the outputs.

``HF_SEQMODELS_METRICS``: a folder of `evaluate` metric scripts (one sub-folder per metric). Default:
``<repo>/../shared/evaluate_metrics``. A metric missing there is loaded from the Hub by name. It is read at call
time, so tests and users can change it without re-importing.
"""

import math
import os
from pathlib import Path

import evaluate
from sacrebleu.metrics import BLEU, CHRF

from .data.paths import REPO_ROOT


def metrics_dir() -> Path:
    """The folder holding local copies of `evaluate` metric scripts (``$HF_SEQMODELS_METRICS``)."""
    return Path(os.environ.get("HF_SEQMODELS_METRICS", REPO_ROOT.parent / "shared" / "evaluate_metrics"))


def load_metric(name: str) -> evaluate.EvaluationModule:
    """``evaluate.load`` from the local copy ``metrics_dir()/name`` when it exists, else from the Hub by name."""
    folder = metrics_dir() / name
    if folder.is_dir():
        return evaluate.load(str(folder))
    try:
        return evaluate.load(name)
    except (FileNotFoundError, ConnectionError) as error:
        raise FileNotFoundError(
            f"The `evaluate` metric {name!r} is neither in {folder} nor reachable on the Hub: set "
            "HF_SEQMODELS_METRICS to a folder of evaluate metric scripts (one sub-folder per metric)."
        ) from error


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


# sacreBLEU's tokenization for BLEU by target language: Chinese is written without spaces, and 13a would see each
# sentence as one word (BLEU 0 for any translation but an exact one); Japanese, Korean and Thai go by character.
BLEU_TOKENIZE_CHOICES = tuple(BLEU.TOKENIZERS)  # sacreBLEU's own list
BLEU_TOKENIZATIONS = {**dict.fromkeys(("zh", "cmn", "yue", "wuu", "lzh"), "zh"),
                      **dict.fromkeys(("ja", "ko", "th"), "char")}


def bleu_tokenization(language: str) -> str:
    """sacreBLEU's BLEU tokenization for text in ``language`` (a code such as "zh", "zh-Hant", "de"): "zh" for
    Chinese, "char" for Japanese, Korean and Thai, "13a" (sacreBLEU's default) otherwise."""
    return BLEU_TOKENIZATIONS.get(language.lower().replace("_", "-").split("-")[0], "13a")


def translation_metrics(predictions: list[str], references: list[str], tokenize: str = "13a") -> dict:
    """Corpus ``bleu`` (sacreBLEU with the ``tokenize`` tokenization, see `bleu_tokenization`) and ``chrf``, on
    detokenized strings, one reference per prediction (`translation_signatures` names these settings)."""
    return {"bleu": BLEU(tokenize=tokenize).corpus_score(predictions, [references]).score,
            "chrf": CHRF().corpus_score(predictions, [references]).score}


def translation_signatures(tokenize: str = "13a") -> dict:
    """The sacreBLEU signatures of `translation_metrics`' ``bleu`` and ``chrf`` (``bleu_signature``,
    ``chrf_signature``): the settings a published score must share to be compared with them."""
    signatures = {}
    for name, metric in (("bleu", BLEU(tokenize=tokenize)), ("chrf", CHRF())):
        metric.corpus_score([""], [[""]])  # sacreBLEU knows the number of references (one) once it has scored
        signatures[f"{name}_signature"] = str(metric.get_signature())
    return signatures


def tagging_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    """seqeval's overall precision, recall, F1 and accuracy for tag sequences (one list of tags per sentence)."""
    scores = load_metric("seqeval").compute(predictions=predictions, references=references)
    return {key.removeprefix("overall_"): float(value) for key, value in scores.items() if key.startswith("overall_")}
