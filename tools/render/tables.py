"""Every table of figures in README.md and docs/*.md: which results file and key path each cell comes from.

`DOCUMENTS` maps each Markdown file to its tables (see `tools.render.figures` for the cells and markers).
``python -m tools.render`` renders them (and ``model_cards/``); ``--check`` only compares.
"""

import json
import subprocess
import textwrap

from benchmarks.peers import report as peers_report
from hf_seqmodels.cards.results import run_commit
from hf_seqmodels.provenance import BACKFILLED

from .figures import REPO_ROOT, Figure, Join, MeanSd, OnGpu, OverRows, Ratio, Table, Text, Words, load, lookup
from .labels import Code, Device, Entries, Same, Seeds, Split

BENCH, GPU_BENCH = "results/benchmarks.json", "results/gpu/benchmarks.json"
LOOP, GPU_LOOP = "results/decoding_loop.json", "results/gpu/decoding_loop.json"
GRU = "attention GRU (luong_general)"  # the label under which the decoding entries file the timed model
TRANSLATION = ("entries", "translation")
BATCH1 = ("entries", "batch1_overhead")
TIMED_MODEL = ("summary", GRU, "model", "test_bleu")  # the timed model's identity in a decoding entry


def ratio(entry: tuple, *keys) -> Ratio:
    """A ratio of the decoding entries, filed under the timed model's label."""
    return Ratio(BENCH, entry + ("summary", GRU) + keys)


def suite(name: str, model: str, metric: str, percent: bool = False) -> MeanSd:
    """A ``compare.py`` suite's row: the model's test score, mean ± sd over its seeds."""
    return MeanSd(f"results/{name}.json", ("rows", {"name": model}, metric), percent)


MAIN_JOB_FILE = "results/translation_bleu.json"


def main_job(cell: str, key: str = "test_bleu") -> OverRows:
    return OverRows(MAIN_JOB_FILE, ("rows",), {"cell_type": cell}, key)


def main_job_entries(cell: str | None = None) -> Entries:
    """The main job's rows (one per model and seed) of ``cell``, or all of them."""
    return Entries(MAIN_JOB_FILE, ("rows",), {"cell_type": cell} if cell else {})


# task, models, the entries of each figure, their score key, and the figures (a Join)
QUALITY_ROWS = (
    ("Multi30k En→De BLEU, the main job (`hf_seqmodels.comparison.translation_bleu`)", "attention GRU / LSTM",
     (main_job_entries("gru"), main_job_entries("lstm")), "test_bleu", Join((main_job("gru"), main_job("lstm")))),
    ("Multi30k En→De BLEU, `compare.py translation` (CPU budget)", "attention GRU / Transformer / MarianMTModel",
     (Entries("results/translation.json"),), "test_bleu",
     Join(tuple(suite("translation", m, "test_bleu") for m in ("Attention GRU", "Transformer", "Marian")))),
    ("Tatoeba En→Zh BLEU (tok zh), `compare.py en_zh`", "attention GRU / Transformer",
     (Entries("results/en_zh.json"),), "test_bleu",
     Join(tuple(suite("en_zh", m, "test_bleu") for m in ("Attention GRU", "Transformer")))),
    ("PTB perplexity, `compare.py lm` (CPU budget)", "LSTM / GRU / Transformer",
     (Entries("results/lm.json"),), "test_perplexity",
     Join(tuple(suite("lm", m, "test_perplexity") for m in ("LSTM", "GRU", "Transformer")))),
    ("SST-2 accuracy (%), `compare.py sentiment`", "BiLSTM / BERT (MiniLM-L6)",
     (Entries("results/sentiment.json"),), "test_accuracy",
     Join(tuple(suite("sentiment", m, "test_accuracy", True) for m in ("BiLSTM", "BERT (MiniLM-L6)")))),
    ("UD EWT UPOS accuracy (%), `compare.py upos`", "BiLSTM-CRF / BERT (MiniLM-L6)",
     (Entries("results/upos.json"),), "test_accuracy",
     Join(tuple(suite("upos", m, "test_accuracy", True) for m in ("BiLSTM-CRF", "BERT (MiniLM-L6)")))),
)


def every_item(entries: Entries) -> Entries:
    """The entries ``entries`` are drawn from: every item of their list (the main job's rows of every model), or the
    whole file."""
    return Entries(entries.file, entries.path, {} if entries.select is not None else None)


