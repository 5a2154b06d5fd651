"""Configuration of the attention encoder-decoder: Sutskever, Bahdanau and Luong style recurrent translation models."""

from .configuration_utils import (
    CELL_TYPES,
    CheckedConfig,
    SizeTerm,
    check_choice,
    check_dropouts,
    check_flags,
    check_initializer_range,
    check_optional_sizes,
    check_sizes,
    check_token_ids,
    is_number,
    linear,
    recurrent_stack,
    decoder_start_token_id as start_token_rule,
)

ATTENTION_TYPES = ("bahdanau", "luong_dot", "luong_general", "luong_concat", "none")


class AttentionSeq2SeqConfig(CheckedConfig):
    r"""
    Configuration of an [`AttentionSeq2SeqModel`] and [`AttentionSeq2SeqForConditionalGeneration`].

    A recurrent encoder reads the source; a learned bridge turns its final state into the decoder's initial state;
    a recurrent decoder, attending over the encoder outputs at every step, predicts the target.

    Args:
        vocab_size (`int`, *optional*, defaults to 8000):
            Number of tokens in the target vocabulary, and in the source vocabulary unless `source_vocab_size` is set.
        source_vocab_size (`int`, *optional*):
            Number of tokens in the source vocabulary, when the source has its own tokenizer.
        embedding_size (`int`, *optional*, defaults to 256):
            Size of the source and target token embeddings.
        hidden_size (`int`, *optional*, defaults to 256):
            Size of the recurrent state of each encoder direction and of the decoder.
        cell_type (`str`, *optional*, defaults to `"gru"`):
            `"rnn"` (Elman, tanh), `"lstm"` or `"gru"`, for both the encoder and the decoder.
        encoder_layers (`int`, *optional*, defaults to 1):
            Number of stacked encoder layers.
        decoder_layers (`int`, *optional*, defaults to 1):
            Number of stacked decoder layers.
        bidirectional_encoder (`bool`, *optional*, defaults to `True`):
            Read the source in both directions; the encoder outputs then have size `2 * hidden_size`. The bridge,
            `tanh(W [final states] + b)`, maps the top encoder layer's final states (both directions, and the LSTM
            cell too) to the initial state of every decoder layer, whatever the sizes.
        attention_type (`str`, *optional*, defaults to `"luong_general"`):
            - `"bahdanau"` (Bahdanau et al., 2015): the additive score `v^T tanh(W_q s_{t-1} + W_k h_j)` with the
              decoder's previous state `s_{t-1}` as the query; the context `c_t` is fed to the recurrent layer with
              the embedding of `y_{t-1}`; the output layer reads `tanh(W_o [c_t; s_t; E y_{t-1}])` (eq. 4 of the
              paper, with tanh in place of the maxout).
            - `"luong_dot"`, `"luong_general"`, `"luong_concat"` (Luong et al., 2015): the recurrent layer runs
              first, then its new state `h_t` attends with the score `h_t^T h_j`, `h_t^T W_a h_j` or
              `v_a^T tanh(W_a [h_t; h_j])`; the output layer reads the attentional vector
              `tanh(W_c [c_t; h_t])`. `"luong_dot"` needs encoder outputs of the decoder's size
              (`bidirectional_encoder=False`).
            - `"none"`: the plain encoder-decoder of Sutskever et al. (2014): the source reaches the decoder only
              through its initial state (the context vector); no attention.
        attention_size (`int`, *optional*):
            Size of the hidden layer of the additive scores (`"bahdanau"`, `"luong_concat"`); defaults to
            `hidden_size`.
        input_feeding (`bool`, *optional*, defaults to `False`):
            Luong's input feeding: the previous attentional vector is concatenated to the embedding at the
            decoder's input, so the decoder knows its past alignment decisions. Speed trade-off: without it (and
            without Bahdanau attention, whose context also feeds the recurrent layer), teacher forcing runs the
            decoder over the whole target in one call of the fused recurrent kernel and attends for all positions
            at once; with it, every target position needs its own step in a Python loop, several times slower to
            train on CPU. Only for the Luong attention types.
        dropout (`float`, *optional*, defaults to 0.1):
            Dropout on the embeddings, between stacked recurrent layers and before the output layer.
        teacher_forcing_ratio (`float`, *optional*, defaults to 1.0):
            While training with `labels`: the probability that the decoder reads the gold previous token rather than
            its own previous prediction (the argmax of its previous logits, not differentiated through), drawn
            independently for each row and target position from torch's RNG (Bengio et al., 2015, scheduled
            sampling). 1.0 is plain teacher forcing, the whole target at once; below 1 the decoder runs one
            position at a time, and 0.0 decodes greedily from its own predictions. Evaluation and `generate()`
            ignore it. A training loop may change it at every step with `set_teacher_forcing_ratio` (the scripts'
            `--teacher_forcing_ratio` and `--scheduled_sampling` do); a saved config holds the last value set.
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            Share the decoder's input embedding matrix with the output layer (Press & Wolf, 2017). When the
            decoder's output vectors (of size `hidden_size`) differ in size from the embeddings, a linear projection
            maps them to `embedding_size` first.
        initializer_range (`float`, *optional*, defaults to 0.1):
            Standard deviation of the normal initialisation of embeddings and linear layers (0.1, as the recurrent
            translation models of OpenNMT and fairseq: with a Transformer's 0.02 the tied output layer and the
            attention scores start so flat that training stalls for hundreds of steps). Recurrent weights use
            torch's default `U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`.
        use_cache (`bool`, *optional*, defaults to `True`):
            Return the decoder state (and input-feeding vector and projected attention keys) as `past_key_values`
            outside training, so that generation feeds one new token per step.
        pad_token_id, bos_token_id, eos_token_id (`int`, *optional*):
            Ids of the special tokens, in the target vocabulary (the source tokenizer must use the same pad id).
            `pad_token_id` is needed for training from `labels`; `eos_token_id` may be a list of ids.
        decoder_start_token_id (`int`, *optional*):
            The first decoder input; defaults to `bos_token_id`.

    Every field is checked when the config is made and when it is loaded: a value of the wrong type or out of range,
    an unknown field, or a config.json that lacks a field or was written for another model raises a `ValueError`
    that names the field (see `CheckedConfig`), and so do sizes whose model would not fit in `HF_SEQMODELS_MAX_MODEL_GB`
    (64 GB unless set; see `configuration_utils.max_model_gb`).

    Example:

    ```python
    >>> from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
    >>> config = AttentionSeq2SeqConfig(vocab_size=8000, cell_type="lstm", attention_type="bahdanau",
    ...                                 pad_token_id=0, bos_token_id=1, eos_token_id=2)
    >>> model = AttentionSeq2SeqForConditionalGeneration(config)
    ```
    """

    model_type = "attention_seq2seq"
    # Their defaults compute what configs saved before these fields meant: such configs load without them.
    fields_added_later = ("teacher_forcing_ratio",)
    attribute_map = {"num_hidden_layers": "decoder_layers"}
    keys_to_ignore_at_inference = ["cache", "past_key_values"]

    def __init__(
        self,
        vocab_size: int = 8000,
        source_vocab_size: int | None = None,
        embedding_size: int = 256,
        hidden_size: int = 256,
        cell_type: str = "gru",
        encoder_layers: int = 1,
        decoder_layers: int = 1,
        bidirectional_encoder: bool = True,
        attention_type: str = "luong_general",
        attention_size: int | None = None,
        input_feeding: bool = False,
        dropout: float = 0.1,
        teacher_forcing_ratio: float = 1.0,
        tie_word_embeddings: bool = True,
        initializer_range: float = 0.1,
        use_cache: bool = True,
        pad_token_id: int | None = None,
        bos_token_id: int | None = None,
        eos_token_id: int | list[int] | None = None,
        decoder_start_token_id: int | None = None,
        **kwargs,
    ):
        check_choice("cell_type", cell_type, CELL_TYPES)
        check_choice("attention_type", attention_type, ATTENTION_TYPES)
        check_sizes(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=hidden_size,
                    encoder_layers=encoder_layers, decoder_layers=decoder_layers)
        check_optional_sizes(source_vocab_size=source_vocab_size, attention_size=attention_size)
        check_dropouts(dropout=dropout)
        check_flags(bidirectional_encoder=bidirectional_encoder, input_feeding=input_feeding,
                    tie_word_embeddings=tie_word_embeddings, use_cache=use_cache)
        check_initializer_range(initializer_range)
        check_teacher_forcing_ratio(teacher_forcing_ratio)
        if kwargs.setdefault("is_encoder_decoder", True) is not True:
            raise ValueError(f"`is_encoder_decoder`={kwargs['is_encoder_decoder']!r} must be True: an attention "
                             "encoder-decoder always is one; leave it out.")
        if input_feeding and not attention_type.startswith("luong"):
            raise ValueError(
                f"`input_feeding`=True is Luong's technique and needs a Luong attention, but "
                f"`attention_type`={attention_type!r}; choose 'luong_dot', 'luong_general' or 'luong_concat' "
                f"(Bahdanau's decoder already feeds its context to the recurrent layer)."
            )
        if attention_type == "luong_dot" and bidirectional_encoder:
            raise ValueError(
                f"`attention_type`='luong_dot' compares decoder states (size hidden_size={hidden_size}) with encoder "
                f"outputs directly, but `bidirectional_encoder`=True makes those of size {2 * hidden_size}; set "
                f"`bidirectional_encoder=False` or use 'luong_general'."
            )
        decoder_start_token_id = start_token_rule(decoder_start_token_id, bos_token_id)
        check_token_ids(vocab_size, "target vocabulary", pad_token_id=pad_token_id, bos_token_id=bos_token_id,
                        eos_token_id=eos_token_id, decoder_start_token_id=decoder_start_token_id)
        if source_vocab_size is not None:
            check_token_ids(source_vocab_size, "source vocabulary", pad_token_id=pad_token_id)
        self.set_fields(locals())

    def set_teacher_forcing_ratio(self, ratio: float) -> None:
        """Set `teacher_forcing_ratio` (checked, as in `__init__`): what a training loop calls at every step to
        follow a scheduled-sampling schedule."""
        check_teacher_forcing_ratio(ratio)
        self.teacher_forcing_ratio = ratio

    def size_terms(self, stacks: str | None = None) -> list[SizeTerm]:
        """The parts of the model, counted from the fields (see `CheckedConfig.size_terms`; every model has both
        stacks, so ``stacks`` is unused): both embeddings, the encoder's and decoder's recurrent layers, the bridge,
        the attention and its output layer, and the output layer (tied: its bias, and a projection when the sizes
        differ)."""
        vocab, embedding, hidden = self.vocab_size, self.embedding_size, self.hidden_size
        memory, attention = self.encoder_output_size, self.attention_size or hidden
        directions, parts = (2 if self.bidirectional_encoder else 1), (2 if self.cell_type == "lstm" else 1)
        fed = memory if self.attention_type == "bahdanau" else hidden if self.input_feeding else 0
        attention_layers = {
            "bahdanau": hidden * attention + memory * attention + attention + linear(memory + hidden + embedding, hidden),
            "luong_dot": linear(memory + hidden, hidden, bias=False),
            "luong_general": memory * hidden + linear(memory + hidden, hidden, bias=False),
            "luong_concat": (hidden + memory + 1) * attention + linear(memory + hidden, hidden, bias=False),
            "none": 0,
        }[self.attention_type]
        output = (hidden * embedding if hidden != embedding else 0) + vocab if self.tie_word_embeddings else linear(
            hidden, vocab)
        return [
            SizeTerm("the source embeddings", {"source_vocab_size": self.encoder_vocab_size, "embedding_size":
                     embedding}, self.encoder_vocab_size * embedding),
            SizeTerm("the target embeddings", {"vocab_size": vocab, "embedding_size": embedding}, vocab * embedding),
            SizeTerm("the encoder's recurrent layers", {"encoder_layers": self.encoder_layers, "hidden_size": hidden,
                     "embedding_size": embedding},
                     recurrent_stack(self.cell_type, embedding, hidden, self.encoder_layers, directions)),
            SizeTerm("the decoder's recurrent layers", {"decoder_layers": self.decoder_layers, "hidden_size": hidden,
                     "embedding_size": embedding},
                     recurrent_stack(self.cell_type, embedding + fed, hidden, self.decoder_layers)),
            SizeTerm("the bridge", {"decoder_layers": self.decoder_layers, "hidden_size": hidden},
                     linear(parts * memory, parts * self.decoder_layers * hidden)),
            SizeTerm("the attention", {"attention_size": attention, "hidden_size": hidden}, attention_layers),
            SizeTerm("the output layer", {"vocab_size": vocab, "hidden_size": hidden}, output, "lm_head"),
        ]

    @property
    def encoder_vocab_size(self) -> int:
        """Size of the source vocabulary."""
        return self.source_vocab_size if self.source_vocab_size is not None else self.vocab_size

    @property
    def encoder_output_size(self) -> int:
        """Size of the encoder outputs (both directions when bidirectional)."""
        return self.hidden_size * (2 if self.bidirectional_encoder else 1)


def check_teacher_forcing_ratio(ratio) -> None:
    """Raise unless ``ratio`` is a probability in [0, 1]."""
    if not is_number(ratio) or not 0.0 <= ratio <= 1.0:
        raise ValueError(f"`teacher_forcing_ratio`={ratio!r} must be a number in [0, 1]: the probability of feeding "
                         "the gold previous token (1.0: always, plain teacher forcing; 0.0: never).")


__all__ = ["AttentionSeq2SeqConfig"]
