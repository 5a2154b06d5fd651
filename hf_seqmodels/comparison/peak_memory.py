"""A task's run in a comparison's fresh process (`comparison.fresh_process.run_in_process` of this module), followed by
the process's peak memory, written to ``PEAK_MEMORY`` in the run's output folder: the GPU's peak allocation where the
run used one, else the process's peak resident memory."""

import importlib
import json
import resource
from pathlib import Path

import torch

from ..storage.atomic_folders import add_to_manifest

PEAK_MEMORY = "peak_memory.json"


def run(task: str, *parsed) -> None:
    """``<task>.run(*parsed)`` (``task`` a module name of `hf_seqmodels.tasks`, ``parsed`` its argument
    dataclasses, the training arguments among them), then the peak memory into ``<output_dir>/PEAK_MEMORY``."""
    importlib.import_module(task).run(*parsed)
    [output_dir] = [arguments.output_dir for arguments in parsed if hasattr(arguments, "output_dir")]
    if torch.cuda.is_initialized():
        peak = {"peak_memory_bytes": torch.cuda.max_memory_allocated(), "peak_memory_of": "GPU (allocated)"}
    else:  # Linux gives ru_maxrss in KiB
        peak = {"peak_memory_bytes": 1024 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "peak_memory_of": "process (resident)"}
    add_to_manifest(output_dir, PEAK_MEMORY)  # a file of the run's, which its next run replaces
    (Path(output_dir) / PEAK_MEMORY).write_text(json.dumps(peak) + "\n")