def quality_figures() -> list[tuple[Entries, str]]:
    """Every figure of the quality table: its entries and its score key."""
    return [(entries, key) for _, _, all_entries, key, _ in QUALITY_ROWS for entries in all_entries]


def quality_markdown() -> str:
    """README's quality table and the sentence that says what its figures are, both read from their entries (the
    same for every figure: `Same`)."""
    split = Same(tuple(Split(entries, key) for entries, key in quality_figures()), "splits")
    chosen = Same(tuple(Split(entries, key, chosen_on=True) for entries, key in quality_figures()), "splits chosen on")
    seeds = Same(tuple(Seeds(entries) for entries, _ in quality_figures()), "seeds")
    lead = textwrap.fill(
        f"{split.text().capitalize()}-split scores, mean ± sample standard deviation over seeds {seeds.text()}, each "
        f"model chosen on the {chosen.text()} split, trained within the budget of its suite on the device its row "
        "names (budgets, signatures and every model of every suite: [docs/results.md](docs/results.md)):", width=118,
        break_long_words=False, break_on_hyphens=False)
    table = Table((Join(("task (", split, " split)"), sep=""), "models",
                   Join(("score: mean ± sd over seeds ", seeds), sep=""), "trained on", "code"),
                  tuple((task, models, figures, Device(every_item(entries[0])), Code(every_item(entries[0])))
                        for task, models, entries, _, figures in QUALITY_ROWS))
    return lead + "\n\n" + table.render()


QUALITY = Text(quality_markdown)


def provenances(node) -> list[dict]:
    """Every provenance a results file holds (its own, its entries', its runs'), depth first."""
    if isinstance(node, list):
        return [found for item in node for found in provenances(item)]
    if not isinstance(node, dict):
        return []
    own = [node["provenance"]] if isinstance(node.get("provenance"), dict) else []
    return own + [found for key, value in node.items() if key != "provenance" for found in provenances(value)]


def backfilled_rows() -> list[tuple[str, str, str]]:
    """Per results file holding entries written before provenance was recorded: how many of its provenances are
    backfilled, of all it holds."""
    rows = []
    for path in sorted((REPO_ROOT / "results").glob("*.json")):
        found = provenances(load(f"results/{path.name}"))
        old = sum(provenance.get("recorded") == BACKFILLED for provenance in found)
        if old:
            rows.append((f"`results/{path.name}`", str(old), str(len(found))))
    return rows


BACKFILLED_TABLE = Table(("results file", "entries backfilled (older code, no commit)", "entries"), backfilled_rows)

QUICKSTART_RUN = {"cell_type": "gru", "seed": 42}  # scripts/quickstart.sh: run_translation.py's defaults, seed 42


def quickstart_markdown() -> str:
    """README's expectation of the quick start: the main job's run it repeats (its test BLEU, training minutes and
    device, read from the entry)."""
    row = ("rows", QUICKSTART_RUN)
    run = Entries(MAIN_JOB_FILE, ("rows",), QUICKSTART_RUN)
    return textwrap.fill(
        f"Expect test2016 BLEU near {Figure(MAIN_JOB_FILE, row + ('test_bleu',)).text()} after "
        f"{Figure(MAIN_JOB_FILE, row + ('train_runtime_s',), 0, per=60).text()} minutes of training on "
        f"{Device(run).text()}: the main job's run the quick start repeats (seed 42 in `{MAIN_JOB_FILE}`; the "
        f"{Split(run, 'test_bleu').text()} split, beam 5).", width=118, break_long_words=False,
        break_on_hyphens=False)


QUICKSTART = Text(quickstart_markdown)

OUR_LOOP = ratio(TRANSLATION, "custom_sorted_speedup_vs_beams_batched")
GENERATE = ratio(TRANSLATION, "sorted_speedup_vs_beams_batched")
BATCH1_OURS = Join((ratio(BATCH1, "greedy, generate(custom_generate=decode)"),
                    ratio(BATCH1, "beam 5, generate(custom_generate=decode)")))
BATCH1_GENERATE = Join((ratio(BATCH1, "greedy, generate()"), ratio(BATCH1, "beam 5, generate()")))
LOOP_BATCHED = Ratio(LOOP, ("beam_batched", "speedup_ours"), ("beam_batched", "speedup_ours_iqr"))
MARIAN = Join(tuple(Ratio(BENCH, ("entries", "transformer_vs_marian", "summary", key))
                    for key in ("train", "greedy", "beam")))
LM_TRAINING = Ratio(BENCH, ("entries", "training", "summary", "masked_vs_tutorial_fused_throughput"))


