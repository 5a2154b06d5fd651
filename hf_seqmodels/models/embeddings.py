"""The Transformer's input embeddings: tokens (optionally scaled by sqrt(d_model)) plus positions, Vaswani et al.
(2017), sections 3.4 and 3.5. Positions are either the fixed sinusoidal encodings or a learned table; both are a
``(max_positions, d_model)`` table built once, from which every forward takes rows. And the embedding dropout that
drops whole word types (the recurrent models' ``word_type_dropout``)."""

import math

import torch
from torch import nn

from .masks import chunk_positions


def sinusoidal_positions(num_positions: int, dim: int) -> torch.Tensor:
    """The table of section 3.5, shape ``(num_positions, dim)``:
    ``PE[pos, 2i] = sin(pos / 10000^(2i/dim))`` and ``PE[pos, 2i+1] = cos(pos / 10000^(2i/dim))``.
    Computed in float64, returned in torch's default dtype: the dtype a model is being built in (``from_pretrained``
    with ``dtype=torch.bfloat16`` sets it while it builds), so that the table matches the weights it is added to."""
    positions = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)
    inverse_frequencies = 10000.0 ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions * inverse_frequencies  # (num_positions, ceil(dim / 2))
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()[:, : dim // 2]
    return table.to(torch.get_default_dtype())


class TransformerEmbeddings(nn.Module):
    """``dropout(scale * E[token] + P[position])``, with ``scale = sqrt(d_model)`` when ``scale_embedding``.

    Args:
        vocab_size: number of tokens.
        d_model: size of the embeddings.
        max_positions: size of the position table (the model checks that its inputs fit).
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
        past_length: int | torch.Tensor = 0,
        key_mask: torch.Tensor | None = None,
    ) -> torch.FloatTensor:
        """
        Args:
            input_ids: ``(batch, length)`` token ids; or ``inputs_embeds`` ``(batch, length, d_model)``, used in
                place of the token embedding lookup (they are scaled too).
            past_length: number of positions already consumed (cached) before these tokens: an int, or a static
                cache's length as a 0-d tensor (see ``masks.chunk_positions``).
            key_mask: ``(batch, past_length + length)`` bool, True = real token, or None when nothing is padding
                (with a static cache it may span the cache's whole buffer: these tokens' columns follow the first
                ``past_length``). With padding, a token's position counts only the real tokens before it, so that
                left padding does not shift the positions.

        Returns ``(batch, length, d_model)``.
        """
        embeds = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        positions = chunk_positions(past_length, embeds.shape[1], embeds.device)
        table = self.position_table if self.embed_positions is None else self.embed_positions.weight
        if key_mask is not None:
            positions = (key_mask.cumsum(dim=1) - 1).clamp(min=0)[:, positions]
        return self.dropout(embeds * self.scale + table[positions])


def word_type_dropout(embedding: nn.Embedding, input_ids: torch.LongTensor, p: float) -> torch.FloatTensor:
    """Embed ``input_ids`` after dropping whole rows of the embedding matrix with probability ``p`` and scaling the
    others by ``1 / (1 - p)``: every occurrence of a dropped word type gets a zero vector (Gal & Ghahramani 2016,
    AWD-LSTM's ``embedded_dropout``). One mask per call; the gradient reaches the kept rows only."""
    weight = embedding.weight
    mask = weight.new_empty(weight.shape[0], 1).bernoulli_(1 - p) / (1 - p)
    return nn.functional.embedding(input_ids, weight * mask, embedding.padding_idx)
