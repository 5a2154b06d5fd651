"""The attention encoder-decoder — Sutskever, Bahdanau and Luong style recurrent translation models — as
transformers models: a base model and a conditional-generation head that `generate()` drives."""

from dataclasses import dataclass

import torch
from torch import nn
from transformers import GenerationMixin
from transformers.cache_utils import Cache
from transformers.modeling_outputs import ModelOutput, Seq2SeqLMOutput, Seq2SeqModelOutput
from transformers.utils import is_tracing

from .attention import AdditiveAttention, LuongAttention
from .cache import RecurrentCache, RecurrentGenerationMixin, recurrent_cache
from .cache_names import CACHE_NAME, cache_argument, cache_field, output_cache
from .configuration_attention_seq2seq import AttentionSeq2SeqConfig
from .masks import check_no_empty_rows, check_tensor, padding_or_none, prepare_padding_mask
from .modeling_utils import (
    EncoderDecoderMixin,
    SeqModelsPreTrainedModel,
    check_token_inputs,
    keep_logits_positions,
    lm_loss,
    lm_output_layers,
    output_layer_into,
)
from .recurrent_layers import RecurrentStack, State
from .step_graphs import GraphedSteps, replays_step


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


class AttentionSeq2SeqPreTrainedModel(SeqModelsPreTrainedModel):
    config_class = AttentionSeq2SeqConfig
    _is_stateful = True
    # transformers' activation checkpointing: every attention module is a `GradientCheckpointingLayer` (attention.py)
    # and recomputes its scores in the backward pass.
    supports_gradient_checkpointing = True