def speed_row(what: str, figure, run: tuple, model: tuple, gpu_file: str = GPU_BENCH) -> tuple:
    """A row of the speed tables: what it measures, the CPU figure and its GPU counterpart (`OnGpu`)."""
    return what, figure, OnGpu(figure, gpu_file, run, model)


TRAINING, INCREMENTAL, MARIAN_ENTRY = (("entries", "training"), ("entries", "incremental"),
                                      ("entries", "transformer_vs_marian"))
SIZES = ("sizes",)  # a synthetic benchmark's model is its sizes (random weights)
FASTEST = "per_sentence_fastest"  # the headline baseline, where the entry chose it (docs/provenance.md)


def headline_rows() -> tuple:
    """Our loop against the entry's headline baseline: the fastest per-sentence search where the entry chose one
    (``per_sentence_fastest``), else the per-sentence search with its beams batched."""
    summary = load(BENCH)["entries"]["translation"]["summary"][GRU]
    if FASTEST not in summary:  # a run from before the searches took turns on every sentence (docs/decoding.md)
        return (speed_row("our decoding loop, batched beam 5, vs the per-sentence search with its beams batched "
                          "(same outputs; a run that took turns by whole passes)", OUR_LOOP, TRANSLATION,
                          TIMED_MODEL),)
    which = f" (`{summary[FASTEST]}`)" if isinstance(summary[FASTEST], str) else ""
    return (speed_row(f"our decoding loop, batched beam 5, vs the fastest per-sentence search{which} (same outputs)",
                      ratio(TRANSLATION, f"custom_sorted_speedup_vs_{FASTEST}"), TRANSLATION, TIMED_MODEL),
            speed_row("our decoding loop, batched beam 5, vs the per-sentence search with its beams batched",
                      OUR_LOOP, TRANSLATION, TIMED_MODEL))


OTHER_ROWS = (
    speed_row("batched `generate(num_beams=5)` vs the per-sentence search with its beams batched (same outputs)",
              GENERATE, TRANSLATION, TIMED_MODEL),
    speed_row("batch 1: our loop vs a hand decoding loop, greedy / beam 5 (target 1.0)", BATCH1_OURS, BATCH1,
              TIMED_MODEL),
    speed_row(Join(("our loop vs `generate()`'s own, batched beam 5, on the whole test set (identical outputs), "
                    "timing ", Words(LOOP, ("model", "model_dir"), code=True), " (test BLEU ",
                    Figure(LOOP, ("model", "test_bleu")), ")"), sep=""),
              LOOP_BATCHED, (), ("model", "test_bleu"), GPU_LOOP),
    speed_row("our Transformer vs MarianMTModel of equal size: training / greedy / beam", MARIAN, MARIAN_ENTRY,
              SIZES),
    speed_row("LSTM LM training on padded batches vs a tutorial LM on the fused `nn.LSTM`", LM_TRAINING, TRAINING,
              SIZES),
)


def speed_header(rows: tuple) -> tuple:
    """The speed tables' header: the CPU column's device, as the entries of its rows record it."""
    cpu = Same(tuple(Device(Entries(gpu.figure_file(), gpu.run)) for _, _, gpu in rows), "devices")
    return "speed ratio (> 1: ours faster); median of interleaved rounds (IQR)", cpu, "GPU"


def speed_rows() -> tuple:
    return headline_rows() + OTHER_ROWS


def speed_all_rows() -> tuple:
    return speed_rows() + SPEED_ONLY_IN_RESULTS


