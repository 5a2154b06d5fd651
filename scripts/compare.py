#!/usr/bin/env python
"""Run a suite of models side by side with several seeds and a fixed budget, and tabulate the results.

Each model is one run of the suite's task per seed, in its own process, with the same budget
(`hf_seqmodels.comparison`). Writes, per suite: ``results/<suite>.json`` (the budget, every run's results.json under
``runs``, one per model and seed, rewritten after each run so that a crash keeps the rest; the ``rows``: mean ± sample
sd over the seeds), ``results/<suite>.md`` (the table) and ``results/<suite>.png`` (the chart, with sd error bars).
Translation suites also keep each run's test translations in ``results/hypotheses/<suite>/<model>.seed<k>.txt`` and
compare the models by sacreBLEU's paired bootstrap.

A run never drops saved runs: without ``--update``, a run whose ``--models`` leave out a model that
``results/<suite>.json`` holds is refused (re-run those models with ``--update``, or write elsewhere with
``--results_dir``).

    python scripts/compare.py sentiment                  # CPU budget (minutes per model and seed), 1 thread
    python scripts/compare.py ner --models BiLSTM,BERT --results_dir results/trial   # a subset, on its own
    python scripts/compare.py ner --models BERT --update # re-run one model, keep the other rows
    python scripts/compare.py translation lm --full --jobs 7 --seeds 1,2,3,4,5   # GPU budget, seven runs at once

Suites: sentiment (SST-2), ner (UD English-EWT UPOS), lm (PTB, stateful protocol), translation (Multi30k en->de,
attention RNNs, Transformer, Marian); and the walkthroughs of the course notes (the README's Recipes): en_zh, zh_en
(Tatoeba English-Mandarin), wnut17, upos and sst2_word_vectors. Every suite ranks by its test split; settings are
chosen on validation.
"""

import argparse
from pathlib import Path

from hf_seqmodels.comparison import DEFAULT_SEEDS, SUITES, RunOptions, run_suite
from hf_seqmodels.data.paths import REPO_ROOT


def seed_list(text: str) -> list[int]:
    try:
        return [int(seed) for seed in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds takes comma-separated integers such as 42,43,44, got {text!r}.")


def parse_args(argv: list[str] | None = None) -> tuple[list[str], RunOptions]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", choices=list(SUITES), help="The suites to run, in order.")
    parser.add_argument("--models", help="Comma-separated model names of the suite (default: all). Without "
                                         "--update, refused when results/<suite>.json holds runs of other models.")
    parser.add_argument("--full", action="store_true", help="The GPU budget (full epochs) instead of the CPU one.")
    parser.add_argument("--time_budget_minutes", type=float, help="Override the suite's time budget per run.")
    parser.add_argument("--max_train_steps", type=int, help="Cap every run at this many steps (smoke runs).")
    parser.add_argument("--max_train_samples", type=int, help="Train on the first N rows only (smoke runs).")
    parser.add_argument("--max_eval_samples", type=int,
                        help="Score the first N validation and test rows only (smoke runs).")
    parser.add_argument("--seeds", type=seed_list,
                        help="Comma-separated seeds: every model runs once per seed; the table gives the mean ± "
                             f"sample standard deviation (default: {','.join(map(str, DEFAULT_SEEDS))}).")
    parser.add_argument("--seed", type=int, help="One seed: the same as --seeds <seed> (n=1, no standard deviation).")
    parser.add_argument("--num_threads", type=int, default=1,
                        help="Torch threads per run (OMP_NUM_THREADS); 1 suits a shared CPU, 0 = all cores.")
    parser.add_argument("--jobs", type=int, default=1,
                        help="Runs at once (a GPU has room for several small ones; their train times and "
                             "throughputs then include the contention).")
    parser.add_argument("--update", action="store_true",
                        help="Re-run only --models and replace their runs in the existing results/<suite>.json, "
                             "keeping the other models' runs (which must share the budget, seeds and threads).")
    parser.add_argument("--results_dir", default=str(REPO_ROOT / "results"),
                        help="Where <suite>.json/.md/.png and hypotheses/ go.")
    parser.add_argument("--output_dir", default=str(REPO_ROOT / "outputs" / "compare"),
                        help="Where each run's model folder goes: <output_dir>/<suite>/<model>/seed<k> (replacing "
                             "an earlier run's).")
    args = parser.parse_args(argv)
    for name in ("time_budget_minutes", "max_train_steps", "max_train_samples", "max_eval_samples", "jobs"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}.")
    if args.num_threads < 0:
        parser.error(f"--num_threads must be 0 (all cores) or positive, got {args.num_threads}.")
    if args.seed is not None and args.seeds is not None:
        parser.error("--seed is one seed, --seeds a list: pass one of them.")
    seeds = [args.seed] if args.seed is not None else args.seeds or list(DEFAULT_SEEDS)
    models = [name.strip() for name in args.models.split(",")] if args.models else None
    options = {key: value for key, value in vars(args).items() if key not in ("suites", "seed", "seeds", "models")}
    try:
        return args.suites, RunOptions(**options, seeds=seeds, models=models)
    except ValueError as error:
        parser.error(str(error))


def main(argv: list[str] | None = None) -> list[dict]:
    suites, options = parse_args(argv)
    reports = []
    for suite_name in suites:
        reports.append(run_suite(suite_name, options))
        print((Path(options.results_dir) / f"{suite_name}.md").read_text())
    if failed := [f"{report['suite']}/{run['name']} (seed {run['seed']})" for report in reports
                  for run in report["runs"] if "error" in run]:
        raise SystemExit(f"Failed runs (their logs are named in the results): {', '.join(failed)}")
    return reports


if __name__ == "__main__":
    main()