class AttentionSeq2SeqEncoder(nn.Module):
    """Source embeddings followed by `encoder_layers` stacked (usually bidirectional) recurrent layers."""

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.encoder_vocab_size, config.embedding_size)
        self.dropout = nn.Dropout(config.dropout)
        self.rnn = RecurrentStack(
            config.cell_type,
            config.embedding_size,
            config.hidden_size,
            config.encoder_layers,
            bidirectional=config.bidirectional_encoder,
            dropout=config.dropout,
        )

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> AttentionSeq2SeqEncoderOutput | tuple:
        """
        Args:
            input_ids: `(batch, source_length)` source token ids; or pass `inputs_embeds`
                `(batch, source_length, embedding_size)`.
            attention_mask: `(batch, source_length)`, 1 for tokens and 0 for padding (on either side).
            output_attentions: accepted because generate() passes it; a recurrent encoder has no attention.
        """
        check_token_inputs(input_ids, inputs_embeds, self.config.encoder_vocab_size, self.config.embedding_size,
                           self.embed_tokens.weight.dtype)
        if input_ids is not None:
            inputs_embeds = self.embed_tokens(input_ids)
        mask = prepare_padding_mask(attention_mask, *inputs_embeds.shape[:2])
        if mask is not None:
            check_no_empty_rows(mask)
            mask = padding_or_none(mask)
        outputs, states, hidden_states = self.rnn(
            self.dropout(inputs_embeds), mask, output_hidden_states=bool(output_hidden_states)
        )
        # (num_directions, batch, hidden) per part -> (batch, parts, num_directions * hidden)
        final_state = torch.stack([part.transpose(0, 1).flatten(1) for part in states[-1]], dim=1)
        result = AttentionSeq2SeqEncoderOutput(
            last_hidden_state=outputs, final_state=final_state, hidden_states=hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        return result if return_dict else result.to_tuple()


class AttentionSeq2SeqDecoder(GraphedSteps):
    """Target embeddings, `decoder_layers` stacked recurrent layers started from the bridged encoder state, and
    the attention of `config.attention_type` (see [`AttentionSeq2SeqConfig`] for the equations).

    Teacher forcing runs the recurrent layers over the whole target at once when no attention result feeds back
    into them (Luong without input feeding, or no attention); Bahdanau attention and input feeding need a loop over
    the target positions.
    """

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__()
        self.attention_type = config.attention_type
        self.input_feeding = config.input_feeding
        self.cell_type = config.cell_type
        self.layers = config.decoder_layers
        self.hidden_size = config.hidden_size
        memory_size = config.encoder_output_size
        attention_size = config.attention_size or config.hidden_size
        fed_size = 0  # what the recurrent layer reads besides the target embedding
        if config.attention_type == "bahdanau":
            fed_size = memory_size  # the context
        elif config.input_feeding:
            fed_size = config.hidden_size  # the previous attentional vector

        self.embed_tokens = nn.Embedding(config.vocab_size, config.embedding_size)
        self.dropout = nn.Dropout(config.dropout)
        self.rnn = RecurrentStack(
            config.cell_type, config.embedding_size + fed_size, config.hidden_size, config.decoder_layers,
            dropout=config.dropout,
        )
        state_parts = 2 if config.cell_type == "lstm" else 1
        self.bridge = nn.Linear(state_parts * memory_size, state_parts * config.decoder_layers * config.hidden_size)
        self.attention = None
        if config.attention_type == "bahdanau":
            self.attention = AdditiveAttention(config.hidden_size, memory_size, attention_size)
            # Bahdanau's output layer also reads the previous target embedding.
            self.combine = nn.Linear(memory_size + config.hidden_size + config.embedding_size, config.hidden_size)
        elif config.attention_type != "none":
            score = config.attention_type.removeprefix("luong_")
            self.attention = LuongAttention(score, config.hidden_size, memory_size, attention_size)
            self.combine = nn.Linear(memory_size + config.hidden_size, config.hidden_size, bias=False)  # W_c

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def initial_state(self, final_state: torch.Tensor) -> list[State]:
        """The bridge: encoder final state `(batch, parts, memory_size)` -> every decoder layer's initial state,
        `(h,)` or `(h, c)` each of shape `(1, batch, hidden_size)`."""
        batch, parts = final_state.shape[:2]
        init = torch.tanh(self.bridge(final_state.flatten(1))).view(batch, parts, self.layers, self.hidden_size)
        return [tuple(init[:, p, layer].unsqueeze(0).contiguous() for p in range(parts))
                for layer in range(self.layers)]

    def check_cache(self, cache: RecurrentCache, batch: int, source_length: int) -> None:
        """Raise unless the non-empty ``cache`` continues this decoder for ``batch`` sources of ``source_length``
        positions. Shapes only: this runs at every decoding step."""
        feed = {"input_feed": (batch, 1, self.hidden_size)} if self.input_feeding else {}
        cache.check_shapes(self.cell_type, self.layers, batch, self.hidden_size, "decoder_layers", feed)
        keys = cache.per_input.get("projected_keys")
        if keys is not None and tuple(keys.shape[:2]) != (batch, source_length):
            raise ValueError(
                f"`past_key_values` was made for {keys.shape[0]} sources of {keys.shape[1]} positions, but this call "
                f"has {batch} of {source_length}: pass the cache returned for these sources, or none to start afresh."
            )

    def forward(
        self,
        input_ids: torch.LongTensor,
        memory: torch.Tensor,
        memory_mask: torch.Tensor | None,
        encoder_final_state: torch.Tensor,
        cache: RecurrentCache,
        output_hidden_states: bool = False,
        inputs_embeds: torch.Tensor | None = None,
        rows_per_source: int = 1,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, ...] | None]:
        """Decode a chunk of target positions, continuing from `cache` (empty at the start) and updating it.

        Args:
            input_ids: `(batch, length)` decoder input ids, or None with `inputs_embeds` `(batch, length,
                embedding_size)`.
            memory: `(batch, source_length, memory_size)` encoder outputs.
            memory_mask: bool `(batch, source_length)`, True for real source tokens; `None` when there is no padding.
            encoder_final_state: `(batch, parts, memory_size)`, used to start when `cache` is empty.
            rows_per_source: for one position (a decoding step), the number of consecutive rows that share a source,
                as a sentence's beams do: `memory`, `memory_mask` and the cache's per-input tensors then hold one
                row per source, which its rows attend to together (see [`_attend`]).

        Returns:
            The output vectors `(batch, length, hidden_size)` for the output layer, the attention weights
            `(batch, length, source_length)` (`None` without attention) and, if asked, the hidden states: the
            embeddings and each recurrent layer's outputs.
        """
        embeds = self.dropout(self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds)
        states = cache.states or self.initial_state(encoder_final_state)
        keys = None
        if self.attention is not None:
            keys = cache.per_input.get("projected_keys")
            if keys is None:
                keys = self.attention.project_keys(memory)  # once per source, reused at every step

        extras = {}
        if self.attention_type == "bahdanau" or self.input_feeding:
            outputs, weights, states, layer_outputs, extras = self._step_by_step(
                embeds, memory, memory_mask, keys, states, cache, rows_per_source
            )
        else:
            hidden, states, all_hidden = self.rnn(embeds, None, states, output_hidden_states)
            layer_outputs = all_hidden[1:] if output_hidden_states else None
            outputs, weights = hidden, None
            if self.attention is not None:
                context, weights = self._attend(hidden, memory, memory_mask, keys, rows_per_source)
                outputs = torch.tanh(self.combine(torch.cat([context, hidden], dim=-1)))

        if keys is not None:
            cache.per_input["projected_keys"] = keys
        cache.store(states, embeds.shape[1], **extras)
        return outputs, weights, (embeds, *layer_outputs) if output_hidden_states else None

    def _attend(self, query, memory, memory_mask, keys, rows_per_source: int):
        """The attention of `query` `(batch, length, hidden_size)`. With `rows_per_source` > 1 (one position,
        `length` 1), `memory`, `memory_mask` and `keys` hold one row per source, and each source serves that many
        consecutive rows (a sentence's beams), which attend as that many queries of one memory row: beam search then
        reads each source once a step, not once per beam."""
        if rows_per_source == 1:
            return self.attention(query, memory, memory_mask, keys)
        batch = query.shape[0]
        context, weights = self.attention(query.view(batch // rows_per_source, rows_per_source, -1), memory,
                                          memory_mask, keys)
        return context.view(batch, 1, -1), weights.view(batch, 1, -1)

    def _step_by_step(self, embeds, memory, memory_mask, keys, states, cache, rows_per_source):
        """One target position at a time: Bahdanau (the context of the previous state feeds the recurrent layer)
        or Luong with input feeding (the previous attentional vector does: the last one is returned with the extras
        to cache)."""
        outputs, weights, layer_outputs = [], [], []
        if self.input_feeding:
            input_feed = cache.extras.get("input_feed")
            if input_feed is None:
                input_feed = embeds.new_zeros(embeds.shape[0], 1, self.hidden_size)
        for t in range(embeds.shape[1]):
            embed = embeds[:, t : t + 1]
            if self.attention_type == "bahdanau":
                query = states[-1][0].transpose(0, 1)  # the top layer's previous h: (batch, 1, hidden)
                context, weight = self._attend(query, memory, memory_mask, keys, rows_per_source)
                hidden, states, all_hidden = self.rnn(torch.cat([embed, context], dim=-1), None, states, True)
                outputs.append(torch.cat([context, hidden, embed], dim=-1))
            else:
                hidden, states, all_hidden = self.rnn(torch.cat([embed, input_feed], dim=-1), None, states, True)
                context, weight = self._attend(hidden, memory, memory_mask, keys, rows_per_source)
                input_feed = torch.tanh(self.combine(torch.cat([context, hidden], dim=-1)))
                outputs.append(input_feed)
            weights.append(weight)
            layer_outputs.append(all_hidden[1:])
        outputs = torch.cat(outputs, dim=1)
        layer_outputs = tuple(torch.cat(per_layer, dim=1) for per_layer in zip(*layer_outputs))
        if self.input_feeding:
            return outputs, torch.cat(weights, dim=1), states, layer_outputs, {"input_feed": input_feed}
        outputs = torch.tanh(self.combine(outputs))  # Bahdanau's output layer, for all positions at once
        return outputs, torch.cat(weights, dim=1), states, layer_outputs, {}


class AttentionSeq2SeqModel(EncoderDecoderMixin, AttentionSeq2SeqPreTrainedModel):
    """The encoder and the attention decoder; returns the decoder's output vectors (before the output layer).

    Its forward and that of [`AttentionSeq2SeqForConditionalGeneration`] export with `torch.export` (strict or not,
    `use_cache=False`; fixed lengths, as the recurrent kernels and the decoding loop unroll over the positions) and
    compile as one graph with `torch.compile(fullgraph=True)` under
    `torch._dynamo.config.patch(allow_rnn=True)`, the flag Dynamo needs to hold a recurrent module (hence no
    `_can_compile_fullgraph`: `generate()` must not compile forward without it).
    """

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__(config)
        self.encoder = AttentionSeq2SeqEncoder(config)
        self.decoder = AttentionSeq2SeqDecoder(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value):
        self.encoder.embed_tokens = value

    def _target_embeddings(self) -> list[tuple[nn.Module, str]]:
        modules = [self.decoder] if self.config.source_vocab_size is not None else [self.decoder, self.encoder]
        return [(module, "embed_tokens") for module in modules]

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: AttentionSeq2SeqEncoderOutput | tuple | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: Cache | None = None,
    ) -> AttentionSeq2SeqModelOutput | tuple:
        """
        Args:
            input_ids: `(batch, source_length)` source ids; or `inputs_embeds` `(batch, source_length,
                embedding_size)`, or `encoder_outputs` from `get_encoder()`.
            attention_mask: `(batch, source_length)` source mask, 1 for tokens and 0 for padding (either side).
            decoder_input_ids: `(batch, target_length)` decoder inputs: the decoder start token, then the target
                shifted right. With a cache, only the new positions. Or `decoder_inputs_embeds` `(batch,
                target_length, embedding_size)`, vectors in place of the decoder's token embeddings.
            decoder_attention_mask: `(batch, target_length)`, optional; with a cache, `(batch, cached + new
                positions)`, the whole target so far, as generate() passes it. The decoder reads left to right, so
                padding after a target's end never changes its real positions; only right padding is accepted.
            cache: a `RecurrentCache` returned by the previous call, to continue decoding from (`past_key_values`,
                its name before transformers 5.24, is accepted too).
            use_cache: return the decoder state in a `RecurrentCache`.
            output_attentions: return the cross-attention weights of every target position, as
                `cross_attentions`: a one-element tuple (one attention layer) of shape
                `(batch, 1, target_length, source_length)` (one head).
            output_hidden_states: return `encoder_hidden_states` (the embeddings and each encoder layer's outputs),
                `decoder_hidden_states` (the embeddings and each decoder layer's outputs) and, with attention,
                `decoder_attentional_states` (the output vectors after the attention, `last_hidden_state`).
        """
        return_dict = self._flag(return_dict, "return_dict")
        output_hidden_states = self._flag(output_hidden_states, "output_hidden_states")
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError(
                "Pass `decoder_input_ids` (the decoder start token followed by the target shifted right) or "
                "`decoder_inputs_embeds`, or, to AttentionSeq2SeqForConditionalGeneration, `labels` to build them from."
            )
        check_token_inputs(decoder_input_ids, decoder_inputs_embeds, self.config.vocab_size,
                           self.config.embedding_size, self.decoder.embed_tokens.weight.dtype, prefix="decoder_")
        decoder_inputs = decoder_input_ids if decoder_input_ids is not None else decoder_inputs_embeds
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids, attention_mask, inputs_embeds, output_hidden_states=output_hidden_states, return_dict=True
            )
        elif not isinstance(encoder_outputs, AttentionSeq2SeqEncoderOutput):
            encoder_outputs = AttentionSeq2SeqEncoderOutput(
                *(encoder_outputs.to_tuple() if isinstance(encoder_outputs, ModelOutput) else encoder_outputs)
            )
        if encoder_outputs.final_state is None:
            raise ValueError(
                "`encoder_outputs` lacks the encoder's `final_state`, which starts the decoder: pass what "
                "`model.get_encoder()(...)` returns, or the tuple (last_hidden_state, final_state)."
            )
        memory = encoder_outputs.last_hidden_state
        batch, source_length = memory.shape[:2]
        if decoder_inputs.shape[0] != batch:
            raise ValueError(
                f"`{'decoder_input_ids' if decoder_input_ids is not None else 'decoder_inputs_embeds'}` has "
                f"{decoder_inputs.shape[0]} rows but the source has {batch}: pass one target per source."
            )
        mask = padding_or_none(prepare_padding_mask(attention_mask, batch, source_length))

        cache = recurrent_cache(cache_argument(cache, past_key_values))
        if cache is None:
            cache = RecurrentCache()
        elif cache.states:
            self.decoder.check_cache(cache, batch, source_length)
        check_decoder_mask(decoder_attention_mask, batch, cache.get_seq_length(), decoder_inputs.shape[1])
        outputs, weights, decoder_hidden_states = self.run_decoder(
            decoder_input_ids, memory, mask, encoder_outputs.final_state, cache, output_hidden_states,
            decoder_inputs_embeds, output_attentions,
        )
        result = AttentionSeq2SeqModelOutput(
            last_hidden_state=outputs,
            decoder_hidden_states=decoder_hidden_states,
            cross_attentions=(weights.unsqueeze(1),) if output_attentions and weights is not None else None,
            encoder_last_hidden_state=memory,
            encoder_hidden_states=encoder_outputs.hidden_states,
            decoder_attentional_states=outputs if output_hidden_states and self.decoder.attention is not None else None,
            **cache_field(cache if use_cache else None),
        )
        return result if return_dict else result.to_tuple()

    def run_decoder(
        self, decoder_input_ids, memory, mask, encoder_final_state, cache, output_hidden_states=False,
        decoder_inputs_embeds=None, output_attentions=False, rows_per_source=1,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, ...] | None]:
        """The decoder on checked inputs (the arguments of [`AttentionSeq2SeqDecoder.forward`], `mask` a bool source
        mask or None): the replay of its captured step (CUDA graphs) where one applies, else the decoder itself."""
        if decoder_input_ids is not None and replays_step(self.decoder, cache, decoder_input_ids, output_hidden_states):
            outputs, weights, hidden_states = self.decoder.step_graphs(
                self.decoder, decoder_input_ids, cache, memory=memory, memory_mask=mask, encoder_final_state=None,
                rows_per_source=rows_per_source,
            )
            weights = weights.clone() if output_attentions and weights is not None else None
            return outputs.clone(), weights, hidden_states
        return self.decoder(decoder_input_ids, memory, mask, encoder_final_state, cache, output_hidden_states,
                            decoder_inputs_embeds, rows_per_source)


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


