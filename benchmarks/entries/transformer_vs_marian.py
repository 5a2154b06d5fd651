"""Our Transformer against transformers' MarianMTModel of identical sizes, side by side in one process.

    python -m benchmarks.entries.transformer_vs_marian                   # default sizes, ~2-3 minutes on 2 CPU cores
    python -m benchmarks.entries.transformer_vs_marian --device cuda --big   # the paper's base model sizes
    python -m benchmarks.entries.transformer_vs_marian --set batch_size=64 --profile

Both models are post-norm encoder-decoders with sinusoidal positions, ReLU feed-forward layers, scaled and shared
embeddings and dropout 0.1; they read the same Multi30k batches (word ids, padded on the right). Measured:

- ``train``: time of one forward + backward pass on a training batch of ``batch_size`` pairs (labels given,
  dropout on; no optimizer step);
- ``greedy`` and ``beam``: generate() tokens per second, with ``min_new_tokens == max_new_tokens`` so that both
  models make exactly the same number of steps whatever their (random) weights predict;
- ``greedy`` also for the batched greedy loop of PyTorch's nn.Transformer translation tutorial
  (``benchmarks.helpers.tutorial.TutorialTransformer``), which recomputes the whole prefix at every step instead of
  caching.

In each round the models run back to back (the order flips every round); a ratio is the median over the rounds
of that round's Marian time / our time, so that the load of a shared machine falls on both alike, and its
quartiles show the spread. A ratio above 1 means ours is faster.
Results go to ``results/benchmarks_transformer.json`` with the machine's description. ``run(settings)`` is also a
``benchmarks.run`` entry.
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import MarianConfig, MarianMTModel

from hf_seqmodels import TransformerConfig, TransformerForConditionalGeneration
from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.provenance import provenance

from ..helpers.common import (
    Rounds, Settings, columns, entry_result, interleaved, paired_ratio, rate, read_jsonl, resolve_sizes, spread, target,
    timed, word_vocab,
)
from ..helpers.tutorial import TutorialTransformer

SPLIT = ["train"]  # the data splits its figures come from (provenance): Multi30k training pairs

PAD, UNK, EOS = 0, 1, 2  # word_vocab's pad and unk; EOS reuses an id only generate() cares about


@dataclasses.dataclass(frozen=True)
class Sizes:
    vocab_size: int = 8000
    d_model: int = 256
    num_heads: int = 4
    layers: int = 3  # encoder and decoder each
    ffn_dim: int = 1024
    batch_size: int = 32  # training batches
    train_batches: int = 2  # forward+backward passes per round
    generate_batch_size: int = 16
    new_tokens: int = 20
    num_beams: int = 4
    rounds: int = 15


SMOKE = Sizes(vocab_size=200, d_model=32, num_heads=4, layers=1, ffn_dim=64, batch_size=4, train_batches=1,
              generate_batch_size=2, new_tokens=3, num_beams=2, rounds=2)
BIG = Sizes(vocab_size=32000, d_model=512, num_heads=8, layers=6, ffn_dim=2048, batch_size=64,
            generate_batch_size=64, new_tokens=32)


def build_models(sizes: Sizes, device: str) -> dict[str, torch.nn.Module]:
    """Ours, Marian and the tutorial's nn.Transformer with the same sizes, by name; weights drawn independently."""
    ours = TransformerForConditionalGeneration(TransformerConfig(
        vocab_size=sizes.vocab_size, d_model=sizes.d_model, num_heads=sizes.num_heads,
        encoder_layers=sizes.layers, decoder_layers=sizes.layers, ffn_dim=sizes.ffn_dim, activation="relu",
        dropout=0.1, norm_position="post", position_embedding="sinusoidal", max_position_embeddings=256,
        scale_embedding=True, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
    ))
    marian = MarianMTModel(MarianConfig(
        vocab_size=sizes.vocab_size, decoder_vocab_size=sizes.vocab_size, d_model=sizes.d_model,
        encoder_attention_heads=sizes.num_heads, decoder_attention_heads=sizes.num_heads,
        encoder_layers=sizes.layers, decoder_layers=sizes.layers, encoder_ffn_dim=sizes.ffn_dim,
        decoder_ffn_dim=sizes.ffn_dim, activation_function="relu", dropout=0.1, attention_dropout=0.0,
        activation_dropout=0.0, max_position_embeddings=256, scale_embedding=True,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True, pad_token_id=PAD, eos_token_id=EOS,
        decoder_start_token_id=PAD, forced_eos_token_id=None,
    ))
    tutorial = TutorialTransformer(sizes.vocab_size, sizes.d_model, sizes.num_heads, sizes.layers, sizes.ffn_dim)
    return {"ours": ours.to(device), "marian": marian.to(device), "tutorial": tutorial.to(device)}


