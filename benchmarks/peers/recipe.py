"""One description of the main job (sizes, schedule, decoding) and the configs of every toolkit generated from it.

`Recipe.main_job` reads the real defaults of `scripts/run_translation.py` (`translation.TRAINING_DEFAULTS`, its
argument dataclasses and `AttentionSeq2SeqConfig`); `ours_arguments`, `joeynmt_config` and `eole_config` write the
same recipe in each toolkit's terms, with a `Tuning` (peak learning rate and schedule in the toolkit's own words)
that the sweep varies (`SWEEP`). Where a toolkit cannot say the same thing, `DIFFERENCES` says what it does instead
(the docs and the results repeat it).
"""

import dataclasses
import math
from pathlib import Path

from hf_seqmodels import AttentionSeq2SeqConfig
from hf_seqmodels.tasks import translation

from .data import PreparedData, prepare

# eole's `brnn` splits hidden_size over the two directions, encoder and decoder must have the same hidden_size, and
# the output layer tied to the decoder's embeddings needs them of the decoder's size: its model is 13.5 h^2 + 12,012 h
# + 6,000 parameters for h = hidden_size = word_vec_size and our 6,000 pieces. h = 294 (147 per encoder direction)
# gives 4,704,414, the closest to ours (4,721,264: embeddings 256, 256 per direction, a decoder of 256); at 256 it
# has 3,965,808.
EOLE_HIDDEN_SIZE = 294


@dataclasses.dataclass(frozen=True)
class Tuning:
    """What the sweep varies for a toolkit, in its own words: the peak learning rate and one of its schedules
    (`SCHEDULES`). Each schedule decays over the same updates; what each does is in `SCHEDULE_WORDS`."""

    learning_rate: float
    schedule: str

    @property
    def name(self) -> str:
        return f"{self.schedule}-lr{self.learning_rate:g}"


# Each toolkit's own schedules: the one the main job's recipe maps to first (the untuned runs used it), then a decay
# without warmup of the kind its RNN examples use (eole/OpenNMT's classic RNN recipe: the rate halved at a fixed
# interval once past a start step, its `decay_method: none`; JoeyNMT's configs/rnn_small.yaml halve it on a
# plateau of validation BLEU, which fails to build under torch 2.13, so its per-epoch halving stands in); ours:
# transformers' linear and cosine decays.
SCHEDULES = {"ours": ("linear", "cosine"), "joeynmt": ("warmupinversesquareroot", "exponential"),
             "eole": ("cosine", "none")}
SCHEDULE_WORDS = {
    ("ours", "linear"): "linear warmup, then linear decay to 0 at the last update",
    ("ours", "cosine"): "linear warmup, then cosine decay to 0 at the last update",
    ("joeynmt", "warmupinversesquareroot"): "linear warmup, then the peak times sqrt(warmup / update)",
    ("joeynmt", "exponential"): "no warmup; the rate halved after each epoch",
    ("eole", "cosine"): "linear warmup, then cosine decay to 0 at the last update",
    ("eole", "none"): "no warmup; the rate halved at half the updates, then every sixth of them",
}
# Peak learning rates: each toolkit's own documented rate is among them (eole's docs: adam 0.001; ours: 0.003;
# JoeyNMT's configs/rnn_small.yaml: 0.005).
LEARNING_RATES = (1e-3, 3e-3, 5e-3)
SWEEP = {name: tuple(Tuning(rate, schedule) for schedule in schedules for rate in LEARNING_RATES)
         for name, schedules in SCHEDULES.items()}
# Length penalties tried on validation at decoding time, each in the toolkit's own formula (ours and eole: the
# score divided by length ** alpha; JoeyNMT: by ((5 + length) / 6) ** alpha, GNMT's).
LENGTH_PENALTIES = (0.6, 0.8, 1.0, 1.2, 1.4, 1.6)
# Where a row's best length penalty sits on the edge of those decoded, the next one beyond it (a step further, within
# the bounds) is decoded too, until the best lies inside: the grid's edge never makes the choice.
LENGTH_PENALTY_STEP = 0.2
LENGTH_PENALTY_BOUNDS = (0.0, 3.0)

# Differences the Transformer's comparison shares (benchmarks.peers.transformer_recipe), in DIFFERENCES below.
JOEYNMT_FIRST_UPDATE = (
    "the first update runs at the peak learning rate (its scheduler sets the rate only after an update, and the "
    "optimizer starts at the peak), the warmup from the second on; ours runs the first at 0")
