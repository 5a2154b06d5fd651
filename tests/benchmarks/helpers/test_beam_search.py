"""The hand-written searches' output helpers: stripping at EOS and the agreement between two searches."""

from types import SimpleNamespace

from benchmarks.helpers.beam_search import agreement, counts, strip

CONFIG = SimpleNamespace(eos_token_id=2)


def test_strip_cuts_at_the_first_eos():
    assert strip([5, 6, 2, 7, 2], CONFIG) == [5, 6]
    assert strip([5, 6], CONFIG) == [5, 6]


def test_agreement_is_the_fraction_of_equal_outputs():
    assert agreement([[1], [2, 3], [4]], [[1], [2], [4]]) == 2 / 3


def test_counts_only_when_every_output_agrees():
    assert counts([[1], [2, 3]], [[1], [2, 3]]) == "yes"
    assert counts([[1], [2, 3], [4]], [[1], [2], [5]]) == "NO: 2 of 3 outputs differ"
