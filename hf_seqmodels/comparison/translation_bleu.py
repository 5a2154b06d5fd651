"""Translation quality: test2016 BLEU and chrF of the attention GRU and LSTM on Multi30k English -> German, each
trained by ``scripts/run_translation.py`` with its defaults within a stated time budget, for one or more seeds.

    python -m hf_seqmodels.comparison.translation_bleu      # GRU and LSTM, 9 training minutes each, seed 42
    python -m hf_seqmodels.comparison.translation_bleu --cells gru --time_budget_minutes 30 -- --num_train_epochs 8
    OMP_NUM_THREADS=1 python -m hf_seqmodels.comparison.translation_bleu --jobs 2 --time_budget_minutes 30 \
        --seeds 43 44 -- --num_train_epochs 3              # two more seeds of the README's 3-epoch row
    python -m hf_seqmodels.comparison.translation_bleu --out /tmp/b -- --max_train_samples 500 \
        --max_train_steps 5                                # smoke

Each model and seed gets its own folder under ``--out`` (replacing that of an earlier run): seed 42's is
``multi30k-attention-<cell>``, the folder the speed benchmarks time (``BLEU_MODEL_DIR`` of
``benchmarks/helpers/translation_model.py``), another seed's ``multi30k-attention-<cell>-seed<seed>``. The raw
results (``translation_bleu.json``, one row per model and seed, each recording its ``recipe``: `recipe_of`) keep the
rows of the seeds not run this time, so that seeds can be added run by run; the table (``translation_bleu.md``)
gives each model's mean and sample standard deviation over its seeds, then every run. Arguments after ``--`` go to
run_translation.py unchanged. Numbers depend on the machine and on what else runs on it:
each row records the device, threads and wall times of its run.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from ..data.paths import REPO_ROOT
from ..provenance import cpu_name
from .aggregate import mean_sd
from .report import mean_sd_cell

RUN_TRANSLATION = REPO_ROOT / "scripts" / "run_translation.py"
CELLS = ("rnn", "gru", "lstm")  # in the order of the tables
FOLDER_SEED = 42  # run_translation.py's default seed: its runs keep the folder names the speed benchmarks read


def seed_folder(folder: Path, seed: int) -> Path:
    """Where a training run of ``seed`` goes: ``folder`` itself for ``FOLDER_SEED``, else ``<folder>-seed<seed>``."""
    return folder if seed == FOLDER_SEED else folder.with_name(f"{folder.name}-seed{seed}")


def build_parser() -> argparse.ArgumentParser:
    """This command's options (a row written before rows recorded their ``recipe`` is read back with them:
    `recipe`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", nargs="+", default=["gru", "lstm"], choices=CELLS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[FOLDER_SEED], help="a run per model and seed")
    parser.add_argument("--time_budget_minutes", type=float, default=9.0)
    parser.add_argument("--config_overrides", default="", help="more config fields, e.g. 'hidden_size=512'")
    parser.add_argument("--out", default=str(REPO_ROOT / "results"))
    parser.add_argument("--jobs", type=int, default=1, help="models trained at once (their times then include the "
                                                              "contention)")
    parser.add_argument("extra", nargs="*", help="arguments for run_translation.py (after --)")
    return parser


def main():
    args = build_parser().parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU {cpu_name()}"
    machine = f"{device}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads"
    if args.jobs > 1:
        machine += f", {args.jobs} models trained at once"

    def train(cell: str, seed: int) -> dict:
        folder = seed_folder(out / f"multi30k-attention-{cell}", seed)
        overrides = ",".join(filter(None, [f"cell_type={cell}", args.config_overrides]))
        command = [sys.executable, str(RUN_TRANSLATION), "--output_dir", str(folder), "--config_overrides", overrides,
                   "--time_budget_minutes", str(args.time_budget_minutes), "--seed", str(seed),
                   "--overwrite_output_dir", *args.extra]
        subprocess.run(command, check=True, cwd=REPO_ROOT)
        results = json.loads((folder / "results.json").read_text())
        row = {"cell_type": cell, "seed": seed,
               **{k: v for k, v in results.items() if k != "eval_history"},
               "config_overrides": results["arguments"]["config_overrides"], "machine": machine,
               # the saved model's configuration: what a card of this run states (family, sizes, attention)
               "config": json.loads((folder / "config.json").read_text()),
               "command": shlex.join(["python", "-m", "hf_seqmodels.comparison.translation_bleu", *sys.argv[1:]])}
        return {**row, "recipe": recipe_of(args, row)}

    runs = [(cell, seed) for seed in args.seeds for cell in args.cells]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda run: train(*run), runs))
    rows = [row for row in _earlier_rows(out / "translation_bleu.json") if (row["cell_type"], row["seed"]) not in
            runs] + rows
    rows.sort(key=lambda row: (CELLS.index(row["cell_type"]), row["seed"]))
    (out / "translation_bleu.json").write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    table = markdown(rows)
    (out / "translation_bleu.md").write_text(table)
    print(table)


