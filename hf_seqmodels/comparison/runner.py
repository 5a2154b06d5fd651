"""Run a suite: every model once per seed, each run in a fresh process of its own (`fresh_process`), and gather the
runs' results.json into ``<results_dir>/<suite>.json`` with the rows (mean ± sd over the seeds, `aggregate`), the
table and the chart (`report`). A translation suite also keeps every run's test translations under
``<results_dir>/hypotheses/<suite>/<model>.seed<k>.txt`` and compares them by paired bootstrap (`significance`)."""

import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..cards import format_metric
from ..data.paths import REPO_ROOT
from ..provenance import provenance
from ..tasks import word_vectors
from ..tasks.arguments import parse_dict
from . import peak_memory
from .aggregate import rows, training_throughput
from .fresh_process import run_in_process
from .recipes import WORD_VECTORS
from .report import bar_chart, markdown
from .significance import paired_bootstrap
from .suites import DEFAULT_SEEDS, SUITES, Suite


@dataclass
class RunOptions:
    """How `run_suite` runs a suite (the options of scripts/compare.py)."""

    models: list[str] | None = None  # the suite's models to run (default: all)
    full: bool = False  # the GPU budget (full epochs) instead of the CPU one
    time_budget_minutes: float | None = None  # overrides the suite's
    max_train_steps: int | None = None  # caps every model (smoke runs)
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    seeds: list[int] = field(default_factory=lambda: list(DEFAULT_SEEDS))
    num_threads: int = 1  # torch threads per run; 0: all cores
    jobs: int = 1  # runs at once
    update: bool = False  # re-run only ``models``, keeping the other models' runs of the results file
    results_dir: Path = REPO_ROOT / "results"
    output_dir: Path = REPO_ROOT / "outputs" / "compare"

    def __post_init__(self):
        self.results_dir, self.output_dir = Path(self.results_dir), Path(self.output_dir)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"--seeds must name distinct seeds, got {self.seeds}.")


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def budget_of(suite: Suite, options: RunOptions) -> dict:
    budget = dict(suite.full_budget if options.full else suite.cpu_budget)
    if options.time_budget_minutes is not None:
        budget["time_budget_minutes"] = options.time_budget_minutes
    return budget


def run_fields(suite: Suite, name: str, seed: int, budget: dict, options: RunOptions, output_dir: Path,
               vectors: Path | None = None) -> dict:
    """The fields of one model's run: the suite's, the model's (WORD_VECTORS replaced by ``vectors``), the budget,
    the seed and the smoke-run limits."""
    model = {key: str(vectors) if value == WORD_VECTORS else value for key, value in suite.models[name].items()}
    fields = {**suite.common, **model, **budget, "seed": seed, "output_dir": str(output_dir),
              "overwrite_output_dir": True}  # a model's folder holds its earlier run, if any
    steps = options.max_train_steps or (None if options.full else suite.cpu_steps.get(name))
    if steps is not None:
        fields["max_train_steps"] = steps
    for key in ("max_train_samples", "max_eval_samples"):
        if getattr(options, key) is not None:
            fields[key] = getattr(options, key)
    return fields


def run_model(suite: Suite, name: str, seed: int, fields: dict, num_threads: int) -> dict:
    """Run one model of the suite with one seed in its own process; return its results.json with the suite's
    fields, the training throughput and the peak memory added, or an error."""
    output_dir = Path(fields["output_dir"])
    log = output_dir.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    exitcode = run_in_process(peak_memory.__name__, (suite.module.__name__, *parse_dict(suite.module, fields)), log,
                              num_threads)
    record = {"name": name, "seed": seed, "task": suite.task, "fields": fields, "log": str(log)}
    if exitcode or not (output_dir / "results.json").is_file():
        tail = log.read_text()[-2000:]
        print(f"  {name} (seed {seed}) FAILED (exit {exitcode}); see {log}:\n{tail}", file=sys.stderr)
        return {**record, "error": f"exit code {exitcode}", "log_tail": tail}
    results = json.loads((output_dir / "results.json").read_text())
    return {**results, **json.loads((output_dir / peak_memory.PEAK_MEMORY).read_text()), **record,
            "train_tokens_per_second": training_throughput(results),
            "process_wall_time_s": time.monotonic() - start}


