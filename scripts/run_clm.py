#!/usr/bin/env python
"""Train a language model (a word-level LSTM on PTB by default) and report its perplexity.

The steps follow transformers' examples/pytorch/language-modeling/run_clm_no_trainer.py: load the data, train
a tokenizer, tokenize and group into blocks, train with Accelerate, evaluate, save, and generate a few samples
from the saved folder.

    python scripts/run_clm.py --output_dir outputs/ptb-lstm
    torchrun --nproc_per_node 2 scripts/run_clm.py --output_dir outputs/ptb-lstm   # 2 processes on a CPU
    python scripts/run_clm.py --output_dir outputs/ptb-transformer --model_type vanilla_transformer \\
        --config_overrides d_model=256,ffn_dim=1024,decoder_layers=3,num_heads=4

The defaults (a 1-layer LSTM, 256 units, tied embeddings, 1 epoch) train on 2 CPU cores in a few minutes.
`accelerate launch --cpu --num_processes 2` starts only one process (huggingface/accelerate#2741); `torchrun` or
`accelerate launch --multi_gpu --num_processes 2` start two, which `training.make_accelerator` puts on the CPU.
"""

import json
import os
import time
from dataclasses import asdict, dataclass, field

# Before torch starts OpenMP: idle threads sleep instead of spinning. On a shared machine a spinning thread waits
# for a descheduled peer at every parallel region; with 2 threads on 2 busy cores a step took 7x longer.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    HfArgumentParser,
    default_data_collator,
)

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.cli import parse_config_overrides
from hf_seqmodels.data import check_column, first_rows, load_text_dataset, tokenize_for_lm
from hf_seqmodels.evaluation import perplexity
from hf_seqmodels.tokenization import KINDS, train_tokenizer
from hf_seqmodels.training import (
    TrainingArguments,
    describe_device,
    evaluate_loss,
    make_accelerator,
    run_tokenizer,
    save_model,
    train,
)

CLM_MODEL_TYPES = ("recurrent", "vanilla_transformer")
PROMPTS = ["the company said", "the market", "in the first quarter"]
# One epoch of PTB for the default model (~4 minutes on 2 idle CPU cores; test perplexity ~152). Adam with
# lr 1e-2 and linear decay learns much faster in one epoch than 3e-3 (test perplexity 196). The time budget keeps a
# busy machine under 10 minutes in all, at the price of stopping before the end of the epoch.
CLM_TRAINING_DEFAULTS = {"learning_rate": 1e-2, "num_warmup_steps": 100, "per_device_train_batch_size": 20,
                         "num_train_epochs": 1, "time_budget_minutes": 7.5}


@dataclass
class DataArguments:
    dataset_name: str | None = field(
        default="ptb", metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The Hub configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "json/jsonl/csv/tsv/txt (optionally .gz)."})
    validation_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    test_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    text_column_name: str = field(default="sentence", metadata={"help": "The column holding the text."})
    block_size: int = field(default=35, metadata={"help": "Tokens per training sequence (BPTT length)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N training texts."})
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N validation and test texts."}
    )
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenizing."})
    tokenizer_type: str = field(default="word", metadata={"help": f"Tokenizer to train: one of {KINDS}."})
    vocab_size: int = field(
        default=30000, metadata={"help": "Largest vocabulary (PTB has 10k words, so all are kept)."}
    )


