"""The recurrent state as a transformers ``Cache``, so that ``generate()`` carries and reorders it."""

from collections.abc import Callable

import torch
from torch import nn
from transformers.cache_utils import Cache

from .recurrent_layers import State


class RecurrentCache(Cache):
    """The final state of every recurrent layer, carried between decoding steps.

    ``states[i]`` is layer ``i``'s state: a tuple ``(h,)`` for rnn/gru or ``(h, c)`` for lstm, each of shape
    ``(num_directions, batch, hidden_size)`` — torch's own layout, so a decoding step hands it to the fused kernel
    without a copy. ``extras`` holds other per-sequence tensors that must follow the beams (batch first), such as
    the input-feeding vector of an attention decoder. Beam search reorders both along the batch dimension.

    ``per_input`` holds batch-first tensors that depend only on the input, such as an attention's projection of the
    encoder outputs. They are the same for every beam of an input, and beam search moves a beam only within its
    input, so ``reorder_cache`` leaves them alone (copying them at every step took a tenth of a batched beam-search
    step); ``batch_repeat_interleave`` and ``batch_select_indices`` do apply to them.

    ``static=True`` (what ``generate(cache_implementation="static")`` creates) keeps the states, the extras and the
    position count in tensors at fixed addresses, written in place after the first chunk, like transformers'
    ``StaticCache``: a compiled decoding step then replays as one CUDA graph, and ``generate()`` compiles its
    decoding step on its own when the model is on a GPU. The default cache replaces the tensors instead, which lets
    a caller keep an earlier state (for instance a hand-written search that forks hypotheses).
    """

    def __init__(self, static: bool = False):
        super().__init__(layers=[])
        self.static = static
        self.states: list[State] = []
        self.extras: dict[str, torch.Tensor] = {}
        self.per_input: dict[str, torch.Tensor] = {}
        self.seen_tokens = 0  # a tensor once a static cache holds a state: a changing int would recompile the step

    def store(self, states: list[State], length: int, **extras: torch.Tensor) -> None:
        """Keep the state (and ``extras``) after a chunk of ``length`` more positions."""
        if self.static and self.states:
            new = [t for state in states for t in state] + [extras[name] for name in self.extras]
            for old, value in zip(self._tensors(), new, strict=True):
                old.copy_(value)
            self.seen_tokens.add_(length)
            return
        self.states, self.extras = list(states), {**self.extras, **extras}
        if not self.static:
            self.seen_tokens += length
            return
        device = states[0][0].device
        self.states = [tuple(t.clone() for t in state) for state in states]
        self.extras = {name: t.clone() for name, t in self.extras.items()}
        self.seen_tokens = torch.tensor(self.seen_tokens + length, device=device)
        if not torch.compiler.is_compiling():
            for tensor in (*self._tensors(), self.seen_tokens):
                torch._dynamo.mark_static_address(tensor)

    def _tensors(self) -> list[torch.Tensor]:
        return [t for state in self.states for t in state] + list(self.extras.values())

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of positions consumed so far, padding included."""
        return int(self.seen_tokens)

    def _map(self, fn_states, fn_extras, per_input: bool = True) -> None:
        self.states = [tuple(fn_states(t) for t in state) for state in self.states]
        self.extras = {name: fn_extras(t) for name, t in self.extras.items()}
        if per_input:
            self.per_input = {name: fn_extras(t) for name, t in self.per_input.items()}

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Follow beam search: row ``i`` of the new state is row ``beam_idx[i]`` of the old one, where ``beam_idx``
        maps every beam to a beam of the same input (``per_input`` therefore stays as it is)."""
        if self.static:  # in place, at the same addresses
            for state in self.states:
                for t in state:
                    t.copy_(t.index_select(1, beam_idx.to(t.device)))
            for t in self.extras.values():
                t.copy_(t.index_select(0, beam_idx.to(t.device)))
            return
        self._map(
            lambda t: t.index_select(1, beam_idx.to(t.device)),
            lambda t: t.index_select(0, beam_idx.to(t.device)),
            per_input=False,
        )

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._map(lambda t: t.repeat_interleave(repeats, dim=1), lambda t: t.repeat_interleave(repeats, dim=0))
        self._mark_static()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._map(lambda t: t[:, indices], lambda t: t[indices])
        self._mark_static()

    def _mark_static(self) -> None:
        """New tensors of a static cache (after a change of batch size) get fixed addresses too."""
        if self.static and self.states:
            for tensor in self._tensors():
                torch._dynamo.mark_static_address(tensor)

    def reset(self) -> None:
        self.states, self.extras, self.per_input, self.seen_tokens = [], {}, {}, 0

    def crop(self, max_length: int) -> None:
        if max_length != self.get_seq_length():
            raise ValueError("A recurrent state cannot be rolled back to an earlier position.")

    @property
    def is_compileable(self) -> bool:
        return self.static

    @property
    def is_croppable(self) -> bool:
        return False


class RecurrentGenerationMixin:
    """What ``generate()`` needs from a model whose decoding state is a ``RecurrentCache`` (put it before
    ``GenerationMixin`` in the bases)."""

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state lives in a RecurrentCache, created by forward

    def _prepare_cache_for_generation(self, generation_config, model_kwargs: dict, *args, **kwargs) -> None:
        """``cache_implementation="static"`` starts generation with a static ``RecurrentCache``, so that
        ``generate()`` compiles the decoding step on a GPU (``compile_config`` tunes it, ``disable_compile`` turns it
        off). Unset or ``"dynamic"``: forward creates the default cache."""
        implementation = generation_config.cache_implementation
        if implementation in (None, "dynamic") or generation_config.use_cache is False:
            return
        if implementation != "static":
            raise ValueError(
                f"`cache_implementation={implementation!r}` does not apply to a recurrent state: use 'static' (state "
                "at fixed addresses, decoding step compiled on a GPU) or leave it unset."
            )
        if model_kwargs.get("past_key_values") is not None:
            raise ValueError("Pass either `past_key_values` or `cache_implementation`, not both.")
        model_kwargs["past_key_values"] = RecurrentCache(static=True)

    def get_compiled_call(self, compile_config):
        """The forward itself: with a static cache on a GPU, the model compiles its own decoding step
        (``decoding_step``), greedy and beam search alike; compiling the whole forward as well would reach the
        ``nn.GRU``/``nn.LSTM`` modules, which torch.compile does not trace."""
        return self.__call__


def decoding_step(module: nn.Module, cache: RecurrentCache | None, length: int, device: torch.device) -> Callable:
    """``module`` (called with ``step_weights``, see ``recurrent_layers``), compiled with CUDA graphs for a decoding
    step: one position continuing a static cache's state, in eval mode, on a GPU. Otherwise ``module`` itself.

    The compiled function is kept on the module and reused; new shapes (batch, source length) are compiled or
    recorded on first sight."""
    if (cache is None or not cache.static or not cache.states or length != 1 or module.training
            or device.type != "cuda" or torch.compiler.is_compiling()):
        return module
    if getattr(module, "_compiled_step", None) is None:
        # The bound forward, not the module: an nn.Module attribute would become a submodule of the model.
        module._compiled_step = torch.compile(module.forward, mode="reduce-overhead")
    return module._compiled_step
