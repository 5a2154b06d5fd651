"""hf_seqmodels/comparison/multi30k_training_options.py's plumbing, in seconds: two tiny trainings and their averaged
checkpoints write the table, adding their seed's rows to an earlier run's."""

import json
import statistics
from pathlib import Path

import pytest
import sacrebleu

from hf_seqmodels.comparison import multi30k_training_options as options
from hf_seqmodels.data.loading import load_text_dataset
from hf_seqmodels.serving.inference import load_translator
from hf_seqmodels.tasks.translation import translate


EARLIER_COMMAND = "python -m hf_seqmodels.comparison.multi30k_training_options --smoke"


def earlier_row(name: str, test_bleu: float) -> dict:
    """A seed-42 row of an earlier smoke run, with what the table reads (an averaged model has test scores only)."""
    row = {"row": name, "seed": 42, "test_bleu": test_bleu, "test_chrf": 10.0, "command": EARLIER_COMMAND}
    return row if name == options.AVERAGED_ROW else {**row, "eval_bleu": 1.0, "steps": 10, "minutes": 0.1}


@pytest.fixture(scope="module")
def seed_43(data_dir, tmp_path_factory) -> tuple[dict, dict, Path]:
    """One smoke run of seed 43 (two trainings and an averaging: seconds) into a folder whose results file holds an
    earlier run's seed 42, which both tests read: the earlier table, the new one and the folder of its --out (its
    --work_dir is ``<folder>/runs``)."""
    folder = tmp_path_factory.mktemp("multi30k_training_options")
    earlier = {"commands": [EARLIER_COMMAND], "steps": 2 * options.AVERAGED, "smoke": True,
               "rows": [earlier_row(name, bleu) for name, bleu in zip([*options.TRAININGS, options.AVERAGED_ROW],
                                                                      (1.5, 2.5, 3.5))]}
    (folder / "multi30k_training_options.json").write_text(json.dumps(earlier))
    table = options.main(["--smoke", "--seeds", "43", "--work_dir", str(folder / "runs"), "--out", str(folder)])
    return earlier, table, folder


@pytest.mark.slow
def test_smoke_run_writes_three_rows_of_its_seed(seed_43):
    _, table, tmp_path = seed_43
    assert json.loads((tmp_path / "multi30k_training_options.json").read_text()) == table
    forced, sampled, averaged = [row for row in table["rows"] if row["seed"] == 43]
    assert forced["steps"] == sampled["steps"] == 2 * options.AVERAGED
    assert "--scheduled_sampling inverse_sigmoid" in sampled["command"]
    assert "--scheduled_sampling" not in forced["command"]
    # each row's provenance: the training run's own (its command), the averaging's (this process's)
    for row in (forced, sampled):
        assert row["provenance"]["argv"][1:] == row["command"].split()[1:] and row["provenance"]["seeds"] == [43]
        assert "--seed 43" in row["command"]
    assert averaged["provenance"]["seeds"] == [43] and averaged["provenance"]["split"] == ["test"]
    assert averaged["checkpoints"] == [f"step_{step}" for step in range(options.AVERAGED + 1, 2 * options.AVERAGED + 1)]
    # The averaged model's figure is sacreBLEU's on that model's beam translations of the (cut) test split.
    model, tokenizers = load_translator(tmp_path / "runs" / f"teacher-forcing-seed43-avg{options.AVERAGED}")
    test = load_text_dataset("multi30k_en_de")["test"][:16]
    hypotheses = translate(model, tokenizers, test["en"], batch_size=128, max_source_length=64, num_beams=2,
                           max_new_tokens=64)
    assert averaged["test_bleu"] == sacrebleu.corpus_bleu(hypotheses, [test["de"]]).score
    assert "| teacher forcing, last 5 checkpoints averaged |" in (tmp_path / "multi30k_training_options.md").read_text()


@pytest.mark.slow
def test_another_seed_adds_its_rows_and_the_table_gives_mean_and_sd(seed_43):
    earlier, table, tmp_path = seed_43
    assert [(row["row"], row["seed"]) for row in table["rows"]] == [
        (name, seed) for name in [*options.TRAININGS, options.AVERAGED_ROW] for seed in (42, 43)]
    assert [row for row in table["rows"] if row["seed"] == 42] == earlier["rows"]
    assert (tmp_path / "runs" / "teacher-forcing-seed43").is_dir()
    assert len(table["commands"]) == 2 and "--seeds 43" in table["commands"][1]
    forced = [row["test_bleu"] for row in table["rows"][:2]]
    line = f"| teacher forcing | 42, 43 | {statistics.mean(forced):.2f} ± {statistics.stdev(forced):.2f} |"
    assert line in (tmp_path / "multi30k_training_options.md").read_text()
