"""Model cards rendered from results files, and the Hub folder a trained model is uploaded as.

A *run* is the ``results.json`` a script writes next to its model (scores, training facts and ``arguments``);
``results/<suite>.json`` from ``scripts/compare.py`` holds one run per model under ``"runs"``. `render_card` fills
the task's template in ``model_cards/`` from one run, so the card states exactly the run's numbers: the values in
the YAML ``model-index`` are the results file's floats, the tables use `format_metric`, as compare.py's tables do.
Cards of translation and language models also state what ``python -m benchmarks.run`` measured on their family
(`speed_lines`, from ``results/benchmarks.json``).

`stage_hub_folder` copies what a Hub repo needs (safetensors weights, config.json with ``auto_map`` and the code
files it names, tokenizer files, results.json) and writes the card as README.md; `check_hub_folder` validates that
folder offline; `load_check` loads it back through the Auto classes with ``trust_remote_code=True`` in a clean
subprocess where ``hf_seqmodels`` cannot be imported.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from .models.pipeline_translation import SOURCE_TOKENIZER_DIR
from .paths import REPO_ROOT

TEMPLATE_DIR = REPO_ROOT / "model_cards"

# task -> the Auto class its models load with, and the scores its card reports:
# (results key, Hub metric id, display name, whether it is a fraction shown in percent)
TASKS = {
    "text-classification": {
        "auto_class": "AutoModelForSequenceClassification",
        "metrics": [("eval_accuracy", "accuracy", "Accuracy", True), ("eval_f1", "f1", "Macro-F1", True)],
    },
    "token-classification": {
        "auto_class": "AutoModelForTokenClassification",
        "metrics": [
            ("eval_accuracy", "accuracy", "Token accuracy", True),
            ("eval_f1", "f1", "Macro-F1", True),
            ("eval_seqeval_f1", "seqeval", "Entity F1 (seqeval)", True),
        ],
    },
    "text-generation": {
        "auto_class": "AutoModelForCausalLM",
        "metrics": [("eval_perplexity", "perplexity", "Perplexity", False)],
    },
    "translation": {
        "auto_class": "AutoModelForSeq2SeqLM",
        "metrics": [("eval_bleu", "bleu", "BLEU", False), ("eval_chrf", "chrf", "chrF", False)],
    },
}

# Bundled data set -> its Hub identity (for the model-index), a readable name and what the card says about it.
DATASETS = {
    "sst2": {
        "hub_id": "glue", "config": "sst2", "name": "SST-2 (GLUE)", "language": "en",
        "about": "Stanford Sentiment Treebank, binary (Socher et al., 2013), as packaged in GLUE: 67,349 training "
                 "phrases and sentences from Rotten Tomatoes movie reviews, lowercased and PTB-tokenized; scored on "
                 "the 872 labelled validation sentences (GLUE's test labels are hidden).",
        "license": None,
        "limitations": ["English movie-review snippets only, lowercased and PTB-tokenized as in GLUE; other domains, "
                        "casing or tokenization will lower accuracy.",
                        "Binary sentiment only: no neutral class; sarcasm, negation scope and mixed opinions remain "
                        "hard.",
                        "The reviews carry the opinions and biases of their writers."],
    },
    "ud_english_ewt": {
        "hub_id": "universal_dependencies", "config": "en_ewt", "name": "UD English-EWT (UPOS)", "language": "en",
        "about": "Universal Dependencies English Web Treebank (weblogs, newsgroups, emails, reviews, Yahoo! Answers): "
                 "12,544 training sentences (204,577 words) tagged with the 17 universal POS tags; scored on the "
                 "2,001 dev sentences (25,147 words).",
        "license": "cc-by-sa-4.0",
        "limitations": ["English web text only; other genres (social media, transcribed speech) and other languages "
                        "will tag worse.",
                        "Words must be tokenized as UD does (clitics such as \"n't\" are words of their own).",
                        "The annotations are CC BY-SA 4.0: share derived models under the same license."],
    },
    "ptb": {
        "hub_id": "ptb_text_only", "config": None, "name": "Penn Treebank (Mikolov)", "language": "en",
        "about": "Mikolov's word-level Penn Treebank: 887k training words, 10k vocabulary.",
        "license": None,
        "limitations": ["1989 Wall Street Journal text, lowercased, numbers as N, 10k words: samples reflect that "
                        "text's topics and biases and are not fit to show people.",
                        "Penn Treebank data is licensed by the LDC for research use."],
    },
    "multi30k_en_de": {
        "hub_id": "bentrevett/multi30k", "config": None, "name": "Multi30k English-German", "language": ["en", "de"],
        "about": "Multi30k (Elliott et al., 2016): 29,000 English image captions with German translations.",
        "license": None,
        "limitations": ["Image captions only: short descriptive sentences; other domains translate poorly.",
                        "Flickr30k captions are for non-commercial research use."],
    },
}

CELLS = {"rnn": "Elman RNN", "lstm": "LSTM", "gru": "GRU"}
ATTENTIONS = {"bahdanau": "Bahdanau (additive) attention", "luong_dot": "Luong dot attention",
              "luong_general": "Luong general attention", "luong_concat": "Luong concat attention",
              "none": "no attention (the source reaches the decoder through its initial state)"}

# Bundled pretrained checkpoints -> their Hub id (the card's base_model).
BASE_MODELS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}

WEIGHT_FILES = ("*.safetensors", "model.safetensors.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "vocab.json",
                   "merges.txt", "added_tokens.json", "chat_template.jinja")
OTHER_FILES = ("config.json", "generation_config.json", "results.json")
PICKLE_FILES = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")


def format_metric(value: float, percent: bool) -> str:
    """How every table shows a score: fractions as percent with two decimals, others with two decimals."""
    return f"{100 * value:.2f}" if percent else f"{value:.2f}"


def load_run(results_file: str | Path, model: str | None = None) -> dict:
    """One run from ``results_file``: a script's ``results.json``, or ``results/<suite>.json`` with ``model``
    naming the run (its ``name``)."""
    data = json.loads(Path(results_file).read_text())
    if "runs" not in data:
        return data
    names = [run["name"] for run in data["runs"]]
    if model not in names:
        raise ValueError(f"{results_file} has runs {names}; pick one with --model (got {model!r}).")
    return data["runs"][names.index(model)]


def _dataset(run: dict) -> dict:
    name = run.get("dataset") or run.get("arguments", {}).get("dataset_name") or "custom"
    known = DATASETS.get(Path(str(name)).name)
    return known or {"hub_id": str(name), "config": None, "name": str(name), "language": None,
                     "about": f"The data set {name}.", "license": None,
                     "limitations": ["Only as good as its training data: check it on your own data before use."]}


def _base_model(run: dict) -> str | None:
    path = run.get("arguments", {}).get("model_name_or_path")
    return None if not path else BASE_MODELS.get(Path(path).name, path)


def describe_architecture(run: dict) -> str:
    """One sentence on the model: from its configuration for the generative scripts (``model_config``), else from
    the run's arguments."""
    args = run.get("arguments", {})
    parameters = f"{run['num_parameters'] / 1e6:.2f}M parameters"
    if config := run.get("model_config"):
        return _describe_generative(config, parameters)
    if base := _base_model(run):
        return f"A pretrained encoder ({base}) fine-tuned with a new {run['task']} head; {parameters}."
    if args.get("model_type") == "transformer":
        return (f"A Transformer encoder (Vaswani et al., 2017) trained from scratch: {args['num_layers']} layers, "
                f"d_model {args['hidden_size']}, {args['num_heads']} heads, feed-forward {args['ffn_dim']}; "
                f"{parameters}.")
    cell = CELLS[args.get("cell_type", "lstm")]
    direction = "bidirectional " if args.get("bidirectional") else ""
    if pretrained := args.get("embeddings_from"):
        name = BASE_MODELS.get(Path(pretrained).name, pretrained)
        start, embeddings = f"trained with its word embeddings started from {name}'s", ""
    else:
        start, embeddings = "trained from scratch", f", {args['embedding_size']}-dimensional embeddings"
    spelling = (f", plus {args['spelling_features']} character-CNN features of each token's spelling"
                if args.get("spelling_features") else "")
    return (f"{_a(direction + cell)} {start}: {args['num_layers']} layer(s) of {args['hidden_size']} units"
            f"{embeddings}{spelling}; {parameters}.")


