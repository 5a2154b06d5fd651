"""Entry ``static_cache``: the recurrent LM's ``generate()`` with ``cache_implementation="static"`` (on a GPU every
decoding step replayed as one CUDA graph, ``StepGraphStore`` in ``hf_seqmodels/models/cuda_graphs.py``) vs the default cache,
on the same weights and prompts: time per call, and whether the sequences and scores agree. On a CPU there are no
graphs; the static cache then only writes the state in place. The attention seq2seq's static cache is measured by the
``translation`` and ``batch1_overhead`` entries."""

import dataclasses
import functools

import torch

from ..helpers.common import (
    Settings, columns, entry_result, first_pass_then_rounds, paired_ratio, resolve_sizes, spread,
)
from ..helpers.language_models import LMSizes, recurrent_lm

SPLIT = []  # the data splits its figures come from (provenance): random prompts


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    cell_types: tuple[str, ...] = ("lstm", "gru")
    batch_sizes: tuple[int, ...] = (1, 16)
    beams: tuple[int, ...] = (1, 5)
    prompt_length: int = 12
    new_tokens: int = 40
    rounds: int = 5


SMOKE = Sizes(cell_types=("gru",), vocab_size=50, hidden_size=16, num_layers=1, batch_sizes=(2,), beams=(1, 2),
              prompt_length=4, new_tokens=3, rounds=2)


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary = [], {}
    generator = torch.Generator().manual_seed(settings.seed)
    for cell_type in sizes.cell_types:
        torch.manual_seed(settings.seed)
        model = recurrent_lm(dataclasses.replace(sizes, cell_type=cell_type)).to(device).eval()
        label = f"recurrent LM ({cell_type})"
        for batch in sizes.batch_sizes:
            prompts = torch.randint(1, sizes.vocab_size, (batch, sizes.prompt_length), generator=generator)
            for beams in sizes.beams:
                search = {"max_new_tokens": sizes.new_tokens, "min_new_tokens": sizes.new_tokens, "num_beams": beams,
                          "do_sample": False, "output_scores": True, "return_dict_in_generate": True}
                ids = prompts.to(device)
                _, timings = first_pass_then_rounds(  # the first call captures the CUDA graphs
                    {"default": functools.partial(model.generate, ids, **search),
                     "static": functools.partial(model.generate, ids, **search, cache_implementation="static")},
                    sizes.rounds, device)
                outputs = timings.last
                same = torch.equal(outputs["default"].sequences, outputs["static"].sequences)
                score_gap = max((a - b).abs().max().item()
                                for a, b in zip(outputs["default"].scores, outputs["static"].scores, strict=True))
                ms = {name: spread([seconds * 1e3 for seconds in timings.seconds[name]], 2) for name in outputs}
                rows.append({"model": label, "batch_size": batch, "num_beams": beams,
                             **columns("default_ms", ms["default"]), **columns("static_ms", ms["static"]),
                             **columns("static_speedup", paired_ratio(timings, "default", "static")),
                             "same_sequences": same, "max_score_difference": score_gap})
        summary[label] = {f"batch {row['batch_size']}, beams {row['num_beams']}":
                          {"ratio": row["static_speedup"], "quartiles": row["static_speedup_iqr"]}
                          for row in rows if row["model"] == label}
    return entry_result(
        "Recurrent LM generate(): cache_implementation='static' (CUDA graph steps) vs the default cache",
        sizes, rows, summary, [],
        notes=(f"{sizes.new_tokens} new tokens after random prompts of {sizes.prompt_length}, random weights; "
               f"{sizes.rounds} rounds, the two caches taking turns, after one untimed call of each (which captures "
               "the graphs): times are medians over the rounds (_iqr: their quartiles), static_speedup the median "
               "of the per-round ratios default / static (> 1: the static cache is faster), with its quartiles."),
    )
