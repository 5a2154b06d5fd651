"""What a run of an older version (from before `atomic_folders.MANIFEST`) wrote in a folder, known by content.

A folder without a manifest may be the output of an earlier run, or anything else of the user's (a Python project,
a home folder). A file's name proves nothing (a project has its own ``config.json`` and ``__init__.py``), so an
entry counts as a run's only if its content is what a run writes, and only beside a model that a run saved: a
``config.json`` written by transformers' ``save_pretrained`` (a JSON object with ``model_type`` and
``transformers_version``) *and* the weights it goes with (``model.safetensors``, or an index and every shard it
names, each with a safetensors header). Everything else in the folder is the user's: a run keeps it, and refuses to
write over it (`atomic_folders.replacing`).
"""

import json
import re
import struct
from collections.abc import Callable
from pathlib import Path

from .models.pipeline_translation import SOURCE_TOKENIZER_DIR

SAFETENSORS_HEADER_LIMIT = 100_000_000  # safetensors' own cap on a header, in bytes
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_json(path: Path):
    """The JSON value in the file ``path``; None where it is not a readable file holding JSON."""
    try:
        return json.loads(path.read_text()) if path.is_file() and not path.is_symlink() else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def starts_with(path: Path, signature: bytes) -> bool:
    """Whether ``path`` is a file (not a link) whose first bytes are ``signature``."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as file:
        return file.read(len(signature)) == signature


def safetensors_header(path: Path) -> dict | None:
    """The header of the safetensors file ``path`` (tensor name -> dtype, shape, data offsets); None where the file
    is not one (a link, too short, a header that is not such a JSON object, offsets beyond the file's end)."""
    if path.is_symlink() or not path.is_file():
        return None
    size = path.stat().st_size
    try:
        with path.open("rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            if not 2 <= length <= min(SAFETENSORS_HEADER_LIMIT, size - 8):
                return None
            header = json.loads(file.read(length))
    except (OSError, struct.error, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    tensors = {name: entry for name, entry in header.items() if name != "__metadata__"}
    data_size = size - 8 - length
    if not all(isinstance(entry, dict) and {"dtype", "shape", "data_offsets"} <= set(entry)
               and isinstance(entry["data_offsets"], list) and len(entry["data_offsets"]) == 2
               and all(isinstance(offset, int) and 0 <= offset <= data_size for offset in entry["data_offsets"])
               for entry in tensors.values()):
        return None
    return header


def saved_config(folder: Path) -> dict | None:
    """``folder``'s config.json where transformers' ``save_pretrained`` wrote it; else None."""
    config = read_json(folder / "config.json")
    if isinstance(config, dict) and isinstance(config.get("model_type"), str) and "transformers_version" in config:
        return config
    return None


def weight_files(folder: Path) -> set[str] | None:
    """The weight files of the model saved in ``folder``: ``model.safetensors``, or ``model.safetensors.index.json``
    and every shard it names, each a safetensors file; None where they are missing or not such files."""
    index = read_json(folder / "model.safetensors.index.json")
    if index is None:
        return {"model.safetensors"} if safetensors_header(folder / "model.safetensors") is not None else None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not (isinstance(weight_map, dict) and weight_map and all(isinstance(name, str) and "/" not in name
                                                                 for name in weight_map.values())):
        return None
    shards = set(weight_map.values())
    if any(safetensors_header(folder / shard) is None for shard in shards):
        return None
    return {"model.safetensors.index.json", *shards}


def code_files(config: dict) -> set[str]:
    """The module files the config's ``auto_map`` names (``"modeling_x.Class"`` -> ``modeling_x.py``)."""
    references = [ref for refs in (config.get("auto_map") or {}).values()
                  for ref in (refs if isinstance(refs, list) else [refs]) if isinstance(ref, str)]
    return {ref.split("--")[-1].rsplit(".", 1)[0] + ".py" for ref in references}


def remote_code(folder: Path, config: dict) -> set[str]:
    """The ``.py`` files of ``folder`` that the model's remote code is made of: those ``auto_map`` names and,
    transitively, their sibling imports (``from .x import``), as transformers copies them."""
    found, pending = set(), sorted(code_files(config))
    while pending:
        name = pending.pop()
        path = folder / name
        if name in found or path.is_symlink() or not path.is_file():
            continue
        found.add(name)
        try:
            pending += [f"{module}.py" for module in re.findall(r"^from \.(\w+) import", path.read_text(), re.M)]
        except (OSError, UnicodeDecodeError):
            continue
    return found


def tokenizer_files(folder: Path, vocab_size) -> set[str]:
    """The files of ``folder`` that a tokenizer's ``save_pretrained`` wrote, known by their content: JSON objects
    of the shapes transformers writes, and a ``vocab.txt`` of ``vocab_size`` lines (a word-piece vocabulary)."""
    found = set()
    tokenizer = read_json(folder / "tokenizer.json")
    if isinstance(tokenizer, dict) and {"model", "added_tokens"} <= set(tokenizer):
        found.add("tokenizer.json")
    for name in ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        if isinstance(read_json(folder / name), dict):
            found.add(name)
    vocab = read_json(folder / "vocab.json")
    if isinstance(vocab, dict) and vocab and all(isinstance(index, int) for index in vocab.values()):
        found.add("vocab.json")
    if "tokenizer_config.json" in found and isinstance(vocab_size, int) and _line_count(folder / "vocab.txt") == vocab_size:
        found.add("vocab.txt")
    return found


def _line_count(path: Path) -> int | None:
    if path.is_symlink() or not path.is_file():
        return None
    with path.open("rb") as file:
        return sum(1 for _ in file)


def run_output(folder: Path) -> set[str]:
    """The entries of ``folder`` that an earlier run wrote there (see the module docstring): none unless it holds a
    saved model; then its config, weights, remote code, generation config and tokenizer files, a source tokenizer
    folder and a ``custom_generate/`` decoding loop (Python files only), and a ``results.json`` (a JSON object) with the test
    translations and attention plot that go with it."""
    folder = Path(folder)
    config = saved_config(folder) if folder.is_dir() else None
    weights = weight_files(folder) if config is not None else None
    if weights is None:
        return set()
    found = {"config.json", *weights, *remote_code(folder, config), *tokenizer_files(folder, config.get("vocab_size"))}
    if isinstance(generation := read_json(folder / "generation_config.json"), dict) and \
            "transformers_version" in generation:
        found.add("generation_config.json")
    source = folder / SOURCE_TOKENIZER_DIR
    if source.is_dir() and not source.is_symlink() and (
            names := {path.name for path in source.iterdir()}) and names <= tokenizer_files(
            source, config.get("source_vocab_size")):
        found.add(SOURCE_TOKENIZER_DIR)
    loop = folder / "custom_generate"
    if loop.is_dir() and not loop.is_symlink() and all(path.suffix == ".py" or path.name == "__pycache__"
                                                       for path in loop.iterdir()):
        found.add("custom_generate")
    if isinstance(read_json(folder / "results.json"), dict):
        found.add("results.json")
        found |= _results_files(folder)
    return found


def _results_files(folder: Path) -> set[str]:
    """The test translations (a text file) and attention plot (a PNG image) of a run whose results are there."""
    found = set()
    hypotheses, plot = folder / "test_hypotheses.txt", folder / "attention.png"
    if hypotheses.is_file() and not hypotheses.is_symlink():
        try:
            hypotheses.read_text()
            found.add(hypotheses.name)
        except (OSError, UnicodeDecodeError):
            pass
    if starts_with(plot, PNG_SIGNATURE):
        found.add(plot.name)
    return found


def staged_output(marker: str) -> Callable[[Path], set[str]]:
    """What an older version's Hub staging wrote in a folder: a run's output (`run_output`), its card (README.md)
    and ``marker``, the file every staging leaves; nothing in a folder without ``marker``."""
    def recognise(folder: Path) -> set[str]:
        if not (Path(folder) / marker).is_file():
            return set()
        found = run_output(folder)
        return found | {marker, "README.md"} if found else {marker}
    return recognise
