"""The main job's card, rendered from a copy of results/translation_bleu.json whose seed-42 GRU row is a row as
translation_bleu now writes it (``config``: a config.json saved here, ``command``, provenance taken at run time):
its model is read from ``config``, the seeds it averages are those of the same recipe, its model-index holds the test
scores with their signatures, and its Speed section appears only when the benchmark timed this very model."""

import copy
import json
import statistics

import pytest
from huggingface_hub import ModelCard

from hf_seqmodels import AttentionSeq2SeqConfig
from hf_seqmodels.cards import render_card
from hf_seqmodels.cards.results import IDENTITY
from hf_seqmodels.comparison import translation_bleu
from hf_seqmodels.provenance import provenance
from tests.cards.runs import BENCHMARKS, TRANSLATION_ARGUMENTS
from tools.render.figures import REPO_ROOT
from tools.render.main_job import MAIN_JOB, NoMainJobCard, main_job_run

ROWS = json.loads((REPO_ROOT / "results" / "translation_bleu.json").read_text())["rows"]
COMMAND = ("python -m hf_seqmodels.comparison.translation_bleu --cells gru --time_budget_minutes 30 -- "
           "--num_train_epochs 3")  # seeds 43 and 44's, as that command gives it to run_translation.py


def saved_config(tmp_path, **fields) -> dict:
    AttentionSeq2SeqConfig(vocab_size=6000, cell_type="gru", **fields).save_pretrained(tmp_path)
    return json.loads((tmp_path / "config.json").read_text())


def rows_with_main_job(config: dict, command: str = COMMAND) -> list[dict]:
    """The committed rows as rows written before they recorded their arguments, recipe and config, seed 42's GRU
    replaced by one as translation_bleu writes it now (seed 43's, re-seeded)."""
    rows = [{name: value for name, value in row.items() if name not in ("arguments", "recipe", "config")}
            for row in copy.deepcopy(ROWS)]
    index = next(i for i, row in enumerate(rows) if (row["cell_type"], row["seed"]) == ("gru", 42))
    base = next(row for row in rows if (row["cell_type"], row["seed"]) == ("gru", 43))
    record = provenance([42], ["validation", "test"])
    record["argv"] = ["/venv/bin/python", "/home/me/repo/scripts/run_translation.py", "--output_dir",
                      "/home/me/repo/results/multi30k-attention-gru", "--seed", "42", "--num_train_epochs", "3"]
    record["commit"] = "0123456789abcdef" * 2 + "01234567"  # also outside a git checkout
    rows[index] = {**copy.deepcopy(base), "seed": 42, "config": config, "command": command, "provenance": record,
                   "test_bleu": 35.25, "test_chrf": 59.75}
    return rows


def test_model_is_read_from_the_rows_config(tmp_path):
    for fields, words in (({}, "bidirectional GRU encoder of 1 layer(s)"),
                          ({"hidden_size": 512, "attention_type": "bahdanau", "decoder_layers": 2},
                           "GRU decoder of 2 layer(s), 512 units, 256-dimensional embeddings, Bahdanau")):
        text = str(render_card(main_job_run(rows_with_main_job(saved_config(tmp_path, **fields))), model_name=MAIN_JOB))
        assert words in text


def test_training_table_from_the_rows_arguments_else_its_recorded_command(tmp_path):
    rows = rows_with_main_job(saved_config(tmp_path))
    text = str(render_card(main_job_run(rows), model_name=MAIN_JOB))  # seed 43's row: no arguments
    commit = next(row for row in rows if row.get("config"))["provenance"]["commit"]
    assert (f"| arguments | not recorded in the results; the training command: `python scripts/run_translation.py "
            "--output_dir results/multi30k-attention-gru --seed 42 --num_train_epochs 3` at commit "
            f"{commit}, the script's defaults there |") in text
    for row in rows:
        row["arguments"] = {**TRANSLATION_ARGUMENTS, "seed": row["seed"]}
    text = str(render_card(main_job_run(rows), model_name=MAIN_JOB))
    assert "| optimizer | adamw (lr 0.002" in text and "| seed | 42 |" in text and "not recorded" not in text


def test_a_row_without_config_gets_no_card(tmp_path):
    rows = rows_with_main_job(saved_config(tmp_path))
    del next(row for row in rows if row.get("config"))["config"]
    with pytest.raises(NoMainJobCard, match="records no `config`"):
        main_job_run(rows)


