"""The recurrent family as transformers models: the Elman RNN (Elman 1990), LSTM (Hochreiter & Schmidhuber 1997) and
GRU (Cho et al. 2014) language model, classifier and tagger.

Read top-down: `RecurrentModel` embeds the tokens (with AWD-LSTM's word-type and embedding dropout, Merity et al.
2017, and optionally character-CNN spelling features, Ma & Hovy 2016) and runs the stacked recurrent layers
(`recurrent_layers.py`: torch's fused kernels, locked dropout and DropConnect). `RecurrentForCausalLM` puts a softmax
over the top layer's outputs, tied to the embeddings (Press & Wolf 2017) or adaptive (Grave et al. 2017), and adds
AR/TAR to its loss; the two classifiers pool the outputs (`RecurrentForSequenceClassification`) or score every token,
with an optional CRF over the scores (`RecurrentForTokenClassification`, Lample et al. 2016). A left-to-right
classifier continues from a cache as the language model does, so that a sequence read in chunks is classified as a
whole. Beside the maths, never a base class of it: the checks of the inputs and the cache in
`recurrent_input_checks.py`; the layers' run on a cache (their step replayed as a CUDA graph, `cuda_graphs.py`) and the
decoding loop's one-token steps in `recurrent_decoding_steps.py`.
"""

from dataclasses import dataclass, field, make_dataclass
from typing import Unpack

