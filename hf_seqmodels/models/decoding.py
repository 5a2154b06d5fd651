"""Our decoding loop behind ``generate()``: greedy search, sampling and beam search in which the sentences that have
finished leave the batch, so that their rows stop costing (GenerationMixin keeps computing them to the end of the
batch: issue 7 counted 2.3-2.5x the rows needed).

``decode`` has the signature of GenerationMixin's decoding methods, so ``generate()`` runs it after all of its own
preparation (encoder run, beam expansion, logits processors, stopping criteria)::

    model.generate(**inputs, num_beams=5, custom_generate=hf_seqmodels.models.decoding.decode)

A saved model folder carries it in ``custom_generate/`` (``generate`` below), so that
``from_pretrained(folder, trust_remote_code=True).generate(...)`` runs it without the package installed.

After the first step (GenerationMixin's ``_prefill``, through ``forward``), a model that has a ``decoding_step``
(the attention encoder-decoder, the recurrent language model) takes the other steps through it: ``forward``
without its checks of every argument (the loop's inputs were checked at the first step, and are its own since) and
without its output objects. Other models take every step through ``prepare_inputs_for_generation`` and
``forward``, as GenerationMixin does. The steps write their logits, and beam search its log-probabilities, into the
first rows of buffers made at the first step (the live rows only shrink): no rows x vocabulary tensor is allocated
per step, whose fresh pages cost, on a CPU, a sixth of a 320-row step.

Outputs are those of GenerationMixin: the same tokens, the same pad/eos conventions in the returned tensors, the same
``sequences_scores`` and ``beam_indices``. Differences, by design:
- ``output_scores`` / ``output_logits``: the rows of a sentence that has left the batch hold ``-inf`` from that step
  on (GenerationMixin's values there score continuations of a finished sentence).
- ``return_dict_in_generate``: the returned ``cache`` is None (it holds only the rows still decoding at the end).
- Float results of a batch of other rows may differ in the last bits: near-ties can then choose other tokens.

Cases the loop leaves to GenerationMixin's own decoding method (same results, rows kept): beam sampling,
``output_attentions`` / ``output_hidden_states``, and, for a batch of several sentences, a static cache (its tensors
keep fixed addresses for CUDA graphs), a cache that cannot select rows, and logits processors not in
``ROW_WISE_PROCESSORS`` (a processor that keeps per-row state, such as ``prefix_allowed_tokens_fn``'s, would be
misled by a shrinking batch). A single sentence has no rows to drop (it ends when it is done), so the loop takes it
with any cache and processors: with a static cache on a GPU, its steps are the model's CUDA graphs. Assisted
generation and the decoding methods transformers moved to the Hub are refused. generate() hands a decoding method no
streamer and no ``synced_gpus``: ``generate`` (the folder's entry point) runs GenerationMixin's ``generate`` when
they are given.

Imports only its ``decoding_*`` siblings, torch and transformers: the files travel in ``custom_generate/``.
"""

import shutil
from pathlib import Path

import torch
from torch.nn import functional as F
from transformers import GenerationMixin
from transformers.generation import logits_process
from transformers.generation.configuration_utils import GenerationMode
from transformers.generation.utils import GenerateDecoderOnlyOutput, GenerateEncoderDecoderOutput

from .decoding_batch import DefaultStops, StepRecord, cache_of, prefill, rows_can_leave, select_rows
from .decoding_beam import beam_search

# Processors that read each row alone and keep no state: applying them to the live rows is applying them to all.
ROW_WISE_PROCESSORS = tuple(getattr(logits_process, name) for name in (
    "MinLengthLogitsProcessor", "MinNewTokensLengthLogitsProcessor", "TemperatureLogitsWarper",
    "RepetitionPenaltyLogitsProcessor", "TopPLogitsWarper", "TopKLogitsWarper", "TopHLogitsWarper",
    "MinPLogitsWarper", "TypicalLogitsWarper", "EpsilonLogitsWarper", "EtaLogitsWarper",
    "NoRepeatNGramLogitsProcessor", "SequenceBiasLogitsProcessor", "NoBadWordsLogitsProcessor",
    "ForcedBOSTokenLogitsProcessor", "ForcedEOSTokenLogitsProcessor", "InfNanRemoveLogitsProcessor",
    "ExponentialDecayLengthPenalty", "LogitNormalization", "SuppressTokensAtBeginLogitsProcessor",
    "SuppressTokensLogitsProcessor",
) if hasattr(logits_process, name))

