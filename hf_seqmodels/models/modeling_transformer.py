"""The Transformer of Vaswani et al. (2017), "Attention Is All You Need", written out as transformers models.

One layer class serves every stack: the encoder (self-attention), the decoder of an encoder-decoder (causal
self-attention, then cross-attention to the encoder outputs) and a decoder-only language model (causal
self-attention). The heads: `TransformerModel` (encoder-decoder), `TransformerForConditionalGeneration`,
`TransformerForCausalLM`, and over `TransformerEncoderModel` (encoder-only) `TransformerForSequenceClassification`
and `TransformerForTokenClassification`.

During generation the decoder keeps its keys and values in transformers' `DynamicCache`, or in its `StaticCache`
(preallocated, for `torch.compile`) with `generate(cache_implementation="static")`; an encoder-decoder wraps them in
an `EncoderDecoderCache` whose cross-attention part holds the encoder outputs' keys and values, projected once.

What surrounds the maths (the checks of the inputs where they enter, the cache bookkeeping, the masks' wiring, the
outputs' building, transformers' hooks) is in `transformer_inputs.py`: functions the models call, or bind by name
(none is a base class of the maths).
"""

from typing import Unpack

import torch
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, EncoderDecoderCache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPastAndCrossAttentions,
    CausalLMOutputWithPast,
    ModelOutput,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from .configuration_transformer import TransformerConfig
from .embeddings import TransformerEmbeddings, sinusoidal_positions
from .generation_utils import SeqModelsGenerationMixin
from .heads import SequencePooler, TaggerOutputMixin, refuse_generate, sequence_classification_loss
from .masks import cached_length, carry_over_padding
from .modeling_utils import (
    CausalLMLossKwargs,
    EncoderDecoderMixin,
    SeqModelsPreTrainedModel,
    cache_field,
    head_output,
    keep_logits_positions,
    lm_loss,
    shift_labels_of,
    takes_cache,
)
from .multi_head_attention import MultiHeadAttention
from .transformer_inputs import (
    check_decoder_inputs,
    check_encoder_decoder_config,
    config_with,
    create_masks_for_generate,
    prepare_cache_for_generation,
    saved_by_encoder_only_head,
    seq2seq_model_output,
    stack_inputs,
    tied_weights_keys,
)


