"""hf_seqmodels.evaluation: perplexity and the evaluate wrappers, on the local metric scripts (no network)."""

import math

import pytest

from hf_seqmodels.evaluation import classification_metrics, perplexity, tagging_metrics, translation_metrics
from hf_seqmodels.paths import metrics_dir


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
