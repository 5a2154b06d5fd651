"""Where a batch-1 beam-search translation spends its time: text in, detokenized text out, as
``translation.translate(..., batch_size=1)`` runs it (the scope in which the peers are compared), on a translator folder
saved by scripts/run_translation.py and the first ``--sentences`` English sentences of Multi30k test2016.

Reported, each as the median and quartiles of ``--rounds`` passes over the sentences (after an untimed one):
- ``sentences_per_s``: ``translation.translate`` at batch 1, unclocked;
- ``per_sentence_us``: a pass with clocks around the pieces of one translation, each piece's own time (a piece that
  calls another does not count the other's time): ``tokenization`` (the source tokenizer), ``preparation``
  (``generate()``'s own work: GenerationMixin's set-up of the call (generation config, logits processors, stopping
  criteria, model kwargs, beam expansion) and its output), ``encoder``, ``first_step`` (the decoder start, through
  ``forward``), ``decoder_steps`` (the later steps, ``decoding_step``), ``output_layer`` (every step's, the first
  included), ``search`` (the loop's own work: log-softmax, top-k, finished hypotheses, cache reordering, stopping,
  and once per sentence the first step's inputs and the returned sequences) and ``detokenization``;
  ``clocked_total`` is their sum;
- ``per_step_us``: the decoding steps' share of it divided by the steps taken (the first step included);
- ``operators``: torch.profiler's operators with the most own CPU time in one more pass, in µs per sentence.

``--clock thread`` reads the calling thread's CPU time instead of the wall clock: on a shared machine it leaves out the
time the process waits for a core (meaningful at one thread only, as torch's other threads are not counted).

    python -m benchmarks.studies.batch1_profile --model outputs/multi30k-gru --threads 1 --out results/batch1_profile.json
    python -m benchmarks.studies.batch1_profile --smoke   # tiny stand-in model, a few sentences: checks the script runs
"""

import argparse
import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch.profiler import ProfilerActivity, profile

from hf_seqmodels.comparison.runner import write_json
from hf_seqmodels.data.paths import data_dir
from hf_seqmodels.models import decoding
from hf_seqmodels.provenance import provenance
from hf_seqmodels.tasks import translation

from ..helpers.common import Settings, read_jsonl, spread
from ..helpers.translation_model import SMOKE, add_study_arguments, parse_study_arguments, stand_in_model

CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}
PIECES = ("tokenization", "preparation", "encoder", "first_step", "decoder_steps", "output_layer", "search",
          "detokenization")


class Clocks:
    """Own seconds per piece: a clocked call's time less that of the clocked calls it makes."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.seconds = dict.fromkeys(PIECES, 0.0)
        self.steps = 0
        self._inner = [0.0]  # per open call, the seconds of the clocked calls made inside it

    def run(self, piece: str, fn: Callable, *args, **kwargs):
        self._inner.append(0.0)
        start = self.clock()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = self.clock() - start
            self.seconds[piece] += elapsed - self._inner.pop()
            self._inner[-1] += elapsed

    def wrap(self, piece: str, fn: Callable) -> Callable:
        @functools.wraps(fn)  # generate() reads the signatures of forward and the encoder's forward
        def clocked_fn(*args, **kwargs):
            return self.run(piece, fn, *args, **kwargs)

        return clocked_fn


@contextmanager
def clocked(model, clocks: Clocks) -> Iterator[None]:
    """Clocks around the model's pieces while the block runs: instance attributes over its methods, and the decoding
    module's beam search (which ``decoding.decode`` looks up by name)."""
    def step(*args, **kwargs):
        clocks.steps += 1
        return model_step(*args, **kwargs)

    model_step = model.decoding_step
    patched = [(model.get_encoder(), "forward", "encoder"), (model, "forward", "first_step"),
               (model, "decoding_step", "decoder_steps"), (model, "_logits", "output_layer"),
               (model, "generate", "preparation")]
    for owner, name, piece in patched:
        setattr(owner, name, clocks.wrap(piece, step if name == "decoding_step" else getattr(owner, name)))
    search = decoding.beam_search
    decoding.beam_search = clocks.wrap("search", search)
    try:
        yield
    finally:
        decoding.beam_search = search
        for owner, name, _ in patched:
            delattr(owner, name)


def translate_clocked(model, tokenizers, text: str, clocks: Clocks, options: dict) -> str:
    """``translation.translate`` of one sentence at batch 1, its tokenization and detokenization clocked (the model's
    pieces are clocked by ``clocked``)."""
    batch = clocks.run("tokenization", tokenizers.source, [text], padding=True, return_tensors="pt")
    batch = batch.to(model.device)
    batch.pop("token_type_ids", None)
    generated = model.generate(**batch, **options)
    return clocks.run("detokenization", tokenizers.target.batch_decode, generated, skip_special_tokens=True)[0].strip()


