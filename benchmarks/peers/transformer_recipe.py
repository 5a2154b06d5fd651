"""The Transformer beside JoeyNMT's, eole's and transformers' MarianMTModel: one description of our Multi30k
Transformer (sizes, schedule, decoding) and the configs of every toolkit generated from it, as `recipe` does for the
main job's attention GRU.

`TransformerRecipe.main_job` reads what the translation suite trains (`hf_seqmodels.comparison.recipes`:
``TRANSLATORS["Transformer"]``'s config overrides and ``TRANSFORMER_TRAINING`` over scripts/run_translation.py's
defaults) and `TransformerConfig`'s fields. Every toolkit builds the same sizes (Marian's layers are post-norm, the
only kind it has) from the same pieces, with the same batches of sentences, updates, label smoothing, clipping and
decoding; each starts from its own documented Transformer recipe for what the comparison does not fix:

- ours: `TRANSLATORS["Transformer"]` (hf_seqmodels/comparison/recipes.py) and `TransformerConfig`'s defaults;
- marian: the same sizes through our pipeline (``--model_type marian``, `translation.marian_config`), transformers'
  own initialisation;
- JoeyNMT: its configs/transformer_small.yaml and iwslt14_deen_bpe.yaml (the small-data ones: AdamW with betas
  (0.9, 0.999), Xavier-uniform weights and embeddings with zero biases, scaled embeddings, pre-norm, relu, the
  decoder's embeddings tied to the output layer) and configs/wmt17_ende_bpe.yaml's warmupinversesquareroot;
- eole: its recipes/wmt17/wmt17_ende.yaml and docs/docusaurus_tsx/docs/concepts/config.md (Adam with beta2 0.998,
  noam, ``param_init_method: xavier_uniform``, sinusoidal positions, tied decoder embeddings), with the linear
  layers' biases on (``add_qkvbias``, ``add_final_linear_bias``, ``add_ffnbias``) and none on the output layer, so
  that it has our parameters.

Where the configs depart from a peer's recipe to equal ours: attention dropout 0 in eole, the gradient norm clipped at
1 (eole's recipes do not clip, JoeyNMT's iwslt14 config neither), batches of sentences rather than of tokens, separate
source and target embeddings (JoeyNMT's and eole's recipes share them). Where a toolkit cannot say what ours does,
`DIFFERENCES` says what it does instead. `SWEEP` tunes every toolkit alike: its
peak learning rates by two of its own schedules, an inverse square root after a warmup among them.
"""

import dataclasses
import math
from pathlib import Path

from hf_seqmodels import TransformerConfig
from hf_seqmodels.comparison.recipes import TRANSLATORS
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import parse_dict
from hf_seqmodels.training.argument_checks import parse_config_overrides

from .data import PreparedData
from .recipe import (
    EOLE_BEAM_END,
    EOLE_VALIDATION,
    JOEYNMT_FIRST_UPDATE,
    JOEYNMT_LENGTH_PENALTY,
    JOEYNMT_VALIDATION,
    Recipe,
    Tuning,
    check_supported,
    data_words,
    eole_run,
    joeynmt_run,
    main_job_budget,
    prepared_recipe,
    run_translation_arguments,
)

# Each toolkit's own schedules, its documented Transformer schedule first (the untuned runs use it): ours and
# Marian (our pipeline): the suite's linear decay and transformers' inverse square root; JoeyNMT: its wmt17 config's
# warmupinversesquareroot, and the per-epoch halving that stands in for the plateau of its small configs (which fails
# to build under torch 2.13, see DIFFERENCES); eole: its recipes' noam and its cosine (the closest to a linear decay).
SCHEDULES = {"ours": ("linear", "inverse_sqrt"), "joeynmt": ("warmupinversesquareroot", "exponential"),
             "eole": ("noam", "cosine"), "marian": ("linear", "inverse_sqrt")}
