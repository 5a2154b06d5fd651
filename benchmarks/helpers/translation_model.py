"""The models the ``translation`` and ``batch1_overhead`` entries decode with, and the test2016 sources they translate.

A timed model is the one whose BLEU the results report: the folder ``model_dir`` names, by default each cell
type's folder that ``hf_seqmodels/comparison/translation_bleu.py`` saves (``BLEU_MODEL_DIR``), with its test BLEU from
the folder's ``results.json``. Where that folder is absent (or ``model_dir`` is empty, as in smoke runs), an attention
GRU/LSTM briefly trained here on Multi30k English -> German (``train_steps`` Adam steps, joint BPE vocabulary) stands
in, and the results say loudly that it is not the BLEU model.
"""

import argparse
import dataclasses
import functools
import hashlib
import json
import os
import random
import shlex
from collections.abc import Iterator
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.provenance import checkout_relative
from hf_seqmodels.tasks.translation import load_tokenizers, load_translation_model

from .common import Settings, read_jsonl

# Where hf_seqmodels/comparison/translation_bleu.py saves each model whose test BLEU results/translation_bleu.md reports
# (its --out defaults to results/), relative to the directory the benchmarks run from.
BLEU_MODEL_DIR = "results/multi30k-attention-{cell_type}"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The sizes of both entries: the model (a saved folder, or the recipe of the stand-in), and what each entry
    decodes."""

    model_dir: str = BLEU_MODEL_DIR  # a folder, or a pattern with {cell_type}; "": the stand-in model
    cell_types: tuple[str, ...] = ("gru", "lstm")
    vocab_size: int = 8000
    embedding_size: int = 256
    hidden_size: int = 512
    attention_type: str = "luong_general"
    train_steps: int = 500  # enough for sentences that end (with EOS) at realistic lengths
    train_batch_size: int = 64
    num_sentences: int = 256  # of test2016's 1000, for every search (the per-sentence ones are slow)
    # The batched searches' batch size: of these, the fastest for our decoding loop on as many validation sentences
    # (`translation.choose_batch_size`); one value fixes it.
    batch_sizes: tuple[int, ...] = (32, 64, 128, 256)
    # The per-sentence searches of the translation entry (translation.BASELINES): per_hypothesis (one decoder call per
    # hypothesis) takes several times the others' time, too long on many sentences in a GPU lease, and may be left out.
    baselines: tuple[str, ...] = ("beams_batched", "ours_batch1", "generate_batch1", "per_hypothesis")
    num_beams: int = 5
    max_new_tokens: int = 64  # scripts/run_translation.py's default, with which the test BLEU was scored
    batch1_sentences: int = 48
    rounds: int = 5  # interleaved timed rounds over the sentences, after an untimed first pass


SMOKE = Sizes(model_dir="", cell_types=("gru",), vocab_size=300, embedding_size=16, hidden_size=16, train_steps=2,
              train_batch_size=8, num_sentences=6, batch_sizes=(2, 4), num_beams=3, max_new_tokens=6,
              batch1_sentences=2, rounds=2)


@functools.lru_cache(maxsize=1)
def tokenizer_for(vocab_size: int):
    """A joint English/German BPE tokenizer trained on Multi30k train (a few seconds)."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    return train_tokenizer((row[lang] for row in rows for lang in ("en", "de")), kind="bpe", vocab_size=vocab_size)


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids ending with EOS, whether or not the tokenizer appends it (scripts/run_translation.py's do)."""
    eos = tokenizer.eos_token_id
    return [ids if ids[-1:] == [eos] else ids + [eos] for ids in tokenizer(texts)["input_ids"]]


def pad_batch(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [value] * (width - len(row)) for row in rows])


def cache_dir() -> Path:
    """Where trained benchmark models are kept between runs: ``$HF_SEQMODELS_BENCHMARK_CACHE``, else
    ``~/.cache/hf_seqmodels/benchmarks``."""
    default = Path.home() / ".cache" / "hf_seqmodels" / "benchmarks"
    return Path(os.environ.get("HF_SEQMODELS_BENCHMARK_CACHE", default))


