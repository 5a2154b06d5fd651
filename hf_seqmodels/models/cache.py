"""The recurrent state as a transformers ``Cache``, so that ``generate()`` carries and reorders it."""

import torch
from transformers.cache_utils import Cache


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
    """

    def __init__(self):
        super().__init__(layers=[])
        self.states: list[tuple[torch.Tensor, ...]] = []
        self.extras: dict[str, torch.Tensor] = {}
        self.per_input: dict[str, torch.Tensor] = {}
        self.seen_tokens = 0

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
        return False

    @property
    def is_croppable(self) -> bool:
        return False
