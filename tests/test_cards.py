"""Model cards: the card states the results file's numbers, and its YAML parses and validates with huggingface_hub's
ModelCard / metadata tools; check_hub_folder catches what a Hub folder lacks."""

import json

import pytest
from huggingface_hub import ModelCard, metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results

from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.cards import check_hub_folder, format_metric, load_run, render_card, stage_hub_folder
from hf_seqmodels.paths import REPO_ROOT

BENCHMARKS = json.loads((REPO_ROOT / "results" / "benchmarks.json").read_text())  # python -m benchmarks.run's

ARGUMENTS = {
    "model_name_or_path": None, "model_type": "recurrent", "cell_type": "lstm", "bidirectional": True,
    "num_layers": 1, "embedding_size": 128, "hidden_size": 128, "num_heads": 4, "ffn_dim": 512, "dropout": 0.1,
    "tokenizer_type": "word", "vocab_size": 16000, "max_seq_length": 128, "dataset_name": "sst2",
    "optimizer": "adamw", "learning_rate": 0.002, "weight_decay": 0.0, "lr_scheduler_type": "linear",
    "num_warmup_steps": 0, "per_device_train_batch_size": 64, "max_grad_norm": 1.0, "num_train_epochs": 1,
    "max_train_steps": None, "time_budget_minutes": 4.0, "seed": 42,
}
RUN = {
    "name": "BiLSTM", "task": "text-classification", "model_type": "recurrent", "dataset": "sst2",
    "steps": 1053, "epochs": 1.0, "train_runtime_s": 257.1226, "stopped_by_time_budget": False,
    "eval_accuracy": 0.8337155963302753, "eval_f1": 0.8337136281440078, "eval_samples_per_second": 882.47,
    "num_parameters": 1288706, "device": "cpu: AMD EPYC (1 threads)", "num_processes": 1, "labels": ["0", "1"],
    "vocab_size": 16000, "arguments": ARGUMENTS,
}
NER_RUN = {
    **RUN, "name": "BERT (MiniLM-L6)", "task": "token-classification", "model_type": "bert",
    "dataset": "conll_like", "eval_accuracy": 0.9612, "eval_f1": 0.90125, "eval_seqeval_f1": 0.8765432,
    "eval_seqeval_precision": 0.88, "eval_seqeval_recall": 0.87, "labels": ["B-PER", "I-PER", "O"],
    "tag_scheme": "BIO",
    "arguments": {**ARGUMENTS, "model_name_or_path": "/data/models/all-MiniLM-L6-v2"},
}


TRANSLATION_ARGUMENTS = {
    **{name: ARGUMENTS[name] for name in ("optimizer", "learning_rate", "weight_decay", "lr_scheduler_type",
                                          "num_warmup_steps", "per_device_train_batch_size", "max_grad_norm",
                                          "num_train_epochs", "max_train_steps", "time_budget_minutes", "seed")},
    "model_type": "attention_seq2seq", "dataset_name": "multi30k_en_de", "vocabulary": "joint",
    "max_source_length": 64, "max_target_length": 48,
}
TRANSLATION_RUN = {  # what run_translation.py writes (model_config: the model's config.json)
    "task": "translation", "steps": 1362, "epochs": 3.0, "train_runtime_s": 530.0, "eval_bleu": 33.530390792,
    "eval_chrf": 58.084070317, "num_parameters": 4721264, "vocab_size": 6000, "num_processes": 1,
    "model_config": AttentionSeq2SeqConfig(vocab_size=6000, cell_type="gru", attention_type="bahdanau",
                                           embedding_size=128, hidden_size=256, dropout=0.2).to_dict(),
    "arguments": TRANSLATION_ARGUMENTS,
}


def write_card(tmp_path, run) -> ModelCard:
    card = render_card(run)
    card.save(tmp_path / "README.md")
    return card


def test_card_metadata_has_the_results_numbers(tmp_path):
    write_card(tmp_path, RUN)
    metadata = metadata_load(tmp_path / "README.md")  # the YAML block, parsed
    model_name, results = model_index_to_eval_results(metadata["model-index"])
    assert model_name == "BiLSTM"
    assert {r.metric_type: r.metric_value for r in results} == {"accuracy": RUN["eval_accuracy"],
                                                               "f1": RUN["eval_f1"]}
    for result in results:
        assert (result.task_type, result.dataset_type, result.dataset_config, result.dataset_split) == (
            "text-classification", "glue", "sst2", "validation")
    assert metadata["license"] == "apache-2.0"
    assert metadata["library_name"] == "transformers"
    assert metadata["pipeline_tag"] == "text-classification"
    assert {"hf_seqmodels", "bilstm", "custom_code"} <= set(metadata["tags"])
    assert metadata["datasets"] == ["glue"]


