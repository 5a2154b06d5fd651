"""What the decoding servers share (`serve_ours`, `serve_ctranslate2`, `serve_joeynmt`, `serve_eole`): the batches,
the timed call, the line protocol with `decoding_grid` and the record of a measurement.

Standard library only (torch and the ``tokenizers`` library are imported where used; both are in every toolkit's
environment): the peers' servers run in the peers' environments, which have neither transformers nor this package.

A server loads its toolkit's model once, decodes a few sentences untimed (a warm-up, part of loading), writes one
line ``{"ready": true, ...}`` and then, for each command line ``{"batch_size": B, "sentences": N, "round": r}`` read
from its standard input, times one call of its `Decoder` on the first N source lines at batch B and writes one
measurement line (`measure`). Its protocol lines go to the standard output it was started with; anything the toolkit
prints goes to the standard error (`protocol_output`). Given ``--batch_sizes`` it runs those itself, ``--rounds``
times, instead of reading commands.

The timed call is the same for every toolkit: raw source lines in, detokenized translations out, in the order of
the lines. Inside it, every toolkit cuts its input into the same batches (`batches`: the sentences sorted by their
number of pieces, stably, B at a time) and decodes them with beam search; what a toolkit does per batch is its own
(ours: the tokenizer call, generate() or CTranslate2's translate_batch, batch_decode; a peer: our tokenizer.json
cutting the lines into the pieces it was trained on, its own reading of them, its beam search, our tokenizer.json
joining its pieces into text).
"""

import argparse
import gc
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

# A server's decoding: raw source lines and a batch size in, detokenized translations out (in the lines' order).
Decoder = Callable[[list[str], int], list[str]]
WARMUP_SENTENCES = 8  # decoded once at load, untimed


def batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """The indices of the sentences of ``lengths`` (their number of pieces) in batches of ``batch_size``, shortest
    first, ties in the sentences' order (a stable sort): the batches every toolkit decodes. JoeyNMT and eole given
    the sentences in this order make the same batches (JoeyNMT batches consecutive sentences; eole sorts stably by
    length, then batches consecutive ones)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def in_order(sentences: list[str], batch_size: int, lengths: list[int]) -> tuple[list[int], list[str]]:
    """The sentences in the order of their `batches` (the batches concatenated) and their indices: a peer given
    them in this order, ``batch_size`` at a time, decodes exactly the batches of `batches`."""
    order = [index for batch in batches(lengths, batch_size) for index in batch]
    return order, [sentences[index] for index in order]


def restored(order: list[int], outputs: Iterable[str]) -> list[str]:
    """``outputs`` (in the order ``order`` gave) back in the sentences' order."""
    back = [""] * len(order)
    for index, output in zip(order, outputs, strict=True):
        back[index] = output
    return back


def digest(translations: list[str]) -> str:
    """The sha1 of the translations, one per line: equal outputs across rounds and thread counts have equal
    digests."""
    return hashlib.sha1("".join(f"{line}\n" for line in translations).encode("utf-8")).hexdigest()


class PieceCounter:
    """The number of pieces of a text by our tokenizer.json (the ``tokenizers`` library): the output length every
    toolkit's translations are counted in, after the timer."""

    def __init__(self, tokenizer_json: str):
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(tokenizer_json)

    def __call__(self, texts: list[str]) -> int:
        return sum(len(encoding.tokens) for encoding in self.backend.encode_batch(texts, add_special_tokens=False))


def measure(decode: Decoder, sources: list[str], batch_size: int, count_pieces: Callable[[list[str]], int],
            record: dict, keep: bool = False) -> dict:
    """One timed call of ``decode`` on ``sources`` at ``batch_size`` (garbage collected before, the clock around the
    call alone). ``record`` (toolkit, threads, round) with ``batch_size``, ``seconds``, ``sentences``,
    ``output_pieces`` (every translation's pieces, counted after the clock stopped), ``sha1`` (`digest`) and, when
    ``keep``, the ``translations``."""
    gc.collect()
    start = time.perf_counter()
    translations = decode(sources, batch_size)
    seconds = time.perf_counter() - start
    if len(translations) != len(sources):
        raise RuntimeError(f"{len(translations)} translations for {len(sources)} sentences.")
    measured = {**record, "batch_size": batch_size, "seconds": seconds, "sentences": len(sources),
                "output_pieces": count_pieces(translations), "sha1": digest(translations)}
    return {**measured, "translations": translations} if keep else measured


