"""The checks of a recurrent model's inputs where they enter (`RecurrentModel.forward`): the token inputs, the cache
they continue, and their padding mask, turned into what the recurrent layers read."""

import torch
from transformers.cache_utils import Cache

from .cache import RecurrentCache, recurrent_cache
from .configuration_recurrent import RecurrentConfig
from .modeling_utils import check_no_empty_rows, check_token_inputs, padding_or_none, prepare_padding_mask


def check_inputs(
    config: RecurrentConfig,
    dtype: torch.dtype,
    input_ids: torch.LongTensor | None,
    inputs_embeds: torch.FloatTensor | None,
    attention_mask: torch.Tensor | None,
    cache: Cache | None,
) -> tuple[RecurrentCache | None, torch.Tensor | None]:
    """Raise unless the inputs of a model of ``config`` computing in ``dtype`` are usable (see
    `RecurrentModel.forward`); return ``cache`` as a `RecurrentCache` (None without one) and the padding mask
    ``(batch, length)``, True at tokens, or None where nothing is padded."""
    check_token_inputs(input_ids, inputs_embeds, config.vocab_size, config.input_size, dtype)
    batch_size, length = (input_ids if input_ids is not None else inputs_embeds).shape[:2]
    cache = recurrent_cache(cache)
    continues = cache is not None and bool(cache.states)
    if continues:
        check_cache(config, cache, batch_size)
    mask = prepare_padding_mask(attention_mask, batch_size, length, cache.get_seq_length() if cache is not None else 0)
    if mask is not None and not continues:
        check_no_empty_rows(mask)
    return cache, padding_or_none(mask)


def check_cache(config: RecurrentConfig, cache: RecurrentCache, batch_size: int) -> None:
    """Raise unless ``cache`` holds states a model of ``config`` can continue ``batch_size`` sequences from. Shapes
    only: this runs at every decoding step."""
    if config.bidirectional:
        raise ValueError(
            "`past_key_values` cannot be continued by a bidirectional model: its backward direction reads every "
            "sequence from the end. Pass whole sequences, without `past_key_values`."
        )
    if cache.extras or cache.per_input:
        raise ValueError(
            "`past_key_values` holds the decoder state of an attention encoder-decoder, which this model cannot "
            "continue: pass the cache this model returned, or none to start afresh."
        )
    cache.check_shapes(config.cell_type, config.num_layers, batch_size, config.hidden_size, "num_layers", {})
