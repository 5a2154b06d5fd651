"""Our decoding loop behind ``generate()``: greedy search, sampling and beam search in which the sentences that have
finished leave the batch, so that their rows stop costing (GenerationMixin keeps computing every row until the
last sentence of the batch has finished, so a batch of sentences of different lengths pays for rows that no sentence
needs).

``decode`` has the signature of GenerationMixin's decoding methods, so ``generate()`` runs it after all of its own
preparation (encoder run, beam expansion, logits processors, stopping criteria). ``generate`` at the end is the entry
point of every way our models are used: the package's generating classes call it as their ``generate()``
(``generation_utils.SeqModelsGenerationMixin``), and a saved model folder carries this file as
``custom_generate/generate.py``, so that ``from_pretrained(folder, trust_remote_code=True).generate(...)`` runs the
same loop without the package installed (it imports only torch and transformers). It decodes with ``decode`` where
the results equal GenerationMixin's own loop (``decode_by_default``); ``custom_generate=None`` asks for
GenerationMixin's own loop, and ``custom_generate=decode`` for ours whatever the call asks.

The path of one step is loop -> step -> model. The loop (``greedy_or_sample``, ``beam_search``) calls ``step``,
which ``prefill`` chose after the first step (GenerationMixin's ``_prefill``, through ``forward``). A model that has a
``decoding_step`` (the attention encoder-decoder, the recurrent language model) takes the other steps through it
(``model_step``): ``forward`` without its checks of every argument (the loop's inputs were checked at the first step,
and are its own since) and without its output objects, on the cache alone, which its ``decoding_step_inputs``
prepared at the first step. Other models take every step through ``prepare_inputs_for_generation`` and
``forward``, as GenerationMixin does. The steps write their logits, and beam search its log-probabilities, into the
first rows of buffers made at the first step (the live rows only shrink): no rows x vocabulary tensor is allocated
per step, since on a CPU the fresh pages of such a tensor cost a sizeable share of a batched step.

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
"""

import torch
from torch.nn import functional as F
from transformers import GenerationMixin
from transformers.cache_utils import Cache
from transformers.generation import logits_process
from transformers.generation.configuration_utils import GenerationMode
from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria
from transformers.generation.utils import (
    GENERATION_MODES_MAPPING,
    GenerateBeamDecoderOnlyOutput,
    GenerateBeamEncoderDecoderOutput,
    GenerateDecoderOnlyOutput,
    GenerateEncoderDecoderOutput,
)
from transformers.utils import ModelOutput

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


# Beam search: GenerationMixin's ``_beam_search``, step for step and with its tie-breaking
# (``topk`` over ``beams x vocabulary``, the same ``-1e9`` masks, length penalty and early-stopping rules), except
# that a sentence whose finished hypotheses can no longer change leaves the batch: its ``num_beams`` rows are dropped
# from the cache, the encoder outputs and the masks, as fairseq's ``SequenceGenerator`` and OpenNMT-py's
# ``BeamSearch.remove_finished`` shrink theirs.
#
# A sentence is settled when GenerationMixin would never again let a hypothesis into its finished set: its
# early-stopping heuristic is met, or (``early_stopping=True``) all its ``num_beams`` slots hold finished hypotheses.
#
# A sentence's beams start as one hypothesis, so the first step runs once per sentence (``prefill``), and they stay
# together: ``prefill`` tells the model once (``decoding_step_inputs(model_kwargs, rows_per_source=num_beams)``), and
# an attention decoder's cache then holds each source's encoder outputs once, read once per step for all its beams.

MASK = -1.0e9  # GenerationMixin's score for what cannot be chosen