INVERSE_SQUARE_ROOT = "linear warmup, then the peak times sqrt(warmup / update)"
SCHEDULE_WORDS = {
    **{(name, "linear"): "linear warmup, then linear decay to 0 at the last update" for name in ("ours", "marian")},
    **{(name, "inverse_sqrt"): INVERSE_SQUARE_ROOT for name in ("ours", "marian")},
    ("joeynmt", "warmupinversesquareroot"): INVERSE_SQUARE_ROOT,
    ("joeynmt", "exponential"): "no warmup; the rate halved after each epoch",
    ("eole", "noam"): f"{INVERSE_SQUARE_ROOT} (noam's factor: the peak times sqrt(hidden_size x warmup))",
    ("eole", "cosine"): "linear warmup, then cosine decay to 0 at the last update",
}
# Peak learning rates, each toolkit's documented one among them: ours 1e-3 (TRANSFORMER_TRAINING), eole's noam
# recipes about 1e-3 at the end of their warmup (2 x (512 x 8000) ** -0.5), JoeyNMT's iwslt14 config 3e-4.
LEARNING_RATES = (3e-4, 1e-3, 3e-3)
SWEEP = {name: tuple(Tuning(rate, schedule) for schedule in schedules for rate in LEARNING_RATES)
         for name, schedules in SCHEDULES.items()}

# What could not be made equal, by toolkit (in results/peers_transformer.json and docs/peers.md).
DIFFERENCES = {
    "joeynmt": [
        "learning rate: JoeyNMT has no linear decay, and the `plateau` schedule of its small Transformer configs "
        "(configs/transformer_small.yaml, iwslt14_deen_bpe.yaml) passes `verbose` to torch 2.13's "
        "ReduceLROnPlateau, which no longer takes it; its wmt17 config's `warmupinversesquareroot` and a per-epoch "
        "halving in place of the plateau are swept (`SCHEDULES`)",
        JOEYNMT_FIRST_UPDATE,
        JOEYNMT_LENGTH_PENALTY,
        "dropout: its `dropout` also drops the attention weights and the feed-forward's hidden units (ours: "
        "attention_dropout and activation_dropout 0)",
        "initialisation: its Transformer configs' Xavier-uniform (gain 1) for every weight, embeddings included, "
        "zero biases; ours: Xavier-uniform linear layers, zero biases, embeddings N(0, d_model ** -0.5)",
        "LayerNorm epsilon 1e-6, fixed in its layers (ours 1e-5)",
        JOEYNMT_VALIDATION,
    ],
    "eole": [
        "learning rate: its Transformer recipes' `noam` takes a factor, not a peak: learning_rate = peak x "
        "sqrt(hidden_size x warmup_steps) reaches the swept peak at the end of the warmup; eole has no linear "
        "decay, its `cosine` is swept instead (`SCHEDULES`)",
        "dropout: its `dropout` also drops the feed-forward's hidden units (ours: activation_dropout 0)",
        "initialisation: its Transformer recipes' `param_init_method: xavier_uniform`, every weight Xavier-uniform, "
        "embeddings included, zero biases; ours: embeddings N(0, d_model ** -0.5)",
        "Adam's beta2 0.998, its Transformer recipes' (ours 0.999)",
        EOLE_BEAM_END,
        EOLE_VALIDATION,
    ],
    "marian": [
        "layer normalisation: post-norm, MarianMTModel's only kind; ours, JoeyNMT's and eole's are pre-norm, with a "
        "LayerNorm after the last layer of each stack (2 x 512 parameters that Marian lacks)",
        "positions: its sinusoidal tables hold the sines in the first half of each vector and the cosines in the "
        "second (the others interleave them), fixed but counted among its parameters (2 x 512 x 256 = 262,144 of "
        "its count)",
        "initialisation: transformers' own for Marian, N(0, 0.02) (init_std) for every linear layer and embedding, "
        "zero biases; ours: Xavier-uniform linear layers, embeddings N(0, d_model ** -0.5)",
    ],
}


