"""A suite model's recipe found on validation: candidate recipes of one model of a suite, each trained once (one seed)
under the suite's budget, ranked by the suite's metric on the validation split. The test split plays no part: the
suite's own runs (scripts/compare.py, several seeds) give the chosen recipe's test figure.

Each search is the suite's model (its ``base``) with each candidate's fields over it; a candidate may change the
budget's epochs (``num_train_epochs``), never its minutes. Writes ``results/<suite>_recipe_search.{json,md}``: the
budget, the seed, this command's provenance and every candidate (its fields over the base, its validation score,
updates, epochs and training minutes, and its run's own provenance), best first.

    python -m hf_seqmodels.comparison.recipe_search wnut17 --jobs 2
    python -m hf_seqmodels.comparison.recipe_search translation --jobs 2     # our Transformer on Multi30k
    python -m hf_seqmodels.comparison.recipe_search wnut17 --max_train_steps 2 --max_train_samples 32 \\
        --max_eval_samples 16 --results_dir /tmp/search            # the plumbing, in seconds
"""

import argparse
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from ..cards import format_metric
from ..data.paths import REPO_ROOT, data_dir
from ..provenance import provenance
from .runner import RunOptions, budget_of, run_fields, run_model, slug, write_json
from .recipes import BERT, TRANSFORMER_SIZES
from .suites import SUITES, Suite


@dataclasses.dataclass(frozen=True)
class Search:
    """Candidates for the recipe of ``SUITES[suite].models[base]``: name -> fields over the base's."""

    suite: str
    base: str
    candidates: dict[str, dict]
    seed: int = 42
    why: str = ""  # what the candidates try, and where they come from

    def validation_metric(self) -> str:
        return "eval" + SUITES[self.suite].metric.removeprefix("test")


BUDGET_FIELDS = ("num_train_epochs",)  # the budget fields a candidate may change
WNUT17_LONGER = {"num_train_epochs": 30}  # the 10-epoch cap stops the BiLSTM-CRF at ~2 of its 4 minutes
SPELLING = {"spelling_features": 32}  # Ma & Hovy's character CNN (30 filters there)
SEARCHES = {
    "wnut17": Search(
        suite="wnut17",
        base="BiLSTM-CRF",
        why="the suite's BiLSTM-CRF (WordPiece pieces, 128 units, CRF with BIO constraints) trained longer, with the "
            "character CNN of Ma & Hovy (2016) and the dropout of Lample et al. (2016) and Ma & Hovy (0.5), word-level "
            "input, the pretrained encoder's embeddings (with its own vocabulary or ours), a wider LSTM and a smaller "
            "learning rate",
        candidates={
            "as in the suite": {},
            "30 epochs": WNUT17_LONGER,
            "30 epochs, spelling CNN": {**WNUT17_LONGER, **SPELLING},
            "30 epochs, spelling CNN, dropout 0.5": {**WNUT17_LONGER, **SPELLING, "dropout": 0.5},
            "30 epochs, spelling CNN, 256 units, dropout 0.5": {**WNUT17_LONGER, **SPELLING, "dropout": 0.5,
                                                                "hidden_size": 256},
            "30 epochs, spelling CNN, words (20,000)": {**WNUT17_LONGER, **SPELLING, "tokenizer_type": "word",
                                                       "vocab_size": 20000},
            "30 epochs, spelling CNN, MiniLM embeddings, dropout 0.5": {
                **WNUT17_LONGER, **SPELLING, "embeddings_from": BERT, "dropout": 0.5},
            "30 epochs, spelling CNN, MiniLM embeddings and WordPiece vocabulary, dropout 0.5": {
                **WNUT17_LONGER, **SPELLING, "embeddings_from": BERT, "tokenizer_name": BERT,
                "dropout": 0.5},
            "30 epochs, spelling CNN, learning rate 2e-3": {**WNUT17_LONGER, **SPELLING, "learning_rate": 2e-3},
        },
    ),
    "upos": Search(
        suite="upos",
        base="BiLSTM-CRF",
        why="the suite's BiLSTM-CRF (WordPiece pieces, 256 units) with the character CNN of Ma & Hovy (2016), whose "
            "POS tagger it is, their dropout (0.5), the pretrained encoder's embeddings, a larger learning rate and "
            "more epochs",
        candidates={
            "as in the suite": {},
            "spelling CNN": SPELLING,
            "spelling CNN, dropout 0.5": {**SPELLING, "dropout": 0.5},
            "spelling CNN, MiniLM embeddings": {**SPELLING, "embeddings_from": BERT},
            "spelling CNN, learning rate 5e-3": {**SPELLING, "learning_rate": 5e-3},
            "spelling CNN, 6 epochs": {**SPELLING, "num_train_epochs": 6},
        },
    ),
    "translation": Search(
        suite="translation",
        base="Transformer",
        why="the suite's Transformer (pre-norm, peak learning rate 1e-3 after 200 warm-up updates, linear decay, "
            "batches of 64 pairs, label smoothing 0.1, dropout 0.1) with other peak learning rates, the paper's "
            "inverse square root schedule, batches of tokens, post-norm (the paper's), more dropout (small data) and "
            "no label smoothing",
        candidates={
            "as in the suite": {},
            "learning rate 5e-4": {"learning_rate": 5e-4},
            "learning rate 2e-3": {"learning_rate": 2e-3},
            "inverse square root, 400 warm-up, 2e-3": {"lr_scheduler_type": "inverse_sqrt", "num_warmup_steps": 400,
                                                       "learning_rate": 2e-3},
            "batches of 2,048 tokens": {"max_tokens": 2048},
            "post-norm": {"config_overrides": f"{TRANSFORMER_SIZES},norm_position=post"},
            "dropout 0.3": {"config_overrides": f"{TRANSFORMER_SIZES.replace('dropout=0.1', 'dropout=0.3')},"
                                                "norm_position=pre"},
            "no label smoothing": {"label_smoothing_factor": 0.0},
        },
    ),
}


