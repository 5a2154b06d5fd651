"""--architecture (benchmarks.peers.architectures): the main job's comparison keeps its files, folders and toolkits;
the Transformer's sweep, runs and report write only their own, and every command dispatches to its configs."""

import argparse
import dataclasses
import json

import pytest

from benchmarks.peers import architectures, run, sweep, toolkits
from benchmarks.peers import recipe as rnn_recipe
from benchmarks.peers import transformer_recipe as transformer
from benchmarks.peers.architectures import RNN, TRANSFORMER
from benchmarks.peers.data import PreparedData
from benchmarks.peers.report_sweep import sweep_section

GOOD = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
RNN_RECIPE = rnn_recipe.Recipe.main_job(29_000, 300)
TRANSFORMER_RECIPE = transformer.TransformerRecipe.main_job(29_000, 300)


def test_the_main_jobs_comparison_keeps_its_names():
    """The files, folder and toolkits the attention GRU's comparison had before --architecture."""
    assert (RNN.results, RNN.sweep_results, RNN.translations, RNN.work) == (
        "peers.json", "peers_sweep.json", "peers_translations", "peers")
    assert (sweep.RESULTS, run.TRANSLATIONS, toolkits.TOOLKITS) == (
        "peers_sweep.json", "peers_translations", ("ours", "joeynmt", "eole"))
    assert RNN.sweep is rnn_recipe.SWEEP and RNN.differences is rnn_recipe.DIFFERENCES
    names = {RNN.results, RNN.sweep_results, RNN.translations, RNN.work, f"{RNN.stem}.md"}
    assert not names & {TRANSFORMER.results, TRANSFORMER.sweep_results, TRANSFORMER.translations, TRANSFORMER.work,
                        f"{TRANSFORMER.stem}.md"}


def test_a_recipe_names_its_architecture():
    assert architectures.of(RNN_RECIPE) is RNN and architectures.of(TRANSFORMER_RECIPE) is TRANSFORMER
    assert set(TRANSFORMER.toolkits) == set(TRANSFORMER.sweep) == set(TRANSFORMER.longest_first)
    assert set(RNN.toolkits) == set(RNN.sweep) == set(RNN.longest_first)


def parse(argv: list[str]) -> tuple[argparse.Namespace, architectures.Architecture]:
    parser = argparse.ArgumentParser()
    architectures.add_arguments(parser)
    args = parser.parse_args(argv)
    return args, architectures.parsed(parser, args, toolkits.REPO_ROOT / "outputs")


def test_the_options_default_to_the_architectures_toolkits_and_folder():
    args, architecture = parse([])
    assert architecture is RNN and args.toolkits == ["ours", "joeynmt", "eole"]
    assert args.work == toolkits.REPO_ROOT / "outputs" / "peers"
    args, architecture = parse(["--architecture", "transformer"])
    assert architecture is TRANSFORMER and args.toolkits == ["ours", "joeynmt", "eole", "marian"]
    assert args.work == toolkits.REPO_ROOT / "outputs" / "peers_transformer"
    with pytest.raises(SystemExit):
        parse(["--toolkits", "marian"])  # the main job's comparison has no Marian
    with pytest.raises(SystemExit):
        run.main(["--architecture", "transformer", "--timing_rounds", "1"])  # the speed phase is the RNN's


def test_each_toolkit_is_trained_from_its_architectures_config(tmp_path):
    data = PreparedData(tmp_path, "en", "de")
    tuning = TRANSFORMER_RECIPE.untuned("ours")
    marian = toolkits.pipeline_arguments("marian", TRANSFORMER_RECIPE, data, tmp_path, 1, tuning)
    ours = toolkits.pipeline_arguments("ours", TRANSFORMER_RECIPE, data, tmp_path, 1, tuning)
    assert marian[marian.index("--model_type") + 1] == "marian"
    assert ours[ours.index("--model_type") + 1] == "transformer"
    rnn = toolkits.pipeline_arguments("ours", RNN_RECIPE, data, tmp_path, 1, RNN_RECIPE.untuned("ours"))
    assert rnn == rnn_recipe.ours_arguments(RNN_RECIPE, data, tmp_path, 1, RNN_RECIPE.untuned("ours"))
    assert "--model_type" not in rnn


def row(name: str, tuning: rnn_recipe.Tuning, bleu: float) -> dict:
    """A sweep row of ``name`` scoring ``bleu`` at length penalty 1, inside the grid, and less away from it."""
    validation = {f"{alpha:g}": {"bleu": bleu - abs(alpha - 1.0), "mean_output_pieces": 9.0, "seconds": 1.0}
                  for alpha in rnn_recipe.LENGTH_PENALTIES}
    return sweep.with_best({"toolkit": name, "configuration": tuning.name, "tuning": dataclasses.asdict(tuning),
                            "schedule_words": transformer.SCHEDULE_WORDS[name, tuning.schedule], "seed": 1,
                            "train": {"parameters": 5_708_800, "command": "python x"}, "validation": validation})


