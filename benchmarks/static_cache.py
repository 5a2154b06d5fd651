"""Entry ``static_cache``: the recurrent LM's ``generate()`` with ``cache_implementation="static"`` (on a GPU every
decoding step replayed as one CUDA graph, ``hf_seqmodels/models/step_graphs.py``) vs the default cache, on the
same weights and prompts: time per call, and whether the sequences and scores agree. On a CPU there are no graphs;
the static cache then only writes the state in place. The attention seq2seq's static cache is measured by the
``translation`` and ``batch1_overhead`` entries."""

import dataclasses

import torch

from .common import Settings, entry_result, resolve_sizes, time_call
from .models import LMSizes, recurrent_lm


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    cell_types: tuple[str, ...] = ("lstm", "gru")
    batch_sizes: tuple[int, ...] = (1, 16)
    beams: tuple[int, ...] = (1, 5)
    prompt_length: int = 12
    new_tokens: int = 40
    repeats: int = 5


SMOKE = Sizes(cell_types=("gru",), vocab_size=50, hidden_size=16, num_layers=1, batch_sizes=(2,), beams=(1, 2),
              prompt_length=4, new_tokens=3, repeats=1)


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
                outputs, seconds = {}, {}
                for name, options in (("default", {}), ("static", {"cache_implementation": "static"})):
                    def call(options=options, name=name):
                        outputs[name] = model.generate(prompts.to(device), **search, **options)
                    seconds[name] = time_call(call, device, sizes.repeats)  # the warm-up call captures the graphs
                same = torch.equal(outputs["default"].sequences, outputs["static"].sequences)
                score_gap = max((a - b).abs().max().item()
                                for a, b in zip(outputs["default"].scores, outputs["static"].scores, strict=True))
                rows.append({"model": label, "batch_size": batch, "num_beams": beams,
                             "default_ms": round(seconds["default"] * 1e3, 2),
                             "static_ms": round(seconds["static"] * 1e3, 2),
                             "static_speedup": round(seconds["default"] / seconds["static"], 3),
                             "same_sequences": same, "max_score_difference": score_gap})
        summary[label] = {f"batch {row['batch_size']}, beams {row['num_beams']}": row["static_speedup"]
                          for row in rows if row["model"] == label}
    return entry_result(
        "Recurrent LM generate(): cache_implementation='static' (CUDA graph steps) vs the default cache",
        sizes, rows, summary, [],
        notes=(f"{sizes.new_tokens} new tokens after random prompts of {sizes.prompt_length}, random weights; median "
               f"of {sizes.repeats} calls after one untimed call (which captures the graphs). static_speedup > 1: "
               "the static cache is faster."),
    )