JOEYNMT_LENGTH_PENALTY = (
    "length penalty: GNMT's ((5 + length) / 6) ** beam_alpha (its only kind), instead of length ** alpha; each "
    "toolkit's alpha is chosen on validation")
JOEYNMT_VALIDATION = (
    "the best checkpoint is chosen by greedy validation BLEU as ours, but its BLEU is its own sacreBLEU call on the "
    "pieces joined by spaces; the rows use only its test output")
EOLE_BEAM_END = (
    "beam search ends a sentence once its top beam has finished (OpenNMT's rule, eole's predict/beam_search.py "
    "`beams_non_finished`), with at least n_best hypotheses; ours, as transformers' `early_stopping=True`, once "
    "num_beams (5) hypotheses have finished: eole runs fewer decoding steps per sentence, and may return another "
    "translation where a longer one would have scored better")
EOLE_VALIDATION = (
    "no validation BLEU: the last checkpoint is decoded (ours and JoeyNMT keep the best by validation BLEU; with one "
    "validation, at the end, they are the same)")

# What could not be made equal, by toolkit (rendered into results/peers.md and docs/peers.md).
DIFFERENCES = {
    "joeynmt": [
        "learning rate: JoeyNMT has no linear decay, 2.3.0's `warmupexponentialdecay` raises a TypeError when "
        "built, and its `plateau` (the schedule of its RNN examples) passes `verbose` to torch 2.13's "
        "ReduceLROnPlateau, which no longer takes it; two of its schedules that run are swept instead "
        "(`SCHEDULES`)",
        JOEYNMT_FIRST_UPDATE,
        JOEYNMT_LENGTH_PENALTY,
        "initialisation: embeddings (and the output layer tied to them) N(0, 0.1) as ours; its default for the other "
        "weights, Xavier-uniform (per gate for the GRUs) and zero biases, instead of ours (N(0, 0.1) linear layers, "
        "torch's default U(-1/16, 1/16) recurrent weights and biases)",
        JOEYNMT_VALIDATION,
    ],
    "eole": [
        f"sizes: `brnn` splits hidden_size over the two directions, encoder and decoder must have the same "
        f"hidden_size, and the tied output layer needs embeddings of the decoder's size, so eole cannot build ours "
        f"(embeddings 256, 256 per direction, decoder 256); embeddings and hidden_size {EOLE_HIDDEN_SIZE} (each "
        f"direction {EOLE_HIDDEN_SIZE // 2}) is the closest in parameters, and every eole run uses it",
        "position encoding: none, as eole's own RNN tests set (`position_encoding_type: null`); eole's default adds "
        "sinusoidal encodings and scales the embeddings even to an RNN (the runs before the sweep had them)",
        "no bridge: eole 0.6.4's bridge fails on a `brnn` encoder (a 128x128 layer given the 256 concatenated final "
        "states), so the decoder starts from the encoder's final states as they are; ours from tanh(Linear(them))",
        "learning rate: eole has no linear decay; its schedules are swept instead (`SCHEDULES`)",
        "initialisation: its default U(-0.1, 0.1) for every weight",
        EOLE_BEAM_END,
        EOLE_VALIDATION,
    ],
}


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The main job's model, training schedule and decoding, in the terms every toolkit config is written from."""

    embedding_size: int
    hidden_size: int  # of each encoder direction and of the decoder
    cell_type: str
    bidirectional_encoder: bool
    encoder_layers: int
    decoder_layers: int
    attention_type: str
    input_feeding: bool
    dropout: float
    tie_word_embeddings: bool  # the decoder's input embeddings and output layer (not source with target)
    initializer_range: float  # standard deviation of the normal initialisation of embeddings and linear layers
    vocab_size: int
    max_source_length: int  # tokens, eos included
    max_target_length: int
    batch_size: int  # sentences per update
    learning_rate: float  # peak
    warmup_steps: int
    lr_scheduler: str
    label_smoothing: float
    max_grad_norm: float
    weight_decay: float
    updates: int
    validation_every: int  # updates between validations (an epoch, at most the updates)
    num_beams: int
    length_penalty: float
    max_new_tokens: int

    @classmethod
    def main_job(cls, train_sentences: int, updates: int | None = None) -> "Recipe":
        """The defaults of scripts/run_translation.py for a training file of ``train_sentences`` pairs; ``updates``
        replaces its epochs (a shorter budget, the same for every toolkit)."""
        defaults = translation.TRAINING_DEFAULTS
        data, generation, model = translation.DataArguments(), translation.GenerationArguments(), \
            AttentionSeq2SeqConfig()
        updates, validation_every = main_job_budget(train_sentences, defaults["per_device_train_batch_size"],
                                                    defaults["num_train_epochs"], updates)
        return cls(
            embedding_size=model.embedding_size, hidden_size=model.hidden_size, cell_type=model.cell_type,
            bidirectional_encoder=model.bidirectional_encoder, encoder_layers=model.encoder_layers,
            decoder_layers=model.decoder_layers, attention_type=model.attention_type,
            input_feeding=model.input_feeding, dropout=model.dropout, tie_word_embeddings=model.tie_word_embeddings,
            initializer_range=model.initializer_range,
            vocab_size=data.vocab_size, max_source_length=data.max_source_length,
            max_target_length=data.max_target_length, batch_size=defaults["per_device_train_batch_size"],
            learning_rate=defaults["learning_rate"], warmup_steps=defaults["num_warmup_steps"],
            lr_scheduler=defaults["lr_scheduler_type"], label_smoothing=defaults["label_smoothing_factor"],
            max_grad_norm=defaults["max_grad_norm"], weight_decay=0.0, updates=updates,
            validation_every=validation_every, num_beams=generation.num_beams,
            length_penalty=generation.length_penalty, max_new_tokens=generation.max_new_tokens,
        )

    @classmethod
    def prepared(cls, work: Path, updates: int | None = None,
                 warmup_steps: int | None = None) -> tuple[PreparedData, "Recipe"]:
        """The peers' data prepared under ``work`` and the main job's recipe for it, checked (`prepared_recipe`)."""
        return prepared_recipe(cls, work, updates, warmup_steps)

    def untuned(self, name: str) -> Tuning:
        """The main job's peak learning rate and the schedule it maps to first in ``name``'s words (the runs
        before the sweep)."""
        return Tuning(self.learning_rate, SCHEDULES[name][0])

    def check(self) -> None:
        """Refuse a recipe the peers' configs cannot express (not the main job's defaults)."""
        check_supported(self, "the main job", {
            "cell_type": "gru", "attention_type": "luong_general", "input_feeding": False,
            "bidirectional_encoder": True, "tie_word_embeddings": True, "lr_scheduler": "linear"})


