"""The sweep keeps every configuration tried, chooses each toolkit's on validation BLEU alone, and renders them all
(benchmarks.peers.sweep, benchmarks.peers.report_sweep)."""

import dataclasses
import json

import pytest

from benchmarks.peers import recipe as peers_recipe
from benchmarks.peers import invocations, report_sweep, sweep
from benchmarks.peers.report_sweep import sweep_section

RECIPE = peers_recipe.Recipe.main_job(29_000, 300)
GOOD = "the cat sat on the warm mat"  # a translation equal to its reference: BLEU 100


def row(name: str, tuning: peers_recipe.Tuning, bleus: dict[float, float]) -> dict:
    validation = {f"{alpha:g}": {"bleu": bleu, "mean_output_pieces": 12.0, "seconds": 1.0}
                  for alpha, bleu in bleus.items()}
    best = max(validation, key=lambda alpha: validation[alpha]["bleu"])
    return {"toolkit": name, "configuration": tuning.name, "tuning": dataclasses.asdict(tuning),
            "schedule_words": peers_recipe.SCHEDULE_WORDS[name, tuning.schedule], "seed": 1,
            "train": {"parameters": 4_721_264, "command": "python x"}, "validation": validation,
            "best_length_penalty": float(best), "best_validation_bleu": validation[best]["bleu"]}


def swept(name: str, scores: list[float]) -> list[dict]:
    """A row per configuration of ``name`` in `SWEEP` order, the i-th scoring ``scores[i]`` at length penalty 0.8
    and 1 less at every other."""
    return [row(name, tuning, {alpha: score - (alpha != 0.8) for alpha in peers_recipe.LENGTH_PENALTIES})
            for tuning, score in zip(peers_recipe.SWEEP[name], scores)]


def test_the_choice_is_the_highest_validation_bleu_of_a_complete_sweep():
    count = len(peers_recipe.SWEEP["ours"])
    scores = [30.0 + i for i in range(count)]
    scores[1] = 40.0
    results = {"runs": swept("ours", scores) + swept("eole", [20.0] * (count - 1))}
    chosen = sweep.chosen(results)
    assert set(chosen) == {"ours"}  # eole lacks a configuration: no choice yet
    assert chosen["ours"]["configuration"] == peers_recipe.SWEEP["ours"][1].name
    assert sweep.chosen_tuning(results, "ours") == (peers_recipe.SWEEP["ours"][1], 0.8)
    with pytest.raises(ValueError, match=f"lacks {peers_recipe.SWEEP['eole'][-1].name}.*--toolkits eole"):
        sweep.chosen_tuning(results, "eole")


def test_a_tie_goes_to_the_configuration_listed_first():
    results = {"runs": swept("joeynmt", [25.0] * len(peers_recipe.SWEEP["joeynmt"]))}
    assert sweep.chosen(results)["joeynmt"]["configuration"] == peers_recipe.SWEEP["joeynmt"][0].name


def test_a_stored_row_replaces_its_configuration_and_keeps_the_order(tmp_path):
    results = {"runs": []}
    rows = swept("ours", [30.0, 31.0])
    sweep.store(results, rows[1], tmp_path)
    sweep.store(results, rows[0], tmp_path)
    better = {**rows[1], "best_validation_bleu": 35.0}
    sweep.store(results, better, tmp_path)
    written = json.loads((tmp_path / sweep.RESULTS).read_text())
    assert [run["configuration"] for run in written["runs"]] == [rows[0]["configuration"], rows[1]["configuration"]]
    assert written["runs"][1]["best_validation_bleu"] == 35.0
    assert written["chosen"] == {}  # four configurations of ours still to run


def test_rows_of_another_recipe_are_dropped(tmp_path):
    (tmp_path / sweep.RESULTS).write_text(json.dumps({"recipe": dataclasses.asdict(RECIPE), "runs": [{"a": 1}]}))
    assert sweep.load(tmp_path, RECIPE)["runs"] == [{"a": 1}]
    assert sweep.load(tmp_path, dataclasses.replace(RECIPE, updates=400)) == {"runs": []}


