"""Entry 2, incremental decoding: time per new token after a prefix, with the cache vs recomputing the prefix.

For each prefix length the model first reads a random prefix, then greedily adds tokens three ways:
- ``cached``: a hand loop feeding only the newest token with the returned cache;
- ``generate``: ``model.generate()`` (which also uses the cache), per token = the time of ``n + 1`` new tokens
  minus the time of one, divided by ``n``, so that the prefill is not counted;
- ``recompute``: a hand loop re-running the whole sequence for every token (only the last position's logits
  are computed, the cheapest way to do without a cache).
The three must produce the same tokens; with the cache the time per token should not grow with the prefix.
"""

import dataclasses
import functools

import torch

from hf_seqmodels.models.modeling_utils import output_cache

from ..helpers.common import Settings, columns, entry_result, interleaved, ratio_spread, resolve_sizes, spread, target
from ..helpers.language_models import LMSizes, recurrent_lm, transformer_lm

SPLIT = []  # the data splits its figures come from (provenance): random prefixes


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    batch_size: int = 8
    prefix_lengths: tuple[int, ...] = (16, 64, 256, 1024)
    new_tokens: int = 32
    recompute_tokens: int = 3
    rounds: int = 7


SMOKE = Sizes(vocab_size=50, hidden_size=16, num_layers=1, batch_size=2, prefix_lengths=(4, 16), new_tokens=3,
              recompute_tokens=2, rounds=2)


def build_models(sizes: Sizes) -> dict[str, torch.nn.Module]:
    """The language models to measure, by name; each supports ``cache`` and ``logits_to_keep``."""
    max_positions = max(sizes.prefix_lengths) + sizes.new_tokens + sizes.recompute_tokens + 2
    return {
        f"recurrent LM ({sizes.cell_type})": recurrent_lm(sizes),
        "transformer LM": transformer_lm(sizes, max_positions),
    }


@torch.no_grad()
def prefill(model, prefix: torch.Tensor):
    """The model's output after reading ``prefix``: the cache and the logits of its last position."""
    return model(input_ids=prefix, use_cache=True, logits_to_keep=1)


@torch.no_grad()
def cached_loop(model, out, steps: int) -> torch.Tensor:
    """``steps`` greedy tokens after the output ``out`` of a prefill, feeding one token per step with the cache."""
    tokens = []
    for _ in range(steps):
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(token)
        out = model(input_ids=token, cache=output_cache(out), use_cache=True)
    return torch.cat(tokens, dim=1)


@torch.no_grad()
def recompute_loop(model, prefix: torch.Tensor, steps: int) -> torch.Tensor:
    """``steps`` greedy tokens after ``prefix``, re-reading the whole sequence every step."""
    ids = prefix
    for _ in range(steps):
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits
        ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids[:, prefix.shape[1]:]


