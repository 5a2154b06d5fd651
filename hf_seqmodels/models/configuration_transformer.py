"""Configuration of the Transformer family (Vaswani et al., 2017): encoder-decoder, decoder-only and encoder-only."""

from .configuration_utils import (
    CheckedConfig,
    SizeTerm,
    check_choice,
    check_dropouts,
    check_flags,
    check_optional_sizes,
    check_positive_number,
    check_sizes,
    check_token_ids,
    linear,
    decoder_start_token_id as start_token_rule,
)
from .crf import check_crf_fields

ACTIVATIONS = ("relu", "gelu", "gelu_new", "silu")
NORM_POSITIONS = ("post", "pre")
POSITION_EMBEDDINGS = ("sinusoidal", "learned")
TRANSFORMER_POOLINGS = ("mean", "max", "attention")


class TransformerConfig(CheckedConfig):
    r"""
    Configuration of a [`TransformerModel`] and its heads. The defaults are the paper's base model.

    Which layers a head uses: [`TransformerModel`] and [`TransformerForConditionalGeneration`] use an encoder of
    `encoder_layers` layers and a decoder of `decoder_layers` layers; the decoder-only [`TransformerForCausalLM`]
    uses `decoder_layers` layers (without cross-attention); the encoder-only
    [`TransformerForSequenceClassification`] and [`TransformerForTokenClassification`] use `encoder_layers`.

    Args:
        vocab_size (`int`, *optional*, defaults to 10000):
            Size of the target vocabulary (decoder inputs and outputs), and of the source vocabulary too unless
            `source_vocab_size` is set. Decoder-only and encoder-only models use this vocabulary.
        source_vocab_size (`int`, *optional*):
            Size of the source vocabulary of an encoder-decoder, when it differs from the target's.
        d_model (`int`, *optional*, defaults to 512):
            Size of the token representations throughout the model.
        num_heads (`int`, *optional*, defaults to 8):
            Number of attention heads; must divide `d_model`.
        encoder_layers (`int`, *optional*, defaults to 6):
            Number of encoder layers.
        decoder_layers (`int`, *optional*, defaults to 6):
            Number of decoder layers.
        ffn_dim (`int`, *optional*, defaults to 2048):
            Size of the hidden layer of the position-wise feed-forward networks.
        activation (`str`, *optional*, defaults to `"relu"`):
            Activation of the feed-forward networks: `"relu"` (the paper), `"gelu"`, `"gelu_new"` (GPT-2's tanh
            approximation of GELU) or `"silu"`.
        dropout (`float`, *optional*, defaults to 0.1):
            Residual dropout: on each sub-layer's output before it is added to its input, and on the sum of the
            embeddings and positions (the paper's P_drop).
        attention_dropout (`float`, *optional*, defaults to 0.0):
            Dropout on the attention weights.
        activation_dropout (`float`, *optional*, defaults to 0.0):
            Dropout after the activation inside the feed-forward networks.
        norm_position (`str`, *optional*, defaults to `"post"`):
            `"post"`: `LayerNorm(x + Sublayer(x))` as in the paper; `"pre"`: `x + Sublayer(LayerNorm(x))` with a
            final LayerNorm after the last layer of each stack (Wang et al., 2019), which trains more stably.
        position_embedding (`str`, *optional*, defaults to `"sinusoidal"`):
            `"sinusoidal"`: the fixed encodings of the paper (section 3.5); `"learned"`: a trained embedding per
            position.
        max_position_embeddings (`int`, *optional*, defaults to 512):
            Longest sequence the model accepts (the size of the position table); longer inputs raise an error.
        scale_embedding (`bool`, *optional*, defaults to `True`):
            Multiply the token embeddings by `sqrt(d_model)` before adding the positions (section 3.4).
        share_encoder_decoder_embeddings (`bool`, *optional*, defaults to `False`):
            Use one embedding matrix for source and target tokens (a joint vocabulary; needs `source_vocab_size`
            unset or equal to `vocab_size`).
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            Use the target embedding matrix as the output projection (Press & Wolf, 2017). With
            `share_encoder_decoder_embeddings` this is the paper's three-way sharing.
        layer_norm_eps (`float`, *optional*, defaults to 1e-5):
            Epsilon of every LayerNorm.
        classifier_pooling (`str`, *optional*, defaults to `"mean"`):
            How [`TransformerForSequenceClassification`] turns the encoder outputs into one vector: `"mean"` or
            `"max"` over real tokens, or `"attention"` (learned attention weights).
        classifier_dropout (`float`, *optional*, defaults to 0.0):
            Dropout before the classifier of the classification heads.
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
            Return the decoder's keys and values as `past_key_values` (outside training), so that generation feeds
            one new token per step.
        pad_token_id, bos_token_id, eos_token_id, decoder_start_token_id (`int`, *optional*):
            Ids of the special tokens. `pad_token_id` is needed for batches of different lengths and to build
            decoder inputs from `labels`; `decoder_start_token_id` (else `bos_token_id`) starts every target;
            `eos_token_id` may be a list of ids.
        is_encoder_decoder (`bool`, *optional*, defaults to `True`):
            Whether the model is an encoder-decoder; the decoder-only and encoder-only heads set it to `False` in
            their own copy of the config.

    Weights are initialised as in fairseq's Transformer: Xavier-uniform linear layers with zero biases, and token
    embeddings drawn from `N(0, d_model^-0.5)` so that, scaled by `sqrt(d_model)`, they have unit variance.

    Every field is checked when the config is made and when it is loaded: a value of the wrong type or out of range,
    an unknown field, or a config.json that lacks a field or was written for another model raises a `ValueError`
    that names the field (see `CheckedConfig`), and so do sizes whose model would not fit in `HF_SEQMODELS_MAX_MODEL_GB`
    (64 GB unless set; see `configuration_utils.max_model_gb`).

    Example:

    ```python
    >>> from hf_seqmodels import TransformerConfig, TransformerForConditionalGeneration
    >>> config = TransformerConfig(vocab_size=8000, d_model=256, num_heads=4, encoder_layers=3, decoder_layers=3,
    ...                            ffn_dim=1024, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    >>> model = TransformerForConditionalGeneration(config)
    ```
    """

    model_type = "transformer"  # no model of transformers' own has it (CONFIG_MAPPING_NAMES)
    former_model_types = ("vanilla_transformer",)  # its name before: folders saved under it still load
    # Their defaults compute what configs saved before these fields meant: such configs load without them.
    fields_added_later = ("use_crf", "crf_constrain_bio")
    attribute_map = {
        "hidden_size": "d_model",
        "num_attention_heads": "num_heads",
        "num_hidden_layers": "decoder_layers",
    }
    # Trainer's evaluate/predict return the logits alone.
    keys_to_ignore_at_inference = ["cache", "past_key_values", "encoder_last_hidden_state"]

    def __init__(
        self,
        vocab_size: int = 10000,
        source_vocab_size: int | None = None,
        d_model: int = 512,
        num_heads: int = 8,
        encoder_layers: int = 6,
        decoder_layers: int = 6,
        ffn_dim: int = 2048,
        activation: str = "relu",
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        norm_position: str = "post",
        position_embedding: str = "sinusoidal",
        max_position_embeddings: int = 512,
        scale_embedding: bool = True,
        share_encoder_decoder_embeddings: bool = False,
        tie_word_embeddings: bool = True,
        layer_norm_eps: float = 1e-5,
        classifier_pooling: str = "mean",
        classifier_dropout: float = 0.0,
        use_crf: bool = False,
        crf_constrain_bio: bool = False,
        use_cache: bool = True,
        pad_token_id: int | None = None,
        bos_token_id: int | None = None,
        eos_token_id: int | list[int] | None = None,
        decoder_start_token_id: int | None = None,
        is_encoder_decoder: bool = True,
        **kwargs,
    ):
        check_choice("activation", activation, ACTIVATIONS)
        check_choice("norm_position", norm_position, NORM_POSITIONS)
        check_choice("position_embedding", position_embedding, POSITION_EMBEDDINGS)
        check_choice("classifier_pooling", classifier_pooling, TRANSFORMER_POOLINGS)
        check_sizes(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads, encoder_layers=encoder_layers,
                    decoder_layers=decoder_layers, ffn_dim=ffn_dim, max_position_embeddings=max_position_embeddings)
        check_optional_sizes(source_vocab_size=source_vocab_size)
        check_dropouts(dropout=dropout, attention_dropout=attention_dropout, activation_dropout=activation_dropout,
                       classifier_dropout=classifier_dropout)
        check_flags(scale_embedding=scale_embedding, share_encoder_decoder_embeddings=share_encoder_decoder_embeddings,
                    tie_word_embeddings=tie_word_embeddings, use_cache=use_cache, is_encoder_decoder=is_encoder_decoder)
        check_positive_number("layer_norm_eps", layer_norm_eps, "the epsilon every LayerNorm adds to the variance")
        if d_model % num_heads:
            raise ValueError(
                f"`d_model`={d_model} is not divisible by `num_heads`={num_heads}: every head gets d_model / "
                f"num_heads dimensions. Choose num_heads among the divisors of d_model."
            )
        if share_encoder_decoder_embeddings and source_vocab_size not in (None, vocab_size):
            raise ValueError(
                f"`share_encoder_decoder_embeddings`=True needs one vocabulary, but `source_vocab_size`="
                f"{source_vocab_size} differs from `vocab_size`={vocab_size}: unset source_vocab_size or stop sharing."
            )
        decoder_start_token_id = start_token_rule(decoder_start_token_id, bos_token_id)
        check_token_ids(vocab_size, pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id,
                        decoder_start_token_id=decoder_start_token_id)
        if source_vocab_size is not None:
            check_token_ids(source_vocab_size, "source vocabulary", pad_token_id=pad_token_id)
        self.set_fields(locals())
        check_crf_fields(use_crf, crf_constrain_bio, self.id2label)

    def size_terms(self, stacks: str | None = None) -> list[SizeTerm]:
        """The parts of the model, counted from the fields (see `CheckedConfig.size_terms`): each stack's embeddings
        (and position table) and layers, the language model's output layer (none when tied) and the classifier.
        ``stacks``: "both" (the encoder-decoder), "encoder" (encoder-only heads) or "decoder" (the decoder-only
        language model); None, both when `is_encoder_decoder`, else the larger one."""
        d_model, ffn, positions, vocab = self.d_model, self.ffn_dim, self.max_position_embeddings, self.vocab_size
        attention, norm = linear(d_model, 4 * d_model), 2 * d_model  # query, key, value and output projections

        def stack(name: str, vocab_size: int, vocab_field: str, layers: int, cross: bool) -> list[SizeTerm]:
            attentions = 2 if cross else 1  # self-attention, and cross-attention in an encoder-decoder's decoder
            layer = attentions * attention + linear(d_model, ffn) + linear(ffn, d_model) + (attentions + 1) * norm
            position = {"max_position_embeddings": positions, "d_model": d_model}
            return [
                SizeTerm(f"the {name}'s token embeddings", {vocab_field: vocab_size, "d_model": d_model},
                         vocab_size * d_model),
                SizeTerm(f"the {name}'s positions", position, positions * d_model,
                         "body" if self.position_embedding == "learned" else "buffer"),
                SizeTerm(f"the {name}'s layers", {f"{name}_layers": layers, "d_model": d_model, "ffn_dim": ffn},
                         layers * layer + norm),
            ]

        encoder = stack("encoder", self.encoder_vocab_size, "source_vocab_size" if self.source_vocab_size else
                        "vocab_size", self.encoder_layers, cross=False)
        decoder_only = stack("decoder", vocab, "vocab_size", self.decoder_layers, cross=False)
        if stacks is None:
            larger = max((encoder, decoder_only), key=lambda terms: sum(term.bytes for term in terms))
            stacks = "both" if self.is_encoder_decoder else ("encoder" if larger is encoder else "decoder")
        terms = {"encoder": encoder, "decoder": decoder_only,
                 "both": encoder + stack("decoder", vocab, "vocab_size", self.decoder_layers, cross=True)}[stacks]
        if stacks == "both" and self.share_encoder_decoder_embeddings:
            terms = [term for term in terms if term.what != "the decoder's token embeddings"]
        if stacks != "encoder" and not self.tie_word_embeddings:
            terms.append(SizeTerm("the output layer", {"vocab_size": vocab, "d_model": d_model}, vocab * d_model,
                                  "lm_head"))
        if stacks == "encoder":
            pooling = linear(d_model, d_model) + d_model if self.classifier_pooling == "attention" else 0
            crf = self.num_labels * (self.num_labels + 2) if self.use_crf else 0
            terms.append(SizeTerm("the classifier", {"num_labels": self.num_labels, "d_model": d_model},
                                  linear(d_model, self.num_labels) + pooling + crf, "classifier"))
        return terms

    @property
    def encoder_vocab_size(self) -> int:
        """Size of the vocabulary the encoder reads."""
        return self.source_vocab_size if self.source_vocab_size is not None else self.vocab_size


__all__ = ["TransformerConfig"]
