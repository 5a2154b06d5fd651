"""Entry 4, scaling: time and peak memory of one training step as the batch and the sequence length grow.

Each model takes forward + backward + Adam steps on random full-length sequences (no padding), first at a fixed
length for several batch sizes, then at a fixed batch size for several lengths. The runner's plot puts both on
log-log axes: a slope of 1 means linear growth.
"""

import dataclasses
import functools
from pathlib import Path

import torch

from ..helpers.common import (
    Settings, columns, entry_result, interleaved, mb, peak_memory_bytes, rate, resolve_sizes, spread,
)
from ..helpers.language_models import LMSizes, recurrent_lm, transformer_lm
from ..helpers.tutorial import TutorialCellLM

SPLIT = []  # the data splits its figures come from (provenance): random tokens


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    batch_sizes: tuple[int, ...] = (4, 8, 16, 32, 64)
    fixed_length: int = 32
    lengths: tuple[int, ...] = (16, 32, 64, 128, 256)
    fixed_batch_size: int = 8
    rounds: int = 5


SMOKE = Sizes(vocab_size=50, hidden_size=16, num_layers=1, batch_sizes=(1, 2), fixed_length=4, lengths=(4, 8),
              fixed_batch_size=2, rounds=2)


def train_step(model, loss_fn, optimizer, ids: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss_fn(ids).backward()
    optimizer.step()


def build_models(sizes: Sizes, device: str) -> dict:
    """name -> (model, loss of input ids); every model is a causal LM over the same vocabulary and width."""
    ours = recurrent_lm(sizes).to(device)
    tutorial = TutorialCellLM.from_recurrent_lm(ours)
    transformer = transformer_lm(sizes, max(max(sizes.lengths), sizes.fixed_length)).to(device)
    return {
        f"recurrent LM ({sizes.cell_type})": (ours, lambda ids: ours(input_ids=ids, labels=ids).loss),
        f"tutorial {sizes.cell_type} cell loop": (tutorial, lambda ids: tutorial(ids, ids)[1]),
        "transformer LM": (transformer, lambda ids: transformer(input_ids=ids, labels=ids).loss),
    }


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    torch.manual_seed(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    grid = [("batch_size", batch, sizes.fixed_length) for batch in sizes.batch_sizes]
    grid += [("length", sizes.fixed_batch_size, length) for length in sizes.lengths]
    models = build_models(sizes, device)
    optimizers = {name: torch.optim.Adam(model.parameters(), lr=1e-4) for name, (model, _) in models.items()}
    rows = []
    for axis, batch, length in grid:
        ids = torch.randint(0, sizes.vocab_size, (batch, length), generator=generator).to(device)
        steps = {name: functools.partial(train_step, model.train(), loss_fn, optimizers[name], ids)
                 for name, (model, loss_fn) in models.items()}
        timings = interleaved(steps, sizes.rounds, device)
        for name in models:
            optimizers[name].zero_grad(set_to_none=True)  # so that the measured step starts without gradients
            ms = spread([seconds * 1e3 for seconds in timings.seconds[name]], 2)
            rows.append({"model": name, "varied": axis, "batch_size": batch, "length": length,
                         **columns("ms_per_step", ms), **columns("tokens_per_s", rate(ids.numel(), timings, name, 1)),
                         "peak_memory_mb": mb(peak_memory_bytes(steps[name], device))})
    rows.sort(key=lambda row: list(models).index(row["model"]))  # one model after the other in the table
    summary = {}
    for name in dict.fromkeys(row["model"] for row in rows):
        for axis in ("batch_size", "length"):
            points = [row for row in rows if row["model"] == name and row["varied"] == axis]
            first, last = points[0], points[-1]
            growth = last[axis] / first[axis]
            summary[f"{name}: x{growth:g} {axis}"] = {
                "time_growth": round(last["ms_per_step"] / first["ms_per_step"], 2),
                "memory_growth": round(last["peak_memory_mb"] / max(first["peak_memory_mb"], 1e-9), 2),
            }
    result = entry_result(
        "Scaling: one training step vs batch size and sequence length",
        sizes, rows, summary, targets=[],
        notes=f"forward + backward + Adam on random tokens without padding; batch sizes at length "
              f"{sizes.fixed_length}, lengths at batch {sizes.fixed_batch_size}. At each point the models take turns "
              f"for {sizes.rounds} rounds after a warm-up: times and throughputs are medians over the rounds (_iqr: "
              "their quartiles); the growths are those of the medians.",
    )
    result["figures"] = [plot(rows, settings.out_dir / "benchmarks_scaling.png").name]
    return result


def plot(rows: list[dict], path: Path) -> Path:
    """Two columns (batch size, length) by two rows (time, peak memory), log-log, one line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(2, 2, figsize=(9, 6.5), constrained_layout=True)
    models = list(dict.fromkeys(row["model"] for row in rows))
    for column, axis in enumerate(("batch_size", "length")):
        for line, metric in enumerate(("ms_per_step", "peak_memory_mb")):
            ax = axes[line][column]
            for model in models:
                points = [row for row in rows if row["model"] == model and row["varied"] == axis]
                ax.plot([p[axis] for p in points], [p[metric] for p in points], marker="o", label=model)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(sorted({p[axis] for p in rows if p["varied"] == axis}), minor=False)
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(axis.replace("_", " "))
            ax.set_ylabel({"ms_per_step": "ms per training step", "peak_memory_mb": "peak memory (MB)"}[metric])
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle("Training step: time and peak memory")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
