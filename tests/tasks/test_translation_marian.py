"""``--model_type marian``: transformers' MarianMTModel with our Transformer's sizes trains, translates and scores
through the translation task like our models; the test translations the run saves are the ones it scored."""

import json

import pytest
import torch
from sacrebleu.metrics import BLEU, CHRF
from transformers import AutoConfig, AutoModelForSeq2SeqLM, MarianMTModel

from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import parse_dict

SIZES = "d_model=16,ffn_dim=32,num_heads=2,encoder_layers=1,decoder_layers=2"


def our_config(**changes):
    fields = dict(vocab_size=50, d_model=16, ffn_dim=32, num_heads=2, encoder_layers=1, decoder_layers=2,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    return AutoConfig.for_model("transformer", **{**fields, **changes})


@pytest.mark.parametrize("changes", [{}, {"source_vocab_size": 40}, {"share_encoder_decoder_embeddings": True}])
def test_marian_has_our_transformers_sizes(changes):
    ours = our_config(**changes)
    marian = translation.marian_config(ours)
    assert (marian.vocab_size, marian.decoder_vocab_size) == (ours.source_vocab_size or ours.vocab_size,
                                                               ours.vocab_size)
    assert (marian.encoder_layers, marian.decoder_layers, marian.encoder_attention_heads, marian.encoder_ffn_dim) == (
        1, 2, 2, 32)
    # The same trainable parameters (Marian also counts its fixed sinusoidal position tables).
    torch.manual_seed(0)
    assert (MarianMTModel(marian).num_parameters(only_trainable=True)
            == AutoModelForSeq2SeqLM.from_config(ours).num_parameters(only_trainable=True))


def test_marian_refuses_what_it_cannot_be():
    with pytest.raises(ValueError, match="MarianMTModel has norm_position='post' only, got 'pre': drop "
                                         "norm_position from --config_overrides"):
        translation.marian_config(our_config(norm_position="pre"))


def test_marian_trains_translates_and_scores(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    fields = {"model_type": "marian", "config_overrides": SIZES, "vocab_size": 300, "max_train_samples": 64,
              "max_eval_samples": 8, "max_train_steps": 2, "per_device_train_batch_size": 16, "num_warmup_steps": 1,
              "max_new_tokens": 8, "num_beams": 2, "checkpointing_steps": None, "output_dir": str(tmp_path / "marian")}
    parsed = parse_dict(translation, fields)
    results = translation.run(*parsed)
    saved = json.loads((tmp_path / "marian" / "results.json").read_text())
    assert saved["model_config"]["model_type"] == "marian" and saved["steps"] == 2

    model = translation.load_translation_model(tmp_path / "marian")
    assert isinstance(model, MarianMTModel) and model.config.d_model == 16 and model.config.decoder_layers == 2
    test = parsed[1].load()["test"]
    hypotheses = (tmp_path / "marian" / results["test_hypotheses_file"]).read_text().splitlines()
    assert len(hypotheses) == len(test) == 8
    # The file holds the strings scored: sacreBLEU on it gives the run's scores ...
    assert BLEU(tokenize="13a").corpus_score(hypotheses, [test["de"]]).score == pytest.approx(results["test_bleu"])
    assert CHRF().corpus_score(hypotheses, [test["de"]]).score == pytest.approx(results["test_chrf"])
    # ... and they are what the saved model translates.
    tokenizers = translation.load_tokenizers(tmp_path / "marian")
    assert translation.translate(model, tokenizers, test["en"], num_beams=2, length_penalty=1.0, max_new_tokens=8,
                                 max_source_length=64) == hypotheses
