"""What the Transformer's models do around the maths of `modeling_transformer.py`: a stack's inputs checked where
they enter the model, its cache created and checked, its self- and cross-attention masks (through `masks.py`)
(`stack_inputs`); what transformers asks a model beyond its forward, as functions the classes bind by name
(`tied_weights_keys`; generate()'s cache and mask: `prepare_cache_for_generation`, `create_masks_for_generate`); and
the outputs the models and heads return. The layers below assume their inputs valid.
"""

import copy
from typing import NamedTuple

import torch
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache, StaticCache
from transformers.modeling_outputs import ModelOutput, Seq2SeqModelOutput

from .masks import build_attention_mask, cached_length, known_length, pad_columns
from .modeling_utils import (
    cache_field,
    check_no_empty_rows,
    check_tensor,
    check_token_inputs,
    output_cache,
    padding_or_none,
    prepare_padding_mask,
)

KEY_VALUE_CACHES = (DynamicCache, StaticCache)  # the caches whose layers the attention extends with `update`


class StackInputs(NamedTuple):
    """A stack's inputs, checked, as its layers read them."""

    cache: Cache | None  # what the layers extend and the output returns (an EncoderDecoderCache with cross-attention)
    past_length: int | torch.Tensor  # positions cached before these (a filled StaticCache's: a 0-d tensor)
    key_mask: torch.Tensor | None  # (batch, past_length + length) bool, True = real token; None: no padding
    mask: torch.Tensor | None  # the self-attention mask, see masks.build_attention_mask
    is_causal: bool
    memory_mask: torch.Tensor | None  # (batch, 1, 1, source_length) bool, or None


def stack_inputs(
    stack: nn.Module,
    input_ids: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    encoder_hidden_states: torch.Tensor | None,
    encoder_attention_mask: torch.Tensor | None,
    cache: Cache | None,
    use_cache: bool,
) -> StackInputs:
    """The inputs of ``stack`` (a ``TransformerStackMixin``: see its forward for the arguments), checked where they
    enter the model, its cache created if ``use_cache`` asks for one, and its masks built once for every layer."""
    self_cache, cross_cache = _caches(stack, cache, use_cache)
    past_length = cached_length(self_cache)  # a filled StaticCache's is a tensor, kept one (masks.chunk_positions)
    checked_past = known_length(past_length)  # None while a graph is traced
    _check_inputs(stack, input_ids, inputs_embeds, checked_past)
    embeds = input_ids if input_ids is not None else inputs_embeds
    batch_size, length = embeds.shape[:2]
    if checked_past != 0:
        _check_cache(stack, self_cache, cross_cache, batch_size, checked_past, encoder_hidden_states)
    key_length = None if checked_past is None else checked_past + length
    buffer_length = _buffer_length(self_cache, key_length)
    key_mask = _key_mask(stack, attention_mask, batch_size, length, checked_past, buffer_length)
    mask, is_causal = build_attention_mask(key_mask, length, past_length + length, stack.causal, embeds.device,
                                           buffer_length)
    memory_mask = _memory_mask(stack, encoder_hidden_states, encoder_attention_mask, batch_size)
    return StackInputs(cross_cache if cross_cache is not None else self_cache, past_length, key_mask, mask, is_causal,
                       memory_mask)


def _check_inputs(stack: nn.Module, input_ids, inputs_embeds, past_length: int | None) -> None:
    """``past_length``: the number of cached positions, or None while a graph is traced (a static cache's is then
    unknown)."""
    embeddings = stack.embeddings.embed_tokens
    check_token_inputs(input_ids, inputs_embeds, embeddings.num_embeddings, stack.d_model, embeddings.weight.dtype,
                       stack.input_prefix)
    if past_length is None:
        return
    positions = past_length + (input_ids if input_ids is not None else inputs_embeds).shape[1]
    if positions > (limit := stack.embeddings.max_positions):
        cached = f" ({past_length} of them already cached)" if past_length else ""
        raise ValueError(
            f"The sequence has {positions} positions{cached} but `max_position_embeddings` is {limit}: truncate "
            f"the inputs (e.g. tokenizer(..., truncation=True, max_length={limit})), generate fewer tokens "
            "(`max_new_tokens`, `max_length`), or use a model whose config has a larger `max_position_embeddings`."
        )


def _buffer_length(self_cache: Cache | None, key_length: int | None) -> int | None:
    """A static cache's buffer (the number of keys the self-attention reads), or None without one; ``key_length``:
    the positions cached and new (None while a graph is traced)."""
    if not isinstance(self_cache, StaticCache):
        return None
    buffer_length = self_cache.get_max_length()
    if key_length is not None and key_length > buffer_length:
        raise ValueError(
            f"The static cache holds {buffer_length} positions but the sequence reaches {key_length}: make it "
            "with a larger `max_cache_len`, or let generate() make it (cache_implementation='static')."
        )
    return buffer_length


