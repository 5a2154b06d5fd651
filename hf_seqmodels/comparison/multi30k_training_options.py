"""Multi30k En->De test BLEU of the main job's attention GRU trained three ways, at the same number of optimizer
steps: teacher forcing (the default), scheduled sampling (Bengio et al. 2015, inverse-sigmoid decay of the
teacher-forcing ratio towards a floor), and the teacher-forced run's last checkpoints averaged (as fairseq's
``scripts/average_checkpoints.py``; ``scripts/average_checkpoints.py`` here).

The two trainings are ``scripts/run_translation.py`` runs, side by side in two processes with one thread each; the
averaged model is scored as the runs score theirs (`translation.translation_scores` on the test split with the run's
beam, batch and lengths). Scheduled sampling decodes the training batch one position at a time, so its steps cost
more: the table gives each row's minutes. The table goes to ``results/multi30k_training_options.{json,md}``: each
way's mean ± sample standard deviation over the seeds, then every run. The rows of seeds not run this time are kept
(with the same number of steps), so that seeds can be added run by run. Seed 42's folders have no suffix: its
teacher-forced model is the one the speed benchmarks time.

    python -m hf_seqmodels.comparison.multi30k_training_options          # 600 steps each, seed 42 (about 9 minutes)
    python -m hf_seqmodels.comparison.multi30k_training_options --seeds 43 44              # two more seeds
    python -m hf_seqmodels.comparison.multi30k_training_options --smoke --out /tmp/t       # seconds: tiny data, model
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from ..data.paths import REPO_ROOT
from ..provenance import provenance
from ..serving.inference import load_translator
from ..tasks import translation
from ..tasks.arguments import DataArguments
from ..training.averaging import average_checkpoints, last_checkpoints
from .aggregate import mean_sd
from .report import mean_sd_cell
from .translation_bleu import FOLDER_SEED, seed_folder

STEPS, CHECKPOINT_EVERY, AVERAGED = 600, 50, 5
AVERAGED_ROW = f"teacher forcing, last {AVERAGED} checkpoints averaged"
TRAININGS = {
    "teacher forcing": [],
    "scheduled sampling": ["--scheduled_sampling", "inverse_sigmoid", "--scheduled_sampling_k", "150",
                           "--scheduled_sampling_floor", "0.75"],
}
SMOKE = ["--max_train_samples", "64", "--max_eval_samples", "16", "--vocab_size", "300", "--config_overrides",
         "embedding_size=16,hidden_size=16", "--per_device_train_batch_size", "16", "--num_beams", "2"]


def train_command(name: str, output_dir: Path, steps: int, smoke: bool, seed: int) -> list[str]:
    return [sys.executable, "scripts/run_translation.py", "--output_dir", str(output_dir), "--overwrite_output_dir",
            "--max_train_steps", str(steps), "--time_budget_minutes", "120", "--seed", str(seed),
            "--checkpointing_steps", str(CHECKPOINT_EVERY if not smoke else 1), *TRAININGS[name],
            *(SMOKE if smoke else [])]


def train(name: str, output_dir: Path, steps: int, smoke: bool, seed: int) -> dict:
    command = train_command(name, output_dir, steps, smoke, seed)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    log = output_dir.with_suffix(".log")
    with log.open("w") as out:
        done = subprocess.run(command, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {shlex.join(command)} failed (exit {done.returncode}); see {log}.")
    results = json.loads((output_dir / "results.json").read_text())
    return {"row": name, "seed": seed, **scores_of(results), "steps": results["steps"],
            "minutes": results["train_runtime_s"] / 60,
            "best_step": results["best_step"], "device": results["device"],
            "command": shlex.join(["python", *(_relative(part) for part in command[1:])]),
            "provenance": results["provenance"]}


def _relative(argument: str) -> str:
    """A path inside the repository as the training command sees it (run from the repository root)."""
    path = Path(argument)
    return str(path.relative_to(REPO_ROOT)) if path.is_absolute() and path.is_relative_to(REPO_ROOT) else argument


def scores_of(results: dict) -> dict:
    return {key: results[key] for key in ("test_bleu", "test_chrf", "eval_bleu", "bleu_signature", "chrf_signature")
            if key in results}


def averaged_row(run_dir: Path, count: int, seed: int) -> dict:
    """Average the run's last ``count`` checkpoints and score the average on the test split as the run scored its
    model (its recorded arguments)."""
    started = provenance([seed], ["test"])
    arguments = json.loads((run_dir / "results.json").read_text())["arguments"]
    checkpoints = last_checkpoints(f"{run_dir}-checkpoints", count)
    folder = average_checkpoints(checkpoints, run_dir.with_name(run_dir.name + f"-avg{count}"))
    model, tokenizers = load_translator(folder)
    data = DataArguments(dataset_name=arguments["dataset_name"], max_eval_samples=arguments["max_eval_samples"])
    test = data.load()["test"]
    scores, _ = translation.translation_scores(
        model, tokenizers, test[arguments["source_lang"]], test[arguments["target_lang"]], prefix="test_",
        bleu_tokenize=arguments["bleu_tokenize"],
        batch_size=arguments["per_device_eval_batch_size"], max_source_length=arguments["max_source_length"],
        max_new_tokens=arguments["max_new_tokens"], num_beams=arguments["num_beams"],
        length_penalty=arguments["length_penalty"])
    return {"row": AVERAGED_ROW, "seed": seed, **scores,
            "checkpoints": [checkpoint.name for checkpoint in checkpoints],
            "command": f"python scripts/average_checkpoints.py --checkpoint_dir {run_dir.name}-checkpoints --last "
                       f"{count} --output_dir {folder.name}, scored on test with the run's arguments",
            "provenance": started}


def earlier_runs(path: Path, steps: int, smoke: bool) -> tuple[list[dict], list[str]]:
    """The rows and commands of an earlier results file of the same protocol (steps, smoke), or nothing; a file from
    before the seeds were recorded held seed 42's runs and one command."""
    earlier = json.loads(path.read_text()) if path.is_file() else None
    if not earlier or earlier.get("steps", earlier["rows"][0].get("steps")) != steps or earlier["smoke"] != smoke:
        return [], []
    return [{"seed": FOLDER_SEED, **row} for row in earlier["rows"]], earlier.get("commands", [earlier.get("command")])


