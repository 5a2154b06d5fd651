"""Baselines written the way the classic tutorials write them (the recurrent ones loaded with our models' weights)."""

import torch
from torch import nn
from torch.nn import functional as F

from hf_seqmodels.models.embeddings import sinusoidal_positions

_CELLS = {"rnn": nn.RNNCell, "lstm": nn.LSTMCell, "gru": nn.GRUCell}
_FUSED = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


def next_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each position's logits against the next label (-100 = ignore)."""
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)


class TiedTutorialLM(nn.Module):
    """What the tutorial language models share: an embedding tied to the output layer, and ``from_recurrent_lm``,
    which copies the weights of a ``RecurrentForCausalLM`` (tied, unidirectional, ``embedding_size ==
    hidden_size``) so that both compute the same function. A subclass builds its recurrent layers and says where
    each layer's weights go (``layer_weight``)."""

    def __init__(self, vocab_size: int, hidden_size: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.out = nn.Linear(hidden_size, vocab_size)
        self.out.weight = self.embed.weight

    def layer_weight(self, index: int, name: str) -> torch.Tensor:
        """Layer ``index``'s ``weight_ih`` / ``weight_hh`` / ``bias_ih`` / ``bias_hh``."""
        raise NotImplementedError

    @classmethod
    def from_recurrent_lm(cls, model):
        config = model.config
        if config.hidden_size != config.embedding_size or not config.tie_word_embeddings or config.bidirectional:
            raise ValueError("The tutorial baselines copy a tied, unidirectional LM with embedding_size == "
                             "hidden_size.")
        tutorial = cls(config.cell_type, config.vocab_size, config.hidden_size, config.num_layers)
        with torch.no_grad():
            tutorial.embed.weight.copy_(model.model.embed_tokens.weight)
            tutorial.out.bias.copy_(model.lm_head.bias)
            for index, layer in enumerate(model.model.rnn.layers):
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    tutorial.layer_weight(index, name).copy_(getattr(layer.rnn, f"{name}_l0"))
        return tutorial.to(model.device)


class TutorialLM(TiedTutorialLM):
    """A language model as PyTorch's word_language_model example writes it today: embedding, one fused
    ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` of ``num_layers`` layers over the padded batch (no packing, no mask: the
    loss ignores the padded labels), tied output layer."""

    def __init__(self, cell_type: str, vocab_size: int, hidden_size: int, num_layers: int):
        super().__init__(vocab_size, hidden_size)
        self.rnn = _FUSED[cell_type](hidden_size, hidden_size, num_layers, batch_first=True)

    def layer_weight(self, index: int, name: str) -> torch.Tensor:
        return getattr(self.rnn, f"{name}_l{index}")

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None):
        """``input_ids`` ``(batch, length)``; returns logits ``(batch, length, vocab)`` and, with ``labels``
        (-100 = ignore), the next-token cross-entropy."""
        logits = self.out(self.rnn(self.embed(input_ids))[0])
        return logits, None if labels is None else next_token_loss(logits, labels)


class TutorialCellLM(TiedTutorialLM):
    """A language model as in PyTorch's word_language_model tutorial, but stepping an ``nn.*Cell`` per time step
    in Python (the "char-rnn" way): embedding, stacked cells, tied output layer."""

    def __init__(self, cell_type: str, vocab_size: int, hidden_size: int, num_layers: int):
        super().__init__(vocab_size, hidden_size)
        self.cell_type = cell_type
        self.cells = nn.ModuleList(_CELLS[cell_type](hidden_size, hidden_size) for _ in range(num_layers))

    def layer_weight(self, index: int, name: str) -> torch.Tensor:
        return getattr(self.cells[index], name)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None):
        """``input_ids`` ``(batch, length)``; returns logits ``(batch, length, vocab)`` and, with ``labels``
        (-100 = ignore), the next-token cross-entropy."""
        batch, length = input_ids.shape
        states = [None] * len(self.cells)
        outputs = []
        embedded = self.embed(input_ids)
        for t in range(length):
            x = embedded[:, t]
            for i, cell in enumerate(self.cells):
                if self.cell_type == "lstm":
                    states[i] = cell(x, states[i])
                    x = states[i][0]
                else:
                    states[i] = x = cell(x, states[i])
            outputs.append(x)
        logits = self.out(torch.stack(outputs, dim=1))
        return logits, None if labels is None else next_token_loss(logits, labels)


class TutorialTransformer(nn.Module):
    """PyTorch's "Language Translation with nn.Transformer" tutorial model (``Seq2SeqTransformer``): ``nn.Transformer``
    with batch-first inputs, scaled token embeddings plus a sinusoidal table, and a linear generator; without the
    final LayerNorms ``nn.Transformer`` adds, so that it has the paper's post-norm layout like ours. Its weights are
    its own (only the speed of the decoding loop is compared)."""

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, layers: int, ffn_dim: int, max_len: int = 256):
        super().__init__()
        self.d_model = d_model
        self.transformer = nn.Transformer(d_model, num_heads, layers, layers, ffn_dim, dropout=0.1, batch_first=True)
        self.transformer.encoder.norm = self.transformer.decoder.norm = None
        self.embed = nn.Embedding(vocab_size, d_model)
        self.generator = nn.Linear(d_model, vocab_size)
        self.register_buffer("positions", sinusoidal_positions(max_len, d_model), persistent=False)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids) * self.d_model**0.5 + self.positions[: ids.shape[1]]

    @torch.no_grad()
    def greedy_decode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, start_id: int,
                      new_tokens: int) -> torch.Tensor:
        """The tutorial's ``greedy_decode``, batched: encode once, then at every step run the decoder over the whole
        prefix again (no cache) and append the argmax of the last position."""
        self.eval()
        padding = attention_mask == 0
        memory = self.transformer.encoder(self.embed_tokens(input_ids), src_key_padding_mask=padding)
        ys = torch.full((input_ids.shape[0], 1), start_id, dtype=torch.long, device=input_ids.device)
        for _ in range(new_tokens):
            causal = nn.Transformer.generate_square_subsequent_mask(ys.shape[1], device=ys.device)
            out = self.transformer.decoder(self.embed_tokens(ys), memory, tgt_mask=causal,
                                           memory_key_padding_mask=padding)
            ys = torch.cat([ys, self.generator(out[:, -1]).argmax(-1, keepdim=True)], dim=1)
        return ys
