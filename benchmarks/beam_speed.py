"""Entry ``translation``: beam search with the attention GRU/LSTM on Multi30k test2016 (English -> German), our
batched ``generate(num_beams=5)`` vs two per-sentence Python beam searches calling the same model's decoder step
once per hypothesis: the naive tutorial search and one matched to transformers' semantics
(``benchmarks/beam_search.py``), and a hand-written batched beam loop. Sentences/s, speed-ups, and how often each
finds the same best hypothesis as ``generate()`` (a speed-up that changes the answer does not count).
``generate(cache_implementation="static")`` is timed too: on a GPU its decoding steps replay as CUDA graphs.
The model is ``benchmarks/translation_model.py``'s.
"""

import dataclasses
import functools

import torch

from .beam_search import agreement, hand_beam_search, matched_beam_search, naive_beam_search, strip
from .common import Settings, entry_result, op_profile, resolve_sizes, target, timed
from .decoder_calls import DecoderCall, decoder_calls, decoder_step_bound
from .translation_model import SMOKE, Sizes, english_test2016, pad_batch, trained_models


def batches(sources: list[list[int]], batch_size: int, pad_id: int, device: str):
    """``(input_ids, attention_mask)`` of consecutive batches of ``sources``, padded on the right."""
    for start in range(0, len(sources), batch_size):
        ids = pad_batch(sources[start:start + batch_size], pad_id).to(device)
        yield ids, (ids != pad_id).long()


def generate_beam(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes, **options) -> list[list[int]]:
    sequences = model.generate(ids, attention_mask=mask, num_beams=sizes.num_beams, do_sample=False,
                               max_new_tokens=sizes.max_new_tokens, early_stopping=True, length_penalty=1.0,
                               **options)
    return [strip(row[1:], model.config) for row in sequences.tolist()]


