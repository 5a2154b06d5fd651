#!/usr/bin/env python
"""Run a suite of models side by side with fixed seeds and a fixed budget, and tabulate the results.

Each model is one run of the suite's task (`hf_seqmodels.tasks.<task>.run`: same data, same splits, same metric
code) in its own process, with the same seed and the same budget: at most ``time_budget_minutes`` of training and
at most ``num_train_epochs`` epochs, and, where the model's recipe gives one, at most ``max_train_steps`` steps
(chosen so the learning-rate schedule completes within the time on the reference CPU).

A suite is data: the task module, the fields shared by its runs, and each model's fields (of the task's argument
dataclasses, by name, as `tasks.arguments.parse_dict` reads them). Writes, per suite:

* ``results/<suite>.json``: the budget, and every run's results.json (scores, parameters, train time,
  inference throughput, device, arguments) under ``runs``; rewritten after each model, so a crash keeps the rest;
* ``results/<suite>.md``: the table; ``results/<suite>.png``: a bar chart of the suite's metric.

A run never drops saved runs: without ``--update``, a run whose ``--models`` leave out a model that
``results/<suite>.json`` holds is refused (re-run those models with ``--update``, or write elsewhere with
``--results_dir``).

    python scripts/compare.py sentiment                  # CPU budget (minutes per model), 1 thread
    python scripts/compare.py ner --models BiLSTM,BERT --results_dir results/trial   # a subset, on its own
    python scripts/compare.py ner --models BERT --update # re-run one model, keep the other rows
    python scripts/compare.py sentiment ner --full       # GPU budget: full epochs
    python scripts/compare.py sentiment --full --jobs 7  # the same, all seven models at once on one GPU

Suites: sentiment (SST-2, text classification), ner (UD English-EWT UPOS, token classification), lm (PTB, language
modelling) and translation (Multi30k); and the walkthroughs of the course notes (the README's Recipes), scored on
the test splits with the settings chosen on validation: en_zh and zh_en (Tatoeba English-Mandarin, attention GRU vs
Transformer, WordPiece tokenizers, BLEU tokenized for the target language), wnut17 (BiLSTM vs BiLSTM-CRF vs BERT,
entity F1), upos (the same taggers on UD English-EWT) and sst2_word_vectors (word2vec trained on SST-2 first, then
a BiLSTM without them, with them frozen, with them fine-tuned).
"""

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hf_seqmodels.cards import format_metric  # noqa: E402
from hf_seqmodels.paths import REPO_ROOT, data_dir  # noqa: E402
from hf_seqmodels.tasks import (  # noqa: E402
    language_modeling,
    text_classification,
    token_classification,
    translation,
    word_vectors,
)
from hf_seqmodels.tasks.arguments import parse_dict  # noqa: E402
from hf_seqmodels.tasks.spawned import run_in_process  # noqa: E402

BERT = str(data_dir() / "models" / "all-MiniLM-L6-v2")
# The recipes (fields of the tasks' arguments): our models train a tokenizer on the training texts; the pretrained
# encoder keeps its own.
RNN_SST2 = {"model_type": "recurrent", "tokenizer_type": "word", "vocab_size": 16000, "embedding_size": 128,
            "hidden_size": 128, "classifier_pooling": "max", "learning_rate": 2e-3, "per_device_train_batch_size": 64}
RNN_TAGGER = {"model_type": "recurrent", "tokenizer_type": "wordpiece", "vocab_size": 16000, "embedding_size": 128,
              "hidden_size": 256, "learning_rate": 2e-3, "per_device_train_batch_size": 32}
BILSTM = {"cell_type": "lstm", "bidirectional": True}
TRANSFORMER = {"model_type": "transformer", "hidden_size": 128, "num_heads": 4, "num_layers": 2, "ffn_dim": 512,
               "config_overrides": "norm_position=pre", "learning_rate": 5e-4, "num_warmup_steps": 200}
# The BiLSTM whose word embeddings start from the pretrained encoder's rows (found by token string in its own
# vocabulary), as Tai et al. start from GloVe; these recipes came from a few runs on the validation splits.
PRETRAINED_EMBEDDINGS = {"embeddings_from": BERT}
# The larger BiLSTM of each suite: two layers, wider, more dropout (for --full; slow on a CPU budget).
WIDE = {"num_layers": 2, "embedding_size": 256, "dropout": 0.3}
# Translation of the Tatoeba English-Mandarin pairs (tatoeba_en_zh, either direction): a WordPiece tokenizer per
# language (each CJK character its own pre-token), as the course notes do.
TATOEBA = {"dataset_name": "tatoeba_en_zh", "vocabulary": "separate", "tokenizer_type": "wordpiece",
           "vocab_size": 8000, "per_device_train_batch_size": 64}
