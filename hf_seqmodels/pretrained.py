"""Loading a saved model (a folder or a Hub repository) from safetensors only: pickled weights
(``pytorch_model.bin``, ``*.pt``, ...) can run any code their author put in them when loaded, so they are refused.
"""

from pathlib import Path

from safetensors import SafetensorError

from .training_state import PICKLE_SUFFIXES


def load_pretrained(auto_class, name_or_path, **kwargs):
    """``auto_class.from_pretrained(name_or_path, use_safetensors=True, **kwargs)``. A local folder whose weights
    are only pickled is refused first, with a ValueError naming the file and saying how to convert it; damaged
    safetensors weights are a ValueError naming the folder."""
    folder = Path(name_or_path)
    if folder.is_dir() and not any(folder.glob("*.safetensors")):
        pickled = sorted(path.name for path in folder.iterdir() if path.suffix.lower() in PICKLE_SUFFIXES)
        if pickled:
            raise ValueError(
                f"{folder} holds its weights only as {', '.join(pickled)}, a pickle: loading one can run any code "
                f"its author put in it, so hf_seqmodels loads model.safetensors only. If you trust its source, "
                f"convert it once (transformers' {auto_class.__name__}.from_pretrained(folder).save_pretrained("
                f"new_folder) writes model.safetensors) and pass the new folder."
            )
    try:
        return auto_class.from_pretrained(name_or_path, use_safetensors=True, **kwargs)
    except SafetensorError as error:
        raise ValueError(f"{name_or_path}: its model.safetensors is damaged ({error}); save or download the model "
                         f"again.") from error
