"""The decoding grid's figures (results/peers_decoding.json, or the Transformer's peers_transformer_decoding.json,
written by `decoding_grid`): per row (a toolkit, or one of our engines), batch size and thread count the medians over
the rounds, and per pair of rounds whether ours was ahead of each other row; `markdown` renders them as one table
(report.py places it in peers.md and peers_transformer.md); `targets` and `int8_targets` are the decoding targets of
peers.md's targets table, `ctranslate2_targets` the Transformer's, beside its `best_batches` table.

    python -m benchmarks.peers.report_decoding results/peers_decoding.json     # prints the table
"""

import argparse
import json
import statistics
from pathlib import Path

from tools.render.figures import Table

BASELINE = "ours"
RESULTS = "peers_decoding.json"  # beside peers.json: `decoding_grid`'s --out in results/
INT8 = "int8_recurrent.json"  # beside it: benchmarks.studies.int8_recurrent's --out in results/
# The decoding targets against each peer, at every thread count the grid measured: the batch sizes each covers (in
# words, and which), and the least ratio of medians ours / peer it asks.
TARGETS = (("at batch 1", range(1, 2), 1.3), ("at every batch size from 16 to 256", range(16, 257), 1.2))
INT8_ENGINE = "ours_int8"  # the grid's row of our model quantized for serving
INT8_SPEEDUP, INT8_BLEU_GAP = 2.0, 0.3  # int8 against a peer's float32 at each one's best batch; its BLEU to ours
# The Transformer's: our CTranslate2 int8 row against the fastest peer's own decoder, each at its best batch.
CTRANSLATE2_INT8, CTRANSLATE2_SPEEDUP = "ours_ctranslate2_int8", 2.0


def sentences_per_second(measured: dict) -> float:
    return measured["sentences"] / measured["seconds"]


def tokens_per_second(measured: dict) -> float:
    """Output pieces (of the detokenized translations, by our tokenizer) per second."""
    return measured["output_pieces"] / measured["seconds"]


def cells(measurements: list[dict]) -> dict[tuple[int, int, str], list[dict]]:
    """The measurements by (batch size, threads, toolkit), each list in round order, the keys in the order the
    grid first ran them."""
    found: dict[tuple[int, int, str], list[dict]] = {}
    for measured in measurements:
        found.setdefault((measured["batch_size"], measured["threads"], measured["toolkit"]), []).append(measured)
    return {key: sorted(rounds, key=lambda measured: measured["round"]) for key, rounds in found.items()}


def summary(measurements: list[dict]) -> list[dict]:
    """A row per (batch size, threads, toolkit): ``rounds``, ``sentences``, the median sentences/s and output
    tokens/s with their ``min`` and ``max`` over the rounds, the output pieces per sentence (median) and
    ``same_output`` (every round's translations had one sha1)."""
    rows = []
    for (batch_size, threads, toolkit), rounds in cells(measurements).items():
        speeds = [sentences_per_second(measured) for measured in rounds]
        tokens = [tokens_per_second(measured) for measured in rounds]
        rows.append({"batch_size": batch_size, "threads": threads, "toolkit": toolkit, "rounds": len(rounds),
                     "sentences": sorted({measured["sentences"] for measured in rounds}),
                     "sentences_per_s": {"median": statistics.median(speeds), "min": min(speeds), "max": max(speeds)},
                     "output_tokens_per_s": {"median": statistics.median(tokens), "min": min(tokens),
                                             "max": max(tokens)},
                     "pieces_per_sentence": statistics.median(measured["output_pieces"] / measured["sentences"]
                                                              for measured in rounds),
                     "same_output": len({measured["sha1"] for measured in rounds}) == 1})
    return rows


def peers(results: dict) -> set[str]:
    """The rows that decode another toolkit's model than ours (by the results' ``engines``; every row but ours in
    results without them)."""
    engines = results.get("engines") or {}
    return {row["toolkit"] for row in summaries(results)
            if engines.get(row["toolkit"], {}).get("toolkit", row["toolkit"]) != BASELINE}


