"""What a suite derives from its task module and metric (the results' task name, percent display, ranking direction,
metric_for_best_model), checked against what each task's run writes and what each metric is."""

import pytest

from hf_seqmodels.comparison.suites import SUITES, Suite
from hf_seqmodels.tasks import language_modeling, translation


@pytest.mark.parametrize("name", SUITES)
def test_a_suite_shows_and_ranks_its_metric_as_what_it_is(name):
    suite = SUITES[name]
    assert suite.percent == suite.metric.endswith(("accuracy", "f1"))  # fractions: accuracy, F1; BLEU is 0-100
    assert suite.higher_is_better == (suite.metric != "test_perplexity")


def test_the_task_name_is_the_one_the_tasks_run_writes():
    assert {suite.task for suite in SUITES.values() if suite.module is translation} == {"translation"}
    assert {suite.task for suite in SUITES.values() if suite.module is language_modeling} == {"text-generation"}
    assert {SUITES["sentiment"].task, SUITES["ner"].task} == {"text-classification", "token-classification"}


def test_keep_best_selects_by_the_suites_metric_on_validation():
    assert SUITES["wnut17"].common["metric_for_best_model"] == "eval_seqeval_f1"
    assert "metric_for_best_model" not in SUITES["upos"].common
    suite = Suite(module=translation, metric="test_chrf", metric_label="chrF", models={}, cpu_budget={},
                  full_budget={}, keep_best=True)
    assert suite.common == {"metric_for_best_model": "eval_chrf"} and not suite.percent


def test_a_metric_the_task_does_not_report_is_refused():
    with pytest.raises(ValueError, match=r"'test_accuracy': a translation run's card reports the test scores of "
                                         r"\['eval_bleu', 'eval_chrf'\] only"):
        Suite(module=translation, metric="test_accuracy", metric_label="?", models={}, cpu_budget={}, full_budget={})
