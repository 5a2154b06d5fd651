"""Model cards: the card states the results file's numbers, and its YAML parses and validates with huggingface_hub's
ModelCard / metadata tools; check_hub_folder catches what a Hub folder lacks."""

import json

import pytest
from huggingface_hub import ModelCard, metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results

from hf_seqmodels.cards import check_hub_folder, format_metric, load_run, render_card

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
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "recurrent",
                                                      "auto_map": {"AutoConfig": "configuration_recurrent.X"}}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0")
    with pytest.raises(ValueError) as error:
        check_hub_folder(tmp_path, RUN)
    assert "configuration_recurrent.py, which is missing" in str(error.value)
    assert "pickle weights present" in str(error.value)
    (tmp_path / "README.md").write_text("---\nmodel-index:\n- name: x\n  results: [{task: 3}]\n---\ntext\n")
    with pytest.raises(ValueError, match="does not validate"):
        check_hub_folder(tmp_path)
