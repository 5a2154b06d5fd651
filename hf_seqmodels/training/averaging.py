"""Checkpoint averaging, as fairseq's ``scripts/average_checkpoints.py``: the mean of the weights of several
``step_<n>`` checkpoints of one run (`checkpoints.Checkpoints`), saved as a model folder like a run's output.

Only ``model.safetensors`` is read (nothing is unpickled); the checkpoints must hold the same tensors (names, shapes,
dtypes), else a ValueError names the first difference. The config, generation config and tokenizer come from the
newest checkpoint. The folder is written beside the output and renamed into place once complete, and an existing
output is never replaced.
"""

import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, load_model, save_file
from transformers import AutoConfig, GenerationConfig

from ..storage.atomic_folders import check_digests, replacing
from .checkpoint_format import MODEL_FILE
from .checkpoints import TOKENIZER_DIR, Checkpoints


def last_checkpoints(folder: str | Path, count: int) -> list[Path]:
    """The newest ``count`` ``step_<n>`` checkpoints of ``folder``, oldest first; a ValueError when it has fewer."""
    found = Checkpoints(folder).all()
    if count < 1 or len(found) < count:
        raise ValueError(f"--last {count}: {folder} holds {len(found)} step_<n> checkpoint(s); average at least 1 and "
                         f"at most that many.")
    return found[-count:]


def average_weights(checkpoints: list[Path]) -> dict[str, torch.Tensor]:
    """The mean of each floating-point tensor of the checkpoints' ``model.safetensors`` (in float64, then in the
    tensor's own dtype); other tensors (integer buffers) must be equal and are kept."""
    first, *others = checkpoints
    weights = read_weights(first)
    sums = {name: tensor.double() for name, tensor in weights.items() if tensor.is_floating_point()}
    for checkpoint in others:
        more = read_weights(checkpoint)
        check_same_tensors(weights, more, first, checkpoint)
        for name, tensor in more.items():
            if name in sums:
                sums[name] += tensor.double()
            elif not torch.equal(tensor, weights[name]):
                raise ValueError(f"{checkpoint}: {name} ({tensor.dtype}) differs from {first}'s, and only "
                                 f"floating-point tensors are averaged; average checkpoints of one run.")
    return {name: (sums[name] / len(checkpoints)).to(tensor.dtype) if name in sums else tensor
            for name, tensor in weights.items()}


def read_weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    file = Path(checkpoint) / MODEL_FILE
    if not file.is_file():
        raise ValueError(f"{checkpoint} has no {MODEL_FILE}: pass step_<n> checkpoint folders of a run.")
    check_digests(checkpoint)
    return load_file(str(file))


def check_same_tensors(expected: dict, found: dict, first: Path, checkpoint: Path) -> None:
    """Refuse checkpoints of different models: other tensor names, shapes or dtypes."""
    if found.keys() != expected.keys():
        difference = sorted(found.keys() ^ expected.keys())
        raise ValueError(f"{checkpoint} and {first} hold different tensors ({', '.join(difference[:5])}): average "
                         f"checkpoints of one model.")
    for name, tensor in found.items():
        if (tensor.shape, tensor.dtype) != (expected[name].shape, expected[name].dtype):
            raise ValueError(f"{checkpoint}: {name} is {tensor.dtype} {tuple(tensor.shape)}, {first} has "
                             f"{expected[name].dtype} {tuple(expected[name].shape)}: average checkpoints of one model.")


def average_checkpoints(checkpoints: list[str | Path], output_dir: str | Path) -> Path:
    """Save the average of ``checkpoints`` (`average_weights`) as a model folder ``output_dir`` (which must not
    exist) that ``AutoModel*.from_pretrained`` loads, with the newest checkpoint's config and tokenizer."""
    checkpoints, output_dir = [Path(checkpoint) for checkpoint in checkpoints], Path(output_dir)
    if not checkpoints:
        raise ValueError("No checkpoints to average: pass step_<n> folders or --checkpoint_dir with --last N.")
    if output_dir.exists():
        raise ValueError(f"--output_dir {output_dir} exists; averaging writes a new folder: pass another path.")
    newest = max(checkpoints, key=Checkpoints.step)
    if not (newest / "config.json").is_file():
        raise ValueError(f"{newest} has no config.json (checkpoints written before they held it): average "
                         f"checkpoints written by this version.")
    config = AutoConfig.from_pretrained(newest)
    model = model_class(config)(config)
    weights = average_weights(checkpoints)
    with replacing(output_dir) as temp:
        save_file(weights, str(temp / MODEL_FILE))
        load_model(model, str(temp / MODEL_FILE))  # strict: the names the model has, its tied weights once
        (temp / MODEL_FILE).unlink()
        if model.can_generate():
            model.generation_config = GenerationConfig.from_pretrained(newest)
        model.save_pretrained(temp)
        if (newest / TOKENIZER_DIR).is_dir():
            shutil.copytree(newest / TOKENIZER_DIR, temp, dirs_exist_ok=True)
    return output_dir


def model_class(config) -> type:
    """The class the config's ``architectures`` names, among the package's models."""
    import hf_seqmodels

    name = (config.architectures or [None])[0]
    if not hasattr(hf_seqmodels, str(name)):
        raise ValueError(f"The checkpoints' config names the model class {name!r}, which is not one of hf_seqmodels.")
    return getattr(hf_seqmodels, name)
