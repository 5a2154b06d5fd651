"""benchmarks.peers.decode_ours: the clock inside the model changes no translation, its parts nest within the
decoding's seconds, and the model's own methods come back when it ends."""

import time

import pytest
import torch

from benchmarks.peers.decode_ours import model_clock
from hf_seqmodels.tasks.translation import translate
from tests.tasks.test_translation import raw, tiny_model, tokenizers  # noqa: F401  (fixtures)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_the_model_clock_changes_no_output_and_its_parts_nest(tokenizers, num_beams):  # noqa: F811
    model = tiny_model(tokenizers, attention_type="luong_general")
    texts = ["a dog runs", "two cats sit on a mat", "a red car", "the girl sings"]
    kwargs = dict(batch_size=2, num_beams=num_beams, max_new_tokens=8, early_stopping=True)
    expected = translate(model, tokenizers, texts, **kwargs)
    with torch.no_grad(), model_clock(model) as inside:
        start = time.perf_counter()
        assert translate(model, tokenizers, texts, **kwargs) == expected
        seconds = time.perf_counter() - start
    assert 0 < inside["output_layer_seconds"] < inside["model_seconds"] < seconds
    assert not {"forward", "decoding_step", "_logits"} & set(vars(model))
    assert "forward" not in vars(model.get_encoder())