def main_job_budget(train_sentences: int, batch_size: int, epochs: int, updates: int | None) -> tuple[int, int]:
    """The updates of ``epochs`` over ``train_sentences`` pairs in batches of ``batch_size`` (or ``updates`` where
    given, a shorter budget) and the updates between validations (an epoch, at most the updates)."""
    steps_per_epoch = math.ceil(train_sentences / batch_size)
    updates = updates or epochs * steps_per_epoch
    return updates, min(steps_per_epoch, updates)


def prepared_recipe(kind: type, work: Path, updates: int | None, warmup_steps: int | None):
    """The peers' data prepared under ``work`` and ``kind``'s recipe for it (its ``main_job``), checked (``updates``
    and ``warmup_steps`` shorten it for a check): what the sweep and the runs start from."""
    data = prepare(work, translation.DataArguments())
    recipe = kind.main_job(data.stats()["train"]["sentences"], updates)
    if warmup_steps is not None:
        recipe = dataclasses.replace(recipe, warmup_steps=warmup_steps)
    recipe.check()
    return data, recipe


def check_supported(recipe, compared: str, supported: dict) -> None:
    """Refuse a ``recipe`` whose fields differ from ``supported`` (field -> the only value the peers' configs
    express; ``compared`` names the model compared), or whose warmup is not shorter than its updates."""
    for name, value in supported.items():
        if getattr(recipe, name) != value:
            raise ValueError(f"benchmarks.peers compares {compared} ({name}={value!r}), got "
                             f"{name}={getattr(recipe, name)!r}.")
    if recipe.warmup_steps >= recipe.updates:
        raise ValueError(f"--updates ({recipe.updates}) must exceed the warmup steps ({recipe.warmup_steps}).")


