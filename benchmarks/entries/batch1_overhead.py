"""Entry ``batch1_overhead``: at batch 1, ``generate()`` (greedy and beam, with the default and the static cache, and
with our decoding loop: ``custom_generate=decode``) vs plain hand loops on the same model
(``benchmarks/helpers/translation_model.py``'s, the one whose BLEU is reported): a hand greedy loop and the hand
beam loop with the sentence's beams in one decoder call per step (``benchmarks/helpers/beam_search.py``, as JoeyNMT /
OpenNMT decode at batch 1). Each search translates every sentence once per round, the searches taking turns on each
sentence, after an untimed first pass; speeds are medians and quartiles over the rounds, ratios those of each round's
pair. Also: the time split into the model's decoder calls and the rest, aten operators per token, and a profile of where
``generate()`` spends its time.
"""

import cProfile
import io
import pstats
from collections.abc import Callable

import torch

from hf_seqmodels.models.decoding import decode

from ..helpers.beam_search import agreement, counts, encode, hand_beam_search, hand_greedy, strip
from ..helpers.common import (
    Settings, columns, count_ops, entry_result, first_pass_then_rounds_by_item, paired_ratio, ratio_spread,
    resolve_sizes, spread, target, timed,
)
from ..helpers.decoder_calls import decoder_calls
from ..helpers.translation_model import SMOKE, Sizes, english_test2016, origin_note, timed_models, timed_sizes

SPLIT = ["test"]  # the data splits its figures come from (provenance): Multi30k test2016 sentences


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


# The searches compared with the hand loop, as the table names them.
ROWS = {"generate": "generate()", "generate_static": "generate(cache_implementation='static')",
        "ours": "generate(custom_generate=decode)",
        "ours_static": "generate(custom_generate=decode, cache_implementation='static')"}
SEARCHES = (*ROWS, "hand")
SPLIT_SENTENCES = 8  # the first sentences, for the split of the time inside and outside the decoder calls
# The targets. On a GPU, beam search at batch 1 through our loop with the CUDA graphs (the static cache): at least
# twice the hand loop's speed, since replaying a step as one graph saves the kernel launches the hand loop makes.
# Every other row: at least the hand loop's speed.
GPU_GRAPHED_BEAM_SPEEDUP = 2.0


def wanted_speedup(device: str, mode: str, row: str) -> float:
    graphed_beam = device.startswith("cuda") and mode.startswith("beam") and row == ROWS["ours_static"]
    return GPU_GRAPHED_BEAM_SPEEDUP if graphed_beam else 1.0


def returns_at_once(model, input_ids, *args, **kwargs):
    """A decoding loop for generate() that takes no step: generate() with it costs its own set-up and the encoder."""
    return input_ids