SPEED = Table(lambda: speed_header(speed_rows()), speed_rows)
SPEED_ONLY_IN_RESULTS = (
    speed_row("batch 1: `generate()` vs the same hand loop, greedy / beam 5", BATCH1_GENERATE, BATCH1, TIMED_MODEL),
    speed_row("batched `generate()` / our loop vs a per-sentence search calling the decoder once per hypothesis",
              Join((ratio(TRANSLATION, "sorted_speedup_vs_per_hypothesis"),
                    ratio(TRANSLATION, "custom_sorted_speedup_vs_per_hypothesis"))), TRANSLATION, TIMED_MODEL),
    speed_row("our loop vs `generate()`'s own at batch 1: beam 5 / greedy",
              Join(tuple(Ratio(LOOP, (key, "speedup_ours"), (key, "speedup_ours_iqr"))
                         for key in ("beam_batch1", "greedy_batch1"))), (), ("model", "test_bleu"), GPU_LOOP),
    speed_row("batch 1 with `cache_implementation=\"static\"`: our loop vs the hand loop, greedy / beam 5",
              Join((ratio(BATCH1, "greedy, generate(custom_generate=decode, cache_implementation='static')"),
                    ratio(BATCH1, "beam 5, generate(custom_generate=decode, cache_implementation='static')"))),
              BATCH1, TIMED_MODEL),
    speed_row("LSTM LM training vs a tutorial `nn.LSTMCell` loop",
              Ratio(BENCH, TRAINING + ("summary", "masked_vs_tutorial_cell_loop_throughput")), TRAINING, SIZES),
    speed_row("recurrent LM, cached `generate()`: time per token after 1024 tokens / after 16",
              Ratio(BENCH, INCREMENTAL + ("summary", "recurrent LM (lstm)", "per_token_growth_1024_vs_16", "cached")),
              INCREMENTAL, SIZES),
    speed_row("recurrent LM: cache vs recomputing the prefix, at 1024 tokens",
              Ratio(BENCH, INCREMENTAL + ("summary", "recurrent LM (lstm)", "cache_speedup_at_1024")), INCREMENTAL,
              SIZES),
)
SPEED_ALL = Table(lambda: speed_header(speed_all_rows()), speed_all_rows)

TRANSLATION_SUMMARY = TRANSLATION + ("summary", GRU)
BEAM5_OURS = BATCH1 + ("rows", {"mode": "beam 5", "generate": "generate(custom_generate=decode)"})


def chosen_batch_rows() -> tuple:
    """The batch size the entry chose on validation sentences, and our loop's speed there."""
    chosen = str(lookup(load(BENCH), TRANSLATION_SUMMARY + ("batch_size",), BENCH))
    return (("batch size chosen on validation sentences", Figure(BENCH, TRANSLATION_SUMMARY + ("batch_size",))),
            ("our loop's validation sentences/s at that batch size (median)",
             Figure(BENCH, TRANSLATION_SUMMARY + ("valid_sentences_per_s_by_batch_size", chosen, "median"))))


DECODING_DEVICE = Same(tuple(Device(Entries(file, path)) for file, path in ((BENCH, TRANSLATION), (BENCH, BATCH1),
                                                                          (LOOP, ()))), "devices")
DECODING = Table((Join(("measure (entries of `results/benchmarks.json` and `results/decoding_loop.json`, ",
                        DECODING_DEVICE, ")"), sep=""), "value"), lambda: chosen_batch_rows() + DECODING_ROWS)
DECODING_ROWS = (
    ("a decoder row's cost among 5 (one sentence's beams) / in a batch of 1280 rows",
     Ratio(BENCH, TRANSLATION_SUMMARY + ("row_cost_5_vs_1280_rows",))),
    ("decoder rows batched `generate()` computes / rows the per-sentence search computes",
     Figure(BENCH, TRANSLATION_SUMMARY + ("decoder_rows_generate_vs_beams_batched",))),
    ("what the decoder calls alone would make batched `generate()` vs that search",
     Ratio(BENCH, TRANSLATION_SUMMARY + ("decoder_step_bound_vs_beams_batched",))),
    ("mean output length (tokens)", Figure(BENCH, TRANSLATION_SUMMARY + ("mean_output_length",))),
    ("`results/decoding_loop.json`: test sentences our loop and `generate()`'s own both translated, beam 5 / greedy",
     Join((Figure(LOOP, ("agreement_beam", "sentences")), Figure(LOOP, ("agreement_greedy", "sentences"))))),
    ("of those, identical outputs (%), beam 5 / greedy",
     Join((Figure(LOOP, ("agreement_beam", "identical_outputs_percent"), 1),
           Figure(LOOP, ("agreement_greedy", "identical_outputs_percent"), 1)))),
    ("largest beam score difference between the two loops",
     Words(LOOP, ("agreement_beam", "max_score_difference"))),
    ("aten operators per output token at batch 1, beam 5, first sentence: our loop / the hand loop",
     Join((Figure(BENCH, BEAM5_OURS + ("generate_ops_per_token",), 1),
           Figure(BENCH, BEAM5_OURS + ("hand_loop_ops_per_token",), 1)))),
    ("`generate()`'s own set-up at batch 1, ms a sentence: greedy / beam 5",
     Join(tuple(Figure(BENCH, BATCH1 + ("rows", {"mode": mode, "generate": "generate()"},
                                        "generate_setup_ms_per_sentence")) for mode in ("greedy", "beam 5")))),
    ("batch 1, our loop vs the hand loop without that set-up: greedy / beam 5",
     Join(tuple(Figure(BENCH, BATCH1 + ("rows", {"mode": mode, "generate": "generate(custom_generate=decode)"},
                                        "speed_vs_hand_loop_without_setup"), places=3)
                for mode in ("greedy", "beam 5")))),
)


