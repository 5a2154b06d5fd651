"""The folder a trained model is uploaded as, staged and checked offline.

`stage_hub_folder` copies what a Hub repo needs (safetensors weights, config.json with ``auto_map`` and the code
files it names, tokenizer files, results.json), of the files the run wrote only (its folder's manifest), and writes
the card as README.md; `check_hub_folder` validates that folder without the network. A staged folder holds a
`STAGING_MARKER` file (never uploaded): staging replaces only a folder that has one, so it never deletes a folder of
the user's.
"""

import json
import os
import shutil
from pathlib import Path

from huggingface_hub import ModelCard
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from ..data.tokenization import TOKENIZER_FILES
from ..models.pipeline_translation import SOURCE_TOKENIZER_DIR
from ..models.weight_files import PICKLE_SUFFIXES
from ..storage.atomic_folders import (
    MANIFEST,
    check_digests,
    foreign,
    lock_folder,
    remove_temporaries_of,
    replacing,
    written,
)
from ..storage.earlier_runs import code_files, run_output, sibling_imports, staged_output
from .results import SPLIT_OF_PREFIX, run_scores

WEIGHT_FILES = ("*.safetensors", "model.safetensors.index.json")
OTHER_FILES = ("config.json", "generation_config.json", "results.json")
STAGING_MARKER = ".hf_seqmodels-staging"  # in every folder stage_hub_folder writes, and only there
STAGED_ENTRIES = (*WEIGHT_FILES, *OTHER_FILES, *TOKENIZER_FILES, "*.py", SOURCE_TOKENIZER_DIR,
                  "custom_generate")


def _matches(name: str, patterns) -> bool:
    return any(Path(name).match(pattern) for pattern in patterns)


def model_entries(model_dir: Path) -> list[str]:
    """The entries of ``model_dir`` that make the model on the Hub (`STAGED_ENTRIES`), of those the run wrote there
    (its manifest; for a folder from before manifests, those `earlier_runs.run_output` knows): never a file of the
    user's beside them. A ValueError names the first symbolic link among them, or says that no run saved a model
    there."""
    entries = sorted(name for name in written(model_dir, run_output) if _matches(name, STAGED_ENTRIES) and (
        (model_dir / name).exists() or (model_dir / name).is_symlink()))
    if "config.json" not in entries:
        raise ValueError(f"{model_dir} holds no model saved by a run (no {MANIFEST} listing its config.json, nor a "
                         f"config.json saved with the model.safetensors it describes): pass the output_dir of a "
                         f"training script.")
    for name in entries:
        path = model_dir / name
        for found in [path, *(sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [])]:
            if found.is_symlink():
                raise ValueError(f"{found} is a symbolic link (to {os.readlink(found)}): staging copies only the "
                                 f"files of the model itself, never what a link points to. Replace it with the file "
                                 f"it stands for, or remove it, and stage again.")
    return entries


