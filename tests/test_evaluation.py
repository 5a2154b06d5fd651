"""hf_seqmodels.evaluation: perplexity and the evaluate wrappers, on the local metric scripts (no network)."""

import math

import pytest
import sacrebleu

from hf_seqmodels.evaluation import (
    bleu_tokenization,
    classification_metrics,
    metrics_dir,
    perplexity,
    tagging_metrics,
    translation_metrics,
    translation_signatures,
)


@pytest.fixture(autouse=True)
def local_metrics():
    if not metrics_dir().is_dir():
        pytest.skip(f"metric scripts not found at {metrics_dir()}; set HF_SEQMODELS_METRICS")


def test_perplexity_is_exp_of_the_mean_loss():
    assert perplexity(math.log(123.0)) == pytest.approx(123.0)
    assert perplexity(1e6) == math.inf


def test_classification_metrics():
    scores = classification_metrics([0, 1, 1, 0], [0, 1, 0, 0])
    assert scores["accuracy"] == pytest.approx(0.75)
    assert scores["f1"] == pytest.approx((0.8 + 2 / 3) / 2)  # macro: class 0 F1 = 0.8, class 1 F1 = 2/3


def test_translation_metrics():
    scores = translation_metrics(["a man rides a horse ."], ["a man rides a horse ."])
    assert scores == {"bleu": pytest.approx(100.0), "chrf": pytest.approx(100.0)}
    assert translation_metrics(["the cat"], ["a man rides a horse ."])["bleu"] < 5


def test_tagging_metrics():
    scores = tagging_metrics([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    assert scores["accuracy"] == pytest.approx(2 / 3)
    assert scores["f1"] == 0.0  # the predicted span is longer than the reference span


def test_bleu_of_chinese_is_tokenized_for_chinese():
    """sacreBLEU itself is the reference: 13a sees a Chinese sentence as one word, tok zh as characters."""
    prediction, reference = ["我们明天去北京。"], ["我们明天去上海。"]
    assert bleu_tokenization("zh") == "zh" and bleu_tokenization("zh-Hant") == "zh" and bleu_tokenization("de") == "13a"
    scores = translation_metrics(prediction, reference, tokenize="zh")
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(prediction, [reference], tokenize="zh").score)
    assert scores["bleu"] > 30 and translation_metrics(prediction, reference)["bleu"] == 0
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(prediction, [reference]).score)
    signatures = translation_signatures("zh")
    assert "tok:zh" in signatures["bleu_signature"] and "nrefs:1" in signatures["bleu_signature"]
    assert signatures["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0")