def main_job_rows() -> list:
    """One row per model and seed of the main job, then each model's mean ± sd."""
    rows = [(f"attention {row['cell_type'].upper()}", str(row["seed"]),
             *(Figure(MAIN_JOB_FILE, ("rows", {"seed": row["seed"], "cell_type": row["cell_type"]}, key))
               for key in ("test_bleu", "test_chrf", "epochs")))
            for row in load(MAIN_JOB_FILE)["rows"]]
    return rows + [(f"attention {cell.upper()}", "mean ± sd", main_job(cell), main_job(cell, "test_chrf"), "")
                   for cell in ("gru", "lstm")]


def split_header(entries: Entries, key: str, what: str) -> Join:
    """A column header that names the split its figures (``key`` of ``entries``) were scored on: "test BLEU"."""
    return Join((Split(entries, key), what), sep=" ")


MAIN_JOB = Table(("model", "seed", split_header(main_job_entries(), "test_bleu", "BLEU"),
                  split_header(main_job_entries(), "test_chrf", "chrF"), "epochs"), main_job_rows)

# suite -> (test score keys, whether each is a fraction shown in percent)
SUITES = {
    "translation": (("test_bleu", False), ("test_chrf", False)),
    "en_zh": (("test_bleu", False), ("test_chrf", False)),
    "zh_en": (("test_bleu", False), ("test_chrf", False)),
    "lm": (("test_perplexity", False),),
    "sentiment": (("test_accuracy", True),),
    "ner": (("test_accuracy", True),),
    "upos": (("test_accuracy", True),),
    "wnut17": (("test_seqeval_f1", True),),
    "sst2_word_vectors": (("test_accuracy", True),),
}


def suite_table(name: str) -> Table:
    """Every model of ``compare.py <name>``: its test scores, epochs and training seconds, mean ± sd over seeds."""
    file, metrics = f"results/{name}.json", SUITES[name]

    def rows() -> list:
        return [(row["name"], *(suite(name, row["name"], key, percent) for key, percent in metrics),
                 MeanSd(file, ("rows", {"name": row["name"]}, "epochs")),
                 MeanSd(file, ("rows", {"name": row["name"]}, "train_runtime_s")))
                for row in load(file)["rows"]]

    header = tuple(key.removeprefix("test_") + (" (%)" if percent else "") for key, percent in metrics)
    return Table(("model", *header, "epochs", "training s"), rows)


SUITE_BUDGETS = Table(("suite", "scored on (chosen on)", "seeds", "runs at once x threads each",
                       "budget: minutes / epochs"), tuple(
    (f"`{name}`", Join((Split(Entries(f"results/{name}.json"), SUITES[name][0][0]), " (",
                        Split(Entries(f"results/{name}.json"), SUITES[name][0][0], chosen_on=True), ")"), sep=""),
     Seeds(Entries(f"results/{name}.json")),
     Join((Figure(f"results/{name}.json", ("jobs",)), Figure(f"results/{name}.json", ("num_threads",))), " x "),
     Join((Figure(f"results/{name}.json", ("budget", "time_budget_minutes"), 1),
           Figure(f"results/{name}.json", ("budget", "num_train_epochs")))))
    for name in SUITES))

OPTIONS_FILE = "results/multi30k_training_options.json"
OPTIONS_ROWS = Entries(OPTIONS_FILE, ("rows",), {})
OPTIONS_STEPS = Join(("attention GRU, ", Figure(OPTIONS_FILE, ("steps",)), " steps"), sep="")
TRAINING_OPTIONS = Table((Join((OPTIONS_STEPS, ", beam 5"), sep=""), split_header(OPTIONS_ROWS, "test_bleu", "BLEU"),
                          split_header(OPTIONS_ROWS, "test_chrf", "chrF")), tuple(
    (row, OverRows(OPTIONS_FILE, ("rows",), {"row": row}, "test_bleu"),
     OverRows(OPTIONS_FILE, ("rows",), {"row": row}, "test_chrf"))
    for row in ("teacher forcing", "scheduled sampling", "teacher forcing, last 5 checkpoints averaged")))
