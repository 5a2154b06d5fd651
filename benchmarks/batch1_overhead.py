"""Entry ``batch1_overhead``: at batch 1, ``generate()`` (greedy and beam, with the default and the static cache)
vs plain hand loops (``benchmarks/beam_search.py``) on the same model, ``benchmarks/translation_model.py``'s, with
the time split into the model's decoder calls and the rest, aten operators per token, and a profile of where
``generate()`` spends its time.
"""

import cProfile
import io
import pstats
from collections.abc import Callable

import torch

from .beam_search import agreement, hand_beam_search, hand_greedy, strip
from .common import Settings, count_ops, entry_result, resolve_sizes, target, timed
from .decoder_calls import decoder_calls
from .translation_model import SMOKE, Sizes, english_test2016, trained_models


def profile_top(fn, limit: int = 12) -> list[str]:
    """cProfile of ``fn()``: the functions with the most own time, as 'own_s cumulative_s calls name' lines."""
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    entries = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:limit]
    return [f"{own:.4f}s own {cumulative:.4f}s cum {calls} calls {file.split('site-packages/')[-1]}:{line} {name}"
            for (file, line, name), (_, calls, own, cumulative, _) in entries]


SPLIT_SENTENCES = 8  # the first sentences, for the split of the time inside and outside the decoder calls


def searches(model, sizes: Sizes) -> dict[str, dict[str, Callable[[torch.Tensor], list[int]]]]:
    """By mode (greedy, beam), the searches compared on one source ``(1, length)``, each returning its tokens."""
    config, beams = model.config, sizes.num_beams

    def gen(source, beams, **options):
        beam_options = {"early_stopping": True, "length_penalty": 1.0} if beams > 1 else {}
        sequences = model.generate(source, num_beams=beams, do_sample=False, max_new_tokens=sizes.max_new_tokens,
                                   **beam_options, **options)
        return strip(sequences[0, 1:].tolist(), config)

    return {
        "greedy": {
            "generate": lambda s: gen(s, 1),
            "generate_static": lambda s: gen(s, 1, cache_implementation="static"),
            "hand": lambda s: strip(hand_greedy(model, s, None, sizes.max_new_tokens)[0].tolist(), config),
        },
        f"beam {beams}": {
            "generate": lambda s: gen(s, beams),
            "generate_static": lambda s: gen(s, beams, cache_implementation="static"),
            "hand": lambda s: strip(hand_beam_search(model, s, None, beams, sizes.max_new_tokens)[0], config),
        },
    }


def sentence_by_sentence(fns: dict[str, Callable], sources: list[torch.Tensor], device: str):
    """Every search's outputs and total seconds over ``sources``, the searches taking turns on each sentence so
    that a shared machine's load falls on all alike."""
    outputs, seconds = {name: [] for name in fns}, dict.fromkeys(fns, 0.0)
    for source in sources:
        for name, fn in fns.items():
            result, elapsed = timed(lambda: fn(source), device)
            outputs[name].append(result)
            seconds[name] += elapsed
    return outputs, seconds


def decoder_share(model, fns: dict[str, Callable], sources: list[torch.Tensor], device: str):
    """Every search's seconds inside the model's decoder calls (the same calls for every search) and in all, over
    ``sources``; the rest is the search's own work, the encoder and Python."""
    inside, total = dict.fromkeys(fns, 0.0), dict.fromkeys(fns, 0.0)
    for source in sources:
        for name, fn in fns.items():
            with decoder_calls(model, device) as made:
                total[name] += timed(lambda: fn(source), device)[1]
            inside[name] += sum(call.seconds for call in made)
    return inside, total


