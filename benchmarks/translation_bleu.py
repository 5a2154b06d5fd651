"""Translation quality: test2016 BLEU and chrF of the attention GRU and LSTM on Multi30k English -> German, each
trained by ``scripts/run_translation.py`` with its defaults within a stated time budget.

    python -m benchmarks.translation_bleu                          # GRU and LSTM, 9 training minutes each
    python -m benchmarks.translation_bleu --cells gru --time_budget_minutes 30 -- --num_train_epochs 8
    python -m benchmarks.translation_bleu --out /tmp/b -- --max_train_samples 500 --max_train_steps 5  # smoke

Each model gets its own folder under ``--out`` (replacing that of an earlier run); the table
(``translation_bleu.md``) and the raw results (``translation_bleu.json``) go there too. Arguments after ``--`` go to
run_translation.py unchanged. Numbers depend on the machine and on what else runs on it: the table records the
device, threads and wall times.
"""

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from .run import machine_info

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_TRANSLATION = REPO_ROOT / "scripts" / "run_translation.py"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", nargs="+", default=["gru", "lstm"], choices=["rnn", "gru", "lstm"])
    parser.add_argument("--time_budget_minutes", type=float, default=9.0)
    parser.add_argument("--config_overrides", default="", help="more config fields, e.g. 'hidden_size=512'")
    parser.add_argument("--out", default=str(REPO_ROOT / "results"))
    parser.add_argument("--jobs", type=int, default=1, help="models trained at once (on a GPU; their times then "
                                                              "include the contention)")
    parser.add_argument("extra", nargs="*", help="arguments for run_translation.py (after --)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def train(cell: str) -> dict:
        folder = out / f"multi30k-attention-{cell}"
        overrides = ",".join(filter(None, [f"cell_type={cell}", args.config_overrides]))
        command = [sys.executable, str(RUN_TRANSLATION), "--output_dir", str(folder), "--config_overrides", overrides,
                   "--time_budget_minutes", str(args.time_budget_minutes), "--overwrite_output_dir", *args.extra]
        subprocess.run(command, check=True, cwd=REPO_ROOT)
        results = json.loads((folder / "results.json").read_text())
        return {"cell_type": cell, **{k: v for k, v in results.items() if k not in ("eval_history", "arguments")},
                "config_overrides": results["arguments"]["config_overrides"]}

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(train, args.cells))

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU {machine_info('cpu')['cpu']}"
    machine = f"{device}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads"
    if args.jobs > 1:
        machine += f", {args.jobs} models trained at once"
    (out / "translation_bleu.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    lines = [f"Multi30k En->De test2016, sacreBLEU (13a, cased) on detokenized text; {machine}.", "",
             "| model | params | epochs | train min | test BLEU | test chrF | beams | valid BLEU (greedy) | wall min |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| attention {row['cell_type'].upper()} | {row['num_parameters'] / 1e6:.1f}M | {row['epochs']:.2f} | "
            f"{row['train_runtime_s'] / 60:.1f} | {row['test_bleu']:.2f} | {row['test_chrf']:.2f} | "
            f"{row['test_num_beams']} | {row['eval_bleu']:.2f} | {row['wall_time_s'] / 60:.1f} |"
        )
    (out / "translation_bleu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