def markdown(table: dict) -> str:
    rows = table["rows"]
    lines = [f"# {table['title']}", "", f"On {table['machine']}:", "", *[f"- `{command}`" for command in
                                                                         table["commands"]], "",
             table["protocol"], "",
             "| training | seeds | test BLEU | test chrF | validation BLEU (greedy) | minutes |",
             "|---|---|---|---|---|---|"]
    for name in dict.fromkeys(row["row"] for row in rows):
        runs = [row for row in rows if row["row"] == name]
        cells = [mean_sd_cell(mean_sd([row[key] for row in runs]), digits=2) if key in runs[0] else "" for key in
                 ("test_bleu", "test_chrf", "eval_bleu", "minutes")]
        lines.append(f"| {name} | {', '.join(str(row['seed']) for row in runs)} | {' | '.join(cells)} |")
    lines += ["", "Every run:", "", "| training | seed | test BLEU | test chrF | validation BLEU (greedy) | steps | "
              "minutes |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [f"{row[key]:.2f}" if key in row else "" for key in ("test_bleu", "test_chrf", "eval_bleu")]
        minutes = f"{row['minutes']:.1f}" if "minutes" in row else ""
        lines.append(f"| {row['row']} | {row['seed']} | {' | '.join(cells)} | {row.get('steps', '')} | {minutes} |")
    lines += ["", f"BLEU signature: `{rows[0].get('bleu_signature', '')}`", "",
              "Commands:", "", *[f"- `{row['command']}`" for row in rows], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help="Optimizer steps of each training.")
    parser.add_argument("--seeds", nargs="+", type=int, default=[FOLDER_SEED],
                        help="A run of each way per seed, one seed after another.")
    parser.add_argument("--smoke", action="store_true", help="Tiny data and model, a few steps: the plumbing.")
    parser.add_argument("--work_dir", type=Path, default=REPO_ROOT / "outputs" / "multi30k_training_options",
                        help="Where the runs' folders go.")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "results", help="Folder of the results files.")
    args = parser.parse_args(argv)
    steps = 2 * AVERAGED if args.smoke else args.steps
    if steps < AVERAGED * (1 if args.smoke else CHECKPOINT_EVERY):
        parser.error(f"--steps {steps}: too few for {AVERAGED} checkpoints {CHECKPOINT_EVERY} steps apart.")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        folders = {name: seed_folder(args.work_dir / name.replace(" ", "-"), seed) for name in TRAININGS}
        with ThreadPoolExecutor(len(TRAININGS)) as pool:
            rows += pool.map(lambda name: train(name, folders[name], steps, args.smoke, seed), TRAININGS)
        rows.append(averaged_row(folders["teacher forcing"], AVERAGED, seed))
    results = args.out / "multi30k_training_options.json"
    earlier, commands = earlier_runs(results, steps, args.smoke)
    rows = [row for row in earlier if row["seed"] not in args.seeds] + rows
    order = [*TRAININGS, AVERAGED_ROW]
    rows.sort(key=lambda row: (order.index(row["row"]), row["seed"]))
    command = shlex.join(["python", "-m", "hf_seqmodels.comparison.multi30k_training_options",
                          *(sys.argv[1:] if argv is None else argv)])
    table = {
        "title": "Multi30k En->De: teacher forcing, scheduled sampling, checkpoint averaging (attention GRU)",
        "protocol": f"{steps} optimizer steps each (batch 64, the main job's other settings), per seed the two "
                    "trainings at once with 1 CPU thread each; test2016 BLEU/chrF with beam search, the model with "
                    "the best validation BLEU (greedy) for the trainings; checkpoints every "
                    f"{CHECKPOINT_EVERY if not args.smoke else 1} steps. Mean ± sample standard deviation (n-1) "
                    "over the seeds.",
        "commands": list(dict.fromkeys([*commands, command])),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, torch "
                   f"{torch.__version__}",
        "steps": steps,
        "smoke": args.smoke,
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(table, indent=2) + "\n")
    (args.out / "multi30k_training_options.md").write_text(markdown(table))
    print(markdown(table))
    return table


if __name__ == "__main__":
    main()
