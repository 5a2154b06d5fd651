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
from collections.abc import Callable
from pathlib import Path

from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

from ..models.pipeline_translation import SOURCE_TOKENIZER_DIR
from ..models.weight_files import read_header, safetensors_files

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


def saved_config(folder: Path) -> dict | None:
    """``folder``'s config.json where transformers' ``save_pretrained`` wrote it; else None."""
    config = read_json(folder / "config.json")
    if isinstance(config, dict) and isinstance(config.get("model_type"), str) and "transformers_version" in config:
        return config
    return None


def weight_files(folder: Path) -> set[str] | None:
    """The weight files of the model saved in ``folder`` (``model.safetensors``, or ``model.safetensors.index.json``
    and every shard it names), each with a safetensors header; None where they are missing or not such files."""
    files = safetensors_files(folder)
    if files is None or any(path.parent != folder or path.is_symlink() or read_header(path) is None for path in files):
        return None
    names = {path.name for path in files}
    return names if names == {SAFE_WEIGHTS_NAME} else {*names, SAFE_WEIGHTS_INDEX_NAME}


def code_files(config: dict) -> set[str]:
    """The module files the config's ``auto_map`` names (``"modeling_x.Class"`` -> ``modeling_x.py``)."""
    references = [ref for refs in (config.get("auto_map") or {}).values()
                  for ref in (refs if isinstance(refs, list) else [refs]) if isinstance(ref, str)]
    return {ref.split("--")[-1].rsplit(".", 1)[0] + ".py" for ref in references}


def sibling_imports(code: str) -> list[str]:
    """The files of the modules that Python ``code`` imports from its own folder (``from .x import`` -> ``x.py``),
    which transformers copies beside a model's code."""
    return [f"{module}.py" for module in re.findall(r"^from \.(\w+) import", code, re.M)]


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
            pending += sibling_imports(path.read_text())
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