class _Hypotheses:
    """Per live sentence, its ``num_beams`` best finished hypotheses: token ids ``(sentences, beams, max_length)``,
    scores (length-penalised; ``MASK`` in an empty slot), whether each slot holds a finished hypothesis, the
    number of tokens each generated, and (when returned) the beam index of each of their tokens."""

    def __init__(self, sequences, num_beams: int, max_new: int, track_beams: bool):
        sentences = sequences.shape[0]
        self.sequences = sequences
        self.scores = torch.full((sentences, num_beams), MASK, device=sequences.device)
        self.finished = torch.zeros((sentences, num_beams), dtype=torch.bool, device=sequences.device)
        self.lengths = torch.zeros((sentences, num_beams), dtype=torch.long, device=sequences.device)
        self.beam_indices = (torch.full((sentences, num_beams, max_new), -1, dtype=torch.int32,
                                        device=sequences.device) if track_beams else None)

    def fields(self) -> list[str]:
        return ["sequences", "scores", "finished", "lengths"] + (["beam_indices"] if self.beam_indices is not None
                                                                   else [])

    def merge(self, candidates: dict, order: torch.Tensor) -> None:
        """Keep, of the current hypotheses followed by ``candidates`` (name -> tensor of the same fields), those
        ``order`` lists per sentence."""
        for name in self.fields():
            merged = torch.cat((getattr(self, name), candidates[name]), dim=1)
            index = order.view(order.shape + (1,) * (merged.dim() - 2))
            setattr(self, name, merged.take_along_dim(index, dim=1))

    def select(self, keep: torch.Tensor) -> None:
        for name in self.fields():
            setattr(self, name, getattr(self, name).index_select(0, keep))

    def bar(self, early_stopping) -> torch.Tensor:
        """Per sentence ``(sentences,)``, the score that the best running beam, length-penalised as
        GenerationMixin's early-stopping heuristic does, must beat for the sentence to go on: the heuristic compares
        it with every slot's worst finished score, or ``MASK`` in an empty slot, and goes on if it beats any, so the
        least of these; ``inf`` in a sentence whose slots are all finished when ``early_stopping=True`` (it then ends
        as well). It changes only with the finished set, so the loop computes it then, not at every step."""
        worst = torch.where(self.finished, torch.min(self.scores, dim=1, keepdim=True)[0], MASK)
        if early_stopping is True:
            worst = worst.masked_fill(self.finished.all(dim=1, keepdim=True), float("inf"))
        return worst.amin(dim=1)


