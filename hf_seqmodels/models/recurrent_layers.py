"""Stacked recurrent layers (Elman RNN, LSTM, GRU) on torch's fused kernels, with padding handled exactly.

Padding never changes a result: the real tokens of every row are moved to the front, run through the fused
kernel as a packed sequence, and moved back. That covers right padding (training), left padding (batched
generation) and the rare mask with holes alike; padded positions come out as zeros and never touch the state.
A single position with a state to continue from (a decoding step) runs through torch's cell functions instead.
One case needs no packing: a left-to-right layer on a right-padded batch, whose real positions cannot see the
padding after them. It runs the padded batch as it is (packing costs time, on a GPU about half the throughput)
whenever the state it would return is not needed or can be read off the outputs (rnn and gru, not the LSTM's cell).

Each layer is a transformers ``GradientCheckpointingLayer``: after ``model.gradient_checkpointing_enable()`` a
training forward keeps only each layer's inputs and runs the layer again in the backward pass. A layer whose kernel
``torch.ao.quantization.quantize_dynamic`` replaced (int8 LSTM or GRU) runs its decoding steps through that kernel.
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers.modeling_layers import GradientCheckpointingLayer

_CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
_STEP_CELLS = {"GRU": torch.gru_cell, "RNN_TANH": torch.rnn_tanh_cell, "RNN_RELU": torch.rnn_relu_cell}

State = tuple[torch.Tensor, ...]  # (h,) or (h, c), each (num_directions, batch, hidden_size)


def compaction_index(mask: torch.Tensor) -> torch.Tensor:
    """For each row, the positions of its real tokens first (in order), then its padding positions.

    ``mask``: bool ``(batch, length)``. Returns a long ``(batch, length)`` index for ``torch.gather``.
    """
    length = mask.shape[1]
    positions = torch.arange(length, device=mask.device)
    # Real tokens sort by position; padding sorts after every real token.
    return torch.argsort(torch.where(mask, positions, positions + length), dim=1)


class RecurrentLayer(GradientCheckpointingLayer):
    """One recurrent layer (optionally bidirectional) on the fused torch kernel.

    Args:
        cell_type: "rnn", "lstm" or "gru".
        input_size: size of the input vectors.
        hidden_size: size of the state of each direction.
        bidirectional: run a second, backward, direction and concatenate the outputs.
        nonlinearity: "tanh" or "relu"; only used by the Elman RNN.
    """

    def __init__(self, cell_type: str, input_size: int, hidden_size: int, bidirectional: bool, nonlinearity: str):
        super().__init__()
        extra = {"nonlinearity": nonlinearity} if cell_type == "rnn" else {}
        self.rnn = _CELLS[cell_type](input_size, hidden_size, batch_first=True, bidirectional=bidirectional, **extra)
        self.is_lstm = cell_type == "lstm"

    def forward(
        self, inputs: torch.Tensor, mask: torch.Tensor | None = None, *state: torch.Tensor, need_state: bool = True
    ) -> tuple[torch.Tensor, ...]:
        """Run the layer over a chunk.

        Args:
            inputs: ``(batch, length, input_size)``.
            mask: bool ``(batch, length)``, True for real tokens; ``None`` when there is no padding.
            state: the state to start from, its tensors one by one (``h``, or ``h, c``; none: zeros). They are
                separate arguments so that a checkpoint (even a reentrant one, which sees only tensor arguments)
                recomputes the layer from them and passes their gradients back.
            need_state: return the new state; ``False`` returns none, and lets more batches skip packing.

        Returns:
            outputs ``(batch, length, num_directions * hidden_size)`` (zeros at padded positions), followed by the
            state's tensors after each row's last real token (a row with no real token keeps ``state``, zeros if none).
        """
        outputs, new = self._run(inputs, mask, state or None, need_state)
        return (outputs, *new) if need_state else (outputs,)

    def _run(
        self, inputs: torch.Tensor, mask: torch.Tensor | None, state: State | None, need_state: bool
    ) -> tuple[torch.Tensor, State | None]:
        """``forward`` with the state as one tuple (``None``: zeros); the new state is ``None`` unless needed."""
        if state is not None and inputs.shape[1] == 1 and not self.rnn.bidirectional:
            outputs, new = self._step(inputs, state, mask)
            return outputs, new if need_state else None
        hx = None if state is None else (state if self.is_lstm else state[0])
        if mask is None:
            outputs, new = self.rnn(inputs, hx)
            return outputs, (new if self.is_lstm else (new,)) if need_state else None

        lengths = mask.sum(dim=1)
        if self._padding_is_harmless(mask, lengths, need_state):
            outputs, _ = self.rnn(inputs, hx)
            new = None
            if need_state:  # h after the last real token
                last = (lengths - 1).clamp(min=0).view(-1, 1, 1).expand(-1, 1, outputs.shape[-1])
                new = self._keep_state_of_empty_rows(lengths, state, (outputs.gather(1, last).transpose(0, 1),))
            return outputs * mask.unsqueeze(-1), new

        order = compaction_index(mask)
        compact = inputs.gather(1, order.unsqueeze(-1).expand_as(inputs))
        packed = pack_padded_sequence(compact, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        packed_out, new = self.rnn(packed, hx)
        compact_out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=inputs.shape[1])
        compact_out = compact_out * mask.gather(1, order).unsqueeze(-1)
        outputs = torch.empty_like(compact_out).scatter_(1, order.unsqueeze(-1).expand_as(compact_out), compact_out)
        if not need_state:
            return outputs, None
        # A row with no real token ran one padding step (packing needs length >= 1): give it back its old state.
        return outputs, self._keep_state_of_empty_rows(lengths, state, new if self.is_lstm else (new,))

    def _step(self, inputs: torch.Tensor, state: State, mask: torch.Tensor | None) -> tuple[torch.Tensor, State]:
        """One position of a left-to-right layer (a decoding step) through torch's cell function: on a GPU the
        sequence kernel costs several times more to launch for one position. A padded row keeps its state."""
        rnn = self.rnn
        if isinstance(rnn, nn.RNNBase):
            weights = (rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
            if self.is_lstm:
                new = torch.lstm_cell(inputs[:, 0], (state[0][0], state[1][0]), *weights)
                new = tuple(t.unsqueeze(0) for t in new)
            else:
                new = (_STEP_CELLS[rnn.mode](inputs[:, 0], state[0][0], *weights).unsqueeze(0),)
        else:  # quantized by quantize_dynamic: no float weights for a cell function, only its own kernel
            _, new = rnn(inputs, state if self.is_lstm else state[0])
            new = new if self.is_lstm else (new,)
        if mask is not None:
            new = tuple(torch.where(mask.view(1, -1, 1), after, before) for before, after in zip(state, new))
            return new[0].transpose(0, 1) * mask.unsqueeze(-1), new
        return new[0].transpose(0, 1), new

    def _padding_is_harmless(self, mask: torch.Tensor, lengths: torch.Tensor, need_state: bool) -> bool:
        """Left to right over a right-padded batch, with no LSTM cell state to return (the outputs hold no c)."""
        if self.rnn.bidirectional or (self.is_lstm and need_state):
            return False
        positions = torch.arange(mask.shape[1], device=mask.device)
        return torch.equal(mask, positions < lengths.unsqueeze(1))

    @staticmethod
    def _keep_state_of_empty_rows(lengths: torch.Tensor, old: State | None, new: State) -> State:
        old = old if old is not None else tuple(torch.zeros_like(t) for t in new)
        empty = (lengths == 0).view(1, -1, 1)
        return tuple(torch.where(empty, before, after) for before, after in zip(old, new))


class RecurrentStack(nn.Module):
    """``num_layers`` recurrent layers with dropout between them.

    Layers are separate modules (rather than one multi-layer kernel) so that every layer's outputs can be
    returned (``output_hidden_states``) and decoders can feed extra inputs to the first layer.
    """

    def __init__(
        self,
        cell_type: str,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        bidirectional: bool = False,
        dropout: float = 0.0,
        nonlinearity: str = "tanh",
    ):
        super().__init__()
        directions = 2 if bidirectional else 1
        self.layers = nn.ModuleList(
            RecurrentLayer(cell_type, input_size if i == 0 else directions * hidden_size, hidden_size, bidirectional,
                           nonlinearity)
            for i in range(num_layers)
        )
        self.dropout = nn.Dropout(dropout)
        self.output_size = directions * hidden_size

    def forward(
        self,
        inputs: torch.Tensor,
        mask: torch.Tensor | None = None,
        states: list[State] | None = None,
        output_hidden_states: bool = False,
        need_states: bool = True,
    ) -> tuple[torch.Tensor, list[State] | None, tuple[torch.Tensor, ...] | None]:
        """Returns the top layer's outputs ``(batch, length, output_size)``, the new state of every layer (``None``
        with ``need_states=False``, which lets more batches skip packing), and, if asked, the outputs of every
        layer (``inputs`` first)."""
        all_hidden = (inputs,) if output_hidden_states else None
        new_states = []
        hidden = inputs
        for i, layer in enumerate(self.layers):
            if i > 0:
                hidden = self.dropout(hidden)
            hidden, *state = layer(hidden, mask, *(() if states is None else states[i]), need_state=need_states)
            new_states.append(tuple(state))
            if output_hidden_states:
                all_hidden += (hidden,)
        return hidden, new_states if need_states else None, all_hidden