def _a(phrase: str) -> str:
    """``phrase`` with its indefinite article: "An LSTM", "An Elman RNN", "A GRU", "A bidirectional LSTM"."""
    return ("An " if phrase.startswith(("LSTM", "Elman")) else "A ") + phrase


def _describe_generative(config: dict, parameters: str) -> str:
    """One sentence on a translation model or language model, from its ``config.json`` fields."""
    kind = config["model_type"]
    if kind == "attention_seq2seq":
        cell = CELLS[config["cell_type"]]
        encoder = ("bidirectional " if config["bidirectional_encoder"] else "") + cell
        attention = ATTENTIONS[config["attention_type"]] + (" with input feeding" if config["input_feeding"] else "")
        what = "An encoder-decoder" if config["attention_type"] == "none" else "An attention encoder-decoder"
        return (f"{what} trained from scratch: a {encoder} encoder of "
                f"{config['encoder_layers']} layer(s) and a {cell} decoder of {config['decoder_layers']} layer(s), "
                f"{config['hidden_size']} units, {config['embedding_size']}-dimensional embeddings, {attention}; "
                f"{parameters}.")
    if kind == "vanilla_transformer":
        what, layers = (("encoder-decoder", f"{config['encoder_layers']} encoder and {config['decoder_layers']} "
                                            "decoder layers")
                        if config["is_encoder_decoder"] else ("language model", f"{config['decoder_layers']} layers"))
        return (f"A Transformer {what} (Vaswani et al., 2017) trained from scratch: {layers}, d_model "
                f"{config['d_model']}, {config['num_heads']} heads, feed-forward {config['ffn_dim']}, "
                f"{config['norm_position']}-norm; {parameters}.")
    return (f"{_a(CELLS[config['cell_type']])} language model trained from scratch: {config['num_layers']} layer(s) "
            f"of {config['hidden_size']} units, {config['embedding_size']}-dimensional embeddings; {parameters}.")