def beam_search(model, input_ids, logits_processor, stopping_criteria, generation_config, model_kwargs):
    """Beam search for ``input_ids`` ``(batch * num_beams, prompt_length)`` (generate() has expanded them); returns
    what GenerationMixin's ``_beam_search`` returns."""
    config = generation_config
    num_beams, length_penalty, early_stopping = config.num_beams, config.length_penalty, config.early_stopping
    max_length, pad, eos = config.max_length, config._pad_token_tensor, config._eos_token_tensor
    rows, length = input_ids.shape
    batch_size, prompt_length, device = rows // num_beams, length, input_ids.device
    keep_k = max(2, 1 + (eos.shape[0] if eos is not None else 0)) * num_beams
    fill = pad or eos[0] if eos is not None else -1  # GenerationMixin's fill value, precedence included
    track_beams = config.return_dict_in_generate

    sequences = input_ids.new_full((rows, max_length), fill)  # running hypotheses, flat: (sentences * beams, L)
    sequences[:, :length] = input_ids
    running_scores = torch.zeros((batch_size, num_beams), device=device)
    running_scores[:, 1:] = MASK
    running_beams = (torch.full((rows, max_length - length), -1, dtype=torch.int32, device=device)
                     if track_beams else None)
    best = _Hypotheses(sequences.view(batch_size, num_beams, -1).clone(), num_beams, max_length - length,
                       track_beams)
    bar = best.bar(early_stopping)
    live = torch.arange(batch_size, device=device)  # original sentence of each live sentence
    beam_offsets = torch.arange(num_beams, device=device)
    in_top_beams = torch.arange(keep_k, device=device) < num_beams  # the candidates that may join the finished set
    row_offsets = live[:, None] * num_beams  # first row of each live sentence, in the live batch
    out = _Hypotheses(best.sequences.clone(), num_beams, max_length - length, track_beams)
    default_stops = DefaultStops.of(stopping_criteria)
    scores = StepRecord(config.return_dict_in_generate and config.output_scores, rows)
    raw_logits = StepRecord(config.return_dict_in_generate and config.output_logits, rows)

    logits, model_kwargs, step = prefill(model, input_ids, config, model_kwargs, num_beams)
    logits_out, log_probs_out = torch.empty_like(logits), torch.empty_like(logits)  # the live rows of buffers
    logits_buffer, log_probs_buffer = logits_out, log_probs_out
    while True:
        sentences = len(live)
        log_probs = torch.log_softmax(logits, dim=-1, out=log_probs_out)
        if logits_processor:
            log_probs = logits_processor(sequences[:, :length], log_probs)
        if scores.steps is not None or raw_logits.steps is not None or track_beams:
            live_rows = (live[:, None] * num_beams + beam_offsets).view(-1)  # rows among all sentences' rows
            raw_logits.add(logits, live_rows)
            scores.add(log_probs, live_rows)
        vocab_size = log_probs.shape[-1]
        totals = log_probs.add_(running_scores.view(-1, 1)).view(sentences, -1)
        top_scores, top_indices = top_k(totals, keep_k)
        top_beams, top_tokens = top_indices // vocab_size, top_indices % vocab_size
        flat_beams = top_beams + row_offsets
        if default_stops is not None:
            hits = default_stops(top_tokens, length + 1)
        else:
            candidates = torch.cat((sequences[flat_beams.view(-1), :length], top_tokens.view(-1, 1)), dim=1)
            hits = stopping_criteria(candidates, scores.result()).view(sentences, keep_k)

        # The next running beams: the best candidates that did not finish.
        open_scores = top_scores.add(hits, alpha=MASK)
        running_scores, chosen = torch.topk(open_scores, k=num_beams)
        beam_idx = flat_beams.gather(1, chosen).view(-1)

        # The finished set takes the candidates among the top num_beams that just finished, if they beat it.
        # GenerationMixin also masks the candidates of sentences that are done (all slots finished under
        # early_stopping=True, or the heuristic met): here such a sentence has already left the batch.
        just_finished = hits & in_top_beams
        if bool(just_finished.any()):
            candidate_scores = (top_scores / ((length + 1 - prompt_length) ** length_penalty)).add_(
                ~just_finished, alpha=MASK)
            order = torch.topk(torch.cat((best.scores, candidate_scores), dim=1), k=num_beams)[1]
            candidate_sequences = sequences.index_select(0, flat_beams.view(-1)).view(sentences, keep_k, -1)
            candidate_sequences[:, :, length] = top_tokens
            candidates = {"sequences": candidate_sequences, "scores": candidate_scores, "finished": just_finished,
                          "lengths": torch.full_like(top_tokens, length + 1 - prompt_length)}
            if track_beams:
                history = running_beams.index_select(0, flat_beams.view(-1)).view(sentences, keep_k, -1)
                history[:, :, length - prompt_length] = (live[:, None] * num_beams + top_beams).to(torch.int32)
                candidates["beam_indices"] = history
            best.merge(candidates, order)
            bar = best.bar(early_stopping)

        # Carry the chosen beams on: their tokens, their cache rows, their beam history.
        sequences = sequences.index_select(0, beam_idx)
        sequences[:, length] = top_tokens.gather(1, chosen).view(-1)
        if track_beams:
            running_beams = running_beams.index_select(0, beam_idx)
            running_beams[:, length - prompt_length] = (live_rows.view(sentences, num_beams).gather(
                1, top_beams.gather(1, chosen))).view(-1).to(torch.int32)
        _reorder(model, model_kwargs, beam_idx)
        length += 1

        # Whether the heuristic lets each sentence improve: one that cannot leaves the batch now, so every live
        # sentence could at the step before.
        hope = _best_possible(running_scores, length, max_length, prompt_length, early_stopping, length_penalty) > bar
        if default_stops is not None:  # hits are all True at the maximum length only (keep_k > eos tokens x beams)
            going, all_hit = int(hope.sum()), default_stops.ends_all(length)
        else:
            going, all_hit = torch.stack((hope.sum(), hits.all())).tolist()
        if going == 0 or all_hit:
            break
        if going < sentences:
            _store(out, best, live, ~hope)
            keep = hope.nonzero().squeeze(1)
            keep_rows = (keep[:, None] * num_beams + beam_offsets).view(-1)
            model_kwargs = select_rows(model_kwargs, sentences * num_beams, keep_rows)
            sequences, running_scores, live = sequences.index_select(0, keep_rows), running_scores[keep], live[keep]
            row_offsets = row_offsets[:len(keep)]
            if track_beams:
                running_beams = running_beams.index_select(0, keep_rows)
            best.select(keep)
            bar = bar[keep]
            logits_out, log_probs_out = logits_buffer[:len(keep_rows)], log_probs_buffer[:len(keep_rows)]
        logits, model_kwargs = step(model, sequences[:, :length], model_kwargs, logits_out)

    _store(out, best, live, torch.ones_like(live, dtype=torch.bool))
    return _output(model, out, config, prompt_length, scores, raw_logits)


