"""Paired-bootstrap intervals between a translation suite's models, by sacreBLEU's own test
(`sacrebleu.significance.PairedTest`, Koehn 2004, as ``sacrebleu --paired-bs`` runs it)."""

import os

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 12345  # sacreBLEU's default; fixed, so that the intervals are reproducible


def paired_bootstrap(systems: dict[str, list[str]], references: list[str], bleu_tokenize: str = "13a") -> dict:
    """BLEU and chrF of each system in ``systems`` (name -> hypotheses, one per reference; the first is the
    baseline) with the mean and 95% interval half-width (``ci``) over `BOOTSTRAP_SAMPLES` paired resamples of the
    test sentences, and, for every other system, the p-value of its difference from the baseline.

    Returns ``{"baseline", "signatures": {"bleu", "chrf"}, "systems": {name: {"bleu": {"score", "mean", "ci",
    "p_value"}, "chrf": {...}}}}``.
    """
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(BOOTSTRAP_SEED)  # PairedTest reads its seed from there
    try:
        test = PairedTest(list(systems.items()), {"bleu": BLEU(tokenize=bleu_tokenize), "chrf": CHRF()},
                          references=[references], test_type="bs", n_samples=BOOTSTRAP_SAMPLES)
        signatures, scores = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    metrics = {"BLEU": "bleu", "chrF2": "chrf"}  # sacreBLEU's names -> ours
    results = {name: {} for name in systems}
    for metric, ours in metrics.items():
        for name, result in zip(scores["System"], scores[metric]):
            results[name][ours] = {key: None if value is None else float(value)  # numpy's floats, for JSON
                                   for key, value in vars(result).items()}
    return {"baseline": next(iter(systems)), "samples": BOOTSTRAP_SAMPLES, "seed": BOOTSTRAP_SEED,
            "signatures": {metrics[name]: str(signature) for name, signature in signatures.items()},
            "systems": results}
