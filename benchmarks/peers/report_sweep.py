"""The sweep's section of results/peers.md (and of the Transformer's peers_transformer.md): every configuration
tried, by toolkit, with its validation BLEU at each length penalty, the choice marked (`benchmarks.peers.sweep`)."""

from tools.render.figures import Table

from .architectures import RNN, Architecture
from .invocations import described


def sweep_section(sweep: dict, architecture: Architecture = RNN) -> list[str]:
    """The section's lines for ``architecture``'s sweep: what was run, then a table of every configuration stored
    (those still to run named)."""
    # the grid's length penalties, then any a row went on to beyond an edge where its best sat
    grid = [f"{alpha:g}" for alpha in sweep["length_penalties"]]
    alphas = sorted(set(grid).union(*(run["validation"] for run in sweep["runs"])), key=float)
    chosen = {(name, choice["configuration"]): choice["length_penalty"] for name, choice in sweep["chosen"].items()}
    rows = []
    for run in sweep["runs"]:
        key = (run["toolkit"], run["configuration"])
        cells = (("not decoded" if alpha in grid else "") if alpha not in run["validation"] else
                 f"**{run['validation'][alpha]['bleu']:.2f}**" if key in chosen and float(alpha) == chosen[key]
                 else f"{run['validation'][alpha]['bleu']:.2f}" for alpha in alphas)
        rows.append((run["toolkit"], run["configuration"], run["schedule_words"], f"{run['tuning']['learning_rate']:g}",
                     *cells, f"{run['train']['parameters']:,}"))
    missing = [f"{name} {tuning.name}" for name, tunings in architecture.sweep.items() for tuning in tunings
               if not any((run["toolkit"], run["configuration"]) == (name, tuning.name) for run in sweep["runs"])]
    recipe = sweep["recipe"]
    lines = [
        f"## Each toolkit at its best: the sweep (results/{architecture.sweep_results})",
        "",
        f"The same number of configurations per toolkit ({len(next(iter(architecture.sweep.values())))}: its peak "
        f"learning rates by its own schedules, {architecture.recipes}), each trained once (seed "
        f"{sweep['seed']}, {recipe['updates']} updates of {recipe['batch_size']} sentences), then the validation set "
        f"decoded with beam {sweep['decoding']['num_beams']} at every length penalty (each toolkit's own formula), and a "
        "step beyond the last where a row's best sat on an edge, until it lay inside; "
        "the highest validation BLEU (bold) is the toolkit's choice, trained on three seeds and scored on test "
        f"above. BLEU `{sweep['signature']}`. {sweep['provenance']['machine']['cpu']}, one thread per run, "
        f"{sweep['jobs']} at a time. "
        f"{described(sweep['runs'], configuration_of, sweep)}",
        "",
        *Table(("toolkit", "configuration", "schedule", "peak learning rate",
                *(f"validation BLEU, length penalty {alpha}" for alpha in alphas), "parameters"),
               rows).render().split("\n"),
    ]
    if again := reproduced(sweep["runs"]):
        lines += ["", again]
    if missing:
        lines += ["", "Not run yet: " + ", ".join(missing) + "."]
    return lines


def configuration_of(run: dict) -> str:
    return f"{run['toolkit']} {run['configuration']}"


def reproduced(runs: list[dict]) -> str | None:
    """What the runs trained a second time (their model gone, `sweep.pending`) say of reproducibility: whether each
    gave the validation BLEU of its first run at every length penalty both decoded; None when none was."""
    again = [run for run in runs if "earlier_validation_bleu" in run]
    if not again:
        return None
    differ = [f"{run['toolkit']} {run['configuration']}" for run in again
              if any(abs(run["validation"][alpha]["bleu"] - bleu) > 1e-9
                     for alpha, bleu in run["earlier_validation_bleu"].items())]
    verdict = ("each gave its first run's validation BLEU at every length penalty both decoded, to the last digit"
               if not differ else "differing from their first run: " + ", ".join(differ))
    names = ", ".join(f"{run['toolkit']} {run['configuration']}" for run in again)
    return (f"Trained twice (seed {again[0]['seed']}, the same recipe; the first run's model was gone, on another "
            f"machine): {names}; {verdict}.")
