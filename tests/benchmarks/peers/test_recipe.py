"""The toolkits' configs say the same sizes, schedule and decoding as the main job (benchmarks.peers.recipe): each
is read back in its own terms and compared with what scripts/run_translation.py itself would build."""

import dataclasses
from pathlib import Path

import pytest
import torch

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from benchmarks.peers import data as peers_data
from benchmarks.peers import recipe as peers_recipe
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import task_parser

DATA = peers_data.PreparedData(Path("/data"), "en", "de")


@pytest.fixture(scope="module")
def main_job() -> peers_recipe.Recipe:
    return peers_recipe.Recipe.main_job(29000)


def parsed_defaults():
    """scripts/run_translation.py's parsed defaults: model, data, training and generation arguments."""
    return task_parser(translation).parse_args_into_dataclasses(["--output_dir", "unused"])


def test_main_job_is_run_translations_defaults(main_job):
    model_args, data_args, training_args, generation_args = parsed_defaults()
    config = translation.make_model(model_args, generation_args, translation.train_tokenizers(
        [{"en": "a b c", "de": "d e f"}], "en", "de", 20)).config
    for name in ("embedding_size", "hidden_size", "cell_type", "bidirectional_encoder", "encoder_layers",
                 "decoder_layers", "attention_type", "input_feeding", "dropout", "tie_word_embeddings",
                 "initializer_range"):
        assert getattr(main_job, name) == getattr(config, name), name
    assert (main_job.batch_size, main_job.learning_rate, main_job.warmup_steps, main_job.label_smoothing,
            main_job.max_grad_norm, main_job.weight_decay) == (
        training_args.per_device_train_batch_size, training_args.learning_rate, training_args.num_warmup_steps,
        training_args.label_smoothing_factor, training_args.max_grad_norm, training_args.weight_decay)
    assert main_job.lr_scheduler == training_args.lr_scheduler_type
    assert (main_job.vocab_size, main_job.max_source_length, main_job.max_target_length) == (
        data_args.vocab_size, data_args.max_source_length, data_args.max_target_length)
    assert (main_job.num_beams, main_job.length_penalty, main_job.max_new_tokens) == (
        generation_args.num_beams, generation_args.length_penalty, generation_args.max_new_tokens)
    batches = len(torch.utils.data.DataLoader(range(29000), batch_size=training_args.per_device_train_batch_size))
    assert main_job.updates == training_args.num_train_epochs * batches
    assert main_job.validation_every == batches


def test_ours_arguments_parse_back_to_the_recipe(main_job, tmp_path):
    short = dataclasses.replace(main_job, updates=300, validation_every=300)
    model_args, data_args, training_args, generation_args = task_parser(translation).parse_args_into_dataclasses(
        peers_recipe.ours_arguments(short, DATA, tmp_path / "model", 3, short.untuned("ours")))
    assert (training_args.seed, training_args.max_train_steps, training_args.output_dir) == (3, 300,
                                                                                           str(tmp_path / "model"))
    tokenizer = train_tokenizer(["a b c d e f"], kind="bpe", vocab_size=20)
    config = model_args.config(tokenizer)
    assert (config.embedding_size, config.hidden_size, config.bidirectional_encoder, config.dropout) == (
        short.embedding_size, short.hidden_size, True, short.dropout)
    assert training_args.time_budget_minutes >= 10**5  # no time budget: every toolkit trains the same updates
    default_generation = parsed_defaults()[3]
    assert generation_args == default_generation


