"""The Transformer's input embeddings against section 3.4-3.5 of Vaswani et al. (2017), and the spelling features
against a convolution over each spelling on its own, both written out here."""

import math

import pytest
import torch

from torch.nn import functional as F

from hf_seqmodels.models.embeddings import SpellingFeatures, TransformerEmbeddings, sinusoidal_positions


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


def test_too_long_is_a_clear_error():
    embeddings = TransformerEmbeddings(10, 8, 4, "learned", True, dropout=0.0)
    embeddings(torch.tensor([[1, 2, 3, 4]]))
    with pytest.raises(ValueError, match="5 positions.*max_position_embeddings"):
        embeddings(torch.tensor([[1, 2, 3, 4, 5]]))
    with pytest.raises(ValueError, match="3 of them already cached"):
        embeddings(torch.tensor([[1, 2]]), past_length=3)


def test_learned_positions_train_and_sinusoidal_are_fixed():
    learned = TransformerEmbeddings(10, 8, 16, "learned", True, dropout=0.0)
    learned(torch.tensor([[1, 2]])).sum().backward()
    assert learned.embed_positions.weight.grad[:2].abs().sum() > 0
    fixed = TransformerEmbeddings(10, 8, 16, "sinusoidal", True, dropout=0.0)
    assert "position_table" not in fixed.state_dict()  # recomputed, not saved
    assert not any("position" in name for name, _ in fixed.named_parameters())


def reference_spelling_features(features: SpellingFeatures, token: str) -> torch.Tensor:
    """One token alone: its bytes (no padding), embedded, convolved with zero padding at both ends, max over bytes."""
    values = torch.tensor(list(token.encode("utf-8"))) + 1
    embedded = features.embed_bytes.weight[values].T.unsqueeze(0)  # (1, channels, bytes)
    conv = features.conv
    return F.conv1d(embedded, conv.weight, conv.bias, padding=conv.kernel_size[0] // 2)[0].amax(dim=-1)


def test_spelling_features_are_a_convolution_of_each_spelling():
    torch.manual_seed(0)
    features = SpellingFeatures(vocab_size=6, num_features=5, byte_embedding_size=4, kernel_size=3, max_length=12)
    tokens = ["<pad>", "Paris", "##ing", "a", "Zürich", "Paris"]
    features.set_spellings(tokens)
    input_ids = torch.tensor([[1, 2, 3, 4], [5, 4, 4, 0]])
    output = features(input_ids)
    assert output.shape == (2, 4, 5)
    for row, ids in zip(output, input_ids):
        for vector, token_id in zip(row, ids):
            torch.testing.assert_close(vector, reference_spelling_features(features, tokens[token_id]))
    torch.testing.assert_close(output[0, 0], output[1, 0])  # two ids spelled alike: the same features


def test_long_spellings_keep_prefix_and_suffix_and_empty_ones_give_zeros():
    features = SpellingFeatures(vocab_size=3, num_features=2, byte_embedding_size=2, kernel_size=1, max_length=6)
    features.set_spellings(["abcdefghij", "", "abcxyz"])
    assert bytes((features.spellings[0] - 1).tolist()).decode() == "abchij"
    assert features.spellings[1].eq(0).all()
    assert features(torch.tensor([[1]])).eq(0).all()
    with pytest.raises(ValueError, match="Got 2 tokens to spell but the vocabulary has 3"):
        features.set_spellings(["a", "b"])