@torch.no_grad()
def generate_greedy(model, prefix: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """Exactly ``new_tokens`` greedy tokens after ``prefix`` from one ``generate()`` call."""
    out = model.generate(
        prefix, attention_mask=torch.ones_like(prefix), do_sample=False, num_beams=1, max_new_tokens=new_tokens,
        min_new_tokens=new_tokens, pad_token_id=0, custom_generate=None,  # transformers' own loop
    )
    return out[:, prefix.shape[1]:]


def measure(model, sizes: Sizes, device: str) -> tuple[list[dict], dict[str, dict[int, list[float]]]]:
    """The table rows, one per prefix length, and the cached and recomputing loops' seconds per token in every
    round, by loop and prefix length."""
    generator = torch.Generator().manual_seed(0)
    prefixes = {length: torch.randint(1, sizes.vocab_size, (sizes.batch_size, length), generator=generator).to(device)
                for length in sizes.prefix_lengths}
    # The cached loop's per-token times are what the target compares across prefix lengths, and they are short
    # (well under a millisecond on a GPU): every loop of every length takes its turn in every round, so that clock or
    # load changes during the run fall on all of them alike. The cached loop's prefill is not timed.
    # generate()'s time per token: that of n + 1 new tokens minus that of one, over n (the prefill cancels).
    fns, prefills = {}, {}
    for length, prefix in prefixes.items():
        prefills[length, "cached"] = functools.partial(prefill, model, prefix)
        fns[length, "cached"] = functools.partial(cached_loop, model, steps=sizes.new_tokens)
        fns[length, "recompute"] = functools.partial(recompute_loop, model, prefix, sizes.recompute_tokens)
        fns[length, "generate_long"] = functools.partial(generate_greedy, model, prefix, sizes.new_tokens + 1)
        fns[length, "generate_short"] = functools.partial(generate_greedy, model, prefix, 1)
    timings = interleaved(fns, sizes.rounds, device, prepare=prefills)
    seconds = timings.seconds
    rows, cached_per_token, recompute_per_token = [], {}, {}
    for length in prefixes:
        cached = cached_per_token[length] = [value / sizes.new_tokens for value in seconds[length, "cached"]]
        recompute = recompute_per_token[length] = [value / sizes.recompute_tokens
                                                   for value in seconds[length, "recompute"]]
        generate = [max(long - short, 0.0) / sizes.new_tokens
                    for long, short in zip(seconds[length, "generate_long"], seconds[length, "generate_short"])]
        tokens = timings.last[length, "cached"]
        agree = bool(
            torch.equal(tokens[:, : sizes.recompute_tokens], timings.last[length, "recompute"])
            and torch.equal(tokens, timings.last[length, "generate_long"][:, : sizes.new_tokens])
        )
        rows.append({
            "prefix_length": length,
            **columns("cached_ms_per_token", spread([value * 1e3 for value in cached])),
            **columns("generate_ms_per_token", spread([value * 1e3 for value in generate])),
            **columns("recompute_ms_per_token", spread([value * 1e3 for value in recompute])),
            **columns("cache_speedup", ratio_spread([r / c for r, c in zip(recompute, cached)], 2)),
            "tokens_agree": agree,
        })
    return rows, {"cached": cached_per_token, "recompute": recompute_per_token}


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    torch.manual_seed(settings.seed)
    rows, summary, targets = [], {}, []
    for name, model in build_models(sizes).items():
        model.to(settings.device).eval()
        model_rows, per_token = measure(model, sizes, settings.device)
        first, last = model_rows[0], model_rows[-1]
        shortest, longest = first["prefix_length"], last["prefix_length"]
        # Per-round ratios for the loops timed as such; generate()'s per-token time is a difference of two timings
        # (under load it can come out as 0), so its growth is that of the medians.
        growth = {loop: ratio_spread([after / before for before, after in zip(times[shortest], times[longest])])
                  for loop, times in per_token.items()}
        before, after = first["generate_ms_per_token"], last["generate_ms_per_token"]
        growth["generate_of_medians"] = round(after / before, 3) if before > 0 else None
        summary[name] = {
            f"per_token_growth_{longest}_vs_{shortest}": growth,
            f"cache_speedup_at_{longest}": {"ratio": last["cache_speedup"], "quartiles": last["cache_speedup_iqr"]},
            "tokens_agree": all(row["tokens_agree"] for row in model_rows),
        }
        if name.startswith("recurrent"):
            targets.append(target(
                f"{name}: cached per-token time at prefix {longest} / at {shortest} (median of per-round ratios)",
                growth["cached"]["ratio"], maximum=1.5,
            ))
        rows += [{"model": name, **row} for row in model_rows]
    return entry_result(
        "Incremental decoding: time per new token after a prefix",
        sizes, rows, summary, targets,
        notes=(f"batch {sizes.batch_size}, greedy; 'generate' is model.generate() per token without the prefill. "
               f"{sizes.rounds} rounds, every loop at every prefix length taking its turn in each: times per token "
               "are medians over the rounds (_iqr: their quartiles); cache_speedup and the growths are medians of "
               "per-round ratios, with their quartiles."),
    )