TRANSLATORS = {
    "Attention GRU": {"model_type": "attention_seq2seq"},
    "Transformer": {"model_type": "transformer", "learning_rate": 1e-3, "num_warmup_steps": 200,
                    "config_overrides": "d_model=256,ffn_dim=512,encoder_layers=2,decoder_layers=2,num_heads=4,"
                                        "norm_position=pre,dropout=0.1"},
}
# The taggers of the walkthrough: a BiLSTM with a softmax per token, the same with a CRF (Viterbi decoding), BERT.
TAGGERS = {"BiLSTM": {**RNN_TAGGER, **BILSTM}, "BiLSTM-CRF": {**RNN_TAGGER, **BILSTM, "use_crf": True}}
# WNUT-17's 3,394 training tweets: a smaller vocabulary and model, a larger learning rate (from short validation runs).
WNUT17_TAGGER = {"vocab_size": 8000, "hidden_size": 128, "dropout": 0.3, "learning_rate": 5e-3}
WORD_VECTORS = "<the suite's word vectors>"  # a model field's value: the file the suite's word_vectors run wrote
FINE_TUNED = {"model_name_or_path": BERT, "learning_rate": 1e-4, "num_warmup_steps": 10, "weight_decay": 0.01,
              "per_device_train_batch_size": 32}


@dataclass
class Suite:
    """A comparison: one task, its data, the models (name -> their own fields) and the budgets."""

    module: ModuleType  # the task's module in hf_seqmodels.tasks
    task: str  # its results.json "task"
    metric: str  # the results.json key the table and chart rank by
    metric_label: str
    percent: bool  # the metric is a fraction, shown in percent
    higher_is_better: bool
    models: dict[str, dict]
    cpu_budget: dict  # TrainingArguments fields shared by every model (CPU default)
    full_budget: dict  # the same for --full (GPU)
    cpu_steps: dict[str, int] = field(default_factory=dict)  # per model: max_train_steps under the CPU budget
    targets: dict[str, float] = field(default_factory=dict)  # per model: the score the issue asks for
    extra_columns: list[tuple[str, str]] = field(default_factory=list)  # (results key, header)
    common: dict = field(default_factory=dict)  # fields of every run
    # Fields of a `tasks.word_vectors` run made before the models; a model field whose value is WORD_VECTORS gets
    # the file it wrote.
    word_vectors: dict | None = None


def tatoeba_suite(source: str, target: str, tokenization: str) -> Suite:
    """The attention GRU and the Transformer translating Tatoeba's ``source`` sentences into ``target``, scored by
    test BLEU (``tokenization`` names the sacreBLEU tokenization the run picks for the target) and chrF."""
    return Suite(
        module=translation,
        task="translation",
        metric="test_bleu",
        metric_label=f"Tatoeba {source}->{target} test BLEU ({tokenization})",
        percent=False,
        higher_is_better=True,
        common={**TATOEBA, "source_lang": source, "target_lang": target},
        models=TRANSLATORS,
        cpu_budget={"time_budget_minutes": 8, "num_train_epochs": 3},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 30},
        cpu_steps={"Transformer": 900},  # what 8 minutes allow on 1 CPU thread: the LR schedule then completes
        extra_columns=[("test_chrf", "test chrF"), ("eval_bleu", "validation BLEU")],
    )


