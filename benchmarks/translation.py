"""Entries 1 and 1b, translation decoding with the attention GRU/LSTM on Multi30k test2016 (English -> German).

1 (``translation``): our batched ``generate(num_beams=5)`` vs two per-sentence Python beam searches calling the
  same model's decoder step once per hypothesis: the naive tutorial search and one matched to transformers'
  semantics (``benchmarks/beam_search.py``). Sentences/s, speed-ups, and how often each finds the same best
  hypothesis as ``generate()`` (a speed-up that changes the answer does not count).
1b (``batch1_overhead``): at batch 1, ``generate()`` (greedy and beam) vs plain hand loops on the same model,
  with a profile of where ``generate()`` spends its time.
Both also time ``generate(cache_implementation="static")``, whose decoding steps replay as CUDA graphs on a GPU.

The model is briefly trained (``train_steps`` Adam steps on Multi30k train, joint BPE vocabulary trained with
``tokenizers``), so that it ends its sentences with EOS at realistic lengths; what is measured is decoding.
"""

import contextlib
import cProfile
import dataclasses
import functools
import hashlib
import io
import json
import os
import pstats
import random
import time
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.paths import data_dir
from hf_seqmodels.tokenization import train_tokenizer

from .beam_search import (
    decoder_step, encode, hand_beam_search, hand_greedy, matched_beam_search, naive_beam_search, strip,
)
from .common import (
    Settings, count_ops, entry_result, op_profile, read_jsonl, resolve_sizes, synchronize, target, time_call,
)


@dataclasses.dataclass(frozen=True)
class Sizes:
    cell_types: tuple[str, ...] = ("gru", "lstm")
    vocab_size: int = 8000
    embedding_size: int = 256
    hidden_size: int = 512
    attention_type: str = "luong_general"
    train_steps: int = 500  # enough for sentences that end (with EOS) at realistic lengths
    train_batch_size: int = 64
    num_sentences: int = 256  # of test2016's 1000, for every search (the per-sentence ones are slow)
    batch_size: int = 64
    num_beams: int = 5
    max_new_tokens: int = 40
    batch1_sentences: int = 48


SMOKE = Sizes(cell_types=("gru",), vocab_size=300, embedding_size=16, hidden_size=16, train_steps=2,
              train_batch_size=8, num_sentences=6, batch_size=4, num_beams=3, max_new_tokens=6, batch1_sentences=2)


@functools.lru_cache(maxsize=1)
def tokenizer_for(vocab_size: int):
    """A joint English/German BPE tokenizer trained on Multi30k train (a few seconds)."""
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    return train_tokenizer((row[lang] for row in rows for lang in ("en", "de")), kind="bpe", vocab_size=vocab_size)


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    return [ids + [tokenizer.eos_token_id] for ids in tokenizer(texts)["input_ids"]]


def pad_batch(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [value] * (width - len(row)) for row in rows])


def cache_dir() -> Path:
    """Where trained benchmark models are kept between runs: ``$HF_SEQMODELS_BENCHMARK_CACHE``, else
    ``~/.cache/hf_seqmodels/benchmarks``."""
    default = Path.home() / ".cache" / "hf_seqmodels" / "benchmarks"
    return Path(os.environ.get("HF_SEQMODELS_BENCHMARK_CACHE", default))


