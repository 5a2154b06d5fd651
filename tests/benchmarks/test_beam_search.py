"""The hand-written searches' output helpers: stripping at EOS and the agreement between two searches."""

from types import SimpleNamespace

from benchmarks.beam_search import agreement, strip

CONFIG = SimpleNamespace(eos_token_id=2)


def test_strip_cuts_at_the_first_eos():
    assert strip([5, 6, 2, 7, 2], CONFIG) == [5, 6]
    assert strip([5, 6], CONFIG) == [5, 6]


def test_agreement_is_the_fraction_of_equal_outputs():
    assert agreement([[1], [2, 3], [4]], [[1], [2], [4]]) == 2 / 3
