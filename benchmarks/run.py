"""Run the benchmarks and write ``results/benchmarks.json``, ``results/benchmarks.md`` and the scaling plot.

    python -m benchmarks.run                       # every entry, default sizes (a few minutes each on 2 CPU cores)
    python -m benchmarks.run --only incremental --device cuda --set batch_size=64 --set hidden_size=1024
    python -m benchmarks.run --smoke --out /tmp/b  # tiny sizes, seconds: checks that everything still runs
    python -m benchmarks.run --only translation --set model_dir=outputs/multi30k-gru  # time that saved model

With ``--only`` the other entries already in the JSON file are kept, so entries can be re-run one at a time. A
re-run entry keeps the entry it replaces in its ``history`` (`history_record`), and each entry records its own
provenance (docs/provenance.md).
"""

import argparse
import dataclasses
import datetime
import functools
import importlib
import json
import os
import shlex
import sys
from pathlib import Path

import torch

from hf_seqmodels.provenance import RECORDED, provenance

from .helpers.common import Settings, timed

# Entry name (the key in benchmarks.json) -> the module whose run(settings) measures it, imported only when chosen.
ENTRIES = {
    "translation": "benchmarks.entries.translation_decoding",
    "batch1_overhead": "benchmarks.entries.batch1_overhead",
    "incremental": "benchmarks.entries.incremental",
    "training": "benchmarks.entries.lm_training",
    "scaling": "benchmarks.entries.scaling",
    "transformer_vs_marian": "benchmarks.entries.transformer_vs_marian",
    "static_cache": "benchmarks.entries.static_cache",
}


RATIO_KEYS = ({"ratio", "quartiles"}, {"median", "quartiles"})  # a figure over rounds: its median and quartiles


def history_record(entry: dict) -> dict:
    """What an entry's ``history`` keeps of an earlier run of it: when and at which commit it ran, its sizes'
    overrides and every figure of its summary (a number, or a figure over rounds: a ratio or a median with its
    quartiles), under the summary's own keys (and model labels)."""
    provenance = entry.get("provenance") or {}
    commit = provenance.get("commit") or (entry.get("machine") or {}).get("git_commit")

    def figures(summary: dict) -> dict:
        kept = {}
        for key, value in summary.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) or (
                    isinstance(value, dict) and set(value) in RATIO_KEYS):
                kept[key] = value
            elif isinstance(value, dict) and (inner := figures(value)):
                kept[key] = inner
        return kept

    return {"ran_at": entry.get("ran_at"), "commit": commit, "overrides": entry.get("overrides"),
            "figures": figures(entry.get("summary", {}))}


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "**NO**"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"{value[0]:g}-{value[1]:g}"  # quartiles
    return str(value)


def _summary_value(value, nested: bool = False) -> str:
    if isinstance(value, dict) and set(value) in RATIO_KEYS:
        middle = value.get("ratio", value.get("median"))
        return f"{_cell(middle)} (IQR {_cell(value['quartiles'])})"
    if not isinstance(value, dict):
        return _cell(value)
    if nested:
        return "(" + ", ".join(f"{key} {_summary_value(inner, True)}" for key, inner in value.items()) + ")"
    return "; ".join(f"{key} = {_summary_value(inner, True)}" for key, inner in value.items())