# The files of ``custom_generate/`` in a saved folder, beside the entry point that transformers loads.
DECODING_FILES = ("decoding.py", "decoding_batch.py", "decoding_beam.py")
ENTRY_POINT = '''"""generate() of this model: hf_seqmodels' decoding loop, in which finished sentences leave the
batch (see decoding.py). transformers loads it with `from_pretrained(folder, trust_remote_code=True)`."""

from .decoding import generate  # noqa: F401 (transformers reads `generate` from this module)
'''

_OURS = (GenerationMode.GREEDY_SEARCH, GenerationMode.SAMPLE, GenerationMode.BEAM_SEARCH)


def decode(model, input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs):
    """A decoding method for ``generate(custom_generate=decode)``: greedy search, sampling or beam search as
    ``generation_config`` says, with the arguments generate() hands GenerationMixin's ``_sample`` /
    ``_beam_search`` (``input_ids`` already expanded for beams). Returns what they return."""
    mode = generation_config.get_generation_mode()
    if mode not in _OURS + (GenerationMode.BEAM_SAMPLE,):
        raise ValueError(f"{mode.name.replace('_', ' ').lower()} is not a decoding mode of hf_seqmodels' loop: use "
                         "greedy search, sampling or beam search, or generate() without `custom_generate`.")
    if mode not in _OURS or not _loop_applies(input_ids, logits_processor, generation_config, model_kwargs):
        method = getattr(GenerationMixin, "_beam_search" if generation_config.num_beams > 1 else "_sample")
        return method(model, input_ids, logits_processor=logits_processor, stopping_criteria=stopping_criteria,
                      generation_config=generation_config, **model_kwargs)
    search = beam_search if mode is GenerationMode.BEAM_SEARCH else greedy_or_sample
    return search(model, input_ids, logits_processor, stopping_criteria, generation_config, model_kwargs)


def _loop_applies(input_ids, logits_processor, generation_config, model_kwargs: dict) -> bool:
    """Whether our loop gives GenerationMixin's results (else GenerationMixin decodes). It returns no attentions or
    hidden states. A batch of one sentence (its beams, or one row) drops no rows, so any cache and processors do;
    in a larger batch, finished rows must be able to leave without changing the results."""
    if generation_config.output_attentions or generation_config.output_hidden_states:
        return False
    if input_ids.shape[0] == generation_config.num_beams:
        return True
    return (all(type(processor) in ROW_WISE_PROCESSORS for processor in logits_processor)
            and rows_can_leave(generation_config, cache_of(model_kwargs)))


