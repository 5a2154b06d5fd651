"""Entry 3, training throughput and peak memory of the recurrent LM, four ways on the same weights and batches.

- ``ours, attention_mask``: ``RecurrentForCausalLM`` given the right-padded batch and its ``attention_mask``, as
  the training scripts call it: a left-to-right model on a right-padded batch runs the padding through the fused
  kernel and masks it out (nothing after a real token can reach it), without packing;
- ``ours, packed``: the same call asking for the final state (``use_cache=True``), which the LSTM can only get by
  packing the padding away: what every masked batch cost before that shortcut;
- ``ours, no mask``: the model without the mask (the real tokens' losses are the same);
- ``tutorial cell loop``: the weights copied into ``TutorialCellLM``, one ``nn.*Cell`` call per time step and
  layer in Python.

Batches are real Penn Treebank sentences (random order, so lengths spread as in training), right-padded to the
longest in each batch. Throughput counts real tokens through forward + backward + Adam step. The three losses on
the first batch must agree before any step is taken.
"""

import copy
import dataclasses
import functools
import random
from collections.abc import Callable

import torch
from hf_seqmodels.paths import data_dir

from .common import (
    Settings, entry_result, interleaved, mb, peak_memory_bytes, read_jsonl, resolve_sizes, word_vocab,
)
from .models import LMSizes, recurrent_lm
from .tutorial import TutorialCellLM


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    batch_size: int = 32
    batches: int = 6
    max_length: int = 82
    repeats: int = 3


SMOKE = Sizes(vocab_size=60, hidden_size=16, num_layers=1, batch_size=4, batches=2, max_length=20, repeats=1)


def ptb_batches(sizes: Sizes, seed: int) -> list[dict[str, torch.Tensor]]:
    """``batches`` random batches of PTB training sentences as right-padded ids, mask and labels (-100 = pad)."""
    sentences = [row["sentence"] for row in read_jsonl(data_dir() / "ptb" / "train.jsonl.gz") if row["sentence"]]
    vocab = word_vocab(sentences, sizes.vocab_size)
    chosen = random.Random(seed).sample(sentences, sizes.batches * sizes.batch_size)
    batches = []
    for start in range(0, len(chosen), sizes.batch_size):
        rows = [[vocab.get(word, 1) for word in sentence.split()][: sizes.max_length]
                for sentence in chosen[start:start + sizes.batch_size]]
        width = max(map(len, rows))
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        batches.append({"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)})
    return batches


def build_variants(sizes: Sizes, device: str) -> dict[str, tuple[torch.nn.Module, Callable]]:
    """name -> (model, loss function of a batch); every model starts from the same weights."""
    masked = recurrent_lm(sizes).to(device)
    packed, padded = copy.deepcopy(masked), copy.deepcopy(masked)
    tutorial = TutorialCellLM.from_recurrent_lm(masked)
    cell = {"rnn": "RNNCell", "lstm": "LSTMCell", "gru": "GRUCell"}[sizes.cell_type]

    def masked_loss(batch):
        return masked(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss

    def packed_loss(batch):
        return packed(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"],
                      use_cache=True).loss

    def padded_loss(batch):
        return padded(input_ids=batch["input_ids"], labels=batch["labels"]).loss

    def tutorial_loss(batch):
        return tutorial(batch["input_ids"], batch["labels"])[1]

    return {
        "ours, attention_mask": (masked, masked_loss),
        "ours, packed (attention_mask, final state asked for)": (packed, packed_loss),
        "ours, no mask": (padded, padded_loss),
        f"tutorial nn.{cell} loop": (tutorial, tutorial_loss),
    }


def train_pass(model, loss_fn, optimizer, batches) -> None:
    """One forward + backward + optimizer step on every batch."""
    for batch in batches:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(batch).backward()
        optimizer.step()


def run(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    torch.manual_seed(settings.seed)
    device = settings.device
    batches = [{k: v.to(device) for k, v in batch.items()} for batch in ptb_batches(sizes, settings.seed)]
    real_tokens = sum(int(batch["attention_mask"].sum()) for batch in batches)
    padded_tokens = sum(batch["input_ids"].numel() for batch in batches)
    longest = max(batches, key=lambda batch: batch["input_ids"].shape[1])
    variants = build_variants(sizes, device)

    with torch.no_grad():
        first_losses = {name: float(loss_fn(batches[0])) for name, (_, loss_fn) in variants.items()}
    reference = next(iter(first_losses.values()))
    loss_diff = max(abs(loss - reference) for loss in first_losses.values())

    optimizers = {name: torch.optim.Adam(model.parameters(), lr=1e-4) for name, (model, _) in variants.items()}
    passes = {}
    for name, (model, loss_fn) in variants.items():
        model.train()
        passes[name] = functools.partial(train_pass, model, loss_fn, optimizers[name])
        passes[name](batches[:1])  # warm-up; also creates Adam's state
    timings = interleaved({name: functools.partial(one_pass, batches) for name, one_pass in passes.items()},
                          sizes.repeats, device, warmup=0)
    rows = []
    for name in variants:
        median = timings.median(name)
        optimizers[name].zero_grad(set_to_none=True)  # so that the measured step starts without gradients
        peak = peak_memory_bytes(functools.partial(passes[name], [longest]), device)
        rows.append({
            "variant": name,
            "tokens_per_s": round(real_tokens / median, 1),
            "ms_per_batch": round(median / len(batches) * 1e3, 2),
            "peak_memory_mb": mb(peak),
            "first_batch_loss": round(first_losses[name], 6),
        })

    masked, packed, padded, tutorial = rows
    summary = {
        "masked_vs_tutorial_throughput": round(masked["tokens_per_s"] / tutorial["tokens_per_s"], 3),
        "masked_vs_packed_throughput": round(masked["tokens_per_s"] / packed["tokens_per_s"], 3),
        "masked_vs_no_mask_throughput": round(masked["tokens_per_s"] / padded["tokens_per_s"], 3),
        "packed_vs_tutorial_throughput": round(packed["tokens_per_s"] / tutorial["tokens_per_s"], 3),
        "masked_vs_tutorial_memory": round(masked["peak_memory_mb"] / tutorial["peak_memory_mb"], 3),
        "masked_vs_packed_memory": round(masked["peak_memory_mb"] / packed["peak_memory_mb"], 3),
        "padding_fraction": round(1 - real_tokens / padded_tokens, 3),
        "first_batch_loss_max_abs_diff": loss_diff,
        "losses_agree": loss_diff < 1e-4,
    }
    return entry_result(
        "Training throughput and peak memory: recurrent LM, masked vs packed vs unmasked vs tutorial cell loop",
        sizes, rows, summary, targets=[],
        notes=(f"{len(batches)} PTB batches of {sizes.batch_size}, {real_tokens} real tokens "
               f"({summary['padding_fraction']:.0%} padding); Adam; memory = peak tensor bytes of one step on the "
               f"longest batch ({longest['input_ids'].shape[1]} tokens)."),
    )
