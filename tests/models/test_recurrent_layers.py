"""RecurrentLayer / RecurrentStack against the textbook equations, run step by step in float64 on each sequence's
real tokens alone, for every cell type, one and two directions, and every kind of padding."""

import functools

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from hf_seqmodels.models.recurrent_layers import RecurrentLayer, RecurrentStack

CELLS = [("rnn", "tanh"), ("rnn", "relu"), ("lstm", "tanh"), ("gru", "tanh")]
INPUT_SIZE, HIDDEN_SIZE, LENGTH = 5, 4, 6
MASKS = {
    "none": None,
    "right": [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]],
    "left": [[1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 1]],
    "holes": [[1, 0, 1, 1, 0, 1], [0, 1, 1, 0, 0, 1], [1, 1, 0, 1, 1, 0]],
}
BATCH = 3


def elman_step(x, state, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    (h,) = state
    pre = w_ih @ x + b_ih + w_hh @ h + b_hh
    return (torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre),)


def lstm_step(x, state, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    """PyTorch's layout: the rows of w_ih are W_ii | W_if | W_ig | W_io (input, forget, cell, output gates)."""
    h, c = state
    w_ii, w_if, w_ig, w_io = w_ih.chunk(4)
    w_hi, w_hf, w_hg, w_ho = w_hh.chunk(4)
    b_ii, b_if, b_ig, b_io = b_ih.chunk(4)
    b_hi, b_hf, b_hg, b_ho = b_hh.chunk(4)
    i = torch.sigmoid(w_ii @ x + b_ii + w_hi @ h + b_hi)
    f = torch.sigmoid(w_if @ x + b_if + w_hf @ h + b_hf)
    g = torch.tanh(w_ig @ x + b_ig + w_hg @ h + b_hg)
    o = torch.sigmoid(w_io @ x + b_io + w_ho @ h + b_ho)
    c = f * c + i * g
    return o * torch.tanh(c), c


def gru_step(x, state, w_ih, w_hh, b_ih, b_hh, nonlinearity):
    """PyTorch's layout: W_ir | W_iz | W_in (reset, update, new)."""
    (h,) = state
    w_ir, w_iz, w_in = w_ih.chunk(3)
    w_hr, w_hz, w_hn = w_hh.chunk(3)
    b_ir, b_iz, b_in = b_ih.chunk(3)
    b_hr, b_hz, b_hn = b_hh.chunk(3)
    r = torch.sigmoid(w_ir @ x + b_ir + w_hr @ h + b_hr)
    z = torch.sigmoid(w_iz @ x + b_iz + w_hz @ h + b_hz)
    n = torch.tanh(w_in @ x + b_in + r * (w_hn @ h + b_hn))
    return ((1 - z) * n + z * h,)


STEPS = {"rnn": elman_step, "lstm": lstm_step, "gru": gru_step}


def reference_layer(layer: RecurrentLayer, cell_type, nonlinearity, inputs, state):
    """One layer over one sequence ``(T, input_size)`` of real tokens; ``state``: tuple of ``(D, H)``.

    The backward direction runs the same equations over the reversed tokens. Returns outputs ``(T, D*H)`` and the
    final state (tuple of ``(D, H)``).
    """
    directions = 2 if layer.rnn.bidirectional else 1
    outputs, finals = [], []
    for d in range(directions):
        suffix = "_reverse" if d else ""
        weights = [getattr(layer.rnn, f"{name}_l0{suffix}").double()
                   for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        current = tuple(s[d] for s in state)
        steps = []
        for x in (inputs.flip(0) if d else inputs):
            current = STEPS[cell_type](x, current, *weights, nonlinearity)
            steps.append(current[0])
        outputs.append(torch.stack(steps).flip(0) if d else torch.stack(steps))
        finals.append(current)
    return torch.cat(outputs, dim=-1), tuple(torch.stack(parts) for parts in zip(*finals))


@pytest.fixture(params=["eager", "traced"])
def path(request, monkeypatch):
    """Which of the layer's paths runs: the eager one (packing), or the one ``torch.export`` and ``torch.compile``
    trace (no value read), taken here in eager mode by making the layer believe it is being traced."""
    if request.param == "traced":
        from hf_seqmodels.models import recurrent_layers

        monkeypatch.setattr(recurrent_layers, "is_tracing", lambda tensor: True)
    return request.param


def state_parts(cell_type: str) -> int:
    return 2 if cell_type == "lstm" else 1  # (h, c) or (h,)


def zero_state(cell_type, directions):
    return tuple(torch.zeros(directions, HIDDEN_SIZE, dtype=torch.float64) for _ in range(state_parts(cell_type)))


@pytest.mark.parametrize("need_states", [True, False], ids=["states", "no-states"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
@pytest.mark.parametrize("padding", list(MASKS))
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell_type,nonlinearity", CELLS, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_stack_equals_equations(cell_type, nonlinearity, bidirectional, padding, with_state, need_states, path):
    torch.manual_seed(0)
    directions = 2 if bidirectional else 1
    stack = RecurrentStack(cell_type, INPUT_SIZE, HIDDEN_SIZE, num_layers=2, bidirectional=bidirectional,
                           nonlinearity=nonlinearity)
    inputs = torch.randn(BATCH, LENGTH, INPUT_SIZE)
    mask = None if MASKS[padding] is None else torch.tensor(MASKS[padding], dtype=torch.bool)
    states = None
    if with_state:
        states = [tuple(torch.randn(directions, BATCH, HIDDEN_SIZE) for _ in range(state_parts(cell_type)))
                  for _ in stack.layers]
    with torch.no_grad():
        outputs, final_states, all_hidden = stack(inputs, mask, states, output_hidden_states=True,
                                                  need_states=need_states)
    assert need_states or final_states is None

    assert len(all_hidden) == 3 and torch.equal(all_hidden[0], inputs) and torch.equal(all_hidden[-1], outputs)
    for b in range(BATCH):
        keep = torch.ones(LENGTH, dtype=torch.bool) if mask is None else mask[b]
        hidden = inputs[b][keep].double()
        for i, layer in enumerate(stack.layers):
            start = zero_state(cell_type, directions) if states is None else tuple(s[:, b].double() for s in states[i])
            hidden, final = reference_layer(layer, cell_type, nonlinearity, hidden, start)
            torch.testing.assert_close(all_hidden[i + 1][b][keep], hidden.float(), rtol=0, atol=1e-5)
            assert not all_hidden[i + 1][b][~keep].any(), "padded positions must be zeros"
            for got, expected in zip(final_states[i] if need_states else (), final):
                torch.testing.assert_close(got[:, b], expected.float(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell_type,nonlinearity", CELLS, ids=["rnn-tanh", "rnn-relu", "lstm", "gru"])
def test_row_without_tokens_keeps_its_state(cell_type, nonlinearity, bidirectional, path):
    """A decoding step where a row is padding (e.g. its prompt is shorter) leaves that row's state untouched."""
    torch.manual_seed(0)
    directions = 2 if bidirectional else 1
    layer = RecurrentLayer(cell_type, INPUT_SIZE, HIDDEN_SIZE, bidirectional, nonlinearity)
    inputs = torch.randn(2, 3, INPUT_SIZE)
    mask = torch.tensor([[0, 0, 0], [1, 1, 0]], dtype=torch.bool)
    state = tuple(torch.randn(directions, 2, HIDDEN_SIZE) for _ in range(state_parts(cell_type)))
    with torch.no_grad():
        outputs, *new_state = layer(inputs, mask, *state)
    assert not outputs[0].any()
    for old, new in zip(state, new_state):
        assert torch.equal(new[:, 0], old[:, 0])
    expected_outputs, expected_state = reference_layer(
        layer, cell_type, nonlinearity, inputs[1, :2].double(), tuple(s[:, 1].double() for s in state)
    )
    torch.testing.assert_close(outputs[1, :2], expected_outputs.float(), rtol=0, atol=1e-5)
    for new, expected in zip(new_state, expected_state):
        torch.testing.assert_close(new[:, 1], expected.float(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("cell_type,need_state,padding,bidirectional,packs", [
    ("lstm", False, "right", False, False),  # the fast path: the padded batch as it is
    ("gru", True, "right", False, False),  # the state is read off the outputs
    ("rnn", True, "right", False, False),
    ("lstm", True, "right", False, True),  # the cell state is not in the outputs
    ("gru", False, "left", False, True),  # left padding would run before the real tokens
    ("gru", False, "right", True, True),  # the backward direction would start in the padding
])
def test_packing_only_where_padding_would_change_a_result(monkeypatch, cell_type, need_state, padding,
                                                          bidirectional, packs):
    from hf_seqmodels.models import recurrent_layers

    calls = []
    real = recurrent_layers.pack_padded_sequence
    monkeypatch.setattr(recurrent_layers, "pack_padded_sequence", lambda *a, **k: calls.append(1) or real(*a, **k))
    layer = RecurrentLayer(cell_type, INPUT_SIZE, HIDDEN_SIZE, bidirectional, "tanh")
    with torch.no_grad():
        layer(torch.randn(BATCH, LENGTH, INPUT_SIZE), torch.tensor(MASKS[padding], dtype=torch.bool),
              need_state=need_state)
    assert bool(calls) == packs


@pytest.mark.parametrize("cell_type,nonlinearity", CELLS)
def test_decoding_step_matches_the_fused_kernel(cell_type, nonlinearity):
    """One position with a state (a decoding step) goes through torch's cell functions, not the sequence kernel."""
    torch.manual_seed(0)
    layer = RecurrentLayer(cell_type, INPUT_SIZE, HIDDEN_SIZE, bidirectional=False, nonlinearity=nonlinearity)
    inputs = torch.randn(BATCH, 1, INPUT_SIZE)
    state = tuple(torch.randn(1, BATCH, HIDDEN_SIZE) for _ in range(state_parts(cell_type)))
    outputs, *new = layer(inputs, None, *state)
    expected_outputs, expected = layer.rnn(inputs, state if cell_type == "lstm" else state[0])
    expected = expected if cell_type == "lstm" else (expected,)
    torch.testing.assert_close(outputs, expected_outputs)
    for got, want in zip(new, expected, strict=True):
        torch.testing.assert_close(got, want)

    # A padded row keeps its state and outputs zeros; the others step as without a mask.
    mask = torch.tensor([[True], [False], [True]])
    masked_outputs, *masked = layer(inputs, mask, *state)
    torch.testing.assert_close(masked_outputs[[0, 2]], expected_outputs[[0, 2]])
    assert not masked_outputs[1].any()
    for got, want, before in zip(masked, expected, state, strict=True):
        torch.testing.assert_close(got[:, [0, 2]], want[:, [0, 2]])
        assert torch.equal(got[:, 1], before[:, 1])


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non-reentrant", "reentrant"])
@pytest.mark.parametrize("cell_type", ["rnn", "lstm", "gru"])
def test_checkpointed_layer_passes_gradients_to_its_inputs_and_state(cell_type, use_reentrant):
    """Under a checkpoint (as `activation_checkpointing_enable` sets one) the layer runs again in the backward pass and
    the gradients of its weights, its inputs and the state it started from (an encoder's, for a decoder) are those
    of the plain run: a reentrant checkpoint sees only tensor arguments, which the state's tensors are."""
    torch.manual_seed(0)
    layer = RecurrentLayer(cell_type, INPUT_SIZE, HIDDEN_SIZE, bidirectional=False, nonlinearity="tanh")
    inputs = torch.randn(BATCH, LENGTH, INPUT_SIZE, requires_grad=True)
    mask = torch.tensor(MASKS["holes"], dtype=torch.bool)
    state = tuple(torch.randn(1, BATCH, HIDDEN_SIZE, requires_grad=True) for _ in range(state_parts(cell_type)))
    runs = []
    layer.rnn.register_forward_hook(lambda *args: runs.append(1))

    def gradients():
        outputs, *new = layer(inputs, mask, *state)
        sum(t.square().sum() for t in (outputs, *new)).backward()
        leaves = [inputs, *state, *layer.parameters()]
        found = [t.grad.clone() for t in leaves]
        for t in leaves:
            t.grad = None
        return found

    expected = gradients()
    layer.train().gradient_checkpointing = True
    layer._gradient_checkpointing_func = functools.partial(checkpoint, use_reentrant=use_reentrant)
    runs.clear()
    torch.testing.assert_close(gradients(), expected, rtol=1e-6, atol=1e-7)
    assert len(runs) == 2


@pytest.mark.filterwarnings("ignore:.*quantiz:DeprecationWarning", "ignore:.*quantiz:UserWarning")
def test_decoding_step_of_a_dynamically_quantized_layer():
    """quantize_dynamic swaps the kernel for an int8 one without the float weights the cell functions take: a
    decoding step then runs that kernel, and a padded row still keeps its state."""
    torch.manual_seed(0)
    layer = torch.ao.quantization.quantize_dynamic(
        RecurrentLayer("lstm", INPUT_SIZE, HIDDEN_SIZE, bidirectional=False, nonlinearity="tanh"), {nn.LSTM}
    )
    inputs = torch.randn(BATCH, 1, INPUT_SIZE)
    state = tuple(torch.randn(1, BATCH, HIDDEN_SIZE) for _ in range(2))
    expected_outputs, expected = layer.rnn(inputs, state)
    outputs, *new = layer(inputs, torch.tensor([[True], [False], [True]]), *state)
    torch.testing.assert_close(outputs[[0, 2]], expected_outputs[[0, 2]])
    assert not outputs[1].any()
    for got, want, before in zip(new, expected, state, strict=True):
        torch.testing.assert_close(got[:, [0, 2]], want[:, [0, 2]])
        assert torch.equal(got[:, 1], before[:, 1])