class FeedForward(nn.Module):
    """The position-wise feed-forward network of section 3.3: ``fc2(dropout(activation(fc1(x))))``."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.ffn_dim)
        self.activation = ACT2FN[config.activation]
        self.dropout = nn.Dropout(config.activation_dropout)
        self.fc2 = nn.Linear(config.ffn_dim, config.d_model)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(self.activation(self.fc1(hidden_states))))


class TransformerLayer(GradientCheckpointingLayer):
    """Self-attention, then cross-attention to a memory (decoder layers of an encoder-decoder only), then a
    feed-forward network. Each sub-layer has a residual connection and a LayerNorm: after the sum with post-norm
    (the paper's "Add & Norm", ``LayerNorm(x + Dropout(Sublayer(x)))``), before the sub-layer with pre-norm
    (``x + Dropout(Sublayer(LayerNorm(x)))``).

    With ``model.activation_checkpointing_enable()``, training keeps only each layer's inputs and recomputes its
    activations in the backward pass (transformers' ``GradientCheckpointingLayer``; the tensors that need gradients,
    ``hidden_states`` and ``memory``, come positionally, and a ``cache`` is dropped there).
    """

    def __init__(self, config: TransformerConfig, layer_idx: int, cross_attention: bool):
        super().__init__()
        self.pre_norm = config.norm_position == "pre"
        d_model, eps = config.d_model, config.layer_norm_eps
        self.self_attn = MultiHeadAttention(
            d_model, config.num_heads, config.attention_dropout, layer_idx=layer_idx, config=config
        )
        self.self_attn_norm = nn.LayerNorm(d_model, eps=eps)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(
                d_model, config.num_heads, config.attention_dropout, cross_attention=True, layer_idx=layer_idx,
                config=config,
            )
            self.cross_attn_norm = nn.LayerNorm(d_model, eps=eps)
        else:
            self.cross_attn = self.cross_attn_norm = None
        self.ffn = FeedForward(config)
        self.ffn_norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        hidden_states: torch.Tensor,
        mask: torch.Tensor | None,
        is_causal: bool,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        output_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """
        Args:
            hidden_states: ``(batch, length, d_model)``.
            mask, is_causal: the self-attention mask and flag from ``masks.build_attention_mask``.
            memory: ``(batch, memory_length, d_model)`` encoder outputs, for cross-attention.
            memory_mask: ``(batch, 1, 1, memory_length)`` bool, True = real source token, or None.
            cache: the decoder's cache: a ``Cache`` of the self-attention keys and values (decoder-only), or an
                ``EncoderDecoderCache`` (with cross-attention); see ``MultiHeadAttention``.

        Returns the outputs ``(batch, length, d_model)`` and, with ``output_attentions``, the self- and
        cross-attention weights ``(batch, num_heads, length, key_length)`` (else None).
        """
        self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        attended, self_weights = self.self_attn(
            self._norm_before(self.self_attn_norm, hidden_states),
            mask=mask,
            is_causal=is_causal,
            cache=self_cache,
            output_attentions=output_attentions,
        )
        hidden_states = self._add_and_norm(self.self_attn_norm, hidden_states, attended)
        cross_weights = None
        if self.cross_attn is not None:
            attended, cross_weights = self.cross_attn(
                self._norm_before(self.cross_attn_norm, hidden_states),
                memory=memory,
                mask=memory_mask,
                cache=cache,
                output_attentions=output_attentions,
            )
            hidden_states = self._add_and_norm(self.cross_attn_norm, hidden_states, attended)
        transformed = self.ffn(self._norm_before(self.ffn_norm, hidden_states))
        return self._add_and_norm(self.ffn_norm, hidden_states, transformed), self_weights, cross_weights

    def _norm_before(self, norm: nn.LayerNorm, hidden_states: torch.Tensor) -> torch.Tensor:
        return norm(hidden_states) if self.pre_norm else hidden_states

    def _add_and_norm(self, norm: nn.LayerNorm, residual: torch.Tensor, sublayer_output: torch.Tensor):
        hidden_states = residual + self.dropout(sublayer_output)
        return hidden_states if self.pre_norm else norm(hidden_states)


class TransformerStackMixin:
    """One stack: embeddings, ``num_layers`` layers and, with pre-norm, a final LayerNorm, and its forward.

    Held by ``TransformerStack`` (an ``nn.Module``: the encoder and decoder of an encoder-decoder, the decoder-only
    language model) and by ``TransformerEncoderModel`` (a ``PreTrainedModel``: the base of the encoder-only heads),
    which call ``_build_stack`` in their ``__init__``, so that the weights have the same names under both. It is the
    stack's maths, not plumbing: held as a submodule instead, it would rename the encoder-only model's weights (and
    the folders saved with them would no longer load).
    """

    def _build_stack(
        self, config: TransformerConfig, vocab_size: int, num_layers: int, causal: bool, cross_attention: bool
    ) -> None:
        """
        Args:
            config: the model's config.
            vocab_size: vocabulary of the tokens this stack reads.
            num_layers: number of layers.
            causal: each position attends only to itself and earlier positions (decoders).
            cross_attention: layers also attend to ``encoder_hidden_states`` (the decoder of an encoder-decoder).
        """
        self.d_model = config.d_model
        self.num_heads = config.num_heads
        self.causal = causal
        self.cross_attention = cross_attention
        self.input_prefix = "decoder_" if cross_attention else ""  # how its inputs are named in the model's forward
        self.embeddings = TransformerEmbeddings(
            vocab_size,
            config.d_model,
            config.max_position_embeddings,
            config.position_embedding,
            config.scale_embedding,
            config.dropout,
            padding_idx=config.pad_token_id,
        )
        self.layers = nn.ModuleList(TransformerLayer(config, i, cross_attention) for i in range(num_layers))
        pre_norm = config.norm_position == "pre"
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if pre_norm else None

    def get_input_embeddings(self) -> nn.Embedding:
        """The token embeddings this stack reads (an encoder-decoder's decoder has its own unless they are shared);
        a head over a stack reaches them (and ``set_input_embeddings``) through transformers' defaults, which go to
        its base model, and its ``lm_head`` as its output embeddings."""
        return self.embeddings.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.embed_tokens = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        encoder_hidden_states: torch.FloatTensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        use_cache: bool = False,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        return_dict: bool = True,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """
        Args:
            input_ids: ``(batch, length)`` token ids; or ``inputs_embeds`` ``(batch, length, d_model)`` in place
                of the token embedding lookup.
            attention_mask: ``(batch, past_length + length)``, 1 for tokens and 0 for padding (either side); with a
                cache it also covers the cached positions, with a static cache it may cover its whole buffer.
            encoder_hidden_states: ``(batch, source_length, d_model)``, the memory of cross-attention.
            encoder_attention_mask: ``(batch, source_length)``, 1 for source tokens and 0 for padding.
            cache: the cache of a decoder: a ``DynamicCache`` or ``StaticCache`` (decoder-only) or an
                ``EncoderDecoderCache`` of two (with cross-attention). ``use_cache`` creates one (dynamic) when None.
        """
        inputs = stack_inputs(self, input_ids, attention_mask, inputs_embeds, encoder_hidden_states,
                              encoder_attention_mask, cache, use_cache)
        hidden_states = self.embeddings(input_ids, inputs_embeds, inputs.past_length, inputs.key_mask)
        all_hidden_states = () if output_hidden_states else None
        self_attentions = () if output_attentions else None
        cross_attentions = () if output_attentions and self.cross_attention else None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden_states += (hidden_states,)
            hidden_states, self_weights, cross_weights = layer(
                hidden_states, inputs.mask, inputs.is_causal, encoder_hidden_states, inputs.memory_mask,
                cache=inputs.cache, output_attentions=output_attentions,
            )
            if output_attentions:
                self_attentions += (self_weights,)
                if self.cross_attention:
                    cross_attentions += (cross_weights,)
        if self.final_norm is not None:
            hidden_states = self.final_norm(hidden_states)
        if output_hidden_states:
            all_hidden_states += (hidden_states,)
        result = BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states, hidden_states=all_hidden_states, attentions=self_attentions,
            cross_attentions=cross_attentions, **cache_field(inputs.cache),
        )
        return result if return_dict else result.to_tuple()


class TransformerStack(TransformerStackMixin, nn.Module):
    """A stack inside a model: see ``TransformerStackMixin._build_stack`` for the arguments."""

    def __init__(self, config: TransformerConfig, vocab_size: int, num_layers: int, causal: bool,
                 cross_attention: bool):
        super().__init__()
        self._build_stack(config, vocab_size, num_layers, causal, cross_attention)


class TransformerPreTrainedModel(SeqModelsPreTrainedModel):
    config_class = TransformerConfig
    _no_split_modules = ["TransformerLayer"]
    _supports_sdpa = True  # attn_implementation "sdpa" (the default) or "eager": see MultiHeadAttention
    supports_gradient_checkpointing = True  # every TransformerLayer is a GradientCheckpointingLayer
    _can_compile_fullgraph = True  # forward exports and compiles as one graph; generate with the static cache
    get_expanded_tied_weights_keys = tied_weights_keys  # each class's own `_tied_weights_keys` (transformer_inputs)

    @torch.no_grad()
    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, TransformerEmbeddings) and module.embed_positions is None:
            init.copy_(module.position_table, sinusoidal_positions(*module.position_table.shape))
        else:
            super()._init_weights(module)


class TransformerModel(EncoderDecoderMixin, TransformerPreTrainedModel):
    """The encoder-decoder: the encoder reads the source, the decoder reads the target so far and attends to the
    encoder outputs. Returns the decoder's last hidden states."""

    def __init__(self, config: TransformerConfig):
        check_encoder_decoder_config(config)
        config = config_with(config, is_encoder_decoder=True)
        super().__init__(config)
        self.encoder = TransformerStack(config, config.encoder_vocab_size, config.encoder_layers, causal=False,
                                        cross_attention=False)
        self.decoder = TransformerStack(config, config.vocab_size, config.decoder_layers, causal=True,
                                        cross_attention=True)
        if config.share_encoder_decoder_embeddings:
            self._tied_weights_keys = {
                "encoder.embeddings.embed_tokens.weight": "decoder.embeddings.embed_tokens.weight"
            }
        self.post_init()

    @classmethod
    def from_pretrained(cls, *args, config: TransformerConfig | None = None, **kwargs):
        # AutoModel maps every TransformerConfig here: the folder of an encoder-only head gets its own base model.
        base = TransformerEncoderModel if saved_by_encoder_only_head(config) else super()
        return base.from_pretrained(*args, config=config, **kwargs)

    @classmethod
    def _from_config(cls, config: TransformerConfig, **kwargs):
        base = TransformerEncoderModel if saved_by_encoder_only_head(config) else super()
        return base._from_config(config, **kwargs)

    def get_input_embeddings(self):
        return self.encoder.embeddings.embed_tokens

    def set_input_embeddings(self, value):
        self.encoder.embeddings.embed_tokens = value
        if self.config.share_encoder_decoder_embeddings:
            self.decoder.embeddings.embed_tokens = value

    def _target_embeddings(self) -> list[tuple[nn.Module, str]]:
        stacks = [self.decoder] if self.config.source_vocab_size is not None else [self.decoder, self.encoder]
        return [(stack.embeddings, "embed_tokens") for stack in stacks]

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: ModelOutput | tuple | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> Seq2SeqModelOutput | tuple:
        """
        Args:
            input_ids: ``(batch, source_length)`` source token ids (or ``inputs_embeds``), unless ``encoder_outputs``
                are given.
            attention_mask: ``(batch, source_length)``, 1 for source tokens and 0 for padding.
            decoder_input_ids: ``(batch, target_length)`` target ids so far, starting with the decoder start token
                (or ``decoder_inputs_embeds``). With a cache, only the new ones.
            decoder_attention_mask: ``(batch, past_length + target_length)``, 1 for target tokens, 0 for padding;
                usually None (the causal mask suffices for right-padded targets).
            encoder_outputs: the encoder's output, to skip running it again (generate() does this).
            cache: an ``EncoderDecoderCache`` of two ``DynamicCache``s (or ``StaticCache``s); ``use_cache`` creates
                one. (``past_key_values``, its name before transformers 5.24, is accepted too: ``takes_cache``.)
        """
        output_attentions = self._flag(output_attentions, "output_attentions")
        output_hidden_states = self._flag(output_hidden_states, "output_hidden_states")
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
                output_attentions=output_attentions, output_hidden_states=output_hidden_states,
            )
        elif not isinstance(encoder_outputs, ModelOutput):
            encoder_outputs = BaseModelOutputWithPastAndCrossAttentions(last_hidden_state=encoder_outputs[0])
        check_decoder_inputs(decoder_input_ids, decoder_inputs_embeds, encoder_outputs.last_hidden_state.shape[0])
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids, attention_mask=decoder_attention_mask, inputs_embeds=decoder_inputs_embeds,
            encoder_hidden_states=encoder_outputs.last_hidden_state, encoder_attention_mask=attention_mask,
            cache=cache, use_cache=self._use_cache(use_cache), output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
        )
        result = seq2seq_model_output(decoder_outputs, encoder_outputs)
        return result if self._flag(return_dict, "return_dict") else result.to_tuple()


