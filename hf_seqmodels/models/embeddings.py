"""Input embeddings.

* `TransformerEmbeddings`: tokens (optionally scaled by sqrt(d_model)) plus positions, Vaswani et al. (2017),
  sections 3.4 and 3.5. Positions are either the fixed sinusoidal encodings or a learned table; both are a
  ``(max_positions, d_model)`` table built once, from which every forward takes rows.
* `SpellingFeatures`: character-CNN features of each token's spelling, to concatenate to its embedding.
* `TargetVocabularyResizing`: ``resize_token_embeddings`` for the encoder-decoders.
"""

import math

import torch
from torch import nn


def sinusoidal_positions(num_positions: int, dim: int) -> torch.Tensor:
    """The table of section 3.5, shape ``(num_positions, dim)``:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/dim))`` and ``PE[pos, 2i+1] = cos(pos / 10000^(2i/dim))``."""
    positions = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    inverse_frequencies = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions * inverse_frequencies  # (num_positions, ceil(dim / 2))
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()[:, : dim // 2]
    return table.float()


class TransformerEmbeddings(nn.Module):
    """``dropout(scale * E[token] + P[position])``, with ``scale = sqrt(d_model)`` when ``scale_embedding``.

    Args:
        vocab_size: number of tokens.
        d_model: size of the embeddings.
        max_positions: size of the position table; longer inputs raise a ValueError.
        position_embedding: "sinusoidal" (a fixed buffer, not saved: it is recomputed) or "learned".
        scale_embedding: multiply the token embeddings by ``sqrt(d_model)``.
        dropout: dropout on the sum.
        padding_idx: id of the padding token, whose embedding stays zero.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_positions: int,
        position_embedding: str,
        scale_embedding: bool,
        dropout: float,
        padding_idx: int | None = None,
    ):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.scale = math.sqrt(d_model) if scale_embedding else 1.0
        self.max_positions = max_positions
        if position_embedding == "sinusoidal":
            self.register_buffer("position_table", sinusoidal_positions(max_positions, d_model), persistent=False)
            self.embed_positions = None
        else:
            self.embed_positions = nn.Embedding(max_positions, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        past_length: int = 0,
        key_mask: torch.Tensor | None = None,
    ) -> torch.FloatTensor:
        """
        Args:
            input_ids: ``(batch, length)`` token ids; or ``inputs_embeds`` ``(batch, length, d_model)``, used in
                place of the token embedding lookup (they are scaled too).
            past_length: number of positions already consumed (cached) before these tokens.
            key_mask: ``(batch, past_length + length)`` bool, True = real token, or None when nothing is padding.
                With padding, a token's position counts only the real tokens before it, so that left padding
                does not shift the positions.

        Returns ``(batch, length, d_model)``.
        """
        embeds = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        length = embeds.shape[1]
        if past_length + length > self.max_positions:
            cached = f" ({past_length} of them already cached)" if past_length else ""
            raise ValueError(
                f"The sequence has {past_length + length} positions{cached} but `max_position_embeddings` is "
                f"{self.max_positions}: truncate the inputs (e.g. tokenizer(..., truncation=True, max_length="
                f"{self.max_positions})), generate fewer tokens (`max_new_tokens`, `max_length`), or use a model "
                "whose config has a larger `max_position_embeddings`."
            )
        table = self.position_table if self.embed_positions is None else self.embed_positions.weight
        if key_mask is None:
            positions = table[past_length : past_length + length]
        else:
            positions = table[(key_mask.cumsum(dim=1) - 1).clamp(min=0)[:, -length:]]
        return self.dropout(embeds * self.scale + positions)


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


class TargetVocabularyResizing:
    """``resize_token_embeddings`` for an encoder-decoder, mixed into its ``PreTrainedModel`` classes.

    ``config.vocab_size`` is the target vocabulary: the decoder's embeddings and the output layer, and the encoder's
    embeddings too when the source reads the same vocabulary (``config.source_vocab_size`` unset). transformers'
    own version resizes only ``get_input_embeddings()``, the encoder's, and would leave the decoder at the old size.
    A class names the ``(module, attribute)`` of each embedding that follows the target vocabulary in
    ``_target_embeddings``.
    """

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> nn.Embedding:
        """Resize the target vocabulary to ``new_num_tokens`` (see transformers' ``resize_token_embeddings``);
        returns the decoder's new embeddings."""
        resized = {}  # old embedding -> new: a matrix the encoder and decoder share stays shared
        for module, name in self._target_embeddings():
            old = getattr(module, name)
            if old not in resized:
                resized[old] = self._get_resized_embeddings(old, new_num_tokens, pad_to_multiple_of, mean_resizing)
            setattr(module, name, resized[old])
        embeddings = next(iter(resized.values()))
        if (output := self.get_output_embeddings()) is not None:
            self.set_output_embeddings(
                self._get_resized_lm_head(output, embeddings.num_embeddings, mean_resizing=mean_resizing)
            )
        self.config.vocab_size = embeddings.num_embeddings
        self.tie_weights()
        return embeddings
