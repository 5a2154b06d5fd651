"""A local model folder's weight files, judged before any model is built or any weight read: weights only pickled
are refused (loading a pickle can run any code), and a config that describes far more parameters than the
safetensors files hold (a config.json edited to `num_layers: 1000000` over the weights of 2 layers) is refused from
the files' headers, in milliseconds, where building its model would take minutes and gigabytes before the weights
disagreed. `SeqModelsPreTrainedModel.from_pretrained` calls both, so a folder loaded with `trust_remote_code` is
judged too; the scripts' `safe_loading.load_pretrained` goes through it as well."""

import json
import math
from pathlib import Path

from transformers.utils import SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

from .configuration_utils import GB

# Suffixes of pickled files (also those hf_seqmodels.training.checkpoint_format refuses in a checkpoint).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".bin", ".pt", ".pth", ".ckpt")
# safetensors refuses headers above 100 MB: a larger one is damage, which loading reports.
HEADER_LIMIT = 100 * 2**20
# A config is refused when its embeddings and layers alone count more than this many times the elements the weight
# files store, plus `SLACK`. Honest folders store at least the body (a new head or a bare body changes only the
# heads); packed quantized weights store up to 8 values per element; the slack keeps tiny models (whose few layers
# more or less loading reports by name) out of it.
RATIO, SLACK = 8, 1_000_000


def refuse_pickled_weights(folder: Path, loader: str) -> None:
    """Raise a ValueError naming the files when ``folder`` (a local folder) holds no safetensors file but pickled
    ones (``pytorch_model.bin``, ``*.pt``, ...), and say how to convert them; ``loader`` names the class whose
    ``from_pretrained`` converts them. Nothing is unpickled."""
    if not folder.is_dir() or any(folder.glob("*.safetensors")):
        return
    pickled = sorted(path.name for path in folder.iterdir() if path.suffix.lower() in PICKLE_SUFFIXES)
    if pickled:
        raise ValueError(
            f"{folder} holds its weights only as {', '.join(pickled)}, a pickle: loading one can run any code its "
            f"author put in it, so hf_seqmodels loads model.safetensors only. If you trust its source, convert it "
            f"once ({loader}.from_pretrained(folder, use_safetensors=False).save_pretrained(new_folder) writes "
            f"model.safetensors) and pass the new folder."
        )


def safetensors_files(folder: Path, variant: str | None = None) -> list[Path] | None:
    """The safetensors files that hold ``folder``'s weights, as ``from_pretrained`` looks for them:
    ``model.safetensors`` (``model.<variant>.safetensors``), else the shards that ``model.safetensors.index.json``
    names; None when there are none or a shard is missing (loading then says what is missing)."""
    def named(name: str) -> Path:
        stem, suffix = name.rsplit(".", 1)
        return folder / (f"{stem}.{variant}.{suffix}" if variant else name)

    if named(SAFE_WEIGHTS_NAME).is_file():
        return [named(SAFE_WEIGHTS_NAME)]
    try:
        shards = sorted(set(json.loads(named(SAFE_WEIGHTS_INDEX_NAME).read_text())["weight_map"].values()))
        files = [folder / shard for shard in shards]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return files if files and all(path.is_file() for path in files) else None


def read_header(path: Path) -> dict | None:
    """The header of a safetensors file (8 bytes of length, then JSON: name -> dtype, shape, offsets, and
    ``__metadata__``), read without its data; None when it is not readable as such."""
    try:
        with open(path, "rb") as file:
            length = int.from_bytes(file.read(8), "little")
            if not 0 < length <= HEADER_LIMIT:
                return None
            header = json.loads(file.read(length))
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def stored_elements(path: Path) -> int | None:
    """The number of elements of the tensors a safetensors file holds, from its header (`read_header`), not from its
    data; None when the header is not readable."""
    header = read_header(path)
    try:
        return sum(math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__")
    except (TypeError, KeyError, AttributeError):
        return None


def check_config_fits_weights(config, config_file: str, files: list[Path], stacks: str) -> None:
    """Raise a ValueError naming ``config_file`` (where ``config`` came from), the field and the weight ``files``
    when the embeddings and layers that ``config`` describes (its `size_terms` of ``stacks``, heads left out: a new
    head may be loaded on a saved body) count more than `RATIO` times the elements the files hold, plus `SLACK`.
    Unreadable headers are left to loading, which names the damaged file."""
    counts = [stored_elements(path) for path in files]
    if None in counts:
        return
    stored, body = sum(counts), [term for term in config.size_terms(stacks) if term.kind == "body"]
    needed = sum(term.count for term in body)
    if needed <= RATIO * stored + SLACK:
        return
    largest = max(body, key=lambda term: term.count)
    weights = ", ".join(str(path) for path in files)
    raise ValueError(
        f"{config_file} describes a model whose embeddings and layers alone have {needed:,} parameters "
        f"({needed * 4 / GB:,.1f} GB), {largest.count:,} of them in {largest.describe()}, but {weights} hold(s) "
        f"{stored:,} in all: the config does not describe these weights (edited, or written for another model). Set "
        f"the sizes in {config_file} to those the weights were saved with, or save the model again."
    )