# The main job's data, batches, schedule and decoding: the Transformer's recipe declares them as `Recipe` does (its
# base class, made from Recipe's own fields), so that every toolkit's config writer reads them alike.
BUDGET_FIELDS = ("vocab_size", "max_source_length", "max_target_length", "batch_size", "learning_rate", "warmup_steps",
                 "lr_scheduler", "label_smoothing", "max_grad_norm", "weight_decay", "updates", "validation_every",
                 "num_beams", "length_penalty", "max_new_tokens")
Budget = dataclasses.make_dataclass("Budget", [(field.name, field.type) for field in dataclasses.fields(Recipe)
                                               if field.name in BUDGET_FIELDS], frozen=True)


@dataclasses.dataclass(frozen=True)
class TransformerRecipe(Budget):
    """Our Multi30k Transformer (its fields are `TransformerConfig`'s), and the training schedule and decoding of
    `Budget`, in the terms every toolkit config is written from."""

    d_model: int  # the width of embeddings and layers
    num_heads: int
    ffn_dim: int  # the feed-forward networks' hidden units
    encoder_layers: int
    decoder_layers: int
    activation: str  # of the feed-forward networks
    dropout: float  # on each sub-layer's output and on the embeddings plus positions
    attention_dropout: float  # on the attention weights
    activation_dropout: float  # on the feed-forward networks' hidden units
    norm_position: str  # "pre" or "post"
    position_embedding: str
    scale_embedding: bool  # token embeddings times sqrt(d_model)
    share_encoder_decoder_embeddings: bool  # one table for source and target tokens
    tie_word_embeddings: bool  # the decoder's input embeddings and output layer
    layer_norm_eps: float

    @classmethod
    def main_job(cls, train_sentences: int, updates: int | None = None) -> "TransformerRecipe":
        """The translation suite's Transformer (`TRANSLATORS["Transformer"]` through scripts/run_translation.py's
        parser and `TransformerConfig`) for a training file of ``train_sentences`` pairs; ``updates`` replaces its
        epochs (a shorter budget, the same for every toolkit)."""
        model_args, data, training, generation = parse_dict(translation, {**TRANSLATORS["Transformer"],
                                                                          "output_dir": "unused"})
        model = TransformerConfig(**parse_config_overrides("transformer", model_args.config_overrides))
        updates, validation_every = main_job_budget(train_sentences, training.per_device_train_batch_size,
                                                    training.num_train_epochs, updates)
        return cls(
            d_model=model.d_model, num_heads=model.num_heads, ffn_dim=model.ffn_dim,
            encoder_layers=model.encoder_layers, decoder_layers=model.decoder_layers, activation=model.activation,
            dropout=model.dropout, attention_dropout=model.attention_dropout,
            activation_dropout=model.activation_dropout, norm_position=model.norm_position,
            position_embedding=model.position_embedding, scale_embedding=model.scale_embedding,
            share_encoder_decoder_embeddings=model.share_encoder_decoder_embeddings,
            tie_word_embeddings=model.tie_word_embeddings, layer_norm_eps=model.layer_norm_eps,
            vocab_size=data.vocab_size, max_source_length=data.max_source_length,
            max_target_length=data.max_target_length, batch_size=training.per_device_train_batch_size,
            learning_rate=training.learning_rate, warmup_steps=training.num_warmup_steps,
            lr_scheduler=training.lr_scheduler_type, label_smoothing=training.label_smoothing_factor,
            max_grad_norm=training.max_grad_norm, weight_decay=training.weight_decay, updates=updates,
            validation_every=validation_every, num_beams=generation.num_beams,
            length_penalty=generation.length_penalty, max_new_tokens=generation.max_new_tokens,
        )

    @classmethod
    def prepared(cls, work: Path, updates: int | None = None,
                 warmup_steps: int | None = None) -> tuple[PreparedData, "TransformerRecipe"]:
        """The peers' data prepared under ``work`` and this recipe for it, checked (`prepared_recipe`)."""
        return prepared_recipe(cls, work, updates, warmup_steps)

    def untuned(self, name: str) -> Tuning:
        """The recipe's peak learning rate and ``name``'s documented Transformer schedule (its first)."""
        return Tuning(self.learning_rate, SCHEDULES[name][0])

    def check(self) -> None:
        """Refuse a recipe the peers' configs cannot express (not the suite's Transformer)."""
        check_supported(self, "the suite's Transformer", {
            "activation": "relu", "norm_position": "pre", "position_embedding": "sinusoidal",
            "scale_embedding": True, "share_encoder_decoder_embeddings": False, "tie_word_embeddings": True,
            "lr_scheduler": "linear"})