import torch
from torch import nn
from transformers.cache_utils import Cache
from transformers.modeling_outputs import (
    BaseModelOutputWithPast,
    CausalLMOutputWithPast,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from .adaptive_softmax import AdaptiveSoftmaxHead
from .cache import RecurrentCache, RecurrentGenerationMixin
from .configuration_recurrent import RecurrentConfig
from .cuda_graphs import StepGraphStore
from .embeddings import word_type_dropout
from .heads import SequencePooler, TaggerOutputMixin, refuse_generate, sequence_classification_loss
from .masks import carry_over_padding
from .modeling_utils import (
    CACHE_NAME,
    CausalLMLossKwargs,
    SeqModelsPreTrainedModel,
    cache_field,
    keep_logits_positions,
    lm_loss,
    lm_output_layers,
    output_cache,
    shift_labels_of,
    takes_cache,
)
from .recurrent_decoding_steps import decoding_step, decoding_step_inputs, run_layers
from .recurrent_input_checks import check_inputs
from .recurrent_layers import RecurrentStack, make_dropout
from .spelling import SpellingFeatures


@dataclass
class RecurrentModelOutput(BaseModelOutputWithPast):
    """
    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(batch, length, output_size)`):
            Top layer outputs at every position (zeros at padded positions).
        cache (`RecurrentCache`, *optional*; `past_key_values` before transformers 5.24):
            The final states in a cache, returned when `use_cache=True`, to continue from in the next call.
        hidden_states (`tuple(torch.FloatTensor)`, *optional*):
            The embeddings and each layer's outputs, when `output_hidden_states=True`.
        attentions: always `None` (no attention).
        final_state (`tuple` of one tuple per layer, *optional*):
            Each layer's state after each sequence's last real token: `(h,)` or `(h, c)` for the LSTM, each of
            shape `(num_directions, batch, hidden_size)`. For a bidirectional layer the backward direction's
            state is the one after reading the sequence right to left. `None` with `output_final_state=False`.
    """

    final_state: tuple[tuple[torch.FloatTensor, ...], ...] | None = None


def _with_cache(output_class: type) -> type:
    """transformers' ``output_class`` with one more field, after the others (so that its tuple is the same without
    a cache): the `RecurrentCache` of ``use_cache=True``, under the installed transformers' name for it (``cache``;
    ``past_key_values`` before 5.24). Still an ``output_class``, as its users check."""
    doc = (f"transformers' `{output_class.__name__}`, and `{CACHE_NAME}` (`RecurrentCache`, *optional*): the state "
           "after the tokens read, to continue from, returned when `use_cache=True`.")
    cache = (CACHE_NAME, RecurrentCache | None, field(default=None))
    return make_dataclass(f"Recurrent{output_class.__name__}", [cache], bases=(output_class,),
                          namespace={"__module__": __name__, "__doc__": doc})


RecurrentSequenceClassifierOutput = _with_cache(SequenceClassifierOutput)
RecurrentTokenClassifierOutput = _with_cache(TokenClassifierOutput)


class RecurrentPreTrainedModel(SeqModelsPreTrainedModel):
    config_class = RecurrentConfig
    _is_stateful = True
    supports_gradient_checkpointing = True  # each RecurrentLayer is a GradientCheckpointingLayer

    def set_input_embeddings(self, value):
        # Through the base model, which keeps its spellings one per token (transformers' fallback sets the attribute).
        self.base_model.set_input_embeddings(value)


class RecurrentModel(RecurrentPreTrainedModel):
    """Token embeddings followed by `num_layers` stacked recurrent layers.

    Every head's forward exports (`torch.export.export(model, (), kwargs=...)`, strict or not, `use_cache=False`; the
    batch dimension may be dynamic, the length not: torch's export unrolls the recurrent kernels over the positions)
    and compiles as one graph, but Dynamo holds an `nn.LSTM`/`GRU`/`RNN` module only under its experimental flag:
    `with torch._dynamo.config.patch(allow_rnn=True): torch.compile(model, fullgraph=True)(...)`. Without it the
    model is not `_can_compile_fullgraph`, so that `generate()` never compiles forward by itself. While a graph is
    traced the checks that read values step aside and padding is handled without packing (see `recurrent_layers`).
    """

    def __init__(self, config: RecurrentConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.embedding_size)
        self.spelling = None
        if config.spelling_features:
            self.spelling = SpellingFeatures(config.vocab_size, config.spelling_features,
                                             config.spelling_embedding_size, config.spelling_kernel_size,
                                             config.max_spelling_length)
        self.embedding_dropout = make_dropout(config.embedding_dropout, config.locked_dropout)
        self.rnn = RecurrentStack(
            config.cell_type,
            config.input_size,
            config.hidden_size,
            config.num_layers,
            bidirectional=config.bidirectional,
            dropout=config.dropout,
            nonlinearity=config.nonlinearity,
            weight_drop=config.weight_drop,
            locked=config.locked_dropout,
        )
        self.step_graphs = StepGraphStore()  # the layers' steps replayed as CUDA graphs, beside them (no weights)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value
        if self.spelling is not None:  # one spelling per token id (resize_token_embeddings)
            self.spelling.resize(value.num_embeddings)

    def set_token_spellings(self, tokens: list[str]) -> None:
        """Spell token ``i`` as ``tokens[i]`` for the spelling features (``config.spelling_features > 0``), e.g.
        ``model.set_token_spellings(tokenizer.convert_ids_to_tokens(range(len(tokenizer))))``."""
        if self.spelling is None:
            raise ValueError("This model has no spelling features: set `spelling_features` in its config.")
        self.spelling.set_spellings(tokens)

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
        output_final_state: bool = True,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> RecurrentModelOutput | tuple:
        """
        Args:
            input_ids: `(batch, length)` token ids; or pass `inputs_embeds` `(batch, length, input_size)`, the
                token embeddings and, with `spelling_features`, the spelling features after them.
            attention_mask: `(batch, length)`, 1 for tokens and 0 for padding, on either side. During generation it
                may also cover the cached prefix: its last `length` columns are used.
            cache: a `RecurrentCache` to continue from: the one this model returned after the previous chunk of the
                same sequences (not for bidirectional layers, which read every sequence from the end).
                `past_key_values` is its name before transformers 5.24; either is accepted.
            use_cache: return the final states in a `RecurrentCache`.
            output_final_state: return `final_state`. The heads that do not read it pass False, which lets a
                left-to-right model skip packing a right-padded batch (see `recurrent_layers`).
        """
        cache, mask = check_inputs(self.config, self.dtype, input_ids, inputs_embeds, attention_mask,
                                   cache)
        output_hidden_states = self._flag(output_hidden_states, "output_hidden_states")
        return_dict = self._flag(return_dict, "return_dict")

        inputs = self.embedding_dropout(self._embed(input_ids) if input_ids is not None else inputs_embeds)
        outputs, final_state, hidden_states, cache = run_layers(
            self, inputs, mask, cache, use_cache, output_hidden_states,
            need_states=bool(use_cache) or output_final_state,
        )
        result = RecurrentModelOutput(
            last_hidden_state=outputs,
            final_state=tuple(final_state) if output_final_state else None,
            hidden_states=hidden_states,
            **cache_field(cache if use_cache else None),
        )
        return result if return_dict else result.to_tuple()

    def _embed(self, input_ids: torch.LongTensor) -> torch.FloatTensor:
        """The token embeddings, with whole word types dropped in training (``word_type_dropout``), and the
        spelling features after them (``spelling_features``)."""
        if self.training and self.config.word_type_dropout > 0:
            embeds = word_type_dropout(self.embed_tokens, input_ids, self.config.word_type_dropout)
        else:
            embeds = self.embed_tokens(input_ids)
        return embeds if self.spelling is None else torch.cat([embeds, self.spelling(input_ids)], dim=-1)


class RecurrentForCausalLM(RecurrentPreTrainedModel, RecurrentGenerationMixin):
    """A recurrent language model: predicts each next token from the tokens before it. Its output layer is a full
    softmax, or with `adaptive_softmax_cutoffs` an adaptive softmax (`AdaptiveSoftmaxHead`).

    `RecurrentGenerationMixin` is transformers' required `GenerationMixin` (running our decoding loop, with the state
    in a `RecurrentCache`); our loop's step is bound from `recurrent_decoding_steps.py`."""

    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}
    accepts_loss_kwargs = True  # forward takes `num_items_in_batch` (by name: it takes no **kwargs)
    decoding_step_inputs = decoding_step_inputs
    decoding_step = decoding_step

    def __init__(self, config: RecurrentConfig):
        if config.bidirectional:
            raise ValueError(
                "A causal language model reads left to right: set `bidirectional=False` (bidirectional layers are "
                "for RecurrentForSequenceClassification and RecurrentForTokenClassification)."
            )
        super().__init__(config)
        self.model = RecurrentModel(config)
        self.dropout = make_dropout(config.output_dropout, config.locked_dropout)
        if config.adaptive_softmax_cutoffs:  # untied (the config checks it): no projection
            self.projection = None
            self.lm_head = AdaptiveSoftmaxHead(config.hidden_size, config.vocab_size, config.adaptive_softmax_cutoffs,
                                               config.adaptive_softmax_div_value)
        else:
            self.projection, self.lm_head = lm_output_layers(
                config.hidden_size, config.embedding_size, config.vocab_size, config.tie_word_embeddings
            )
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
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        num_items_in_batch: int | torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        **kwargs: Unpack[CausalLMLossKwargs],
    ) -> CausalLMOutputWithPast | tuple:
        """
        labels: `(batch, length)` token ids, usually `input_ids` itself: the shift to next-token targets happens
            here. -100 marks positions that do not count (for example padding). `shift_labels` (see
            `CausalLMLossKwargs`) replace them when given. With an adaptive softmax (`adaptive_softmax_cutoffs`) and
            labels, `logits` are None: the loss scores each target in its cluster alone. Without labels its
            `logits` are the log-probabilities of every token, which generate() reads as any logits.
        logits_to_keep: compute logits for the last `logits_to_keep` positions only (0 = all), as generate() asks,
            or for the positions a 1-D tensor lists.
        num_items_in_batch: the number of target tokens in the whole (gradient-accumulated) batch, which Trainer
            passes so that the loss is a sum divided by it.
        position_ids: accepted, as any transformers causal LM takes them, and unused: a recurrent layer knows a
            token's position by reading the tokens in order.
        The other arguments are those of [`RecurrentModel.forward`]. Where `attention_mask` marks padding after a
        row's tokens, the logits there are those after its last token (see `masks.carry_over_padding`).
        """
        shift_labels = shift_labels_of(self, kwargs)
        return_dict = self._flag(return_dict, "return_dict")
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            cache=cache,
            use_cache=self._use_cache(use_cache),
            output_final_state=False,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        top = keep_logits_positions(carry_over_padding(outputs.last_hidden_state, attention_mask), logits_to_keep)
        dropped = self.dropout(top)
        hidden = self._output_vectors(dropped)
        if isinstance(self.lm_head, AdaptiveSoftmaxHead):
            loss = self.lm_head.loss(hidden, labels, num_items_in_batch=num_items_in_batch, shift_labels=shift_labels)
            logits = self.lm_head.log_probs(hidden) if loss is None else None
        else:
            logits = self.lm_head(hidden)
            loss = lm_loss(logits, labels, shift=True, num_items_in_batch=num_items_in_batch,
                           shift_labels=shift_labels)
        if loss is not None and self.training:
            loss = loss + self.activation_penalty(top, dropped)
        result = CausalLMOutputWithPast(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, **cache_field(output_cache(outputs))
        )
        return result if return_dict else result.to_tuple()

    def activation_penalty(self, outputs: torch.Tensor, dropped: torch.Tensor) -> torch.Tensor | float:
        """AR and TAR (Merity et al. 2017) of the top layer's ``outputs`` ``(batch, length, hidden_size)``:
        ``activation_regularization * mean(dropped ** 2)`` on the outputs after output dropout, plus
        ``temporal_activation_regularization * mean((outputs[:, t] - outputs[:, t - 1]) ** 2)``; 0 when both are
        off. Means over every position and feature (language-model training batches hold no padding)."""
        config, penalty = self.config, 0.0
        if config.activation_regularization > 0:
            penalty = penalty + config.activation_regularization * dropped.pow(2).mean()
        if config.temporal_activation_regularization > 0 and outputs.shape[1] > 1:
            change = outputs[:, 1:] - outputs[:, :-1]
            penalty = penalty + config.temporal_activation_regularization * change.pow(2).mean()
        return penalty

    def _output_vectors(self, dropped: torch.Tensor) -> torch.Tensor:
        """The vectors the output layer reads: the top layer's outputs after the output dropout, projected to the
        embedding size where it differs from the hidden size."""
        return dropped if self.projection is None else self.projection(dropped)

    def resize_token_embeddings(self, *args, **kwargs):
        if isinstance(self.lm_head, AdaptiveSoftmaxHead):
            raise ValueError("An adaptive softmax cannot be resized: its clusters are ranges of ids ordered by "
                             "frequency. Build a new model with the new `vocab_size` and `adaptive_softmax_cutoffs`.")
        return super().resize_token_embeddings(*args, **kwargs)


