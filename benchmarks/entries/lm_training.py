"""Entry 3, training throughput and peak memory of the recurrent LM, five ways on the same weights and batches.

- ``ours, attention_mask``: ``RecurrentForCausalLM`` given the right-padded batch and its ``attention_mask``, as
  the training scripts call it: a left-to-right model on a right-padded batch runs the padding through the fused
  kernel and masks it out (nothing after a real token can reach it), without packing;
- ``ours, packed``: the same call asking for the final state (``use_cache=True``), which the LSTM can only get by
  packing the padding away: what every masked batch cost before that shortcut;
- ``ours, no mask``: the model without the mask (the real tokens' losses are the same);
- the headline baseline, ``tutorial nn.LSTM``: the weights copied into ``TutorialLM``, a tutorial model as written
  today, one fused ``nn.LSTM`` (``nn.GRU``, ``nn.RNN``) over the padded batch;
- the second baseline, ``tutorial nn.LSTMCell loop``: the weights copied into ``TutorialCellLM``, one ``nn.*Cell``
  call per time step and layer in Python.

Batches are real Penn Treebank sentences (random order, so lengths spread as in training), right-padded to the
longest in each batch. Throughput counts real tokens through forward + backward + Adam step; every variant trains
on all batches once per round, the variants taking turns, and the figures are medians and quartiles over the rounds
(ratios: of each round's pair). The losses on the first batch must agree before any step is taken.
"""

import copy
import dataclasses
import functools
import random
from collections.abc import Callable

import torch

from hf_seqmodels.data.paths import data_dir

from ..helpers.common import (
    Settings, columns, entry_result, interleaved, mb, paired_ratio, peak_memory_bytes, rate, read_jsonl, resolve_sizes,
    word_vocab,
)
from ..helpers.language_models import LMSizes, recurrent_lm
from ..helpers.tutorial import TutorialCellLM, TutorialLM

SPLIT = ["train"]  # the data splits its figures come from (provenance): Penn Treebank training sentences


@dataclasses.dataclass(frozen=True)
class Sizes(LMSizes):
    batch_size: int = 32
    batches: int = 6
    max_length: int = 82
    rounds: int = 5


SMOKE = Sizes(vocab_size=60, hidden_size=16, num_layers=2, batch_size=4, batches=2, max_length=20, rounds=2)
# Names of the variants the summary compares.
OURS, FUSED, CELL_LOOP, PACKED, NO_MASK = ("ours, attention_mask", "tutorial fused", "tutorial cell loop",
                                           "ours, packed", "ours, no mask")


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
    fused, cell_loop = TutorialLM.from_recurrent_lm(masked), TutorialCellLM.from_recurrent_lm(masked)

    def masked_loss(batch):
        return masked(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss

    def packed_loss(batch):
        return packed(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"],
                      use_cache=True).loss

    def padded_loss(batch):
        return padded(input_ids=batch["input_ids"], labels=batch["labels"]).loss

    def tutorial_loss(tutorial):
        return lambda batch: tutorial(batch["input_ids"], batch["labels"])[1]

    return {
        OURS: (masked, masked_loss),
        FUSED: (fused, tutorial_loss(fused)),
        CELL_LOOP: (cell_loop, tutorial_loss(cell_loop)),
        PACKED: (packed, packed_loss),
        NO_MASK: (padded, padded_loss),
    }


def descriptions(cell_type: str) -> dict[str, tuple[str, str]]:
    """How the table describes each variant, and its role."""
    fused = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}[cell_type]
    return {OURS: ("ours, attention_mask", "ours"),
            FUSED: (f"tutorial model, fused nn.{fused} over the padded batch", "headline baseline"),
            CELL_LOOP: (f"tutorial nn.{fused}Cell loop", "second baseline"),
            PACKED: ("ours, packed (attention_mask, final state asked for)", "other"),
            NO_MASK: ("ours, no mask", "other")}


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
                          sizes.rounds, device, warmup=0)
    rows = []
    for name, (description, role) in descriptions(sizes.cell_type).items():
        optimizers[name].zero_grad(set_to_none=True)  # so that the measured step starts without gradients
        peak = peak_memory_bytes(functools.partial(passes[name], [longest]), device)
        rows.append({
            "variant": description,
            "role": role,
            **columns("tokens_per_s", rate(real_tokens, timings, name, 1)),
            **columns("ours_speedup", paired_ratio(timings, name, OURS)),
            "peak_memory_mb": mb(peak),
            "first_batch_loss": round(first_losses[name], 6),
        })

    memory = {name: row["peak_memory_mb"] for name, row in zip(descriptions(sizes.cell_type), rows)}
    summary = {
        "masked_vs_tutorial_fused_throughput": paired_ratio(timings, FUSED, OURS),
        "masked_vs_tutorial_cell_loop_throughput": paired_ratio(timings, CELL_LOOP, OURS),
        "masked_vs_packed_throughput": paired_ratio(timings, PACKED, OURS),
        "masked_vs_no_mask_throughput": paired_ratio(timings, NO_MASK, OURS),
        "masked_vs_tutorial_fused_memory": round(memory[OURS] / memory[FUSED], 3),
        "masked_vs_tutorial_cell_loop_memory": round(memory[OURS] / memory[CELL_LOOP], 3),
        "masked_vs_packed_memory": round(memory[OURS] / memory[PACKED], 3),
        "padding_fraction": round(1 - real_tokens / padded_tokens, 3),
        "first_batch_loss_max_abs_diff": loss_diff,
        "losses_agree": loss_diff < 1e-4,
    }
    return entry_result(
        "Training throughput and peak memory: recurrent LM, masked vs a fused tutorial model, a tutorial cell loop, "
        "packed and unmasked",
        sizes, rows, summary, targets=[],
        notes=(f"{len(batches)} PTB batches of {sizes.batch_size}, {real_tokens} real tokens "
               f"({summary['padding_fraction']:.0%} padding); Adam; {sizes.rounds} rounds, each variant training on "
               "every batch once per round, taking turns after a warm-up step: tokens_per_s is the median over the "
               "rounds (_iqr: its quartiles), ours_speedup the median of the per-round ratios of that variant's time "
               "/ ours (> 1: ours is faster), with its quartiles; the summary's throughput ratios are the same. "
               "memory = peak tensor bytes of one step on the longest batch "
               f"({longest['input_ids'].shape[1]} tokens)."),
    )
