"""The attention encoder-decoder around its maths (`modeling_attention_seq2seq.py`): what its forward returns, the
checks of what enters it (source, decoder inputs, encoder outputs, a cache to continue, a decoder mask), the decoder
run or its step replayed as a CUDA graph (`cuda_graphs.py`), and how it decodes step by step: the hooks of `generate()`
and of our decoding loop (`decoding.py`), which the model binds as its methods, and scheduled sampling."""

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache
from transformers.modeling_outputs import ModelOutput, Seq2SeqLMOutput, Seq2SeqModelOutput
from transformers.utils import is_tracing

from .cache import RecurrentCache, recurrent_cache
from .configuration_attention_seq2seq import AttentionSeq2SeqConfig
from .cuda_graphs import replays_step
from .cuda_graphs import StepGraphStore
from .modeling_utils import (
    CACHE_NAME, as_float32, cache_argument, cache_field, check_no_empty_rows, check_tensor, check_token_inputs,
    output_cache, padding_or_none, prepare_padding_mask,
)


@dataclass
class AttentionSeq2SeqEncoderOutput(ModelOutput):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(batch, source_length, encoder_output_size)`):
            Top encoder layer outputs at every source position (zeros at padded positions): the attention memory.
        final_state (`torch.FloatTensor` of shape `(batch, 1 or 2, encoder_output_size)`):
            The top layer's state after each source's last real token, both directions concatenated: `h` (and the
            LSTM cell `c`). Batch first, so that generate() expands it for beams with the other tensors.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*):
            The embeddings and each encoder layer's outputs, when `output_hidden_states=True`.
    """

    last_hidden_state: torch.FloatTensor | None = None
    final_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class AttentionSeq2SeqModelOutput(Seq2SeqModelOutput):
    """
    transformers' `Seq2SeqModelOutput`, and:

    Args:
        decoder_attentional_states (`torch.FloatTensor` of shape `(batch, target_length, hidden_size)`, *optional*):
            The decoder's output vectors that the output layer reads, with `output_hidden_states=True` and an
            attention: Luong's attentional vectors `tanh(W_c [c_t; h_t])` or Bahdanau's `tanh(W_o [c_t; s_t;
            E y_{t-1}])`. (`last_hidden_state` of the base model; `decoder_hidden_states` ends with the top decoder
            layer's outputs, before the attention.)
    """

    decoder_attentional_states: torch.FloatTensor | None = None


@dataclass
class AttentionSeq2SeqLMOutput(Seq2SeqLMOutput):
    """
    transformers' `Seq2SeqLMOutput`, and `decoder_attentional_states` (see [`AttentionSeq2SeqModelOutput`]).
    """

    decoder_attentional_states: torch.FloatTensor | None = None


def check_source(config: AttentionSeq2SeqConfig, input_ids, inputs_embeds, attention_mask, dtype
                 ) -> torch.Tensor | None:
    """Raise unless exactly one of ``input_ids`` and ``inputs_embeds`` (of ``dtype``) is given and valid for the
    source vocabulary and embedding size of ``config``, and ``attention_mask`` leaves no source empty; return the
    bool padding mask ``(batch, source_length)``, True at tokens, or None where nothing is padded."""
    check_token_inputs(input_ids, inputs_embeds, config.encoder_vocab_size, config.embedding_size, dtype)
    mask = prepare_padding_mask(attention_mask, *(input_ids if input_ids is not None else inputs_embeds).shape[:2])
    if mask is None:
        return None
    check_no_empty_rows(mask)
    return padding_or_none(mask)


def encoder_output(outputs, final_state, hidden_states, return_dict: bool) -> "AttentionSeq2SeqEncoderOutput | tuple":
    """The encoder's output: top-layer ``outputs``, the bridged ``final_state`` and, if asked, the hidden states."""
    result = AttentionSeq2SeqEncoderOutput(outputs, final_state, hidden_states)
    return result if return_dict else result.to_tuple()


def check_decoder_inputs(config: AttentionSeq2SeqConfig, decoder_input_ids, decoder_inputs_embeds, dtype) -> None:
    """Raise unless exactly one of ``decoder_input_ids`` and ``decoder_inputs_embeds`` (of ``dtype``) is given and
    valid for the target vocabulary and embedding size of ``config``."""
    if decoder_input_ids is None and decoder_inputs_embeds is None:
        raise ValueError(
            "Pass `decoder_input_ids` (the decoder start token followed by the target shifted right) or "
            "`decoder_inputs_embeds`, or, to AttentionSeq2SeqForConditionalGeneration, `labels` to build them from."
        )
    check_token_inputs(decoder_input_ids, decoder_inputs_embeds, config.vocab_size, config.embedding_size, dtype,
                       prefix="decoder_")


def as_encoder_output(encoder_outputs: ModelOutput | tuple) -> AttentionSeq2SeqEncoderOutput:
    """``encoder_outputs`` as given to forward (ours, another ModelOutput or a tuple) as ours, which must hold the
    encoder's final state."""
    if not isinstance(encoder_outputs, AttentionSeq2SeqEncoderOutput):
        encoder_outputs = AttentionSeq2SeqEncoderOutput(
            *(encoder_outputs.to_tuple() if isinstance(encoder_outputs, ModelOutput) else encoder_outputs)
        )
    if encoder_outputs.final_state is None:
        raise ValueError(
            "`encoder_outputs` lacks the encoder's `final_state`, which starts the decoder: pass what "
            "`model.get_encoder()(...)` returns, or the tuple (last_hidden_state, final_state)."
        )
    return encoder_outputs


def decoder_cache(config: AttentionSeq2SeqConfig, cache: Cache | None, memory: torch.Tensor,
                  attention_mask: torch.Tensor | None, decoder_input_ids: torch.Tensor | None,
                  decoder_inputs_embeds: torch.Tensor | None, decoder_attention_mask: torch.Tensor | None
                  ) -> RecurrentCache:
    """The cache the decoder reads and updates: ``cache`` (checked to continue this call's sources) or a new one,
    holding the source it attends to: the encoder outputs ``memory`` `(batch, source_length, memory_size)` and the
    bool source mask made from ``attention_mask`` (absent without padding), as `per_input` ``"memory"`` and
    ``"memory_mask"``. Refuses decoder inputs (ids or embeddings) of another batch size and a
    ``decoder_attention_mask`` that does not fit them."""
    batch, source_length = memory.shape[:2]
    decoder_inputs = decoder_input_ids if decoder_input_ids is not None else decoder_inputs_embeds
    if decoder_inputs.shape[0] != batch:
        name = "decoder_input_ids" if decoder_input_ids is not None else "decoder_inputs_embeds"
        raise ValueError(f"`{name}` has {decoder_inputs.shape[0]} rows but the source has {batch}: pass one target per "
                         "source.")
    mask = padding_or_none(prepare_padding_mask(attention_mask, batch, source_length))
    cache = recurrent_cache(cache)
    if cache is None:
        cache = RecurrentCache()
    elif cache.states:
        check_cache(config, cache, batch, source_length)
    check_decoder_mask(decoder_attention_mask, batch, cache.get_seq_length(), decoder_inputs.shape[1])
    cache.per_input["memory"] = memory
    if mask is None:
        cache.per_input.pop("memory_mask", None)
    else:
        cache.per_input["memory_mask"] = mask
    return cache


def run_decoder(decoder, step_graphs: StepGraphStore, decoder_input_ids, cache, encoder_final_state=None,
                output_hidden_states=False, decoder_inputs_embeds=None, output_attentions=False):
    """``decoder`` (an `AttentionSeq2SeqDecoder`) on checked inputs, the arguments of its forward: the replay of its
    step captured in ``step_graphs`` (CUDA graphs) where one applies, else the decoder itself. Returns what its
    forward returns."""
    if decoder_input_ids is not None and replays_step(decoder, cache, decoder_input_ids, output_hidden_states):
        outputs, weights, hidden_states = step_graphs.replay(decoder, decoder_input_ids, cache,
                                                             encoder_final_state=None)
        weights = weights.clone() if output_attentions and weights is not None else None
        return outputs.clone(), weights, hidden_states
    return decoder(decoder_input_ids, cache, encoder_final_state, output_hidden_states, decoder_inputs_embeds)


def model_output(outputs, weights, decoder_hidden_states, encoder_outputs: AttentionSeq2SeqEncoderOutput,
                 cache: RecurrentCache | None, output_attentions: bool, attentional: bool
                 ) -> AttentionSeq2SeqModelOutput:
    """The base model's output from the decoder's (see [`AttentionSeq2SeqDecoder.forward`]): `outputs` are also the
    `decoder_attentional_states` when `attentional`; the weights become one layer's single head."""
    return AttentionSeq2SeqModelOutput(
        last_hidden_state=outputs,
        decoder_hidden_states=decoder_hidden_states,
        cross_attentions=(weights.unsqueeze(1),) if output_attentions and weights is not None else None,
        encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        encoder_hidden_states=encoder_outputs.hidden_states,
        decoder_attentional_states=outputs if attentional else None,
        **cache_field(cache),
    )


def check_cache(config: AttentionSeq2SeqConfig, cache: RecurrentCache, batch: int, source_length: int) -> None:
    """Raise unless the non-empty ``cache`` continues this decoder for ``batch`` sources of ``source_length``
    positions."""
    feed = {"input_feed": (batch, 1, config.hidden_size)} if config.input_feeding else {}
    cache.check_shapes(config.cell_type, config.decoder_layers, batch, config.hidden_size, "decoder_layers", feed)
    keys = cache.per_input.get("projected_keys")
    if keys is not None and tuple(keys.shape[:2]) != (batch, source_length):
        raise ValueError(
            f"`past_key_values` was made for {keys.shape[0]} sources of {keys.shape[1]} positions, but this call "
            f"has {batch} of {source_length}: pass the cache returned for these sources, or none to start afresh."
        )


def check_decoder_mask(mask: torch.Tensor | None, batch: int, cached: int, length: int) -> None:
    """Raise unless ``mask`` is a right-padded 0/1 ``decoder_attention_mask`` of ``batch`` rows covering the
    ``cached`` positions a cache holds and the ``length`` new ones (what generate() passes at every step)."""
    if mask is None:
        return
    check_tensor(mask, "decoder_attention_mask")
    if cached and mask.dim() == 2 and mask.shape[1] != cached + length:
        raise ValueError(
            f"`decoder_attention_mask` has {mask.shape[1]} columns, but the cache holds {cached} positions and "
            f"{length} new ones come: pass the mask of the whole target so far, {cached} + {length} = "
            f"{cached + length} columns (generate() widens it at every step)."
        )
    mask = prepare_padding_mask(mask, batch, cached + length, name="decoder_attention_mask")
    if not is_tracing(mask) and bool((mask[:, 1:] & ~mask[:, :-1]).any()):
        raise ValueError(
            "`decoder_attention_mask` has padding before real tokens: pad the decoder inputs on the right."
        )


# How [`AttentionSeq2SeqForConditionalGeneration`] decodes step by step: its inputs at each step of `generate()` and
# the step of our decoding loop, which the class binds as its methods of these names; and scheduled sampling in
# training, which its forward calls.


def prepare_inputs_for_generation(
    model,
    input_ids: torch.LongTensor,
    next_sequence_length: int | None = None,
    cache: Cache | None = None,
    attention_mask: torch.Tensor | None = None,
    is_first_iteration: bool | None = False,
    encoder_outputs: AttentionSeq2SeqEncoderOutput | None = None,
    decoder_attention_mask: torch.Tensor | None = None,
    use_cache: bool | None = None,
    output_attentions: bool | None = None,
    output_hidden_states: bool | None = None,
    logits_to_keep: int | torch.Tensor | None = None,
    labels: torch.LongTensor | None = None,
    past_key_values: Cache | None = None,
    inputs_embeds: torch.FloatTensor | None = None,
    **kwargs,
) -> dict:
    """One step's inputs for generate(): the newest decoder tokens, the cache, the source mask, the encoder
    outputs and the flags. `labels` (which Seq2SeqTrainer leaves in its inputs) are not forwarded, nor
    `inputs_embeds`: the source's, which the encoder has read (`generate(inputs_embeds=...)`). Other keyword
    arguments are forwarded as GenerationMixin forwards them, for forward to take or refuse.

    Same result as GenerationMixin's version for this model, without its per-step work that does not apply here
    (position ids, 4-D masks for compiled caches, device moves) or costs time: it inspects `forward`'s signature
    at every step for models registered for remote code, a tenth of a batch-1 decoding step on CPU
    (benchmarks: `batch1_overhead`).
    """
    if next_sequence_length is not None:
        input_ids = input_ids[:, -next_sequence_length:]
    inputs = {"decoder_input_ids": input_ids, CACHE_NAME: cache_argument(cache, past_key_values),
              "attention_mask": attention_mask, "encoder_outputs": encoder_outputs,
              "decoder_attention_mask": decoder_attention_mask, "use_cache": use_cache,
              "output_attentions": output_attentions, "output_hidden_states": output_hidden_states,
              "logits_to_keep": logits_to_keep}
    return {**{name: value for name, value in inputs.items() if value is not None}, **kwargs}


def decoding_step_inputs(model, model_kwargs: dict, rows_per_source: int = 1) -> dict | None:
    """What [`decoding_step`] reads, from generate()'s `model_kwargs` after its first step (a call of `forward`,
    which checked them and left the source in the cache): the cache. `rows_per_source` is the number of
    consecutive rows that share a source until the end (beam search: `num_beams`); those rows then share one
    copy of the source in the cache (generate() repeats it for every beam), which the loop shrinks by a
    `rows_per_source`-th when sentences leave the batch, and which the attention reads once a step for all of
    them. None where the step does not apply (no cache, a `decoder_attention_mask`): the decoding loop then
    calls `forward` at every step."""
    cache = recurrent_cache(model_kwargs.get(CACHE_NAME))
    if not model_kwargs.get("use_cache") or cache is None or model_kwargs.get("decoder_attention_mask") is not None:
        return None
    if rows_per_source > 1:
        cache.share_per_input(rows_per_source)
    return {"cache": cache}


def decoding_step(model, input_ids: torch.LongTensor, cache: RecurrentCache, out: torch.Tensor | None = None
                  ) -> torch.Tensor:
    """One step of hf_seqmodels' decoding loop (`decoding.py`): the float32 logits `(rows, vocab_size)` of the
    token after `input_ids` `(rows, 1)`, from the cache [`decoding_step_inputs`] prepared, updated in place;
    written into `out` where given (see `output_layer_into`). The same computation as `forward`, without its
    checks of every argument (the loop's inputs were checked at its first step and are its own since) and its
    output objects: at batch 1 on a CPU they cost a tenth of a step (benchmarks: `batch1_overhead`)."""
    outputs, _, _ = run_decoder(model.model.decoder, model.model.step_graphs, input_ids, cache)
    return as_float32(model._logits(outputs[:, -1], out))


def decode_sampling_own_predictions(
    model, decoder_input_ids, decoder_inputs_embeds, encoder_outputs, cache, use_cache, **inputs
) -> tuple[AttentionSeq2SeqModelOutput, torch.Tensor]:
    """Scheduled sampling (Bengio et al., 2015): decode one position at a time with the cache, feeding at each
    position after the first, for each row, the gold token of `decoder_input_ids` with probability
    `config.teacher_forcing_ratio` (a coin from torch's RNG) and otherwise the argmax of the previous logits.
    Returns the model outputs of all positions, as one call would, and the logits."""
    if decoder_inputs_embeds is not None:
        raise ValueError(
            "`decoder_inputs_embeds` cannot be trained with `teacher_forcing_ratio` < 1: scheduled sampling feeds "
            "the model's own predicted token ids back; pass `decoder_input_ids` or `labels`, or set "
            "`model.config.set_teacher_forcing_ratio(1.0)`."
        )
    source_ids, source_embeds = inputs.pop("input_ids"), inputs.pop("inputs_embeds")
    if encoder_outputs is None:
        encoder_outputs = model.model.encoder(
            source_ids, inputs["attention_mask"], source_embeds,
            output_hidden_states=model._flag(inputs["output_hidden_states"], "output_hidden_states"),
            return_dict=True,
        )
    decoder_mask = inputs.pop("decoder_attention_mask")
    steps, logits, step_input = [], [], decoder_input_ids[:, :1]
    for t in range(decoder_input_ids.shape[1]):
        if t > 0:
            gold = torch.rand(step_input.shape, device=step_input.device) < model.config.teacher_forcing_ratio
            step_input = torch.where(gold, decoder_input_ids[:, t : t + 1], logits[-1].argmax(-1))
        step = model.model(
            **inputs, decoder_input_ids=step_input, encoder_outputs=encoder_outputs, cache=cache, use_cache=True,
            decoder_attention_mask=None if decoder_mask is None else decoder_mask[:, : t + 1],
        )
        cache = output_cache(step)
        steps.append(step)
        logits.append(model._logits(step.last_hidden_state))
    return concatenate_steps(steps, cache if use_cache else None), torch.cat(logits, dim=1)


def concatenate_steps(steps: list[AttentionSeq2SeqModelOutput], cache: Cache | None) -> AttentionSeq2SeqModelOutput:
    """The outputs of decoding steps of one position each, as those of one call over all the positions, with
    ``cache``."""

    def joined(name: str, dim: int = 1):
        values = [getattr(step, name) for step in steps]
        if values[0] is None:
            return None
        if isinstance(values[0], tuple):  # one tensor per layer
            return tuple(torch.cat(per_layer, dim=dim) for per_layer in zip(*values))
        return torch.cat(values, dim=dim)

    return AttentionSeq2SeqModelOutput(
        last_hidden_state=joined("last_hidden_state"),
        decoder_hidden_states=joined("decoder_hidden_states"),
        cross_attentions=joined("cross_attentions", dim=2),  # (batch, heads, positions, source_length)
        encoder_last_hidden_state=steps[0].encoder_last_hidden_state,
        encoder_hidden_states=steps[0].encoder_hidden_states,
        decoder_attentional_states=joined("decoder_attentional_states"),
        **cache_field(cache),
    )