SUITES = {
    "sentiment": Suite(
        module=text_classification,
        task="text-classification",
        metric="eval_accuracy",
        metric_label="SST-2 validation accuracy (%)",
        percent=True,
        higher_is_better=True,
        common={"dataset_name": "sst2", "max_grad_norm": 1.0, "per_device_eval_batch_size": 128},
        models={
            "RNN": {**RNN_SST2, "cell_type": "rnn"},
            "LSTM": {**RNN_SST2, "cell_type": "lstm"},
            "GRU": {**RNN_SST2, "cell_type": "gru"},
            "BiLSTM": {**RNN_SST2, **BILSTM},
            "BiLSTM 2x256": {**RNN_SST2, **BILSTM, **WIDE, "hidden_size": 256},
            "BiLSTM + MiniLM emb.": {**RNN_SST2, **BILSTM, **PRETRAINED_EMBEDDINGS, "dropout": 0.3},
            "Transformer": {**TRANSFORMER, "tokenizer_type": "word", "per_device_train_batch_size": 64},
            "BERT (MiniLM-L6)": FINE_TUNED,
        },
        cpu_budget={"time_budget_minutes": 4.5, "num_train_epochs": 2},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 3},
        cpu_steps={"BERT (MiniLM-L6)": 420},
        targets={"BiLSTM": 0.85, "BiLSTM 2x256": 0.85, "BiLSTM + MiniLM emb.": 0.85, "BERT (MiniLM-L6)": 0.88},
        extra_columns=[("eval_f1", "macro-F1 (%)")],
    ),
    "ner": Suite(
        module=token_classification,
        task="token-classification",
        metric="eval_accuracy",
        metric_label="UD EWT UPOS validation accuracy (%)",
        percent=True,
        higher_is_better=True,
        common={"dataset_name": "ud_english_ewt", "label_column_name": "upos", "max_grad_norm": 1.0,
                "per_device_eval_batch_size": 128},
        models={
            "BiLSTM": {**RNN_TAGGER, **BILSTM},
            "BiLSTM 2x384": {**RNN_TAGGER, **BILSTM, **WIDE, "hidden_size": 384},
            "BiLSTM + MiniLM emb. + spelling": {**RNN_TAGGER, **BILSTM, **PRETRAINED_EMBEDDINGS,
                                                "spelling_features": 32, "dropout": 0.5,
                                                "per_device_train_batch_size": 16},
            "Transformer": {**TRANSFORMER, "tokenizer_type": "wordpiece", "per_device_train_batch_size": 32},
            "BERT (MiniLM-L6)": FINE_TUNED,
        },
        cpu_budget={"time_budget_minutes": 9, "num_train_epochs": 4},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 10},
        cpu_steps={"BERT (MiniLM-L6)": 600},
        targets={"BiLSTM": 0.94, "BiLSTM 2x384": 0.94, "BiLSTM + MiniLM emb. + spelling": 0.94,
                 "BERT (MiniLM-L6)": 0.96},
        extra_columns=[("eval_f1", "macro-F1 (%)")],
    ),
    "lm": Suite(
        module=language_modeling,
        task="text-generation",
        metric="eval_perplexity",
        metric_label="PTB validation perplexity",
        percent=False,
        higher_is_better=False,
        common={"dataset_name": "ptb"},
        models={name: {"cell_type": cell} for name, cell in (("RNN", "rnn"), ("LSTM", "lstm"), ("GRU", "gru"))},
        cpu_budget={"time_budget_minutes": 3, "num_train_epochs": 1},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 20},
    ),
    "en_zh": tatoeba_suite("en", "zh", "tok zh"),
    "zh_en": tatoeba_suite("zh", "en", "13a"),
    "wnut17": Suite(
        module=token_classification,
        task="token-classification",
        metric="test_seqeval_f1",
        metric_label="WNUT-17 test entity F1 (%)",
        percent=True,
        higher_is_better=True,
        common={"dataset_name": "wnut17", "label_column_name": "ner_tags", "max_grad_norm": 1.0,
                "per_device_eval_batch_size": 128, "metric_for_best_model": "eval_seqeval_f1"},
        models={"BiLSTM": {**TAGGERS["BiLSTM"], **WNUT17_TAGGER},
                "BiLSTM-CRF": {**TAGGERS["BiLSTM-CRF"], **WNUT17_TAGGER, "crf_constrain_bio": True},
                "BERT (MiniLM-L6)": FINE_TUNED},
        cpu_budget={"time_budget_minutes": 4, "num_train_epochs": 10},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 30},
        extra_columns=[("test_seqeval_precision", "precision (%)"), ("test_seqeval_recall", "recall (%)"),
                       ("eval_seqeval_f1", "validation F1 (%)")],
    ),
    "upos": Suite(
        module=token_classification,
        task="token-classification",
        metric="test_accuracy",
        metric_label="UD EWT UPOS test accuracy (%)",
        percent=True,
        higher_is_better=True,
        common={"dataset_name": "ud_english_ewt", "label_column_name": "upos", "max_grad_norm": 1.0,
                "per_device_eval_batch_size": 128},
        models={**TAGGERS, "BERT (MiniLM-L6)": FINE_TUNED},
        cpu_budget={"time_budget_minutes": 5, "num_train_epochs": 4},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 10},
        cpu_steps={"BERT (MiniLM-L6)": 400},
        extra_columns=[("eval_accuracy", "validation accuracy (%)")],
    ),
    "sst2_word_vectors": Suite(
        module=text_classification,
        task="text-classification",
        metric="test_accuracy",
        metric_label="SST-2 test accuracy (%)",
        percent=True,
        higher_is_better=True,
        common={"dataset_name": "sst2", "max_grad_norm": 1.0, "per_device_eval_batch_size": 128},
        word_vectors={"dataset_name": "sst2", "text_column_name": ["sentence"], "model": "word2vec", "sg": 1,
                      "vector_size": 128, "epochs": 5, "min_count": 2},
        models={
            "BiLSTM": {**RNN_SST2, **BILSTM},
            "BiLSTM + word2vec, frozen": {**RNN_SST2, **BILSTM, "word_vectors": WORD_VECTORS,
                                          "freeze_embeddings": True},
            "BiLSTM + word2vec, fine-tuned": {**RNN_SST2, **BILSTM, "word_vectors": WORD_VECTORS},
        },
        cpu_budget={"time_budget_minutes": 4, "num_train_epochs": 2},
        full_budget={"time_budget_minutes": 30, "num_train_epochs": 5},
        extra_columns=[("eval_accuracy", "validation accuracy (%)")],
    ),
    "translation": Suite(
        module=translation,
        task="translation",
        metric="eval_bleu",
        metric_label="Multi30k en-de validation BLEU",
        percent=False,
        higher_is_better=True,
        models={"Attention seq2seq": {"model_type": "attention_seq2seq"}, "Transformer": {"model_type": "transformer"}},
        cpu_budget={"time_budget_minutes": 5, "num_train_epochs": 1},
        full_budget={"time_budget_minutes": 60, "num_train_epochs": 20},
        extra_columns=[("eval_chrf", "chrF")],
    ),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="+", choices=list(SUITES), help="The suites to run, in order.")
    parser.add_argument("--models", help="Comma-separated model names of the suite (default: all). Without "
                                         "--update, refused when results/<suite>.json holds runs of other models.")
    parser.add_argument("--full", action="store_true", help="The GPU budget (full epochs) instead of the CPU one.")
    parser.add_argument("--time_budget_minutes", type=float, help="Override the suite's time budget per model.")
    parser.add_argument("--max_train_steps", type=int, help="Cap every model at this many steps (smoke runs).")
    parser.add_argument("--max_train_samples", type=int, help="Train on the first N rows only (smoke runs).")
    parser.add_argument("--max_eval_samples", type=int, help="Score the first N validation rows only (smoke runs).")
    parser.add_argument("--seed", type=int, default=42, help="The seed of every run.")
    parser.add_argument("--num_threads", type=int, default=1,
                        help="Torch threads per run (OMP_NUM_THREADS); 1 suits a shared CPU, 0 = all cores.")
    parser.add_argument("--jobs", type=int, default=1,
                        help="Models trained at once (a GPU has room for several small ones; their train times and "
                             "throughputs then include the contention).")
    parser.add_argument("--update", action="store_true",
                        help="Re-run only --models and replace their rows of the existing results/<suite>.json, "
                             "keeping the other runs (which must share the budget, seed and threads).")
    parser.add_argument("--results_dir", default=str(REPO_ROOT / "results"), help="Where <suite>.json/.md/.png go.")
    parser.add_argument("--output_dir", default=str(REPO_ROOT / "outputs" / "compare"),
                        help="Where each model folder goes: <output_dir>/<suite>/<model> (replacing an earlier run's).")
    args = parser.parse_args(argv)
    for name in ("time_budget_minutes", "max_train_steps", "max_train_samples", "max_eval_samples", "jobs"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive, got {getattr(args, name)}.")
    if args.num_threads < 0:
        parser.error(f"--num_threads must be 0 (all cores) or positive, got {args.num_threads}.")
    return args


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def budget_of(suite: Suite, args: argparse.Namespace) -> dict:
    budget = dict(suite.full_budget if args.full else suite.cpu_budget)
    if args.time_budget_minutes is not None:
        budget["time_budget_minutes"] = args.time_budget_minutes
    return budget


def run_fields(suite: Suite, name: str, budget: dict, args: argparse.Namespace, output_dir: Path,
               vectors: Path | None = None) -> dict:
    """The fields of one model's run: the suite's, the model's (WORD_VECTORS replaced by ``vectors``), the budget,
    the seed and the smoke-run limits."""
    model = {key: str(vectors) if value == WORD_VECTORS else value for key, value in suite.models[name].items()}
    fields = {**suite.common, **model, **budget, "seed": args.seed, "output_dir": str(output_dir),
              "overwrite_output_dir": True}  # a model's folder holds its earlier run, if any
    steps = args.max_train_steps or (None if args.full else suite.cpu_steps.get(name))
    if steps is not None:
        fields["max_train_steps"] = steps
    for key in ("max_train_samples", "max_eval_samples"):
        if getattr(args, key) is not None:
            fields[key] = getattr(args, key)
    return fields


def run_model(suite: Suite, name: str, fields: dict, num_threads: int) -> dict:
    """Run one model of the suite in its own process; return its results.json with the suite's fields added, or
    an error."""
    output_dir = Path(fields["output_dir"])
    log = output_dir.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    exitcode = run_in_process(suite.module.__name__, parse_dict(suite.module, fields), log, num_threads)
    record = {"name": name, "task": suite.task, "fields": fields, "log": str(log)}
    if exitcode or not (output_dir / "results.json").is_file():
        tail = log.read_text()[-2000:]
        print(f"  {name} FAILED (exit {exitcode}); see {log}:\n{tail}", file=sys.stderr)
        return {**record, "error": f"exit code {exitcode}", "log_tail": tail}
    results = json.loads((output_dir / "results.json").read_text())
    return {**results, **record, "process_wall_time_s": time.monotonic() - start}


def train_word_vectors(suite: Suite, args: argparse.Namespace, output_dir: Path) -> dict:
    """Run the suite's ``word_vectors`` fields (`tasks.word_vectors`) in their own process, writing
    ``output_dir / "word-vectors.vec"``; returns the record for the report (fields, file, wall time)."""
    path = output_dir / "word-vectors.vec"
    fields = {**suite.word_vectors, "output_file": str(path), "overwrite": True, "seed": args.seed}
    if args.max_train_samples is not None:
        fields["max_train_samples"] = args.max_train_samples
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
    for key in ("budget", "full", "seed", "num_threads"):
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
    if dropped := [run["name"] for run in json.loads(path.read_text())["runs"] if run["name"] not in names]:
        raise SystemExit(f"{path} holds the runs of {dropped}, which a run of only {names} would drop: pass "
                         "--update to re-run these models and keep the others, or --results_dir to write elsewhere.")


def write_json(path: Path, data: dict) -> None:
    temp = path.with_suffix(".json.tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n")
    temp.replace(path)


def markdown(suite_name: str, suite: Suite, report: dict) -> str:
    budget = report["budget"]
    lines = [
        f"# {suite_name}: {suite.metric_label}",
        "",
        f"Budget per model: at most {budget.get('time_budget_minutes')} min of training and "
        f"{budget.get('num_train_epochs')} epoch(s)"
        + (f"; step caps: {report['step_caps']}" if report.get("step_caps") else "")
        + f". Seed {report['seed']}, {report['num_threads'] or 'all'} thread(s) per run"
        + (f", {report['jobs']} runs at once" if report.get("jobs", 1) > 1 else "") + ". "
        f"Command: `python scripts/compare.py {suite_name}{' --full' if report['full'] else ''}`; the runs took "
        f"{sum(run.get('process_wall_time_s', 0) for run in report['runs']) / 60:.1f} min of wall-clock time.",
        "",
    ]
    if vectors := report.get("word_vectors"):
        options = {key: value for key, value in vectors["fields"].items() if key not in ("output_file", "overwrite")}
        lines += [f"Word vectors trained first (`tasks.word_vectors`, {vectors['process_wall_time_s'] / 60:.1f} "
                        f"min): {options}.", ""]
    extra = [header for _, header in suite.extra_columns]
    lines.append("| model | " + " | ".join([suite.metric_label, *extra, "target", "parameters", "train time (min)",
                                            "steps (epochs)", "inference (rows/s)", "device"]) + " |")
    lines.append("|---" * (len(extra) + 8) + "|")
    for run in report["runs"]:
        if "error" in run:
            lines.append(f"| {run['name']} | failed: {run['error']} (log {run['log']}) |" + " |" * (len(extra) + 6))
            continue
        target = suite.targets.get(run["name"])
        target_cell = "" if target is None else (
            f"{format_metric(target, suite.percent)} "
            f"{'met' if (run[suite.metric] >= target) == suite.higher_is_better else 'missed'}")
        cells = [
            format_metric(run[suite.metric], suite.percent),
            *[format_metric(run[key], suite.percent) if key in run else "n/a" for key, _ in suite.extra_columns],
            target_cell,
            f"{run['num_parameters'] / 1e6:.2f}M",
            f"{run['train_runtime_s'] / 60:.1f}",
            f"{run['steps']} ({run['epochs']:.2f})" + (" time-capped" if run.get("stopped_by_time_budget") else ""),
            f"{run['eval_samples_per_second']:.0f}" if "eval_samples_per_second" in run else "n/a",
            run.get("device", "n/a"),
        ]
        lines.append(f"| {run['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def bar_chart(path: Path, suite: Suite, runs: list[dict]) -> None:
    runs = [run for run in runs if "error" not in run]
    values = [run[suite.metric] * (100 if suite.percent else 1) for run in runs]
    figure, axis = plt.subplots(figsize=(1.4 * max(len(runs), 3) + 1, 4))
    bars = axis.bar([run["name"] for run in runs], values, color="tab:blue")
    axis.bar_label(bars, labels=[format_metric(run[suite.metric], suite.percent) for run in runs])
    targeted = [(i, suite.targets[run["name"]]) for i, run in enumerate(runs) if run["name"] in suite.targets]
    for j, (i, target) in enumerate(targeted):
        axis.hlines(target * (100 if suite.percent else 1), i - 0.4, i + 0.4, colors="tab:red", linestyles="--",
                    label="target" if j == 0 else None)
    if values and suite.percent:
        axis.set_ylim(max(0, min(values) - 10), 100)
    axis.set_ylabel(suite.metric_label)
    axis.set_title(f"{suite.metric_label}, {runs[0]['device'] if runs and 'device' in runs[0] else ''}", fontsize=9)
    if targeted:
        axis.legend(loc="lower right")
    axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run_suite(suite_name: str, args: argparse.Namespace) -> dict:
    suite = SUITES[suite_name]
    names = list(suite.models) if not args.models else [name.strip() for name in args.models.split(",")]
    if unknown := [name for name in names if name not in suite.models]:
        raise SystemExit(f"Unknown model(s) {unknown} for suite {suite_name!r}; choose from {list(suite.models)}.")
    budget = budget_of(suite, args)
    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "suite": suite_name, "task": suite.task, "metric": suite.metric, "budget": budget, "full": args.full,
        "step_caps": {} if args.full else {n: s for n, s in suite.cpu_steps.items() if n in names},
        "seed": args.seed, "num_threads": args.num_threads, "jobs": args.jobs, "runs": [],
    }
    if args.max_train_steps:
        report["step_caps"] = {name: args.max_train_steps for name in names}
    kept = []
    if args.update:
        kept, caps = kept_runs(results_dir / f"{suite_name}.json", report, names)
        report["step_caps"] = {**caps, **report["step_caps"]}
    else:
        check_nothing_dropped(results_dir / f"{suite_name}.json", names)
    order = list(suite.models)
    vectors = None
    if suite.word_vectors is not None:
        report["word_vectors"] = train_word_vectors(suite, args, Path(args.output_dir) / suite_name)
        vectors = Path(report["word_vectors"]["file"])

    def run_one(name: str) -> dict:
        fields = run_fields(suite, name, budget, args, Path(args.output_dir) / suite_name / slug(name), vectors)
        print(f"[{suite_name}] {name}: {fields}", flush=True)
        run = run_model(suite, name, fields, args.num_threads)
        if "error" not in run:
            print(f"  {name}: {suite.metric} = {format_metric(run[suite.metric], suite.percent)}, "
                  f"{run['train_runtime_s'] / 60:.1f} min, {run['steps']} steps", flush=True)
        return run

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = []
        for run in pool.map(run_one, names):  # in the suite's order, each written as soon as it and those before are
            done.append(run)
            report["runs"] = sorted(kept + done, key=lambda run: order.index(run["name"]))
            write_json(results_dir / f"{suite_name}.json", report)
    (results_dir / f"{suite_name}.md").write_text(markdown(suite_name, suite, report))
    bar_chart(results_dir / f"{suite_name}.png", suite, report["runs"])
    return report


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    reports = []
    for suite_name in args.suites:
        reports.append(run_suite(suite_name, args))
        print((Path(args.results_dir) / f"{suite_name}.md").read_text())
    if failed := [f"{report['suite']}/{run['name']}" for report in reports for run in report["runs"] if "error" in run]:
        raise SystemExit(f"Failed runs (their logs are named in the results): {', '.join(failed)}")
    return reports


if __name__ == "__main__":
    main()
