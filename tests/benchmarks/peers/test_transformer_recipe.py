"""The Transformer's comparison (benchmarks.peers.transformer_recipe): the recipe is the translation suite's
Transformer, every toolkit's config says its sizes, budget and decoding in its own terms, and each builds the
parameters a layer-by-layer count gives (checked against our model and MarianMTModel, and against the counts the
peers' own logs reported)."""

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from transformers import MarianMTModel

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from benchmarks.peers import data as peers_data
from benchmarks.peers import transformer_recipe as transformer
from hf_seqmodels import TransformerForConditionalGeneration
from hf_seqmodels.comparison.recipes import TRANSFORMER_TRAINING, TRANSLATORS
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import task_parser

DATA = peers_data.PreparedData(Path("/data"), "en", "de")
# What each toolkit's own log counted in the smoke runs (20 updates, our 6,000 pieces): ours' and Marian's
# results.json, JoeyNMT's "Total params", eole's "number of parameters".
LOGGED = {"ours": 5_708_800, "joeynmt": 5_708_800, "eole": 5_708_800, "marian": 5_969_920}


@pytest.fixture(scope="module")
def recipe() -> transformer.TransformerRecipe:
    return transformer.TransformerRecipe.main_job(29_000)


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["a b c d e f g h"], kind="bpe", vocab_size=30)


def parsed(arguments: list[str]) -> tuple:
    """scripts/run_translation.py's argument dataclasses from ``arguments``."""
    return task_parser(translation).parse_args_into_dataclasses(arguments)


def parameters(recipe: transformer.TransformerRecipe, vocab: int, pre_norm: bool = True) -> int:
    """An encoder-decoder Transformer of the recipe's sizes counted layer by layer: separate source and target
    embeddings (the output layer tied to the target's, without bias), attention and feed-forward layers with biases,
    a LayerNorm (weight and bias) per sub-layer, and with pre-norm one more after each stack."""
    d, ffn = recipe.d_model, recipe.ffn_dim
    attention, feed_forward, norm = 4 * (d * d + d), 2 * d * ffn + ffn + d, 2 * d
    encoder = recipe.encoder_layers * (attention + feed_forward + 2 * norm)
    decoder = recipe.decoder_layers * (2 * attention + feed_forward + 3 * norm)
    return 2 * vocab * d + encoder + decoder + (2 * norm if pre_norm else 0)


def test_the_recipe_is_the_suites_transformer(recipe, tokenizer):
    """TRANSLATORS["Transformer"] through scripts/run_translation.py's parser, as the translation suite trains it:
    its config's fields, TRANSFORMER_TRAINING's peak and warmup, the script's other defaults, 3 epochs of batches."""
    model_args, data_args, training_args, generation_args = parsed(
        ["--output_dir", "unused", *(f"--{key}={value}" for key, value in TRANSLATORS["Transformer"].items())])
    config = model_args.config(tokenizer)
    fields = transformer.model_fields(recipe)
    assert fields == {name: getattr(config, name) for name in fields}
    assert (recipe.norm_position, recipe.d_model, recipe.tie_word_embeddings) == ("pre", 256, True)
    assert (recipe.learning_rate, recipe.warmup_steps) == (TRANSFORMER_TRAINING["learning_rate"],
                                                           TRANSFORMER_TRAINING["num_warmup_steps"])
    assert (recipe.batch_size, recipe.label_smoothing, recipe.max_grad_norm, recipe.lr_scheduler) == (
        training_args.per_device_train_batch_size, training_args.label_smoothing_factor, training_args.max_grad_norm,
        training_args.lr_scheduler_type)
    assert (recipe.vocab_size, recipe.num_beams, recipe.max_new_tokens) == (
        data_args.vocab_size, generation_args.num_beams, generation_args.max_new_tokens)
    batches = len(torch.utils.data.DataLoader(range(29_000), batch_size=training_args.per_device_train_batch_size))
    assert (recipe.updates, recipe.validation_every) == (training_args.num_train_epochs * batches, batches)