def markdown(results: dict) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Ratios are what to read: absolute times depend on the machine (and on CPU, on its other load). Every figure "
        "is the median over interleaved rounds in one process, with its interquartile range (IQR, or a column "
        "`_iqr`: lower-upper quartile); every ratio is the median of the per-round ratios, with theirs. Each entry "
        "states its own provenance (commit, command, software, device, seeds, split; `provenance` in the JSON).",
        "",
    ]
    for name, entry in results["entries"].items():
        lines += [f"## {entry['title']} (`{name}`)", ""]
        lines += [f"Run {entry['ran_at']} on {entry['device']}{' (smoke sizes)' if entry['smoke'] else ''}, "
                  f"{entry['seconds']:.0f} s, load average after {entry.get('load_average_after')}. "
                  f"{entry['notes']}", ""]
        lines += [provenance_line(entry.get("provenance") or {}), ""]
        lines += ["Sizes: " + ", ".join(f"{key}={value}" for key, value in entry["sizes"].items()), ""]
        if entry["targets"]:
            lines += ["| target | measured | wanted | met |", "|---|---|---|---|"]
            lines += [f"| {t['name']} | {_cell(t['value'])} | {t['target']} | "
                      f"{'n/a' if t['met'] is None else _cell(t['met'])} |" for t in entry["targets"]]
            lines.append("")
        if entry["summary"]:
            lines += [f"- {key}: {_summary_value(value)}" for key, value in entry["summary"].items()]
            lines.append("")
        if entry["rows"]:
            columns = list(dict.fromkeys(key for row in entry["rows"] for key in row))
            lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(_cell(row.get(column, "")) for column in columns) + " |"
                      for row in entry["rows"]]
            lines.append("")
        for figure in entry.get("figures", []):
            lines += [f"![{name}]({figure})", ""]
        for title, profile in entry.get("profiles", {}).items():
            lines += [f"Profile, {title}:", "", "```", *profile, "```", ""]
    return "\n".join(lines)


def provenance_line(record: dict) -> str:
    """An entry's provenance in one sentence of the markdown."""
    if record.get("recorded") != RECORDED:
        known = ", ".join(f"{key} {_cell(value)}" for key, value in record.items() if value is not None and
                          key != "recorded")
        return f"Provenance {record.get('recorded', 'unknown')}" + (f": {known}." if known else ".")
    machine = record["machine"]
    tree = "clean" if record["tree_clean"] else "changed: " + ", ".join(record["changed_files"] or ["?"])
    return (f"Provenance: commit {record['commit']} ({tree}), "
            f"`{shlex.join(record['argv'])}` in {record['cwd']}; Python {record['python']}, torch {record['torch']}, "
            f"transformers {record['transformers']}; {record['device']}, {machine['cpu_count']} cores"
            f"{', ' + machine['note'] if machine.get('note') else ''}; seeds {record['seeds']}, split "
            f"{', '.join(record['split']) or 'none (synthetic data)'}; {record['date']}.")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(ENTRIES), help="run only these entries")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check that everything runs, in seconds")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output folder (default: results/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size in every entry that has it, e.g. --set batch_size=64")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the entries' random data and stand-in models")
    parser.add_argument("--machine_note", help="what each entry's provenance says of the machine, e.g. 'shared "
                                               "machine' (other jobs ran on it meanwhile)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda was asked for but torch sees no CUDA device.")
    overrides = {}
    for item in args.overrides:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set expects NAME=VALUE, got {item!r}.")
        overrides[name] = value
    chosen = args.only or list(ENTRIES)
    sizes = {field.name for name in chosen
             for field in dataclasses.fields(importlib.import_module(ENTRIES[name]).Sizes)}
    unknown = sorted(set(overrides) - sizes)
    if unknown:  # else it would be silently ignored
        parser.error(f"--set {', '.join(unknown)}: no size of that name in {', '.join(chosen)}; their sizes are "
                     f"{', '.join(sorted(sizes))}.")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(device=args.device, smoke=args.smoke, out_dir=args.out, overrides=overrides, seed=args.seed)

    json_path = args.out / "benchmarks.json"
    earlier_entries = json.loads(json_path.read_text())["entries"] if json_path.exists() else {}
    entries = dict(earlier_entries) if args.only else {}
    for name in chosen:
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(ENTRIES[name])
        started = provenance([args.seed], module.SPLIT, args.device, args.machine_note)
        entry, seconds = timed(functools.partial(module.run, settings), args.device)
        earlier = earlier_entries.get(name)
        entry.update(  # the entry's own provenance and overrides: a run with --only keeps the other entries
            seconds=round(seconds, 1),
            load_average_after=[round(value, 2) for value in os.getloadavg()],
            device=args.device,
            smoke=args.smoke,
            ran_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            provenance=started,
            overrides=overrides,
            history=[] if earlier is None else [*earlier.get("history", []), history_record(earlier)],  # oldest first
        )
        entries[name] = entry
        print(f"[benchmarks] {name} done in {entry['seconds']} s", file=sys.stderr, flush=True)
    results = {"entries": entries}
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "benchmarks.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
