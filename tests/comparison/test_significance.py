"""Paired bootstrap between translation systems: the figures of sacreBLEU's own PairedTest, called here directly
with the same seed and resamples."""

import os

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from hf_seqmodels.comparison.significance import BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED, paired_bootstrap

REFERENCES = ["ein hund rennt im schnee", "zwei männer reden", "eine frau fährt fahrrad", "das mädchen singt laut",
              "ein rotes auto parkt", "hunde rennen am strand"] * 5
SYSTEMS = {
    "baseline": ["ein hund rennt", "zwei männer reden", "eine frau fährt rad", "das mädchen singt",
                 "ein auto parkt", "hunde rennen am strand"] * 5,
    "better": ["ein hund rennt im schnee", "zwei männer reden", "eine frau fährt fahrrad", "das mädchen singt",
               "ein rotes auto parkt", "hunde rennen am strand"] * 5,
    "worse": ["ein hund", "männer", "eine frau", "das singt", "auto", "hunde"] * 5,
}


def test_paired_bootstrap_is_sacrebleus(monkeypatch):
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    ours = paired_bootstrap(SYSTEMS, REFERENCES)
    assert "SACREBLEU_SEED" not in os.environ  # left as it was

    monkeypatch.setenv("SACREBLEU_SEED", str(BOOTSTRAP_SEED))
    signatures, scores = PairedTest(list(SYSTEMS.items()), {"BLEU": BLEU(), "chrF": CHRF()}, [REFERENCES],
                                    test_type="bs", n_samples=1000)()
    assert ours["baseline"] == "baseline" and ours["samples"] == BOOTSTRAP_SAMPLES == 1000
    assert ours["signatures"] == {"bleu": str(signatures["BLEU"]), "chrf": str(signatures["chrF2"])}
    assert "bs:1000" in ours["signatures"]["bleu"] and f"seed:{BOOTSTRAP_SEED}" in ours["signatures"]["bleu"]
    for ours_name, theirs in (("bleu", "BLEU"), ("chrf", "chrF2")):
        for name, result in zip(scores["System"], scores[theirs]):
            got = ours["systems"][name][ours_name]
            assert got["score"] == pytest.approx(result.score) and got["mean"] == pytest.approx(result.mean)
            assert got["ci"] == pytest.approx(result.ci)
            assert got["p_value"] == (None if name == "baseline" else pytest.approx(result.p_value))
    # The scores are the corpus scores, and the clearly worse system differs significantly.
    assert ours["systems"]["better"]["bleu"]["score"] == pytest.approx(
        BLEU().corpus_score(SYSTEMS["better"], [REFERENCES]).score)
    assert ours["systems"]["worse"]["bleu"]["p_value"] < 0.05


def test_the_bleu_tokenization_is_the_runs():
    chinese = {"a": ["我爱你", "他们在说话"], "b": ["我爱", "他们说话"]}
    result = paired_bootstrap(chinese, ["我爱你", "他们在说话"], bleu_tokenize="zh")
    assert "tok:zh" in result["signatures"]["bleu"]
    assert result["systems"]["b"]["bleu"]["score"] == pytest.approx(
        BLEU(tokenize="zh").corpus_score(chinese["b"], [["我爱你", "他们在说话"]]).score)