@dataclass
class ModelArguments:
    model_type: str = field(
        default="recurrent", metadata={"help": f"The model family: one of {CLM_MODEL_TYPES}."}
    )
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "More config fields as 'field=value,...' (e.g. 'd_model=256,num_heads=4' for "
                          "vanilla_transformer); they win over the recurrent options below."},
    )
    cell_type: str = field(default="lstm", metadata={"help": "Recurrent only: 'lstm', 'gru' or 'rnn'."})
    embedding_size: int = field(default=256, metadata={"help": "Recurrent only: size of the token embeddings."})
    hidden_size: int = field(default=256, metadata={"help": "Recurrent only: size of each layer's state."})
    num_layers: int = field(default=1, metadata={"help": "Recurrent only: number of stacked layers."})
    embedding_dropout: float = field(default=0.0, metadata={"help": "Recurrent only: dropout on the embeddings."})
    dropout: float = field(default=0.0, metadata={"help": "Recurrent only: dropout between recurrent layers."})
    output_dropout: float = field(
        default=0.0,
        metadata={"help": "Recurrent only: dropout before the output layer (one epoch does not overfit)."},
    )
    tie_word_embeddings: bool = field(default=True, metadata={"help": "Share input and output embeddings."})

    def __post_init__(self):
        if self.model_type not in CLM_MODEL_TYPES:
            raise ValueError(f"--model_type={self.model_type!r} is not supported; choose one of {CLM_MODEL_TYPES}.")

    def config_options(self) -> dict:
        """The config fields these arguments set for ``model_type``."""
        if self.model_type == "recurrent":
            options = {k: v for k, v in asdict(self).items() if k not in ("model_type", "config_overrides")}
        else:
            options = {"tie_word_embeddings": self.tie_word_embeddings}
        return {**options, **parse_config_overrides(self.model_type, self.config_overrides)}


def load_data(data_args: DataArguments):
    files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
    raw = load_text_dataset(data_args.dataset_name, data_args.dataset_config_name, {k: v for k, v in files.items() if v})
    raw = first_rows(raw, data_args.max_train_samples, data_args.max_eval_samples)
    check_column(raw, data_args.text_column_name)
    return raw


def print_samples(model_dir: str, seed: int) -> None:
    """Reload the saved folder through the Auto classes and continue ``PROMPTS`` greedily, by beam search and by
    sampling. Every training sentence follows an eos, so each prompt starts with one."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    inputs = tokenizer([f"{tokenizer.eos_token} {p}" for p in PROMPTS], return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    for name, options in (("greedy", {}), ("beam 5", {"num_beams": 5}), ("sampled", {"do_sample": True, "top_k": 40})):
        outputs = model.generate(**inputs, max_new_tokens=25, **options)
        print(f"--- {name}")
        for text in tokenizer.batch_decode(outputs, skip_special_tokens=True):
            print("   ", text)


def main():
    start = time.monotonic()
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    parser.set_defaults(**CLM_TRAINING_DEFAULTS)
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    accelerator = make_accelerator(training_args)

    with accelerator.main_process_first():
        raw = load_data(data_args)
        tokenizer = run_tokenizer(training_args, lambda: train_tokenizer(
            raw["train"][data_args.text_column_name], data_args.tokenizer_type, data_args.vocab_size))
        lm_datasets = tokenize_for_lm(raw, tokenizer, data_args.block_size, data_args.text_column_name,
                                      data_args.preprocessing_num_workers)

    config = AutoConfig.for_model(
        model_args.model_type,
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **model_args.config_options(),
    )
    model = AutoModelForCausalLM.from_config(config)

    results = train(accelerator, model, lm_datasets["train"], lm_datasets["validation"], default_data_collator,
                    training_args, tokenizer=tokenizer)
    if "test" in lm_datasets:
        test_loss = evaluate_loss(accelerator, model, lm_datasets["test"], default_data_collator,
                                  training_args.per_device_eval_batch_size)
        results.update(test_loss=test_loss, test_perplexity=perplexity(test_loss))
    unwrapped = accelerator.unwrap_model(model)
    results.update(
        task="text-generation",
        model_config=unwrapped.config.to_dict(),  # what the model card describes
        num_parameters=unwrapped.num_parameters(),
        vocab_size=len(tokenizer),
        num_processes=accelerator.num_processes,
        device=describe_device(accelerator.device),
        wall_time_s=time.monotonic() - start,
        arguments={**asdict(model_args), **asdict(data_args), **asdict(training_args)},
    )
    save_model(accelerator, model, tokenizer, training_args.output_dir, results)

    if accelerator.is_main_process:
        summary = {k: v for k, v in results.items() if k not in ("eval_history", "arguments")}
        print(json.dumps(summary, indent=2))
        print_samples(training_args.output_dir, training_args.seed)


if __name__ == "__main__":
    main()
