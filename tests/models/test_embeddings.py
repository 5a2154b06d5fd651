"""The Transformer's input embeddings against section 3.4-3.5 of Vaswani et al. (2017), written out here."""

import math

import pytest
import torch


from hf_seqmodels.models.embeddings import TransformerEmbeddings, sinusoidal_positions


def test_sinusoidal_table_is_the_papers_formula():
    num_positions, dim = 12, 6
    table = sinusoidal_positions(num_positions, dim)
    for pos in range(num_positions):
        for i in range(dim // 2):
            angle = pos / 10000 ** (2 * i / dim)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert sinusoidal_positions(4, 5).shape == (4, 5)  # an odd size ends with a sine


@pytest.mark.parametrize("position_embedding", ["sinusoidal", "learned"])
@pytest.mark.parametrize("scale_embedding", [True, False])
def test_embedding_is_scaled_token_plus_position(position_embedding, scale_embedding):
    embeddings = TransformerEmbeddings(10, 8, 16, position_embedding, scale_embedding, dropout=0.0, padding_idx=0)
    table = embeddings.position_table if position_embedding == "sinusoidal" else embeddings.embed_positions.weight
    input_ids = torch.tensor([[3, 4, 5], [6, 7, 8]])
    scale = math.sqrt(8) if scale_embedding else 1.0
    expected = embeddings.embed_tokens.weight[input_ids] * scale + table[2:5]
    torch.testing.assert_close(embeddings(input_ids, past_length=2), expected)


def test_positions_skip_left_padding():
    """With a padding mask, a token's position counts the real tokens before it, so left padding shifts nothing."""
    embeddings = TransformerEmbeddings(10, 8, 16, "sinusoidal", True, dropout=0.0, padding_idx=0)
    alone = embeddings(torch.tensor([[3, 4, 5]]))
    padded = embeddings(torch.tensor([[0, 0, 3, 4, 5]]), key_mask=torch.tensor([[False, False, True, True, True]]))
    torch.testing.assert_close(padded[:, 2:], alone)
    # During generation the mask also covers the cached positions: the newest token is real token number 3.
    step_mask = torch.tensor([[False, False, True, True, True, True]])
    step = embeddings(torch.tensor([[6]]), past_length=5, key_mask=step_mask)
    torch.testing.assert_close(step, embeddings(torch.tensor([[3, 4, 5, 6]]))[:, 3:])


def test_learned_positions_train_and_sinusoidal_are_fixed():
    learned = TransformerEmbeddings(10, 8, 16, "learned", True, dropout=0.0)
    learned(torch.tensor([[1, 2]])).sum().backward()
    assert learned.embed_positions.weight.grad[:2].abs().sum() > 0
    fixed = TransformerEmbeddings(10, 8, 16, "sinusoidal", True, dropout=0.0)
    assert "position_table" not in fixed.state_dict()  # recomputed, not saved
    assert not any("position" in name for name, _ in fixed.named_parameters())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_sinusoidal_table_is_built_in_the_dtype_being_built_in(dtype):
    """from_pretrained(dtype=...) builds a model under that default dtype: the table follows it (a float32 table
    added to bf16 embeddings made the sum float32, which the bf16 layers then refused)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        embeddings = TransformerEmbeddings(10, 8, 6, "sinusoidal", True, 0.0)
    finally:
        torch.set_default_dtype(previous)
    assert embeddings.position_table.dtype == dtype
    expected = sinusoidal_positions(6, 8).double()
    tolerance = {torch.bfloat16: 1e-2, torch.float16: 1e-3, torch.float64: 1e-7}[dtype]
    torch.testing.assert_close(embeddings.position_table.double(), expected, rtol=0, atol=tolerance)
    assert embeddings(torch.tensor([[1, 2, 3]])).dtype == dtype