class AttentionSeq2SeqForConditionalGeneration(
    RecurrentGenerationMixin, EncoderDecoderMixin, AttentionSeq2SeqPreTrainedModel, GenerationMixin
):
    """The attention encoder-decoder with its output layer: translation and other sequence-to-sequence tasks."""

    _tied_weights_keys = {"lm_head.weight": "model.decoder.embed_tokens.weight"}

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__(config)
        self.model = AttentionSeq2SeqModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.projection, self.lm_head = lm_output_layers(
            config.hidden_size, config.embedding_size, config.vocab_size, config.tie_word_embeddings
        )
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def _target_embeddings(self) -> list[tuple[nn.Module, str]]:
        return self.model._target_embeddings()

    def prepare_inputs_for_generation(
        self,
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

    def decoding_step_inputs(self, model_kwargs: dict, rows_per_source: int = 1) -> dict | None:
        """What [`decoding_step`] reads, from generate()'s `model_kwargs` after its first step (a call of `forward`,
        which checked them): the encoder's outputs, the source mask as `forward` prepares it (None without padding),
        the cache, and `rows_per_source`, the number of consecutive rows that share a source until the end (beam
        search: `num_beams`). Those rows share one copy of the encoder outputs, the mask and the cache's projected
        keys (generate() repeats them for every beam): the loop then copies a `rows_per_source`-th of them when
        sentences leave the batch. None where the step does not apply (no cache, a `decoder_attention_mask`): the
        decoding loop then calls `forward` at every step."""
        cache = recurrent_cache(model_kwargs.get(CACHE_NAME))
        if not model_kwargs.get("use_cache") or cache is None or model_kwargs.get("decoder_attention_mask") is not None:
            return None
        memory = model_kwargs["encoder_outputs"].last_hidden_state
        mask = padding_or_none(prepare_padding_mask(model_kwargs.get("attention_mask"), memory.shape[0],
                                                    memory.shape[1]))
        if rows_per_source > 1:
            memory = memory[::rows_per_source].contiguous()
            mask = None if mask is None else mask[::rows_per_source].contiguous()
            cache.share_per_input(rows_per_source)
        return {"memory": memory, "memory_mask": mask, "cache": cache, "rows_per_source": rows_per_source}

    def decoding_step(self, input_ids: torch.LongTensor, memory: torch.Tensor, memory_mask: torch.Tensor | None,
                      cache: RecurrentCache, rows_per_source: int = 1, out: torch.Tensor | None = None
                      ) -> torch.Tensor:
        """One step of hf_seqmodels' decoding loop (`decoding.py`): the float32 logits `(rows, vocab_size)` of the
        token after `input_ids` `(rows, 1)`, from the inputs [`decoding_step_inputs`] prepared, the cache updated in
        place; written into `out` where given (see `output_layer_into`). The same computation as `forward`, without
        its checks of every argument (the loop's inputs were checked at its first step and are its own since) and
        its output objects: at batch 1 on a CPU they cost a tenth of a step (benchmarks: `batch1_overhead`)."""
        outputs, _, _ = self.model.run_decoder(input_ids, memory, memory_mask, None, cache,
                                               rows_per_source=rows_per_source)
        return self._logits(outputs[:, -1], out).float()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: AttentionSeq2SeqEncoderOutput | tuple | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        past_key_values: Cache | None = None,
    ) -> AttentionSeq2SeqLMOutput | tuple:
        """
        labels: `(batch, target_length)` target ids, ending with the end-of-sequence token; -100 marks positions
            that do not count (padding). Without `decoder_input_ids` or `decoder_inputs_embeds`, they are built from
            `labels` by shifting right.
        logits_to_keep: compute the logits of these decoder positions only: an int keeps the last `logits_to_keep`
            (0: all; generate() asks for 1), a 1-D tensor of positions keeps those. `labels` must then label
            exactly the positions kept.
        The other arguments are those of [`AttentionSeq2SeqModel.forward`].

        While training with `labels` and a `config.teacher_forcing_ratio` below 1, the decoder runs one position at a
        time and reads, for each row and position, the gold previous token with that probability and its own
        previous prediction otherwise (see [`AttentionSeq2SeqConfig`]).
        """
        return_dict = self._flag(return_dict, "return_dict")
        inputs = dict(
            input_ids=input_ids,
            attention_mask=attention_mask,
            decoder_input_ids=self.decoder_inputs_from_labels(labels, decoder_input_ids, decoder_inputs_embeds),
            decoder_attention_mask=decoder_attention_mask,
            encoder_outputs=encoder_outputs,
            cache=cache_argument(cache, past_key_values),
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=self._use_cache(use_cache),
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        if labels is not None and self.training and self.config.teacher_forcing_ratio < 1:
            outputs, logits = self._decode_sampling_own_predictions(**inputs)
            logits = keep_logits_positions(logits, logits_to_keep)
        else:
            outputs = self.model(**inputs)
            logits = self._logits(keep_logits_positions(outputs.last_hidden_state, logits_to_keep))

        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        result = AttentionSeq2SeqLMOutput(
            loss=loss,
            logits=logits,
            decoder_hidden_states=outputs.decoder_hidden_states,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            decoder_attentional_states=outputs.decoder_attentional_states,
            **cache_field(output_cache(outputs)),
        )
        return result if return_dict else result.to_tuple()

    def _logits(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """The output layer: decoder output vectors `(..., hidden_size)` -> logits `(..., vocab_size)`; for 2-D
        `hidden`, written into `out` where given (see `output_layer_into`)."""
        hidden = self.dropout(hidden)
        if self.projection is not None:
            hidden = self.projection(hidden)
        return output_layer_into(self.lm_head, hidden, out)

    def _decode_sampling_own_predictions(
        self, decoder_input_ids, decoder_inputs_embeds, encoder_outputs, cache, use_cache, **inputs
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
            encoder_outputs = self.model.encoder(
                source_ids, inputs["attention_mask"], source_embeds,
                output_hidden_states=self._flag(inputs["output_hidden_states"], "output_hidden_states"),
                return_dict=True,
            )
        decoder_mask = inputs.pop("decoder_attention_mask")
        steps, logits, step_input = [], [], decoder_input_ids[:, :1]
        for t in range(decoder_input_ids.shape[1]):
            if t > 0:
                gold = torch.rand(step_input.shape, device=step_input.device) < self.config.teacher_forcing_ratio
                step_input = torch.where(gold, decoder_input_ids[:, t : t + 1], logits[-1].argmax(-1))
            step = self.model(
                **inputs, decoder_input_ids=step_input, encoder_outputs=encoder_outputs, cache=cache, use_cache=True,
                decoder_attention_mask=None if decoder_mask is None else decoder_mask[:, : t + 1],
            )
            cache = output_cache(step)
            steps.append(step)
            logits.append(self._logits(step.last_hidden_state))
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


__all__ = [
    "AttentionSeq2SeqPreTrainedModel",
    "AttentionSeq2SeqModel",
    "AttentionSeq2SeqForConditionalGeneration",
]