def test_ours_and_marians_arguments_build_the_recipes_model(recipe, tokenizer, tmp_path):
    """Our arguments parse back to the recipe's config; Marian's to a MarianConfig of the same sizes, post-norm being
    its only kind; both train on the recipe's budget, no time budget."""
    tuning = transformer.SWEEP["ours"][-1]
    model_args, _, training_args, _ = parsed(transformer.ours_arguments(recipe, DATA, tmp_path, 3, tuning))
    config = model_args.config(tokenizer)
    assert model_args.model_type == "transformer"
    assert all(getattr(config, name) == value for name, value in transformer.model_fields(recipe).items())
    assert (training_args.learning_rate, training_args.lr_scheduler_type, training_args.num_warmup_steps,
            training_args.max_train_steps, training_args.seed) == (tuning.learning_rate, tuning.schedule,
                                                                  recipe.warmup_steps, recipe.updates, 3)
    assert training_args.time_budget_minutes >= 10**5
    model_args, _, marian_training, _ = parsed(transformer.marian_arguments(recipe, DATA, tmp_path, 3, tuning))
    marian = translation.marian_config(model_args.config(tokenizer))
    assert model_args.model_type == "marian" and marian_training == training_args
    assert (marian.d_model, marian.encoder_ffn_dim, marian.encoder_layers, marian.decoder_attention_heads,
            marian.dropout, marian.attention_dropout, marian.scale_embedding, marian.tie_word_embeddings) == (
        recipe.d_model, recipe.ffn_dim, recipe.encoder_layers, recipe.num_heads, recipe.dropout,
        recipe.attention_dropout, True, True)


def test_the_size_formula_is_our_models_and_marians_and_what_every_log_counted(recipe, tokenizer, tmp_path):
    """`parameters` counts our model and MarianMTModel as built from the arguments (at a small vocabulary); at our
    6,000 pieces it gives what each toolkit's log counted: JoeyNMT's and eole's Transformers are ours to the
    parameter, Marian lacks the two final LayerNorms and counts its fixed sinusoidal tables (2 x 512 x 256)."""
    tuning = recipe.untuned("ours")
    ours = parsed(transformer.ours_arguments(recipe, DATA, tmp_path, 1, tuning))[0].config(tokenizer)
    vocab = len(tokenizer)
    assert TransformerForConditionalGeneration(ours).num_parameters() == parameters(recipe, vocab)
    marian = translation.marian_config(parsed(transformer.marian_arguments(recipe, DATA, tmp_path, 1, tuning))[0]
                                       .config(tokenizer))
    tables = 2 * marian.max_position_embeddings * recipe.d_model
    assert MarianMTModel(marian).num_parameters() == parameters(recipe, vocab, pre_norm=False) + tables
    assert LOGGED == {"ours": parameters(recipe, 6000), "joeynmt": parameters(recipe, 6000),
                      "eole": parameters(recipe, 6000), "marian": parameters(recipe, 6000, pre_norm=False) + tables}


def test_joeynmt_config_is_its_transformer_at_our_sizes(recipe, tmp_path):
    for tuning in transformer.SWEEP["joeynmt"]:
        config = transformer.joeynmt_config(recipe, DATA, tmp_path, 2, 16, tuning)
        model, training, testing = config["model"], config["training"], config["testing"]
        for stack, layers in ((model["encoder"], recipe.encoder_layers), (model["decoder"], recipe.decoder_layers)):
            assert (stack["type"], stack["num_layers"], stack["num_heads"], stack["hidden_size"], stack["ff_size"],
                    stack["layer_norm"], stack["activation"], stack["dropout"]) == (
                "transformer", layers, recipe.num_heads, recipe.d_model, recipe.ffn_dim, "pre", "relu",
                recipe.dropout)
            assert stack["embeddings"] == {"embedding_dim": recipe.d_model, "scale": True, "dropout": recipe.dropout,
                                           "freeze": False}
        assert (model["tied_softmax"], model["tied_embeddings"]) == (True, False)
        assert (model["initializer"], model["embed_initializer"], model["bias_initializer"]) == (
            "xavier_uniform", "xavier_uniform", "zeros")  # its Transformer configs'
        assert (training["learning_rate"], training["scheduling"], training["batch_size"], training["updates"],
                training["label_smoothing"], training["clip_grad_norm"], training["normalization"]) == (
            tuning.learning_rate, tuning.schedule, recipe.batch_size, recipe.updates, recipe.label_smoothing,
            recipe.max_grad_norm, "tokens")
        assert (testing["beam_size"], testing["max_output_length"], testing["batch_size"]) == (
            recipe.num_beams, recipe.max_new_tokens, 16)
    assert config["training"]["decrease_factor"] == 0.5  # the last: the per-epoch halving
    assert transformer.joeynmt_config(recipe, DATA, tmp_path, 2, 16, recipe.untuned("joeynmt"))["training"][
        "learning_rate_warmup"] == recipe.warmup_steps


