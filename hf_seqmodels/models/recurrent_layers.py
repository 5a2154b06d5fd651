"""Stacked recurrent layers (Elman RNN, LSTM, GRU) on torch's fused kernels, with padding handled exactly.

Padding never changes a result: the real tokens of every row are moved to the front, run through the fused
kernel as a packed sequence, and moved back. That covers right padding (training), left padding (batched
generation) and the rare mask with holes alike; padded positions come out as zeros and never touch the state.
A single position with a state to continue from (a decoding step) runs through torch's cell functions instead.
A right-padded batch (training) has its real tokens first already and is packed without moving them; a
left-to-right layer on it needs no packing at all, as its real positions cannot see the padding after them. It runs
the padded batch as it is (packing costs time, on a GPU about half the throughput) whenever the state it would return
is not needed or can be read off the outputs (rnn and gru, not the LSTM's cell).

Each layer is a transformers ``GradientCheckpointingLayer``: after ``model.activation_checkpointing_enable()`` a
training forward keeps only each layer's inputs and runs the layer again in the backward pass. A layer whose kernel
``torch.ao.quantization.quantize_dynamic`` replaced (int8 LSTM or GRU) runs its decoding steps through that kernel.
"""

import torch
from torch import nn
from torch.nn.utils.stateless import _reparametrize_module
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.utils import is_tracing

_CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
_STEP_CELLS = {"GRU": torch.gru_cell, "RNN_TANH": torch.rnn_tanh_cell, "RNN_RELU": torch.rnn_relu_cell}
_SEQUENCE_KERNELS = {"GRU": torch.gru, "RNN_TANH": torch.rnn_tanh, "RNN_RELU": torch.rnn_relu}
# A gate pre-activation this far from 0 saturates the sigmoid to exactly 0 or 1 (in float16 too, whose largest value
# is 65504), whatever the rest of the pre-activation adds.
_SATURATING = 1e4

State = tuple[torch.Tensor, ...]  # (h,) or (h, c), each (num_directions, batch, hidden_size)


def compaction_index(mask: torch.Tensor) -> torch.Tensor:
    """For each row, the positions of its real tokens first (in order), then its padding positions.

    ``mask``: bool ``(batch, length)``. Returns a long ``(batch, length)`` index for ``torch.gather``.
    """
    length = mask.shape[1]
    positions = torch.arange(length, device=mask.device)
    # Real tokens sort by position; padding sorts after every real token.
    return torch.argsort(torch.where(mask, positions, positions + length), dim=1)