def ours_arguments(recipe: Recipe, data: PreparedData, output_dir: Path, seed: int, tuning: Tuning) -> list[str]:
    """scripts/run_translation.py's arguments: every value of the recipe spelt out (they are its defaults, bar the
    updates and ``tuning``), and no time budget (every toolkit trains for the same updates)."""
    return run_translation_arguments(recipe, data, output_dir, seed, tuning, {
        "embedding_size": recipe.embedding_size, "hidden_size": recipe.hidden_size, "cell_type": recipe.cell_type,
        "bidirectional_encoder": recipe.bidirectional_encoder, "encoder_layers": recipe.encoder_layers,
        "decoder_layers": recipe.decoder_layers, "attention_type": recipe.attention_type,
        "input_feeding": recipe.input_feeding, "dropout": recipe.dropout,
        "tie_word_embeddings": recipe.tie_word_embeddings})


def run_translation_arguments(recipe, data: PreparedData, output_dir: Path, seed: int, tuning: Tuning,
                              overrides: dict, model_type: str | None = None) -> list[str]:
    """scripts/run_translation.py's arguments for ``recipe`` trained with ``tuning``: ``--model_type`` (None: left
    out, its default), the config fields ``overrides`` (field -> value), the recipe's data, batches, updates,
    regularisation and decoding, and no time budget (every toolkit trains for the same updates)."""
    options = {
        **({"model_type": model_type} if model_type else {}),
        "output_dir": output_dir, "overwrite_output_dir": True, "seed": seed,
        "source_lang": data.source_lang, "target_lang": data.target_lang, "vocabulary": "joint",
        "vocab_size": recipe.vocab_size, "max_source_length": recipe.max_source_length,
        "max_target_length": recipe.max_target_length,
        "config_overrides": ",".join(f"{key}={str(value).lower() if isinstance(value, bool) else value}"
                                     for key, value in overrides.items()),
        "per_device_train_batch_size": recipe.batch_size, "learning_rate": tuning.learning_rate,
        "num_warmup_steps": recipe.warmup_steps, "lr_scheduler_type": tuning.schedule,
        "label_smoothing_factor": recipe.label_smoothing, "max_grad_norm": recipe.max_grad_norm,
        "weight_decay": recipe.weight_decay, "max_train_steps": recipe.updates,
        "time_budget_minutes": 10**6, "num_beams": recipe.num_beams, "length_penalty": recipe.length_penalty,
        "max_new_tokens": recipe.max_new_tokens,
    }
    arguments = []
    for key, value in options.items():
        arguments += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return arguments


def joeynmt_config(recipe: Recipe, data: PreparedData, model_dir: Path, seed: int, batch_size: int,
                   tuning: Tuning) -> dict:
    """A JoeyNMT 2.3 config (`python -m joeynmt train|test`) for the recipe: plain files of pieces read as words
    with our vocabulary; ``batch_size`` sentences per batch when testing."""
    embeddings = {"embedding_dim": recipe.embedding_size, "scale": False, "freeze": False}
    recurrent = {"type": "recurrent", "rnn_type": recipe.cell_type, "embeddings": embeddings,
                 "hidden_size": recipe.hidden_size, "dropout": recipe.dropout, "freeze": False}
    return {
        **joeynmt_run(recipe, data, model_dir, seed, batch_size, tuning),
        "model": {
            # embeddings (and the output layer tied to them) N(0, 0.1) as ours; JoeyNMT's own default for them is
            # Xavier-uniform, which gives a 6,000 x 256 table a standard deviation of 0.018
            "initializer": "xavier_uniform", "bias_initializer": "zeros", "embed_initializer": "normal",
            "embed_init_weight": recipe.initializer_range,
            "tied_embeddings": False, "tied_softmax": recipe.tie_word_embeddings,
            "encoder": {**recurrent, "bidirectional": recipe.bidirectional_encoder,
                        "num_layers": recipe.encoder_layers},
            "decoder": {**recurrent, "hidden_dropout": recipe.dropout, "num_layers": recipe.decoder_layers,
                        "input_feeding": recipe.input_feeding, "init_hidden": "bridge", "attention": "luong",
                        "activation": "tanh"},
        },
    }


