"""The decoder-call accounting on a tiny attention seq2seq model: every call is recorded with its rows (and, when
asked, its seconds), nothing is recorded once the block has ended, and the step bound has its documented parts."""

import pytest
import torch

from benchmarks.helpers.decoder_calls import decoder_calls, decoder_step_bound
from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.models.decoding import decode

PAD, BOS, EOS = 0, 1, 2


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = AttentionSeq2SeqConfig(vocab_size=12, embedding_size=6, hidden_size=8, cell_type="gru",
                                    attention_type="luong_general", pad_token_id=PAD, bos_token_id=BOS,
                                    eos_token_id=EOS)
    return AttentionSeq2SeqForConditionalGeneration(config).eval()


@pytest.mark.parametrize("custom_generate", [None, decode], ids=["generation_mixin", "our_loop"])
@pytest.mark.parametrize("device", [None, "cpu"])
def test_every_decoder_call_is_recorded_with_its_rows(model, device, custom_generate):
    """Through forward (GenerationMixin's loop; our loop's first step) and through ``decoding_step`` (our loop's
    other steps)."""
    source = torch.tensor([[5, 6, 7, EOS], [8, 9, EOS, PAD], [3, 4, 5, EOS]])
    new_tokens = 4
    with torch.no_grad(), decoder_calls(model, device) as calls:
        model.generate(source, attention_mask=(source != PAD).long(), num_beams=2, do_sample=False,
                       max_new_tokens=new_tokens, min_new_tokens=new_tokens, custom_generate=custom_generate)
    first_rows = 3 if custom_generate is decode else 3 * 2  # our loop's first step: one row per sentence
    assert len(calls) == new_tokens and [call.rows for call in calls] == [first_rows] + [3 * 2] * (new_tokens - 1)
    assert all((call.seconds is None) == (device is None) for call in calls)
    assert "decoding_step" not in vars(model)  # the class's method again
    with torch.no_grad():
        model.generate(source, num_beams=1, max_new_tokens=2)
    assert len(calls) == new_tokens  # the hooks went with the block


def test_decoder_step_bound_parts(model):
    bound = decoder_step_bound(model, [5, 6, 7, EOS], generate_rows=[4, 4],
                               baselines={"one": [1] * 16, "two": [2] * 8}, device="cpu", rounds=3)
    assert set(bound) == {"decoder_step_bound_vs_one", "decoder_rows_generate_vs_one", "decoder_step_bound_vs_two",
                          "decoder_rows_generate_vs_two", "row_cost_1_vs_4_rows", "row_cost_2_vs_4_rows"}
    assert bound["decoder_rows_generate_vs_one"] == 0.5 and bound["decoder_rows_generate_vs_two"] == 0.5
    for key in ("decoder_step_bound_vs_one", "decoder_step_bound_vs_two", "row_cost_1_vs_4_rows"):
        low, high = bound[key]["quartiles"]
        assert 0 < low <= bound[key]["median"] <= high, key
