"""One training update of the main job (the attention GRU of scripts/run_translation.py), ours beside its floor.

    python -m benchmarks.studies.translation_training                  # 1 thread, 3 rounds of 10 updates per variant
    python -m benchmarks.studies.translation_training --threads 2 --updates 20 --rounds 5

The batches are the main job's: Multi30k training pairs cut by its BPE tokenizer (trained as the main job trains it)
and ordered by its sampler (`translation.train_sampler`). The variants, each from the same initial weights:

- ``ours``: `translation.make_model`'s model, the training loop's loss (`training.loop.training_loss`), gradient
  clipping and optimizer (`training.loop.make_optimizer`), as `training.loop.TrainingLoop.train_batch` runs them;
- ``ours, LabelSmoother + per-parameter AdamW``: the same model with what the loop used before: transformers'
  ``LabelSmoother`` over every position and torch's default (per-parameter) AdamW;
- ``floor``: `Floor`, a plain PyTorch model of exactly our sizes: an ``nn.GRU`` encoder over the packed source, an
  ``nn.GRU`` decoder over the whole target at once (no input feeding), batched Luong general attention, the output
  layer tied to the target embeddings and run on the labelled positions only, label-smoothed cross-entropy, fused
  AdamW. Its loss equals ours on the same weights (checked before timing, without dropout);
- ``floor, 128 per encoder direction``: the same at eole's encoder size (its ``brnn`` splits the 256 units over the
  two directions): how much of eole's speed is its smaller encoder.

Every variant trains ``--updates`` batches per round, by turns, for ``--rounds`` rounds; the figures are medians over
the rounds of the seconds per update, in process CPU time (what a loaded machine disturbs least at one thread) and wall
time, and of source tokens per wall second (padding not counted, as docs/peers.md counts them).
"""

import argparse
import copy
import json
import os
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import DataCollatorForSeq2Seq
from transformers.trainer_pt_utils import LabelSmoother

from hf_seqmodels.provenance import provenance
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import parse_dict
from hf_seqmodels.training.loop import make_optimizer, training_loss


class Floor(nn.Module):
    """The main job's model in plain PyTorch: what an update cannot cost less than with torch's own modules."""

    def __init__(self, vocab_size: int, embedding_size: int, hidden_size: int, encoder_size: int, dropout: float):
        super().__init__()
        self.source_embeddings = nn.Embedding(vocab_size, embedding_size)
        self.target_embeddings = nn.Embedding(vocab_size, embedding_size)
        self.encoder = nn.GRU(embedding_size, encoder_size, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * encoder_size, hidden_size)
        self.decoder = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.keys = nn.Linear(2 * encoder_size, hidden_size, bias=False)  # Luong's W_a
        self.combine = nn.Linear(2 * encoder_size + hidden_size, hidden_size, bias=False)  # W_c
        self.output = nn.Linear(embedding_size, vocab_size)
        self.output.weight = self.target_embeddings.weight
        self.dropout = nn.Dropout(dropout)

    @classmethod
    def from_ours(cls, model) -> "Floor":
        """A floor holding ``model``'s weights (an `AttentionSeq2SeqForConditionalGeneration` of the main job)."""
        config = model.config
        floor = cls(config.vocab_size, config.embedding_size, config.hidden_size, config.hidden_size, config.dropout)
        ours = model.model
        floor.source_embeddings.load_state_dict(ours.encoder.embed_tokens.state_dict())
        floor.target_embeddings.load_state_dict(ours.decoder.embed_tokens.state_dict())
        floor.encoder.load_state_dict(ours.encoder.rnn.layers[0].rnn.state_dict())
        floor.decoder.load_state_dict(ours.decoder.rnn.layers[0].rnn.state_dict())
        floor.bridge.load_state_dict(ours.decoder.bridge.state_dict())
        floor.keys.load_state_dict(ours.decoder.attention.key_layer.state_dict())
        floor.combine.load_state_dict(ours.decoder.combine.state_dict())
        floor.output.bias.data.copy_(model.lm_head.bias.data)
        return floor

    def forward(self, input_ids, attention_mask, labels, decoder_start: int, smoothing: float) -> torch.Tensor:
        lengths = attention_mask.sum(1).cpu()
        embedded = pack_padded_sequence(self.dropout(self.source_embeddings(input_ids)), lengths, batch_first=True,
                                        enforce_sorted=False)
        memory, final = self.encoder(embedded)
        memory, _ = pad_packed_sequence(memory, batch_first=True, total_length=input_ids.shape[1])
        start = torch.tanh(self.bridge(torch.cat([final[0], final[1]], dim=-1))).unsqueeze(0)
        previous = torch.cat([labels.new_full((labels.shape[0], 1), decoder_start), labels[:, :-1]], dim=1)
        hidden, _ = self.decoder(self.dropout(self.target_embeddings(previous.clamp(min=0))), start)
        scores = torch.bmm(hidden, self.keys(memory).transpose(1, 2))
        weights = scores.masked_fill(~attention_mask.bool().unsqueeze(1), float("-inf")).softmax(-1)
        vectors = torch.tanh(self.combine(torch.cat([torch.bmm(weights, memory), hidden], dim=-1)))
        kept = labels != -100
        logits = self.output(self.dropout(vectors[kept]))
        return F.cross_entropy(logits, labels[kept], label_smoothing=smoothing)