def _key_mask(stack: nn.Module, attention_mask: torch.Tensor | None, batch_size: int, length: int,
              past_length: int | None, buffer_length: int | None) -> torch.Tensor | None:
    """The padding of the keys, ``(batch, past_length + length)`` (or, see below, a static cache's
    ``buffer_length``) bool, True = real token, or None when there is none.

    ``attention_mask`` covers the cached positions and the new ones, or, with a static cache, its whole buffer
    (what generate() passes: ``create_masks_for_generate``). While a graph is traced (``past_length`` None) a
    static cache's length is unknown: a mask narrower than its buffer is taken as covering those positions."""
    if attention_mask is None:
        return None
    name = f"{stack.input_prefix}attention_mask"
    check_tensor(attention_mask, name)
    key_length = None if past_length is None else past_length + length
    if buffer_length is not None:
        width = attention_mask.shape[-1]
        if width == buffer_length or (key_length is None and width < buffer_length):
            key_length = width
        elif key_length is None:
            key_length = buffer_length  # (so that the error names the buffer's width)
    key_mask = prepare_padding_mask(attention_mask, batch_size, key_length, name=name)
    if past_length == 0:
        check_no_empty_rows(key_mask, name)
    return padding_or_none(key_mask)


def _caches(stack: nn.Module, cache, use_cache: bool) -> tuple[Cache | None, EncoderDecoderCache | None]:
    """The self-attention cache and (with cross-attention) the encoder-decoder cache, created if asked for."""
    if cache is None:
        if not (use_cache and stack.causal):
            return None, None
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache()) if stack.cross_attention else DynamicCache()
    if not stack.causal:
        raise ValueError("An encoder reads the whole source at once: it takes no `past_key_values`.")
    if stack.cross_attention:
        if not (
            isinstance(cache, EncoderDecoderCache)
            and isinstance(cache.self_attention_cache, KEY_VALUE_CACHES)
            and isinstance(cache.cross_attention_cache, KEY_VALUE_CACHES)
        ):
            raise ValueError(
                "The decoder of an encoder-decoder needs `past_key_values` to be an EncoderDecoderCache of two "
                f"DynamicCaches or StaticCaches (what generate() creates), got {cache!r}."
            )
        return cache.self_attention_cache, cache
    if not isinstance(cache, KEY_VALUE_CACHES):
        raise ValueError(
            "A decoder-only Transformer needs `past_key_values` to be a DynamicCache or a StaticCache (what "
            f"generate() creates), got {type(cache).__name__}."
        )
    return cache, None


def _check_cache(stack: nn.Module, self_cache: Cache, cross_cache: EncoderDecoderCache | None, batch_size: int,
                 past_length: int | None, memory: torch.Tensor | None) -> None:
    """Raise unless the caches hold every layer's keys for ``batch_size`` sequences of ``past_length`` positions
    (and of ``memory``'s source positions; a static cache's layers hold their whole buffer, and its length is
    unknown, None, while a graph is traced). Shapes only: this runs at every decoding step."""
    head_dim = stack.d_model // stack.num_heads
    expected = {"self-attention": (self_cache, past_length)}
    if cross_cache is not None and memory is not None and any(cross_cache.is_updated.values()):
        expected["cross-attention"] = (cross_cache.cross_attention_cache, memory.shape[1])
    for kind, (cache, positions) in expected.items():
        layers = [layer for layer in cache.layers if layer.is_initialized]
        found = [tuple(layer.keys.shape) for layer in layers]
        shape = (batch_size, stack.num_heads, positions, head_dim)
        buffers = [(*shape[:2], getattr(layer, "max_cache_len", positions), head_dim) for layer in layers]
        if len(layers) != len(stack.layers) or found != buffers:
            raise ValueError(
                f"`past_key_values` holds {kind} keys of shapes {found}, but this model continues from "
                f"{len(stack.layers)} layers of shape {shape} (batch, num_heads, positions, d_model / num_heads): "
                "pass the cache this model returned for the same sequences, or none to start afresh."
            )


def _memory_mask(stack: nn.Module, encoder_hidden_states, encoder_attention_mask,
                 batch_size: int) -> torch.Tensor | None:
    """The cross-attention mask ``(batch, 1, 1, source_length)``, or None when no source token is padding."""
    if not stack.cross_attention:
        return None
    if encoder_hidden_states is None:
        raise ValueError("The decoder of an encoder-decoder needs `encoder_hidden_states` to attend to.")
    if encoder_hidden_states.shape[0] != batch_size or encoder_hidden_states.shape[-1] != stack.d_model:
        raise ValueError(
            f"`encoder_hidden_states` has shape {tuple(encoder_hidden_states.shape)}, expected "
            f"({batch_size}, source_length, {stack.d_model})."
        )
    source_mask = padding_or_none(
        prepare_padding_mask(encoder_attention_mask, batch_size, encoder_hidden_states.shape[1])
    )
    return None if source_mask is None else source_mask[:, None, None, :]