TRAINING_MINUTES = Table((OPTIONS_STEPS, "training minutes"), tuple(
    (row, OverRows(OPTIONS_FILE, ("rows",), {"row": row}, "minutes"))
    for row in ("teacher forcing", "scheduled sampling")))

TRAINING_SPEED_FILE = "results/translation_training.json"
TRAINING_SPEED = Table(
    ("one update of the main job (`python -m benchmarks.studies.translation_training`)", "CPU s per update",
     "source tokens per s"), tuple(
        (f"`{variant}`", Figure(TRAINING_SPEED_FILE, ("variants", variant, "cpu_s_per_update"), 3),
         Figure(TRAINING_SPEED_FILE, ("variants", variant, "tokens_per_wall_s"), 0))
        for variant in ("ours", "ours, LabelSmoother + per-parameter AdamW", "floor",
                        "floor, 128 per encoder direction")))

PEERS_FILE, PEERS_TIMING_FILE = "results/peers.json", "results/peers_timing.json"


def peers_rows() -> list:
    """A row per toolkit of `benchmarks.peers`: its test BLEU over the quality phase's seeds, and the training speed
    phase's median at its fastest thread count (the decoding comparison: docs/peers.md)."""
    return [(f"`{name}`" if name == "ours" else name, peers_configuration(name),
             Figure(PEERS_FILE, ("runs", {"toolkit": name, "seed": load(PEERS_FILE)["budget"]["seeds"][0]},
                                 "train", "parameters")),
             OverRows(PEERS_FILE, ("runs",), {"toolkit": name}, ("scores", "bleu", "score")),
             peers_speed(name))
            for name in load(PEERS_FILE)["toolkits"]]


def peers_speed(name: str):
    """``name``'s training tokens/s in the speed phase, at its fastest thread count; where the speed phase did not
    run it, the toolkits it ran."""
    timed = load(PEERS_TIMING_FILE)["training"]["median"]
    if name not in timed:
        return f"not measured yet (the speed phase ran {', '.join(timed)})"
    return Join((Figure(PEERS_TIMING_FILE, ("training", "median", name, "train_tokens_per_s"), 0),
                 Figure(PEERS_TIMING_FILE, ("training", "median", name, "train_threads"), unit=")")),
                sep=" (threads: ")


def peers_configuration(name: str) -> str:
    """How ``name``'s runs were configured, from their rows: the schedule, peak learning rate and length penalty its
    sweep chose on validation, or "untuned" (the main job's recipe in the toolkit's words)."""
    chosen = {(run["tuning"]["schedule"], run["tuning"]["learning_rate"], run["length_penalty"])
              for run in load(PEERS_FILE)["runs"] if run["toolkit"] == name and "tuning" in run}
    return "; ".join(f"{schedule}, peak {rate:g}, length penalty {alpha:g}" for schedule, rate, alpha in sorted(chosen)
                     ) or "untuned"


def peers_header() -> tuple:
    """The peers' header: the split of their BLEU and the seeds each toolkit's runs record (the same for all)."""
    seeds = Same(tuple(Seeds(Entries(PEERS_FILE, ("runs",), {"toolkit": name}))
                       for name in load(PEERS_FILE)["toolkits"]), "seeds")
    return ("toolkit, the main job's model and budget", "configuration (chosen on validation)", "parameters",
            Join((split_header(Entries(PEERS_FILE), "test_bleu", "BLEU"), ", mean ± sd over seeds ", seeds), sep=""),
            "training tokens/s")


PEERS = Table(peers_header, peers_rows)

SERVING_FILE = "results/peers_ctranslate2.json"


def serving_rows() -> list:
    """A row per engine of the CTranslate2 benchmark; "-" where the engine has no such figure (our loop is not
    scored: its outputs are generate()'s)."""
    rows = []
    for row in load(SERVING_FILE)["rows"]:
        where = ("rows", {"engine": row["engine"]})

        def cell(key: str, **style):
            return Figure(SERVING_FILE, where + (key,), **style) if key in row else "-"

        rows.append((f"`{row['engine']}`", cell("bleu"), cell("greedy_identical_to_generate_pct", places=1, unit="%"),
                     cell("beam_identical_to_generate_pct", places=1, unit="%"),
                     Ratio(SERVING_FILE, where + ("speedup_vs_generate",)),
                     Ratio(SERVING_FILE, where + ("speedup_vs_custom_generate",))))
    return rows