class TransformerForConditionalGeneration(EncoderDecoderMixin, TransformerPreTrainedModel, SeqModelsGenerationMixin):
    """The encoder-decoder with a language-model head over the target vocabulary, for translation. generate()'s cache
    and mask are bound from `transformer_inputs.py`."""

    accepts_loss_kwargs = False  # the loss is a mean over the batch's tokens
    _prepare_cache_for_generation = prepare_cache_for_generation
    create_masks_for_generate = staticmethod(create_masks_for_generate)

    def __init__(self, config: TransformerConfig):
        config = config_with(config, is_encoder_decoder=True)
        super().__init__(config)
        self.model = TransformerModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self._tied_weights_keys = {"lm_head.weight": "model.decoder.embeddings.embed_tokens.weight"}
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
        encoder_outputs: ModelOutput | tuple | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        decoder_inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
    ) -> Seq2SeqLMOutput | tuple:
        """
        labels: ``(batch, target_length)`` target ids, -100 where the loss should not count (padding). When no
            decoder inputs are given they are built from ``labels`` (shifted right after the start token).
        logits_to_keep: compute logits for the last ``logits_to_keep`` positions only (0 = all), as generate() asks,
            or for the positions a 1-D tensor lists.

        See ``TransformerModel.forward`` for the other arguments.
        """
        decoder_input_ids = self.decoder_inputs_from_labels(labels, decoder_input_ids, decoder_inputs_embeds)
        outputs = self.model(input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs,
                             cache, inputs_embeds, decoder_inputs_embeds, use_cache=False if labels is not None
                             else use_cache, output_attentions=output_attentions,
                             output_hidden_states=output_hidden_states, return_dict=True)
        logits = self.lm_head(keep_logits_positions(outputs.last_hidden_state, logits_to_keep))
        loss = None if labels is None else lm_loss(logits, labels, shift=False)  # aligned with the decoder inputs
        result = head_output(Seq2SeqLMOutput, outputs, loss=loss, logits=logits)
        return result if self._flag(return_dict, "return_dict") else result.to_tuple()