@functools.lru_cache(maxsize=2)
def trained_model(cell_type: str, sizes: Sizes, device: str, seed: int, use_disk_cache: bool = True):
    """The attention seq2seq model after ``train_steps`` Adam steps on Multi30k train, in eval mode, with its
    tokenizer and last training loss. Training takes minutes on CPU, so the result is saved in ``cache_dir()``
    (keyed by the recipe) and loaded from there by later runs, unless the model's parameters have changed since.
    The weights only need to be realistic: every decoding method compared runs the current code on them."""
    recipe = {"cell_type": cell_type, "seed": seed,
              **{name: getattr(sizes, name) for name in ("vocab_size", "embedding_size", "hidden_size",
                                                          "attention_type", "train_steps", "train_batch_size")}}
    digest = hashlib.sha1(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir() / f"attention_seq2seq-{cell_type}-{digest}"
    if use_disk_cache and (folder / "train_loss.json").exists():
        model, info = AttentionSeq2SeqForConditionalGeneration.from_pretrained(folder, output_loading_info=True)
        if not any(info.values()):  # else the model's parameters changed since: train again
            tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
            return model.to(device).eval(), tokenizer, json.loads((folder / "train_loss.json").read_text())["loss"]

    tokenizer = tokenizer_for(sizes.vocab_size)

    torch.manual_seed(seed)
    config = AttentionSeq2SeqConfig(
        vocab_size=len(tokenizer), embedding_size=sizes.embedding_size, hidden_size=sizes.hidden_size,
        cell_type=cell_type, attention_type=sizes.attention_type, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = AttentionSeq2SeqForConditionalGeneration(config).to(device)
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    rows = random.Random(seed).sample(rows, min(len(rows), sizes.train_steps * sizes.train_batch_size))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    loss = torch.tensor(float("nan"))
    for start in range(0, len(rows), sizes.train_batch_size):
        chunk = rows[start:start + sizes.train_batch_size]
        source = pad_batch(encode_texts(tokenizer, [row["en"] for row in chunk]), tokenizer.pad_token_id)
        labels = pad_batch(encode_texts(tokenizer, [row["de"] for row in chunk]), -100)
        loss = model(input_ids=source.to(device), attention_mask=(source != tokenizer.pad_token_id).long().to(device),
                     labels=labels.to(device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if use_disk_cache:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "train_loss.json").write_text(json.dumps({"loss": loss.item(), "recipe": recipe}))
    return model.eval(), tokenizer, loss.item()


def english_test2016(tokenizer, count: int, split: str = "test") -> list[list[int]]:
    """The first ``count`` English sentences of Multi30k test2016 (``split="validation"``: of its validation set)
    as token ids, each ending with EOS."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / f"{split}.jsonl.gz")[:count]
    return encode_texts(tokenizer, [row["en"] for row in rows])


def model_label(config) -> str:
    """How the entries' tables name a model of ``config``."""
    return f"attention {config.cell_type.upper()} ({config.attention_type})"


@dataclasses.dataclass
class TimedModel:
    """A model an entry decodes with, its source-side tokenizer and where it comes from (``origin``: its folder
    and test BLEU, or the stand-in's recipe and the warning that it is not the BLEU model)."""

    label: str
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerFast
    origin: dict


def bleu_model(folder: Path, device: str) -> TimedModel:
    """The translation model saved in ``folder`` by scripts/run_translation.py, with its test BLEU and the command
    that re-creates it (``recreate``: its training command, from the provenance of its ``results.json``; None where
    that file records none)."""
    model = load_translation_model(folder).to(device).eval()
    results = folder / "results.json"
    scores = json.loads(results.read_text()) if results.is_file() else {}
    trained = scores.get("provenance") or {}
    origin = {"model_dir": str(folder), "test_bleu": scores.get("test_bleu"),
              "test_bleu_signature": scores.get("bleu_signature"), "test_num_beams": scores.get("test_num_beams"),
              "recreate": (shlex.join(["python", *checkout_relative(trained["argv"][1:])]) if trained.get("argv")
                           else None),
              "trained_at": {key: trained.get(key) for key in ("commit", "tree_clean", "cwd", "device", "date")}}
    return TimedModel(model_label(model.config), model, load_tokenizers(folder).source, origin)


def stand_in_model(cell_type: str, sizes: Sizes, settings: Settings, missing: str) -> TimedModel:
    """The briefly trained model (`trained_model`; a smoke run neither reads nor writes its disk cache), labelled
    as not the BLEU model; ``missing`` says which folder was not there."""
    model, tokenizer, loss = trained_model(cell_type, sizes, settings.device, settings.seed, not settings.smoke)
    warning = (f"NOT THE BLEU MODEL: {missing}; timed instead: a stand-in briefly trained here "
               f"({sizes.train_steps} steps, last training loss {loss:.3f}), whose BLEU is not reported")
    return TimedModel(model_label(model.config), model, tokenizer, {
        "model_dir": None, "warning": warning, "train_loss": round(loss, 3),
        "recreate": "the entry's own command (its provenance's argv): the stand-in's recipe is in its sizes"})


def timed_models(sizes: Sizes, settings: Settings) -> Iterator[TimedModel]:
    """The models to time: the folder ``model_dir`` names, or with ``{cell_type}`` in it the folder of each of
    ``cell_types``, where present; otherwise the stand-in. An explicitly named folder must exist."""
    if sizes.model_dir and "{cell_type}" not in sizes.model_dir:
        folder = Path(sizes.model_dir)
        if not folder.is_dir():
            raise ValueError(f"--set model_dir={sizes.model_dir}: no such folder; pass a folder saved by "
                             "scripts/run_translation.py (or hf_seqmodels/comparison/translation_bleu.py).")
        yield bleu_model(folder, settings.device)
        return
    for cell_type in sizes.cell_types:
        folder = Path(sizes.model_dir.format(cell_type=cell_type)) if sizes.model_dir else None
        if folder is not None and folder.is_dir():
            yield bleu_model(folder, settings.device)
        else:
            missing = f"no folder {folder}" if folder else "no model_dir given"
            yield stand_in_model(cell_type, sizes, settings, missing)


# The config fields that describe a timed model in an entry's sizes (``cell_type`` as ``cell_types``).
MODEL_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "attention_type")
RECIPE_FIELDS = ("train_steps", "train_batch_size")  # the stand-in's training, meaningless for a saved folder


def timed_sizes(sizes: Sizes, models: list[TimedModel]) -> dict:
    """An entry's ``sizes`` as the models it timed have them: ``cell_types`` and `MODEL_FIELDS` read from their
    configs (a field's value, or a list of one per model where they differ), the stand-in's `RECIPE_FIELDS` only
    where a stand-in was timed, and what the entry decodes as ``sizes`` says."""
    record = dataclasses.asdict(sizes)
    configs = [timed.model.config for timed in models]
    record["cell_types"] = [config.cell_type for config in configs]
    for field in MODEL_FIELDS:
        values = [getattr(config, field) for config in configs]
        record[field] = values[0] if len(set(values)) == 1 else values
    if all(timed.origin["model_dir"] is not None for timed in models):
        for field in RECIPE_FIELDS:
            del record[field]
    return record


def origin_note(models: list[TimedModel]) -> str:
    """The sentence of an entry's notes that says which models were timed: folder and test BLEU, or the warning."""
    parts = []
    for timed in models:
        origin = timed.origin
        if origin["model_dir"] is None:
            parts.append(f"{timed.label}: {origin['warning']}.")
        else:
            bleu = origin["test_bleu"]
            recreate = origin["recreate"] or "not recorded in its results.json"
            parts.append(f"{timed.label}: the model in {origin['model_dir']} (test2016 BLEU "
                         f"{'not in its results.json' if bleu is None else f'{bleu:.2f}'}; re-created by: "
                         f"{recreate}).")
    return " ".join(parts)


def add_study_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of every decoding study of a translator (``benchmarks/studies``): the model (a folder, or the
    smoke run's stand-in), the beam and the longest output, the timed rounds, torch's threads and the output file;
    ``parse_study_arguments`` reads them."""
    parser.add_argument("--model", help="a folder saved by scripts/run_translation.py (e.g. outputs/multi30k-gru)")
    parser.add_argument("--smoke", action="store_true", help="a tiny stand-in model and a few sentences")
    parser.add_argument("--num_beams", type=int, default=5)
    parser.add_argument("--max_new_tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (at least 5 for reported figures)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")


def parse_study_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The arguments of ``argv``, refused unless exactly one of ``--model`` and ``--smoke`` is given; torch then
    runs on ``--threads`` threads where given."""
    args = parser.parse_args(argv)
    if (args.model is None) == (not args.smoke):
        parser.error("pass --model <folder> or --smoke (not both)")
    if args.threads:
        torch.set_num_threads(args.threads)
    return args