SERVING = Table(("engine", split_header(Entries(SERVING_FILE), "test_bleu", "BLEU"), "tokens = generate(), greedy",
                 "tokens = generate(), beam 5", "speed-up vs generate()", "vs custom_generate"), serving_rows)

PTB_FILE, PTB_VARIANTS = "results/ptb_lm.json", ("lstm", "gru", "lstm-awd", "gru-awd")
PTB_HEADER = Join(("PTB, ", Figure(PTB_FILE, ("budget_minutes",), 1), " minutes on ",
                   Same(tuple(Device(Entries(PTB_FILE, ("rows",), {"variant": variant})) for variant in PTB_VARIANTS),
                        "devices"), ", stateful"), sep="")
PTB_SPLITS = tuple(split_header(Entries(PTB_FILE, ("rows",), {}), key, "perplexity")
                   for key in ("test_perplexity", "validation_perplexity"))
PTB = Table((PTB_HEADER, *PTB_SPLITS, "minutes", "training"), tuple(
    (variant, *(Figure(PTB_FILE, ("rows", {"variant": variant}, key))
                for key in ("test_perplexity", "validation_perplexity", "minutes")),
     Words(PTB_FILE, ("rows", {"variant": variant}, "training")))
    for variant in PTB_VARIANTS))


def signature_rows() -> list:
    """The sacreBLEU signatures of each translation suite (its first model's first seed: one suite, one setting)."""
    rows = []
    for name in ("translation", "en_zh", "zh_en"):
        first = load(f"results/{name}.json")["runs"][0]
        where = ("runs", {"name": first["name"], "seed": first["seed"]})
        rows.append((f"`{name}`", *(Words(f"results/{name}.json", where + (key,), code=True)
                                    for key in ("bleu_signature", "chrf_signature"))))
    return rows


SIGNATURES = Table(("suite", "BLEU signature", "chrF signature"), signature_rows)


def target_rows() -> list:
    """Every target the benchmark entries set themselves (``targets``), with the entry's median and whether it is
    met."""
    rows = []
    for name, entry in load(BENCH)["entries"].items():
        for target in entry.get("targets", []):
            where = ("entries", name, "targets", {"name": target["name"]})
            rows.append((f"`{name}`", Words(BENCH, where + ("name",)), Figure(BENCH, where + ("value",), 3),
                         Words(BENCH, where + ("target",)), Words(BENCH, where + ("met",))))
    return rows


TARGETS = Table(("entry", "measure", "median", "target", "met"), target_rows)


def committed_versions(file: str) -> list[tuple[str, dict]]:
    """Every committed version of ``file``, newest first: (the commit that wrote it, its content)."""
    log = subprocess.run(["git", "-C", str(REPO_ROOT), "log", "--format=%h", "--", file], capture_output=True,
                         text=True, check=True).stdout.split()
    return [(commit, json.loads(subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{commit}:{file}"],
                                               capture_output=True, text=True, check=True).stdout))
            for commit in log]


# The headline figures under the names each run filed them: our loop vs the fastest per-sentence search (from the
# runs that chose it), our loop and `generate()` vs the per-sentence search with its beams batched; before
# 2026-11-26, `generate()` vs the "matched" search on a stand-in model.
HEADLINE_KEYS = (f"custom_sorted_speedup_vs_{FASTEST}", "custom_sorted_speedup_vs_beams_batched",
                 "sorted_speedup_vs_beams_batched", "sorted_speedup_vs_matched")


def median_text(node) -> str:
    if isinstance(node, dict):
        return f"{node['ratio']}x (IQR {node['quartiles'][0]}-{node['quartiles'][1]})"
    return "—" if node is None else f"{node}x"


def headline_history() -> list:
    """Every run of the headline entry (``translation``) that a commit of ``results/benchmarks.json`` holds, newest
    first, each once (a run is its ``ran_at``), with the commit that first wrote it and its code's commit."""
    runs: dict[str, tuple] = {}
    for commit, data in committed_versions(BENCH):
        entry = data.get("entries", {}).get("translation")
        if entry is None:
            continue
        summary = entry.get("summary", {}).get(GRU, {})
        code = run_commit(entry) or run_commit(data)
        model = summary.get("model", {}).get("test_bleu")
        runs[entry.get("ran_at", commit)] = (
            entry.get("ran_at", "?")[:16].replace("T", " "), f"`{code}`", f"`{commit}`",
            f"{model:.2f}" if model else "stand-in", str(summary.get("batch_size", entry["sizes"].get("batch_size"))),
            *(median_text(summary.get(key)) for key in HEADLINE_KEYS))
    return list(runs.values())


