"""Configuration of the recurrent family: Elman RNN, LSTM and GRU language models, classifiers and taggers."""

import math

from .configuration_utils import CELL_TYPES, CheckedConfig, SizeTerm, check_choice, check_dropouts, check_flags
from .configuration_utils import check_initializer_range, check_sizes, check_token_ids, is_integer, is_number
from .configuration_utils import linear, recurrent_stack
from .crf import check_crf_fields

NONLINEARITIES = ("tanh", "relu")
POOLINGS = ("last", "mean", "max", "attention")


def check_penalties(**penalties) -> None:
    """Raise unless each penalty weight is a finite number >= 0 (0 = off)."""
    for name, value in penalties.items():
        if not is_number(value) or not 0 <= value < math.inf:
            raise ValueError(f"`{name}`={value!r} must be a finite number >= 0: the weight of its term in the loss "
                             "(0 = off).")


def check_adaptive_softmax(cutoffs, div_value, vocab_size: int, hidden_size: int, tie_word_embeddings: bool) -> None:
    """Raise unless ``cutoffs`` are None or strictly increasing ids in ``(0, vocab_size)`` and ``div_value`` a number
    > 1 that leaves every tail cluster's projection at least one feature; the adaptive softmax needs untied
    embeddings."""
    if not is_number(div_value) or not 1 < div_value < math.inf:
        raise ValueError(f"`adaptive_softmax_div_value`={div_value!r} must be a finite number > 1: each tail "
                         "cluster's projection is that many times smaller than the one before.")
    if cutoffs is None:
        return
    if (not isinstance(cutoffs, (list, tuple)) or not cutoffs or not all(is_integer(c) for c in cutoffs)
            or any(low >= high for low, high in zip(cutoffs, cutoffs[1:]))
            or not 0 < cutoffs[0] <= cutoffs[-1] < vocab_size):
        raise ValueError(f"`adaptive_softmax_cutoffs`={cutoffs!r} must be None (a full softmax) or a non-empty, "
                         f"strictly increasing list of token ids in (0, vocab_size={vocab_size}), such as "
                         f"[{vocab_size // 5}, {vocab_size * 3 // 5}] for two tail clusters.")
    if hidden_size // div_value ** len(cutoffs) < 1:
        raise ValueError(f"`adaptive_softmax_div_value`={div_value} leaves the last of the {len(cutoffs)} tail "
                         f"clusters hidden_size // {div_value}**{len(cutoffs)} = 0 features: lower it or use fewer "
                         "`adaptive_softmax_cutoffs`.")
    if tie_word_embeddings:
        raise ValueError("`adaptive_softmax_cutoffs` needs `tie_word_embeddings=False`: the adaptive softmax has its "
                         "own output weights (a head and a projection per cluster), none of which is the embedding "
                         "matrix. Set tie_word_embeddings=False, or adaptive_softmax_cutoffs=None for a full softmax.")