def test_the_section_shows_every_configuration_the_choice_in_bold_and_what_is_left():
    results = {"runs": swept("ours", [30.0 + i for i in range(len(peers_recipe.SWEEP["ours"]))])
               + swept("eole", [20.0])}
    results["chosen"] = {name: {"configuration": choice["configuration"],
                                "length_penalty": choice["best_length_penalty"],
                                "validation_bleu": choice["best_validation_bleu"]}
                         for name, choice in sweep.chosen(results).items()}
    results.update(length_penalties=list(peers_recipe.LENGTH_PENALTIES), recipe=dataclasses.asdict(RECIPE), seed=1,
                   decoding={"num_beams": 5}, signature="BLEU|x", jobs=2, command="python -m benchmarks.peers.sweep",
                   provenance={"machine": {"cpu": "AMD EPYC"}, "commit": "abc"})
    text = "\n".join(sweep_section(results))
    best = peers_recipe.SWEEP["ours"][-1].name
    assert f"| ours | {best} |" in text and f"**{30.0 + len(peers_recipe.SWEEP['ours']) - 1:.2f}**" in text
    assert text.count("**") == 2  # one choice: eole's sweep is not complete
    assert f"eole {peers_recipe.SWEEP['eole'][1].name}" in text.split("Not run yet:")[1]
    assert "joeynmt" in text.split("Not run yet:")[1]


def test_a_row_stored_before_the_length_penalties_grew_is_decoded_at_the_new_ones_only(tmp_path, monkeypatch):
    """No choice while a row lacks a length penalty; `completed` decodes the missing ones from the run's model
    (never training), and the best is taken over them all."""
    decoded = []
    monkeypatch.setattr(sweep.toolkits, "decode", lambda name, recipe, data, folder, rows, size, seed, tag: (
        decoded.append((folder, recipe.length_penalty)) or ([GOOD] if recipe.length_penalty > 1.3 else ["bad"]),
        {"seconds": 1.0}))
    monkeypatch.setattr(sweep.peers_data, "mean_pieces", lambda tokenizer, texts: 1.0)

    class Data:
        folder, target_lang = tmp_path / "data", "de"

        def lines(self, split, lang):
            return [GOOD]

        def tokenizer(self):
            return None

    rows = swept("ours", [30.0] * len(peers_recipe.SWEEP["ours"]))
    old = {alpha: rows[0]["validation"][alpha] for alpha in ("0.6", "0.8", "1", "1.2")}
    rows[0] = sweep.with_best({**rows[0], "validation": old})
    assert sweep.missing_penalties(rows[0]) == (1.4, 1.6) and "ours" not in sweep.chosen({"runs": rows})
    with pytest.raises(FileNotFoundError, match="--rerun"):
        sweep.completed(rows[0], RECIPE, Data(), tmp_path)
    model = tmp_path / "sweep" / "ours" / rows[0]["configuration"]
    (model / "model").mkdir(parents=True)
    done = sweep.completed(rows[0], RECIPE, Data(), tmp_path)
    assert decoded == [(model, 1.4), (model, 1.6)]
    assert done["best_length_penalty"] == 1.4 and done["best_validation_bleu"] == pytest.approx(100.0)
    assert done["validation"]["0.8"] == old["0.8"]
    assert sweep.chosen({"runs": [done] + rows[1:]})["ours"]["configuration"] == rows[0]["configuration"]


def test_what_is_left_trains_again_a_short_row_whose_model_is_gone(tmp_path):
    """`pending`: configurations not yet run are trained, the toolkits taking turns; a row lacking a length penalty
    is decoded from its model where the model is there and trained again where it is gone; a complete row is left."""
    ours, eole = peers_recipe.SWEEP["ours"], peers_recipe.SWEEP["eole"]
    short = {alpha: 30.0 for alpha in (0.6, 0.8, 1.0, 1.2)}
    rows = [row("ours", ours[0], short), row("ours", ours[1], short),
            row("ours", ours[2], {alpha: 30.0 - abs(alpha - 1.0) for alpha in peers_recipe.LENGTH_PENALTIES})]
    (sweep.run_folder(tmp_path, "ours", ours[0].name) / "model").mkdir(parents=True)
    jobs, incomplete = sweep.pending({"runs": rows}, ["ours", "eole"], None, False, tmp_path)
    assert [row["configuration"] for row in incomplete] == [ours[0].name]
    assert jobs[:4] == [("eole", eole[0]), ("ours", ours[1]), ("eole", eole[1]), ("eole", eole[2])]
    assert {tuning.name for name, tuning in jobs if name == "ours"} == {tuning.name for tuning in ours[1:]} - {
        ours[2].name}
    jobs, incomplete = sweep.pending({"runs": rows}, ["ours"], [ours[0].name, ours[1].name], True, tmp_path)
    assert jobs == [("ours", ours[0]), ("ours", ours[1])] and incomplete == []