def paired(measurements: list[dict], baseline: str = BASELINE) -> list[dict]:
    """A row per (batch size, threads, peer) where the baseline ran too: the rounds both ran (paired by round
    number: they ran back to back), in how many the baseline decoded more sentences/s (``ahead``), whether it was
    ahead in every one (``every_round``), and the ratio of their medians (baseline / peer)."""
    found = cells(measurements)
    rows = []
    for (batch_size, threads, toolkit), rounds in found.items():
        ours = {measured["round"]: measured for measured in found.get((batch_size, threads, baseline), [])}
        pairs = [(ours[measured["round"]], measured) for measured in rounds if measured["round"] in ours]
        if toolkit == baseline or not pairs:
            continue
        ahead = sum(sentences_per_second(mine) > sentences_per_second(theirs) for mine, theirs in pairs)
        ratio = (statistics.median(sentences_per_second(mine) for mine, _ in pairs)
                 / statistics.median(sentences_per_second(theirs) for _, theirs in pairs))
        rows.append({"batch_size": batch_size, "threads": threads, "peer": toolkit, "rounds": len(pairs),
                     "ahead": ahead, "every_round": ahead == len(pairs), "ratio": ratio})
    return rows


def agrees(rows: list[dict]) -> bool:
    """Whether every paired round says what the medians say, against every peer (`paired` rows of one batch size
    and thread count): ours ahead in every round where its median is ahead, behind in every round where it is
    behind."""
    return all(row["ahead"] == (row["rounds"] if row["ratio"] > 1 else 0) for row in rows)


def summaries(results: dict) -> list[dict]:
    """The grid's `summary` rows, as the grid stored them or computed from its measurements."""
    return results.get("summary") or summary(results["measurements"])


def pairs(results: dict) -> list[dict]:
    """The grid's `paired` rows, as the grid stored them or computed from its measurements."""
    return results.get("paired") or paired(results["measurements"])


def threads_words(count: int) -> str:
    return f"{count} thread{'s' if count > 1 else ''}"


def where(row: dict) -> str:
    return f"batch {row['batch_size']}, {threads_words(row['threads'])}"


def target(rows: list[dict], words: str, wanted: float) -> dict:
    """The target on ``rows`` (`paired` rows of one peer): met only when the ratio of medians reaches ``wanted`` in
    every row and the baseline was ahead in every paired round of every row; the value gives the lowest ratio and
    every row with a round behind."""
    lowest = min(rows, key=lambda row: row["ratio"])
    behind = [row for row in rows if not row["every_round"]]
    rounds = ("behind in a paired round at " + "; ".join(f"{where(row)} ({row['ahead']} of {row['rounds']} ahead)"
                                                         for row in behind) if behind
              else "ahead in every paired round")
    return {"name": f"decoding sentences/s {words}, {BASELINE} / {rows[0]['peer']} (decoding grid)",
            "value": f"{lowest['ratio']:.2f} (the lowest: {where(lowest)}); {rounds}",
            "wanted": f">= {wanted:g} at every thread count, and {BASELINE} ahead in every paired round",
            "met": lowest["ratio"] >= wanted and not behind}


def targets(results: dict) -> list[dict]:
    """The decoding targets (`TARGETS`) against each peer (`peers`), those whose batch sizes the grid measured: each
    ``name``, ``value``, ``wanted``, ``met`` (`target`)."""
    others = peers(results)
    comparisons = [row for row in pairs(results) if row["peer"] in others]
    found = []
    for peer in dict.fromkeys(row["peer"] for row in comparisons):
        for words, sizes, wanted in TARGETS:
            if rows := [row for row in comparisons if row["peer"] == peer and row["batch_size"] in sizes]:
                found.append(target(rows, words, wanted))
    return found


def best_batch(rows: list[dict], threads: int) -> dict | None:
    """Of ``rows`` (one toolkit's), the one of highest median sentences/s at ``threads``; None without any."""
    at = [row for row in rows if row["threads"] == threads]
    return max(at, key=lambda row: row["sentences_per_s"]["median"]) if at else None


def int8_rows(int8: dict, variant: str) -> list[dict]:
    """``variant``'s rows of results/int8_recurrent.json, one per batch size, in the grid's shape (``threads``)."""
    return [{**row, "threads": int8["settings"]["threads"]} for found in int8["by_batch_size"].values()
            for row in found["rows"] if row["variant"] == variant]