def keep_hypotheses(run: dict, suite_name: str, results_dir: Path) -> dict:
    """Copy a translation run's test translations to ``<results_dir>/hypotheses/<suite>/<model>.seed<k>.txt`` and
    name that file in the run (``hypotheses``, relative to ``results_dir``)."""
    if "error" in run or "test_hypotheses_file" not in run:
        return run
    kept = Path("hypotheses") / suite_name / f"{slug(run['name'])}.seed{run['seed']}.txt"
    (results_dir / kept).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(run["fields"]["output_dir"]) / run["test_hypotheses_file"], results_dir / kept)
    return {**run, "hypotheses": str(kept)}


def bootstrap_by_seed(suite: Suite, runs: list[dict], results_dir: Path) -> dict[str, dict]:
    """Per seed with two or more translated runs: `paired_bootstrap` of their saved hypotheses against the test
    split's target sentences (which every run of the suite scored against), the baseline being the first of the
    suite's models among them."""
    compared = {}
    for seed in dict.fromkeys(run["seed"] for run in runs):
        translated = [run for run in runs if run["seed"] == seed and "hypotheses" in run]
        if len(translated) < 2:
            continue
        systems = {run["name"]: (results_dir / run["hypotheses"]).read_text().splitlines() for run in translated}
        data_args = parse_dict(suite.module, translated[0]["fields"])[1]
        references = data_args.load()["test"][data_args.target_lang]
        compared[str(seed)] = paired_bootstrap(systems, references, data_args.bleu_tokenize)
    return compared


def train_word_vectors(suite: Suite, seed: int, options: RunOptions, output_dir: Path) -> dict:
    """Run the suite's ``word_vectors`` fields (`tasks.word_vectors`) in their own process, writing
    ``output_dir / "word-vectors.vec"``; returns the record for the report (fields, file, wall time)."""
    path = output_dir / "word-vectors.vec"
    fields = {**suite.word_vectors, "output_file": str(path), "overwrite": True, "seed": seed}
    if options.max_train_samples is not None:
        fields["max_train_samples"] = options.max_train_samples
    log = path.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    print(f"Word vectors: {fields}", flush=True)
    if run_in_process(word_vectors.__name__, parse_dict(word_vectors, fields), log) or not path.is_file():
        raise SystemExit(f"Training the word vectors failed; see {log}:\n{log.read_text()[-2000:]}")
    return {"fields": fields, "file": str(path), "log": str(log), "process_wall_time_s": time.monotonic() - start}


def kept_runs(path: Path, report: dict, names: list[str]) -> tuple[list[dict], dict]:
    """For --update: the runs of the results file at ``path`` that are not re-run, and their step caps."""
    if not path.is_file():
        raise SystemExit(f"--update needs an existing {path}: run the whole suite first.")
    previous = json.loads(path.read_text())
    for key in ("budget", "full", "seeds", "num_threads"):
        if previous.get(key) != report[key]:
            raise SystemExit(f"--update: {path} was run with {key}={previous.get(key)!r} but this run has "
                             f"{report[key]!r}; re-run the whole suite.")
    caps = {name: steps for name, steps in previous.get("step_caps", {}).items() if name not in names}
    return [run for run in previous["runs"] if run["name"] not in names], caps


def check_nothing_dropped(path: Path, names: list[str]) -> None:
    """Without --update the results file at ``path`` is rewritten with the runs of ``names`` only: refuse when it
    holds runs of other models, which would be lost."""
    if not path.is_file():
        return
    if dropped := list(dict.fromkeys(run["name"] for run in json.loads(path.read_text())["runs"]
                                     if run["name"] not in names)):
        raise SystemExit(f"{path} holds the runs of {dropped}, which a run of only {names} would drop: pass "
                         "--update to re-run these models and keep the others, or --results_dir to write elsewhere.")


