"""The attention encoder-decoder (Sutskever et al. 2014; Bahdanau et al. 2015; Luong et al. 2015), top-down: encoder,
attention decoder, base model, conditional-generation head. The attention scores are in `attention.py`, the recurrent
layers in `recurrent_layers.py`; what surrounds the maths (outputs, checks, the decoder's steps replayed as CUDA
graphs, decoding hooks) in `generation_attention_seq2seq.py`, which the models call or bind: none of it is a base class
of the maths."""

import torch
from torch import nn
from transformers.cache_utils import Cache

from .attention import AdditiveAttention, LuongAttention
from .cache import RecurrentCache, RecurrentGenerationMixin
from .configuration_attention_seq2seq import AttentionSeq2SeqConfig
from .cuda_graphs import StepGraphStore
from .generation_attention_seq2seq import (
    AttentionSeq2SeqEncoderOutput,
    AttentionSeq2SeqLMOutput,
    AttentionSeq2SeqModelOutput,
    as_encoder_output,
    check_decoder_inputs,
    check_source,
    decode_sampling_own_predictions,
    decoder_cache,
    decoding_step,
    decoding_step_inputs,
    encoder_output,
    model_output,
    prepare_inputs_for_generation,
    run_decoder,
)
from .modeling_utils import (
    EncoderDecoderMixin,
    SeqModelsPreTrainedModel,
    head_output,
    keep_logits_positions,
    lm_loss,
    lm_output_layers,
    output_layer_into,
    takes_cache,
)
from .recurrent_layers import RecurrentStack, State


class AttentionSeq2SeqPreTrainedModel(EncoderDecoderMixin, SeqModelsPreTrainedModel):
    """The family's base: transformers' `PreTrainedModel` with what every encoder-decoder adds (`EncoderDecoderMixin`:
    decoder inputs from labels, resizing the target vocabulary)."""

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
        self.rnn = RecurrentStack(config.cell_type, config.embedding_size, config.hidden_size, config.encoder_layers,
                                  bidirectional=config.bidirectional_encoder, dropout=config.dropout)

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
        mask = check_source(self.config, input_ids, inputs_embeds, attention_mask, self.embed_tokens.weight.dtype)
        if input_ids is not None:
            inputs_embeds = self.embed_tokens(input_ids)
        outputs, states, hidden_states = self.rnn(
            self.dropout(inputs_embeds), mask, output_hidden_states=bool(output_hidden_states)
        )
        # (num_directions, batch, hidden) per part -> (batch, parts, num_directions * hidden)
        final_state = torch.stack([part.transpose(0, 1).flatten(1) for part in states[-1]], dim=1)
        return encoder_output(outputs, final_state, hidden_states,
                              return_dict if return_dict is not None else self.config.return_dict)


