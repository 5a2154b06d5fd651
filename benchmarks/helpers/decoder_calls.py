"""Accounting of an encoder-decoder's decoder calls: how many a search makes, on how many rows, and how long they
take, both recorded while the search runs (``decoder_calls``) and estimated from the model's time per step
(``decoder_step_bound``). ``translation`` uses it to bound what batching can gain, ``batch1_overhead`` to split a
search's time into the model's and the search's own.
"""

import contextlib
import dataclasses
from collections.abc import Callable

import torch

from .beam_search import decoder_step, encode
from .common import clock, interleaved, spread


@dataclasses.dataclass
class DecoderCall:
    """One call of the model's forward: its number of rows (hypotheses) and, when timed, its seconds."""

    rows: int
    seconds: float | None  # None when not timed


@contextlib.contextmanager
def decoder_calls(model, device: str | None = None):
    """Records every decoder call made to ``model`` inside the block, through its forward or through the
    ``decoding_step`` our decoding loop takes after its first step: its number of rows and, with ``device``, the
    seconds it took (``device`` synchronized around it, which a timed run must not pay)."""
    calls, started = [], []

    def before(rows: int) -> None:
        if device is not None:
            started.append(clock(device))
        calls.append(DecoderCall(rows, None))

    def after() -> None:
        if device is not None:
            calls[-1].seconds = clock(device) - started.pop()

    step = getattr(model, "decoding_step", None)

    def recorded_step(input_ids, **inputs):
        before(input_ids.shape[0])
        logits = step(input_ids, **inputs)
        after()
        return logits

    handles = [model.register_forward_pre_hook(lambda module, args, kwargs: before(
                   kwargs["decoder_input_ids"].shape[0]), with_kwargs=True),
               model.register_forward_hook(lambda module, args, kwargs, output: after(), with_kwargs=True)]
    if step is not None:
        model.decoding_step = recorded_step  # on the instance, over the class's method, until the block ends
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()
        if step is not None:
            del model.decoding_step


def prepared_step(model, source: list[int], rows: int, device: str) -> Callable[[], object]:
    """One cached decoder step (the model's forward and the log-softmax, as every search here does it) on ``rows``
    copies of ``source``, ready to time."""
    ids = torch.tensor([source] * rows, device=device)
    encoder_outputs = encode(model, ids, None)
    tokens = torch.full((rows, 1), model.config.decoder_start_token_id, device=device)
    _, cache = decoder_step(model, encoder_outputs, None, tokens, None)
    return lambda: decoder_step(model, encoder_outputs, None, tokens, cache)


def decoder_step_bound(model, source: list[int], generate_rows: list[int], baselines: dict[str, list[int]],
                       device: str, rounds: int = 9) -> dict:
    """The speed-up of ``generate()`` over each per-sentence search of ``baselines`` (name -> the rows of its
    decoder calls) if each spent its time in its decoder calls only, each costing the model's step time at its
    number of rows: no search bookkeeping, no encoder, no Python. Its two factors: how many more rows ``generate()``
    computes (every row of a batch runs until the batch's last sentence is done) and how much cheaper a row is in a
    batch (matrix products instead of matrix-vector products): ``row_cost_<k>_vs_<N>_rows``, a row's cost in a call
    of ``k`` rows (each baseline's fewest) over its cost in generate()'s largest batch of ``N``. The step times are
    taken in ``rounds`` interleaved rounds; the bound and the row cost are the median and quartiles of their
    per-round values."""
    sizes = sorted({*generate_rows, *(rows for calls in baselines.values() for rows in calls)})
    timings = interleaved({rows: prepared_step(model, source, rows, device) for rows in sizes}, rounds, device,
                          warmup=2)
    per_round = [dict(zip(sizes, seconds)) for seconds in zip(*(timings.seconds[rows] for rows in sizes))]
    batch_rows = max(generate_rows)
    figures = {}
    for name, calls in baselines.items():
        figures[f"decoder_rows_generate_vs_{name}"] = round(sum(generate_rows) / sum(calls), 2)
        figures[f"decoder_step_bound_vs_{name}"] = spread(
            [sum(map(step.get, calls)) / sum(map(step.get, generate_rows)) for step in per_round], 2)
    for rows in sorted({min(calls) for calls in baselines.values()}):
        figures[f"row_cost_{rows}_vs_{batch_rows}_rows"] = spread(
            [(step[rows] / rows) / (step[batch_rows] / batch_rows) for step in per_round], 2)
    return figures