def test_card_text_states_the_same_numbers():
    text = str(render_card(RUN))
    assert f"| Accuracy | {format_metric(RUN['eval_accuracy'], True)} |" in text
    assert "| Accuracy | 83.37 |" in text  # format_metric itself, by hand
    assert f"| Macro-F1 | {format_metric(RUN['eval_f1'], True)} |" in text
    assert "1.29M" in text and "4.3 min" in text and "AMD EPYC" in text
    assert "trust_remote_code=True" in text
    assert "{{" not in text and "[More Information Needed]" not in text


def test_card_says_where_the_word_embeddings_came_from():
    assert "trained from scratch" in str(render_card(RUN)) and "128-dimensional embeddings" in str(render_card(RUN))
    arguments = {**ARGUMENTS, "embeddings_from": "/data/models/all-MiniLM-L6-v2", "spelling_features": 32}
    text = str(render_card({**RUN, "arguments": arguments}))
    assert "word embeddings started from sentence-transformers/all-MiniLM-L6-v2's" in text
    assert "32 character-CNN features of each token's spelling" in text
    assert "from scratch" not in text and "128-dimensional" not in text  # --embedding_size gave way to the table's


def test_translation_card_describes_the_model_from_its_config(tmp_path):
    write_card(tmp_path, TRANSLATION_RUN)
    card = ModelCard.load(tmp_path / "README.md")
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == {
        "bleu": TRANSLATION_RUN["eval_bleu"], "chrf": TRANSLATION_RUN["eval_chrf"]}
    assert card.data.pipeline_tag == "translation" and "gru" in card.data.tags
    assert card.data.datasets == ["bentrevett/multi30k"]
    assert ("a bidirectional GRU encoder of 1 layer(s) and a GRU decoder of 1 layer(s), 256 units, "
            "128-dimensional embeddings, Bahdanau (additive) attention; 4.72M parameters") in card.text
    assert "| BLEU | 33.53 |" in card.text and "| chrF | 58.08 |" in card.text
    assert "| max sequence length | source 64, target 48 |" in card.text
    assert "| tokenizer | BPE trained on the training texts, joint vocabulary, 6000 tokens |" in card.text
    assert "| dropout | 0.2 |" in card.text  # the model's, not an argument's
    assert "AutoModelForSeq2SeqLM" in card.text and "{{" not in card.text


@pytest.mark.parametrize("config, expected", [
    (TransformerConfig(vocab_size=100, d_model=64, num_heads=4, ffn_dim=128, encoder_layers=3, decoder_layers=2),
     "A Transformer encoder-decoder (Vaswani et al., 2017) trained from scratch: 3 encoder and 2 decoder layers, "
     "d_model 64, 4 heads, feed-forward 128, post-norm"),
    (TransformerConfig(vocab_size=100, d_model=64, num_heads=4, ffn_dim=128, decoder_layers=2,
                       is_encoder_decoder=False, norm_position="pre"),
     "A Transformer language model (Vaswani et al., 2017) trained from scratch: 2 layers, d_model 64, 4 heads, "
     "feed-forward 128, pre-norm"),
    (RecurrentConfig(vocab_size=100, cell_type="lstm", num_layers=2, hidden_size=200, embedding_size=100),
     "An LSTM language model trained from scratch: 2 layer(s) of 200 units, 100-dimensional embeddings"),
    (AttentionSeq2SeqConfig(vocab_size=100, attention_type="none", bidirectional_encoder=False),
     "An encoder-decoder trained from scratch: a GRU encoder"),
])
def test_generative_cards_describe_every_family(config, expected):
    task = "translation" if config.is_encoder_decoder else "text-generation"
    run = {**TRANSLATION_RUN, "task": task, "model_config": config.to_dict(), "eval_perplexity": 123.4}
    if task == "text-generation":
        run["arguments"] = {**{k: v for k, v in TRANSLATION_ARGUMENTS.items() if "length" not in k},
                            "block_size": 35, "tokenizer_type": "word"}
    text = str(render_card(run))
    assert expected in text
    if task == "text-generation":
        assert "| Perplexity | 123.40 |" in text and "| max sequence length | 35 |" in text