def int8_speed_target(ours: list[dict], grid: dict, peer: str, threads: int, source: str) -> dict | None:
    """Our int8 rows ``ours`` (from ``source``) at their best batch over ``peer``'s float32 at its best batch in the
    grid, at ``threads``; None where either did not run there."""
    mine = best_batch(ours, threads)
    theirs = best_batch([row for row in summaries(grid) if row["toolkit"] == peer], threads)
    if mine is None or theirs is None:
        return None
    return speedup_target(f"decoding sentences/s, {BASELINE} int8 / {peer} float32, each at its best batch, "
                          f"{threads_words(threads)} ({source})", mine, theirs, INT8_SPEEDUP)


def speedup_target(name: str, mine: dict, theirs: dict, wanted: float) -> dict:
    """The target ``name``: the median sentences/s of ``mine`` over that of ``theirs`` (`best_batch` rows) at least
    ``wanted``."""
    ratio = mine["sentences_per_s"]["median"] / theirs["sentences_per_s"]["median"]
    return {"name": name, "value": f"{ratio:.2f} ({mine['sentences_per_s']['median']:.1f} at batch "
                                   f"{mine['batch_size']} / {theirs['sentences_per_s']['median']:.1f} at batch "
                                   f"{theirs['batch_size']})",
            "wanted": f">= {wanted:g}", "met": ratio >= wanted}


def ctranslate2_targets(results: dict) -> list[dict]:
    """The Transformer's CTranslate2 target at every thread count where the grid ran `CTRANSLATE2_INT8` and a peer:
    its sentences/s at its best batch over the fastest peer's (`peers`) at that one's best batch, at least
    `CTRANSLATE2_SPEEDUP`."""
    rows, found = summaries(results), []
    for threads in results["threads"]:
        mine = best_batch([row for row in rows if row["toolkit"] == CTRANSLATE2_INT8], threads)
        theirs = [best for peer in sorted(peers(results))
                  if (best := best_batch([row for row in rows if row["toolkit"] == peer], threads))]
        if mine and theirs:
            fastest = max(theirs, key=lambda row: row["sentences_per_s"]["median"])
            found.append(speedup_target(
                f"decoding sentences/s, {CTRANSLATE2_INT8} / the fastest peer ({fastest['toolkit']}), each at its "
                f"best batch, {threads_words(threads)} (decoding grid)", mine, fastest, CTRANSLATE2_SPEEDUP))
    return found


def int8_bleu_target(int8: dict) -> dict:
    """Our int8 test BLEU against our float32's at every batch size of int8_recurrent.json (an int8 model's outputs
    depend on the batch): the largest gap."""
    floats = {row["batch_size"]: row["test_bleu"] for row in int8_rows(int8, "float32")}
    gaps = {row["batch_size"]: row["test_bleu"] - floats[row["batch_size"]] for row in int8_rows(int8, "int8")}
    size = max(gaps, key=lambda size: abs(gaps[size]))
    return {"name": f"test BLEU, {BASELINE} int8 - {BASELINE} float32 ({INT8})",
            "value": f"{gaps[size]:+.2f} (the largest gap: batch {size}, float32 {floats[size]:.2f})",
            "wanted": f"within {INT8_BLEU_GAP:g} at every batch size", "met": abs(gaps[size]) <= INT8_BLEU_GAP}


def int8_targets(int8: dict | None, grid: dict | None) -> list[dict]:
    """The int8 targets: its test BLEU within `INT8_BLEU_GAP` of float32's (int8_recurrent.json), and int8 at least
    `INT8_SPEEDUP` x each peer's float32 sentences/s, each at its best batch: from the grid's own int8 row
    (`INT8_ENGINE`, the same scope and turns as the peers) at each of its thread counts where it has one; else from
    the study at its thread count (which times generate() on tokenized batches, the grid raw lines in and text out:
    the peer's scope is the wider)."""
    found = [int8_bleu_target(int8)] if int8 else []
    if not grid:
        return found
    others = sorted(peers(grid))
    ours = [row for row in summaries(grid) if row["toolkit"] == INT8_ENGINE]
    if ours:
        speeds = [int8_speed_target(ours, grid, peer, threads, "the decoding grid")
                  for threads in grid["threads"] for peer in others]
    elif int8:
        speeds = [int8_speed_target(int8_rows(int8, "int8"), grid, peer, int8["settings"]["threads"],
                                    f"{INT8} against the decoding grid") for peer in others]
    else:
        speeds = []
    return [*found, *(target for target in speeds if target is not None)]


def spread(figures: dict, digits: int) -> str:
    return f"{figures['median']:.{digits}f} ({figures['min']:.{digits}f}-{figures['max']:.{digits}f})"


