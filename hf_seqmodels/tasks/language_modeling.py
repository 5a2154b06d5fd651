"""The causal language-modelling task: arguments, data, tokenizer, model, training, perplexity, results and samples.

    from hf_seqmodels.tasks import language_modeling as lm
    results = lm.run(lm.ModelArguments(), lm.DataArguments(), TrainingArguments(output_dir="outputs/ptb-lstm"))

`run` follows transformers' examples/pytorch/language-modeling/run_clm_no_trainer.py: load the data, train a
tokenizer (or, when resuming, load the checkpoint's), tokenize, train, evaluate, save, and generate a few samples
from the saved folder. Two training protocols (``--lm_protocol``):

- ``stateful`` (recurrent models): truncated BPTT over the training text as one stream with the state carried
  (`stateful_lm`), as the published PTB figures were trained; one process, no checkpoints.
- ``blocks``: independent ``block_size`` blocks, each from a zero state, shuffled, through the shared Accelerate
  loop (several processes, checkpoints and resuming); kept for the Transformer, which trains this way, and for runs
  that need those features.

Whatever the protocol, the final validation and test figures score every token of the split once (`stateful_lm`):
a recurrent model carries its state through the stream, a Transformer reads it with a sliding window
(``--eval_stride``). ``results.json`` names the protocol (``eval_protocol``) and the tokens scored.
"""

import os
import time
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, default_data_collator

from ..data.loading import check_column, tokenize_for_lm
from ..data.tokenization import DEFAULT_SPECIAL_TOKENS, KINDS, train_tokenizer
from ..evaluation import perplexity
from ..models.configuration_utils import CELL_TYPES, check_choice
from ..storage.safe_loading import load_pretrained
from ..training.argument_checks import check_at_least, check_range
from ..training.arguments import TrainingArguments
from ..training.loop import finish_run, start_run, train
from . import arguments
from .stateful_lm import evaluate_stateful, sliding_window_loss, token_stream, train_stateful

PROMPTS = ["the company said", "the market", "in the first quarter"]
# One epoch of PTB for the default model (~4 minutes on 2 idle CPU cores; test perplexity ~152). Adam with
# lr 1e-2 and linear decay learns much faster in one epoch than 3e-3 (test perplexity 196). The time budget keeps a
# busy machine under 10 minutes in all, at the price of stopping before the end of the epoch.
TRAINING_DEFAULTS = {"learning_rate": 1e-2, "num_warmup_steps": 100, "per_device_train_batch_size": 20,
                     "num_train_epochs": 1, "time_budget_minutes": 7.5}
RECURRENT_OPTIONS = ("cell_type", "embedding_size", "hidden_size", "num_layers", "embedding_dropout", "dropout",
                     "output_dropout", "locked_dropout", "weight_drop", "word_type_dropout",
                     "activation_regularization", "temporal_activation_regularization", "adaptive_softmax_cutoffs",
                     "adaptive_softmax_div_value")
LM_PROTOCOLS = ("blocks", "stateful")


@dataclass
class DataArguments(arguments.DataArguments):
    dataset_name: str | None = arguments.dataset_name_field("ptb")
    train_file: str | None = field(default=None, metadata={"help": "json/jsonl/csv/tsv/txt (optionally .gz)."})
    text_column_name: str = field(default="sentence", metadata={"help": "The column holding the text."})
    block_size: int = field(
        default=35, metadata={"help": "Tokens per training sequence: the BPTT window of --lm_protocol stateful (its "
                                      "mean with --variable_bptt), the block of 'blocks', the Transformer's context."}
    )
    lm_protocol: str = field(
        default="blocks", metadata={"help": f"One of {LM_PROTOCOLS}: 'stateful' trains a recurrent model over the "
                                            "text as one stream with its state carried (truncated BPTT); 'blocks' "
                                            "on independent blocks (several processes, checkpoints)."}
    )
    variable_bptt: bool = field(
        default=False, metadata={"help": "--lm_protocol stateful: AWD-LSTM's random window lengths around "
                                         "--block_size (the learning rate scaled by each window's length)."}
    )
    eval_stride: int | None = field(
        default=None, metadata={"help": "Transformer: positions a sliding evaluation window moves on (default: half "
                                        "of --block_size); each target keeps block_size - stride tokens of context."}
    )
    tokenizer_type: str = field(default="word", metadata={"help": f"Tokenizer to train: one of {KINDS}."})
    vocab_size: int = field(
        default=30000, metadata={"help": "Largest vocabulary (PTB has 10k words, so all are kept)."}
    )

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, "block_size", 2, " (one input and one target)")
        check_choice("--lm_protocol", self.lm_protocol, LM_PROTOCOLS)
        check_at_least(self, "eval_stride", 1)
        if self.eval_stride is not None and self.eval_stride > self.block_size:
            raise ValueError(f"--eval_stride={self.eval_stride} must not exceed --block_size={self.block_size}: "
                             "a window would skip targets.")
        if self.variable_bptt and self.lm_protocol != "stateful":
            raise ValueError("--variable_bptt needs --lm_protocol stateful (the blocks have one size).")
        check_choice("--tokenizer_type", self.tokenizer_type, KINDS)
        check_at_least(self, "vocab_size", len(DEFAULT_SPECIAL_TOKENS) + 1, " (more than the special tokens)")

    def column_kinds(self) -> dict[str, str]:
        return {self.text_column_name: "text"}