def _family_tag(run: dict) -> str:
    """``lstm``, ``bigru``, ``transformer``..., or a pretrained checkpoint's transformers model_type (``bert``)."""
    args = run.get("arguments", {})
    if config := run.get("model_config"):
        return config.get("cell_type", "transformer")
    if args.get("model_name_or_path"):
        return run.get("model_type", "pretrained")
    if args.get("model_type") == "transformer":
        return "transformer"
    return ("bi" if args.get("bidirectional") else "") + args.get("cell_type", "lstm")


def card_data(run: dict, model_name: str, license: str | None = None) -> ModelCardData:
    """The card's YAML metadata: model-index with every score of the run, license, library, tags, data sets."""
    task, dataset = run["task"], _dataset(run)
    results = [
        EvalResult(task_type=task, dataset_type=dataset["hub_id"], dataset_name=dataset["name"],
                   dataset_config=dataset["config"], dataset_split="validation", metric_type=metric,
                   metric_name=name, metric_value=run[key])
        for key, metric, name, _ in TASKS[task]["metrics"] if key in run
    ]
    base = _base_model(run)
    tags = ["hf_seqmodels", _family_tag(run), task] + ([] if base else ["custom_code"])
    return ModelCardData(
        model_name=model_name,
        eval_results=results,
        license=license or dataset["license"] or "apache-2.0",
        library_name="transformers",
        pipeline_tag=task,
        tags=tags,
        datasets=[dataset["hub_id"]],
        language=dataset["language"],
        metrics=sorted({result.metric_type for result in results}),
        base_model=base,
    )


