"""The command a suite's table states runs the same models with the same settings: parsed back by
scripts/compare.py, it gives the report's models, seeds, threads and jobs."""

import importlib.util
import shlex

import pytest

from hf_seqmodels.comparison import DEFAULT_SEEDS, SUITES
from hf_seqmodels.comparison.report import command
from hf_seqmodels.paths import REPO_ROOT


def compare_script():
    spec = importlib.util.spec_from_file_location("compare_script", REPO_ROOT / "scripts" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("names, seeds, threads, jobs, full", [
    (["BiLSTM", "BiLSTM + MiniLM emb.", "BERT (MiniLM-L6)"], [42, 43, 44], 1, 2, False),
    (list(SUITES["sentiment"].models), list(DEFAULT_SEEDS), 1, 1, False),
    (["GRU"], [7], 0, 3, True),
])
def test_the_stated_command_runs_the_reports_models_and_settings(names, seeds, threads, jobs, full):
    report = {"full": full, "seeds": seeds, "num_threads": threads, "jobs": jobs,
              "runs": [{"name": name, "seed": seed} for name in names for seed in seeds]}
    line = command("sentiment", SUITES["sentiment"], report)
    suites, options = compare_script().parse_args(shlex.split(line)[2:])
    assert suites == ["sentiment"]
    assert (options.models or list(SUITES["sentiment"].models)) == names
    assert (options.seeds, options.num_threads, options.jobs, options.full) == (seeds, threads, jobs, full)