def model_fields(recipe: TransformerRecipe) -> dict:
    """The recipe's `TransformerConfig` fields (field -> value)."""
    names = ("d_model", "num_heads", "ffn_dim", "encoder_layers", "decoder_layers", "activation", "dropout",
             "attention_dropout", "activation_dropout", "norm_position", "position_embedding", "scale_embedding",
             "share_encoder_decoder_embeddings", "tie_word_embeddings", "layer_norm_eps")
    return {name: getattr(recipe, name) for name in names}


def ours_arguments(recipe: TransformerRecipe, data: PreparedData, output_dir: Path, seed: int,
                   tuning: Tuning) -> list[str]:
    """scripts/run_translation.py's arguments for our Transformer: every field of the recipe spelt out."""
    return run_translation_arguments(recipe, data, output_dir, seed, tuning, model_fields(recipe), "transformer")


def marian_arguments(recipe: TransformerRecipe, data: PreparedData, output_dir: Path, seed: int,
                     tuning: Tuning) -> list[str]:
    """scripts/run_translation.py's arguments for transformers' MarianMTModel of the recipe's sizes: its fields
    but the layer normalisation and positions, which Marian has of one kind only (`translation.marian_config`)."""
    fields = {name: value for name, value in model_fields(recipe).items()
              if name not in ("norm_position", "position_embedding")}
    return run_translation_arguments(recipe, data, output_dir, seed, tuning, fields, "marian")


def joeynmt_config(recipe: TransformerRecipe, data: PreparedData, model_dir: Path, seed: int, batch_size: int,
                   tuning: Tuning) -> dict:
    """A JoeyNMT 2.3 config of its Transformer for the recipe (`joeynmt_run`'s data, decoding and training): the
    model section as its small Transformer configs write it (Xavier-uniform weights and embeddings, zero biases),
    at our sizes, dropout, layer normalisation and tying."""
    embeddings = {"embedding_dim": recipe.d_model, "scale": recipe.scale_embedding, "dropout": recipe.dropout,
                  "freeze": False}
    stack = {"type": "transformer", "num_heads": recipe.num_heads, "embeddings": embeddings,
             "hidden_size": recipe.d_model, "ff_size": recipe.ffn_dim, "dropout": recipe.dropout,
             "layer_norm": recipe.norm_position, "activation": recipe.activation, "freeze": False}
    return {
        **joeynmt_run(recipe, data, model_dir, seed, batch_size, tuning),
        "model": {
            "initializer": "xavier_uniform", "init_gain": 1.0, "bias_initializer": "zeros",
            "embed_initializer": "xavier_uniform", "embed_init_gain": 1.0,
            "tied_embeddings": recipe.share_encoder_decoder_embeddings, "tied_softmax": recipe.tie_word_embeddings,
            "encoder": {**stack, "num_layers": recipe.encoder_layers},
            "decoder": {**stack, "num_layers": recipe.decoder_layers},
        },
    }


