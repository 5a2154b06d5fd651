"""The recurrent state as a transformers ``Cache``, so that ``generate()`` carries and reorders it. A static cache
holds its tensors at fixed addresses, so that a decoding step can be replayed as a CUDA graph (``cuda_graphs.py``).

As transformers holds recurrent state (``cache_utils.LinearAttentionLayer``: ``recurrent_states`` in one cache layer
per model layer), a ``RecurrentCache`` holds one ``RecurrentLayerCache`` per recurrent layer, so that ``len(cache)``
and ``cache.layers`` are what transformers' generation utilities expect. What belongs to no single layer (an
attention decoder's input-feeding vector, the per-input tensors) stays on the cache.
"""

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from .generation_utils import SeqModelsGenerationMixin
from .modeling_utils import CACHE_NAME
from .recurrent_layers import State


class RecurrentLayerCache(CacheLayerMixin):
    """One recurrent layer's state: ``recurrent_states`` is ``(h,)`` for rnn/gru or ``(h, c)`` for lstm, each of
    shape ``(num_directions, batch, hidden_size)`` — torch's own layout, so a decoding step hands it to the fused
    kernel without a copy, and the batch operations act on dimension 1. ``cumulative_length`` counts the positions
    read, padding included. ``static=True`` keeps the tensors at fixed addresses: ``write`` and ``reorder_cache`` then
    work in place (see ``RecurrentCache``)."""

    supports_early_init = False  # a state has no keys and values to allocate ahead
    is_compileable = False  # a static cache is for the model's own CUDA graphs: generate() must not compile forward
    is_croppable = False

    def __init__(self, static: bool = False):
        super().__init__()
        self.static = static
        self.recurrent_states: State = ()
        self.cumulative_length = 0

    def __repr__(self):
        shapes = [tuple(t.shape) for t in self.recurrent_states]
        return f"{type(self).__name__}(states={shapes}, length={self.cumulative_length})"

    def write(self, state: State) -> None:
        """Hold ``state``: in place when the layer is static and holds a state, else by taking the tensors."""
        if self.static and self.is_initialized:
            for old, new in zip(self.recurrent_states, state, strict=True):
                old.copy_(new)
        else:
            self.recurrent_states, self.is_initialized = tuple(state), True

    def _map(self, fn) -> None:
        if self.is_initialized:
            self.recurrent_states = tuple(fn(t) for t in self.recurrent_states)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Row ``i`` of the new state is row ``beam_idx[i]`` of the old one (in place when static)."""
        if self.static:
            for t in self.recurrent_states:
                t.copy_(t.index_select(1, _on_device_of(t, beam_idx)))
        else:
            self._map(lambda t: t.index_select(1, _on_device_of(t, beam_idx)))

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._map(lambda t: t.repeat_interleave(repeats, dim=1))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._map(lambda t: t[:, indices])

    def reset(self) -> None:
        """Forget the state: the next chunk starts afresh (from zeros, or an encoder's state)."""
        self.recurrent_states, self.is_initialized, self.cumulative_length = (), False, 0

    def crop(self, tokens_to_remove: int) -> None:
        """Nothing can be removed: a recurrent state cannot be rolled back. ``crop(0)`` (and the pre-5.24 call
        ``crop(length)`` with the current length) are no-ops."""
        if tokens_to_remove not in (0, self.cumulative_length):
            raise ValueError("A recurrent state cannot be rolled back to an earlier position.")

    def get_seq_length(self) -> int:
        """Number of positions read so far, padding included."""
        return self.cumulative_length

    def get_max_length(self) -> int:
        return -1  # a state reads sequences of any length

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.cumulative_length + query_length, 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        raise NotImplementedError("A recurrent layer holds a state, not keys and values: see `RecurrentCache.store`.")

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        raise NotImplementedError("A recurrent layer holds a state, not keys and values: see `RecurrentCache.store`.")


def _on_device_of(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``index`` on ``t``'s device, without a call where it is there already (beam search reorders at every step)."""
    return index if index.device == t.device else index.to(t.device)


def _flatten(states: list[State], extras) -> list[torch.Tensor]:
    return [t for state in states for t in state] + list(extras)


class RecurrentCache(Cache):
    """The final state of every recurrent layer, carried between decoding steps.

    ``layers[i]`` is a ``RecurrentLayerCache`` with layer ``i``'s state, ``states[i]``: a tuple ``(h,)`` for rnn/gru
    or ``(h, c)`` for lstm, each of shape ``(num_directions, batch, hidden_size)``. The layers exist from the first
    chunk on (``len(cache)`` is then the number of recurrent layers); ``states`` is empty before it and after
    ``reset``. ``extras`` holds other per-sequence tensors that must follow the beams (batch first), such as the
    input-feeding vector of an attention decoder. Beam search reorders both along the batch dimension.

    ``per_input`` holds batch-first tensors that depend only on the input: an attention decoder's source (its
    ``"memory"``, the encoder outputs, their ``"memory_mask"`` and the attention's ``"projected_keys"``). They are the
    same for every beam of an input, and beam search moves a beam only within its input, so ``reorder_cache`` leaves
    them alone (copying them at every step took a tenth of a batched beam-search step); ``batch_repeat_interleave``
    and ``batch_select_indices`` do apply to them. After ``share_per_input(k)`` they hold one row per ``k``
    consecutive rows of the states (``rows_per_input``): a sentence's beams in a decoding loop, which then copies a
    k-th of them when sentences leave the batch, and whose attention reads one row for all ``k``.

    ``static=True`` (what ``generate(cache_implementation="static")`` creates) keeps the states and extras at fixed
    addresses: a step writes them in place and beam search reorders them in place, so that a decoding step can be
    replayed as a CUDA graph (``cuda_graphs.StepGraphStore``). The default cache replaces the tensors instead, which
    lets a caller keep an earlier state (for instance a hand-written search that forks hypotheses).
    """

    def __init__(self, static: bool = False):
        super().__init__(layers=[])
        self.static = static
        self.extras: dict[str, torch.Tensor] = {}
        self.per_input: dict[str, torch.Tensor] = {}
        self.rows_per_input = 1

    @property
    def states(self) -> list[State]:
        """Every layer's state, first layer first; empty when there is none yet."""
        if not self.layers or not self.layers[0].is_initialized:
            return []
        return [layer.recurrent_states for layer in self.layers]

    @states.setter
    def states(self, states: list[State]) -> None:
        """Hold these tensors as the layers' states, one layer each (for code that copies a cache by hand)."""
        length = self.get_seq_length()
        self.layers = [RecurrentLayerCache(self.static) for _ in states]
        for layer, state in zip(self.layers, states):
            layer.write(state)
        self.seen_tokens = length

    @property
    def seen_tokens(self) -> int:
        """Number of positions read, padding included: ``get_seq_length()``, settable like ``states`` (a replayed
        CUDA graph counts its step here: it stores into its own cache)."""
        return self.get_seq_length()

    @seen_tokens.setter
    def seen_tokens(self, length: int) -> None:
        for layer in self.layers:
            layer.cumulative_length = length

    def store(self, states: list[State], length: int, **extras: torch.Tensor) -> None:
        """Keep the state (and ``extras``) after a chunk of ``length`` more positions."""
        if not self.layers:
            self.layers = [RecurrentLayerCache(self.static) for _ in states]
        in_place = self.static and bool(self.states)
        for layer, state in zip(self.layers, states, strict=True):
            layer.write(state)
        self.seen_tokens += length
        if in_place:
            for name, old in self.extras.items():
                old.copy_(extras[name])
            return
        self.extras = {**self.extras, **extras}
        if self.static:  # tensors of its own, which later steps overwrite
            self.own_copies()

    def own_copies(self) -> None:
        """Hold copies of the state and extras, so that writing them in place changes no one else's tensors."""
        for layer in self.layers:
            layer.recurrent_states = tuple(t.clone() for t in layer.recurrent_states)
        self.extras = {name: t.clone() for name, t in self.extras.items()}

    def adopt(self, states: list[State], extras: dict[str, torch.Tensor]) -> None:
        """Continue in the given tensors (a CUDA graph's), after copying the current state into them."""
        for mine, theirs in zip(self.tensors(), _flatten(states, extras.values()), strict=True):
            theirs.copy_(mine)
        for layer, state in zip(self.layers, states, strict=True):
            layer.recurrent_states = tuple(state)
        self.extras = extras

    def tensors(self) -> list[torch.Tensor]:
        """The state and extras tensors, in order."""
        return _flatten(self.states, self.extras.values())

    def check_shapes(self, cell_type: str, num_layers: int, batch_size: int, hidden_size: int, layers_field: str,
                     extras: dict[str, tuple[int, ...]]) -> None:
        """Raise unless the cache holds the state of ``num_layers`` unidirectional ``cell_type`` layers for
        ``batch_size`` sequences, and exactly ``extras`` (name -> shape): a cache from another model, or from the
        same model for other sequences, cannot be continued. ``layers_field`` names the config field of
        ``num_layers`` in the message. Shapes only, as this runs at every decoding step."""
        parts = ("h", "c") if cell_type == "lstm" else ("h",)
        found = [tuple(tuple(t.shape) for t in state) for state in self.states]
        found_extras = {name: tuple(t.shape) for name, t in self.extras.items()}
        if found != [((1, batch_size, hidden_size),) * len(parts)] * num_layers or found_extras != extras:
            held = f"states of shapes {found}" + (f" and extras {found_extras}" if found_extras else "")
            expected = (f"({', '.join(parts)}) per layer, each of shape (1, batch={batch_size}, hidden_size="
                        f"{hidden_size}), for its cell_type={cell_type!r} and {layers_field}={num_layers}"
                        + (f", and extras {extras}" if extras else ""))
            raise ValueError(
                f"`past_key_values` holds {held}, but this model continues from {expected}: pass the cache this "
                "model returned for the same sequences, or none to start afresh."
            )

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Follow beam search: row ``i`` of the new state is row ``beam_idx[i]`` of the old one, where ``beam_idx``
        maps every beam to a beam of the same input (``per_input`` therefore stays as it is)."""
        super().reorder_cache(beam_idx)
        if self.static:  # in place, at the same addresses
            for t in self.extras.values():
                t.copy_(t.index_select(0, _on_device_of(t, beam_idx)))
        else:
            self.extras = {name: t.index_select(0, _on_device_of(t, beam_idx)) for name, t in self.extras.items()}

    def share_per_input(self, rows: int) -> None:
        """From now on hold ``per_input`` once per ``rows`` consecutive rows, which share an input and stay
        together (a sentence's beams: beam search moves a beam only within its sentence, and a sentence leaves the
        batch with all of its beams)."""
        if self.rows_per_input != 1:
            raise ValueError(f"`per_input` is already shared by {self.rows_per_input} rows.")
        self.per_input = {name: t[::rows].contiguous() for name, t in self.per_input.items()}
        self.rows_per_input = rows

    def batch_repeat_interleave(self, repeats: int) -> None:
        super().batch_repeat_interleave(repeats)
        self.extras = {name: t.repeat_interleave(repeats, dim=0) for name, t in self.extras.items()}
        if self.rows_per_input > 1:  # the repeats of a row share its input
            self.rows_per_input *= repeats
        else:
            self.per_input = {name: t.repeat_interleave(repeats, dim=0) for name, t in self.per_input.items()}

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows ``indices``; with ``rows_per_input`` > 1 they must keep whole runs of rows that share an
        input."""
        super().batch_select_indices(indices)
        self.extras = {name: t[indices] for name, t in self.extras.items()}
        inputs = indices[::self.rows_per_input] // self.rows_per_input if self.rows_per_input > 1 else indices
        self.per_input = {name: t[inputs] for name, t in self.per_input.items()}

    def detach_(self) -> None:
        """Cut the state (and extras) off the graph that computed them, keeping their values: truncated
        backpropagation through time carries the state from one window of a stream to the next, and the next
        window's backward pass then stops at its start instead of running back through every earlier window."""
        for layer in self.layers:
            layer._map(torch.Tensor.detach)
        self.extras = {name: t.detach() for name, t in self.extras.items()}

    def reset(self) -> None:
        """Forget every state and extra; the layers stay, empty."""
        super().reset()
        self.extras, self.per_input, self.rows_per_input = {}, {}, 1


def recurrent_cache(cache: Cache | None) -> RecurrentCache | None:
    """The cache a recurrent forward continues from: ours, or None for no cache or an empty cache of another kind
    (which generate() may create), to be replaced by ours."""
    if cache is None or isinstance(cache, RecurrentCache):
        return cache
    if isinstance(cache, Cache) and cache.get_seq_length() == 0:
        return None
    raise ValueError(f"`past_key_values` must be a RecurrentCache returned by this model, got {type(cache).__name__}.")


class RecurrentGenerationMixin(SeqModelsGenerationMixin):
    """GenerationMixin (with our decoding loop, `SeqModelsGenerationMixin`) for a model whose decoding state is a
    ``RecurrentCache``: put it where ``GenerationMixin`` goes in the bases."""

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state lives in a RecurrentCache, created by forward

    def _prepare_cache_for_generation(self, generation_config, model_kwargs: dict, *args, **kwargs) -> None:
        """``cache_implementation="static"`` starts generation with a static ``RecurrentCache``: on a GPU the
        model then replays its decoding steps as CUDA graphs (``cuda_graphs.py``). Unset or ``"dynamic"``: forward
        creates the default cache."""
        implementation = generation_config.cache_implementation
        if implementation in (None, "dynamic") or generation_config.use_cache is False:
            return
        if implementation != "static":
            raise ValueError(
                f"`cache_implementation={implementation!r}` does not apply to a recurrent state: use 'static' (state "
                "at fixed addresses, decoding steps replayed as CUDA graphs on a GPU) or leave it unset."
            )
        if model_kwargs.get(CACHE_NAME) is not None:
            raise ValueError(f"Pass either `{CACHE_NAME}` or `cache_implementation`, not both.")
        model_kwargs[CACHE_NAME] = RecurrentCache(static=True)
