"""Tiny saved models for the files, kills and concurrency cases: two versions (old and new) that differ in every
weight and in ``results.json``, and a way to tell which one a folder holds, or that it holds neither whole."""

import json
from pathlib import Path

import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, get_scheduler

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.training.checkpoint_format import TrainingState
from hf_seqmodels.training.loop import TrainingArguments, make_accelerator, save_model

VERSIONS = {"old": 0, "new": 1}  # version -> seed of its weights


def tiny_model(seed: int) -> RecurrentForCausalLM:
    torch.manual_seed(seed)
    return RecurrentForCausalLM(RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=8))


def training_state(seed: int = 0) -> TrainingState:
    """What a checkpoint of the tiny model holds after one AdamW step (a constant schedule)."""
    model = tiny_model(seed)
    optimizer = torch.optim.AdamW(model.parameters())
    ids = torch.arange(12).view(2, 6)
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    return TrainingState(model, optimizer, get_scheduler("constant", optimizer))


def accelerator(folder: Path) -> Accelerator:
    return make_accelerator(TrainingArguments(output_dir=str(folder)))


def save_version(accelerator: Accelerator, target: Path, version: str) -> None:
    """`save_model` of the ``version`` model, with its name in results.json."""
    tokenizer = train_tokenizer(["a b c"], "word")
    save_model(accelerator, tiny_model(VERSIONS[version]), tokenizer, str(target), results={"version": version})


def loaded_version(target: Path) -> str | None:
    """The version ``target`` holds, loaded with ``from_pretrained`` (None when there is no folder); raises if it
    does not load or its weights are not those of the version its results.json names (a mix)."""
    if not target.exists():
        return None
    version = json.loads((target / "results.json").read_text())["version"]
    loaded = AutoModelForCausalLM.from_pretrained(target)
    for name, tensor in tiny_model(VERSIONS[version]).state_dict().items():
        if not torch.equal(loaded.state_dict()[name], tensor):
            raise AssertionError(f"{target}: {name} is not the {version} model's")
    return version
