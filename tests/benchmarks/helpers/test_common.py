"""The timing helpers every benchmark measures with, on a fake clock (so that the numbers are exact), and the
size overrides."""

import dataclasses

from benchmarks.helpers.common import (
    Rounds, Settings, columns, first_pass_then_rounds, first_pass_then_rounds_by_item, interleaved, paired_ratio,
    quartiles, rate, resolve_sizes, spread, timed,
)


def test_timed_returns_the_result_and_the_seconds(clock):
    assert timed(lambda: clock.advance(0.25) or "done", "cpu") == ("done", 0.25)


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


def test_prepare_applies_only_to_the_names_it_holds(clock):
    rounds = interleaved({"x": lambda value: clock.advance(value), "y": lambda: clock.advance(2.0)}, rounds=2,
                         device="cpu", prepare={"x": lambda: 1.0})
    assert rounds.seconds == {"x": [1.0, 1.0], "y": [2.0, 2.0]}


def test_first_pass_is_timed_apart_then_rounds_without_warmup(clock):
    durations = {"a": iter([9.0, 1.0, 2.0, 3.0]), "b": iter([8.0, 4.0, 4.0, 4.0])}
    first, rounds = first_pass_then_rounds({name: (lambda name=name: clock.advance(next(durations[name])))
                                            for name in durations}, rounds=3, device="cpu")
    assert first == {"a": 9.0, "b": 8.0}
    assert rounds.seconds == {"a": [1.0, 2.0, 3.0], "b": [4.0, 4.0, 4.0]}


def test_by_item_the_names_take_turns_on_every_item_and_a_round_sums_its_items(clock):
    calls = []

    def call(name: str, seconds: float):
        def fn(item: int):
            calls.append((name, item))
            clock.advance(seconds * item)
            return f"{name}{item}"
        return fn

    first, rounds = first_pass_then_rounds_by_item({"a": call("a", 1.0), "b": call("b", 2.0)}, [1, 10], rounds=2,
                                                   device="cpu")
    # the first pass, then two rounds: on each item both names, the order reversed from item to item and from one
    # round to the next
    assert calls == [("a", 1), ("b", 1), ("b", 10), ("a", 10),
                     ("b", 1), ("a", 1), ("a", 10), ("b", 10),
                     ("a", 1), ("b", 1), ("b", 10), ("a", 10)]
    assert first == {"a": 11.0, "b": 22.0}
    assert rounds.seconds == {"a": [11.0, 11.0], "b": [22.0, 22.0]}
    assert rounds.last == {"a": ["a1", "a10"], "b": ["b1", "b10"]}


def test_ratios_are_per_round_and_figures_are_medians_with_quartiles():
    rounds = Rounds({"baseline": [4.0, 9.0, 2.0, 8.0, 3.0], "ours": [2.0, 3.0, 1.0, 2.0, 1.0]}, {})
    # per-round ratios 2, 3, 2, 4, 3: their median and quartiles, not the ratio of the medians (8 / 2 = 4)
    assert paired_ratio(rounds, "baseline", "ours") == {"ratio": 3.0, "quartiles": [2.0, 3.0]}
    assert spread([5.0, 1.0, 3.0, 2.0, 4.0]) == {"median": 3.0, "quartiles": [2.0, 4.0]}
    assert rate(12.0, rounds, "ours") == spread([6.0, 4.0, 12.0, 6.0, 12.0], 2)
    assert columns("speed", {"ratio": 3.0, "quartiles": [2.0, 3.5]}) == {"speed": 3.0, "speed_iqr": [2.0, 3.5]}
    assert columns("rate", spread([1.0, 2.0, 3.0])) == {"rate": 2.0, "rate_iqr": [1.5, 2.5]}


def test_quartiles():
    assert quartiles([5.0, 1.0, 3.0, 2.0, 4.0]) == (2.0, 3.0, 4.0)
    assert quartiles([1.0, 2.0]) == (1.25, 1.5, 1.75)  # within the values, however few
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
