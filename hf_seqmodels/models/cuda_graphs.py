"""A recurrent decoding step replayed as a CUDA graph.

On a GPU, one step of a small recurrent decoder is many tiny kernels whose launches cost more than their work. A CUDA
graph launches them all at once. A graph always reads and writes the same tensors, so it owns its inputs: the token
ids are copied in at every step, the per-input tensors (encoder outputs, their mask and projection) only when a
different tensor comes (once per ``generate()`` call), and a static ``RecurrentCache`` takes over the graph's state
tensors at its first step, after which beam search reorders them in place.

A model holds a ``StepGraphStore`` beside the module whose step it replays (the attention decoder, the recurrent
stack) and asks ``replays_step`` whether a call is such a step; the maths modules know nothing of it.
"""

import weakref
from collections.abc import Callable

import torch
from torch import nn

from .cache import RecurrentCache

Step = Callable[..., tuple[torch.Tensor, ...]]  # step(input_ids, cache=, **inputs) -> outputs; updates cache


def _on_gpu(tensor: torch.Tensor) -> bool:
    return tensor.is_cuda


def replays_step(
    module: nn.Module, cache: RecurrentCache | None, inputs: torch.Tensor, output_hidden_states: bool
) -> bool:
    """Whether ``module``'s call on ``inputs`` ``(batch, length, ...)`` is a decoding step to replay as a CUDA graph:
    one position continuing a static cache's state, on a GPU, in eval mode and without gradients."""
    return (cache is not None and cache.static and bool(cache.states) and inputs.shape[1] == 1 and _on_gpu(inputs)
            and not (module.training or output_hidden_states or torch.is_grad_enabled()))


def _shares_tensors(cache: RecurrentCache, other: RecurrentCache) -> bool:
    return any(mine is theirs for mine, theirs in zip(cache.tensors(), other.tensors()))


class StepGraphStore(nn.Module):
    """The CUDA graphs of one decoding step, one per shape of its inputs (captured on first sight).

    A module without parameters, held by the model beside the module whose step it replays, so that it is emptied
    whenever that model is moved or cast (``_apply``): a graph reads the parameters at the addresses they had when it
    was captured. A copy of the model starts empty and captures its own."""

    def __init__(self):
        super().__init__()
        self.graphs: dict[tuple, CapturedStep] = {}
        self.pool = None  # one memory pool for all of them: they are replayed one at a time

    def _apply(self, fn, *args, **kwargs):
        self.graphs, self.pool = {}, None  # the parameters get new addresses
        return super()._apply(fn, *args, **kwargs)

    def __deepcopy__(self, memo) -> "StepGraphStore":
        return StepGraphStore()

    def extra_repr(self) -> str:
        return f"graphs={len(self.graphs)}"

    def replay(
        self, step: Step, input_ids: torch.Tensor, cache: RecurrentCache, **inputs: torch.Tensor | int | None
    ) -> tuple[torch.Tensor, ...]:
        """``step(input_ids, cache=cache, **inputs)``'s outputs, through the graph for these shapes (and these
        values of the inputs that are not tensors). They are the graph's own tensors, which its next replay
        overwrites: clone what is kept."""
        inputs = {**inputs, **{f"cache.{name}": t for name, t in cache.per_input.items()}}
        key = (
            tuple(input_ids.shape),
            cache.rows_per_input,
            tuple(tuple(t.shape) for t in cache.tensors()),
            tuple(sorted(cache.extras)),
            tuple((name, (tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else t)
                  for name, t in inputs.items()),
        )
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.graphs[key] = CapturedStep(step, input_ids, cache, inputs, self.pool)
            self.pool = graph.graph.pool()
        return graph.replay(input_ids, cache, inputs)


class CapturedStep:
    """One captured step: the input and state tensors it reads, and the outputs it writes."""

    def __init__(self, step: Step, input_ids: torch.Tensor, cache: RecurrentCache,
                 inputs: dict[str, torch.Tensor | int | None], pool):
        self.input_ids = input_ids.clone()
        self.inputs = {name: t.clone() if isinstance(t, torch.Tensor) else t for name, t in inputs.items()}
        self.sources = dict.fromkeys(inputs)  # the tensors last copied in, compared by identity
        self.cache = RecurrentCache(static=True)  # the state the graph reads and overwrites: copies of cache's
        self.cache.store(cache.states, 0, **cache.extras)
        self.owner = lambda: None  # weak reference to the cache that uses self.cache's tensors
        step_inputs = {name: t for name, t in self.inputs.items() if not name.startswith("cache.")}
        self.cache.per_input = {name.removeprefix("cache."): t for name, t in self.inputs.items()
                                if name.startswith("cache.")}
        self.cache.rows_per_input = cache.rows_per_input

        def run():
            return step(self.input_ids, cache=self.cache, **step_inputs)

        # Warm up on a side stream (lazy initialisations must not happen during capture), then capture.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.outputs = run()

    def replay(self, input_ids: torch.Tensor, cache: RecurrentCache,
               inputs: dict[str, torch.Tensor | int | None]) -> tuple[torch.Tensor, ...]:
        if self.owner() is not cache:
            previous = self.owner()
            if previous is not None and _shares_tensors(previous, self.cache):  # let it keep its own state
                previous.own_copies()
            cache.adopt(self.cache.states, self.cache.extras)
            self.owner = weakref.ref(cache)
        for name, tensor in inputs.items():
            if isinstance(tensor, torch.Tensor) and self.sources[name] is not tensor:
                self.inputs[name].copy_(tensor)
                self.sources[name] = tensor
        self.input_ids.copy_(input_ids)
        self.graph.replay()
        cache.seen_tokens += input_ids.shape[1]
        return self.outputs
