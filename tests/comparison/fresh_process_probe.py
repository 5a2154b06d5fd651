"""A task for `test_fresh_process`: its run writes what its process sees to ``output`` (a JSON file), then marks the
module, which a later run must not see."""

import importlib
import json
import os
from pathlib import Path

import torch

from hf_seqmodels.provenance import provenance

marked = False


def run(output: str, variable: str) -> None:
    global marked
    seen = {"variable": os.environ.get(variable), "cwd": os.getcwd(), "threads": torch.get_num_threads(),
            "marked": marked, "package": importlib.import_module("hf_seqmodels").__file__,
            "argv": provenance([], [])["argv"]}  # the command a run's provenance records
    marked = True
    print("a line for the log")
    if seen["variable"] == "fail":
        raise RuntimeError("the probe was told to fail")
    Path(output).write_text(json.dumps(seen))
