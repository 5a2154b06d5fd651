"""Accounting of an encoder-decoder's decoder calls: how many a search makes, on how many rows, and how long they
take, both recorded while the search runs (``decoder_calls``) and estimated from the model's time per step
(``decoder_step_bound``). ``translation`` uses it to bound what batching can gain, ``batch1_overhead`` to split a
search's time into the model's and the search's own.
"""

import contextlib
import dataclasses

import torch

from .beam_search import decoder_step, encode
from .common import clock, time_call


@dataclasses.dataclass
class DecoderCall:
    """One call of the model's forward: its number of rows (hypotheses) and, when timed, its seconds."""

    rows: int
    seconds: float | None  # None when not timed


@contextlib.contextmanager
def decoder_calls(model, device: str | None = None):
    """Records every decoder call made to ``model``'s forward inside the block: its number of rows and, with
    ``device``, the seconds it took (``device`` synchronized around it, which a timed run must not pay)."""
    calls, started = [], []

    def before(module, args, kwargs):
        if device is not None:
            started.append(clock(device))
        calls.append(DecoderCall(kwargs["decoder_input_ids"].shape[0], None))

    def after(module, args, kwargs, output):
        if device is not None:
            calls[-1].seconds = clock(device) - started.pop()

    handles = [model.register_forward_pre_hook(before, with_kwargs=True),
               model.register_forward_hook(after, with_kwargs=True)]
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def decoder_step_seconds(model, source: list[int], rows: int, device: str) -> float:
    """Median time of one cached decoder step (the model's forward and the log-softmax, as every search here does
    it) on ``rows`` copies of ``source``."""
    ids = torch.tensor([source] * rows, device=device)
    encoder_outputs = encode(model, ids, None)
    tokens = torch.full((rows, 1), model.config.decoder_start_token_id, device=device)
    _, cache = decoder_step(model, encoder_outputs, None, tokens, None)
    return time_call(lambda: decoder_step(model, encoder_outputs, None, tokens, cache), device, repeats=9, warmup=2)


def decoder_step_bound(model, source: list[int], generate_rows: list[int], search_rows: list[int],
                       device: str) -> dict:
    """The speed-up of ``generate()`` over a per-sentence search if each spent its time in its decoder calls only,
    each costing the model's step time at its number of rows: no search bookkeeping, no encoder, no Python. Its two
    factors: how many more rows ``generate()`` computes (every row of a batch runs until the batch's last sentence
    is done) and how much cheaper a row is in a batch (matrix products instead of matrix-vector products)."""
    step = {rows: decoder_step_seconds(model, source, rows, device) for rows in {*generate_rows, *search_rows}}
    batch_rows = max(generate_rows)
    return {
        "decoder_step_bound": round(sum(map(step.get, search_rows)) / sum(map(step.get, generate_rows)), 2),
        "decoder_rows_generate_vs_per_sentence": round(sum(generate_rows) / sum(search_rows), 2),
        f"row_cost_1_vs_{batch_rows}_rows": round(step[1] / (step[batch_rows] / batch_rows), 2),
    }