def check_decoder_inputs(decoder_input_ids, decoder_inputs_embeds, source_rows: int) -> None:
    """Raise unless the decoder of an encoder-decoder has inputs, one row per source (``source_rows``)."""
    if decoder_input_ids is None and decoder_inputs_embeds is None:
        raise ValueError("Pass `decoder_input_ids` (or `labels` to the ForConditionalGeneration head).")
    decoder_inputs, name = ((decoder_input_ids, "decoder_input_ids") if decoder_input_ids is not None
                            else (decoder_inputs_embeds, "decoder_inputs_embeds"))
    check_tensor(decoder_inputs, name)
    if (targets := decoder_inputs.shape[0]) != source_rows:
        raise ValueError(f"The decoder inputs have {targets} rows but the source has {source_rows}: pass one target "
                         "per source.")


def check_encoder_decoder_config(config) -> None:
    """Raise if ``config`` was saved by a head without a decoder attending to an encoder (its ``architectures``)."""
    if not config.is_encoder_decoder and config.architectures:
        raise ValueError(
            f"This config belongs to a {', '.join(config.architectures)}, which has no decoder attending to an "
            "encoder: load an encoder-only head's base model with TransformerEncoderModel (AutoModel does), and "
            "a TransformerForCausalLM with its own class (AutoModelForCausalLM)."
        )


def config_with(config, is_encoder_decoder: bool):
    """The config itself, or a copy with ``is_encoder_decoder`` set for a decoder-only or encoder-only head."""
    if config.is_encoder_decoder == is_encoder_decoder:
        return config
    config = copy.deepcopy(config)
    config.is_encoder_decoder = is_encoder_decoder
    return config


# What transformers asks the Transformer's models beyond the maths, as functions that the classes bind by name (none
# is a base class of the maths): the tied weights' names (every class), generate()'s cache and mask (the generating
# classes; the decoder keeps its keys and values in a ``DynamicCache`` or a ``StaticCache``).


def tied_weights_keys(model: PreTrainedModel, all_submodels: bool = False) -> dict:
    """``get_expanded_tied_weights_keys``: each head sets ``_tied_weights_keys`` from its config (output tying and
    source/target sharing are separate options), so the base class's gate on ``tie_word_embeddings`` alone must not
    apply."""
    if all_submodels:
        return PreTrainedModel.get_expanded_tied_weights_keys(model, all_submodels=True)
    return dict(model._tied_weights_keys or {})


def prepare_cache_for_generation(model: GenerationMixin, generation_config, model_kwargs: dict, *args,
                                 **kwargs) -> None:
    """``_prepare_cache_for_generation``: the attention reads and extends DynamicCaches and StaticCaches; another
    cache would reach forward and be refused there, in words that do not name the option that chose it."""
    implementation = generation_config.cache_implementation
    if implementation not in (None, "dynamic", "static") and generation_config.use_cache is not False:
        raise ValueError(
            f"`cache_implementation={implementation!r}` is not supported: the Transformer keeps its keys and "
            "values in a DynamicCache (leave it unset) or a StaticCache ('static')."
        )
    GenerationMixin._prepare_cache_for_generation(model, generation_config, model_kwargs, *args, **kwargs)


def create_masks_for_generate(attention_mask: torch.Tensor | None = None, cache: Cache | None = None,
                              **kwargs) -> torch.Tensor | None:
    """``create_masks_for_generate`` (a static method): generate() asks a static cache's model for a mask of one
    width at every step (so that a compiled step is not recompiled for each length): ours is the 2D padding mask over
    the cache's whole buffer, padding on its empty positions, from which the stack builds the attention mask
    (masks.build_attention_mask)."""
    cache = kwargs.get("past_key_values") if cache is None else cache  # its name before transformers 5.24
    if attention_mask is None or attention_mask.dim() != 2 or cache is None:
        return attention_mask
    return pad_columns(attention_mask, cache.get_max_length())


ENCODER_ONLY_CLASSES = ("TransformerEncoderModel", "TransformerForSequenceClassification",
                        "TransformerForTokenClassification")


def saved_by_encoder_only_head(config) -> bool:
    """Whether ``config`` is that of an encoder-only head (saved with its class in ``architectures``): AutoModel,
    which maps every TransformerConfig to TransformerModel, then loads TransformerEncoderModel."""
    return (config is not None and not config.is_encoder_decoder
            and any(name in ENCODER_ONLY_CLASSES for name in config.architectures or ()))


def seq2seq_model_output(decoder_outputs: ModelOutput, encoder_outputs: ModelOutput) -> Seq2SeqModelOutput:
    """The encoder-decoder's output: the decoder's last hidden states, hidden states, attentions and cache, and the
    encoder's."""
    return Seq2SeqModelOutput(
        last_hidden_state=decoder_outputs.last_hidden_state,
        decoder_hidden_states=decoder_outputs.hidden_states,
        decoder_attentions=decoder_outputs.attentions,
        cross_attentions=decoder_outputs.cross_attentions,
        encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        encoder_hidden_states=encoder_outputs.hidden_states,
        encoder_attentions=encoder_outputs.attentions,
        **cache_field(output_cache(decoder_outputs)),
    )
