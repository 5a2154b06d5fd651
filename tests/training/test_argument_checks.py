"""hf_seqmodels.training.argument_checks: the option checks, typed --config_overrides and the fields the scripts set
themselves."""

import math
from types import SimpleNamespace

import pytest

import hf_seqmodels  # noqa: F401  (registers the model types)
from hf_seqmodels.training.argument_checks import check_at_least, check_different, check_range, parse_config_overrides


def test_config_overrides_are_typed_like_the_defaults():
    assert parse_config_overrides("attention_seq2seq", "hidden_size=16,cell_type=lstm") == {
        "hidden_size": 16, "cell_type": "lstm"}


@pytest.mark.parametrize("item, source", [("vocab_size=100", "--vocab_size"), ("eos_token_id=3", "the tokenizer"),
                                          ("decoder_start_token_id=1", "the tokenizer")])
def test_config_overrides_reject_fields_the_script_sets(item, source):
    with pytest.raises(ValueError, match=f"is set by the script from {source}"):
        parse_config_overrides("attention_seq2seq", item)


@pytest.mark.parametrize("value, allowed", [(0.0, True), (0.5, True), (1.0, False), (-0.1, False),
                                            (math.nan, False), (math.inf, False), (None, True), ("0.5", False),
                                            (True, False)])
def test_check_range_takes_finite_numbers_in_the_interval(value, allowed):
    arguments = SimpleNamespace(dropout=value)
    if allowed:
        check_range(arguments, "dropout", 0, 1, high_open=True)
    else:
        with pytest.raises(ValueError, match=r"--dropout must be a finite number in \[0, 1\), got "):
            check_range(arguments, "dropout", 0, 1, high_open=True)


def test_check_at_least_and_check_different_name_the_option_the_value_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"--num_beams must be at least 1, got 0\."):
        check_at_least(SimpleNamespace(num_beams=0), "num_beams", 1)
    with pytest.raises(ValueError, match=r"--num_beams must be an integer of at least 1, got 2.5\."):
        check_at_least(SimpleNamespace(num_beams=2.5), "num_beams", 1)
    with pytest.raises(ValueError, match=r"--first and --second are both 'x'"):
        check_different(SimpleNamespace(first="x", second="x"), "first", "second")
