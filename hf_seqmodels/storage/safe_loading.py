"""Loading a saved model (a folder or a Hub repository) the way our scripts do: safetensors only, and nothing
guessed. Pickled weights (``pytorch_model.bin``, ``*.pt``, ...) can run any code their author put in them when
loaded, so they are refused; a config.json with keys its class does not know, or a folder whose weights lack some of
the model's (a missing tensor, a config declaring more layers than the weights hold) or hold others, is refused
naming them, where transformers' ``from_pretrained`` logs a table and initialises the missing weights at random.
"""

from pathlib import Path

from ..models.configuration_utils import check_config_file
from ..models.weight_files import refuse_pickled_weights
from .atomic_folders import check_digests


def load_pretrained(auto_class, name_or_path, new_head: bool = False, **kwargs):
    """``auto_class.from_pretrained(name_or_path, use_safetensors=True, **kwargs)``, checked: a local folder whose
    weights are only pickled is refused first, with a ValueError naming the file and saying how to convert it; its
    config.json must pass ``check_config_file``; a damaged safetensors file is an OSError naming it (its sha256
    differs from the one the folder's manifest recorded: `atomic_folders.check_digests`; or it does not open: our
    models' ``from_pretrained``); weights the model lacks or does not take are a ValueError naming the keys.

    ``new_head``: the model puts a new head on the saved model's body (a classifier on a language model), or is
    the bare body of a saved model with a head: weights outside the body may then be missing or left over; the
    body's must all be there."""
    folder = Path(name_or_path)
    if folder.is_dir():
        check_digests(folder)  # weights whose bytes changed since the run saved them: an OSError naming the file
    refuse_pickled_weights(folder, auto_class.__name__)  # any model's folder, not only ours
    if (folder / "config.json").is_file():
        check_config_file(folder / "config.json")
    with_info = kwargs.pop("output_loading_info", False)
    model, info = auto_class.from_pretrained(name_or_path, use_safetensors=True, output_loading_info=True, **kwargs)
    check_loaded_weights(model, info, name_or_path, new_head)
    return (model, info) if with_info else model


def check_loaded_weights(model, info: dict, name_or_path, new_head: bool = False) -> None:
    """Raise a ValueError naming the keys unless ``info`` (``from_pretrained``'s loading info for ``model``) shows
    every weight loaded from the checkpoint and none left over, or, with ``new_head``, every weight of the body."""
    prefix = f"{model.base_model_prefix}." if model.base_model is not model else None

    def counted(keys, left_over: bool) -> list[str]:
        if not new_head:
            return sorted(keys)
        if prefix is None:  # a bare body: the saved head's weights are left over, its own must all be there
            return [] if left_over else sorted(keys)
        return sorted(key for key in keys if key.startswith(prefix))

    problems = {
        "the folder lacks": counted(info.get("missing_keys", ()), False),
        "the model does not take": counted(info.get("unexpected_keys", ()), True),
        "have other shapes than the model's": [key for key, *_ in info.get("mismatched_keys", ())],
    }
    if any(problems.values()):
        found = "; ".join(f"{what}: {', '.join(keys)}" for what, keys in problems.items() if keys)
        raise ValueError(
            f"{name_or_path} does not hold the weights of the {type(model).__name__} its config describes ({found}). "
            "A config whose sizes (layers, hidden size, vocabulary) disagree with the weights, or weights of another "
            "model, would run with random weights: save the model again, or fix config.json to match its weights."
        )