class TransformerForCausalLM(TransformerPreTrainedModel, SeqModelsGenerationMixin):
    """A decoder-only Transformer language model (``decoder_layers`` layers, no cross-attention). generate()'s cache
    and mask are bound from `transformer_inputs.py`."""

    accepts_loss_kwargs = True  # forward takes `num_items_in_batch` (by name: it takes no **kwargs)
    _prepare_cache_for_generation = prepare_cache_for_generation
    create_masks_for_generate = staticmethod(create_masks_for_generate)

    def __init__(self, config: TransformerConfig):
        config = config_with(config, is_encoder_decoder=False)
        super().__init__(config)
        self.model = TransformerStack(config, config.vocab_size, config.decoder_layers, causal=True,
                                      cross_attention=False)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self._tied_weights_keys = {"lm_head.weight": "model.embeddings.embed_tokens.weight"}
        self.post_init()

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        cache: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs: Unpack[CausalLMLossKwargs],
    ) -> CausalLMOutputWithPast | tuple:
        """
        Args:
            input_ids: ``(batch, length)`` token ids (or ``inputs_embeds``); with a cache, only the new ones.
            attention_mask: ``(batch, past_length + length)``, 1 for tokens and 0 for padding; positions count real
                tokens only, and the logits at padding after a row's tokens are those after its last token (see
                ``masks.carry_over_padding``): prompts padded on either side generate as alone.
            cache: a ``DynamicCache`` or ``StaticCache``; ``use_cache`` creates a ``DynamicCache``.
                (``past_key_values``, its name before transformers 5.24, is accepted too: ``takes_cache``.)
            labels: ``(batch, length)`` token ids, usually ``input_ids`` itself: the shift to next-token targets
                happens here. -100 marks positions that do not count. ``shift_labels`` (see
                ``CausalLMLossKwargs``) replace them when given.
            logits_to_keep: compute logits for the last ``logits_to_keep`` positions only (0 = all), or for the
                positions a 1-D tensor lists.
            num_items_in_batch: the number of target tokens in the whole (gradient-accumulated) batch, which
                Trainer passes so that the loss is a sum divided by it.
        """
        shift_labels = shift_labels_of(self, kwargs)
        past_length = cached_length(cache)  # where the inputs' columns start in a static cache's buffer-wide mask
        outputs = self.model(
            input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, cache=cache,
            use_cache=self._use_cache(use_cache), output_attentions=self._flag(output_attentions, "output_attentions"),
            output_hidden_states=self._flag(output_hidden_states, "output_hidden_states"),
        )
        hidden_states = carry_over_padding(outputs.last_hidden_state, attention_mask, past_length)
        logits = self.lm_head(keep_logits_positions(hidden_states, logits_to_keep))
        loss = lm_loss(logits, labels, shift=True, num_items_in_batch=num_items_in_batch, shift_labels=shift_labels)
        result = head_output(CausalLMOutputWithPast, outputs, loss=loss, logits=logits)
        return result if self._flag(return_dict, "return_dict") else result.to_tuple()


