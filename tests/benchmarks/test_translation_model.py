"""The decoding entries' model: padding, names, and the disk cache that spares later runs the training."""

import torch

from benchmarks.translation_model import SMOKE, cache_dir, english_test2016, model_label, pad_batch, trained_model


def test_pad_batch_pads_on_the_right():
    assert pad_batch([[4, 5, 6], [7]], value=0).tolist() == [[4, 5, 6], [7, 0, 0]]


def test_model_label_names_cell_and_attention():
    assert model_label("gru", SMOKE) == "attention GRU (luong_general)"


def test_trained_model_is_saved_and_loaded_back(monkeypatch, tmp_path, data_dir):
    monkeypatch.setenv("HF_SEQMODELS_BENCHMARK_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    trained_model.cache_clear()
    try:
        model, tokenizer, loss = trained_model("gru", SMOKE, "cpu", 0)
        trained_model.cache_clear()  # the second call must come from the disk
        again, again_tokenizer, again_loss = trained_model("gru", SMOKE, "cpu", 0)
    finally:
        trained_model.cache_clear()
    assert len(list(tmp_path.iterdir())) == 1 and again is not model and again_loss == loss
    assert not again.training
    for (name, value), (_, loaded) in zip(model.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(value, loaded), name
    sources = english_test2016(again_tokenizer, 3)
    assert sources == english_test2016(tokenizer, 3) and all(row[-1] == tokenizer.eos_token_id for row in sources)

