"""The recurrent family's runs of its layers beside the maths (`modeling_recurrent.py`): the layers on a chunk of
inputs continuing a cache, or that step replayed as a CUDA graph (`cuda_graphs.py`) where `replays_step` says so; and
the fast path through hf_seqmodels' decoding loop (`decoding.py`): one new token per row on the cache, without
forward's checks and output objects. The language model binds `decoding_step_inputs` and `decoding_step` as its
methods of these names."""

import functools

import torch

from .adaptive_softmax import AdaptiveSoftmaxHead
from .cache import RecurrentCache, recurrent_cache
from .cuda_graphs import replays_step
from .modeling_utils import CACHE_NAME, as_float32, output_layer_into
from .recurrent_layers import State


def run_layers(model, inputs: torch.Tensor, mask: torch.Tensor | None, cache: RecurrentCache | None, use_cache: bool,
               output_hidden_states: bool, need_states: bool
               ) -> tuple[torch.Tensor, list[State], tuple[torch.Tensor, ...] | None, RecurrentCache | None]:
    """``model.rnn`` (of a `RecurrentModel`) on its checked ``inputs`` ``(batch, length, input_size)``, continuing
    ``cache`` where it holds a state: the top layer's outputs, every layer's final state, the hidden states if asked,
    and the cache (created where ``use_cache`` asks for one) holding the new state. A step that ``replays_step``
    runs through ``model.step_graphs``."""
    if use_cache and replays_step(model, cache, inputs, output_hidden_states):
        return replay_step(model, inputs, cache, mask), cache.states, None, cache
    states = cache.states if cache is not None and cache.states else None
    outputs, final_state, hidden_states = model.rnn(inputs, mask, states, output_hidden_states, need_states=need_states)
    if use_cache:
        cache = cache if cache is not None else RecurrentCache()
        cache.store(final_state, inputs.shape[1])
    return outputs, final_state, hidden_states, cache


def replay_step(model, inputs: torch.Tensor, cache: RecurrentCache, mask: torch.Tensor | None) -> torch.Tensor:
    """The top layer's outputs of ``layers_step`` through its captured CUDA graph (where ``replays_step`` says so),
    copied out of the graph's own tensors."""
    (outputs,) = model.step_graphs.replay(functools.partial(layers_step, model.rnn), inputs, cache, mask=mask)
    return outputs.clone()


def layers_step(rnn, inputs: torch.Tensor, cache: RecurrentCache, mask: torch.Tensor | None) -> tuple[torch.Tensor]:
    """A decoding step as ``step_graphs`` replays it: the layers continue from ``cache``, which keeps the state."""
    outputs, states, _ = rnn(inputs, mask, cache.states)
    cache.store(states, inputs.shape[1])
    return (outputs,)


def model_decoding_step(model, input_ids: torch.LongTensor, cache: RecurrentCache) -> torch.Tensor:
    """The top layer's outputs of a `RecurrentModel` after ``input_ids`` ``(rows, 1)``, the newest tokens of a
    decoding loop, continuing its non-empty ``cache``, which keeps the new state: forward without its checks and
    output object (the captured step replayed where one applies)."""
    inputs = model.embedding_dropout(model._embed(input_ids))
    if replays_step(model, cache, inputs, False):
        return replay_step(model, inputs, cache, None)
    return layers_step(model.rnn, inputs, cache, None)[0]


def decoding_step_inputs(model, model_kwargs: dict, rows_per_source: int = 1) -> dict | None:
    """What [`decoding_step`] reads, from generate()'s `model_kwargs` after its first step (a call of `forward`,
    which checked them): the cache. None without one: the decoding loop then calls `forward` at every step.
    The attention mask is not needed: it marks the prompts' padding, which the cache has read, and every token
    after them is real. Rows that share a prompt (`rows_per_source`, a sentence's beams) share nothing else
    here: the argument is accepted for the loop's sake and unused."""
    cache = recurrent_cache(model_kwargs.get(CACHE_NAME))
    return {"cache": cache} if model_kwargs.get("use_cache") and cache is not None else None


def decoding_step(model, input_ids: torch.LongTensor, cache: RecurrentCache, out: torch.Tensor | None = None
                  ) -> torch.Tensor:
    """One step of hf_seqmodels' decoding loop (`decoding.py`) for `RecurrentForCausalLM`: the float32 logits
    `(rows, vocab_size)` (with an adaptive softmax, the log-probabilities) of the token after `input_ids` `(rows, 1)`,
    the cache updated in place; written into `out` where given (see `output_layer_into`). The same computation as
    `forward`, without its checks of every argument (the loop's inputs were checked at its first step and are its
    own since) and its output objects."""
    hidden = model._output_vectors(model.dropout(model_decoding_step(model.model, input_ids, cache)[:, -1]))
    if isinstance(model.lm_head, AdaptiveSoftmaxHead):
        return as_float32(model.lm_head.log_probs(hidden))
    return as_float32(output_layer_into(model.lm_head, hidden, out))