def portable(value):
    """``value`` (fields, nested in dicts and lists) with the bundled data folder written ``$HF_SEQMODELS_DATA``: a
    results file names the same paths on every machine."""
    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item) for item in value]
    return value.replace(str(data_dir()), "$HF_SEQMODELS_DATA") if isinstance(value, str) else value


def over_the_base(base: dict, fields: dict) -> tuple[dict, dict]:
    """A candidate's ``fields`` over the ``base`` model's: the model's fields, and the budget's it changes."""
    return ({**base, **{key: value for key, value in fields.items() if key not in BUDGET_FIELDS}},
            {key: fields[key] for key in BUDGET_FIELDS if key in fields})


def candidate_suite(search: Search) -> Suite:
    """The search's suite with each candidate as a model (its fields over the base's, its epochs out: `budget`),
    capped at the base's updates where the suite caps them."""
    suite = SUITES[search.suite]
    models = {name: over_the_base(suite.models[search.base], fields)[0] for name, fields in search.candidates.items()}
    steps = {name: suite.cpu_steps[search.base] for name in models} if search.base in suite.cpu_steps else {}
    return dataclasses.replace(suite, models=models, cpu_steps=steps)


def budget(search: Search, name: str, options: RunOptions) -> dict:
    """The suite's budget with the candidate's epochs."""
    return {**budget_of(SUITES[search.suite], options), **over_the_base({}, search.candidates[name])[1]}


