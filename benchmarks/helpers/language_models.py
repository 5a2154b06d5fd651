"""The language models the entries measure, built at matching sizes (random weights: speed does not depend on
training)."""

import dataclasses

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM, TransformerConfig, TransformerForCausalLM


@dataclasses.dataclass(frozen=True)
class LMSizes:
    """Sizes of the language models, shared by the entries that measure them (each adds its own fields)."""

    cell_type: str = "lstm"
    vocab_size: int = 10000
    hidden_size: int = 512
    num_layers: int = 2


def recurrent_lm(sizes: LMSizes) -> RecurrentForCausalLM:
    """A tied recurrent LM with ``embedding_size == hidden_size`` (what the tutorial baselines can copy)."""
    return RecurrentForCausalLM(RecurrentConfig(
        vocab_size=sizes.vocab_size, embedding_size=sizes.hidden_size, hidden_size=sizes.hidden_size,
        num_layers=sizes.num_layers, cell_type=sizes.cell_type, pad_token_id=0,
    ))


def transformer_lm(sizes: LMSizes, max_positions: int) -> TransformerForCausalLM:
    """A pre-norm decoder-only Transformer of width ``hidden_size`` with 64-wide heads, a 4x feed-forward and no
    dropout."""
    return TransformerForCausalLM(TransformerConfig(
        vocab_size=sizes.vocab_size, d_model=sizes.hidden_size, num_heads=max(1, sizes.hidden_size // 64),
        decoder_layers=sizes.num_layers, encoder_layers=1, ffn_dim=4 * sizes.hidden_size, dropout=0.0,
        norm_position="pre", max_position_embeddings=max_positions, pad_token_id=0, is_encoder_decoder=False,
    ))