class AttentionSeq2SeqDecoder(nn.Module):
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

    def forward(
        self,
        input_ids: torch.LongTensor | None,
        cache: RecurrentCache,
        encoder_final_state: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        inputs_embeds: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, ...] | None]:
        """Decode a chunk of target positions, continuing from `cache` (without states at the start) and updating it.

        Args:
            input_ids: `(batch, length)` decoder input ids, or None with `inputs_embeds` `(batch, length,
                embedding_size)`.
            cache: the decoder's state, and the source it attends to (`per_input`): `"memory"`, the encoder outputs
                `(batch, source_length, memory_size)`, and `"memory_mask"`, bool `(batch, source_length)`, True for
                real source tokens (absent without padding). After `share_per_input(k)` (a decoding step of beam
                search) they hold one row per source, for `k` consecutive rows (see [`_attend`]).
            encoder_final_state: `(batch, parts, memory_size)`, the start when `cache` holds no state.

        Returns:
            The output vectors `(batch, length, hidden_size)` for the output layer, the attention weights
            `(batch, length, source_length)` (`None` without attention) and, if asked, the hidden states: the
            embeddings and each recurrent layer's outputs.
        """
        embeds = self.dropout(self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds)
        states = cache.states or self.initial_state(encoder_final_state)
        if self.attention is not None and "projected_keys" not in cache.per_input:
            # once per source, reused at every step
            cache.per_input["projected_keys"] = self.attention.project_keys(cache.per_input["memory"])

        extras = {}
        if self.attention_type == "bahdanau" or self.input_feeding:
            outputs, weights, states, layer_outputs, extras = self._step_by_step(embeds, states, cache)
        else:
            hidden, states, all_hidden = self.rnn(embeds, None, states, output_hidden_states)
            layer_outputs = all_hidden[1:] if output_hidden_states else None
            outputs, weights = hidden, None
            if self.attention is not None:
                context, weights = self._attend(hidden, cache)
                outputs = torch.tanh(self.combine(torch.cat([context, hidden], dim=-1)))

        cache.store(states, embeds.shape[1], **extras)
        return outputs, weights, (embeds, *layer_outputs) if output_hidden_states else None

    def _attend(self, query: torch.Tensor, cache: RecurrentCache) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention of `query` `(batch, length, hidden_size)` over the source in `cache`. Where
        `cache.rows_per_input` is k > 1 (one position, `length` 1), the source holds one row per k consecutive rows
        (a sentence's beams), which attend as k queries of one memory row: beam search then reads each source once
        a step, not once per beam."""
        source, rows = cache.per_input, cache.rows_per_input
        memory, mask, keys = source["memory"], source.get("memory_mask"), source["projected_keys"]
        if rows == 1:
            return self.attention(query, memory, mask, keys)
        batch = query.shape[0]
        context, weights = self.attention(query.view(batch // rows, rows, -1), memory, mask, keys)
        return context.view(batch, 1, -1), weights.view(batch, 1, -1)

    def _step_by_step(self, embeds, states, cache):
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
                context, weight = self._attend(query, cache)
                hidden, states, all_hidden = self.rnn(torch.cat([embed, context], dim=-1), None, states, True)
                outputs.append(torch.cat([context, hidden, embed], dim=-1))
            else:
                hidden, states, all_hidden = self.rnn(torch.cat([embed, input_feed], dim=-1), None, states, True)
                context, weight = self._attend(hidden, cache)
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


class AttentionSeq2SeqModel(AttentionSeq2SeqPreTrainedModel):
    """The encoder and the attention decoder; returns the decoder's output vectors (before the output layer).

    Its forward and that of [`AttentionSeq2SeqForConditionalGeneration`] export with `torch.export` (strict or not,
    `use_cache=False`; fixed lengths, as the recurrent kernels and the decoding loop unroll over the positions) and
    compile as one graph with `torch.compile(fullgraph=True)` under `torch._dynamo.config.patch(allow_rnn=True)`,
    the flag Dynamo needs to hold a recurrent module (hence no `_can_compile_fullgraph`: `generate()` must not
    compile forward without it).
    """

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__(config)
        self.encoder = AttentionSeq2SeqEncoder(config)
        self.decoder = AttentionSeq2SeqDecoder(config)
        self.step_graphs = StepGraphStore()  # the decoder's steps replayed as CUDA graphs, beside it (no weights)
        self.post_init()

    def get_input_embeddings(self):
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value):
        self.encoder.embed_tokens = value

    def _target_embeddings(self) -> list[tuple[nn.Module, str]]:
        modules = [self.decoder] if self.config.source_vocab_size is not None else [self.decoder, self.encoder]
        return [(module, "embed_tokens") for module in modules]

    @takes_cache
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
        check_decoder_inputs(self.config, decoder_input_ids, decoder_inputs_embeds,
                             self.decoder.embed_tokens.weight.dtype)
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids, attention_mask, inputs_embeds, output_hidden_states=output_hidden_states, return_dict=True
            )
        else:
            encoder_outputs = as_encoder_output(encoder_outputs)
        # the decoder's state, and the source it attends to: the encoder outputs and their mask
        cache = decoder_cache(self.config, cache, encoder_outputs.last_hidden_state, attention_mask,
                              decoder_input_ids, decoder_inputs_embeds, decoder_attention_mask)
        outputs, weights, decoder_hidden_states = run_decoder(
            self.decoder, self.step_graphs, decoder_input_ids, cache, encoder_outputs.final_state,
            output_hidden_states, decoder_inputs_embeds, output_attentions,
        )
        result = model_output(outputs, weights, decoder_hidden_states, encoder_outputs, cache if use_cache else None,
                              output_attentions, output_hidden_states and self.decoder.attention is not None)
        return result if return_dict else result.to_tuple()


class AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqPreTrainedModel, RecurrentGenerationMixin):
    """The attention encoder-decoder with its output layer: translation and other sequence-to-sequence tasks.

    `RecurrentGenerationMixin` is transformers' required `GenerationMixin` (running our decoding loop, with the
    decoder's state in a `RecurrentCache`). How it decodes step by step is bound from
    `generation_attention_seq2seq.py`: generate()'s inputs at each step and our loop's step."""

    _tied_weights_keys = {"lm_head.weight": "model.decoder.embed_tokens.weight"}
    prepare_inputs_for_generation = prepare_inputs_for_generation
    decoding_step_inputs = decoding_step_inputs
    decoding_step = decoding_step

    def __init__(self, config: AttentionSeq2SeqConfig):
        super().__init__(config)
        self.model = AttentionSeq2SeqModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.projection, self.lm_head = lm_output_layers(
            config.hidden_size, config.embedding_size, config.vocab_size, config.tie_word_embeddings
        )
        self.post_init()

    def _target_embeddings(self) -> list[tuple[nn.Module, str]]:
        return self.model._target_embeddings()

    @takes_cache
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
        smoothing: float = 0.0,
    ) -> AttentionSeq2SeqLMOutput | tuple:
        """
        labels: `(batch, target_length)` target ids, ending with the end-of-sequence token; -100 marks positions
            that do not count (padding). Without `decoder_input_ids` or `decoder_inputs_embeds`, they are built from
            `labels` by shifting right.
        logits_to_keep: compute the logits of these decoder positions only: an int keeps the last `logits_to_keep`
            (0: all; generate() asks for 1), a 1-D tensor of positions keeps those. `labels` must then label
            exactly the positions kept. A bool tensor `(batch, target_length)` keeps the positions where it is True:
            the logits are `(kept, vocab_size)` (in row-major order) and `labels` stay `(batch, target_length)`,
            counted at the kept positions only. A training loop passes `labels != -100`: no output layer (and no
            dropout before it) over the padding of the targets.
        smoothing: the loss is the label-smoothed cross-entropy of transformers' `LabelSmoother` with this factor
            (0: plain cross-entropy), so that a training loop that smooths labels gets its loss from the model,
            computed once (hf_seqmodels' loop passes its `--label_smoothing_factor`). Not named `label_smoothing`:
            Trainer takes every forward parameter whose name holds "label" for a column each batch must carry.
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
            cache=cache,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=self._use_cache(use_cache),
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        if labels is not None and self.training and self.config.teacher_forcing_ratio < 1:
            outputs, logits = decode_sampling_own_predictions(self, **inputs)
            logits = keep_logits_positions(logits, logits_to_keep, takes_mask=True)
        else:
            outputs = self.model(**inputs)
            logits = self._logits(keep_logits_positions(outputs.last_hidden_state, logits_to_keep, takes_mask=True))

        if labels is not None and logits.dim() == 2:  # kept by a mask
            labels = labels[logits_to_keep]
        loss = None if labels is None else lm_loss(logits, labels, shift=False, label_smoothing=smoothing)
        result = head_output(AttentionSeq2SeqLMOutput, outputs, loss=loss, logits=logits)
        return result if return_dict else result.to_tuple()

    def _logits(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """The output layer: decoder output vectors `(..., hidden_size)` -> logits `(..., vocab_size)`; for 2-D
        `hidden`, written into `out` where given (see `output_layer_into`)."""
        hidden = self.dropout(hidden)
        if self.projection is not None:
            hidden = self.projection(hidden)
        return output_layer_into(self.lm_head, hidden, out)


__all__ = [
    "AttentionSeq2SeqPreTrainedModel",
    "AttentionSeq2SeqModel",
    "AttentionSeq2SeqForConditionalGeneration",
]
