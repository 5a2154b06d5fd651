"""Rendering: the card states the results file's numbers, its YAML parses and validates with huggingface_hub's
ModelCard / metadata tools, and the templates it is rendered from ship inside the package."""

from pathlib import Path

import pytest
from huggingface_hub import ModelCard, metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results

import hf_seqmodels.cards
from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.cards import TASKS, TEMPLATE_DIR, format_metric, render_card
from hf_seqmodels.data.paths import REPO_ROOT

from .runs import ARGUMENTS, NER_RUN, RUN, TRANSLATION_ARGUMENTS, TRANSLATION_RUN, write_card


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
    # SST-2 names no license: the card says "other", with the terms' name and link (research use)
    assert (metadata["license"], metadata["license_name"]) == ("other", "sst2-research-use")
    assert metadata["license_link"].startswith("https://")
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
    assert "| tokenizer | bpe trained on the training texts of both languages, 6000 tokens |" in card.text
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


@pytest.mark.parametrize("dataset, license", [("multi30k_en_de", "multi30k-research-use"),
                                              ("ptb", "ldc-ptb-research-use"), ("sst2", "sst2-research-use")])
def test_data_without_a_license_gives_a_research_license_and_says_so(dataset, license):
    run = {**TRANSLATION_RUN, "dataset": dataset}
    card = render_card(run)
    assert (card.data.license, card.data.license_name) == ("other", license)
    assert "apache-2.0" not in str(card) and "research" in card.text.split("## Training data")[1].split("##")[0]
    assert render_card(run, license="mit").data.license == "mit"  # the user's choice stands


def with_split(run: dict, splits: list[str] | None) -> dict:
    """``run`` as a script writes it now: its provenance records the splits of its scores."""
    return {**run, "provenance": {"recorded": "at run time", "seeds": [42], "split": splits}}


def test_the_evaluation_sentence_names_the_splits_the_run_records():
    test_run = {**RUN, "test_accuracy": 0.85, "test_f1": 0.84}
    assert "with its evaluation on the validation and test splits." in str(
        render_card(with_split(test_run, ["validation", "test"])))
    assert "with its evaluation on the validation split." in str(render_card(with_split(RUN, ["validation"])))
    # results written before runs recorded their provenance: the splits of its scores' names, said to be so
    assert ("with its evaluation on the validation and test splits (as its scores' names say; its results record "
            "no split).") in str(render_card(test_run))
    with pytest.raises(ValueError, match=r"holds test scores, but its provenance records the splits \['validation'\]"):
        render_card(with_split(test_run, ["validation"]))


def test_sst2_test_scores_name_the_labelled_binary_sst_test_set():
    card = render_card(with_split({**RUN, "test_accuracy": 0.85, "test_f1": 0.84}, ["validation", "test"]))
    identity = {result.dataset_split: (result.dataset_type, result.dataset_config) for result in card.data.eval_results}
    assert identity == {"validation": ("glue", "sst2"), "test": ("SetFit/sst2", None)}  # GLUE's test has no labels
    assert card.data.datasets == ["glue"]  # trained on GLUE's SST-2


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="no card template"):
        render_card({**RUN, "task": "summarization"})


def test_templates_ship_inside_the_package():
    """The default templates are the package's own (not a folder of the repository), one per task."""
    assert TEMPLATE_DIR.parent == Path(hf_seqmodels.cards.__file__).parent
    assert sorted(path.name for path in TEMPLATE_DIR.iterdir()) == sorted(f"{task}.md" for task in TASKS)
    for task in TASKS:
        run = {**(TRANSLATION_RUN if task == "translation" else RUN), "task": task, "eval_perplexity": 99.0}
        text = str(render_card(run))
        assert f"{TASKS[task].auto_class}.from_pretrained" in text and "{{" not in text


def test_pyproject_ships_the_templates():
    """pyproject.toml's package data holds every template: a pip-installed hf_seqmodels renders cards."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = TEMPLATE_DIR.parent
    assert {path for pattern in package_data["hf_seqmodels.cards"] for path in package.glob(pattern)} == set(
        TEMPLATE_DIR.iterdir())


def test_a_crf_tagger_card_states_the_crf_and_the_test_scores():
    run = {**NER_RUN, "model_type": "recurrent", "test_accuracy": 0.9123, "test_seqeval_f1": 0.41234,
           "arguments": {**ARGUMENTS, "use_crf": True, "crf_constrain_bio": True}}
    text = str(render_card(run))
    assert "a linear-chain CRF over the tag scores, trained on the sentence likelihood and decoded with Viterbi " \
           "(BIO transitions only)" in text and "model.viterbi_tags(" in text
    validation, test = text.split("Test split, scored once with the final model")
    assert "| Entity F1 (seqeval) | 87.65 |" in validation and "| Token accuracy | 96.12 |" in validation
    assert "| Entity F1 (seqeval) | 41.23 |" in test.split("##")[0] and "| Token accuracy | 91.23 |" in test
    assert "Test split" not in str(render_card(NER_RUN)) and "viterbi_tags" not in str(render_card(NER_RUN))


def test_a_card_of_a_suite_run_states_the_models_mean_and_sd_over_its_seeds(tmp_path):
    """A run loaded from ``results/<suite>.json`` brings its model's row: the card gives that model's own test
    scores and the mean ± sample sd over every seed of the recipe (recomputed here with `statistics`)."""
    import json
    import statistics

    from hf_seqmodels.cards.results import load_run
    from hf_seqmodels.comparison.aggregate import rows

    accuracies = {42: 0.8386, 43: 0.8331, 44: 0.8484}
    runs = [{**RUN, "seed": seed, "test_accuracy": accuracy, "test_f1": accuracy - 0.01}
            for seed, accuracy in accuracies.items()]
    runs.append({**RUN, "name": "GRU", "seed": 42, "test_accuracy": 0.5, "test_f1": 0.5})
    suite = {"suite": "sentiment", "runs": runs,
             "rows": rows(runs, ["BiLSTM", "GRU"], ["test_accuracy", "test_f1"])}
    (tmp_path / "sentiment.json").write_text(json.dumps(suite))
    text = str(render_card(load_run(tmp_path / "sentiment.json", "BiLSTM", seed=43)))
    own, over_seeds = text.split("The same recipe trained once per seed (42, 43, 44) by `scripts/compare.py "
                                 "sentiment`, test split")
    assert "| Accuracy | 83.31 |" in own  # seed 43's run
    values = list(accuracies.values())
    assert (f"| Accuracy | {100 * statistics.mean(values):.2f} ± {100 * statistics.stdev(values):.2f} (n=3) |"
            in over_seeds.split("##")[0])
    single = str(render_card(load_run(tmp_path / "sentiment.json", "GRU")))
    assert "| Accuracy | 50.00 (n=1) |" in single
    assert "over the seeds" not in str(render_card({**RUN, "test_accuracy": 0.8}))


def test_model_index_holds_the_test_scores_with_their_signatures(tmp_path):
    run = {**TRANSLATION_RUN, "test_bleu": 35.05008, "test_chrf": 59.4558, "test_num_beams": 5,
           "bleu_signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
           "chrf_signature": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"}
    write_card(tmp_path, run)
    metadata = metadata_load(tmp_path / "README.md")
    _, results = model_index_to_eval_results(metadata["model-index"])
    found = {(r.dataset_split, r.metric_type): (r.metric_value, (r.metric_args or {}).get("signature"))
             for r in results}
    assert found == {(split, name): (run[f"{prefix}_{name}"], run[f"{name}_signature"])
                     for prefix, split in (("eval", "validation"), ("test", "test")) for name in ("bleu", "chrf")}