def table(results: dict) -> str:
    """The markdown table: a row per batch size, thread count and toolkit; on the baseline's row its median
    sentences/s over the fastest peer's (`peers`), and whether every paired round agrees with the medians
    (`agrees`)."""
    others = peers(results)
    comparisons = [pair for pair in pairs(results) if pair["peer"] in others]
    rows = []
    for row in summaries(results):
        ratio = agreement = ""
        against = [pair for pair in comparisons
                   if (pair["batch_size"], pair["threads"]) == (row["batch_size"], row["threads"])]
        if row["toolkit"] == BASELINE and against:
            fastest = min(against, key=lambda pair: pair["ratio"])  # the peer our ratio is lowest against
            ratio = f"{fastest['ratio']:.2f} ({fastest['peer']})"
            agreement = "yes" if agrees(against) else "no"
        rows.append((str(row["batch_size"]), str(row["threads"]), row["toolkit"],
                     "/".join(f"{count:,}" for count in row["sentences"]), spread(row["sentences_per_s"], 1),
                     spread(row["output_tokens_per_s"], 0), f"{row['pieces_per_sentence']:.2f}", ratio, agreement))
    return Table(("batch", "threads", "toolkit", "sentences", "sentences/s median (min-max)",
                  "output tokens/s median (min-max)", "output pieces per sentence", "ours / best peer",
                  "every round agrees"), rows).render()


def best_batches(results: dict) -> str:
    """The markdown table of batch 1 and each row's best batch: per thread count and row, the median sentences/s at
    batch 1 and at the row's best batch (`best_batch`), each as a multiple of ours' there (at ours' best batch)."""
    rows, lines = summaries(results), []
    for threads in results["threads"]:
        at = {}
        for row in rows:
            if row["threads"] == threads:
                at.setdefault(row["toolkit"], []).append(row)
        first = {name: next((row for row in found if row["batch_size"] == 1), None) for name, found in at.items()}
        best = {name: best_batch(found, threads) for name, found in at.items()}
        for name in at:
            lines.append((str(threads), name, *speed_against(first.get(name), first.get(BASELINE)),
                          str(best[name]["batch_size"]), *speed_against(best[name], best.get(BASELINE))))
    return Table(("threads", "row", "sentences/s at batch 1", "x ours at batch 1", "best batch",
                  "sentences/s at the best batch", "x ours, each at its best batch"), lines).render()


def speed_against(row: dict | None, ours: dict | None) -> tuple[str, str]:
    """``row``'s median sentences/s and its multiple of ``ours``' (cells; empty where one is missing)."""
    if row is None:
        return "", ""
    speed = row["sentences_per_s"]["median"]
    return f"{speed:.1f}", f"{speed / ours['sentences_per_s']['median']:.2f}" if ours else ""


def engines_lines(results: dict) -> list[str]:
    """What each row of the grid decodes, in words (the results' ``engines``), a line each."""
    return [f"- {name} (model: {engine['toolkit']}): {engine['decodes']}"
            for name, engine in results.get("engines", {}).items()]


def warmed(results: dict) -> str:
    """The grid's warm-up in words (after the rounds), or nothing for a grid run without one."""
    return f" after {results['warm_up']}" if results.get("warm_up") else ""


def markdown(results: dict) -> str:
    """The run's label, what was timed and how, then `table`."""
    penalties = ", ".join(f"{name} {value}" for name, value in results["search"]["length_penalty"].items())
    about = (f"Decoding, every toolkit timed alike (`{results['command']}`): raw test2016 source lines in, "
             "detokenized translations out, model loading not counted; beam "
             f"{results['search']['num_beams']}, at most {results['search']['max_new_tokens']} tokens, length "
             f"penalty {penalties} (each in its toolkit's formula); one process per toolkit and thread count, the "
             f"toolkits taking turns item by item, {results['rounds']} rounds{warmed(results)}; medians over the "
             "rounds (min-max). Output tokens: the pieces of the translations by our tokenizer. A paired round: ours "
             f"and a peer at the same batch size, one after the other. {results['machine']}.")
    label = f"**{results['label']}**\n\n" if results.get("label") else ""
    return f"{label}{about}\n\n{table(results)}\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="?", default=Path("results/peers_decoding.json"))
    print(markdown(json.loads(parser.parse_args(argv).results.read_text())), end="")


if __name__ == "__main__":
    main()