def noam(factor: float, step: int, hidden_size: int, warmup: int) -> float:
    """eole 0.6's noam rate at ``step`` (utils/optimizers.py `noam_decay` times the learning rate)."""
    return factor * hidden_size ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def test_eole_config_is_its_transformer_at_our_sizes_and_peaks(recipe, tmp_path):
    """Our sizes with biases on the linear layers and none on the tied output layer; noam's factor reaches the swept
    peak at the end of the warmup and never exceeds it; cosine takes the peak itself."""
    for tuning in transformer.SWEEP["eole"]:
        config = transformer.eole_config(recipe, DATA, tmp_path, 2, tuning)
        model, training = config["model"], config["training"]
        assert (model["architecture"], model["hidden_size"], model["heads"], model["transformer_ff"],
                model["encoder"]["layers"], model["decoder"]["layers"], model["embeddings"]["word_vec_size"]) == (
            "transformer", recipe.d_model, recipe.num_heads, recipe.ffn_dim, recipe.encoder_layers,
            recipe.decoder_layers, recipe.d_model)
        biases = ("add_qkvbias", "add_final_linear_bias", "add_ffnbias", "generator_bias")
        assert [model[name] for name in biases] == [True, True, True, False]
        assert (model["share_decoder_embeddings"], model["share_embeddings"]) == (True, False)
        assert model["embeddings"]["position_encoding_type"] == "SinusoidalInterleaved"
        assert (training["decay_method"], training["warmup_steps"], training["batch_size"], training["batch_type"],
                training["train_steps"], training["dropout"], training["attention_dropout"],
                training["max_grad_norm"], training["adam_beta2"]) == (
            tuning.schedule, recipe.warmup_steps, recipe.batch_size, "sents", recipe.updates, [recipe.dropout],
            [recipe.attention_dropout], recipe.max_grad_norm, 0.998)
        if tuning.schedule == "noam":
            rates = [noam(training["learning_rate"], step, recipe.d_model, recipe.warmup_steps)
                     for step in range(1, recipe.updates + 1)]
            assert max(rates) == pytest.approx(tuning.learning_rate) == rates[recipe.warmup_steps - 1]
        else:
            assert training["learning_rate"] == tuning.learning_rate


def test_every_toolkit_has_the_same_number_of_configurations_each_described(recipe):
    assert set(transformer.SWEEP) == {"ours", "joeynmt", "eole", "marian"}
    assert len({len(tunings) for tunings in transformer.SWEEP.values()}) == 1
    assert len(transformer.SWEEP["ours"]) >= 6
    assert all((name, tuning.schedule) in transformer.SCHEDULE_WORDS
               for name, tunings in transformer.SWEEP.items() for tuning in tunings)
    # an inverse square root after a warmup among every toolkit's schedules
    assert all(any("sqrt(warmup / update)" in transformer.SCHEDULE_WORDS[name, schedule] for schedule in schedules)
               for name, schedules in transformer.SCHEDULES.items())
    assert all(recipe.learning_rate in {tuning.learning_rate for tuning in tunings}
               for tunings in transformer.SWEEP.values())


def test_what_is_the_same_for_all_names_the_tokens_of_a_batch(recipe):
    stats = {"train": {"sentences": 29_000, "longest_pieces": 58, "source_tokens": 29_000 * 15,
                       "target_tokens": 29_000 * 16}, "validation": {"sentences": 1014}, "test": {"sentences": 1000},
             "vocab_size": 6000}
    words = transformer.same_for_all(recipe, stats)
    assert f"on average {15 * recipe.batch_size} source and {16 * recipe.batch_size} target tokens" in words
    assert "6,000" in words and f"{recipe.updates} updates" in words


def test_other_recipes_are_refused(recipe):
    with pytest.raises(ValueError, match="norm_position"):
        dataclasses.replace(recipe, norm_position="post").check()
    with pytest.raises(ValueError, match="warmup"):
        dataclasses.replace(recipe, updates=recipe.warmup_steps).check()
    recipe.check()
    assert math.isclose(transformer.eole_learning_rate(recipe, transformer.Tuning(1e-3, "cosine")), 1e-3)