def breakdown(model, tokenizers, texts: list[str], options: dict, rounds: int, clock: str) -> dict:
    """Per sentence and per decoding step, the median and quartiles over ``rounds`` clocked passes of each piece's
    own microseconds, after an untimed pass."""
    passes = []
    with clocked(model, clocks := Clocks(CLOCKS[clock])), torch.no_grad():
        for _ in range(rounds + 1):
            clocks.seconds, clocks.steps = dict.fromkeys(PIECES, 0.0), 0
            translations = [translate_clocked(model, tokenizers, text, clocks, options) for text in texts]
            passes.append((dict(clocks.seconds), clocks.steps + len(texts)))  # + the first step of each
    passes = passes[1:]
    steps = passes[0][1]
    stepping = ("first_step", "decoder_steps", "output_layer", "search")

    def figure(seconds: Callable[[dict], float], count: int) -> dict:
        return spread([seconds(spent) / count * 1e6 for spent, _ in passes], 1)

    return {
        "steps_per_sentence": round(steps / len(texts), 2),
        "translations": translations,
        "per_sentence_us": {**{piece: figure(lambda spent, piece=piece: spent[piece], len(texts)) for piece in PIECES},
                            "clocked_total": figure(lambda spent: sum(spent.values()), len(texts))},
        "per_step_us": {**{piece: figure(lambda spent, piece=piece: spent[piece], steps) for piece in stepping},
                        "total": figure(lambda spent: sum(spent[piece] for piece in stepping), steps)},
    }


def operators(fn: Callable[[], object], count: int, limit: int = 15) -> list[dict]:
    """torch.profiler's operators with the most own CPU time while ``fn()`` runs: µs and calls per ``count``."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    top = sorted(prof.key_averages(), key=lambda event: event.self_cpu_time_total, reverse=True)[:limit]
    return [{"operator": event.key, "own_us": round(event.self_cpu_time_total / count, 1),
             "calls": round(event.count / count, 2)} for event in top]


def sentences_per_s(model, tokenizers, texts: list[str], options: dict, rounds: int) -> dict:
    """``translation.translate`` at batch 1 over ``texts``, unclocked: sentences/s of each round after an untimed
    one."""
    rates = []
    for index in range(rounds + 1):
        start = time.perf_counter()
        translation.translate(model, tokenizers, texts, batch_size=1, **options)
        if index:
            rates.append(len(texts) / (time.perf_counter() - start))
    return spread(rates, 2)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_study_arguments(parser)
    parser.add_argument("--sentences", type=int, default=100, help="test2016 sentences, translated one at a time")
    parser.add_argument("--length_penalty", type=float, default=1.0)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                        help="wall: elapsed time; thread: the calling thread's CPU time (one thread only)")
    args = parse_study_arguments(parser, argv)
    if args.clock == "thread" and torch.get_num_threads() != 1:
        parser.error("--clock thread counts the calling thread only: pass --threads 1")
    if args.smoke:
        timed = stand_in_model("gru", SMOKE, Settings(smoke=True), "smoke run")
        model, tokenizers, origin = timed.model, translation.TranslationTokenizers(timed.tokenizer, timed.tokenizer), \
            timed.origin
        args.sentences, args.num_beams, args.max_new_tokens = 3, 3, 6
    else:
        model = translation.load_translation_model(args.model).eval()
        tokenizers, origin = translation.load_tokenizers(args.model), {"model_dir": args.model}
    texts = [row["en"] for row in read_jsonl(data_dir() / "multi30k_en_de" / "test.jsonl.gz")[:args.sentences]]
    options = {"num_beams": args.num_beams, "length_penalty": args.length_penalty,
               "max_new_tokens": args.max_new_tokens, "early_stopping": True}
    results = {
        "provenance": provenance([0] if args.smoke else [], ["test"]),  # the smoke stand-in's seed
        "model": origin, "threads": torch.get_num_threads(), "clock": args.clock,
        "settings": {name: getattr(args, name) for name in ("sentences", "num_beams", "length_penalty",
                                                            "max_new_tokens", "rounds")},
        "sentences_per_s": sentences_per_s(model, tokenizers, texts, options, args.rounds),
        **breakdown(model, tokenizers, texts, options, args.rounds, args.clock),
    }
    with torch.no_grad():
        results["operators"] = operators(
            lambda: translation.translate(model, tokenizers, texts, batch_size=1, **options), len(texts))
    print(json.dumps({name: value for name, value in results.items() if name != "translations"}, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