class TransformerEncoderModel(TransformerStackMixin, TransformerPreTrainedModel):
    """The encoder-only Transformer (``encoder_layers`` layers over the source vocabulary, no decoder): the base
    model of the classification heads, as BertModel is BERT's. Its weights are named as they are under the heads
    (``embeddings.*``, ``layers.*``, ``final_norm.*``), so that each loads the other's checkpoints."""

    def __init__(self, config: TransformerConfig):
        config = config_with(config, is_encoder_decoder=False)
        super().__init__(config)
        self._build_stack(config, config.encoder_vocab_size, config.encoder_layers, causal=False,
                          cross_attention=False)
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BaseModelOutputWithPastAndCrossAttentions | tuple:
        """
        Args:
            input_ids: ``(batch, length)`` token ids; or ``inputs_embeds`` ``(batch, length, d_model)``.
            attention_mask: ``(batch, length)``, 1 for tokens and 0 for padding.

        Returns the encoder outputs ``(batch, length, d_model)`` in ``last_hidden_state``.
        """
        return super().forward(
            input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds,
            output_attentions=self._flag(output_attentions, "output_attentions"),
            output_hidden_states=self._flag(output_hidden_states, "output_hidden_states"),
            return_dict=self._flag(return_dict, "return_dict"),
        )


