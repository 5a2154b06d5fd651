"""The masks and positions of the Transformer's attention, and ``carry_over_padding`` (what a causal LM outputs at
padded positions). The padding masks every family checks and reads (``prepare_padding_mask``, ``padding_or_none``,
``check_no_empty_rows``) are in ``modeling_utils.py``, with the other input checks.

One convention throughout the package: a mask is a tensor of shape ``(batch, length)`` where ``True`` (or 1)
means "a real token: attend to it / keep it" and ``False`` (or 0) means padding.

During generation with a ``StaticCache`` (``generate(cache_implementation="static")``, what ``torch.compile``
compiles), the masks span the cache's whole buffer, and the number of cached positions stays a tensor: a compiled
decoding step then has the same inputs and shapes at every step (``chunk_positions``).
"""

import torch
from transformers.cache_utils import Cache
from transformers.utils import is_tracing


def carry_over_padding(outputs: torch.Tensor, attention_mask: torch.Tensor | None,
                       past_length: int | torch.Tensor | None = None) -> torch.Tensor:
    """``outputs`` ``(batch, length, size)`` of a causal language model's stack, each padded position after a real
    token holding the outputs at the last real position before it (``attention_mask``: the forward's, checked, which
    may also cover cached positions). Padding is invisible to the tokens after it (it never changes a recurrent
    state; a Transformer masks its keys and counts positions over real tokens only), so what the model predicts
    after padding is what it predicted after that token: a prompt padded on the right then generates exactly what
    it generates alone, where transformers' own decoder-only models predict from the padding's outputs. Positions
    before a row's first token keep their outputs.

    The mask's last ``length`` columns are the outputs' positions, or, given ``past_length`` (the number of cached
    positions before them, see ``chunk_positions``), the columns from ``past_length`` on: a mask that spans a static
    cache's whole buffer has columns after them."""
    if attention_mask is None:
        return outputs
    length = outputs.shape[1]
    columns = slice(-length, None) if past_length is None else chunk_positions(past_length, length, outputs.device)
    mask = attention_mask[:, columns].bool()
    if not is_tracing(outputs) and bool(mask.all()):
        return outputs  # (while a graph is traced, computed whatever the mask: the graph holds no branch on it)
    positions = torch.arange(length, device=mask.device)
    last_real = torch.where(mask, positions, -1).cummax(dim=1).values
    filled = outputs.gather(1, last_real.clamp(min=0)[..., None].expand_as(outputs))
    return torch.where((mask | (last_real < 0))[..., None], outputs, filled)


def cached_length(cache: Cache | None) -> int | torch.Tensor:
    """The number of positions a decoder's ``cache`` holds (0 without one, or for an object that is no ``Cache``,
    which the model refuses with its own message): an int, or a filled ``StaticCache``'s 0-d tensor, copied (the
    cache increments its own in place), see ``chunk_positions``."""
    if not isinstance(cache, Cache):
        return 0
    length = cache.get_seq_length()
    return length.clone() if isinstance(length, torch.Tensor) else length


def chunk_positions(past_length: int | torch.Tensor, length: int, device: torch.device) -> slice | torch.Tensor:
    """The positions of ``length`` new tokens after ``past_length`` cached ones, to index a table or a mask's
    columns: a slice, or, when ``past_length`` is a filled ``StaticCache``'s (a 0-d tensor), a tensor of positions.
    That length stays a tensor: read as a number, it would make a compiled decoding step specific to one length, so
    that each step recompiles (transformers' models likewise take positions from it as a tensor)."""
    if isinstance(past_length, torch.Tensor):
        return past_length + torch.arange(length, device=device)
    return slice(past_length, past_length + length)


def known_length(length: int | torch.Tensor) -> int | None:
    """A cache's length (see ``chunk_positions``) as a number for the checks, or None while a graph is traced: the
    value of a static cache's length is then unknown (the traced code is the code that ran, and checked, eagerly)."""
    if not isinstance(length, torch.Tensor):
        return length
    return None if is_tracing(length) else int(length)


def pad_columns(mask: torch.Tensor | None, width: int) -> torch.Tensor | None:
    """``mask`` ``(batch, columns)`` with zeros (padding) appended up to ``width`` columns: the empty positions of a
    static cache's buffer."""
    if mask is None or mask.shape[1] >= width:
        return mask
    return torch.cat([mask, mask.new_zeros(mask.shape[0], width - mask.shape[1])], dim=1)


def build_attention_mask(
    key_mask: torch.Tensor | None,
    query_length: int,
    key_length: int | torch.Tensor,
    causal: bool,
    device: torch.device,
    buffer_length: int | None = None,
) -> tuple[torch.Tensor | None, bool]:
    """The mask for ``torch.nn.functional.scaled_dot_product_attention``, built once per forward for every layer.

    Args:
        key_mask: ``(batch, key_length)`` bool, True = real token, or None when nothing is padding. The queries are
            the last ``query_length`` keys (a cached prefix comes first).
        key_length: an int, or, after a static cache's positions, a 0-d tensor (see ``chunk_positions``).
        causal: a query may not attend to keys after its own position.
        buffer_length: a static cache's: the attention reads its whole buffer, whose positions after the first
            ``key_length`` are empty (``key_mask`` may span it already, as generate() passes it). Only causal stacks
            keep a cache, and the causal mask hides those positions. The mask is then always built, of the same
            shape at every step.

    Returns ``(mask, is_causal)``: ``mask`` is ``(batch or 1, 1, query_length, buffer_length or key_length)`` bool,
    True = may attend, or None with ``is_causal`` telling the kernel to apply the causal mask itself (its fastest
    path). A query that may see no key (a left-padding position of a causal sequence) attends to every key instead:
    its output is ignored, and a fully masked row gives NaN in some fused GPU kernels, which would then spread
    through the padding's keys and values.
    """
    if buffer_length is None:
        if key_mask is None and (not causal or query_length == 1):
            return None, False
        if key_mask is None and query_length == key_length:
            return None, True
        buffer_length = key_length
    else:
        key_mask = pad_columns(key_mask, buffer_length)
    mask = key_mask[:, None, None, :] if key_mask is not None else None
    if causal:
        queries = key_length - query_length + torch.arange(query_length, device=device)
        allowed = torch.arange(buffer_length, device=device) <= queries[:, None]
        mask = allowed[None, None] if mask is None else mask & allowed
    if key_mask is not None:
        mask = mask | ~mask.any(dim=-1, keepdim=True)
    return mask, False