def check_model_dir(model_dir: str | Path) -> None:
    """Raise a ValueError unless ``model_dir`` is a folder with a config.json (the output_dir of a training script)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise ValueError(f"{model_dir}: no such folder ({model_dir.absolute()}); pass the output_dir of a training "
                         "script.")
    if not (model_dir / "config.json").is_file():
        raise ValueError(f"{model_dir} has no config.json: pass the output_dir of a training script.")


def stage_hub_folder(model_dir: str | Path, target: str | Path, card: ModelCard) -> list[str]:
    """Copy the files a Hub repo needs from ``model_dir`` into a fresh ``target`` and write ``card`` as README.md.

    Copied, of the files the run wrote (`model_entries`: never a file of the user's, nor a symbolic link): weights
    (safetensors only), config.json, generation_config.json, results.json, tokenizer files (and those of a
    translation model's ``source_tokenizer/``), the remote code ``save_pretrained`` wrote next to config.json, and
    the decoding loop in ``custom_generate/``. Pickle weights (``*.bin``...) are refused: they run code when loaded. An existing ``target`` is replaced (whole, at once:
    `atomic_folders.replacing`) only if it is empty or a folder staged earlier (it holds `STAGING_MARKER`) that holds
    nothing else (a file of the user's there is refused, as it would be uploaded); it may not overlap ``model_dir``.
    ``target`` stays locked for this process (`atomic_folders.lock_folder`: another staging into it is refused), and
    what a killed staging left beside it is removed.

    Returns:
        The staged file names, sorted (`STAGING_MARKER` and `atomic_folders.MANIFEST` left out).
    """
    model_dir, target = Path(model_dir), Path(target)
    check_model_dir(model_dir)
    if pickles := sorted(p.name for p in model_dir.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES):
        raise ValueError(f"{model_dir} holds pickle weights {pickles}; save with safetensors (save_pretrained's "
                         "default) and remove them before uploading.")
    model, staged = model_dir.resolve(), target.resolve()
    if staged == model or model in staged.parents or staged in model.parents:
        raise ValueError(f"The staging folder {target} and the model folder {model_dir} overlap: stage elsewhere "
                         "(the default is <model_dir>-hub).")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise ValueError(f"{target} exists and is not a folder (a file or a link): nothing there is replaced; pass "
                         "another --staging_dir.")
    lock_folder(target, "--staging_dir")
    remove_temporaries_of(target)
    if target.is_dir() and any(target.iterdir()) and not (target / STAGING_MARKER).is_file():
        raise ValueError(f"{target} exists and is not a folder staged earlier (it has no {STAGING_MARKER} file): "
                         "nothing there is deleted; pass another --staging_dir or remove it yourself.")
    entries = model_entries(model_dir)
    check_digests(model_dir)  # damaged weights are not uploaded
    if theirs := foreign(target, staged_output(STAGING_MARKER)):
        raise ValueError(f"{target} holds {', '.join(theirs)}, which no staging wrote: the staged folder is uploaded "
                         f"whole, so nothing is staged there. Move them out of {target} or pass another "
                         "--staging_dir.")
    with replacing(target, staged_output(STAGING_MARKER)) as temp:
        (temp / STAGING_MARKER).write_text(f"Staged from {model} by hf_seqmodels; the next staging replaces it.\n")
        for name in entries:
            if name == SOURCE_TOKENIZER_DIR:
                (temp / name).mkdir()
                for path in (model_dir / name).iterdir():
                    if path.name in TOKENIZER_FILES:
                        shutil.copy2(path, temp / name / path.name)
            elif name == "custom_generate":  # the model's own decoding loop (models/decoding.py)
                shutil.copytree(model_dir / name, temp / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(model_dir / name, temp / name)
        card.save(temp / "README.md")
    return sorted(str(p.relative_to(target)) for p in target.rglob("*")
                  if p.is_file() and p.name not in (STAGING_MARKER, MANIFEST))


def check_hub_folder(folder: str | Path, run: dict | None = None) -> None:
    """Validate a staged folder offline; raise a ValueError listing every problem.

    Checks: safetensors weights and no pickles; config.json, and for a model type transformers does not know an
    ``auto_map`` whose code files are all present (with their sibling imports); a tokenizer (and a source tokenizer
    for a separate source vocabulary); README.md whose YAML parses with huggingface_hub's ModelCard (model-index
    included) and has license, library_name and tags; and, given ``run``, that every score in the model-index
    equals the run's.
    """
    folder = Path(folder)
    names = {p.name for p in folder.iterdir()}
    problems = []
    if not any(_matches(name, ("*.safetensors",)) for name in names):
        problems.append("no *.safetensors weights")
    if any(Path(name).suffix.lower() in PICKLE_SUFFIXES for name in names):
        problems.append("pickle weights present")
    if "config.json" not in names:
        problems.append("no config.json")
    else:
        problems += _config_problems(folder, names)
    if "tokenizer.json" not in names and "vocab.txt" not in names:
        problems.append("no tokenizer files (tokenizer.json or vocab.txt)")
    if "README.md" not in names:
        problems.append("no README.md model card")
    else:
        problems += _card_problems(folder / "README.md", run)
    if problems:
        raise ValueError(f"{folder} is not ready for the Hub:\n- " + "\n- ".join(problems))


def _config_problems(folder: Path, names: set[str]) -> list[str]:
    """What config.json's model needs and the folder lacks: remote code (``auto_map``), a source tokenizer."""
    config = json.loads((folder / "config.json").read_text())
    problems = []
    if config.get("model_type") not in CONFIG_MAPPING_NAMES:
        if "auto_map" not in config:
            problems.append(f"config.json of model_type {config.get('model_type')!r} has no auto_map")
        for code_file in sorted(code_files(config)):
            if code_file not in names:
                problems.append(f"auto_map names {code_file}, which is missing")
        for code_file in (n for n in names if n.endswith(".py")):
            for imported in sibling_imports((folder / code_file).read_text()):
                if imported not in names:
                    problems.append(f"{code_file} imports .{imported.removesuffix('.py')}, which is missing")
    source_tokenizer = folder / SOURCE_TOKENIZER_DIR / "tokenizer.json"
    if config.get("source_vocab_size") is not None and not source_tokenizer.is_file():
        problems.append(f"config.json has a source vocabulary of its own (source_vocab_size "
                        f"{config['source_vocab_size']}) but {SOURCE_TOKENIZER_DIR}/tokenizer.json is missing")
    return problems


def _card_problems(readme: Path, run: dict | None) -> list[str]:
    """What README.md's metadata lacks, or states differently from ``run``."""
    try:
        data = ModelCard.load(readme).data  # parses the YAML and the model-index
    except ValueError as error:
        return [f"README.md metadata does not validate: {error}"]
    problems = [f"README.md metadata has no {key}" for key in ("license", "library_name", "tags") if not data.get(key)]
    if not data.eval_results:
        problems.append("README.md metadata has no model-index results")
    elif run is not None:
        expected = {(split, metric.hub_id): value for prefix, split in SPLIT_OF_PREFIX.items()
                    for metric, value in run_scores(run, prefix)}
        found = {(result.dataset_split, result.metric_type): result.metric_value for result in data.eval_results}
        if found != expected:
            problems.append(f"README.md model-index scores {found} differ from the results file {expected}")
    return problems
