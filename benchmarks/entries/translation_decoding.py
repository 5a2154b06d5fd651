"""Entry ``translation``: beam search on Multi30k test2016 (English -> German) with the attention GRU/LSTM whose
BLEU the results report (``benchmarks/helpers/translation_model.py``): our batched ``generate(num_beams=5)`` against the
per-sentence searches people run, on the same weights.

- the per-sentence searches, one sentence at a time: ``beams_batched``, its ``k`` beams in one decoder call per step
  (``hand_beam_search`` at batch 1, as JoeyNMT or OpenNMT decode at batch 1); ``ours_batch1``, our decoding loop
  at batch 1; ``generate_batch1``, ``generate()`` at batch 1. The headline baseline is the fastest of the three in
  the run (``per_sentence_fastest``);
- the second baseline, ``per_hypothesis``: one sentence at a time, one decoder call per hypothesis per step, with
  transformers' beam semantics (``matched_beam_search``);
- a hand-written batched beam loop over the same batches as ``generate()``;
- ``generate()`` with batches in test order or sorted by source length, each also with
  ``cache_implementation="static"`` (on a GPU its decoding steps replay as CUDA graphs);
- ``generate(custom_generate=decode)``, our decoding loop (``hf_seqmodels/models/decoding.py``: a sentence that has
  finished leaves the batch) on the length-sorted batches: what a saved folder's ``generate()`` runs when loaded
  with ``trust_remote_code=True``.

The batched searches take the batch size at which our loop is fastest on Multi30k validation sentences (on a GPU
a larger batch than on a CPU: a decoder call there costs about the same at 5 rows as at 320). Each search decodes
every sentence once per round, after an untimed first pass, the searches taking turns on every sentence
(`turns_by_sentence`): a per-sentence search decodes that sentence, a batched search decodes each of its batches at
one sentence of the round, spread evenly over it. Reported: sentences/s and each speed-up as the median and
quartiles over the rounds (a speed-up is that of each round's pair), and how often each search finds the same best
hypothesis as ``generate()``: a baseline whose hypotheses differ does not count, and its row says so.
"""

import functools
from collections.abc import Callable

import torch

from hf_seqmodels.models.decoding import decode

from ..helpers.beam_search import agreement, counts, hand_beam_search, matched_beam_search, strip
from ..helpers.common import (
    Rounds, Settings, columns, entry_result, first_pass_then_rounds_by_item, interleaved, op_profile, paired_ratio,
    rate, resolve_sizes, target,
)
from ..helpers.decoder_calls import decoder_calls, decoder_step_bound
from ..helpers.translation_model import (
    SMOKE, Sizes, TimedModel, english_test2016, origin_note, pad_batch, timed_models, timed_sizes,
)

# The data splits its figures come from (provenance): test2016 sentences are timed, validation ones choose the
# batch size.
SPLIT = ["validation", "test"]

# A batch: the test-set positions of its sentences, their padded ids and attention mask.
Batch = tuple[list[int], torch.Tensor, torch.Tensor]

OURS = "generate_sorted"  # the speed-ups are over this search
REFERENCE = "generate"  # agreement is with this search's best hypotheses
PER_SENTENCE = ("beams_batched", "ours_batch1", "generate_batch1")  # the headline baseline: the fastest of these
BASELINES = (*PER_SENTENCE, "per_hypothesis")  # Sizes.baselines: which of these are timed (PER_SENTENCE always)
FASTEST = "per_sentence_fastest"  # the summary's name for the fastest of PER_SENTENCE
# The targets. On a GPU: batched beam search at least this many times the headline baseline's speed, and at least
# this many sentences/s. On a CPU: the first only, at its own ratio.
GPU_SPEEDUP, GPU_SENTENCES_PER_S, CPU_SPEEDUP = 100, 5000, 8


def check_baselines(baselines: tuple[str, ...]) -> None:
    if not set(PER_SENTENCE) <= set(baselines) <= set(BASELINES):
        raise ValueError(f"--set baselines={','.join(baselines)}: the per-sentence searches timed, every one of "
                         f"{', '.join(PER_SENTENCE)} and optionally {BASELINES[-1]}.")