def joeynmt_run(recipe, data: PreparedData, model_dir: Path, seed: int, batch_size: int, tuning: Tuning) -> dict:
    """A JoeyNMT 2.3 config's sections beside its model: plain files of pieces read as words with our vocabulary,
    the recipe's decoding (``batch_size`` sentences per batch when testing), batches, updates and regularisation,
    and ``tuning`` (its schedule halving the rate after each epoch, or one with the recipe's warmup)."""
    schedule = ({"scheduling": "exponential", "decrease_factor": 0.5} if tuning.schedule == "exponential" else
                {"scheduling": tuning.schedule, "learning_rate_warmup": recipe.warmup_steps})
    side = {"max_length": recipe.max_source_length - 1, "min_length": 1, "lowercase": False, "normalize": False,
            "level": "word", "voc_file": str(data.vocab), "voc_min_freq": 1}
    return {
        "name": "multi30k_peers", "joeynmt_version": "2.3.0", "model_dir": str(model_dir), "use_cuda": False,
        "fp16": False, "random_seed": seed,
        "data": {"train": str(data.prefix("train")), "dev": str(data.prefix("validation")),
                 "test": str(data.prefix("test")), "dataset_type": "plain",
                 "src": {"lang": data.source_lang, **side},
                 "trg": {"lang": data.target_lang, **side, "max_length": recipe.max_target_length - 1}},
        "testing": {"n_best": 1, "beam_size": recipe.num_beams, "beam_alpha": recipe.length_penalty,
                    "batch_size": batch_size, "batch_type": "sentence", "max_output_length": recipe.max_new_tokens,
                    "min_output_length": 1, "eval_metrics": ["bleu"], "generate_unk": True,
                    "sacrebleu_cfg": {"tokenize": "13a"}},
        "training": {
            "optimizer": "adamw", "adam_betas": [0.9, 0.999], "weight_decay": recipe.weight_decay,
            # the peak: JoeyNMT 2.3 reads no `learning_rate_peak` (its TrainConfig drops it), the scheduler takes
            # `learning_rate`, which is also the rate of the first update (see DIFFERENCES)
            "learning_rate": tuning.learning_rate, "learning_rate_min": 1.0e-9, **schedule,
            "clip_grad_norm": recipe.max_grad_norm, "loss": "crossentropy", "label_smoothing": recipe.label_smoothing,
            "normalization": "tokens", "batch_size": recipe.batch_size, "batch_type": "sentence",
            "batch_multiplier": 1, "epochs": 10**6, "updates": recipe.updates,
            # JoeyNMT wants the logging interval below the validation interval and dividing it; dividing the
            # updates as well, the last update is logged
            "validation_freq": recipe.validation_every,
            "logging_freq": logging if (logging := math.gcd(recipe.updates, recipe.validation_every, 50))
            < recipe.validation_every else 1,
            "early_stopping_metric": "bleu", "overwrite": True, "shuffle": True, "print_valid_sents": [],
            "keep_best_ckpts": 1, "num_workers": 0,
        },
    }


def eole_config(recipe: Recipe, data: PreparedData, model_dir: Path, seed: int, tuning: Tuning) -> dict:
    """An eole 0.6 training config (`eole train -config`) for the recipe: the files of pieces, our vocabulary
    (shared by source and target), a bidirectional GRU encoder and a GRU decoder with general (Luong) attention
    through ``architecture: custom``, at `EOLE_HIDDEN_SIZE`, without position encodings. The sizes that differ are
    in `DIFFERENCES`. No length filter: eole's needs its own tokenizer transform, and no Multi30k training pair
    reaches the limit (`data.prepare` records the longest)."""
    rnn = {"rnn_type": recipe.cell_type.upper(), "hidden_size": EOLE_HIDDEN_SIZE}
    if tuning.schedule == "none":  # OpenNMT's classic RNN schedule: halve the rate at fixed intervals
        schedule = {"decay_method": "none", "start_decay_steps": recipe.updates // 2,
                    "decay_steps": math.ceil(recipe.updates / 6), "learning_rate_decay": 0.5}
    else:
        schedule = {"decay_method": tuning.schedule, "warmup_steps": recipe.warmup_steps}
    model = {
        "architecture": "custom", "hidden_size": EOLE_HIDDEN_SIZE,
        "embeddings": {"word_vec_size": EOLE_HIDDEN_SIZE, "position_encoding_type": None},
        "encoder": {"encoder_type": "brnn", **rnn, "layers": recipe.encoder_layers, "bridge": False},
        "decoder": {"decoder_type": "rnn", **rnn, "layers": recipe.decoder_layers, "global_attention": "general",
                    "bidirectional_encoder": recipe.bidirectional_encoder},
        "input_feed": int(recipe.input_feeding), "share_decoder_embeddings": recipe.tie_word_embeddings,
        "share_embeddings": False,
    }
    return eole_run(recipe, data, model_dir, seed, model, {"learning_rate": tuning.learning_rate, **schedule,
                                                           "attention_dropout": [recipe.dropout]})


