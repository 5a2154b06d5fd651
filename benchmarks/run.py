"""Run the benchmarks and write ``results/benchmarks.json``, ``results/benchmarks.md`` and the scaling plot.

    python -m benchmarks.run                       # every entry, default sizes (a few minutes each on 2 CPU cores)
    python -m benchmarks.run --only incremental --device cuda --set batch_size=64 --set hidden_size=1024
    python -m benchmarks.run --smoke --out /tmp/b  # tiny sizes, seconds: checks that everything still runs
    python -m benchmarks.run --only translation --set model_dir=outputs/multi30k-gru  # time that saved model

With ``--only`` the other entries already in the JSON file are kept, so entries can be re-run one at a time.
"""

import argparse
import dataclasses
import datetime
import functools
import importlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import torch
import transformers

from .common import Settings, timed

# Entry name (the key in benchmarks.json) -> the module whose run(settings) measures it, imported only when chosen.
ENTRIES = {
    "translation": "benchmarks.beam_speed",
    "batch1_overhead": "benchmarks.batch1_overhead",
    "incremental": "benchmarks.incremental",
    "training": "benchmarks.training",
    "scaling": "benchmarks.scaling",
    "transformer_vs_marian": "benchmarks.transformer_vs_marian",
    "static_cache": "benchmarks.static_cache",
}


def machine_info(device: str) -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else None,
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
        "git_commit": commit,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "**NO**"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"{value[0]:g}-{value[1]:g}"  # quartiles
    return str(value)


def _summary_value(value, nested: bool = False) -> str:
    if isinstance(value, dict) and set(value) in ({"ratio", "quartiles"}, {"median", "quartiles"}):
        middle = value.get("ratio", value.get("median"))
        return f"{_cell(middle)} (IQR {_cell(value['quartiles'])})"
    if not isinstance(value, dict):
        return _cell(value)
    if nested:
        return "(" + ", ".join(f"{key} {_summary_value(inner, True)}" for key, inner in value.items()) + ")"
    return "; ".join(f"{key} = {_summary_value(inner, True)}" for key, inner in value.items())


def markdown(results: dict) -> str:
    machine = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Ratios are what to read: absolute times depend on the machine (and on CPU, on its other load). Every figure "
        "is the median over interleaved rounds in one process, with its interquartile range (IQR, or a column "
        "`_iqr`: lower-upper quartile); every ratio is the median of the per-round ratios, with theirs.",
        "",
        "| machine | |",
        "|---|---|",
        *(f"| {key} | {_cell(value)} |" for key, value in machine.items()),
        "",
    ]
    for name, entry in results["entries"].items():
        lines += [f"## {entry['title']} (`{name}`)", ""]
        lines += [f"Run {entry['ran_at']} on {entry['device']}{' (smoke sizes)' if entry['smoke'] else ''}, "
                  f"{entry['seconds']:.0f} s, load average after {entry.get('load_average_after')}. "
                  f"{entry['notes']}", ""]
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


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(ENTRIES), help="run only these entries")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check that everything runs, in seconds")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="output folder (default: results/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a size in every entry that has it, e.g. --set batch_size=64")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--seed", type=int, default=0)
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
    previous = json.loads(json_path.read_text()) if args.only and json_path.exists() else {}
    entries = dict(previous.get("entries", {}))
    for name in chosen:
        print(f"[benchmarks] {name} ...", file=sys.stderr, flush=True)
        entry, seconds = timed(functools.partial(importlib.import_module(ENTRIES[name]).run, settings), args.device)
        entry.update(  # the entry's own machine and overrides: a run with --only keeps the other entries
            seconds=round(seconds, 1),
            load_average_after=[round(value, 2) for value in os.getloadavg()],
            device=args.device,
            smoke=args.smoke,
            ran_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            machine=machine_info(args.device),
            overrides=overrides,
        )
        entries[name] = entry
        print(f"[benchmarks] {name} done in {entry['seconds']} s", file=sys.stderr, flush=True)
    results = {"machine": machine_info(args.device), "overrides": overrides, "entries": entries}
    json_path.write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "benchmarks.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