def test_joeynmt_config_matches_the_recipe(main_job, tmp_path):
    config = peers_recipe.joeynmt_config(main_job, DATA, tmp_path, 2, 16, main_job.untuned("joeynmt"))
    model, training, testing = config["model"], config["training"], config["testing"]
    encoder, decoder = model["encoder"], model["decoder"]
    assert encoder["hidden_size"] == decoder["hidden_size"] == main_job.hidden_size  # per direction in JoeyNMT
    assert encoder["bidirectional"] is True and encoder["rnn_type"] == decoder["rnn_type"] == "gru"
    assert encoder["embeddings"]["embedding_dim"] == decoder["embeddings"]["embedding_dim"] == main_job.embedding_size
    assert decoder["attention"] == "luong" and decoder["input_feeding"] is False
    assert model["tied_softmax"] is True and model["tied_embeddings"] is False
    assert (model["embed_initializer"], model["embed_init_weight"]) == ("normal", main_job.initializer_range)
    assert encoder["dropout"] == decoder["dropout"] == decoder["hidden_dropout"] == main_job.dropout
    assert (training["batch_size"], training["updates"], training["learning_rate"],
            training["learning_rate_warmup"], training["label_smoothing"], training["clip_grad_norm"]) == (
        main_job.batch_size, main_job.updates, main_job.learning_rate, main_job.warmup_steps,
        main_job.label_smoothing, main_job.max_grad_norm)
    assert training["normalization"] == "tokens" and training["batch_type"] == "sentence"
    assert "learning_rate_peak" not in training  # JoeyNMT 2.3 ignores it: the peak is `learning_rate`
    assert (testing["beam_size"], testing["beam_alpha"], testing["max_output_length"], testing["batch_size"]) == (
        main_job.num_beams, main_job.length_penalty, main_job.max_new_tokens, 16)
    assert config["random_seed"] == 2 and config["data"]["src"]["voc_file"] == str(DATA.vocab)
    assert training["updates"] % training["logging_freq"] == 0  # the last update is logged


def test_eole_config_matches_the_recipe(main_job, tmp_path):
    config = peers_recipe.eole_config(main_job, DATA, tmp_path, 2, main_job.untuned("eole"))
    model, training = config["model"], config["training"]
    # the tied output layer needs embeddings of the decoder's size; brnn: hidden_size is both directions together
    size = peers_recipe.EOLE_HIDDEN_SIZE
    assert model["embeddings"]["word_vec_size"] == model["decoder"]["hidden_size"] == size
    assert model["encoder"]["encoder_type"] == "brnn" and model["encoder"]["hidden_size"] == size
    assert any(f"each direction {size // 2}" in line for line in peers_recipe.DIFFERENCES["eole"])
    assert model["embeddings"]["position_encoding_type"] is None  # as eole's own RNN tests: no sinusoids
    assert model["decoder"]["global_attention"] == "general" and model["input_feed"] == 0
    assert model["share_decoder_embeddings"] is True and model["share_embeddings"] is False
    assert (training["batch_size"], training["train_steps"], training["learning_rate"], training["warmup_steps"],
            training["label_smoothing"], training["max_grad_norm"], training["dropout"]) == (
        main_job.batch_size, main_job.updates, main_job.learning_rate, main_job.warmup_steps,
        main_job.label_smoothing, main_job.max_grad_norm, [main_job.dropout])
    assert training["normalization"] == "tokens" and training["batch_type"] == "sents"
    assert main_job.updates % config["report_every"] == 0  # the last update is logged
    predict = peers_recipe.eole_predict_arguments(main_job, tmp_path, tmp_path / "in", tmp_path / "out", 32, 2)
    options = dict(zip(predict[::2], predict[1::2]))
    assert (options["-beam_size"], options["-alpha"], options["-length_penalty"], options["-max_length"],
            options["-batch_size"]) == (str(main_job.num_beams), str(main_job.length_penalty), "avg",
                                         str(main_job.max_new_tokens), "32")


def eole_parameters(hidden: int, vocab: int) -> int:
    """eole's brnn-GRU / GRU decoder / general attention model with embeddings and hidden_size ``hidden``, separate
    source and target embeddings and the output layer tied to the target's, counted layer by layer."""
    direction = hidden // 2
    gru = lambda inputs, units: 3 * (units * inputs + units * units + 2 * units)  # noqa: E731
    attention = hidden * hidden + 2 * hidden * hidden  # linear_in, linear_out (no biases)
    return 2 * vocab * hidden + vocab + 2 * gru(hidden, direction) + gru(hidden, hidden) + attention