class RecurrentClassifierModel(RecurrentPreTrainedModel):
    """What the two classifiers share: a forward that runs the recurrent encoder (`model`, usually bidirectional)
    and hands its outputs to the head's `classify`, which returns the logits and the loss, in the head's
    `output_class`. No `generate` (see `heads.refuse_generate`)."""

    output_class: type[SequenceClassifierOutput | TokenClassifierOutput]
    reads_final_state = False  # whether `classify` reads the encoder's `final_state`
    generating_classes = ("RecurrentForCausalLM (a language model)",
                          "AttentionSeq2SeqForConditionalGeneration (a sequence-to-sequence model)")
    __getattr__ = refuse_generate  # `generate` refused with a clear error, naming `generating_classes`

    @takes_cache
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
    ) -> SequenceClassifierOutput | TokenClassifierOutput | tuple:
        """
        labels: as the head's `classify` says.
        cache: the `RecurrentCache` this head returned (`use_cache=True`) after the earlier tokens of the same
            sequences, to continue from, as GPT2ForSequenceClassification continues from its cache: the logits are
            then those of the whole sequences read at once (a left-to-right model; the sequence head pools with
            `classifier_pooling="last"`, the one pooling a state carries). `past_key_values` is its name before
            transformers 5.24; either is accepted.
        use_cache: return the state after these tokens in the output's cache field. Default: when `cache` is given.
        The other arguments are those of [`RecurrentModel.forward`].
        """
        return_dict = self._flag(return_dict, "return_dict")
        if isinstance(cache, Cache) and cache.get_seq_length() > 0:
            self.check_continuation()
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            cache=cache,
            use_cache=cache is not None if use_cache is None else use_cache,
            output_final_state=self.reads_final_state,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        logits, loss = self.classify(outputs, attention_mask, labels)
        result = self.output_class(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                   **cache_field(output_cache(outputs)))
        return result if return_dict else result.to_tuple()

    def check_continuation(self) -> None:
        """Raise unless continuing from a cache classifies as the whole sequence would (the encoder itself refuses
        a cache it cannot continue: a bidirectional one)."""


