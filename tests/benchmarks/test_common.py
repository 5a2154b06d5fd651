"""The timing helpers every benchmark measures with, on a fake clock (so that the numbers are exact), and the
size overrides."""

import dataclasses

import pytest

from benchmarks import common
from benchmarks.common import Settings, interleaved, quartiles, resolve_sizes, time_call, timed


@pytest.fixture
def clock(monkeypatch):
    """A fake ``time.perf_counter`` for the helpers: ``clock.advance(seconds)`` is a call taking that long."""

    class Clock:
        now = 0.0

        def advance(self, seconds: float) -> None:
            self.now += seconds

    fake = Clock()
    monkeypatch.setattr(common.time, "perf_counter", lambda: fake.now)
    return fake


def test_timed_returns_the_result_and_the_seconds(clock):
    assert timed(lambda: clock.advance(0.25) or "done", "cpu") == ("done", 0.25)


def test_time_call_is_the_median_after_the_warmup(clock):
    durations = iter([100.0, 3.0, 1.0, 2.0])  # the first is the warm-up's
    assert time_call(lambda: clock.advance(next(durations)), "cpu", repeats=3) == 2.0


def test_interleaved_takes_turns_and_keeps_every_round(clock):
    calls = []

    def call(name: str, seconds: float):
        def fn():
            calls.append(name)
            clock.advance(seconds)
            return len(calls)
        return fn

    rounds = interleaved({"a": call("a", 1.0), "b": call("b", 2.0)}, rounds=3, device="cpu", warmup=1)
    # the warm-up round, then the first timed round in order, the next reversed, and so on
    assert calls == ["b", "a", "a", "b", "b", "a", "a", "b"]
    assert rounds.seconds == {"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0]}
    assert rounds.last == {"a": 7, "b": 8}
    assert rounds.median("b") == 2.0 and rounds.quartiles("a") == (1.0, 1.0, 1.0)


def test_interleaved_prepare_is_not_timed(clock):
    def prepare():
        clock.advance(50.0)
        return 3

    rounds = interleaved({"x": lambda value: clock.advance(value) or value}, rounds=2, device="cpu",
                         prepare={"x": prepare})
    assert rounds.seconds == {"x": [3.0, 3.0]} and rounds.last == {"x": 3}


def test_quartiles():
    assert quartiles([5.0, 1.0, 3.0, 2.0, 4.0]) == (1.5, 3.0, 4.5)
    assert quartiles([7.0]) == (7.0, 7.0, 7.0)


@dataclasses.dataclass(frozen=True)
class ExampleSizes:
    batch_size: int = 8
    lengths: tuple[int, ...] = (16, 32)
    sorted: bool = False


def test_resolve_sizes_applies_overrides_by_field_type():
    settings = Settings(smoke=True, overrides={"lengths": "4,8,16", "sorted": "yes", "unrelated": "1"})
    sizes = resolve_sizes(ExampleSizes(), ExampleSizes(batch_size=2), settings)
    assert sizes == ExampleSizes(batch_size=2, lengths=(4, 8, 16), sorted=True)