def test_the_transformers_sweep_chooses_and_stores_in_its_own_file(tmp_path):
    """Marian's configurations chosen alike; its rows in peers_transformer_sweep.json, peers_sweep.json untouched;
    a missing configuration names the command with --architecture transformer; the report shows its sweep."""
    main_jobs = json.dumps({"runs": [{"toolkit": "ours"}]})
    (tmp_path / RNN.sweep_results).write_text(main_jobs)
    results = {"runs": []}
    for index, tuning in enumerate(TRANSFORMER.sweep["marian"]):
        sweep.store(results, row("marian", tuning, 20.0 + index), tmp_path, TRANSFORMER)
    assert (tmp_path / RNN.sweep_results).read_text() == main_jobs
    written = json.loads((tmp_path / TRANSFORMER.sweep_results).read_text())
    assert written["chosen"]["marian"]["configuration"] == TRANSFORMER.sweep["marian"][-1].name
    assert sweep.chosen_tuning(written, "marian", TRANSFORMER)[0] == TRANSFORMER.sweep["marian"][-1]
    with pytest.raises(ValueError, match="--architecture transformer --toolkits eole"):
        sweep.chosen_tuning(written, "eole", TRANSFORMER)
    assert "marian" not in sweep.chosen(written)  # the main job's sweep has no Marian
    written.update(recipe=dataclasses.asdict(TRANSFORMER_RECIPE), seed=1, length_penalties=[0.6],
                   decoding={"num_beams": 5}, signature="BLEU|x", jobs=2, command="python -m benchmarks.peers.sweep",
                   provenance={"machine": {"cpu": "AMD EPYC"}, "commit": "abc"})
    (tmp_path / TRANSFORMER.sweep_results).write_text(json.dumps(written))
    assert sweep.load(tmp_path, TRANSFORMER_RECIPE)["runs"] == written["runs"]
    assert sweep.load(tmp_path, RNN_RECIPE) == {"runs": []}  # its own file, made with no recipe
    jobs, _ = sweep.pending(written, ["ours", "marian"], None, False, tmp_path, TRANSFORMER)
    assert {name for name, _ in jobs} == {"ours"} and len(jobs) == len(TRANSFORMER.sweep["ours"])
    section = "\n".join(sweep_section(written, TRANSFORMER))
    assert "results/peers_transformer_sweep.json" in section and "documented Transformer recipe" in section
    assert f"ours {TRANSFORMER.sweep['ours'][0].name}" in section.split("Not run yet:")[1]


class FakeData:
    """What the quality phase reads of the prepared data besides the runs."""

    target_lang = "de"

    def stats(self) -> dict:
        return {"train": {"sentences": 29_000, "longest_pieces": 58, "source_tokens": 400_000,
                          "target_tokens": 420_000}, "validation": {"sentences": 1014}, "test": {"sentences": 2},
                "vocab_size": 6000}

    def lines(self, split: str, lang: str) -> list[str]:
        return GOOD


def test_the_transformers_quality_phase_writes_its_own_files(tmp_path, monkeypatch):
    """Every toolkit of the Transformer's comparison, JoeyNMT first; peers_transformer.json, its translations and
    peers_transformer.md, nothing of the main job's; its differences and what is the same for all."""
    order = []

    def fake_run(name, recipe, data, seed, args):
        order.append(name)
        return {"toolkit": name, "seed": seed, "train": {"command": "python x", "train_s": 1.0, "wall_s": 2.0,
                                                         "peak_rss_mb": 3.0, "parameters": 5_708_800},
                "decode": {"test": {"peak_rss_mb": 1.0, "mean_output_pieces": 9.0, "command": "python y"}}}, GOOD

    monkeypatch.setattr(run, "quality_run", fake_run)
    monkeypatch.setattr(toolkits, "version", lambda name: {name: "1.0"})
    untuned = {name: (TRANSFORMER_RECIPE.untuned(name), TRANSFORMER_RECIPE.length_penalty)
               for name in TRANSFORMER.toolkits}
    args = argparse.Namespace(seeds=[1], toolkits=list(TRANSFORMER.toolkits), jobs=1, threads=[1], tuned=False,
                              tunings=untuned, rerun=False, decoding_batch_size=64, label="check", out=tmp_path,
                              work=tmp_path / "work")
    results = run.quality(TRANSFORMER_RECIPE, FakeData(), args, "python -m benchmarks.peers.run")
    assert order == list(TRANSFORMER.longest_first)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "peers_transformer.json", "peers_transformer.md", "peers_transformer_translations"]
    assert sorted(path.name for path in (tmp_path / TRANSFORMER.translations).iterdir()) == [
        f"{name}.seed1.txt" for name in sorted(TRANSFORMER.toolkits)]
    assert results["toolkits"] == list(TRANSFORMER.toolkits) and results["differences"] == TRANSFORMER.differences
    assert "target tokens" in results["same_for_all"] and all("scores" in run_ for run_ in results["runs"])
    text = (tmp_path / "peers_transformer.md").read_text()
    assert text.startswith(f"# {TRANSFORMER.title}") and "**marian**" in text