class RecurrentForSequenceClassification(RecurrentClassifierModel):
    """A recurrent encoder with a pooled classifier: single-label, multi-label or regression (`problem_type`)."""

    output_class = RecurrentSequenceClassifierOutput

    def __init__(self, config: RecurrentConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = RecurrentModel(config)
        self.pooler = SequencePooler(config.classifier_pooling, config.output_size)
        self.dropout = nn.Dropout(config.output_dropout)
        self.classifier = nn.Linear(config.output_size, config.num_labels)
        self.post_init()

    @property
    def reads_final_state(self) -> bool:
        return self.pooler.pooling == "last"

    def check_continuation(self) -> None:
        if self.pooler.pooling != "last":
            raise ValueError(
                f"`cache` / `past_key_values`: this classifier pools with classifier_pooling={self.pooler.pooling!r}, "
                "over the outputs at every token, and a cache carries the recurrent state after the earlier tokens, "
                "not their outputs: continuing from it would classify the new tokens alone. Pass whole sequences "
                "without a cache, or use classifier_pooling='last' (the state after the last token), which a cache "
                "continues."
            )

    def classify(self, outputs: RecurrentModelOutput, attention_mask: torch.Tensor | None,
                 labels: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The logits `(batch, num_labels)` of the pooled outputs, and the loss of `labels`: `(batch,)` class ids
        (-100 for sequences that do not count), `(batch, num_labels)` multi-hot floats, or `(batch,)` floats for
        regression."""
        last = None
        if outputs.final_state is not None:
            top_state = outputs.final_state[-1][0]  # (num_directions, batch, hidden_size)
            last = top_state.transpose(0, 1).reshape(top_state.shape[1], -1)
        mask = None if attention_mask is None else attention_mask.bool()
        pooled = self.pooler(outputs.last_hidden_state, mask, last)
        logits = self.classifier(self.dropout(pooled))
        return logits, None if labels is None else sequence_classification_loss(logits, labels, self.config)


class RecurrentForTokenClassification(TaggerOutputMixin, RecurrentClassifierModel):
    """A recurrent encoder (usually bidirectional) with a per-token classifier, for tagging; with `use_crf` a CRF
    over the classifier's scores (the BiLSTM-CRF), whose tags `viterbi_tags` decodes (see `TaggerOutputMixin`)."""

    output_class = RecurrentTokenClassifierOutput

    def __init__(self, config: RecurrentConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = RecurrentModel(config)
        self.dropout = nn.Dropout(config.output_dropout)
        self.classifier = nn.Linear(config.output_size, config.num_labels)
        self._init_crf(config)
        self.post_init()

    def classify(self, outputs: RecurrentModelOutput, attention_mask: torch.Tensor | None,
                 labels: torch.LongTensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The per-token scores `(batch, length, num_labels)`, and the loss of `labels`: `(batch, length)` tag ids,
        -100 for positions that do not count (padding, later sub-words)."""
        logits = self.classifier(self.dropout(outputs.last_hidden_state))
        return logits, None if labels is None else self.tagging_loss(logits, labels)


__all__ = [
    "RecurrentPreTrainedModel",
    "RecurrentModel",
    "RecurrentForCausalLM",
    "RecurrentForSequenceClassification",
    "RecurrentForTokenClassification",
]