def test_mean_and_sd_over_the_seeds_of_the_same_recipe(tmp_path):
    config = saved_config(tmp_path)
    gru = {row["seed"]: row for row in rows_with_main_job(config) if row["cell_type"] == "gru"}
    run = main_job_run(rows_with_main_job(config))
    assert run["suite_row"]["seeds"] == [42, 43, 44]
    bleu = [gru[seed]["test_bleu"] for seed in (42, 43, 44)]
    assert run["suite_row"]["test_bleu"]["mean"] == pytest.approx(statistics.fmean(bleu))
    assert run["suite_row"]["test_bleu"]["sd"] == pytest.approx(statistics.stdev(bleu))
    text = str(render_card(run, model_name=MAIN_JOB))
    assert f"{statistics.fmean(bleu):.2f} ± {statistics.stdev(bleu):.2f} (n=3)" in text
    # The same recipe: the default epochs given or not, another time budget that stopped no run.
    for command in (COMMAND.replace(" -- --num_train_epochs 3", ""), COMMAND.replace("minutes 30", "minutes 120")):
        assert main_job_run(rows_with_main_job(config, command))["suite_row"]["seeds"] == [42, 43, 44]
    # Another recipe: more epochs, another time budget that stopped the run, other config overrides, another
    # model configuration.
    for command, fields, outcome in ((COMMAND.replace("epochs 3", "epochs 8"), {}, {"epochs": 8.0}),
                                     (COMMAND.replace("minutes 30", "minutes 9"), {},
                                      {"stopped_by_time_budget": True}),
                                     (COMMAND, {"hidden_size": 512}, {})):
        rows = rows_with_main_job(saved_config(tmp_path, **fields), command)
        next(row for row in rows if row.get("config")).update(outcome)
        run = main_job_run(rows)
        assert run["suite_row"]["seeds"] == [42] and run["suite_row"]["test_bleu"]["sd"] is None
        assert "not counted: seed 43, 44" in str(render_card(run, model_name=MAIN_JOB))


def test_a_recorded_recipe_is_compared_as_recorded(tmp_path):
    """A row written now records its recipe (translation_bleu.recipe_of, at write time); the card compares that, not
    the command, and a row that records one needs no command."""
    rows = rows_with_main_job(saved_config(tmp_path))
    gru = {row["seed"]: row for row in rows if row["cell_type"] == "gru"}
    gru[42]["recipe"] = translation_bleu.recipe(gru[42])  # what translation_bleu writes now
    del gru[43]["command"]
    gru[43]["recipe"] = dict(gru[42]["recipe"])
    gru[44]["recipe"] = {**gru[42]["recipe"], "run_translation_arguments": ["--learning_rate", "1e-3"]}
    run = main_job_run(rows)
    assert run["suite_row"]["seeds"] == [42, 43]
    assert "not counted: seed 44" in str(render_card(run, model_name=MAIN_JOB))


def test_model_index_has_the_test_scores_and_their_signatures(tmp_path):
    run = main_job_run(rows_with_main_job(saved_config(tmp_path)))
    card = ModelCard(str(render_card(run, model_name=MAIN_JOB)))
    test = {result.metric_type: result for result in card.data.eval_results if result.dataset_split == "test"}
    assert {name: result.metric_value for name, result in test.items()} == {"bleu": 35.25, "chrf": 59.75}
    assert test["bleu"].metric_args == {"signature": run["bleu_signature"]}
    assert test["chrf"].metric_args == {"signature": run["chrf_signature"]}


def timing(run: dict, **changes) -> dict:
    """The benchmarks, their decoding entries re-measured on the model of ``run`` (as translation_model.py records
    a folder it timed: its results.json's test BLEU and training provenance), with ``changes`` to that record."""
    benchmarks = copy.deepcopy(BENCHMARKS)
    config = run["model_config"]
    for name in ("translation", "batch1_overhead"):
        entry = benchmarks["entries"][name]
        entry["sizes"] = {"model_dir": "results/multi30k-attention-gru", "cell_types": ["gru"],
                          **{field: config[field] for field in ("vocab_size", "embedding_size", "hidden_size",
                                                                "attention_type")}}
        model = {"model_dir": "results/multi30k-attention-gru", "test_bleu": run["test_bleu"],
                 "trained_at": {key: run["provenance"][key] for key in ("commit", "date")}}
        for key, value in changes.items():
            (model["trained_at"] if key in ("commit", "date") else entry["sizes"])[key] = value
        summary = entry["summary"]["attention GRU (luong_general)"]
        entry["summary"] = {f"attention GRU ({config['attention_type']})": {**summary, "model": model}}
    return benchmarks


def test_speed_only_when_the_entry_timed_this_very_model(tmp_path):
    run = main_job_run(rows_with_main_job(saved_config(tmp_path)))
    assert not set(IDENTITY["attention_seq2seq"]) <= set(timing(run)["entries"]["translation"]["sizes"])
    text = str(render_card(run, model_name=MAIN_JOB, benchmarks=timing(run)))
    ratio = BENCHMARKS["entries"]["translation"]["summary"]["attention GRU (luong_general)"][
        "sorted_speedup_vs_beams_batched"]["ratio"]
    assert "## Speed" in text and f"{ratio}x as fast" in text
    commit = BENCHMARKS["entries"]["translation"]["provenance"]["commit"][:7]
    assert f"entry `translation`, code `{commit}`" in text
    assert "timed the trained model in `results/multi30k-attention-gru`" in text
    for change in ({"date": "2026-01-01T00:00:00+00:00"}, {"commit": "f" * 40}, {"hidden_size": 512},
                   {"vocab_size": 8000}, {"cell_types": ["lstm"]}):
        assert "## Speed" not in str(render_card(run, model_name=MAIN_JOB, benchmarks=timing(run, **change))), change
    other = main_job_run(rows_with_main_job(saved_config(tmp_path, attention_type="bahdanau")))
    assert "## Speed" not in str(render_card(other, model_name=MAIN_JOB, benchmarks=timing(run)))
