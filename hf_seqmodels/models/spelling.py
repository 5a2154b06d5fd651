"""Character-CNN features of each token's spelling, which the recurrent family concatenates to its embeddings."""

import torch
from torch import nn


class SpellingFeatures(nn.Module):
    """Character-CNN features of each vocabulary token's spelling (Ma & Hovy, 2016): byte embeddings, a
    convolution, and a max over the bytes. Rare tokens then share what their characters say (capitals, digits,
    affixes) with frequent ones.

    The spellings live in the ``spellings`` buffer, ``(vocab_size, max_length)`` UTF-8 byte values plus one (0 =
    no byte), saved with the weights, so that the model needs only ``input_ids``, as any transformers model;
    `set_spellings` fills it from the tokenizer's tokens. Each forward convolves the distinct tokens of the batch
    only.

    Args:
        vocab_size: number of tokens.
        num_features: convolution filters, the size of each token's features.
        byte_embedding_size: size of the byte embeddings.
        kernel_size: width of the convolution window, in bytes (odd).
        max_length: bytes kept of each spelling; a longer one keeps its first and last ``max_length // 2``.
    """

    def __init__(self, vocab_size: int, num_features: int, byte_embedding_size: int, kernel_size: int,
                 max_length: int):
        super().__init__()
        self.register_buffer("spellings", torch.zeros(vocab_size, max_length, dtype=torch.long))
        self.embed_bytes = nn.Embedding(257, byte_embedding_size, padding_idx=0)
        self.conv = nn.Conv1d(byte_embedding_size, num_features, kernel_size, padding=kernel_size // 2)

    def set_spellings(self, tokens: list[str]) -> None:
        """Spell token ``i`` as ``tokens[i]`` (e.g. ``tokenizer.convert_ids_to_tokens(range(len(tokenizer)))``)."""
        vocab_size, max_length = self.spellings.shape
        if len(tokens) != vocab_size:
            raise ValueError(f"Got {len(tokens)} tokens to spell but the vocabulary has {vocab_size}: pass one "
                             "string per token id.")
        spellings = torch.zeros_like(self.spellings, device="cpu")
        for i, token in enumerate(tokens):
            values = list(token.encode("utf-8"))
            if len(values) > max_length:
                values = values[: max_length // 2] + values[len(values) - max_length // 2 :]
            spellings[i, : len(values)] = torch.tensor(values, dtype=torch.long) + 1
        self.spellings.copy_(spellings)

    def resize(self, vocab_size: int) -> None:
        """Keep the spellings of the first ``vocab_size`` tokens; tokens added have none (zero features) until
        `set_spellings` is called again. ``resize_token_embeddings`` calls this."""
        spellings = self.spellings.new_zeros(vocab_size, self.spellings.shape[1])
        kept = min(vocab_size, len(self.spellings))
        spellings[:kept] = self.spellings[:kept]
        self.spellings = spellings

    def forward(self, input_ids: torch.LongTensor) -> torch.FloatTensor:
        """``(batch, length)`` ids -> ``(batch, length, num_features)``; a token spelled with no byte gets zeros."""
        distinct, inverse = input_ids.unique(return_inverse=True)
        spellings = self.spellings[distinct]  # (n, max_length)
        features = self.conv(self.embed_bytes(spellings).transpose(1, 2))  # (n, num_features, max_length)
        features = features.masked_fill((spellings == 0).unsqueeze(1), float("-inf")).amax(dim=-1)
        return features.masked_fill(features == float("-inf"), 0.0)[inverse]
