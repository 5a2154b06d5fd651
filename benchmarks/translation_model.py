"""The model the ``translation`` and ``batch1_overhead`` entries decode with: an attention GRU/LSTM briefly trained
on Multi30k English -> German (``train_steps`` Adam steps, joint BPE vocabulary trained with ``tokenizers``), so
that it ends its sentences with EOS at realistic lengths, and the test2016 sources it translates. What the entries
measure is decoding; the weights only need to be realistic.
"""

import dataclasses
import functools
import hashlib
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.paths import data_dir
from hf_seqmodels.tokenization import train_tokenizer

from .common import Settings, read_jsonl


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The sizes of both entries: the model and its training recipe, and what each entry decodes."""

    cell_types: tuple[str, ...] = ("gru", "lstm")
    vocab_size: int = 8000
    embedding_size: int = 256
    hidden_size: int = 512
    attention_type: str = "luong_general"
    train_steps: int = 500  # enough for sentences that end (with EOS) at realistic lengths
    train_batch_size: int = 64
    num_sentences: int = 256  # of test2016's 1000, for every search (the per-sentence ones are slow)
    batch_size: int = 64
    num_beams: int = 5
    max_new_tokens: int = 40
    batch1_sentences: int = 48


SMOKE = Sizes(cell_types=("gru",), vocab_size=300, embedding_size=16, hidden_size=16, train_steps=2,
              train_batch_size=8, num_sentences=6, batch_size=4, num_beams=3, max_new_tokens=6, batch1_sentences=2)


@functools.lru_cache(maxsize=1)
def tokenizer_for(vocab_size: int):
    """A joint English/German BPE tokenizer trained on Multi30k train (a few seconds)."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    return train_tokenizer((row[lang] for row in rows for lang in ("en", "de")), kind="bpe", vocab_size=vocab_size)


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    return [ids + [tokenizer.eos_token_id] for ids in tokenizer(texts)["input_ids"]]


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


def english_test2016(tokenizer, count: int) -> list[list[int]]:
    """The first ``count`` English sentences of Multi30k test2016 as token ids, each ending with EOS."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "test.jsonl.gz")[:count]
    return encode_texts(tokenizer, [row["en"] for row in rows])


def model_label(cell_type: str, sizes: Sizes) -> str:
    """How the entries' tables name the model."""
    return f"attention {cell_type.upper()} ({sizes.attention_type})"


def trained_models(sizes: Sizes, settings: Settings) -> Iterator[tuple[str, object, object, float]]:
    """For every cell type in ``sizes``: the model's label, the trained model, its tokenizer and last training loss
    (``trained_model``; a smoke run neither reads nor writes the disk cache)."""
    for cell_type in sizes.cell_types:
        yield model_label(cell_type, sizes), *trained_model(cell_type, sizes, settings.device, settings.seed,
                                                            not settings.smoke)