@dataclass
class ModelArguments(arguments.ModelArguments):
    CHOICES: ClassVar[tuple[str, ...]] = ("recurrent", "transformer")

    model_type: str = arguments.model_type_field("recurrent", CHOICES)
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
    locked_dropout: bool = field(
        default=False, metadata={"help": "Recurrent only: the three dropouts above drop the same features at every "
                                         "position of a sequence (AWD-LSTM's dropouti, dropouth, dropout)."}
    )
    weight_drop: float = field(
        default=0.0, metadata={"help": "Recurrent only: DropConnect on the hidden-to-hidden weights (AWD's wdrop)."}
    )
    word_type_dropout: float = field(
        default=0.0, metadata={"help": "Recurrent only: drop whole word types from the embeddings (AWD's dropoute)."}
    )
    activation_regularization: float = field(
        default=0.0, metadata={"help": "Recurrent only: AR, weight of the top outputs' mean square (AWD's alpha)."}
    )
    temporal_activation_regularization: float = field(
        default=0.0, metadata={"help": "Recurrent only: TAR, weight of the top outputs' mean square change from one "
                                       "position to the next (AWD's beta)."}
    )
    adaptive_softmax_cutoffs: list[int] | None = field(
        default=None, metadata={"help": "Recurrent only: an adaptive softmax output layer with these cluster "
                                        "boundaries (word ids, most frequent first), e.g. 2000 6000 on PTB; needs "
                                        "--tie_word_embeddings false."}
    )
    adaptive_softmax_div_value: float = field(
        default=4.0, metadata={"help": "Recurrent only: each tail cluster's projection is this many times smaller."}
    )
    tie_word_embeddings: bool = field(default=True, metadata={"help": "Share input and output embeddings."})

    def __post_init__(self):
        super().__post_init__()
        check_choice("--cell_type", self.cell_type, CELL_TYPES)
        for name in ("embedding_size", "hidden_size", "num_layers"):
            check_at_least(self, name, 1)
        for name in ("embedding_dropout", "dropout", "output_dropout", "weight_drop", "word_type_dropout"):
            check_range(self, name, 0, 1, high_open=True)
        for name in ("activation_regularization", "temporal_activation_regularization"):
            check_range(self, name, 0)

    def model_options(self) -> dict:
        """The config fields these options set for ``model_type`` (``config_overrides`` win over them)."""
        names = (*RECURRENT_OPTIONS, "tie_word_embeddings") if self.model_type == "recurrent" else (
            "tie_word_embeddings",)
        return {name: getattr(self, name) for name in names}


ARGUMENTS = (ModelArguments, DataArguments, TrainingArguments)