def per_sentence(search, model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    """Run a one-sentence search on each row of a padded batch, without its padding."""
    return [strip(search(model, row[keep.bool()].unsqueeze(0), sizes.num_beams, sizes.max_new_tokens), model.config)
            for row, keep in zip(ids, mask)]


def hand_batched(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    return [strip(row, model.config) for row in hand_beam_search(model, ids, mask, sizes.num_beams,
                                                                 sizes.max_new_tokens)]


def searches(sizes: Sizes) -> dict[str, str]:
    """The searches compared, by name, as the table describes them; ``_sorted``: batches of similar lengths."""
    beams, batch = sizes.num_beams, sizes.batch_size
    return {"generate": f"generate(num_beams={beams}), batches of {batch} in test order",
            "generate_sorted": f"generate(num_beams={beams}), batches of {batch} sorted by source length",
            "generate_static": f"generate(num_beams={beams}, cache_implementation='static'), batches of {batch} in "
                               "test order",
            "generate_static_sorted": f"generate(num_beams={beams}, cache_implementation='static'), batches of "
                                      f"{batch} sorted by source length",
            "naive": "per-sentence naive tutorial search", "matched": "per-sentence matched search",
            "hand": f"hand batched beam loop, batches of {batch} in test order"}


@dataclasses.dataclass
class Decoded:
    """One timed pass of every search over the test sentences."""

    outputs: dict[str, list[list[int]]]  # by search, one best hypothesis per sentence in test order
    seconds: dict[str, float]  # by search, the pass's total
    first_pass: dict[str, float]  # the static cache's untimed first pass (CUDA graphs captured)
    calls: dict[str, list[DecoderCall]]  # generate()'s and the matched search's decoder calls


@torch.no_grad()
def decode_test_set(model, sources: list[list[int]], sizes: Sizes, device: str) -> Decoded:
    # Batched decoding runs until the longest output of a batch is done; batching sentences of similar source
    # length (as fairseq's generate does) wastes fewer steps. The per-sentence searches do not care.
    by_length = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    static = functools.partial(generate_beam, cache_implementation="static")
    methods = {"generate": generate_beam, "generate_sorted": generate_beam,
               "generate_static": static, "generate_static_sorted": static,
               "naive": functools.partial(per_sentence, naive_beam_search),
               "matched": functools.partial(per_sentence, matched_beam_search), "hand": hand_batched}
    outputs = {name: {} for name in methods}
    seconds = dict.fromkeys(methods, 0.0)
    calls = {"generate": [], "matched": []}  # every decoder call (a hook, microseconds)

    def batch(name: str, start: int) -> tuple[list[int], torch.Tensor, torch.Tensor]:
        chosen = (by_length if name.endswith("_sorted") else range(len(sources)))[start:start + sizes.batch_size]
        return chosen, *next(batches([sources[i] for i in chosen], len(chosen), model.config.pad_token_id, device))

    first = next(batches(sources[:2], 2, model.config.pad_token_id, device))
    for method in methods.values():
        method(model, *first, sizes)  # warm-up
    # On a GPU the static cache's decoding step is captured as a CUDA graph for each new shape of a batch: an
    # untimed first pass over the batches, whose time is reported.
    first_pass = dict.fromkeys(("generate_static", "generate_static_sorted"), 0.0)
    for name in first_pass:
        for start in range(0, len(sources), sizes.batch_size):
            _, ids, mask = batch(name, start)
            first_pass[name] += timed(lambda: methods[name](model, ids, mask, sizes), device)[1]
    # Batch by batch, every method in turn, so that a shared machine's load falls on all alike.
    for start in range(0, len(sources), sizes.batch_size):
        for name, method in methods.items():
            chosen, ids, mask = batch(name, start)
            with decoder_calls(model) as made:
                result, elapsed = timed(lambda: method(model, ids, mask, sizes), device)
            calls.get(name, []).extend(made)
            outputs[name].update(zip(chosen, result))
            seconds[name] += elapsed
    in_order = {name: [found[i] for i in range(len(sources))] for name, found in outputs.items()}
    return Decoded(in_order, seconds, first_pass, calls)


def table_rows(decoded: Decoded, label: str, sizes: Sizes) -> list[dict]:
    """One row per search: its speed, relative time and agreement with ``generate()``."""
    seconds, outputs = decoded.seconds, decoded.outputs
    count = len(outputs["generate"])
    return [{"model": label, "search": search, "sentences_per_s": round(count / seconds[name], 2),
             "time_vs_generate": round(seconds[name] / seconds["generate"], 2),
             "same_best_as_generate": round(agreement(outputs["generate"], outputs[name]), 4)}
            for name, search in searches(sizes).items()]


def summarize(decoded: Decoded) -> dict:
    """Speed-ups over the per-sentence searches and agreements with ``generate()``'s best hypotheses."""
    seconds, outputs = decoded.seconds, decoded.outputs
    return {
        "speedup_vs_naive": round(seconds["naive"] / seconds["generate"], 2),
        "speedup_vs_matched": round(seconds["matched"] / seconds["generate"], 2),
        "sorted_speedup_vs_naive": round(seconds["naive"] / seconds["generate_sorted"], 2),
        "sorted_speedup_vs_matched": round(seconds["matched"] / seconds["generate_sorted"], 2),
        "agreement_naive": round(agreement(outputs["generate"], outputs["naive"]), 4),
        "agreement_matched": round(agreement(outputs["generate"], outputs["matched"]), 4),
        "agreement_hand_batched": round(agreement(outputs["generate"], outputs["hand"]), 4),
        "agreement_sorted_batches": round(agreement(outputs["generate"], outputs["generate_sorted"]), 4),
        "static_speedup_vs_matched": round(seconds["matched"] / seconds["generate_static"], 2),
        "static_sorted_speedup_vs_matched": round(seconds["matched"] / seconds["generate_static_sorted"], 2),
        "agreement_static": round(agreement(outputs["generate"], outputs["generate_static"]), 4),
        "static_first_pass_s": {name: round(value, 2) for name, value in decoded.first_pass.items()},
    }


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets, profiles = [], {}, [], {}
    for label, model, tokenizer, train_loss in trained_models(sizes, settings):
        sources = english_test2016(tokenizer, sizes.num_sentences)
        decoded = decode_test_set(model, sources, sizes, device)
        with torch.no_grad():
            ids, mask = next(batches(sources[: sizes.batch_size], sizes.batch_size, model.config.pad_token_id, device))
            profiles[f"{label}, generate() on the first batch (torch.profiler)"] = op_profile(
                lambda: generate_beam(model, ids, mask, sizes))
            profiles[f"{label}, matched per-sentence search, 4 sentences (torch.profiler)"] = op_profile(
                lambda: per_sentence(matched_beam_search, model, ids[:4], mask[:4], sizes))
            median_source = sorted(sources, key=len)[len(sources) // 2]
            bound = decoder_step_bound(model, median_source, *([call.rows for call in decoded.calls[name]]
                                                               for name in ("generate", "matched")), device)
        rows += table_rows(decoded, label, sizes)
        summary[label] = {
            **summarize(decoded),
            **bound,
            "mean_output_length": round(sum(map(len, decoded.outputs["generate"])) / len(sources), 2),
            "train_loss": round(train_loss, 3),
        }
        wanted = 40 if device.startswith("cuda") else 20
        static = "generate(cache_implementation='static')"
        for key, how in (("speedup_vs_matched", "generate() (test order"),
                         ("sorted_speedup_vs_matched", "generate() (length-sorted"),
                         ("static_speedup_vs_matched", f"{static} (test order"),
                         ("static_sorted_speedup_vs_matched", f"{static} (length-sorted")):
            targets.append(target(f"{label}: {how} batches of {sizes.batch_size}) vs per-sentence matched search",
                                  summary[label][key], minimum=wanted))
        targets.append(target(f"{label}: same best hypothesis as the matched search",
                              summary[label]["agreement_matched"], minimum=0.99))
    result = entry_result(
        "Translation decoding: batched generate() vs per-sentence beam search (Multi30k test2016)",
        sizes, rows, summary, targets,
        notes=(f"first {sizes.num_sentences} test2016 sentences, beam {sizes.num_beams}, max_new_tokens "
               f"{sizes.max_new_tokens}, length_penalty 1.0, early_stopping=True; models trained "
               f"{sizes.train_steps} steps. time_vs_generate = that search's time / generate()'s on batches in test "
               "order. cache_implementation='static': on a GPU the model replays its decoding steps as CUDA graphs, "
               "timed after an untimed first pass over the same batches (static_first_pass_s). decoder_step_bound = "
               "the speed-up over the matched search if both made only their decoder calls (counted in the timed "
               "pass), each costing the model's step time at its number of rows (timed on the median-length "
               "source): its factors are decoder_rows_generate_vs_per_sentence (rows of a batch keep running until "
               "its last sentence is done) and row_cost_1_vs_N_rows (a row alone vs in a batch)."),
    )
    result["profiles"] = profiles
    return result