def protocol_output() -> TextIO:
    """The standard output as it is now, for the protocol's lines alone; the file descriptor 1 (print(), a
    toolkit's logging, tqdm) goes to the standard error from here on."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    return protocol


def set_threads(threads: int) -> int:
    """torch's intra-op threads (the parent sets OMP_NUM_THREADS, read when torch starts, to the same count), as
    torch now has them."""
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    import torch

    torch.set_num_threads(threads)
    return torch.get_num_threads()


def parser(description: str) -> argparse.ArgumentParser:
    """The options every server takes; a server adds its toolkit's."""
    parsed = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parsed.add_argument("--model", required=True, help="the trained model (folder or checkpoint path)")
    parsed.add_argument("--source", required=True, help="raw source sentences, one per line (no empty line)")
    parsed.add_argument("--tokenizer", required=True, help="our tokenizer.json (the one that cut the pieces)")
    parsed.add_argument("--threads", type=int, required=True, help="torch threads (OMP_NUM_THREADS alike)")
    parsed.add_argument("--name", default=None,
                        help="the name its lines carry (``toolkit``): the grid's row (default: the server's toolkit)")
    parsed.add_argument("--num_beams", type=int, default=5)
    parsed.add_argument("--length_penalty", type=float, default=1.0,
                        help="in the toolkit's own formula (see recipe.py)")
    parsed.add_argument("--max_new_tokens", type=int, default=64, help="longest translation, eos included")
    parsed.add_argument("--batch_sizes", type=int, nargs="+", default=None,
                        help="run these batch sizes --rounds times and exit, instead of reading commands")
    parsed.add_argument("--rounds", type=int, default=1)
    parsed.add_argument("--sentences", type=int, default=None, help="with --batch_sizes: the first N lines")
    parsed.add_argument("--keep_translations", action="store_true",
                        help="with --batch_sizes: each measurement line holds its translations too")
    return parsed


def read_sources(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines or any(not line.strip() for line in lines):
        raise ValueError(f"{path}: the sources must be non-empty lines (JoeyNMT refuses an empty sentence).")
    return lines


def commands(args: argparse.Namespace, stream: TextIO) -> Iterator[dict]:
    """The measurements asked for: ``--batch_sizes`` x ``--rounds`` when given, else each line of ``stream``."""
    if args.batch_sizes:
        for round_ in range(args.rounds):
            for batch_size in args.batch_sizes:
                yield {"batch_size": batch_size, "round": round_, "sentences": args.sentences,
                       "translations": args.keep_translations}
        return
    for line in stream:
        if line.strip():
            yield json.loads(line)


def serve(toolkit: str, args: argparse.Namespace, load: Callable[[argparse.Namespace], Decoder],
          versions: dict) -> None:
    """Load (``load``, then a warm-up), write the ready line, then a measurement line per command (`commands`), each
    naming ``--name`` or else ``toolkit``."""
    toolkit = args.name or toolkit
    protocol = protocol_output()
    torch_threads = set_threads(args.threads)
    sources = read_sources(args.source)
    start = time.perf_counter()
    decode = load(args)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    decode(sources[:WARMUP_SENTENCES], WARMUP_SENTENCES)
    warmup = time.perf_counter() - start
    count_pieces = PieceCounter(args.tokenizer)

    def write(record: dict) -> None:
        protocol.write(json.dumps(record, ensure_ascii=False) + "\n")

    write({"ready": True, "toolkit": toolkit, "threads": args.threads, "torch_threads": torch_threads,
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "load_seconds": loaded, "warmup_seconds": warmup,
           "source_sentences": len(sources), "versions": versions, "pid": os.getpid()})
    for command in commands(args, sys.stdin):
        count = command.get("sentences") or len(sources)
        write(measure(decode, sources[:count], command["batch_size"], count_pieces,
                      {"toolkit": toolkit, "threads": args.threads, "round": command.get("round", 0)},
                      keep=command.get("translations", False)))
    protocol.close()


def versions_of(*distributions: str) -> dict:
    """The installed versions of ``distributions`` (and the Python)."""
    import importlib.metadata
    import platform

    return {"python": platform.python_version(),
            **{name: importlib.metadata.version(name) for name in distributions}}