def _hyperparameters(run: dict) -> list[tuple[str, str]]:
    args = run.get("arguments", {})
    rows = [
        ("optimizer", f"{args.get('optimizer')} (lr {args.get('learning_rate')}, weight decay "
                      f"{args.get('weight_decay')}, {args.get('lr_scheduler_type')} schedule, "
                      f"{args.get('num_warmup_steps')} warmup steps)"),
        ("batch size", f"{args.get('per_device_train_batch_size')} x {run.get('num_processes', 1)} process(es)"),
        ("gradient clipping", str(args.get("max_grad_norm"))),
        ("budget", f"{args.get('num_train_epochs')} epoch(s)"
                   + (f", at most {args['max_train_steps']} steps" if args.get("max_train_steps") else "")
                   + (f", at most {args['time_budget_minutes']} min" if args.get("time_budget_minutes") else "")),
        ("trained", f"{run['steps']} steps ({run['epochs']:.2f} epochs) in {run['train_runtime_s'] / 60:.1f} min"
                    + (" (stopped by the time budget)" if run.get("stopped_by_time_budget") else "")),
        ("seed", str(args.get("seed"))),
    ]
    if "max_source_length" in args:  # translation
        rows.append(("max sequence length", f"source {args['max_source_length']}, target {args['max_target_length']}"))
        rows.append(("tokenizer", f"BPE trained on the training texts, {args['vocabulary']} vocabulary, "
                                  f"{run.get('vocab_size')} tokens"))
    else:
        rows.append(("max sequence length", str(args.get("block_size", args.get("max_seq_length")))))
        if not args.get("model_name_or_path"):
            rows.append(("tokenizer", f"{args.get('tokenizer_type')} trained on the training texts, "
                                      f"{run.get('vocab_size')} tokens"))
    if not args.get("model_name_or_path"):
        rows.append(("dropout", str(run.get("model_config", args).get("dropout"))))
    return rows


def speed_lines(run: dict, benchmarks: dict) -> list[str]:
    """What ``python -m benchmarks.run`` measured on the run's model family, one sentence a figure, from its
    results (``results/benchmarks.json``); none for a family the benchmarks do not measure."""
    config = run.get("model_config") or {}
    entries = benchmarks.get("entries", {})

    def summary(entry: str, label: str | None = None) -> dict:
        found = entries.get(entry, {}).get("summary", {})
        return found if label is None else found.get(label, {})

    kind, lines = config.get("model_type"), []
    if kind == "attention_seq2seq":
        prefix = f"attention {config['cell_type'].upper()} "
        label = next((key for key in summary("translation") if key.startswith(prefix)), None)
        if found := summary("translation", label):
            lines.append(f"{label}: batched `generate(num_beams=5)` (batches of 64) ran "
                         f"{found['speedup_vs_matched']}x as fast as a per-sentence Python beam search with the "
                         f"same semantics, {found['sorted_speedup_vs_matched']}x with batches sorted by source "
                         f"length, and found the same best hypothesis for {found['agreement_matched']:.0%} of the "
                         "sentences.")
        if found := summary("batch1_overhead", label):
            lines.append(f"{label}: at batch 1, `generate()` ran at {found['greedy, generate()']} (greedy) and "
                         f"{found['beam 5, generate()']} (beam 5) of the speed of a plain decoding loop.")
    elif kind == "vanilla_transformer" and config["is_encoder_decoder"]:
        if found := summary("transformer_vs_marian"):
            lines.append(f"Against transformers' MarianMTModel of the same sizes: {found['train']['ratio']}x its "
                         f"training throughput, {found['greedy']['ratio']}x its greedy and {found['beam']['ratio']}x "
                         f"its beam-search `generate()` speed; {found['greedy_vs_tutorial']['ratio']}x the speed of a "
                         "tutorial greedy loop that recomputes the prefix at every step.")
    elif kind in ("recurrent", "vanilla_transformer"):
        label = f"recurrent LM ({config['cell_type']})" if kind == "recurrent" else "transformer LM"
        if found := summary("incremental", label):
            lines.append(f"{label}: with the cache, a token after a 1024-token prefix took "
                         f"{found['per_token_growth_1024_vs_16']['cached']}x the time of one after 16 tokens, "
                         f"{found['cache_speedup_at_1024']}x less than recomputing the prefix.")
        training = entries.get("training", {})
        if kind == "recurrent" and training.get("sizes", {}).get("cell_type") == config["cell_type"]:
            lines.append(f"{label}: training on padded, masked batches ran at "
                         f"{training['summary']['masked_vs_tutorial_throughput']}x the throughput of the tutorial "
                         "per-timestep cell loop.")
    return lines