def main_job_batches(updates: int, seed: int):
    """The main job's model (untrained) and its first ``updates`` training batches, with its training arguments."""
    model_args, data_args, training_args, generation_args = parse_dict(translation, {"output_dir": "unused",
                                                                                     "seed": seed})
    raw = data_args.load()
    tokenizers = translation.train_tokenizers(raw["train"], data_args.source_lang, data_args.target_lang,
                                              data_args.vocab_size, joint=data_args.vocabulary == "joint",
                                              kinds=data_args.tokenizer_types())
    rows = translation.tokenize_pairs(raw, tokenizers, data_args.source_lang, data_args.target_lang,
                                      data_args.max_source_length, data_args.max_target_length)["train"]
    order = list(translation.train_sampler(rows, training_args))
    size = training_args.per_device_train_batch_size
    collator = DataCollatorForSeq2Seq(tokenizers.source, label_pad_token_id=-100)
    batches = [collator([rows[i] for i in order[start : start + size]]) for start in range(0, updates * size, size)]
    torch.manual_seed(seed)
    return translation.make_model(model_args, generation_args, tokenizers), batches, training_args


def variants(model, training_args) -> dict:
    """name -> one update on a batch, each variant with its own copy of the weights and its own optimizer."""
    smoothing, clip = training_args.label_smoothing_factor, training_args.max_grad_norm
    start = model.config.decoder_start_token_id
    models = {name: copy.deepcopy(model).train() for name in ("ours", "old")}
    floors = {"floor": Floor.from_ours(model),
              "floor, 128 per encoder direction": Floor(model.config.vocab_size, model.config.embedding_size,
                                                        model.config.hidden_size, model.config.hidden_size // 2,
                                                        model.config.dropout)}
    optimizers = {"ours": make_optimizer(models["ours"], training_args),
                  "old": torch.optim.AdamW(models["old"].parameters(), lr=training_args.learning_rate,
                                           weight_decay=training_args.weight_decay, foreach=False),
                  **{name: torch.optim.AdamW(floor.parameters(), lr=training_args.learning_rate,
                                             weight_decay=training_args.weight_decay, fused=True)
                     for name, floor in floors.items()}}

    def step(name, module, loss):
        loss.backward()
        nn.utils.clip_grad_norm_(module.parameters(), clip)
        optimizers[name].step()
        optimizers[name].zero_grad()

    def ours(batch):
        step("ours", models["ours"], training_loss(models["ours"], batch, smoothing))

    def old(batch):
        step("old", models["old"], LabelSmoother(smoothing)(models["old"](**batch), batch["labels"]))

    def floor_update(name):
        return lambda batch: step(name, floors[name], floors[name](batch["input_ids"], batch["attention_mask"],
                                                                   batch["labels"], start, smoothing))

    return {"ours": ours, "ours, LabelSmoother + per-parameter AdamW": old,
            **{name: floor_update(name) for name in floors}}


def check_floor(model, batch, smoothing: float) -> None:
    """The floor computes our loss: same weights, same batch, no dropout."""
    floor = Floor.from_ours(model).eval()
    with torch.no_grad():
        expected = training_loss(copy.deepcopy(model).eval(), batch, smoothing)
        got = floor(batch["input_ids"], batch["attention_mask"], batch["labels"], model.config.decoder_start_token_id,
                    smoothing)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


SPLIT = ["train"]  # the batches are the main job's training pairs (provenance)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=10, help="batches per variant and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the variants taking turns")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None, help="a json file for the figures")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, batches, training_args = main_job_batches(args.updates * (args.rounds + 1), args.seed)
    check_floor(model, batches[0], training_args.label_smoothing_factor)
    updates = variants(model, training_args)
    seconds = {name: {"cpu": [], "wall": []} for name in updates}
    for round_ in range(args.rounds + 1):  # the first round warms up, untimed
        chunk = batches[round_ * args.updates : (round_ + 1) * args.updates]
        for name, update in updates.items():
            cpu, wall = time.process_time(), time.perf_counter()
            for batch in chunk:
                update(batch)
            if round_:
                seconds[name]["cpu"].append((time.process_time() - cpu) / len(chunk))
                seconds[name]["wall"].append((time.perf_counter() - wall) / len(chunk))
    source_tokens = sum(int(batch["attention_mask"].sum()) for batch in batches) / len(batches)
    labels = torch.cat([batch["labels"].flatten() for batch in batches])
    figures = {
        "threads": args.threads, "updates_per_round": args.updates, "rounds": args.rounds,
        "load_average": os.getloadavg()[0], "mean_source_tokens_per_batch": source_tokens,
        "padded_target_positions": float((labels == -100).float().mean()),
        "variants": {name: {"cpu_s_per_update": statistics.median(times["cpu"]),
                            "wall_s_per_update": statistics.median(times["wall"]),
                            "tokens_per_wall_s": source_tokens / statistics.median(times["wall"])}
                     for name, times in seconds.items()},
    }
    figures["provenance"] = provenance([args.seed], SPLIT)
    print(json.dumps(figures, indent=2))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(figures, handle, indent=2)
    return figures


if __name__ == "__main__":
    main()