def batches(sources: list[list[int]], order: list[int], batch_size: int, pad_id: int, device: str) -> list[Batch]:
    """The sentences of ``sources`` in ``order``, in padded batches of ``batch_size``."""
    result = []
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        ids = pad_batch([sources[i] for i in chosen], pad_id).to(device)
        result.append((chosen, ids, (ids != pad_id).long()))
    return result


def generate_beam(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes, **options) -> list[list[int]]:
    """generate()'s beam search: transformers' own loop (``custom_generate=None``) unless ``options`` name another."""
    sequences = model.generate(ids, attention_mask=mask, num_beams=sizes.num_beams, do_sample=False,
                               max_new_tokens=sizes.max_new_tokens, early_stopping=True, length_penalty=1.0,
                               **{"custom_generate": None, **options})
    return [strip(row[1:], model.config) for row in sequences.tolist()]


our_loop = functools.partial(generate_beam, custom_generate=decode)  # generate() with our decoding loop


def batch1(search: Callable, model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    """``search`` (a generate() search) on one sentence without padding, as the per-sentence searches take it."""
    return search(model, ids, None, sizes)


def beams_batched(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    """The per-sentence search with its beams batched: ``ids`` is one sentence without padding."""
    return [strip(hand_beam_search(model, ids, None, sizes.num_beams, sizes.max_new_tokens)[0], model.config)]


def per_hypothesis(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    """The per-sentence search with one decoder call per hypothesis: ``ids`` is one sentence without padding."""
    return [strip(matched_beam_search(model, ids, sizes.num_beams, sizes.max_new_tokens), model.config)]


def hand_batched(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    return [strip(row, model.config) for row in hand_beam_search(model, ids, mask, sizes.num_beams,
                                                                 sizes.max_new_tokens)]


def searches(sizes: Sizes, batch: int) -> dict[str, tuple[str, str]]:
    """The searches compared, by name: how the table describes each and its role (of `BASELINES`, those of
    ``sizes.baselines``)."""
    beams = sizes.num_beams
    static = f"generate(num_beams={beams}, cache_implementation='static')"
    described = {
        "generate_sorted": (f"generate(num_beams={beams}), batches of {batch} sorted by source length", "ours"),
        "generate": (f"generate(num_beams={beams}), batches of {batch} in test order", "ours"),
        "custom_sorted": (f"generate(num_beams={beams}, custom_generate=decode) (our decoding loop: finished "
                          f"sentences leave the batch), batches of {batch} sorted by source length", "ours"),
        "generate_static_sorted": (f"{static}, batches of {batch} sorted by source length", "ours"),
        "generate_static": (f"{static}, batches of {batch} in test order", "ours"),
        "beams_batched": (f"per sentence, its {beams} beams in one decoder call per step (JoeyNMT / OpenNMT at "
                          "batch 1)", "per-sentence search"),
        "ours_batch1": (f"per sentence, generate(num_beams={beams}, custom_generate=decode) at batch 1 (our decoding "
                        "loop)", "per-sentence search"),
        "generate_batch1": (f"per sentence, generate(num_beams={beams}) at batch 1", "per-sentence search"),
        "per_hypothesis": ("per sentence, one decoder call per hypothesis", "second baseline"),
        "hand_batched": (f"hand-written batched beam loop, batches of {batch} in test order", "other"),
    }
    return {name: row for name, row in described.items() if name not in BASELINES or name in sizes.baselines}


def decode_pass(search: Callable, batched: list[Batch], count: int) -> list[list[int]]:
    """One best hypothesis per sentence, in test order, from ``search`` run on every batch."""
    outputs = [[] for _ in range(count)]
    for chosen, ids, mask in batched:
        for i, tokens in zip(chosen, search(ids, mask), strict=True):
            outputs[i] = tokens
    return outputs


def by_source_length(sources: list[list[int]]) -> list[int]:
    """Positions of ``sources``, shortest first. Batched decoding runs until the longest output of a batch is done;
    batching sentences of similar source length (as fairseq's generate does) wastes fewer steps."""
    return sorted(range(len(sources)), key=lambda i: len(sources[i]))


@torch.no_grad()
def choose_batch_size(model, sources: list[list[int]], sizes: Sizes, device: str) -> tuple[int, dict]:
    """The batch size of the batched searches: of ``sizes.batch_sizes``, the one at which our decoding loop
    translates ``sources`` (Multi30k validation sentences, not the test sentences timed afterwards) fastest, in
    length-sorted batches over interleaved rounds; and each size's sentences/s (median and quartiles). A single size
    is taken as it is."""
    if len(sizes.batch_sizes) == 1:
        return sizes.batch_sizes[0], {}
    order, search = by_source_length(sources), functools.partial(our_loop, model, sizes=sizes)
    passes = {size: functools.partial(decode_pass, search, batches(sources, order, size, model.config.pad_token_id,
                                                                   device), len(sources))
              for size in sizes.batch_sizes}
    timings = interleaved(passes, max(3, sizes.rounds // 2), device)
    speeds = {size: rate(len(sources), timings, size) for size in sizes.batch_sizes}
    return max(speeds, key=lambda size: speeds[size]["median"]), speeds


def batch_positions(count: int, batches: int) -> list[int]:
    """The sentence positions of a round (of ``count``) at which a batched search decodes each of its ``batches``
    batches: spread evenly over the round, each at the middle of its share (a batch of one: at its own sentence)."""
    return [(2 * index + 1) * count // (2 * batches) for index in range(batches)]


def turns_by_sentence(plan: dict[str, tuple[Callable, list[Batch]]], count: int, rounds: int,
                      device: str) -> tuple[dict[str, float], Rounds]:
    """Every search of ``plan`` (name -> its search of ``(ids, mask)`` and its batches) decodes all ``count``
    sentences once per round, after an untimed first pass, the searches taking turns on every sentence
    (`first_pass_then_rounds_by_item` over the sentence positions): at each position, each search decodes the
    batch it has there (`batch_positions`), or nothing. A per-sentence search's batches are its sentences; a batched
    search's batches fall at positions spread over the round, so that every search meets the machine's speed all
    through the round, not only while its own pass runs. Returns the first pass's seconds and the rounds, whose
    ``last`` holds each search's best hypotheses in test order."""
    schedules = {name: dict(zip(batch_positions(count, len(batched)), batched, strict=True))
                 for name, (_, batched) in plan.items()}

    def decode_at(name: str, position: int) -> list[tuple[int, list[int]]]:
        if position not in schedules[name]:
            return []
        chosen, ids, mask = schedules[name][position]
        return list(zip(chosen, plan[name][0](ids, mask), strict=True))

    first_pass, timings = first_pass_then_rounds_by_item(
        {name: functools.partial(decode_at, name) for name in plan}, list(range(count)), rounds, device)
    outputs = {}
    for name, found in timings.last.items():
        outputs[name] = [[] for _ in range(count)]
        for position, tokens in (pair for pairs in found for pair in pairs):
            outputs[name][position] = tokens
    return first_pass, Rounds(timings.seconds, outputs)


@torch.no_grad()
def measure(model, sources: list[list[int]], sizes: Sizes, batch_size: int, device: str):
    """`turns_by_sentence` over ``sources`` with every search: the first pass's seconds and decoder-call rows by
    search, and the ``sizes.rounds`` rounds."""
    pad, count = model.config.pad_token_id, len(sources)
    in_order = list(range(count))
    # The per-sentence searches take one sentence, unpadded.
    test_order = batches(sources, in_order, batch_size, pad, device)
    by_length = batches(sources, by_source_length(sources), batch_size, pad, device)
    one_by_one = batches(sources, in_order, 1, pad, device)
    static = functools.partial(generate_beam, cache_implementation="static")
    plan = {"generate_sorted": (generate_beam, by_length), "generate": (generate_beam, test_order),
            "custom_sorted": (our_loop, by_length),
            "generate_static_sorted": (static, by_length), "generate_static": (static, test_order),
            "beams_batched": (beams_batched, one_by_one),
            "ours_batch1": (functools.partial(batch1, our_loop), one_by_one),
            "generate_batch1": (functools.partial(batch1, generate_beam), one_by_one),
            "per_hypothesis": (per_hypothesis, one_by_one),
            "hand_batched": (hand_batched, test_order)}
    plan = {name: plan[name] for name in searches(sizes, batch_size)}
    # The first pass warms up, and on a GPU captures the static cache's CUDA graph for each new batch shape (its
    # time is reported); the decoder calls are recorded there (a hook, microseconds), not in the timed rounds: a
    # search's first len(batches) calls are its first pass.
    calls: dict[str, list[int]] = {name: [] for name in plan}
    recorded = {name: (first_pass_recorder(model, functools.partial(search, model, sizes=sizes), len(batched),
                                           calls[name]), batched) for name, (search, batched) in plan.items()}
    first_pass, rounds = turns_by_sentence(recorded, count, sizes.rounds, device)
    return first_pass, calls, rounds


def first_pass_recorder(model, search: Callable, first_calls: int, rows: list[int]) -> Callable:
    """``search``, recording into ``rows`` the rows of every decoder call made in its first ``first_calls`` calls
    (the first pass, untimed) and nothing later (a timed round pays no hook)."""
    made = 0

    def run(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        nonlocal made
        made += 1
        if made > first_calls:
            return search(ids, mask)
        with decoder_calls(model) as recorded:
            found = search(ids, mask)
        rows.extend(call.rows for call in recorded)
        return found

    return run


def fastest_per_sentence(rounds: Rounds) -> str:
    """The headline baseline: the search of `PER_SENTENCE` with the least median seconds over the rounds."""
    return min(PER_SENTENCE, key=rounds.median)


def table_rows(label: str, rounds: Rounds, sizes: Sizes, batch_size: int, count: int) -> list[dict]:
    """One row per search: sentences/s, how many times faster ``OURS`` is, and agreement with ``REFERENCE``; the
    fastest per-sentence search's role is the headline baseline."""
    rows, fastest = [], fastest_per_sentence(rounds)
    for name, (description, role) in searches(sizes, batch_size).items():
        reference, found = rounds.last[REFERENCE], rounds.last[name]
        role = "headline baseline" if name == fastest else role
        rows.append({"model": label, "search": description, "role": role,
                     **columns("sentences_per_s", rate(count, rounds, name)),
                     **columns(f"{OURS}_speedup", paired_ratio(rounds, name, OURS)),
                     "same_best_as_generate": round(agreement(reference, found), 4),
                     "counts": counts(reference, found)})
    return rows


def summarize(rounds: Rounds, first_pass: dict[str, float], baselines: tuple[str, ...]) -> dict:
    """Speed-ups of ``generate()`` over each baseline and over the fastest per-sentence search (`FASTEST`, named
    under that key; median and quartiles of per-round ratios) and agreements."""
    fastest = fastest_per_sentence(rounds)
    summary = {FASTEST: fastest}
    for baseline, name in ((FASTEST, fastest), *((baseline, baseline) for baseline in baselines)):
        for ours, key in (("generate_sorted", "sorted_speedup"), ("generate", "speedup"),
                          ("custom_sorted", "custom_sorted_speedup"),
                          ("generate_static_sorted", "static_sorted_speedup"), ("generate_static", "static_speedup")):
            summary[f"{key}_vs_{baseline}"] = paired_ratio(rounds, name, ours)
    reference = rounds.last[REFERENCE]
    summary.update({f"agreement_{name}": round(agreement(reference, rounds.last[name]), 4)
                    for name in rounds.last if name != REFERENCE})
    summary["static_first_pass_s"] = {name: round(first_pass[name], 2)
                                      for name in ("generate_static", "generate_static_sorted")}
    return summary


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    check_baselines(sizes.baselines)
    device = settings.device
    rows, summary, targets, profiles, timed_list = [], {}, [], {}, []
    on_gpu = device.startswith("cuda")
    wanted = GPU_SPEEDUP if on_gpu else CPU_SPEEDUP
    for timed_model in timed_models(sizes, settings):
        timed_list.append(timed_model)
        label, model = timed_model.label, timed_model.model
        batch_size, on_valid = choose_batch_size(
            model, english_test2016(timed_model.tokenizer, sizes.num_sentences, "validation"), sizes, device)
        sources = english_test2016(timed_model.tokenizer, sizes.num_sentences)
        first_pass, calls, rounds = measure(model, sources, sizes, batch_size, device)
        rows += table_rows(label, rounds, sizes, batch_size, len(sources))
        median_source = sorted(sources, key=len)[len(sources) // 2]
        summary[label] = {
            "model": timed_model.origin,
            "batch_size": batch_size,
            "valid_sentences_per_s_by_batch_size": on_valid,
            **summarize(rounds, first_pass, sizes.baselines),
            **decoder_step_bound(model, median_source, calls[OURS], {name: calls[name] for name in sizes.baselines},
                                 device),
            "mean_output_length": round(sum(map(len, rounds.last[REFERENCE])) / len(sources), 2),
        }
        profiles.update(profile_searches(timed_model, sources, sizes, batch_size, device))
        for ours, how in (("sorted_speedup", "generate()"), ("custom_sorted_speedup", "generate(custom_generate="
                          "decode)"), ("static_sorted_speedup", "generate(static cache)")):
            targets.append(target(f"{label}: {how}, length-sorted batches of {batch_size}, vs the fastest "
                                  "per-sentence search (median of per-round ratios)",
                                  summary[label][f"{ours}_vs_{FASTEST}"]["ratio"], minimum=wanted))
        targets += [target(f"{label}: the {name.replace('_', ' ')} search finds generate()'s best hypotheses",
                           summary[label][f"agreement_{name}"], minimum=1.0) for name in sizes.baselines]
        if on_gpu:
            targets += [target(f"{label}: {searches(sizes, batch_size)[name][0]}: sentences/s (median of rounds)",
                               rate(len(sources), rounds, name)["median"], minimum=GPU_SENTENCES_PER_S)
                        for name in ("generate_sorted", "custom_sorted")]
    result = entry_result(
        "Translation decoding: batched generate() vs per-sentence beam search (Multi30k test2016)",
        sizes, rows, summary, targets,
        notes=(f"{origin_note(timed_list)} First {sizes.num_sentences} test2016 sentences, beam {sizes.num_beams}, "
               f"max_new_tokens {sizes.max_new_tokens}, length_penalty 1.0, early_stopping=True. The batched "
               f"searches' batch size (summary: batch_size) is the one of {list(sizes.batch_sizes)} at which our "
               f"decoding loop was fastest on the first {sizes.num_sentences} validation sentences, in "
               "length-sorted batches over interleaved rounds before the test rounds "
               "(valid_sentences_per_s_by_batch_size). Every search decodes every sentence once per round, "
               f"{sizes.rounds} rounds after an untimed first pass, the searches taking turns on every sentence (in "
               "order on one, reversed on the next): a per-sentence search decodes that sentence, a batched search "
               "each of its batches at one sentence of the round, spread evenly over it. The headline baseline "
               f"({FASTEST}, summary) is the fastest (least median time) of the per-sentence searches: the hand "
               "search with its beams batched, our decoding loop at batch 1 and generate() at batch 1; "
               f"<speedup>_vs_{FASTEST} is over it. sentences_per_s is the median over the rounds (_iqr: lower and "
               "upper quartile); "
               f"{OURS}_speedup is the median over the rounds of that search's time / length-sorted generate()'s "
               "in the same round (> 1: generate() is faster), with its quartiles. A search whose best hypotheses "
               "differ from generate()'s does not count (column counts). cache_implementation='static': on a GPU "
               "the model replays its decoding steps as CUDA graphs, captured in the first pass "
               "(static_first_pass_s). decoder_step_bound_vs_<search> = the speed-up over that search if both made "
               "only their decoder calls (counted in the first pass), each costing the model's step time at its "
               "number of rows (timed on the median-length source, interleaved rounds): its factors are "
               "decoder_rows_generate_vs_<search> (rows of a batch keep running until its last sentence is done) "
               "and row_cost_<k>_vs_<N>_rows (the cost of a row in a call of k rows vs in a batch of N)."),
    )
    result["sizes"] = timed_sizes(sizes, timed_list)
    result["profiles"] = profiles
    return result


@torch.no_grad()
def profile_searches(timed_model: TimedModel, sources: list[list[int]], sizes: Sizes, batch_size: int,
                     device: str) -> dict:
    """torch.profiler's busiest operators of ``generate()`` on the first batch and of the headline baseline on
    its first four sentences."""
    label, model = timed_model.label, timed_model.model
    first = batches(sources, list(range(min(len(sources), batch_size))), batch_size,
                    model.config.pad_token_id, device)[0]
    four = batches(sources, list(range(min(len(sources), 4))), 1, model.config.pad_token_id, device)
    return {
        f"{label}, generate() on the first batch (torch.profiler)":
            op_profile(lambda: generate_beam(model, first[1], first[2], sizes)),
        f"{label}, per-sentence search with its beams batched, 4 sentences (torch.profiler)":
            op_profile(lambda: decode_pass(functools.partial(beams_batched, model, sizes=sizes), four, len(four))),
    }