def speed_source(benchmarks: dict) -> str:
    """Where the benchmark figures come from: the machine and versions of their results file."""
    machine = benchmarks.get("machine", {})
    where = machine.get("gpu") or f"{machine.get('cpu_count')} cores of an {machine.get('cpu')} CPU"
    return (f"on {where} (torch {machine.get('torch')}, hf_seqmodels {machine.get('git_commit')}), with the "
            "benchmarks' own model sizes, not this model's")


def render_card(run: dict, model_name: str | None = None, license: str | None = None,
                template_dir: str | Path | None = None, benchmarks: dict | None = None) -> ModelCard:
    """The model card of ``run`` from the task's template (``<template_dir>/<task>.md``); with ``benchmarks`` (the
    results of ``python -m benchmarks.run``), also what they measured on the model's family (`speed_lines`)."""
    task = run.get("task")
    if task not in TASKS:
        raise ValueError(f"The run's task {task!r} has no card template; known tasks: {list(TASKS)}.")
    model_name = model_name or run.get("name") or "model"
    data = card_data(run, model_name, license)
    dataset = _dataset(run)
    scores = [(name, format_metric(run[key], percent)) for key, _, name, percent in TASKS[task]["metrics"]
              if key in run]
    template = Path(template_dir or TEMPLATE_DIR) / f"{task}.md"
    return ModelCard.from_template(
        data,
        template_path=str(template),
        model_name=model_name,
        architecture=describe_architecture(run),
        dataset_name=dataset["name"],
        dataset_about=dataset["about"],
        limitations=dataset["limitations"],
        labels=run.get("labels", []),
        tag_scheme=run.get("tag_scheme"),
        hyperparameters=_hyperparameters(run),
        scores=scores,
        num_parameters=f"{run['num_parameters'] / 1e6:.2f}M",
        train_minutes=f"{run['train_runtime_s'] / 60:.1f}",
        throughput=f"{run['eval_samples_per_second']:.0f}" if "eval_samples_per_second" in run else "n/a",
        device=run.get("device", "unknown"),
        auto_class=TASKS[task]["auto_class"],
        trust_remote_code=not data.base_model,
        speed=speed_lines(run, benchmarks or {}),
        speed_source=speed_source(benchmarks or {}),
    )


def _matches(name: str, patterns) -> bool:
    return any(Path(name).match(pattern) for pattern in patterns)


def _code_files(config: dict) -> list[str]:
    """The module files the config's ``auto_map`` names (``"modeling_x.Class"`` -> ``modeling_x.py``)."""
    references = [ref for refs in config.get("auto_map", {}).values()
                  for ref in (refs if isinstance(refs, list) else [refs]) if ref]
    return sorted({ref.split("--")[-1].rsplit(".", 1)[0] + ".py" for ref in references})