def eole_learning_rate(recipe: TransformerRecipe, tuning: Tuning) -> float:
    """eole's ``learning_rate`` for ``tuning``'s peak: noam multiplies it by hidden_size ** -0.5 x
    min(step ** -0.5, step x warmup ** -1.5), whose largest value, at the end of the warmup, is
    (hidden_size x warmup) ** -0.5; its other schedules start from it as the peak."""
    return tuning.learning_rate * math.sqrt(recipe.d_model * recipe.warmup_steps) if tuning.schedule == "noam" \
        else tuning.learning_rate


def eole_config(recipe: TransformerRecipe, data: PreparedData, model_dir: Path, seed: int, tuning: Tuning) -> dict:
    """An eole 0.6 training config of its Transformer (`eole_run`'s data and training): its recipes' pre-norm
    layers, interleaved sinusoidal positions (eole scales the embeddings by sqrt(hidden_size) as it adds them), Adam
    with beta2 0.998 and Xavier-uniform initialisation, at our sizes, with biases on the linear layers (eole's
    default has none; ``add_final_linear_bias`` too, which 0.6.4 gives the decoder's attention outputs alone when only
    ``add_qkvbias`` is set) and none on the output layer tied to the decoder's embeddings, as ours; attention dropout
    ours (its recipes: 0.1)."""
    model = {
        "architecture": "transformer", "hidden_size": recipe.d_model, "heads": recipe.num_heads,
        "transformer_ff": recipe.ffn_dim, "mlp_activation_fn": recipe.activation, "layer_norm": "standard",
        "norm_eps": recipe.layer_norm_eps, "add_qkvbias": True, "add_final_linear_bias": True, "add_ffnbias": True,
        "generator_bias": False,
        "embeddings": {"word_vec_size": recipe.d_model, "position_encoding_type": "SinusoidalInterleaved"},
        "encoder": {"layers": recipe.encoder_layers}, "decoder": {"layers": recipe.decoder_layers},
        "share_decoder_embeddings": recipe.tie_word_embeddings,
        "share_embeddings": recipe.share_encoder_decoder_embeddings,
    }
    return eole_run(recipe, data, model_dir, seed, model, {
        "learning_rate": eole_learning_rate(recipe, tuning), "decay_method": tuning.schedule,
        "warmup_steps": recipe.warmup_steps, "adam_beta2": 0.998, "param_init_method": "xavier_uniform",
        "attention_dropout": [recipe.attention_dropout]})


def same_for_all(recipe: TransformerRecipe, stats: dict) -> str:
    """What every toolkit is given alike, in words (results and docs), the tokens of a batch among them."""
    train = stats["train"]
    tokens = {side: train[f"{side}_tokens"] / train["sentences"] * recipe.batch_size for side in ("source", "target")}
    return (f"{data_words(stats)}; d_model {recipe.d_model}, {recipe.num_heads} heads, feed-forward "
            f"{recipe.ffn_dim}, {recipe.encoder_layers} encoder and {recipe.decoder_layers} decoder layers, "
            f"{recipe.norm_position}-norm (Marian: post-norm), sinusoidal positions, embeddings scaled by "
            f"sqrt(d_model), separate source and target embeddings, the decoder's tied with the output layer, dropout "
            f"{recipe.dropout}; Adam(W) without weight decay, each toolkit's peak learning rates and schedules "
            f"(the sweep), warmup {recipe.warmup_steps} updates where a schedule has one, label smoothing "
            f"{recipe.label_smoothing}, gradient norm clipped at {recipe.max_grad_norm}, the loss averaged over "
            f"target tokens, {recipe.batch_size} sentences per update (on average {tokens['source']:.0f} source and "
            f"{tokens['target']:.0f} target tokens, eos included, padding not counted), {recipe.updates} updates, "
            f"a validation every {recipe.validation_every}; beam {recipe.num_beams}, at most "
            f"{recipe.max_new_tokens} tokens, each toolkit's length penalty chosen on validation; torch 2.13.0 on "
            "the CPU and the same environment (threads) for every command")