class _TransformerEncoderClassifier(TransformerPreTrainedModel):
    """A ``TransformerEncoderModel`` (its base model, under ``model``) with a head. No ``generate`` (see
    ``heads.refuse_generate``), and no cache: as BERT's heads, they read whole sequences (``check_no_cache``)."""

    generating_classes = ("TransformerForCausalLM (a language model)",
                          "TransformerForConditionalGeneration (a sequence-to-sequence model)")
    __getattr__ = refuse_generate  # `generate` refused with a clear error, naming `generating_classes`

    def __init__(self, config: TransformerConfig):
        config = config_with(config, is_encoder_decoder=False)
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = TransformerEncoderModel(config)
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.d_model, config.num_labels)

    def check_no_cache(self, cache: Cache | None) -> None:
        """Refuse a cache (``cache``, or ``past_key_values``), which BERT's heads would silently ignore: the encoder's
        self-attention is bidirectional, so the tokens read before cannot be continued. ``use_cache`` is taken, as
        BERT's heads take it, and unused: the encoder keeps no cache."""
        if cache is not None:
            raise ValueError(
                f"`cache` / `past_key_values`: {type(self).__name__} cannot continue from a cache. Its "
                "encoder's self-attention is bidirectional (each token also attends to the tokens after it), so the "
                "states of earlier tokens change with every token added. Pass whole sequences, without a cache."
            )


class TransformerForSequenceClassification(_TransformerEncoderClassifier):
    """A Transformer encoder with a pooled classifier: single-label, multi-label or regression (``problem_type``)."""

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        self.pooler = SequencePooler(config.classifier_pooling, config.d_model)
        self.post_init()

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
    ) -> SequenceClassifierOutput | tuple:
        """labels: ``(batch,)`` class ids (-100 for sequences that do not count), ``(batch, num_labels)`` multi-hot
        floats, or ``(batch,)`` floats for regression. ``cache`` (``past_key_values``) is refused and ``use_cache``
        unused: see ``check_no_cache``."""
        self.check_no_cache(cache)
        outputs = self.model(input_ids, attention_mask, inputs_embeds, output_attentions, output_hidden_states, True)
        mask = None if attention_mask is None else attention_mask.bool()
        logits = self.classifier(self.dropout(self.pooler(outputs.last_hidden_state, mask)))
        loss = None if labels is None else sequence_classification_loss(logits, labels, self.config)
        result = head_output(SequenceClassifierOutput, outputs, loss=loss, logits=logits)
        return result if self._flag(return_dict, "return_dict") else result.to_tuple()


class TransformerForTokenClassification(TaggerOutputMixin, _TransformerEncoderClassifier):
    """A Transformer encoder with a per-token classifier, for tagging; with ``use_crf`` a CRF over the classifier's
    scores, whose tags ``viterbi_tags`` decodes (see ``TaggerOutputMixin``)."""

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        self._init_crf(self.config)
        self.post_init()

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
    ) -> TokenClassifierOutput | tuple:
        """labels: ``(batch, length)`` tag ids, -100 for positions that do not count (padding, later sub-words).
        ``cache`` (``past_key_values``) is refused and ``use_cache`` unused: see ``check_no_cache``."""
        self.check_no_cache(cache)
        outputs = self.model(input_ids, attention_mask, inputs_embeds, output_attentions, output_hidden_states, True)
        logits = self.classifier(self.dropout(outputs.last_hidden_state))
        loss = None if labels is None else self.tagging_loss(logits, labels)
        result = head_output(TokenClassifierOutput, outputs, loss=loss, logits=logits)
        return result if self._flag(return_dict, "return_dict") else result.to_tuple()