EPOCHS = "--num_train_epochs"  # a recipe counts the epochs a run records, not the option as typed


def recipe_of(args: argparse.Namespace, row: dict, unparsed: tuple[str, ...] = ()) -> dict:
    """What the run of ``row`` was given (this command's ``args``) and did, as the row records it (``recipe``): its
    ``config_overrides`` and run_translation.py arguments (those after ``--``, less ``--num_train_epochs``: the
    epochs the run records count instead, so that ``--num_train_epochs 3``, the default, and no such argument are
    one recipe), its epochs and updates, and the time budget only where it stopped the run. The seeds, ``--jobs``
    and ``--out`` are no part of it. Rows of the same recipe are seeds of one model (the main job's card averages
    them)."""
    return {"config_overrides": row.get("config_overrides"),
            "time_budget_minutes": args.time_budget_minutes if row.get("stopped_by_time_budget", True) else None,
            "run_translation_arguments": [*without_epochs(args.extra), *unparsed],
            "epochs": row.get("epochs"), "steps": row.get("steps")}


def recipe(row: dict) -> dict | None:
    """A row's `recipe_of`: the one it recorded when it was written, else (a row written before rows recorded it)
    read back from its ``command`` with this command's options (`build_parser`); None for a row with neither."""
    if "recipe" in row:
        return row["recipe"]
    if not row.get("command"):
        return None
    words = shlex.split(row["command"])
    args, unparsed = build_parser().parse_known_args(words[words.index("-m") + 2:] if "-m" in words else words[1:])
    return recipe_of(args, row, tuple(unparsed))


def without_epochs(arguments: list[str]) -> list[str]:
    """``arguments`` less ``--num_train_epochs N`` (or ``=N``)."""
    kept, skip = [], False
    for word in arguments:
        if skip:
            skip = False
        elif word == EPOCHS:
            skip = True
        elif not word.startswith(EPOCHS + "="):
            kept.append(word)
    return kept


def _earlier_rows(path: Path) -> list[dict]:
    """The rows of an earlier results file; a file from before the seeds were recorded held seed 42's runs, with
    its machine beside the rows."""
    if not path.is_file():
        return []
    earlier = json.loads(path.read_text())
    return [{"seed": FOLDER_SEED, "machine": earlier.get("machine"), **row} for row in earlier["rows"]]


def markdown(rows: list[dict]) -> str:
    """Each model's mean ± sample standard deviation over its seeds, then every run."""
    lines = ["Multi30k En->De test2016, sacreBLEU (13a, cased) on detokenized text, beam search; mean ± sample "
             "standard deviation (n-1) over the seeds, then every run with its machine.", "",
             "| model | seeds | test BLEU | test chrF | valid BLEU (greedy) | epochs | train min |",
             "|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys(row["cell_type"] for row in rows):
        runs = [row for row in rows if row["cell_type"] == cell]
        lines.append(f"| attention {cell.upper()} | {', '.join(str(row['seed']) for row in runs)} | "
                     + " | ".join(mean_sd_cell(mean_sd([row[key] for row in runs]), digits=2)
                                  for key in ("test_bleu", "test_chrf", "eval_bleu", "epochs"))
                     + f" | {mean_sd_cell(mean_sd([row['train_runtime_s'] / 60 for row in runs]), digits=2)} |")
    lines += ["", "| model | seed | params | epochs | train min | test BLEU | test chrF | beams | valid BLEU "
              "(greedy) | wall min | machine |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| attention {row['cell_type'].upper()} | {row['seed']} | {row['num_parameters'] / 1e6:.1f}M | "
            f"{row['epochs']:.2f} | {row['train_runtime_s'] / 60:.1f} | {row['test_bleu']:.2f} | "
            f"{row['test_chrf']:.2f} | {row['test_num_beams']} | {row['eval_bleu']:.2f} | "
            f"{row['wall_time_s'] / 60:.1f} | {row['machine']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