def test_the_section_says_whether_a_configuration_trained_twice_gave_the_same_scores():
    first, second = swept("eole", [25.0, 30.0])
    first["earlier_validation_bleu"] = {alpha: scores["bleu"] for alpha, scores in first["validation"].items()}
    assert "to the last digit" in report_sweep.reproduced([first, second])
    second["earlier_validation_bleu"] = {"0.8": 29.0}
    assert report_sweep.reproduced([first, second]).endswith(f"differing from their first run: eole "
                                                             f"{second['configuration']}.")
    assert report_sweep.reproduced([swept("ours", [30.0])[0]]) is None


def test_the_section_names_the_command_and_commit_that_trained_each_row():
    """Rows from two invocations each under their own command, commit and date; a row stored before rows recorded
    theirs said to be such; the file's last command beside."""
    made = {"commit": "0123456789abcdef", "tree_clean": True, "date": "2026-12-07T14:16:30+00:00",
            "machine": {"cpu": "AMD EPYC"}}
    first, second, old = swept("joeynmt", [30.0, 31.0, 32.0])
    first["run_by"] = invocations.run_by(made, "python -m benchmarks.peers.sweep --toolkits joeynmt")
    second["run_by"] = invocations.run_by({**made, "commit": "fedcba9876543210"}, "python -m benchmarks.peers.sweep")
    text = invocations.described([first, second, old], report_sweep.configuration_of,
                                 {"command": "python -m benchmarks.peers.sweep", "provenance": made})
    assert (f"`python -m benchmarks.peers.sweep --toolkits joeynmt` (commit 0123456, 2026-12-07, AMD EPYC): joeynmt "
            f"{first['configuration']}; `python -m benchmarks.peers.sweep` (commit fedcba9, 2026-12-07, AMD EPYC): "
            f"joeynmt {second['configuration']}; trained before rows recorded their command") in text
    assert text.split("their command")[1].startswith(f" (the file's history holds it): joeynmt {old['configuration']}.")
    assert text.endswith("Last command on the file: `python -m benchmarks.peers.sweep`, commit 0123456.")


@pytest.mark.parametrize("peak, expected", [(0.8, ()), (1.6, (1.8,)), (0.6, (0.4,)), (3.0, ()), (0.0, ())])
def test_a_best_on_the_edge_of_the_penalties_decoded_asks_for_the_next_beyond_it(peak, expected):
    """`missing_penalties`: once the grid is decoded, the best must lie inside what was decoded (or at a bound)."""
    alphas = sorted(set(peers_recipe.LENGTH_PENALTIES) | {peak})
    decoded = row("ours", peers_recipe.SWEEP["ours"][0], {alpha: 30.0 - abs(alpha - peak) for alpha in alphas})
    assert sweep.missing_penalties(decoded) == expected


def test_decoding_goes_on_beyond_the_edge_until_the_best_lies_inside(tmp_path, monkeypatch):
    """`validation_bleu` decodes the grid, then one step at a time beyond the edge where the best sits; the section
    shows the extra penalties as columns, empty for the rows that did not need them."""
    peak = 2.2
    monkeypatch.setattr(sweep, "translation_metrics",
                        lambda translations, references: {"bleu": 30.0 - abs(float(translations[0]) - peak)})
    monkeypatch.setattr(sweep.toolkits, "decode", lambda name, recipe, data, folder, rows, size, seed, tag: (
        [str(recipe.length_penalty)], {"seconds": 1.0}))
    monkeypatch.setattr(sweep.peers_data, "mean_pieces", lambda tokenizer, texts: 1.0)

    class Data:
        folder, target_lang = tmp_path, "de"

        def lines(self, split, lang):
            return ["x"]

        def tokenizer(self):
            return None

    scores = sweep.validation_bleu("joeynmt", RECIPE, Data(), tmp_path)
    assert list(scores) == ["0.6", "0.8", "1", "1.2", "1.4", "1.6", "1.8", "2", "2.2", "2.4"]
    edge = sweep.with_best(row("joeynmt", peers_recipe.SWEEP["joeynmt"][0], {0.6: 0.0}) | {"validation": scores})
    assert edge["best_length_penalty"] == 2.2 and sweep.missing_penalties(edge) == ()
    results = {"runs": [edge, *swept("joeynmt", [20.0, 21.0])[1:]], "chosen": {},
               "length_penalties": list(peers_recipe.LENGTH_PENALTIES), "recipe": dataclasses.asdict(RECIPE),
               "seed": 1, "decoding": {"num_beams": 5}, "signature": "BLEU|x", "jobs": 2, "command": "c",
               "provenance": {"machine": {"cpu": "AMD EPYC"}, "commit": "abc"}}
    table = [line for line in sweep_section(results) if line.startswith("| joeynmt")]
    assert table[0].count("|") == table[1].count("|") and "| 30.00 | 29.80 |" in table[0] and "|  |  |" in table[1]
