"""The recurrent family's fast path through hf_seqmodels' decoding loop (`decoding.py`): one new token per row on
the cache, without forward's checks and output objects, replayed as a CUDA graph where `cuda_graphs.replays_step` says so."""

import torch

from .adaptive_softmax import AdaptiveSoftmaxHead
from .cache import RecurrentCache, recurrent_cache
from .cuda_graphs import GraphedSteps, replays_step
from .modeling_utils import CACHE_NAME, output_layer_into


class RecurrentModelSteps(GraphedSteps):
    """The decoding steps of `RecurrentModel` (its ``embed_tokens``, ``embedding_dropout`` and ``rnn``)."""

    def decoding_step(self, input_ids: torch.LongTensor, cache: RecurrentCache) -> torch.Tensor:
        """The top layer's outputs after ``input_ids`` ``(rows, 1)``, the newest tokens of a decoding loop,
        continuing its non-empty ``cache``, which keeps the new state: forward without its checks and output
        object (the captured step replayed where one applies)."""
        inputs = self.embedding_dropout(self._embed(input_ids))
        if replays_step(self, cache, inputs, False):
            return self._replay_step(inputs, cache, None)
        return self._step(inputs, cache, None)[0]

    def _replay_step(self, inputs: torch.Tensor, cache: RecurrentCache, mask: torch.Tensor | None) -> torch.Tensor:
        """The top layer's outputs of ``_step`` through its captured CUDA graph (where ``replays_step`` says so),
        copied out of the graph's own tensors."""
        (outputs,) = self.step_graphs.replay(self._step, inputs, cache, mask=mask)
        return outputs.clone()

    def _step(self, inputs: torch.Tensor, cache: RecurrentCache, mask: torch.Tensor | None) -> tuple[torch.Tensor]:
        """A decoding step as ``step_graphs`` replays it: the layers continue from ``cache``, which keeps the state."""
        outputs, states, _ = self.rnn(inputs, mask, cache.states)
        cache.store(states, inputs.shape[1])
        return (outputs,)


class RecurrentLMSteps:
    """The decoding steps of `RecurrentForCausalLM` (its ``model``, ``dropout``, ``_output_vectors`` and
    ``lm_head``)."""

    def decoding_step_inputs(self, model_kwargs: dict, rows_per_source: int = 1) -> dict | None:
        """What [`decoding_step`] reads, from generate()'s `model_kwargs` after its first step (a call of `forward`,
        which checked them): the cache. None without one: the decoding loop then calls `forward` at every step.
        The attention mask is not needed: it marks the prompts' padding, which the cache has read, and every token
        after them is real. Rows that share a prompt (`rows_per_source`, a sentence's beams) share nothing else
        here: the argument is accepted for the loop's sake and unused."""
        cache = recurrent_cache(model_kwargs.get(CACHE_NAME))
        return {"cache": cache} if model_kwargs.get("use_cache") and cache is not None else None

    def decoding_step(self, input_ids: torch.LongTensor, cache: RecurrentCache, out: torch.Tensor | None = None
                      ) -> torch.Tensor:
        """One step of hf_seqmodels' decoding loop (`decoding.py`): the float32 logits `(rows, vocab_size)` (with an
        adaptive softmax, the log-probabilities) of the token after `input_ids` `(rows, 1)`, the cache updated in
        place; written into `out` where given (see `output_layer_into`). The same computation as `forward`, without
        its checks of every argument (the loop's inputs were checked at its first step and are its own since) and
        its output objects."""
        hidden = self._output_vectors(self.dropout(self.model.decoding_step(input_ids, cache)[:, -1]))
        if isinstance(self.lm_head, AdaptiveSoftmaxHead):
            return self.lm_head.log_probs(hidden).float()
        return output_layer_into(self.lm_head, hidden, out).float()