class RecurrentConfig(CheckedConfig):
    r"""
    Configuration of a [`RecurrentModel`] and its heads.

    Args:
        vocab_size (`int`, *optional*, defaults to 10000):
            Number of tokens in the vocabulary.
        embedding_size (`int`, *optional*, defaults to 256):
            Size of the token embeddings fed to the first recurrent layer.
        hidden_size (`int`, *optional*, defaults to 256):
            Size of the recurrent state of each layer and direction.
        num_layers (`int`, *optional*, defaults to 1):
            Number of stacked recurrent layers.
        cell_type (`str`, *optional*, defaults to `"lstm"`):
            `"rnn"` (Elman), `"lstm"` (Hochreiter & Schmidhuber) or `"gru"` (Cho et al.).
        nonlinearity (`str`, *optional*, defaults to `"tanh"`):
            Activation of the Elman RNN: `"tanh"` or `"relu"`. Only used when `cell_type="rnn"`.
        bidirectional (`bool`, *optional*, defaults to `False`):
            Add a backward direction to every layer. Only for encoders (classification, tagging): a causal
            language model cannot look at the future.
        embedding_dropout (`float`, *optional*, defaults to 0.0):
            Dropout on the token embeddings.
        dropout (`float`, *optional*, defaults to 0.0):
            Dropout between stacked recurrent layers.
        output_dropout (`float`, *optional*, defaults to 0.0):
            Dropout on the top layer's outputs, before a head.
        locked_dropout (`bool`, *optional*, defaults to `False`):
            Make `embedding_dropout`, `dropout` and the language model's `output_dropout` variational ("locked",
            Gal & Ghahramani 2016): one mask per sequence, the same features dropped at every position (AWD-LSTM's
            `dropouti`, `dropouth` and `dropout`, Merity et al. 2017).
        weight_drop (`float`, *optional*, defaults to 0.0):
            DropConnect (Wan et al., 2013) on every layer's hidden-to-hidden weights in training: each forward call
            zeroes entries of `weight_hh` with this probability (one mask for all positions of the batch) and scales
            the rest; the fused kernel runs on the dropped weights (AWD-LSTM's `wdrop`).
        word_type_dropout (`float`, *optional*, defaults to 0.0):
            Embedding dropout in training (Gal & Ghahramani 2016; AWD-LSTM's `dropoute`): each forward call drops
            whole word types with this probability, so every occurrence of a dropped id gets a zero embedding, and
            scales the other embeddings.
        activation_regularization (`float`, *optional*, defaults to 0.0):
            Activation regularisation (AR, Merity et al. 2017): in training, the causal LM's loss adds this times the
            mean square of the top layer's outputs after output dropout.
        temporal_activation_regularization (`float`, *optional*, defaults to 0.0):
            Temporal activation regularisation (TAR): in training, the causal LM's loss adds this times the mean
            square of the change of the top layer's outputs (before dropout) from one position to the next.
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            Share the input embedding matrix with the language-model output layer (Press & Wolf, 2017). When
            `hidden_size != embedding_size`, a linear projection maps the outputs to the embedding size first.
        adaptive_softmax_cutoffs (`list[int]`, *optional*):
            Make the causal LM's output layer an adaptive softmax (Grave et al. 2017; torch's
            `AdaptiveLogSoftmaxWithLoss`): a head softmax over the ids below `cutoffs[0]` and one entry per tail
            cluster, each cluster `[cutoffs[i], cutoffs[i + 1])` (the last one ending at `vocab_size`) scored by a
            softmax of its own behind a smaller projection. Training then costs each target its cluster, not the
            whole vocabulary; without labels `logits` are the full log-probabilities. Strictly increasing ids in
            `(0, vocab_size)`; `None` = a full softmax. The clusters are id ranges, so the ids must run from the most
            frequent token to the least: the word-level tokenizer the tasks train (`tokenization.train_tokenizer`,
            kind "word") numbers its words so, after the special tokens. Needs `tie_word_embeddings=False` (the
            adaptive softmax has its own weights). Other heads ignore it.
        adaptive_softmax_div_value (`float`, *optional*, defaults to 4.0):
            Tail cluster `i` (from 1) projects the `hidden_size` outputs to `hidden_size // div_value**i` features
            before its softmax: rarer words get smaller vectors. A number > 1.
        spelling_features (`int`, *optional*, defaults to 0):
            Size of the character-CNN features of each token's spelling (Ma & Hovy, 2016), concatenated to its
            embedding before the first recurrent layer; 0 = none. The spellings are saved with the weights and set
            from the tokenizer with `set_token_spellings`.
        spelling_embedding_size (`int`, *optional*, defaults to 16):
            Size of the byte embeddings the spelling CNN reads (UTF-8 bytes).
        spelling_kernel_size (`int`, *optional*, defaults to 3):
            Width of the spelling CNN's window, in bytes (odd).
        max_spelling_length (`int`, *optional*, defaults to 20):
            Bytes kept of each token's spelling; a longer one keeps its first and last half (prefix and suffix).
        classifier_pooling (`str`, *optional*, defaults to `"last"`):
            How sequence classification turns the outputs into one vector: `"last"` (final state of each
            direction), `"mean"` or `"max"` over real tokens, or `"attention"` (learned attention weights).
        use_crf (`bool`, *optional*, defaults to `False`):
            Token classification: put a linear-chain CRF over the per-token scores (Lample et al., 2016). The loss
            is the CRF's negative log-likelihood over each row's labelled positions, `logits` stay the per-token
            scores, and the tags are the Viterbi path (`viterbi_tags`, and the saved folder's token-classification
            pipeline). Other heads ignore it.
        crf_constrain_bio (`bool`, *optional*, defaults to `False`):
            Forbid the CRF the transitions no BIO (IOB2) tag sequence has (`O` -> `I-x`, `B-x`/`I-x` -> `I-y` for
            another type y, starting with `I-x`), in training and decoding. Needs `use_crf=True` and `id2label`
            naming BIO tags (`O`, `B-<type>`, `I-<type>`).
        use_cache (`bool`, *optional*, defaults to `True`):
            Return the final recurrent states in a `RecurrentCache`, one cache layer per recurrent layer (as `cache`;
            `past_key_values` before transformers 5.24), outside training, so that generation feeds one new token
            per step instead of the whole prefix.
        initializer_range (`float`, *optional*, defaults to 0.02):
            Standard deviation of the normal initialisation of embeddings and linear layers. Recurrent weights use
            torch's default `U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`.
        pad_token_id, bos_token_id, eos_token_id (`int`, *optional*):
            Ids of the special tokens. `pad_token_id` is needed to batch sequences of different lengths;
            `eos_token_id` may be a list of ids.

    Every field is checked when the config is made and when it is loaded: a value of the wrong type or out of range,
    an unknown field, or a config.json that lacks a field or was written for another model raises a `ValueError`
    that names the field (see `CheckedConfig`), and so do sizes whose model would not fit in `HF_SEQMODELS_MAX_MODEL_GB`
    (64 GB unless set; see `configuration_utils.max_model_gb`).

    Example:

    ```python
    >>> from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
    >>> config = RecurrentConfig(vocab_size=10000, cell_type="gru", num_layers=2)
    >>> model = RecurrentForCausalLM(config)
    ```
    """

    model_type = "recurrent"
    # Their defaults compute what configs saved before these fields meant: such configs load without them.
    fields_added_later = ("locked_dropout", "weight_drop", "word_type_dropout", "activation_regularization",
                          "temporal_activation_regularization", "use_crf", "crf_constrain_bio",
                          "adaptive_softmax_cutoffs", "adaptive_softmax_div_value")
    attribute_map = {"num_hidden_layers": "num_layers"}
    keys_to_ignore_at_inference = ["cache", "past_key_values"]

    def __init__(
        self,
        vocab_size: int = 10000,
        embedding_size: int = 256,
        hidden_size: int = 256,
        num_layers: int = 1,
        cell_type: str = "lstm",
        nonlinearity: str = "tanh",
        bidirectional: bool = False,
        embedding_dropout: float = 0.0,
        dropout: float = 0.0,
        output_dropout: float = 0.0,
        locked_dropout: bool = False,
        weight_drop: float = 0.0,
        word_type_dropout: float = 0.0,
        activation_regularization: float = 0.0,
        temporal_activation_regularization: float = 0.0,
        tie_word_embeddings: bool = True,
        adaptive_softmax_cutoffs: list[int] | None = None,
        adaptive_softmax_div_value: float = 4.0,
        spelling_features: int = 0,
        spelling_embedding_size: int = 16,
        spelling_kernel_size: int = 3,
        max_spelling_length: int = 20,
        classifier_pooling: str = "last",
        use_crf: bool = False,
        crf_constrain_bio: bool = False,
        initializer_range: float = 0.02,
        use_cache: bool = True,
        pad_token_id: int | None = None,
        bos_token_id: int | None = None,
        eos_token_id: int | list[int] | None = None,
        **kwargs,
    ):
        check_choice("cell_type", cell_type, CELL_TYPES)
        check_choice("nonlinearity", nonlinearity, NONLINEARITIES)
        check_choice("classifier_pooling", classifier_pooling, POOLINGS)
        check_sizes(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=hidden_size,
                    num_layers=num_layers)
        if not is_integer(spelling_features) or spelling_features < 0:
            raise ValueError(f"`spelling_features`={spelling_features!r} must be a non-negative integer (0 = none).")
        check_sizes(spelling_embedding_size=spelling_embedding_size, spelling_kernel_size=spelling_kernel_size,
                    max_spelling_length=max_spelling_length)
        if spelling_kernel_size % 2 == 0:
            raise ValueError(f"`spelling_kernel_size`={spelling_kernel_size} must be odd, so that the window is "
                             "centred on a byte.")
        check_dropouts(embedding_dropout=embedding_dropout, dropout=dropout, output_dropout=output_dropout,
                       weight_drop=weight_drop, word_type_dropout=word_type_dropout)
        check_flags(bidirectional=bidirectional, tie_word_embeddings=tie_word_embeddings, use_cache=use_cache,
                    locked_dropout=locked_dropout)
        check_penalties(activation_regularization=activation_regularization,
                        temporal_activation_regularization=temporal_activation_regularization)
        check_adaptive_softmax(adaptive_softmax_cutoffs, adaptive_softmax_div_value, vocab_size, hidden_size,
                               tie_word_embeddings)
        check_initializer_range(initializer_range)
        check_token_ids(vocab_size, pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id)
        if adaptive_softmax_cutoffs is not None:
            adaptive_softmax_cutoffs = list(adaptive_softmax_cutoffs)
        self.set_fields(locals())
        check_crf_fields(use_crf, crf_constrain_bio, self.id2label)

    def size_terms(self, stacks: str | None = None) -> list[SizeTerm]:
        """The parts of the model, counted from the fields (see `CheckedConfig.size_terms`; one stack, so
        ``stacks`` is unused): embeddings, spelling CNN, recurrent layers, and the heads: the language model's output
        layer (tied: its bias, and a projection when the sizes differ; or the adaptive softmax) and the classifier's
        (with attention pooling and the CRF)."""
        vocab, embedding, hidden, layers = self.vocab_size, self.embedding_size, self.hidden_size, self.num_layers
        directions = 2 if self.bidirectional else 1
        terms = [
            SizeTerm("the token embeddings", {"vocab_size": vocab, "embedding_size": embedding}, vocab * embedding),
            SizeTerm("the recurrent layers", {"num_layers": layers, "hidden_size": hidden, "embedding_size":
                     embedding}, recurrent_stack(self.cell_type, self.input_size, hidden, layers, directions)),
        ]
        if self.spelling_features:
            conv = self.spelling_embedding_size * self.spelling_features * self.spelling_kernel_size
            terms += [
                SizeTerm("the spelling CNN", {"spelling_features": self.spelling_features, "spelling_embedding_size":
                         self.spelling_embedding_size, "spelling_kernel_size": self.spelling_kernel_size},
                         conv + 257 * self.spelling_embedding_size),
                SizeTerm("the token spellings (int64)", {"vocab_size": vocab, "max_spelling_length":
                         self.max_spelling_length}, vocab * self.max_spelling_length, "buffer", element_bytes=8),
            ]
        if not self.bidirectional:  # a causal LM reads left to right
            terms.append(self._lm_head_term())
        classifier = linear(self.output_size, self.num_labels) + (
            linear(self.output_size, self.output_size) + self.output_size if self.classifier_pooling == "attention"
            else 0) + (self.num_labels * (self.num_labels + 2) if self.use_crf else 0)
        terms.append(SizeTerm("the classifier", {"num_labels": self.num_labels, "hidden_size": hidden}, classifier,
                              "classifier"))
        return terms

    def _lm_head_term(self) -> SizeTerm:
        vocab, embedding, hidden = self.vocab_size, self.embedding_size, self.hidden_size
        if self.adaptive_softmax_cutoffs:
            cutoffs = self.adaptive_softmax_cutoffs + [vocab]
            count = linear(hidden, cutoffs[0] + len(cutoffs) - 1)
            for i, (low, high) in enumerate(zip(cutoffs, cutoffs[1:]), start=1):
                projected = int(hidden // self.adaptive_softmax_div_value**i)
                count += hidden * projected + projected * (high - low)
            return SizeTerm("the adaptive softmax", {"vocab_size": vocab, "hidden_size": hidden}, count, "lm_head")
        if self.tie_word_embeddings:  # the embedding matrix, counted once; a bias, and a projection to its size
            return SizeTerm("the output layer's projection", {"hidden_size": hidden, "embedding_size": embedding},
                            (hidden * embedding if hidden != embedding else 0) + vocab, "lm_head")
        return SizeTerm("the output layer", {"vocab_size": vocab, "hidden_size": hidden}, linear(hidden, vocab),
                        "lm_head")

    @property
    def input_size(self) -> int:
        """Size of the vectors the first recurrent layer reads: the token embedding and its spelling features."""
        return self.embedding_size + self.spelling_features

    @property
    def output_size(self) -> int:
        """Size of the top layer's output vectors (both directions when bidirectional)."""
        return self.hidden_size * (2 if self.bidirectional else 1)


__all__ = ["RecurrentConfig"]