def eole_run(recipe, data: PreparedData, model_dir: Path, seed: int, model: dict, training: dict) -> dict:
    """An eole 0.6 training config (`eole train -config`) of ``model`` (its model section) for the recipe: the files
    of pieces, our vocabulary (shared by source and target), the recipe's batches, updates, Adam and
    regularisation, with ``training`` (the learning rate, schedule and the rest that is the model's own, in eole's
    words) over them."""
    return {
        "seed": seed, "src_vocab": str(data.vocab_counts), "share_vocab": True, "vocab_size_multiple": 1,
        "src_vocab_size": recipe.vocab_size, "tgt_vocab_size": recipe.vocab_size,
        "data": {"corpus_1": {"path_src": str(data.pieces("train", data.source_lang)),
                              "path_tgt": str(data.pieces("train", data.target_lang))},
                 "valid": {"path_src": str(data.pieces("validation", data.source_lang)),
                           "path_tgt": str(data.pieces("validation", data.target_lang))}},
        "model": model,
        "training": {
            "model_path": str(model_dir), "train_steps": recipe.updates, "valid_steps": recipe.validation_every,
            "save_checkpoint_steps": recipe.updates, "keep_checkpoint": 1, "batch_size": recipe.batch_size,
            "batch_type": "sents", "valid_batch_size": 128, "normalization": "tokens", "accum_count": [1],
            "optim": "adam", "adam_beta1": 0.9, "adam_beta2": 0.999, "weight_decay": recipe.weight_decay,
            "max_grad_norm": recipe.max_grad_norm, "label_smoothing": recipe.label_smoothing,
            "dropout": [recipe.dropout], "world_size": 1, "gpu_ranks": [], "num_workers": 0, **training,
        },
        "report_every": math.gcd(recipe.updates, 50),
    }


def data_words(stats: dict) -> str:
    """The data every toolkit reads, in words, from `PreparedData.stats`."""
    return (f"the Multi30k rows ({stats['train']['sentences']:,} training pairs, {stats['validation']['sentences']:,} "
            f"validation and {stats['test']['sentences']:,} test2016 sentences); one joint BPE vocabulary of "
            f"{stats['vocab_size']:,} learned on the training rows (our tokenizer, given to every toolkit as "
            "space-separated pieces, so that all read the same tokens; the longest training sentence has "
            f"{stats['train']['longest_pieces']} pieces, under every length limit)")


def same_for_all(recipe: Recipe, stats: dict) -> str:
    """What every toolkit is given alike, in words (results and docs)."""
    return (f"{data_words(stats)}; embeddings {recipe.embedding_size}, decoder {recipe.cell_type.upper()} "
            f"{recipe.hidden_size}, Luong general attention without input feeding, dropout {recipe.dropout}, decoder "
            f"embeddings tied with the output layer; Adam(W) without weight decay, peak learning rate "
            f"{recipe.learning_rate} after {recipe.warmup_steps} warmup updates, label smoothing "
            f"{recipe.label_smoothing}, gradient norm clipped at {recipe.max_grad_norm}, the loss averaged over target "
            f"tokens, {recipe.batch_size} sentences per update, {recipe.updates} updates, a validation every "
            f"{recipe.validation_every}; beam {recipe.num_beams}, length penalty {recipe.length_penalty}, at most "
            f"{recipe.max_new_tokens} tokens; "
            "torch 2.13.0 on the CPU and the same environment (threads) for every command")


def eole_predict_arguments(recipe: Recipe, checkpoint: Path, source: Path, output: Path, batch_size: int,
                           seed: int) -> list[str]:
    """`eole predict` options: the recipe's beam and length penalty (eole's ``avg``, the score divided by
    length ** alpha, is ours), its longest output, no cap by the source length, the toolkit's timers."""
    return ["-model_path", str(checkpoint), "-src", str(source), "-output", str(output), "-beam_size",
            str(recipe.num_beams), "-length_penalty", "avg", "-alpha", str(recipe.length_penalty), "-max_length",
            str(recipe.max_new_tokens), "-max_length_ratio", "0", "-batch_size", str(batch_size), "-batch_type",
            "sents", "-report_time", "-seed", str(seed)]