def _last_real(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``outputs`` ``(batch, length, size)`` at each row's last real position (the first for an empty row):
    ``(batch, 1, size)``."""
    last = (lengths - 1).clamp(min=0).view(-1, 1, 1).expand(-1, 1, outputs.shape[-1])
    return outputs.gather(1, last)


class LockedDropout(nn.Module):
    """Variational ("locked") dropout (Gal & Ghahramani, 2016; AWD-LSTM's ``LockedDropout``): one mask per sequence,
    so the same features are dropped at every position of a row. Inputs are ``(batch, length, size)``."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return inputs
        mask = inputs.new_empty(inputs.shape[0], 1, inputs.shape[2]).bernoulli_(1 - self.p) / (1 - self.p)
        return inputs * mask


def make_dropout(p: float, locked: bool) -> nn.Module:
    """``LockedDropout(p)`` when ``locked``, else ``nn.Dropout(p)`` (a fresh mask at every position)."""
    return LockedDropout(p) if locked else nn.Dropout(p)


class RecurrentLayer(GradientCheckpointingLayer):
    """One recurrent layer (optionally bidirectional) on the fused torch kernel.

    Args:
        cell_type: "rnn", "lstm" or "gru".
        input_size: size of the input vectors.
        hidden_size: size of the state of each direction.
        bidirectional: run a second, backward, direction and concatenate the outputs.
        nonlinearity: "tanh" or "relu"; only used by the Elman RNN.
        weight_drop: DropConnect on the hidden-to-hidden weights in training (Wan et al., 2013; AWD-LSTM's
            ``WeightDrop``): each forward call drops entries of ``weight_hh`` with this probability (one mask for
            every position of the batch) and runs the fused kernel on the dropped weights, swapped in for the call
            as ``torch.func.functional_call`` swaps them (``nn.RNNBase`` then hands them to its kernel): the
            parameters and their names stay those of a plain layer, and the gradient reaches them through the mask.
    """

    def __init__(self, cell_type: str, input_size: int, hidden_size: int, bidirectional: bool, nonlinearity: str,
                 weight_drop: float = 0.0):
        super().__init__()
        extra = {"nonlinearity": nonlinearity} if cell_type == "rnn" else {}
        self.rnn = _CELLS[cell_type](input_size, hidden_size, batch_first=True, bidirectional=bidirectional, **extra)
        self.is_lstm = cell_type == "lstm"
        self.weight_drop = weight_drop

    def dropped_hidden_weights(self) -> dict[str, torch.Tensor]:
        """The hidden-to-hidden weights with DropConnect applied, by name (each direction its own mask)."""
        names = [name for name in self.rnn._flat_weights_names if name.startswith("weight_hh")]
        return {name: nn.functional.dropout(getattr(self.rnn, name), self.weight_drop, training=True)
                for name in names}

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
        if self.training and self.weight_drop > 0:
            with _reparametrize_module(self.rnn, self.dropped_hidden_weights()):
                outputs, new = self._run(inputs, mask, state or None, need_state)
        else:
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
        tracing = is_tracing(inputs)
        right_padded = not tracing and torch.equal(mask, torch.arange(mask.shape[1], device=mask.device)
                                                   < lengths.unsqueeze(1))
        if right_padded and not self.rnn.bidirectional and not (self.is_lstm and need_state):
            # Left to right over a right-padded batch, with no LSTM cell state to return (the outputs hold no c).
            outputs, _ = self.rnn(inputs, hx)
            new = None
            if need_state:  # h after the last real token
                new = self._keep_state_of_empty_rows(lengths, state, (_last_real(outputs, lengths).transpose(0, 1),))
            return outputs * mask.unsqueeze(-1), new

        if right_padded:  # the real tokens come first already: packed as they are
            outputs, new = self._run_packed(inputs, lengths, hx)
            outputs = outputs * mask.unsqueeze(-1)
        else:
            order = compaction_index(mask)
            compact = inputs.gather(1, order.unsqueeze(-1).expand_as(inputs))
            run_compact = self._run_unpacked if tracing else self._run_packed
            compact_out, new = run_compact(compact, lengths, hx)
            compact_out = compact_out * mask.gather(1, order).unsqueeze(-1)
            outputs = torch.empty_like(compact_out).scatter_(1, order.unsqueeze(-1).expand_as(compact_out),
                                                             compact_out)
        if not need_state:
            return outputs, None
        # A row with no real token ran one padding step (packing needs length >= 1): give it back its old state.
        return outputs, self._keep_state_of_empty_rows(lengths, state, new)

    def _run_packed(
        self, compact: torch.Tensor, lengths: torch.Tensor, hx: torch.Tensor | State | None
    ) -> tuple[torch.Tensor, State]:
        """The layer over ``compact`` (each row's real tokens first) as a packed sequence: eager mode (packing reads
        the lengths on the CPU). Returns the outputs (anything at padding) and the state after each row's last token."""
        packed = pack_padded_sequence(compact, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        packed_out, new = self.rnn(packed, hx)
        compact_out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=compact.shape[1])
        return compact_out, new if self.is_lstm else (new,)

    def _run_unpacked(
        self, compact: torch.Tensor, lengths: torch.Tensor, hx: torch.Tensor | State | None
    ) -> tuple[torch.Tensor, State]:
        """``_run_packed`` without reading a value, for ``torch.export`` and ``torch.compile``: each direction runs
        over the padded batch, the backward one over each row reversed within its length, so that in both the real
        tokens come first and the padding after them cannot reach them. ``h`` is the output at each row's last real
        token; the LSTM's ``c`` comes out of the kernel unchanged by the padding steps (see ``_direction``)."""
        batch, length = compact.shape[:2]
        positions = torch.arange(length, device=compact.device)
        real = positions < lengths.unsqueeze(1)
        # Row i reversed within its first lengths[i] positions (its own inverse): a gather index.
        reverse = torch.where(real, lengths.unsqueeze(1) - 1 - positions, positions).unsqueeze(-1)
        hx = None if hx is None else (hx if self.is_lstm else (hx,))
        outputs, finals = [], []
        for direction in range(2 if self.rnn.bidirectional else 1):
            x = compact if direction == 0 else compact.gather(1, reverse.expand_as(compact))
            start = None if hx is None else tuple(t[direction : direction + 1] for t in hx)
            out, c = self._direction(x, real, direction, start)
            finals.append((_last_real(out, lengths).transpose(0, 1), *(() if c is None else (c,))))
            outputs.append(out if direction == 0 else out.gather(1, reverse.expand_as(out)))
        return torch.cat(outputs, dim=-1), tuple(torch.cat(parts, dim=0) for parts in zip(*finals))

    def _direction(
        self, x: torch.Tensor, real: torch.Tensor, direction: int, start: State | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One direction of the layer (its own weights) over ``x``, whose padding comes after each row's real tokens;
        returns its outputs and, for the LSTM, the cell state after each row's last real token.

        For that cell state, the padding steps leave it as it was: an extra input, 1 at padding, closes the input
        gate and opens the forget gate with a weight that saturates their sigmoids to exactly 0 and 1
        (``c = 1 * c + 0 * g``) and has no effect at real tokens (0 times the weight)."""
        rnn = self.rnn
        suffix = "_reverse" if direction else ""
        weights = [getattr(rnn, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        if start is None:
            zeros = x.new_zeros(1, x.shape[0], rnn.hidden_size)
            start = (zeros, zeros) if self.is_lstm else (zeros,)
        args = (True, 1, 0.0, self.training, False, True)  # biases, one layer, no dropout, train, one way, batch first
        if not self.is_lstm:
            out, _ = _SEQUENCE_KERNELS[rnn.mode](x, start[0], weights, *args)
            return out, None
        gates = torch.tensor([-_SATURATING, _SATURATING, 0.0, 0.0], dtype=x.dtype, device=x.device)
        weights[0] = torch.cat([weights[0], gates.repeat_interleave(rnn.hidden_size).unsqueeze(1)], dim=1)
        x = torch.cat([x, (~real).unsqueeze(-1).to(x.dtype)], dim=-1)
        out, _, c = torch.lstm(x, start, weights, *args)
        return out, c

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

    @staticmethod
    def _keep_state_of_empty_rows(lengths: torch.Tensor, old: State | None, new: State) -> State:
        old = old if old is not None else tuple(torch.zeros_like(t) for t in new)
        empty = (lengths == 0).view(1, -1, 1)
        return tuple(torch.where(empty, before, after) for before, after in zip(old, new))


class RecurrentStack(nn.Module):
    """``num_layers`` recurrent layers with dropout between them (``locked``: one mask per sequence) and
    ``weight_drop`` on each layer's hidden-to-hidden weights (see `RecurrentLayer`).

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
        weight_drop: float = 0.0,
        locked: bool = False,
    ):
        super().__init__()
        directions = 2 if bidirectional else 1
        self.layers = nn.ModuleList(
            RecurrentLayer(cell_type, input_size if i == 0 else directions * hidden_size, hidden_size, bidirectional,
                           nonlinearity, weight_drop)
            for i in range(num_layers)
        )
        self.dropout = make_dropout(dropout, locked)
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