def test_eole_size_is_the_closest_to_ours():
    """EOLE_HIDDEN_SIZE: the even size whose eole model is nearest ours (4,721,264 parameters, as our checkpoint
    counts them); 256 gives the 3,965,808 eole's own log counted for the runs before the sweep."""
    assert eole_parameters(256, 6000) == 3_965_808
    nearest = min(range(200, 400, 2), key=lambda size: abs(eole_parameters(size, 6000) - 4_721_264))
    assert nearest == peers_recipe.EOLE_HIDDEN_SIZE


def test_every_configuration_of_the_sweep_is_written_in_its_toolkits_terms(main_job, tmp_path):
    """The same number of configurations per toolkit, every schedule named, each reaching the toolkit's config."""
    assert len({len(tunings) for tunings in peers_recipe.SWEEP.values()}) == 1
    assert len(peers_recipe.SWEEP["ours"]) >= 6
    for tuning in peers_recipe.SWEEP["ours"]:
        training_args = task_parser(translation).parse_args_into_dataclasses(
            peers_recipe.ours_arguments(main_job, DATA, tmp_path, 1, tuning))[2]
        assert (training_args.learning_rate, training_args.lr_scheduler_type) == (tuning.learning_rate,
                                                                                  tuning.schedule)
    for tuning in peers_recipe.SWEEP["joeynmt"]:
        training = peers_recipe.joeynmt_config(main_job, DATA, tmp_path, 1, 64, tuning)["training"]
        assert (training["learning_rate"], training["scheduling"]) == (tuning.learning_rate, tuning.schedule)
        # JoeyNMT refuses otherwise
        assert training["logging_freq"] < training["validation_freq"]
        assert training["validation_freq"] % training["logging_freq"] == 0
        short = dataclasses.replace(main_job, updates=30, warmup_steps=5, validation_every=30)
        training = peers_recipe.joeynmt_config(short, DATA, tmp_path, 1, 64, tuning)["training"]
        assert training["logging_freq"] < training["validation_freq"]
        assert training["validation_freq"] % training["logging_freq"] == 0 == 30 % training["logging_freq"]
    for tuning in peers_recipe.SWEEP["eole"]:
        training = peers_recipe.eole_config(main_job, DATA, tmp_path, 1, tuning)["training"]
        assert (training["learning_rate"], training["decay_method"]) == (tuning.learning_rate, tuning.schedule)
    assert all((name, tuning.schedule) in peers_recipe.SCHEDULE_WORDS
               for name, tunings in peers_recipe.SWEEP.items() for tuning in tunings)


def test_same_sizes_in_every_toolkit(main_job, tmp_path):
    """The decoder, embeddings, batch, updates and peak learning rate agree across the three configs (eole's sizes
    are the closest it can build: test_eole_size_is_the_closest_to_ours)."""
    ours = task_parser(translation).parse_args_into_dataclasses(
        peers_recipe.ours_arguments(main_job, DATA, tmp_path, 1, main_job.untuned("ours")))
    config = ours[0].config(train_tokenizer(["a b"], kind="bpe", vocab_size=10))
    joey = peers_recipe.joeynmt_config(main_job, DATA, tmp_path, 1, 64, main_job.untuned("joeynmt"))
    eole = peers_recipe.eole_config(main_job, DATA, tmp_path, 1, main_job.untuned("eole"))
    assert config.hidden_size == joey["model"]["decoder"]["hidden_size"]
    assert config.embedding_size == joey["model"]["decoder"]["embeddings"]["embedding_dim"]
    assert ours[2].per_device_train_batch_size == joey["training"]["batch_size"] == eole["training"]["batch_size"]
    assert ours[2].max_train_steps == joey["training"]["updates"] == eole["training"]["train_steps"]
    assert ours[2].learning_rate == joey["training"]["learning_rate"] == eole["training"]["learning_rate"]


def test_other_recipes_are_refused(main_job):
    with pytest.raises(ValueError, match="attention_type"):
        dataclasses.replace(main_job, attention_type="bahdanau").check()
    with pytest.raises(ValueError, match="warmup"):
        dataclasses.replace(main_job, updates=main_job.warmup_steps).check()
    main_job.check()