def greedy_or_sample(model, input_ids, logits_processor, stopping_criteria, generation_config, model_kwargs):
    """Greedy search or sampling (``generation_config.do_sample``) for ``input_ids`` ``(batch, prompt_length)``.

    A row that meets a stopping criterion with an ``eos_token_id`` is padded with ``pad_token_id`` from then on and
    leaves the batch (without such a criterion, as in GenerationMixin, rows run on until all have stopped).
    Sampling draws from a ``(batch, vocab_size)`` distribution at every step, in which the rows that left hold a
    one-hot distribution: the same random numbers as GenerationMixin, so the same seed gives the same tokens."""
    batch_size, length = input_ids.shape
    pad = generation_config._pad_token_tensor
    pads_finished = any(hasattr(criteria, "eos_token_id") for criteria in stopping_criteria)
    default_stops = DefaultStops.of(stopping_criteria)
    sequences = input_ids.new_full((batch_size, generation_config.max_length), 0 if pad is None else int(pad))
    sequences[:, :length] = input_ids
    live = torch.arange(batch_size, device=input_ids.device)  # the original row of each live row
    live_sequences = input_ids
    scores = StepRecord(generation_config.return_dict_in_generate and generation_config.output_scores, batch_size)
    raw_logits = StepRecord(generation_config.return_dict_in_generate and generation_config.output_logits,
                            batch_size)
    probabilities = None
    stopped = torch.zeros(batch_size, dtype=torch.bool, device=input_ids.device)  # rows stay when not padded
    logits, model_kwargs, step = prefill(model, input_ids, generation_config, model_kwargs)
    logits_buffer = torch.empty_like(logits)
    while True:
        next_scores = logits_processor(live_sequences, logits) if logits_processor else logits
        scores.add(next_scores, live)
        raw_logits.add(logits, live)
        if generation_config.do_sample:
            probabilities = _all_rows(F.softmax(next_scores, dim=-1), live, batch_size, probabilities)
            tokens = torch.multinomial(probabilities, num_samples=1).squeeze(1)[live]
        else:
            tokens = next_scores.argmax(dim=-1)
        if len(live) == batch_size:
            sequences[:, length] = tokens
            live_sequences = sequences[:, :length + 1]
        else:
            sequences[live, length] = tokens
            live_sequences = sequences[live, :length + 1]
        length += 1
        finished = (default_stops(tokens, length) if default_stops is not None
                    else stopping_criteria(live_sequences, scores.result()))
        if not pads_finished:
            finished = stopped = finished | stopped
        count = int(finished.sum())  # the step's one synchronisation
        if count == len(live):
            break
        if count and pads_finished:
            keep = (~finished).nonzero().squeeze(1)
            model_kwargs = select_rows(model_kwargs, len(live), keep)
            live, live_sequences = live[keep], live_sequences[keep]
        logits, model_kwargs = step(model, live_sequences, model_kwargs, logits_buffer[:len(live)])
    sequences = sequences[:, :length]
    if not generation_config.return_dict_in_generate:
        return sequences
    if model.config.is_encoder_decoder:
        return GenerateEncoderDecoderOutput(sequences=sequences, scores=scores.result(), logits=raw_logits.result())
    return GenerateDecoderOnlyOutput(sequences=sequences, scores=scores.result(), logits=raw_logits.result())


def _all_rows(live_probabilities, live, batch_size: int, buffer):
    """The ``(batch_size, vocab_size)`` distribution to draw from: the live rows' ``live_probabilities``, and
    certainty of token 0 in the rows that have left (their draws are thrown away)."""
    if live_probabilities.shape[0] == batch_size:
        return live_probabilities
    if buffer is None or buffer.shape[0] != batch_size:
        buffer = torch.zeros((batch_size, live_probabilities.shape[1]), dtype=live_probabilities.dtype,
                             device=live_probabilities.device)
    buffer.zero_()[:, 0] = 1.0
    return buffer.index_copy_(0, live, live_probabilities)


def generate(*args, model, custom_generate=None, streamer=None, synced_gpus=None, assistant_model=None, **kwargs):
    """``model.generate`` of a saved folder (``custom_generate/generate.py``): generate() with ``decode`` as its
    decoding method, or GenerationMixin's own generate() for what ``decode`` cannot see (a streamer,
    ``synced_gpus``, an assistant model) and for another ``custom_generate``."""
    own = custom_generate is None and streamer is None and not synced_gpus and assistant_model is None
    return GenerationMixin.generate(model, *args, custom_generate=decode if own else custom_generate,
                                    streamer=streamer, synced_gpus=synced_gpus, assistant_model=assistant_model,
                                    **kwargs)


def save_custom_generate(folder: str | Path) -> None:
    """Write ``custom_generate/`` into a saved model ``folder``: ``generate.py`` (what transformers loads as the
    model's ``generate`` with ``trust_remote_code=True``) and the decoding files it imports."""
    target = Path(folder) / "custom_generate"
    target.mkdir(exist_ok=True)
    for name in DECODING_FILES:
        shutil.copyfile(Path(__file__).with_name(name), target / name)
    (target / "generate.py").write_text(ENTRY_POINT)