def check_model_dir(model_dir: str | Path) -> None:
    """Raise a ValueError unless ``model_dir`` is a folder with a config.json (the output_dir of a training script)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise ValueError(f"{model_dir}: no such folder ({model_dir.absolute()}); pass the output_dir of a training "
                         "script.")
    if not (model_dir / "config.json").is_file():
        raise ValueError(f"{model_dir} has no config.json: pass the output_dir of a training script.")


def stage_hub_folder(model_dir: str | Path, target: str | Path, card: ModelCard) -> list[str]:
    """Copy the files a Hub repo needs from ``model_dir`` into a fresh ``target`` and write ``card`` as README.md.

    Copied: weights (safetensors only), config.json, generation_config.json, results.json, tokenizer files (and
    those of a translation model's ``source_tokenizer/``), and every ``.py`` file in ``model_dir`` (the remote code
    ``save_pretrained`` wrote next to config.json). Pickle weights (``*.bin``...) are refused: they run code when
    loaded. An existing ``target`` is replaced only if it is a folder staged earlier; it may not overlap
    ``model_dir``.

    Returns:
        The staged file names, sorted.
    """
    model_dir, target = Path(model_dir), Path(target)
    check_model_dir(model_dir)
    if pickles := sorted(p.name for p in model_dir.iterdir() if _matches(p.name, PICKLE_FILES)):
        raise ValueError(f"{model_dir} holds pickle weights {pickles}; save with safetensors (save_pretrained's "
                         "default) and remove them before uploading.")
    model, staged = model_dir.resolve(), target.resolve()
    if staged == model or model in staged.parents or staged in model.parents:
        raise ValueError(f"The staging folder {target} and the model folder {model_dir} overlap: stage elsewhere "
                         "(the default is <model_dir>-hub).")
    if target.exists():
        if not (target / "README.md").is_file() or not (target / "config.json").is_file():
            raise ValueError(f"{target} exists and is not a folder staged earlier (README.md and config.json): "
                             "nothing there is deleted; pass another --staging_dir or remove it yourself.")
        shutil.rmtree(target)  # an earlier staging of a model, replaced whole
    target.mkdir(parents=True)
    for path in sorted(model_dir.iterdir()):
        if path.is_file() and (_matches(path.name, WEIGHT_FILES + OTHER_FILES) or path.name in TOKENIZER_FILES
                               or path.suffix == ".py"):
            shutil.copy2(path, target / path.name)
    if (source := model_dir / SOURCE_TOKENIZER_DIR).is_dir():
        (target / SOURCE_TOKENIZER_DIR).mkdir()
        for path in source.iterdir():
            if path.name in TOKENIZER_FILES:
                shutil.copy2(path, target / SOURCE_TOKENIZER_DIR / path.name)
    card.save(target / "README.md")
    return sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())


def check_hub_folder(folder: str | Path, run: dict | None = None) -> None:
    """Validate a staged folder offline; raise a ValueError listing every problem.

    Checks: safetensors weights and no pickles; config.json, and for a model type transformers does not know an
    ``auto_map`` whose code files are all present (with their sibling imports); a tokenizer (and a source tokenizer
    for a separate source vocabulary); README.md whose YAML parses with huggingface_hub's ModelCard (model-index
    included) and has license, library_name and tags; and, given ``run``, that every score in the model-index
    equals the run's.
    """
    folder = Path(folder)
    names = {p.name for p in folder.iterdir()}
    problems = []
    if not any(_matches(name, ("*.safetensors",)) for name in names):
        problems.append("no *.safetensors weights")
    if any(_matches(name, PICKLE_FILES) for name in names):
        problems.append("pickle weights present")
    if "config.json" not in names:
        problems.append("no config.json")
    else:
        config = json.loads((folder / "config.json").read_text())
        if config.get("model_type") not in CONFIG_MAPPING_NAMES:
            if "auto_map" not in config:
                problems.append(f"config.json of model_type {config.get('model_type')!r} has no auto_map")
            for code_file in _code_files(config):
                if code_file not in names:
                    problems.append(f"auto_map names {code_file}, which is missing")
            for code_file in (n for n in names if n.endswith(".py")):
                for module in re.findall(r"^from \.(\w+) import", (folder / code_file).read_text(), re.M):
                    if f"{module}.py" not in names:
                        problems.append(f"{code_file} imports .{module}, which is missing")
        source_tokenizer = folder / SOURCE_TOKENIZER_DIR / "tokenizer.json"
        if config.get("source_vocab_size") is not None and not source_tokenizer.is_file():
            problems.append(f"config.json has a source vocabulary of its own (source_vocab_size "
                            f"{config['source_vocab_size']}) but {SOURCE_TOKENIZER_DIR}/tokenizer.json is missing")
    if "tokenizer.json" not in names and "vocab.txt" not in names:
        problems.append("no tokenizer files (tokenizer.json or vocab.txt)")
    if "README.md" not in names:
        problems.append("no README.md model card")
    else:
        try:
            data = ModelCard.load(folder / "README.md").data  # parses the YAML and the model-index
        except ValueError as error:
            problems.append(f"README.md metadata does not validate: {error}")
        else:
            for key in ("license", "library_name", "tags"):
                if not data.get(key):
                    problems.append(f"README.md metadata has no {key}")
            if not data.eval_results:
                problems.append("README.md metadata has no model-index results")
            elif run is not None:
                expected = {metric: run[key] for key, metric, _, _ in TASKS[run["task"]]["metrics"] if key in run}
                found = {result.metric_type: result.metric_value for result in data.eval_results}
                if found != expected:
                    problems.append(f"README.md model-index scores {found} differ from the results file {expected}")
    if problems:
        raise ValueError(f"{folder} is not ready for the Hub:\n- " + "\n- ".join(problems))


LOAD_CHECK = f"""
import sys
sys.modules["hf_seqmodels"] = None  # `import hf_seqmodels` now fails: the folder must load on its own
import torch, transformers
folder, auto_class = sys.argv[1], sys.argv[2]
model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True).eval()
# A translation model with a source vocabulary of its own reads its inputs with its source tokenizer.
separate = getattr(model.config, "source_vocab_size", None) is not None
tokenizer = transformers.AutoTokenizer.from_pretrained(folder, subfolder={SOURCE_TOKENIZER_DIR!r} if separate else "",
                                                       trust_remote_code=True)
