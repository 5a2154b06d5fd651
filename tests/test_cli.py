"""Command-line helpers (hf_seqmodels.cli): typed --config_overrides and the fields the scripts set themselves."""

import pytest

import hf_seqmodels  # noqa: F401  (registers the model types)
from hf_seqmodels.cli import parse_config_overrides


def test_config_overrides_are_typed_like_the_defaults():
    assert parse_config_overrides("attention_seq2seq", "hidden_size=16,cell_type=lstm") == {
        "hidden_size": 16, "cell_type": "lstm"}


@pytest.mark.parametrize("item, source", [("vocab_size=100", "--vocab_size"), ("eos_token_id=3", "the tokenizer"),
                                          ("decoder_start_token_id=1", "the tokenizer")])
def test_config_overrides_reject_fields_the_script_sets(item, source):
    with pytest.raises(ValueError, match=f"is set by the script from {source}"):
        parse_config_overrides("attention_seq2seq", item)