def test_generative_cards_state_the_benchmark_figures_of_their_family():
    entries = {name: entry["summary"] for name, entry in BENCHMARKS["entries"].items()}
    translation = next(v for k, v in entries["translation"].items() if k.startswith("attention GRU "))
    batch1 = next(v for k, v in entries["batch1_overhead"].items() if k.startswith("attention GRU "))
    text = str(render_card(TRANSLATION_RUN, benchmarks=BENCHMARKS))
    assert "## Speed" in text and f"hf_seqmodels {BENCHMARKS['machine']['git_commit']}" in text
    assert f"ran {translation['speedup_vs_matched']}x as fast as a per-sentence Python beam search" in text
    assert f"at {batch1['greedy, generate()']} (greedy) and {batch1['beam 5, generate()']} (beam 5)" in text

    marian = entries["transformer_vs_marian"]
    run = {**TRANSLATION_RUN, "model_config": TransformerConfig(vocab_size=100).to_dict()}
    assert f"{marian['train']['ratio']}x its training throughput" in str(render_card(run, benchmarks=BENCHMARKS))

    lm = {**TRANSLATION_RUN, "task": "text-generation", "eval_perplexity": 99.0,
          "model_config": RecurrentConfig(vocab_size=100, cell_type="lstm").to_dict()}
    text = str(render_card(lm, benchmarks=BENCHMARKS))
    assert f"{entries['incremental']['recurrent LM (lstm)']['cache_speedup_at_1024']}x less than recomputing" in text
    assert f"{entries['training']['masked_vs_tutorial_throughput']}x the throughput of the tutorial" in text

    # No figures measured on the family, or no benchmarks: no section.
    assert "## Speed" not in str(render_card(TRANSLATION_RUN))
    gru_lm = {**lm, "model_config": RecurrentConfig(vocab_size=100, cell_type="gru").to_dict()}
    assert "## Speed" not in str(render_card(gru_lm, benchmarks=BENCHMARKS))  # the LM entries measure an LSTM
    assert "## Speed" not in str(render_card(RUN, benchmarks=BENCHMARKS))


def test_card_round_trips_through_modelcard(tmp_path):
    write_card(tmp_path, NER_RUN)
    card = ModelCard.load(tmp_path / "README.md")
    data = card.data
    assert data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert {r.metric_type: r.metric_value for r in data.eval_results} == {
        "accuracy": NER_RUN["eval_accuracy"], "f1": NER_RUN["eval_f1"], "seqeval": NER_RUN["eval_seqeval_f1"]}
    assert "bert" in data.tags and "custom_code" not in data.tags  # a transformers model: no remote code
    assert "trust_remote_code" not in card.text
    assert "| Entity F1 (seqeval) | 87.65 |" in card.text
    # The dump of the parsed data is the same YAML: nothing was dropped or renamed while parsing.
    assert data.to_dict() == metadata_load(tmp_path / "README.md")


def test_bundled_dataset_licenses_carry_over(tmp_path):
    run = {**RUN, "task": "token-classification", "dataset": "ud_english_ewt", "labels": ["NOUN", "VERB"]}
    write_card(tmp_path, run)
    assert metadata_load(tmp_path / "README.md")["license"] == "cc-by-sa-4.0"
    assert render_card(run, license="mit").data.license == "mit"


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="no card template"):
        render_card({**RUN, "task": "summarization"})


def test_load_run_from_a_suite_file(tmp_path):
    path = tmp_path / "sentiment.json"
    path.write_text(json.dumps({"suite": "sentiment", "runs": [RUN, {**RUN, "name": "GRU"}]}))
    assert load_run(path, "BiLSTM") == RUN
    with pytest.raises(ValueError, match="pick one with --model"):
        load_run(path, "LSTM")
    single = tmp_path / "results.json"
    single.write_text(json.dumps(RUN))
    assert load_run(single) == RUN


def test_check_hub_folder_catches_wrong_numbers_and_missing_files(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "model.safetensors").write_bytes(b"\0")
    (tmp_path / "tokenizer.json").write_text("{}")
    write_card(tmp_path, RUN)
    check_hub_folder(tmp_path, RUN)  # complete and consistent
    with pytest.raises(ValueError, match="differ from the results file"):
        check_hub_folder(tmp_path, {**RUN, "eval_accuracy": 0.9})
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "recurrent", "source_vocab_size": 300,
                                                      "auto_map": {"AutoConfig": "configuration_recurrent.X"}}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0")
    with pytest.raises(ValueError) as error:
        check_hub_folder(tmp_path, RUN)
    assert "configuration_recurrent.py, which is missing" in str(error.value)
    assert "pickle weights present" in str(error.value)
    assert "(source_vocab_size 300) but source_tokenizer/tokenizer.json is missing" in str(error.value)
    (tmp_path / "README.md").write_text("---\nmodel-index:\n- name: x\n  results: [{task: 3}]\n---\ntext\n")
    with pytest.raises(ValueError, match="does not validate"):
        check_hub_folder(tmp_path)


def test_staging_never_deletes_what_it_did_not_stage(tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model.safetensors").write_bytes(b"\0")
    card = render_card(RUN)
    for target in (model_dir, tmp_path):  # the model folder itself, or a folder holding it
        with pytest.raises(ValueError, match="overlap"):
            stage_hub_folder(model_dir, target, card)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not a folder staged earlier"):
        stage_hub_folder(model_dir, notes, card)
    assert (notes / "thesis.txt").read_text() == "mine" and (model_dir / "model.safetensors").is_file()
    staged = tmp_path / "staged"
    stage_hub_folder(model_dir, staged, card)
    (staged / "stale.bin").write_bytes(b"\0")
    assert "stale.bin" not in stage_hub_folder(model_dir, staged, card)  # an earlier staging is replaced whole
