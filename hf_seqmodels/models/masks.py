"""Padding masks and input checks shared by every family.

One convention throughout the package: a mask is a tensor of shape ``(batch, length)`` where ``True`` (or 1)
means "a real token: attend to it / keep it" and ``False`` (or 0) means padding.

During generation with a ``StaticCache`` (``generate(cache_implementation="static")``, what ``torch.compile``
compiles), the masks span the cache's whole buffer, and the number of cached positions stays a tensor: a compiled
decoding step then has the same inputs and shapes at every step (``chunk_positions``).

The checks that read tensor values (token ids in range, a mask of 0s and 1s, no empty row) run in eager mode only:
while ``torch.compile``, ``torch.export`` or ``torch.fx`` trace a graph the values are unknown, and a branch on them
would break the graph. The traced code is the code that ran (and checked) eagerly.
"""

import torch
from transformers.cache_utils import Cache
from transformers.utils import is_tracing


def check_tensor(value, name: str) -> None:
    """Raise a TypeError naming the argument unless ``value`` is a tensor (a list or an array is not converted: its
    dtype and device would be guesses)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}: pass tensors, e.g. "
                        "tokenizer(texts, return_tensors='pt').")


def check_input_ids(input_ids: torch.Tensor, vocab_size: int, name: str = "input_ids") -> None:
    """Raise a clear error for token ids outside ``[0, vocab_size)`` instead of an index error inside torch."""
    if input_ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"`{name}` must hold integer token ids, got dtype {input_ids.dtype}.")
    if input_ids.numel() == 0:
        raise ValueError(f"`{name}` is empty (shape {tuple(input_ids.shape)}): pass at least one token per sequence.")
    if is_tracing(input_ids):
        return
    low, high = torch.stack(torch.aminmax(input_ids)).tolist()  # one wait for a GPU, not two
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"`{name}` holds token ids in [{low}, {high}] but the model's vocabulary has {vocab_size} entries "
            f"(valid ids: 0..{vocab_size - 1}). Use the tokenizer the model was trained with, or set "
            f"`vocab_size` in the config to the tokenizer's size."
        )


def prepare_padding_mask(
    attention_mask: torch.Tensor | None,
    batch_size: int,
    length: int,
    past_length: int | None = None,
    name: str = "attention_mask",
) -> torch.Tensor | None:
    """Validate ``attention_mask`` (the argument ``name``) against the inputs and return it as a bool
    ``(batch, length)`` tensor.

    The mask has exactly ``length`` columns (a Transformer passes its cached positions plus the new ones). With
    ``past_length``, the positions a recurrent model already consumed from a cache, it may also cover those:
    ``length`` or ``past_length + length`` columns, of which the last ``length`` are returned.
    Returns ``None`` when there is no mask, meaning every position is a real token.
    """
    if attention_mask is None:
        return None
    check_tensor(attention_mask, name)
    widths = (length, past_length + length) if past_length else (length,)  # no hashing: sizes may be symbolic
    # Each width compared with `!=`, not `in`: under torch.compile a static cache's length is symbolic, and `in`
    # asks for a proof of equality that it cannot give.
    if (attention_mask.dim() != 2 or attention_mask.shape[0] != batch_size
            or all(attention_mask.shape[1] != width for width in widths)):
        expected = " or ".join(f"({batch_size}, {width})" for width in widths)
        raise ValueError(
            f"`{name}` has shape {tuple(attention_mask.shape)}, expected {expected}: one entry per position, "
            "1 for a token and 0 for padding" + (", the cached positions included or not" if len(widths) > 1 else "")
            + "."
        )
    if attention_mask.dtype != torch.bool and not is_tracing(attention_mask):
        if bool((not_binary := (attention_mask != 0) & (attention_mask != 1)).any()):
            raise ValueError(f"`{name}` must hold 1 for a token and 0 for padding, got the values "
                             f"{attention_mask[not_binary].unique()[:5].tolist()}.")
    # During generation the mask covers the cached prefix too; the current chunk is its last `length` columns.
    return attention_mask[:, -length:].bool()


def padding_or_none(mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask``, or ``None`` when it marks no padding, which lets the kernels take their fast paths (not while a
    graph is traced: the mask then stays, which gives the same results)."""
    return None if mask is not None and not is_tracing(mask) and bool(mask.all()) else mask


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


def check_no_empty_rows(mask: torch.Tensor, name: str = "attention_mask") -> None:
    """Raise if a row of ``mask`` has no real token: a sequence made only of padding has no result."""
    if is_tracing(mask):
        return
    empty = (~mask.any(dim=1)).nonzero().flatten()
    if empty.numel():
        raise ValueError(
            f"Rows {empty.tolist()} of `{name}` are all padding: every sequence needs at least one real token. "
            f"Drop empty sequences from the batch."
        )


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