def searches(model, sizes: Sizes) -> dict[str, dict[str, Callable[[torch.Tensor], list[int]]]]:
    """By mode (greedy, beam), the searches compared on one source ``(1, length)``, each returning its tokens, and
    the two calls whose difference is generate()'s set-up: ``setup`` (generate() with a loop that takes no step)
    and ``encoder``."""
    config, beams = model.config, sizes.num_beams

    def gen(source, beams, **options):
        beam_options = {"early_stopping": True, "length_penalty": 1.0} if beams > 1 else {}
        sequences = model.generate(source, num_beams=beams, do_sample=False, max_new_tokens=sizes.max_new_tokens,
                                   **beam_options, **options)
        return strip(sequences[0, 1:].tolist(), config)

    return {
        "greedy": {
            "generate": lambda s: gen(s, 1, custom_generate=None),  # transformers' own loop
            "generate_static": lambda s: gen(s, 1, custom_generate=None, cache_implementation="static"),
            "ours": lambda s: gen(s, 1, custom_generate=decode),
            "ours_static": lambda s: gen(s, 1, custom_generate=decode, cache_implementation="static"),
            "hand": lambda s: strip(hand_greedy(model, s, None, sizes.max_new_tokens)[0].tolist(), config),
            "setup": lambda s: gen(s, 1, custom_generate=returns_at_once),
            "encoder": lambda s: encode(model, s, None),
        },
        f"beam {beams}": {
            "generate": lambda s: gen(s, beams, custom_generate=None),
            "generate_static": lambda s: gen(s, beams, custom_generate=None, cache_implementation="static"),
            "ours": lambda s: gen(s, beams, custom_generate=decode),
            "ours_static": lambda s: gen(s, beams, custom_generate=decode, cache_implementation="static"),
            "hand": lambda s: strip(hand_beam_search(model, s, None, beams, sizes.max_new_tokens)[0], config),
            "setup": lambda s: gen(s, beams, custom_generate=returns_at_once),
            "encoder": lambda s: encode(model, s, None),
        },
    }


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
def measure_mode(model, label: str, mode: str, fns: dict[str, Callable], sources: list[torch.Tensor], device: str,
                 rounds: int) -> tuple[list[dict], dict[str, list[str]]]:
    """The table rows of one mode (``generate()`` with either cache against the hand loop), and profiles."""
    # The untimed first pass over every sentence: on a GPU the static cache's step is captured there as a CUDA graph
    # for each source length (its time is reported as first_pass_s).
    first_pass, timings = first_pass_then_rounds_by_item(fns, sources, rounds, device)
    outputs = timings.last
    rounds_s = timings.seconds
    setup = [with_setup - encoder for with_setup, encoder in zip(rounds_s["setup"], rounds_s["encoder"], strict=True)]
    searched = {name: fns[name] for name in SEARCHES}  # not the two set-up calls
    inside, total = decoder_share(model, searched, sources[:SPLIT_SENTENCES], device)
    split_tokens = sum(len(o) + 1 for o in outputs["generate"][:SPLIT_SENTENCES])
    profiles = {f"{label}, {mode}, {name} (cProfile, own time)":
                profile_top(lambda: [fns[name](s) for s in sources[:4]]) for name in ROWS}
    tokens_first = len(outputs["generate"][0]) + 1
    ops = {name: count_ops(lambda: fn(sources[0])) / tokens_first for name, fn in searched.items()}
    tokens = sum(len(o) + 1 for o in outputs["generate"])

    def ms_per(seconds: float, count: int, digits: int = 3) -> float:
        return round(seconds / count * 1e3, digits)

    def ms_per_sentence(round_seconds: list[float]) -> dict:
        return spread([seconds / len(sources) * 1e3 for seconds in round_seconds], 2)

    rows = []
    for name, description in ROWS.items():
        rows.append({"model": label, "mode": mode, "generate": description,
                     **columns("generate_ms_per_sentence", ms_per_sentence(rounds_s[name])),
                     **columns("hand_loop_ms_per_sentence", ms_per_sentence(rounds_s["hand"])),
                     **columns("generate_speed_vs_hand_loop", paired_ratio(timings, "hand", name)),
                     **columns("generate_setup_ms_per_sentence", ms_per_sentence(setup)),
                     **columns("speed_vs_hand_loop_without_setup", ratio_spread(
                         [hand / (ours - round_setup) for hand, ours, round_setup
                          in zip(rounds_s["hand"], rounds_s[name], setup, strict=True)])),
                     "generate_ms_per_output_token": ms_per(timings.median(name), tokens),
                     "first_pass_s": round(first_pass[name], 2),
                     "generate_model_ms_per_token": ms_per(inside[name], split_tokens),
                     "generate_other_ms_per_token": ms_per(total[name] - inside[name], split_tokens),
                     "hand_loop_model_ms_per_token": ms_per(inside["hand"], split_tokens),
                     "hand_loop_other_ms_per_token": ms_per(total["hand"] - inside["hand"], split_tokens),
                     "generate_ops_per_token": round(ops[name], 1),
                     "hand_loop_ops_per_token": round(ops["hand"], 1),
                     "same_output": round(agreement(outputs[name], outputs["hand"]), 4),
                     "counts": counts(outputs[name], outputs["hand"])})
    return rows, profiles


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets, profiles, models = [], {}, [], {}, []
    for timed_model in timed_models(sizes, settings):
        models.append(timed_model)
        label, model = timed_model.label, timed_model.model
        sources = [torch.tensor([s], device=device)
                   for s in english_test2016(timed_model.tokenizer, sizes.batch1_sentences)]
        for mode, fns in searches(model, sizes).items():
            mode_rows, mode_profiles = measure_mode(model, label, mode, fns, sources, device, sizes.rounds)
            rows += mode_rows
            profiles.update(mode_profiles)
            targets += [target(f"{label}, {mode}, batch 1: {row['generate']} speed / hand loop speed (median of "
                               "per-round ratios)", row["generate_speed_vs_hand_loop"],
                               minimum=wanted_speedup(device, mode, row["generate"]))
                        for row in mode_rows]
        summary[label] = {"model": timed_model.origin,
                          **{f"{row['mode']}, {row['generate']}": {"ratio": row["generate_speed_vs_hand_loop"],
                                                                    "quartiles": row["generate_speed_vs_hand_loop_iqr"]}
                             for row in rows if row["model"] == label}}
    result = entry_result(
        "Batch-1 overhead: generate() vs a plain hand decoding loop on the same model",
        sizes, rows, summary, targets,
        notes=(f"{origin_note(models)} {sizes.batch1_sentences} test2016 sentences one at a time, every search "
               "translating each of them in turn (the order reversed from one sentence to the next), all of them "
               f"once per round, {sizes.rounds} rounds after an untimed first pass (first_pass_s); ms_per_sentence "
               "is the median over the rounds (_iqr: its quartiles), "
               "generate_speed_vs_hand_loop the median of the per-round ratios hand loop time / generate() time "
               "(> 1: generate() faster), with its quartiles; a row whose outputs differ from the hand loop's does "
               "not count (column counts). The hand loops (a greedy loop, and a beam loop with "
               "the sentence's beams in one decoder call per step) call the model's forward with the default cache "
               "exactly as generate() does (benchmarks/helpers/beam_search.py). cache_implementation='static' keeps "
               "the recurrent state at fixed addresses, and on a GPU the model then replays its decoding steps as CUDA "
               "graphs; the hand loops use the default cache (no graphs). custom_generate=decode: our decoding "
               "loop (hf_seqmodels/models/decoding.py), which after the first step calls the model's decoding_step "
               "(forward without its per-call checks and output objects); with cache_implementation='static' it "
               "keeps the static cache (one sentence leaves no rows to drop), and so the CUDA graphs on a GPU. ops = "
               "aten operators called from Python per output token, on the first sentence. model_ms / other_ms per "
               f"token: time inside the model's decoder calls / outside them, on the first {SPLIT_SENTENCES} "
               "sentences in a separate pass (synchronized at each call). generate_setup_ms_per_sentence: generate()'s "
               "own work per call outside the decoding loop and the encoder (configuration copy and checks, logits "
               "processors, stopping criteria, cache), which every loop behind generate() pays, ours included: "
               "per round, generate() with a loop that returns at once (returns_at_once) less the encoder called "
               "alone, both timed in the rounds; speed_vs_hand_loop_without_setup: the per-round ratio with that "
               "set-up taken out of the row's time, i.e. its decoding loop against the hand loop."),
    )
    result["sizes"] = timed_sizes(sizes, models)
    result["profiles"] = profiles
    return result