def print_samples(model_dir: str, seed: int) -> None:
    """Reload the saved folder through the Auto classes and continue `PROMPTS` greedily, by beam search and by
    sampling. Every training sentence follows an eos, so each prompt starts with one."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = load_pretrained(AutoModelForCausalLM, model_dir).eval()
    inputs = tokenizer([f"{tokenizer.eos_token} {p}" for p in PROMPTS], return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    for name, options in (("greedy", {}), ("beam 5", {"num_beams": 5}), ("sampled", {"do_sample": True, "top_k": 40})):
        outputs = model.generate(**inputs, max_new_tokens=25, **options)
        print(f"--- {name}")
        for text in tokenizer.batch_decode(outputs, skip_special_tokens=True):
            print("   ", text)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: TrainingArguments) -> dict:
    """Train a language model, report validation (and test) perplexity, save it with its tokenizer and
    ``results.json`` to ``training_args.output_dir``, and print a summary and samples (main process). Returns the
    results."""
    start = time.monotonic()
    stateful = data_args.lm_protocol == "stateful"
    if stateful:
        check_stateful_options(model_args, training_args)
    accelerator, checkpoints = start_run(training_args)

    with accelerator.main_process_first():
        raw = data_args.load()
        check_column(raw, data_args.text_column_name)
        tokenizer = checkpoints.tokenizer(lambda: train_tokenizer(
            raw["train"][data_args.text_column_name], data_args.tokenizer_type, data_args.vocab_size))
        streams = {split: token_stream(rows[data_args.text_column_name], tokenizer) for split, rows in raw.items()}

    model = AutoModelForCausalLM.from_config(model_args.config(tokenizer, **model_args.model_options()))
    vectors_coverage = model_args.load_word_vectors(model, tokenizer)
    if stateful:
        model.to(accelerator.device)
        results = train_stateful(model, streams["train"], training_args, data_args.block_size,
                                 data_args.variable_bptt, lambda m: score_stream(m, streams["validation"], data_args,
                                                                                 training_args)[0],
                                 tokenizer.eos_token_id)
    else:
        with accelerator.main_process_first():
            lm_datasets = tokenize_for_lm(raw, tokenizer, data_args.block_size, data_args.text_column_name,
                                          data_args.preprocessing_num_workers)
        results = train(accelerator, model, lm_datasets["train"], lm_datasets["validation"], default_data_collator,
                        training_args, tokenizer=tokenizer, checkpoints=checkpoints)
    unwrapped = accelerator.unwrap_model(model)
    results["eval_protocol"] = eval_protocol(unwrapped, data_args, training_args)
    for split, prefix in (("validation", "eval"), ("test", "test")):
        if stateful and split == "validation":  # training's last evaluation scored it so, with the final weights
            loss, tokens = results["eval_loss"], len(streams[split]) - 1
        elif split in streams:
            loss, tokens = score_stream(unwrapped, streams[split], data_args, training_args)
        else:
            continue
        results.update({f"{prefix}_loss": loss, f"{prefix}_perplexity": perplexity(loss),
                        f"{prefix}_tokens_scored": tokens})
    fields = {
        "task": "text-generation",
        "lm_protocol": data_args.lm_protocol,
        "model_config": unwrapped.config.to_dict(),  # what the model card describes
        "num_parameters": unwrapped.num_parameters(),
        "vocab_size": len(tokenizer),
    }
    finish_run(accelerator, checkpoints, training_args, (model_args, data_args), model, tokenizer, results, fields,
               start=start, splits=[split for split in ("validation", "test") if split in raw],
               word_vectors_coverage=vectors_coverage)

    if accelerator.is_main_process:
        print_samples(training_args.output_dir, training_args.seed)
    return results


def check_stateful_options(model_args: ModelArguments, training_args: TrainingArguments) -> None:
    """Raise unless the run can train statefully: a recurrent model, one process, no checkpoints."""
    if model_args.model_type != "recurrent":
        raise ValueError(f"--lm_protocol stateful carries a recurrent state; --model_type {model_args.model_type} "
                         "has none: use --lm_protocol blocks.")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("--lm_protocol stateful trains on one process (each row of the stream follows the one "
                         "before it): start one process, or use --lm_protocol blocks.")
    for name in ("checkpointing_steps", "resume_from_checkpoint"):
        if getattr(training_args, name) is not None:
            raise ValueError(f"--{name}: --lm_protocol stateful writes no checkpoints; drop it or use --lm_protocol "
                             "blocks.")


def score_stream(model, stream, data_args: DataArguments, training_args: TrainingArguments) -> tuple[float, int]:
    """Mean loss over every target of ``stream`` and their number: a recurrent model carries its state through
    ``per_device_eval_batch_size`` rows in ``block_size`` windows, a Transformer slides a ``block_size`` window by
    ``eval_stride``."""
    if model.config.model_type == "recurrent":
        return evaluate_stateful(model, stream, training_args.per_device_eval_batch_size, data_args.block_size,
                                 model.config.eos_token_id)
    return sliding_window_loss(model, stream, data_args.block_size, eval_stride(data_args))


def eval_stride(data_args: DataArguments) -> int:
    return data_args.eval_stride or max(1, data_args.block_size // 2)


def eval_protocol(model, data_args: DataArguments, training_args: TrainingArguments) -> str:
    """How the validation and test figures were measured, in words."""
    if model.config.model_type == "recurrent":
        return (f"stateful, bptt={data_args.block_size}, batch {training_args.per_device_eval_batch_size} (the "
                "stream cut in that many rows, each from a zero state), every token scored")
    return (f"sliding window of {data_args.block_size} tokens, stride {eval_stride(data_args)}, every token scored "
            "once")
