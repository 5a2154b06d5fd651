"""hf_seqmodels/comparison/multi30k_training_options.py's plumbing, in seconds: two tiny trainings and their averaged
checkpoints write the table; a run of another seed adds its rows to it."""

import json
import shutil
import statistics
from pathlib import Path

import pytest
import sacrebleu

from hf_seqmodels.comparison import multi30k_training_options as options
from hf_seqmodels.data.loading import load_text_dataset
from hf_seqmodels.serving.inference import load_translator
from hf_seqmodels.tasks.translation import translate


@pytest.fixture(scope="module")
def first_seed(data_dir, tmp_path_factory) -> tuple[dict, Path]:
    """One smoke run of seed 42 (two trainings and an averaging: seconds), which both tests read: its table and the
    folder of its --out (its --work_dir is ``<folder>/runs``)."""
    folder = tmp_path_factory.mktemp("multi30k_training_options")
    return options.main(["--smoke", "--work_dir", str(folder / "runs"), "--out", str(folder)]), folder


@pytest.mark.slow
def test_smoke_run_writes_three_rows(first_seed):
    table, tmp_path = first_seed
    assert json.loads((tmp_path / "multi30k_training_options.json").read_text()) == table
    forced, sampled, averaged = table["rows"]
    assert forced["steps"] == sampled["steps"] == 2 * options.AVERAGED
    assert "--scheduled_sampling inverse_sigmoid" in sampled["command"]
    assert "--scheduled_sampling" not in forced["command"]
    # each row's provenance: the training run's own (its command), the averaging's (this process's)
    for row in (forced, sampled):
        assert row["provenance"]["argv"][1:] == row["command"].split()[1:] and row["provenance"]["seeds"] == [42]
    assert averaged["provenance"]["seeds"] == [42] and averaged["provenance"]["split"] == ["test"]
    assert averaged["checkpoints"] == [f"step_{step}" for step in range(options.AVERAGED + 1, 2 * options.AVERAGED + 1)]
    # The averaged model's figure is sacreBLEU's on that model's beam translations of the (cut) test split.
    model, tokenizers = load_translator(tmp_path / "runs" / f"teacher-forcing-avg{options.AVERAGED}")
    test = load_text_dataset("multi30k_en_de")["test"][:16]
    hypotheses = translate(model, tokenizers, test["en"], batch_size=128, max_source_length=64, num_beams=2,
                           max_new_tokens=64)
    assert averaged["test_bleu"] == sacrebleu.corpus_bleu(hypotheses, [test["de"]]).score
    assert "| teacher forcing, last 5 checkpoints averaged |" in (tmp_path / "multi30k_training_options.md").read_text()


@pytest.mark.slow
def test_another_seed_adds_its_rows_and_the_table_gives_mean_and_sd(first_seed, tmp_path):
    first, first_folder = first_seed
    results = "multi30k_training_options.json"
    shutil.copyfile(first_folder / results, tmp_path / results)  # seed 42's, to which this run adds seed 43's
    second = options.main(["--smoke", "--seeds", "43", "--work_dir", str(tmp_path / "runs"), "--out", str(tmp_path)])
    assert [(row["row"], row["seed"]) for row in second["rows"]] == [
        (name, seed) for name in [*options.TRAININGS, options.AVERAGED_ROW] for seed in (42, 43)]
    assert [row for row in second["rows"] if row["seed"] == 42] == first["rows"]
    assert (tmp_path / "runs" / "teacher-forcing-seed43").is_dir() and "--seed 43" in second["rows"][1]["command"]
    assert len(second["commands"]) == 2 and "--seeds 43" in second["commands"][1]
    forced = [row["test_bleu"] for row in second["rows"][:2]]
    line = f"| teacher forcing | 42, 43 | {statistics.mean(forced):.2f} ± {statistics.stdev(forced):.2f} |"
    assert line in (tmp_path / "multi30k_training_options.md").read_text()
