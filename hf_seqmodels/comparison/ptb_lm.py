"""PTB word-level perplexity under a wall-time budget: LSTM and GRU, plain and AWD-regularised, trained statefully.

Each variant is one run of the language-modelling task (`hf_seqmodels.tasks.language_modeling.run`, what
``scripts/run_clm.py`` runs) with ``--lm_protocol stateful``: truncated BPTT over the training text as one stream,
the state carried, and validation and test perplexity over every token (82,430 on the test split, each line's eos
included) with the state carried through ``eval_batch_size`` rows. Training stops when its share of the budget is
spent; evaluation, saving and samples come on top. The table (protocol, tokens scored, test perplexity, minutes,
device, seed, command) goes to ``results/ptb_lm.json``.

    python -m hf_seqmodels.comparison.ptb_lm                           # 10 minutes a variant, every variant
    python -m hf_seqmodels.comparison.ptb_lm --minutes 2 --variants lstm,lstm-awd --out /tmp/ptb
    python -m hf_seqmodels.comparison.ptb_lm --smoke --out /tmp/ptb    # seconds: a few hundred lines, tiny models

Its own command, not a suite of ``scripts/compare.py`` (its variants train one after another, each in this
process, and its table is its own).
"""

import argparse
import json
import shlex
import tempfile
from pathlib import Path

import torch

from ..tasks import language_modeling as lm
from ..training.loop import TrainingArguments
from .recipes import PTB_AWD, PTB_PLAIN

TRAIN_SHARE = 0.85  # of the budget; the rest is left for the final validation and test passes and saving
# With a full softmax, 90% of a step is the 10,000-word output layer, and 10 minutes on 2 CPU cores give 2.4 epochs.
# An adaptive softmax (clusters of the 2,000 commonest words, the next 4,000, the rest) costs 2.3x less at batch 20
# and an epoch at batch 40 takes ~1.1 minutes on 2 idle cores, so six epochs with the learning rate decaying to 0 fit
# the training share of the budget; the budget stops a slower machine early. Its weights cannot be tied to the
# embeddings.
SHARED = {"embedding_size": 256, "hidden_size": 256, "num_layers": 1, "adaptive_softmax_cutoffs": [2000, 6000],
          "tie_word_embeddings": False}
VARIANTS = {
    "lstm": {"cell_type": "lstm", **SHARED, **PTB_PLAIN},
    "gru": {"cell_type": "gru", **SHARED, **PTB_PLAIN},
    "lstm-awd": {"cell_type": "lstm", **SHARED, **PTB_AWD},
    "gru-awd": {"cell_type": "gru", **SHARED, **PTB_AWD},
}
TRAINING = {"per_device_train_batch_size": 40, "per_device_eval_batch_size": 10, "learning_rate": 1e-2,
            "lr_scheduler_type": "linear", "num_warmup_steps": 100, "max_grad_norm": 0.25, "num_train_epochs": 6,
            "logging_steps": 50}
SMOKE = {"model": {"embedding_size": 16, "hidden_size": 16, "adaptive_softmax_cutoffs": [50, 200]},
         "data": {"max_train_samples": 200, "max_eval_samples": 40}}


def run_variant(name: str, minutes: float, seed: int, smoke: bool) -> dict:
    """Train and evaluate one variant; its row of the table."""
    model_options = {**VARIANTS[name], **(SMOKE["model"] if smoke else {})}
    data_options = {"lm_protocol": "stateful", "block_size": 35, **(SMOKE["data"] if smoke else {})}
    training_options = {**TRAINING, "seed": seed, "time_budget_minutes": minutes * TRAIN_SHARE,
                        **({"max_train_steps": 3} if smoke else {})}
    with tempfile.TemporaryDirectory() as folder:
        results = lm.run(lm.ModelArguments(**model_options), lm.DataArguments(**data_options),
                         TrainingArguments(output_dir=str(Path(folder) / name), **training_options))
    return {
        "variant": name,
        "protocol": results["eval_protocol"],
        "training": f"stateful, bptt 35, batch {TRAINING['per_device_train_batch_size']}, Adam "
                    f"{TRAINING['learning_rate']}, {results['epochs']:.2f} epochs, adaptive softmax "
                    f"{model_options['adaptive_softmax_cutoffs']}",
        "test_tokens_scored": results["test_tokens_scored"],
        "test_perplexity": results["test_perplexity"],
        "validation_perplexity": results["eval_perplexity"],
        "minutes": results["wall_time_s"] / 60,
        "device": results["device"],
        "seed": seed,
        "num_parameters": results["num_parameters"],
        "model_options": model_options,
        "command": command_of(name, minutes, seed, smoke),
        "provenance": results["provenance"],
    }


def command_of(name: str, minutes: float, seed: int, smoke: bool) -> str:
    return shlex.join(["python", "-m", "hf_seqmodels.comparison.ptb_lm", "--variants", name, "--minutes", str(minutes),
                       "--seed", str(seed), *(["--smoke"] if smoke else [])])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"Comma-separated, of {list(VARIANTS)}.")
    parser.add_argument("--minutes", type=float, default=10.0, help="Wall-time budget of each variant.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of every variant's run.")
    parser.add_argument("--smoke", action="store_true", help="Tiny data and models, 3 steps: checks the plumbing.")
    parser.add_argument("--out", type=Path, default=Path("results"), help="Folder of ptb_lm.json.")
    args = parser.parse_args(argv)
    names = args.variants.split(",")
    if unknown := [name for name in names if name not in VARIANTS]:
        parser.error(f"--variants: unknown {unknown}; choose among {list(VARIANTS)}.")
    rows = [run_variant(name, args.minutes, args.seed, args.smoke) for name in names]
    table = {"title": "PTB word-level language modelling under a wall-time budget", "budget_minutes": args.minutes,
             "torch_threads": torch.get_num_threads(), "target": "test perplexity <= 125 from 10 minutes on 2 CPU "
             "cores", "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ptb_lm.json").write_text(json.dumps(table, indent=2) + "\n")
    for row in rows:
        print(f"{row['variant']:>9}: test perplexity {row['test_perplexity']:.1f} over {row['test_tokens_scored']} "
              f"tokens in {row['minutes']:.1f} min ({row['device']})")
    return table


if __name__ == "__main__":
    main()