def top_k(values: torch.Tensor, k: int, block: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(values, k)`` over the last dimension of ``values`` ``(rows, width)``, found in two passes where
    the width splits into enough blocks of at most ``block``: the ``k`` best values lie in the ``k`` blocks with the
    best maxima (``amax``, vectorised, unlike topk's per-row partial sort), and topk then runs on those blocks alone
    (at 64 sentences x 5 beams x 6000 tokens on 2 CPU cores, 0.77 ms against 1.24). The same values, best first;
    where values tie, other positions of the tied value may be returned (topk promises no order among ties)."""
    rows, width = values.shape
    if rows * width < 2**16:  # small: one pass is cheaper
        return torch.topk(values, k)
    size = next((size for size in range(block, block // 4, -1) if width % size == 0), None)
    if size is None or width < 4 * k * size:
        return torch.topk(values, k)
    blocks = values.view(rows, width // size, size)
    best_blocks = torch.topk(blocks.amax(dim=-1), k).indices
    scores, inner = torch.topk(blocks.gather(1, best_blocks[:, :, None].expand(-1, -1, size)).view(rows, -1), k)
    return scores, best_blocks.gather(1, inner // size) * size + inner % size


def _best_possible(running_scores, length: int, max_length: int, prompt_length: int, early_stopping,
                   length_penalty: float) -> torch.Tensor:
    """GenerationMixin's early-stopping heuristic: the best score a sentence's best running beam may still reach
    ``(sentences,)``, to compare with ``_Hypotheses.bar``."""
    if early_stopping == "never" and length_penalty > 0.0:
        best_length = max_length - prompt_length
    else:
        best_length = length - prompt_length
    return running_scores[:, 0] / (best_length**length_penalty)


def _reorder(model, model_kwargs: dict, beam_idx: torch.Tensor) -> None:
    cache = cache_of(model_kwargs)
    if cache is None:
        return
    if hasattr(model, "_reorder_cache"):
        name = next(name for name, value in model_kwargs.items() if value is cache)
        model_kwargs[name] = model._reorder_cache(cache, beam_idx)
    else:
        cache.reorder_cache(beam_idx)


def _store(out: _Hypotheses, best: _Hypotheses, live: torch.Tensor, which: torch.Tensor) -> None:
    """Write the finished hypotheses of the live sentences ``which`` (bool, per live sentence) into ``out``."""
    sentences = live[which]
    for name in best.fields():
        getattr(out, name)[sentences] = getattr(best, name)[which]


def _output(model, out: _Hypotheses, config, prompt_length: int, scores: "StepRecord", raw_logits: "StepRecord"):
    """GenerationMixin's returned value: the ``num_return_sequences`` best of each sentence, cut after the longest
    returned hypothesis."""
    n = config.num_return_sequences
    lengths = out.lengths[:, :n].reshape(-1)
    generated = int(lengths.max()) if lengths.numel() else 0
    sequences = out.sequences[:, :n].reshape(-1, out.sequences.shape[-1])[:, :prompt_length + generated]
    if not config.return_dict_in_generate:
        return sequences
    output_class = GenerateBeamEncoderDecoderOutput if model.config.is_encoder_decoder else \
        GenerateBeamDecoderOnlyOutput
    return output_class(
        sequences=sequences,
        sequences_scores=out.scores[:, :n].reshape(-1) if config.output_scores else None,
        scores=scores.result(),
        logits=raw_logits.result(),
        beam_indices=out.beam_indices[:, :n].reshape(-1, out.beam_indices.shape[-1])[:, :generated],
    )


# The live batch: one model step on the rows still decoding, and the removal of the rows whose sentences have
# finished from everything generate() prepared for the model (cache, encoder outputs, masks).

# model_kwargs entries that are not one row per sequence, whatever their first dimension.
_NOT_PER_ROW = frozenset({"cache_position", "use_cache"})


def cache_of(model_kwargs: dict) -> Cache | None:
    """The cache generate() carries in ``model_kwargs`` (under whichever name), or None."""
    return next((value for value in model_kwargs.values() if isinstance(value, Cache)), None)


def _select(value, rows: int, keep: torch.Tensor):
    """``value`` with only the rows ``keep`` of its first dimension, when it has ``rows`` of them; anything else
    unchanged. Tensors inside a ModelOutput (encoder outputs), tuple or list are selected too; a cache in place."""
    if isinstance(value, torch.Tensor):
        return value.index_select(0, keep) if value.dim() and value.shape[0] == rows else value
    if isinstance(value, Cache):
        value.batch_select_indices(keep)
        return value
    if isinstance(value, ModelOutput):
        return type(value)(**{name: _select(field, rows, keep) for name, field in value.items()})
    if isinstance(value, (tuple, list)):
        return type(value)(_select(item, rows, keep) for item in value)
    return value


def rows_can_leave(generation_config, cache: Cache | None) -> bool:
    """Whether ``select_rows`` can take rows out of what generate() prepared: no cache, or one that selects batch
    rows and is not static (a static cache keeps the size it was made for, at fixed addresses for CUDA graphs)."""
    return generation_config.cache_implementation != "static" and (
        cache is None or (hasattr(cache, "batch_select_indices") and not getattr(cache, "static", False)))


def select_rows(model_kwargs: dict, rows: int, keep: torch.Tensor) -> dict:
    """``model_kwargs`` for the rows ``keep`` (1-D indices into the current ``rows``): the rows of sentences that
    have finished stop costing. The cache shrinks in place (``batch_select_indices``; a cache whose per-source
    tensors serve a sentence's beams together keeps their sources, as ``keep`` keeps whole sentences)."""
    return {name: value if name in _NOT_PER_ROW else _select(value, rows, keep) for name, value in model_kwargs.items()}


def next_logits(model, sequences: torch.Tensor, model_kwargs: dict, out: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """One decoding step, as GenerationMixin's loop takes it: the float32 logits of the next token
    ``(rows, vocab_size)`` after ``sequences`` ``(rows, length)``, copied into ``out``, and the updated
    ``model_kwargs``."""
    inputs = model.prepare_inputs_for_generation(
        sequences, next_sequence_length=1 if model_kwargs["use_cache"] else None, **model_kwargs
    )
    outputs = model(**inputs, return_dict=True)
    return _logits_and_kwargs(model, outputs, model_kwargs, out)


def model_step(model, sequences: torch.Tensor, step_inputs: dict, out: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """One decoding step through the model's own ``decoding_step``, on what its ``decoding_step_inputs`` prepared:
    as ``next_logits``, without ``forward``'s per-call checks and output objects (the logits written into ``out``
    where the model's output layer can)."""
    return model.decoding_step(sequences[:, -1:], **step_inputs, out=out), step_inputs


def prefill(model, input_ids: torch.Tensor, generation_config, model_kwargs: dict, rows_per_source: int = 1):
    """The first step (the whole prompt, or the decoder start), through GenerationMixin's ``_prefill``: its logits
    as ``next_logits`` gives them, the inputs of the next steps and the function that takes them: ``model_step``
    where the model has a ``decoding_step`` that applies, else ``next_logits`` with ``model_kwargs``.

    ``rows_per_source`` > 1: the rows come in runs of that many identical rows, which stay together to the end (a
    sentence's beams, as generate() expands them). The first step then runs on one row per run, and its logits and
    what it made (the cache) are repeated for the others, while what it read unchanged (encoder outputs) is taken
    back as generate() expanded it: at batch 64 and 5 beams the step costs a fifth (a prompt's prefill too), with the
    same results up to the last bits of a batch of another size. A static cache keeps the size it was made for: all
    rows then take the step."""
    rows = input_ids.shape[0]
    cache = cache_of(model_kwargs)
    once = rows_per_source > 1 and rows_can_leave(generation_config, cache) and (
        cache is None or cache.get_seq_length() == 0)
    if once:
        firsts = torch.arange(0, rows, rows_per_source, device=input_ids.device)
        every_row = model_kwargs
        input_ids, model_kwargs = input_ids.index_select(0, firsts), select_rows(model_kwargs, rows, firsts)
        given = dict(model_kwargs)  # the step updates model_kwargs in place
    outputs = model._prefill(input_ids, generation_config, model_kwargs, is_first_iteration=True)
    logits, model_kwargs = _logits_and_kwargs(model, outputs, model_kwargs)
    if once:
        unchanged = {name for name, value in model_kwargs.items()  # a cache is filled in place: it has changed
                     if name in given and value is given[name] and not isinstance(value, Cache)}
        model_kwargs = {name: every_row[name] if name in unchanged else value for name, value in model_kwargs.items()}
        repeat = torch.arange(len(firsts), device=logits.device).repeat_interleave(rows_per_source)
        logits, model_kwargs = logits.index_select(0, repeat), select_rows(model_kwargs, len(firsts), repeat)
    step_inputs = (model.decoding_step_inputs(model_kwargs, rows_per_source)
                   if hasattr(model, "decoding_step_inputs") else None)
    return (logits, model_kwargs, next_logits) if step_inputs is None else (logits, step_inputs, model_step)


def _logits_and_kwargs(model, outputs, model_kwargs: dict, out: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, dict]:
    model_kwargs = model._update_model_kwargs_for_generation(
        outputs, model_kwargs, is_encoder_decoder=model.config.is_encoder_decoder
    )
    logits = outputs.logits[:, -1]
    return (logits.to(copy=True, dtype=torch.float32) if out is None else out.copy_(logits)), model_kwargs


class DefaultStops:
    """generate()'s own stopping criteria, a maximum length and end-of-sequence tokens, applied to the newest tokens
    alone: the loops then build no candidate sequences to hand to ``StoppingCriteriaList``. ``of`` gives None when
    any other criterion is present."""

    def __init__(self, max_length: int | None, eos: torch.Tensor | None):
        self.max_length, self.eos = max_length, eos

    @classmethod
    def of(cls, stopping_criteria) -> "DefaultStops | None":
        if not all(type(criteria) in (EosTokenCriteria, MaxLengthCriteria) for criteria in stopping_criteria):
            return None
        lengths = [criteria.max_length for criteria in stopping_criteria if type(criteria) is MaxLengthCriteria]
        eos = [criteria.eos_token_id.view(-1) for criteria in stopping_criteria if type(criteria) is EosTokenCriteria]
        return cls(min(lengths, default=None), torch.cat(eos) if eos else None)

    def ends_all(self, length: int) -> bool:
        """Whether every sequence of ``length`` tokens ends, whatever its last token."""
        return self.max_length is not None and length >= self.max_length

    def __call__(self, tokens: torch.Tensor, length: int) -> torch.Tensor:
        """Whether each of ``tokens`` (any shape), the last of a sequence of ``length`` tokens, ends it (one EOS id:
        a comparison, a fraction of ``isin``'s cost, paid at every step)."""
        if self.ends_all(length):
            return torch.ones_like(tokens, dtype=torch.bool)
        if self.eos is None:
            return torch.zeros_like(tokens, dtype=torch.bool)
        return tokens == self.eos if len(self.eos) == 1 else torch.isin(tokens, self.eos)


class StepRecord:
    """What ``output_scores`` / ``output_logits`` ask for: one ``(total_rows, vocab_size)`` tensor per step, as
    GenerationMixin returns them. Rows that have left the batch are no longer computed: they hold ``-inf``."""

    def __init__(self, enabled: bool, total_rows: int):
        self.steps = [] if enabled else None
        self.total_rows = total_rows

    def add(self, values: torch.Tensor, live_rows: torch.Tensor) -> None:
        """Record ``values`` of the live rows, ``live_rows`` being their indices among all rows."""
        if self.steps is None:
            return
        if values.shape[0] == self.total_rows:
            self.steps.append(values.clone())
            return
        full = values.new_full((self.total_rows, values.shape[1]), float("-inf"))
        self.steps.append(full.index_copy_(0, live_rows, values))

    def result(self) -> tuple[torch.Tensor, ...] | None:
        return None if self.steps is None else tuple(self.steps)


def decode_by_default(model, input_ids, logits_processor, stopping_criteria, generation_config, inputs_tensor=None,
                      **model_kwargs):
    """``generate()``'s decoding method on our models when the caller names none (``generate`` below): ``decode``
    wherever it returns what GenerationMixin's own returns, GenerationMixin's own decoding method for the rest.

    - Greedy search, sampling, beam search: ``decode`` (which itself leaves to GenerationMixin the cases its
      docstring lists), unless ``return_dict_in_generate`` asks for what the loop returns otherwise: per-step
      ``scores`` / ``logits`` (``-inf`` in the rows that left) or the cache (None). Callers that read only
      ``sequences_scores`` keep the loop by naming it: ``custom_generate=decode``.
    - Beam sampling and assisted decoding without an assistant model (prompt lookup): GenerationMixin's.
    - The searches transformers moved to the Hub: refused as generate() refuses them without ``trust_remote_code``
      (with it, ``generate`` hands the call to GenerationMixin's generate, which loads them)."""
    mode = generation_config.get_generation_mode()
    if mode in _OURS and not _asks_what_the_loop_returns_otherwise(generation_config):
        return decode(model, input_ids, logits_processor, stopping_criteria, generation_config, **model_kwargs)
    method = GENERATION_MODES_MAPPING.get(mode, "")
    if not method.startswith("_"):  # a Hub repo
        model._get_deprecated_gen_repo(mode, False)  # raises: generate() refuses it without trust_remote_code
        raise ValueError(f"{mode.name.replace('_', ' ').lower()} runs from the Hub repo {method}: pass "
                         f"`custom_generate='{method}', trust_remote_code=True` to generate().")
    extra = {"inputs_tensor": inputs_tensor} if method == "_assisted_decoding" else {}
    return getattr(GenerationMixin, method)(model, input_ids, logits_processor=logits_processor,
                                            stopping_criteria=stopping_criteria, generation_config=generation_config,
                                            **extra, **model_kwargs)


def _asks_what_the_loop_returns_otherwise(generation_config) -> bool:
    """Whether the returned object holds what our loop does not compute as GenerationMixin does: per-step scores or
    logits, or (``use_cache``) the cache."""
    return bool(generation_config.return_dict_in_generate and (
        generation_config.output_scores or generation_config.output_logits or generation_config.use_cache))


# generate() arguments that GenerationMixin hands only to a decoding method of its own choosing (not to one passed as
# `custom_generate`): a streamer, `synced_gpus`, an assistant model and tokenizers (stop strings, token healing,
# assisted decoding); and `trust_remote_code`, which lets it load a search from the Hub.
_FOR_GENERATION_MIXIN = ("streamer", "synced_gpus", "assistant_model", "tokenizer", "assistant_tokenizer",
                         "trust_remote_code")


def generate(*args, model, custom_generate=decode_by_default, **kwargs):
    """``model.generate``: of our models (``SeqModelsGenerationMixin``), and of a saved folder loaded with
    ``trust_remote_code=True`` (this file is its ``custom_generate/generate.py``). GenerationMixin's generate() with,
    as its decoding method:

    - by default, ``decode_by_default``: our loop where it returns what GenerationMixin's own loop returns, else
      GenerationMixin's; GenerationMixin's generate() alone when the call gives what generate() hands only its own
      decoding methods (a streamer, ``synced_gpus``, an assistant model, a tokenizer, ``trust_remote_code``);
    - ``custom_generate=decode``: our loop wherever it runs the mode, with the differences its module docstring
      lists (per-step scores of finished rows, no returned cache);
    - ``custom_generate=None``: GenerationMixin's own decoding methods, as transformers' models decode;
    - any other ``custom_generate`` (a callable, a Hub repo or a local folder): that one, as generate() runs it."""
    if custom_generate is decode_by_default and any(kwargs.get(name) is not None and kwargs.get(name) is not False
                                                    for name in _FOR_GENERATION_MIXIN):
        custom_generate = None
    return GenerationMixin.generate(model, *args, custom_generate=custom_generate, **kwargs)