def batches(sizes: Sizes, device: str) -> tuple[list[dict], dict]:
    """Training batches and one generation batch of Multi30k pairs as word ids, padded on the right."""
    pairs = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    vocab = word_vocab([pair["en"] for pair in pairs] + [pair["de"] for pair in pairs], sizes.vocab_size)

    def encode(sentences: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [[vocab.get(word, UNK) for word in sentence.split()] + [EOS] for sentence in sentences]
        length = max(map(len, rows))
        ids = torch.tensor([row + [PAD] * (length - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (length - len(row)) for row in rows])
        return ids.to(device), mask.to(device)

    train = []
    for i in range(sizes.train_batches):
        chunk = pairs[i * sizes.batch_size : (i + 1) * sizes.batch_size]
        source, source_mask = encode([pair["en"] for pair in chunk])
        target_ids, _ = encode([pair["de"] for pair in chunk])
        train.append({"input_ids": source, "attention_mask": source_mask,
                      "labels": target_ids.masked_fill(target_ids == PAD, -100)})
    source, source_mask = encode([pair["en"] for pair in pairs[-sizes.generate_batch_size :]])
    return train, {"input_ids": source, "attention_mask": source_mask}


def train_step(model, train: list[dict]) -> None:
    model.train()
    for batch in train:
        model(**batch).loss.backward()
    model.zero_grad(set_to_none=True)


@torch.no_grad()
def generate(model, batch: dict, sizes: Sizes, num_beams: int) -> torch.Tensor:
    model.eval()
    return model.generate(**batch, num_beams=num_beams, do_sample=False, max_new_tokens=sizes.new_tokens,
                          min_new_tokens=sizes.new_tokens, pad_token_id=PAD, eos_token_id=EOS,
                          custom_generate=None)  # both models through transformers' own loop


def measure(models: dict, sizes: Sizes, device: str) -> dict[str, Rounds]:
    """Seconds per task, model and round: in each round the models run back to back (the order flips every
    round), after a warm-up, so that each round's ratios compare runs under the same load. The tutorial model
    only takes part in greedy decoding, with its own loop."""
    train, source = batches(sizes, device)
    tutorial = models["tutorial"]
    tasks = {
        "train": {name: (lambda m=models[name]: train_step(m, train)) for name in ("ours", "marian")},
        "greedy": {
            **{name: (lambda m=models[name]: generate(m, source, sizes, 1)) for name in ("ours", "marian")},
            "tutorial": lambda: tutorial.greedy_decode(**source, start_id=PAD, new_tokens=sizes.new_tokens),
        },
        "beam": {name: (lambda m=models[name]: generate(m, source, sizes, sizes.num_beams))
                 for name in ("ours", "marian")},
    }
    return {task: interleaved(fns, sizes.rounds, device) for task, fns in tasks.items()}


def profile_tables(models: dict, sizes: Sizes, device: str, rows: int = 15) -> dict[str, str]:
    """torch.profiler's table of the ops with the most own time, per model, for one forward+backward round."""
    train, _ = batches(sizes, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    tables = {}
    for name in ("ours", "marian"):
        model = models[name]
        train_step(model, train)
        with profile(activities=activities) as prof:
            train_step(model, train)
        sort_by = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
        tables[name] = prof.key_averages().table(sort_by=sort_by, row_limit=rows)
    return tables


def parameter_counts(model: torch.nn.Module) -> dict[str, int]:
    """The model's parameters (each shared tensor once) and how many of them train (Marian keeps its sinusoidal
    positions as a frozen parameter, ours as a buffer)."""
    parameters = list(model.parameters())
    return {"parameters": sum(p.numel() for p in parameters),
            "trainable_parameters": sum(p.numel() for p in parameters if p.requires_grad)}


def run(settings: Settings, big: bool = False) -> dict:
    sizes = resolve_sizes(BIG if big else Sizes(), SMOKE, settings)
    torch.manual_seed(settings.seed)
    models = build_models(sizes, settings.device)
    counts = {name: parameter_counts(model) for name, model in models.items()}
    rows, summary, targets = [], {}, []
    for task, timings in measure(models, sizes, settings.device).items():
        for name in timings.seconds:
            if task == "train":
                ms = spread([seconds / sizes.train_batches * 1e3 for seconds in timings.seconds[name]], 2)
                figure = {"task": "forward+backward", **columns("ms_per_batch", ms)}
            else:
                tokens = sizes.generate_batch_size * sizes.new_tokens
                figure = {"task": f"generate, {sizes.num_beams if task == 'beam' else 1} beam(s)",
                          **columns("tokens_per_s", rate(tokens, timings, name, 1))}
            rows.append({"model": name, **figure, **columns("ours_speedup", paired_ratio(timings, name, "ours")),
                         **counts[name]})
        label = "forward+backward" if task == "train" else f"generate() tokens/s, {task}"
        for baseline, title in (("marian", "Marian"), ("tutorial", "the tutorial's nn.Transformer loop (no cache)")):
            if baseline not in timings.seconds:
                continue
            key = task if baseline == "marian" else f"{task}_vs_tutorial"
            summary[key] = paired_ratio(timings, baseline, "ours")
            targets.append(target(f"{label}: ours / {title} speed (median of paired rounds)", summary[key]["ratio"],
                                  minimum=1.0))
    summary["trainable_parameters"] = {name: counts[name]["trainable_parameters"] for name in ("ours", "marian")}
    summary["equal_size"] = counts["ours"]["trainable_parameters"] == counts["marian"]["trainable_parameters"]
    return entry_result(
        "Transformer vs MarianMTModel of identical sizes", sizes, rows, summary, targets,
        notes=f"{sizes.rounds} rounds, the models back to back in each (order alternating); a ratio is the median "
              "of the rounds' baseline / ours time ratios, with its quartiles; > 1 means ours is faster. "
              "ms_per_batch and tokens_per_s are medians over the rounds (_iqr: their quartiles). Trainable "
              f"parameters: ours {counts['ours']['trainable_parameters']:,}, Marian "
              f"{counts['marian']['trainable_parameters']:,} (equal: {summary['equal_size']}; Marian's frozen "
              "sinusoidal position tables are parameters, ours a buffer). The tutorial loop (PyTorch's "
              "nn.Transformer translation tutorial, batched) recomputes the prefix at every step; greedy only.",
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--big", action="store_true", help="the paper's base sizes (d_model 512, 6+6 layers)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check that it runs, in seconds")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size, e.g. --set batch_size=64")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--profile", action="store_true", help="also print and save torch.profiler tables")
    parser.add_argument("--out", type=Path, default=Path("results") / "benchmarks_transformer.json")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda was asked for but torch sees no CUDA device.")
    if args.threads:
        torch.set_num_threads(args.threads)
    if any("=" not in item for item in args.overrides):
        parser.error(f"--set expects NAME=VALUE, got {args.overrides}.")
    overrides = dict(item.split("=", 1) for item in args.overrides)
    settings = Settings(device=args.device, smoke=args.smoke, overrides=overrides)
    started = provenance([settings.seed], SPLIT, args.device)
    entry, seconds = timed(lambda: run(settings, big=args.big), args.device)
    entry.update(seconds=round(seconds, 1), provenance=started)
    results = {"entry": entry}
    if args.profile:
        sizes = resolve_sizes(BIG if args.big else Sizes(), SMOKE, settings)
        results["profiles"] = profile_tables(build_models(sizes, args.device), sizes, args.device)
        for name, table in results["profiles"].items():
            print(f"\n{name}, one forward+backward round:\n{table}", file=sys.stderr)
    for row in entry["rows"]:
        print("  ".join(f"{key}={value}" for key, value in row.items()))
    for item in entry["targets"]:
        print(f"{item['name']}: {item['value']} (target {item['target']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
