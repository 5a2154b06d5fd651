"""The language models the entries measure, built at matching sizes (random weights: speed does not depend on
training)."""

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM, TransformerConfig, TransformerForCausalLM


def recurrent_lm(cell_type: str, vocab_size: int, hidden_size: int, num_layers: int) -> RecurrentForCausalLM:
    """A tied recurrent LM with ``embedding_size == hidden_size`` (what the tutorial baselines can copy)."""
    return RecurrentForCausalLM(RecurrentConfig(
        vocab_size=vocab_size, embedding_size=hidden_size, hidden_size=hidden_size, num_layers=num_layers,
        cell_type=cell_type, pad_token_id=0,
    ))


def transformer_lm(vocab_size: int, d_model: int, num_layers: int, max_positions: int) -> TransformerForCausalLM:
    """A pre-norm decoder-only Transformer with 64-wide heads and a 4x feed-forward, no dropout."""
    return TransformerForCausalLM(TransformerConfig(
        vocab_size=vocab_size, d_model=d_model, num_heads=max(1, d_model // 64), decoder_layers=num_layers,
        encoder_layers=1, ffn_dim=4 * d_model, dropout=0.0, norm_position="pre",
        max_position_embeddings=max_positions, pad_token_id=0, is_encoder_decoder=False,
    ))
