"""The recurrent state as a transformers ``Cache``, so that ``generate()`` carries and reorders it."""

import torch
from transformers.cache_utils import Cache


class RecurrentCache(Cache):
    """The final state of every recurrent layer, carried between decoding steps.

    ``states[i]`` is layer ``i``'s state: a tuple ``(h,)`` for rnn/gru or ``(h, c)`` for lstm, each of shape
    ``(num_directions, batch, hidden_size)`` — torch's own layout, so a decoding step hands it to the fused kernel
    without a copy. ``extras`` holds other per-sequence tensors that must follow the beams (batch first), such as
    the input-feeding vector of an attention decoder. Beam search reorders both along the batch dimension.
    """

    def __init__(self):
        super().__init__(layers=[])
        self.states: list[tuple[torch.Tensor, ...]] = []
        self.extras: dict[str, torch.Tensor] = {}
        self.seen_tokens = 0

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Number of positions consumed so far, padding included."""
        return self.seen_tokens

    def _map(self, fn_states, fn_extras) -> None:
        self.states = [tuple(fn_states(t) for t in state) for state in self.states]
        self.extras = {name: fn_extras(t) for name, t in self.extras.items()}

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Follow beam search: row ``i`` of the new state is row ``beam_idx[i]`` of the old one."""
        self._map(
            lambda t: t.index_select(1, beam_idx.to(t.device)), lambda t: t.index_select(0, beam_idx.to(t.device))
        )

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._map(lambda t: t.repeat_interleave(repeats, dim=1), lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._map(lambda t: t[:, indices], lambda t: t[indices])

    def reset(self) -> None:
        self.states, self.extras, self.seen_tokens = [], {}, 0

    def crop(self, max_length: int) -> None:
        if max_length != self.seen_tokens:
            raise ValueError("A recurrent state cannot be rolled back to an earlier position.")

    @property
    def is_compileable(self) -> bool:
        return False

    @property
    def is_croppable(self) -> bool:
        return False
