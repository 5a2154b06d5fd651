"""The decoding grid's figures (results/peers_decoding.json, written by `decoding_grid`): per toolkit, batch size and
thread count the medians over the rounds, and per pair of rounds whether ours was ahead of each peer; `markdown`
renders them as one table (report.py can place it in peers.md).

    python -m benchmarks.peers.report_decoding results/peers_decoding.json     # prints the table
"""

import argparse
import json
import statistics
from pathlib import Path

from tools.render.figures import Table

BASELINE = "ours"


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


def spread(figures: dict, digits: int) -> str:
    return f"{figures['median']:.{digits}f} ({figures['min']:.{digits}f}-{figures['max']:.{digits}f})"


def table(results: dict) -> str:
    """The markdown table: a row per batch size, thread count and toolkit; on the baseline's row its median
    sentences/s over the fastest peer's, and whether every paired round agrees with the medians (`agrees`)."""
    comparisons = results.get("paired") or paired(results["measurements"])
    rows = []
    for row in results.get("summary") or summary(results["measurements"]):
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


def markdown(results: dict) -> str:
    """The run's label, what was timed and how, then `table`."""
    penalties = ", ".join(f"{name} {value}" for name, value in results["search"]["length_penalty"].items())
    about = (f"Decoding, every toolkit timed alike (`{results['command']}`): raw test2016 source lines in, "
             "detokenized translations out, model loading not counted; beam "
             f"{results['search']['num_beams']}, at most {results['search']['max_new_tokens']} tokens, length "
             f"penalty {penalties} "
             "(each in its toolkit's formula); one process per toolkit and thread count, the toolkits taking turns "
             f"item by item, {results['rounds']} rounds; medians over the rounds (min-max). Output tokens: the "
             "pieces of the translations by our tokenizer. A paired round: ours and a peer at the same batch size, "
             f"one after the other. {results['machine']}.")
    label = f"**{results['label']}**\n\n" if results.get("label") else ""
    return f"{label}{about}\n\n{table(results)}\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="?", default=Path("results/peers_decoding.json"))
    print(markdown(json.loads(parser.parse_args(argv).results.read_text())), end="")


if __name__ == "__main__":
    main()