def run_search(search_name: str, options: RunOptions, names: list[str] | None = None) -> dict:
    """Train every candidate (or those of ``names``) once, ``options.jobs`` at once, and write the search's results,
    best first."""
    search = SEARCHES[search_name]
    if unknown := [name for name in names or [] if name not in search.candidates]:
        raise SystemExit(f"Unknown candidate(s) {unknown} of the {search_name} search; choose from "
                         f"{list(search.candidates)}.")
    suite, metric = candidate_suite(search), search.validation_metric()
    output_dir = options.output_dir / f"{search_name}_recipe_search"

    def run_one(name: str) -> dict:
        fields = run_fields(suite, name, search.seed, budget(search, name, options), options,
                            output_dir / slug(name))
        print(f"[{search_name} recipe search] {name}: {fields}", flush=True)
        run = run_model(suite, name, search.seed, fields, options.num_threads)
        candidate = {"name": name, "over_the_base": search.candidates[name], "fields": fields, "log": run["log"]}
        if "error" in run:
            return {**candidate, "error": run["error"], "log_tail": run["log_tail"]}
        return {**candidate, metric: run[metric], "steps": run["steps"], "epochs": run["epochs"],
                "train_minutes": run["train_runtime_s"] / 60, "provenance": run.get("provenance")}

    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        candidates = list(pool.map(run_one, names or search.candidates))
    ranked = sorted(candidates, key=lambda run: (metric not in run, -run.get(metric, 0.0) if suite.higher_is_better
                                                 else run.get(metric, 0.0)))
    results = {
        "search": search_name, "suite": search.suite, "base": search.base, "base_fields": SUITES[search.suite].models[
            search.base], "why": search.why, "metric": metric, "seed": search.seed, "split": "validation",
        "budget": budget_of(SUITES[search.suite], options), "num_threads": options.num_threads, "jobs": options.jobs,
        "provenance": provenance([search.seed], ["validation"], "cuda" if torch.cuda.is_available() else "cpu"),
        "candidates": ranked,
    }
    results = portable(results)
    options.results_dir.mkdir(parents=True, exist_ok=True)
    write_json(options.results_dir / f"{search_name}_recipe_search.json", results)
    (options.results_dir / f"{search_name}_recipe_search.md").write_text(markdown(results, suite))
    return results


def markdown(results: dict, suite: Suite) -> str:
    metric, score = results["metric"], suite.card_metric.name
    lines = [f"# {results['suite']}: the {results['base']}'s recipe, chosen on validation", "",
             f"Candidates: {results['why']}. Each trained once (seed {results['seed']}, {results['num_threads']} "
             f"thread(s), {results['jobs']} at once) within {results['budget']['time_budget_minutes']} minutes; "
             f"ranked by {score} on the validation split.", "",
             f"| candidate | fields over the base | {score} (validation) | updates | epochs | minutes |",
             "|---|---|---|---|---|---|"]
    for run in results["candidates"]:
        fields = ", ".join(f"{key}={value}" for key, value in run["over_the_base"].items()) or "none"
        if "error" in run:
            lines.append(f"| {run['name']} | {fields} | failed ({run['error']}) | | | |")
            continue
        lines.append(f"| {run['name']} | {fields} | {format_metric(run[metric], suite.percent)} | {run['steps']} | "
                     f"{run['epochs']:.1f} | {run['train_minutes']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("search", choices=list(SEARCHES))
    parser.add_argument("--candidates", nargs="+", help="The candidates to train, by name (default: all).")
    parser.add_argument("--jobs", type=int, default=1, help="Candidates trained at once.")
    parser.add_argument("--max_train_steps", type=int, help="Cap every run at this many steps (smoke runs).")
    parser.add_argument("--max_train_samples", type=int, help="Train on the first N rows only (smoke runs).")
    parser.add_argument("--max_eval_samples", type=int, help="Score the first N validation rows only (smoke runs).")
    parser.add_argument("--results_dir", type=Path, default=REPO_ROOT / "results")
    parser.add_argument("--output_dir", type=Path, default=REPO_ROOT / "outputs" / "compare")
    args = parser.parse_args(argv)
    for name in ("jobs", "max_train_steps", "max_train_samples", "max_eval_samples"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}.")
    options = RunOptions(jobs=args.jobs, max_train_steps=args.max_train_steps,
                         max_train_samples=args.max_train_samples, max_eval_samples=args.max_eval_samples,
                         results_dir=args.results_dir, output_dir=args.output_dir)
    return run_search(args.search, options, args.candidates)


if __name__ == "__main__":
    main()