HISTORY = Table(("run (UTC)", "code", "results commit", "timed model's test BLEU", "batch",
                 "our loop vs the fastest per-sentence search", "our loop vs the beams-batched search",
                 "`generate()` vs the beams-batched search", "`generate()` vs the matched search"), headline_history)


def gpu_speed_rows() -> list:
    """What each GPU results file of the decoding entries holds, with the model and code it names."""
    rows = []
    for path in sorted((REPO_ROOT / "results" / "gpu").glob("benchmarks*.json")):
        file, data = f"results/gpu/{path.name}", load(f"results/gpu/{path.name}")
        entry = data.get("entries", {}).get("translation")
        if entry is None or GRU not in entry.get("summary", {}):
            continue
        machine = entry.get("machine") or data.get("machine", {})
        device = machine.get("gpu") or (entry.get("provenance") or {}).get("device", "?")
        rows.append((f"`{path.name}`", device, f"`{run_commit(entry) or run_commit(data)}`",
                     Figure(file, TRANSLATION + ("summary", GRU, "model", "test_bleu")),
                     Ratio(file, TRANSLATION + ("summary", GRU, "custom_sorted_speedup_vs_beams_batched")),
                     Ratio(file, TRANSLATION + ("summary", GRU, "sorted_speedup_vs_beams_batched")),
                     str(entry["summary"][GRU].get("batch_size", entry["sizes"].get("batch_size")))))
    return rows


GPU_SPEED = Table(("file", "GPU", "code", "timed model's test BLEU", "our loop vs per-sentence search",
                   "`generate()` vs per-sentence search", "batch"), gpu_speed_rows)


def gpu_quality_runs() -> list[tuple[str, Entries, int]]:
    """Each translation run of ``results/gpu/``: its label, its entry and the decimals of its epochs."""
    file = "results/gpu/translation_bleu.json"
    runs = [(f"`translation_bleu.json` attention {row['cell_type'].upper()}",
             Entries(file, ("rows",), {"cell_type": row["cell_type"]}), 0) for row in load(file)["rows"]]
    for path in sorted((REPO_ROOT / "results" / "gpu").glob("*.json")):  # a translation run's own results.json
        run = load(f"results/gpu/{path.name}")
        if "test_bleu" in run and "arguments" in run:
            model = " ".join(str(run["arguments"].get(key) or "") for key in ("model_type", "config_overrides"))
            runs.append((f"`{path.name}` {model.strip()}", Entries(f"results/gpu/{path.name}"), 1))
    return runs


def gpu_quality_rows() -> list:
    return [(label, Seeds(entries), Figure(entries.file, entries.figure_path("epochs"), places),
             Figure(entries.file, entries.figure_path("test_bleu"))) for label, entries, places in gpu_quality_runs()]


def gpu_quality_header() -> tuple:
    split = Same(tuple(Split(entries, "test_bleu") for _, entries, _ in gpu_quality_runs()), "splits")
    return "run (results/gpu/)", "seed", "epochs", Join((split, "BLEU"), sep=" ")


GPU_QUALITY = Table(gpu_quality_header, gpu_quality_rows)

DOCUMENTS = {
    "README.md": {"quickstart": QUICKSTART, "quality": QUALITY, "speed": SPEED, "peers": PEERS},
    "docs/results.md": {
        "main-job": MAIN_JOB, "speed-all": SPEED_ALL, "headline-history": HISTORY, "training-options": TRAINING_OPTIONS,
        "ptb": PTB, "gpu-speed": GPU_SPEED, "suite-budgets": SUITE_BUDGETS, "signatures": SIGNATURES,
        "targets": TARGETS, "gpu-quality": GPU_QUALITY, "backfilled": BACKFILLED_TABLE,
        **{f"suite-{name}": suite_table(name) for name in SUITES},
    },
    "docs/decoding.md": {"decoding": DECODING},
    "docs/training.md": {"training-minutes": TRAINING_MINUTES, "training-speed": TRAINING_SPEED},
    "docs/serving.md": {"serving": SERVING},
    # the peers' report renders this block when a run writes results/peers.json (benchmarks/peers/report.py)
    "docs/peers.md": {peers_report.DOCS_BLOCK: Text(lambda: peers_report.docs_block(load(PEERS_FILE),
                                                                                    load(PEERS_TIMING_FILE)))},
}