@torch.no_grad()
def measure_mode(model, label: str, mode: str, fns: dict[str, Callable], sources: list[torch.Tensor],
                 device: str) -> tuple[list[dict], dict[str, list[str]]]:
    """The table rows of one mode (``generate()`` with either cache against the hand loop), and profiles."""
    # An untimed first pass over every sentence: on a GPU the static cache's step is captured there as a CUDA graph
    # for each source length (its time is reported as first_pass_s).
    _, first_pass = sentence_by_sentence(fns, sources, device)
    outputs, seconds = sentence_by_sentence(fns, sources, device)
    inside, total = decoder_share(model, fns, sources[:SPLIT_SENTENCES], device)
    split_tokens = sum(len(o) + 1 for o in outputs["generate"][:SPLIT_SENTENCES])
    profiles = {f"{label}, {mode}, {name} (cProfile, own time)":
                profile_top(lambda: [fns[name](s) for s in sources[:4]]) for name in ("generate", "generate_static")}
    tokens_first = len(outputs["generate"][0]) + 1
    ops = {name: count_ops(lambda: fn(sources[0])) / tokens_first for name, fn in fns.items()}
    tokens = sum(len(o) + 1 for o in outputs["generate"])

    def ms_per(seconds: float, count: int, digits: int = 3) -> float:
        return round(seconds / count * 1e3, digits)

    rows = []
    for name, description in (("generate", "generate()"),
                              ("generate_static", "generate(cache_implementation='static')")):
        rows.append({"model": label, "mode": mode, "generate": description,
                     "generate_ms_per_sentence": ms_per(seconds[name], len(sources), 2),
                     "hand_loop_ms_per_sentence": ms_per(seconds["hand"], len(sources), 2),
                     "generate_speed_vs_hand_loop": round(seconds["hand"] / seconds[name], 3),
                     "generate_ms_per_output_token": ms_per(seconds[name], tokens),
                     "first_pass_s": round(first_pass[name], 2),
                     "generate_model_ms_per_token": ms_per(inside[name], split_tokens),
                     "generate_other_ms_per_token": ms_per(total[name] - inside[name], split_tokens),
                     "hand_loop_model_ms_per_token": ms_per(inside["hand"], split_tokens),
                     "hand_loop_other_ms_per_token": ms_per(total["hand"] - inside["hand"], split_tokens),
                     "generate_ops_per_token": round(ops[name], 1),
                     "hand_loop_ops_per_token": round(ops["hand"], 1),
                     "same_output": round(agreement(outputs[name], outputs["hand"]), 4)})
    return rows, profiles


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets, profiles = [], {}, [], {}
    for label, model, tokenizer, _ in trained_models(sizes, settings):
        sources = [torch.tensor([s], device=device) for s in english_test2016(tokenizer, sizes.batch1_sentences)]
        for mode, fns in searches(model, sizes).items():
            mode_rows, mode_profiles = measure_mode(model, label, mode, fns, sources, device)
            rows += mode_rows
            profiles.update(mode_profiles)
            targets += [target(f"{label}, {mode}, batch 1: {row['generate']} speed / hand loop speed",
                               row["generate_speed_vs_hand_loop"], minimum=0.9) for row in mode_rows]
        summary[label] = {f"{row['mode']}, {row['generate']}": row["generate_speed_vs_hand_loop"]
                          for row in rows if row["model"] == label}
    result = entry_result(
        "Batch-1 overhead: generate() vs a plain hand decoding loop on the same model",
        sizes, rows, summary, targets,
        notes=(f"{sizes.batch1_sentences} test2016 sentences one at a time, after an untimed first pass over them "
               "(first_pass_s); the hand loops call the model's forward with the default cache exactly as "
               "generate() does (benchmarks/beam_search.py). cache_implementation='static' keeps the recurrent state "
               "at fixed addresses, and on a GPU the model then replays its decoding steps as CUDA graphs; the hand "
               "loops use the default cache (no graphs). Ratio > 1: generate() faster. ops = aten operators "
               "called from Python per output token, on the first sentence. model_ms / other_ms per token: time "
               f"inside the model's decoder calls / outside them, on the first {SPLIT_SENTENCES} sentences in a "
               "separate pass (synchronized at each call)."),
    )
    result["profiles"] = profiles
    return result
