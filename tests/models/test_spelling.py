"""The spelling features against a convolution over each spelling on its own, written out here."""

import pytest
import torch
from torch.nn import functional as F

from hf_seqmodels.models.spelling import SpellingFeatures


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