def write_json(path: Path, data: dict) -> None:
    temp = path.with_suffix(".json.tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n")
    temp.replace(path)


def run_suite(suite_name: str, options: RunOptions) -> dict:
    """Run the suite's models (``options.models``, default all) once per seed, ``options.jobs`` at once; write
    ``<results_dir>/<suite>.json`` (after every run, so that a crash keeps the rest), ``.md`` and ``.png``. Returns
    the report: the settings, every run (``runs``, by model then seed), the ``rows`` and, for translation, the
    ``paired_bootstrap`` by seed."""
    suite = SUITES[suite_name]
    names = list(suite.models) if not options.models else options.models
    if unknown := [name for name in names if name not in suite.models]:
        raise SystemExit(f"Unknown model(s) {unknown} for suite {suite_name!r}; choose from {list(suite.models)}.")
    budget = budget_of(suite, options)
    results_dir, output_dir = options.results_dir, options.output_dir / suite_name
    results_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "suite": suite_name, "task": suite.task, "metric": suite.metric, "budget": budget, "full": options.full,
        "step_caps": {} if options.full else {n: s for n, s in suite.cpu_steps.items() if n in names},
        "seeds": options.seeds, "num_threads": options.num_threads, "jobs": options.jobs, "runs": [],
        # this command's; each run also records its own (its results.json's), kept runs of --update included
        "provenance": provenance(options.seeds, ["validation", "test"], "cuda" if torch.cuda.is_available() else "cpu"),
    }
    if options.max_train_steps:
        report["step_caps"] = {name: options.max_train_steps for name in names}
    kept = []
    if options.update:
        kept, caps = kept_runs(results_dir / f"{suite_name}.json", report, names)
        report["step_caps"] = {**caps, **report["step_caps"]}
    else:
        check_nothing_dropped(results_dir / f"{suite_name}.json", names)
    vectors = None
    if suite.word_vectors is not None:  # one file for every seed's runs, trained with the first seed
        report["word_vectors"] = train_word_vectors(suite, options.seeds[0], options, output_dir)
        vectors = Path(report["word_vectors"]["file"])

    def run_one(name_and_seed: tuple[str, int]) -> dict:
        name, seed = name_and_seed
        fields = run_fields(suite, name, seed, budget, options, output_dir / slug(name) / f"seed{seed}", vectors)
        print(f"[{suite_name}] {name}, seed {seed}: {fields}", flush=True)
        run = keep_hypotheses(run_model(suite, name, seed, fields, options.num_threads), suite_name, results_dir)
        if "error" not in run:
            print(f"  {name}, seed {seed}: {suite.metric} = {format_metric(run[suite.metric], suite.percent)}, "
                  f"{run['train_runtime_s'] / 60:.1f} min, {run['steps']} steps", flush=True)
        return run

    order = [(name, seed) for name in suite.models for seed in options.seeds]
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        done = []
        # In the suite's order, each written as soon as it and those before it are.
        for run in pool.map(run_one, [(name, seed) for name, seed in order if name in names]):
            done.append(run)
            report["runs"] = sorted(kept + done, key=lambda run: order.index((run["name"], run["seed"])))
            write_json(results_dir / f"{suite_name}.json", report)
    report["rows"] = rows(report["runs"], list(suite.models),
                          [suite.metric, *(key for key, _ in suite.extra_columns)])
    if suite.translates:
        report["paired_bootstrap"] = bootstrap_by_seed(suite, report["runs"], results_dir)
    write_json(results_dir / f"{suite_name}.json", report)
    (results_dir / f"{suite_name}.md").write_text(markdown(suite_name, suite, report))
    bar_chart(results_dir / f"{suite_name}.png", suite, report["rows"])
    return report
