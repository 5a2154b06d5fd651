"""The recurrent state as a transformers ``Cache``, so that ``generate()`` carries and reorders it."""

import torch
from transformers.cache_utils import Cache

from .cache_names import CACHE_NAME
from .recurrent_layers import State


def _flatten(states: list[State], extras) -> list[torch.Tensor]:
    return [t for state in states for t in state] + list(extras)


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

    ``static=True`` (what ``generate(cache_implementation="static")`` creates) keeps the states and extras at fixed
    addresses: a step writes them in place and beam search reorders them in place, so that a decoding step can be
    replayed as a CUDA graph (``step_graphs``). The default cache replaces the tensors instead, which lets a caller
    keep an earlier state (for instance a hand-written search that forks hypotheses).
    """

    def __init__(self, static: bool = False):
        super().__init__(layers=[])
        self.static = static
        self.states: list[State] = []
        self.extras: dict[str, torch.Tensor] = {}
        self.per_input: dict[str, torch.Tensor] = {}
        self.seen_tokens = 0

    def store(self, states: list[State], length: int, **extras: torch.Tensor) -> None:
        """Keep the state (and ``extras``) after a chunk of ``length`` more positions."""
        self.seen_tokens += length
        if self.static and self.states:
            for old, value in zip(self.tensors(), _flatten(states, [extras[name] for name in self.extras]),
                                  strict=True):
                old.copy_(value)
            return
        self.states, self.extras = list(states), {**self.extras, **extras}
        if self.static:  # tensors of its own, which later steps overwrite
            self.own_copies()

    def own_copies(self) -> None:
        """Hold copies of the state and extras, so that writing them in place changes no one else's tensors."""
        self.states = [tuple(t.clone() for t in state) for state in self.states]
        self.extras = {name: t.clone() for name, t in self.extras.items()}

    def adopt(self, states: list[State], extras: dict[str, torch.Tensor]) -> None:
        """Continue in the given tensors (a CUDA graph's), after copying the current state into them."""
        for mine, theirs in zip(self.tensors(), _flatten(states, extras.values()), strict=True):
            theirs.copy_(mine)
        self.states, self.extras = states, extras

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

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of positions consumed so far, padding included."""
        return self.seen_tokens

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

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._map(lambda t: t[:, indices], lambda t: t[indices])

    def reset(self) -> None:
        self.states, self.extras, self.per_input, self.seen_tokens = [], {}, {}, 0

    def crop(self, max_length: int) -> None:
        if max_length != self.seen_tokens:
            raise ValueError("A recurrent state cannot be rolled back to an earlier position.")

    @property
    def is_compileable(self) -> bool:
        return False  # a static cache is for the model's own CUDA graphs: generate() must not compile forward

    @property
    def is_croppable(self) -> bool:
        return False


def recurrent_cache(cache: Cache | None) -> RecurrentCache | None:
    """The cache a recurrent forward continues from: ours, or None for no cache or an empty cache of another kind
    (which generate() may create), to be replaced by ours."""
    if cache is None or isinstance(cache, RecurrentCache):
        return cache
    if isinstance(cache, Cache) and cache.get_seq_length() == 0:
        return None
    raise ValueError(f"`past_key_values` must be a RecurrentCache returned by this model, got {type(cache).__name__}.")


class RecurrentGenerationMixin:
    """What ``generate()`` needs from a model whose decoding state is a ``RecurrentCache`` (put it before
    ``GenerationMixin`` in the bases)."""

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state lives in a RecurrentCache, created by forward

    def _prepare_cache_for_generation(self, generation_config, model_kwargs: dict, *args, **kwargs) -> None:
        """``cache_implementation="static"`` starts generation with a static ``RecurrentCache``: on a GPU the
        model then replays its decoding steps as CUDA graphs (``step_graphs``). Unset or ``"dynamic"``: forward
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