@functools.lru_cache(maxsize=2)
def trained_model(cell_type: str, sizes: Sizes, device: str, seed: int, use_disk_cache: bool = True):
    """The attention seq2seq model after ``train_steps`` Adam steps on Multi30k train, in eval mode, with its
    tokenizer and last training loss. Training takes minutes on CPU, so the result is saved in ``cache_dir()``
    (keyed by the recipe) and loaded from there by later runs, unless the model's parameters have changed since.
    The weights only need to be realistic: every decoding method compared runs the current code on them."""
    recipe = {"cell_type": cell_type, "seed": seed,
              **{name: getattr(sizes, name) for name in ("vocab_size", "embedding_size", "hidden_size",
                                                          "attention_type", "train_steps", "train_batch_size")}}
    digest = hashlib.sha1(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir() / f"attention_seq2seq-{cell_type}-{digest}"
    if use_disk_cache and (folder / "train_loss.json").exists():
        model, info = AttentionSeq2SeqForConditionalGeneration.from_pretrained(folder, output_loading_info=True)
        if not any(info.values()):  # else the model's parameters changed since: train again
            tokenizer = PreTrainedTokenizerFast.from_pretrained(folder)
            return model.to(device).eval(), tokenizer, json.loads((folder / "train_loss.json").read_text())["loss"]

    tokenizer = tokenizer_for(sizes.vocab_size)

    torch.manual_seed(seed)
    config = AttentionSeq2SeqConfig(
        vocab_size=len(tokenizer), embedding_size=sizes.embedding_size, hidden_size=sizes.hidden_size,
        cell_type=cell_type, attention_type=sizes.attention_type, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = AttentionSeq2SeqForConditionalGeneration(config).to(device)
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "train.jsonl.gz")
    rows = random.Random(seed).sample(rows, min(len(rows), sizes.train_steps * sizes.train_batch_size))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    loss = torch.tensor(float("nan"))
    for start in range(0, len(rows), sizes.train_batch_size):
        chunk = rows[start:start + sizes.train_batch_size]
        source = pad_batch(encode_texts(tokenizer, [row["en"] for row in chunk]), tokenizer.pad_token_id)
        labels = pad_batch(encode_texts(tokenizer, [row["de"] for row in chunk]), -100)
        loss = model(input_ids=source.to(device), attention_mask=(source != tokenizer.pad_token_id).long().to(device),
                     labels=labels.to(device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if use_disk_cache:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / "train_loss.json").write_text(json.dumps({"loss": loss.item(), "recipe": recipe}))
    return model.eval(), tokenizer, loss.item()


def test2016_sources(tokenizer, count: int) -> list[list[int]]:
    rows = read_jsonl(data_dir() / "multi30k_en_de" / "test.jsonl.gz")[:count]
    return encode_texts(tokenizer, [row["en"] for row in rows])


def batches(sources: list[list[int]], batch_size: int, pad_id: int, device: str):
    for start in range(0, len(sources), batch_size):
        ids = pad_batch(sources[start:start + batch_size], pad_id).to(device)
        yield ids, (ids != pad_id).long()


def timed(fn, device: str):
    synchronize(device)
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    return result, time.perf_counter() - start


def generate_beam(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes, **options) -> list[list[int]]:
    sequences = model.generate(ids, attention_mask=mask, num_beams=sizes.num_beams, do_sample=False,
                               max_new_tokens=sizes.max_new_tokens, early_stopping=True, length_penalty=1.0,
                               **options)
    return [strip(row[1:], model.config) for row in sequences.tolist()]


def per_sentence(search, model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    """Run a one-sentence search on each row of a padded batch, without its padding."""
    return [strip(search(model, row[keep.bool()].unsqueeze(0), sizes.num_beams, sizes.max_new_tokens), model.config)
            for row, keep in zip(ids, mask)]


def hand_batched(model, ids: torch.Tensor, mask: torch.Tensor, sizes: Sizes) -> list[list[int]]:
    return [strip(row, model.config) for row in hand_beam_search(model, ids, mask, sizes.num_beams,
                                                                 sizes.max_new_tokens)]


def agreement(ours: list[list[int]], other: list[list[int]]) -> float:
    return sum(a == b for a, b in zip(ours, other)) / len(ours)


@dataclasses.dataclass
class DecoderCall:
    rows: int
    seconds: float | None  # None when not timed


@contextlib.contextmanager
def decoder_calls(model, device: str | None = None):
    """Records every decoder call made to ``model``'s forward inside the block: its number of rows and, with
    ``device``, the seconds it took (``device`` synchronized around it, which a timed run must not pay)."""
    calls, started = [], []

    def before(module, args, kwargs):
        if device is not None:
            synchronize(device)
            started.append(time.perf_counter())
        calls.append(DecoderCall(kwargs["decoder_input_ids"].shape[0], None))

    def after(module, args, kwargs, output):
        if device is not None:
            synchronize(device)
            calls[-1].seconds = time.perf_counter() - started.pop()

    handles = [model.register_forward_pre_hook(before, with_kwargs=True),
               model.register_forward_hook(after, with_kwargs=True)]
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def decoder_step_seconds(model, source: list[int], rows: int, device: str) -> float:
    """Median time of one cached decoder step (the model's forward and the log-softmax, as every search here does
    it) on ``rows`` copies of ``source``."""
    ids = torch.tensor([source] * rows, device=device)
    encoder_outputs = encode(model, ids, None)
    tokens = torch.full((rows, 1), model.config.decoder_start_token_id, device=device)
    _, cache = decoder_step(model, encoder_outputs, None, tokens, None)
    return time_call(lambda: decoder_step(model, encoder_outputs, None, tokens, cache), device, repeats=9, warmup=2)


def decoder_step_bound(model, source: list[int], generate_rows: list[int], search_rows: list[int],
                       device: str) -> dict:
    """The speed-up of ``generate()`` over a per-sentence search if each spent its time in its decoder calls only,
    each costing the model's step time at its number of rows: no search bookkeeping, no encoder, no Python. Its two
    factors: how many more rows ``generate()`` computes (every row of a batch runs until the batch's last sentence
    is done) and how much cheaper a row is in a batch (matrix products instead of matrix-vector products)."""
    step = {rows: decoder_step_seconds(model, source, rows, device) for rows in {*generate_rows, *search_rows}}
    batch_rows = max(generate_rows)
    return {
        "decoder_step_bound": round(sum(map(step.get, search_rows)) / sum(map(step.get, generate_rows)), 2),
        "decoder_rows_generate_vs_per_sentence": round(sum(generate_rows) / sum(search_rows), 2),
        f"row_cost_1_vs_{batch_rows}_rows": round(step[1] / (step[batch_rows] / batch_rows), 2),
    }


def run_translation(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets, profiles = [], {}, [], {}
    for cell_type in sizes.cell_types:
        model, tokenizer, train_loss = trained_model(cell_type, sizes, device, settings.seed, not settings.smoke)
        sources = test2016_sources(tokenizer, sizes.num_sentences)
        # Batched decoding runs until the longest output of a batch is done; batching sentences of similar source
        # length (as fairseq's generate does) wastes fewer steps. The per-sentence searches do not care.
        by_length = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        static = functools.partial(generate_beam, cache_implementation="static")
        methods = {"generate": generate_beam, "generate_sorted": generate_beam,
                   "generate_static": static, "generate_static_sorted": static,
                   "naive": functools.partial(per_sentence, naive_beam_search),
                   "matched": functools.partial(per_sentence, matched_beam_search), "hand": hand_batched}
        outputs = {name: {} for name in methods}
        seconds = dict.fromkeys(methods, 0.0)
        calls = {"generate": [], "matched": []}  # every decoder call (a hook, microseconds)

        def batch(name: str, start: int) -> tuple[list[int], torch.Tensor, torch.Tensor]:
            chosen = (by_length if name.endswith("_sorted") else range(len(sources)))[start:start + sizes.batch_size]
            return chosen, *next(batches([sources[i] for i in chosen], len(chosen), model.config.pad_token_id, device))

        with torch.no_grad():
            first = next(batches(sources[:2], 2, model.config.pad_token_id, device))
            for method in methods.values():
                method(model, *first, sizes)  # warm-up
            # On a GPU the static cache's decoding step is captured as a CUDA graph for each new shape of a batch:
            # an untimed first pass over the batches, whose time is reported.
            first_pass = dict.fromkeys(("generate_static", "generate_static_sorted"), 0.0)
            for name in first_pass:
                for start in range(0, len(sources), sizes.batch_size):
                    _, ids, mask = batch(name, start)
                    first_pass[name] += timed(lambda: methods[name](model, ids, mask, sizes), device)[1]
            # Batch by batch, every method in turn, so that a shared machine's load falls on all alike.
            for start in range(0, len(sources), sizes.batch_size):
                for name, method in methods.items():
                    chosen, ids, mask = batch(name, start)
                    with decoder_calls(model) as made:
                        result, elapsed = timed(lambda: method(model, ids, mask, sizes), device)
                    calls.get(name, []).extend(made)
                    outputs[name].update(zip(chosen, result))
                    seconds[name] += elapsed
            ids, mask = next(batches(sources[: sizes.batch_size], sizes.batch_size, model.config.pad_token_id, device))
            label = f"attention {cell_type.upper()} ({sizes.attention_type})"
            profiles[f"{label}, generate() on the first batch (torch.profiler)"] = op_profile(
                lambda: generate_beam(model, ids, mask, sizes))
            profiles[f"{label}, matched per-sentence search, 4 sentences (torch.profiler)"] = op_profile(
                lambda: per_sentence(matched_beam_search, model, ids[:4], mask[:4], sizes))
            median_source = sorted(sources, key=len)[len(sources) // 2]
            bound = decoder_step_bound(model, median_source, *([call.rows for call in calls[name]]
                                                               for name in ("generate", "matched")), device)
        outputs = {name: [found[i] for i in range(len(sources))] for name, found in outputs.items()}
        names = {"generate": f"generate(num_beams={sizes.num_beams}), batches of {sizes.batch_size} in test order",
                 "generate_sorted": f"generate(num_beams={sizes.num_beams}), batches of {sizes.batch_size} sorted "
                                    "by source length",
                 "generate_static": f"generate(num_beams={sizes.num_beams}, cache_implementation='static'), batches "
                                    f"of {sizes.batch_size} in test order",
                 "generate_static_sorted": f"generate(num_beams={sizes.num_beams}, cache_implementation='static'), "
                                           f"batches of {sizes.batch_size} sorted by source length",
                 "naive": "per-sentence naive tutorial search", "matched": "per-sentence matched search",
                 "hand": f"hand batched beam loop, batches of {sizes.batch_size} in test order"}
        for name, search in names.items():
            rows.append({"model": label, "search": search,
                         "sentences_per_s": round(len(sources) / seconds[name], 2),
                         "time_vs_generate": round(seconds[name] / seconds["generate"], 2),
                         "same_best_as_generate": round(agreement(outputs["generate"], outputs[name]), 4)})
        summary[label] = {
            "speedup_vs_naive": round(seconds["naive"] / seconds["generate"], 2),
            "speedup_vs_matched": round(seconds["matched"] / seconds["generate"], 2),
            "sorted_speedup_vs_naive": round(seconds["naive"] / seconds["generate_sorted"], 2),
            "sorted_speedup_vs_matched": round(seconds["matched"] / seconds["generate_sorted"], 2),
            "agreement_naive": round(agreement(outputs["generate"], outputs["naive"]), 4),
            "agreement_matched": round(agreement(outputs["generate"], outputs["matched"]), 4),
            "agreement_hand_batched": round(agreement(outputs["generate"], outputs["hand"]), 4),
            "agreement_sorted_batches": round(agreement(outputs["generate"], outputs["generate_sorted"]), 4),
            "static_speedup_vs_matched": round(seconds["matched"] / seconds["generate_static"], 2),
            "static_sorted_speedup_vs_matched": round(seconds["matched"] / seconds["generate_static_sorted"], 2),
            "agreement_static": round(agreement(outputs["generate"], outputs["generate_static"]), 4),
            "static_first_pass_s": {name: round(value, 2) for name, value in first_pass.items()},
            **bound,
            "mean_output_length": round(sum(map(len, outputs["generate"])) / len(sources), 2),
            "train_loss": round(train_loss, 3),
        }
        wanted = 40 if device.startswith("cuda") else 20
        for key, how in (("speedup_vs_matched", "generate() (test order"),
                         ("sorted_speedup_vs_matched", "generate() (length-sorted"),
                         ("static_speedup_vs_matched", "generate(cache_implementation='static') (test order"),
                         ("static_sorted_speedup_vs_matched", "generate(cache_implementation='static') (length-sorted")):
            targets.append(target(f"{label}: {how} batches of {sizes.batch_size}) vs per-sentence matched search",
                                  summary[label][key], minimum=wanted))
        targets.append(target(f"{label}: same best hypothesis as the matched search",
                              summary[label]["agreement_matched"], minimum=0.99))
    result = entry_result(
        "Translation decoding: batched generate() vs per-sentence beam search (Multi30k test2016)",
        sizes, rows, summary, targets,
        notes=(f"first {sizes.num_sentences} test2016 sentences, beam {sizes.num_beams}, max_new_tokens "
               f"{sizes.max_new_tokens}, length_penalty 1.0, early_stopping=True; models trained "
               f"{sizes.train_steps} steps. time_vs_generate = that search's time / generate()'s on batches in test "
               "order. cache_implementation='static': on a GPU the model replays its decoding steps as CUDA graphs, "
               "timed after an untimed first pass over the same batches (static_first_pass_s). decoder_step_bound = "
               "the speed-up over the matched search if both made only their decoder calls (counted in the timed "
               "pass), each costing the model's step time at its number of rows (timed on the median-length "
               "source): its factors are decoder_rows_generate_vs_per_sentence (rows of a batch keep running until "
               "its last sentence is done) and row_cost_1_vs_N_rows (a row alone vs in a batch)."),
    )
    result["profiles"] = profiles
    return result


def profile_top(fn, limit: int = 12) -> list[str]:
    """cProfile of ``fn()``: the functions with the most own time, as 'own_s cumulative_s calls name' lines."""
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    entries = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:limit]
    return [f"{own:.4f}s own {cumulative:.4f}s cum {calls} calls {file.split('site-packages/')[-1]}:{line} {name}"
            for (file, line, name), (_, calls, own, cumulative, _) in entries]


SPLIT_SENTENCES = 8  # of batch1_overhead's, for the split of the time inside and outside the decoder calls


def run_batch1(settings: Settings) -> dict:
    sizes = resolve_sizes(Sizes(), SMOKE, settings)
    device = settings.device
    rows, summary, targets, profiles = [], {}, [], {}
    for cell_type in sizes.cell_types:
        model, tokenizer, _ = trained_model(cell_type, sizes, device, settings.seed, not settings.smoke)
        sources = [torch.tensor([s], device=device) for s in test2016_sources(tokenizer, sizes.batch1_sentences)]
        config = model.config
        label = f"attention {cell_type.upper()} ({sizes.attention_type})"

        def gen(source, beams, **options):
            beam_options = {"early_stopping": True, "length_penalty": 1.0} if beams > 1 else {}
            sequences = model.generate(source, num_beams=beams, do_sample=False, max_new_tokens=sizes.max_new_tokens,
                                       **beam_options, **options)
            return strip(sequences[0, 1:].tolist(), config)

        beams = sizes.num_beams
        modes = {
            "greedy": {
                "generate": lambda s: gen(s, 1),
                "generate_static": lambda s: gen(s, 1, cache_implementation="static"),
                "hand": lambda s: strip(hand_greedy(model, s, None, sizes.max_new_tokens)[0].tolist(), config),
            },
            f"beam {beams}": {
                "generate": lambda s: gen(s, beams),
                "generate_static": lambda s: gen(s, beams, cache_implementation="static"),
                "hand": lambda s: strip(hand_beam_search(model, s, None, beams, sizes.max_new_tokens)[0], config),
            },
        }
        for mode, fns in modes.items():
            outputs = {name: [] for name in fns}
            seconds, first_pass = dict.fromkeys(fns, 0.0), dict.fromkeys(fns, 0.0)
            with torch.no_grad():
                # An untimed first pass over every sentence: on a GPU the static cache's step is captured there as a
                # CUDA graph for each source length (its time is reported as first_pass_s).
                for source in sources:
                    for name, fn in fns.items():
                        first_pass[name] += timed(lambda: fn(source), device)[1]
                # Sentence by sentence, the methods in turn, so that a shared machine's load falls on all alike.
                for source in sources:
                    for name, fn in fns.items():
                        result, elapsed = timed(lambda: fn(source), device)
                        outputs[name].append(result)
                        seconds[name] += elapsed
                # Where the time goes, on the first sentences: inside the model's decoder calls (the same calls for
                # every method) or outside them (the search's own work, the encoder, Python).
                inside, total = dict.fromkeys(fns, 0.0), dict.fromkeys(fns, 0.0)
                for source in sources[:SPLIT_SENTENCES]:
                    for name, fn in fns.items():
                        with decoder_calls(model, device) as made:
                            total[name] += timed(lambda: fn(source), device)[1]
                        inside[name] += sum(call.seconds for call in made)
                split_tokens = sum(len(o) + 1 for o in outputs["generate"][:SPLIT_SENTENCES])
                for name in ("generate", "generate_static"):
                    profiles[f"{label}, {mode}, {name} (cProfile, own time)"] = profile_top(
                        lambda: [fns[name](s) for s in sources[:4]])
                tokens_first = len(outputs["generate"][0]) + 1
                ops = {name: count_ops(lambda: fn(sources[0])) / tokens_first for name, fn in fns.items()}
            tokens = sum(len(o) + 1 for o in outputs["generate"])
            for name, description in (("generate", "generate()"),
                                      ("generate_static", "generate(cache_implementation='static')")):
                ratio = seconds["hand"] / seconds[name]
                rows.append({"model": label, "mode": mode, "generate": description,
                             "generate_ms_per_sentence": round(seconds[name] / len(sources) * 1e3, 2),
                             "hand_loop_ms_per_sentence": round(seconds["hand"] / len(sources) * 1e3, 2),
                             "generate_speed_vs_hand_loop": round(ratio, 3),
                             "generate_ms_per_output_token": round(seconds[name] / tokens * 1e3, 3),
                             "first_pass_s": round(first_pass[name], 2),
                             "generate_model_ms_per_token": round(inside[name] / split_tokens * 1e3, 3),
                             "generate_other_ms_per_token": round((total[name] - inside[name]) / split_tokens * 1e3,
                                                                  3),
                             "hand_loop_model_ms_per_token": round(inside["hand"] / split_tokens * 1e3, 3),
                             "hand_loop_other_ms_per_token": round((total["hand"] - inside["hand"]) / split_tokens
                                                                   * 1e3, 3),
                             "generate_ops_per_token": round(ops[name], 1),
                             "hand_loop_ops_per_token": round(ops["hand"], 1),
                             "same_output": round(agreement(outputs[name], outputs["hand"]), 4)})
                targets.append(target(f"{label}, {mode}, batch 1: {description} speed / hand loop speed", ratio,
                                      minimum=0.9))
        summary[label] = {f"{row['mode']}, {row['generate']}": row["generate_speed_vs_hand_loop"]
                          for row in rows if row["model"] == label}
    result = entry_result(
        "Batch-1 overhead: generate() vs a plain hand decoding loop on the same model",
        sizes, rows, summary, targets,
        notes=(f"{sizes.batch1_sentences} test2016 sentences one at a time, after an untimed first pass over them "
               "(first_pass_s); the hand loops call the model's forward with the default cache exactly as "
               "generate() does (benchmarks/beam_search.py). cache_implementation='static' keeps the recurrent state "
               "at fixed addresses, and on a GPU the model then replays its decoding steps as CUDA graphs; the hand "
               "loops use the default cache (no graphs). Ratio > 1: generate() faster. ops = aten operators "
               "called from Python per output token, on the first sentence. model_ms / other_ms per token: time "
               f"inside the model's decoder calls / outside them, on the first {SPLIT_SENTENCES} sentences in a "
               "separate pass (synchronized at each call)."),
    )
    result["profiles"] = profiles
    return result