if model.can_generate() and not model.config.is_encoder_decoder:
    tokenizer.padding_side = "left"
batch = tokenizer(["a short test sentence", "and another"], return_tensors="pt", padding=True)
with torch.no_grad():
    if model.can_generate():  # a batched beam search through the loaded code
        outputs = model.generate(**batch, num_beams=2, max_new_tokens=4)
    else:
        outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
print(type(model).__module__ + "." + type(model).__name__, tuple(outputs.shape))
"""


def load_check(folder: str | Path, auto_class: str) -> str:
    """Load ``folder`` with ``transformers.<auto_class>.from_pretrained(..., trust_remote_code=True)`` and its
    tokenizer in a fresh Python where ``hf_seqmodels`` cannot be imported (offline, empty module cache), and run
    one batch (through ``generate()`` for a generative model). Returns the loaded class's qualified name and the
    outputs' shape; raises RuntimeError on failure."""
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(HF_HOME=home, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
        result = subprocess.run([sys.executable, "-c", LOAD_CHECK, str(Path(folder).resolve()), auto_class],
                                cwd=home, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{folder} does not load with {auto_class}(trust_remote_code=True):\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


__all__ = [
    "BASE_MODELS", "DATASETS", "TASKS", "card_data", "check_hub_folder", "describe_architecture", "format_metric",
    "load_check", "load_run", "render_card", "speed_lines", "stage_hub_folder",
]
