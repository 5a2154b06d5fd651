"""A run's training state on disk as safetensors and JSON only: resuming a checkpoint never unpickles, so a
checkpoint someone hands you cannot run code (unpickling calls whatever a pickle's ``__reduce__`` names).

A checkpoint folder holds:

- ``model.safetensors``: the model's weights (tied weights once);
- ``optimizer.json`` + ``optimizer.safetensors`` and ``scheduler.json``: their ``state_dict()``;
- ``<name>.json`` (+ ``<name>.safetensors``) for each extra object of the run (``best_model``: `training.BestModel`);
- ``rng_state_<i>.json`` + ``rng_state_<i>.safetensors``: the random states of process ``i`` (Python, NumPy, torch
  on the CPU, and CUDA when present), so that dropout continues as if the run had never stopped.

A state dict's JSON keeps its structure; each tensor in it goes to the part's ``.safetensors`` file and stands in
the JSON as ``{"__tensor__": key}``; tuples and dicts with integer keys (the optimizer's state per parameter) are
tagged so that they come back as they were. Every file read is checked against the state it replaces (keys, types,
tensor shapes), and any problem (missing, damaged, of another model or other options) is a ValueError naming the
file. `pickle_files` lists what a folder holds in a format that unpickles (an older checkpoint's, for one).
"""

import inspect
import json
import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..models.weight_files import PICKLE_SUFFIXES

logger = logging.getLogger(__name__)

MODEL_FILE = "model.safetensors"
TENSOR, TUPLE, INT_KEYS = "__tensor__", "__tuple__", "__int_keys__"
DEVICE_OPTIONS = {"params", "foreach", "fused", "capturable", "differentiable"}  # not checked on a CPU stand-in
WHAT_TO_DO = ("resume from a complete checkpoint of a run with the same model and options, or start a new run "
              "without --resume_from_checkpoint")


def pickle_files(folder: Path) -> list[Path]:
    """The files in ``folder`` (at any depth) whose names say pickle or ``torch.save``."""
    return sorted(path for path in Path(folder).rglob("*") if path.suffix.lower() in PICKLE_SUFFIXES)


def rng_part(process_index: int) -> str:
    return f"rng_state_{process_index}"


@dataclass
class TrainingState:
    """What a checkpoint keeps of a run: the (unwrapped) ``model``, its ``optimizer`` and ``scheduler``, and
    ``extras`` (name -> an object with ``state_dict()`` / ``load_state_dict(state)``), plus each process's RNG
    states."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    extras: dict[str, object] = field(default_factory=dict)

    def objects(self) -> dict[str, object]:
        """The parts written once (by the main process), by file name, besides the model."""
        return {"optimizer": self.optimizer, "scheduler": self.scheduler, **self.extras}

    def save(self, folder: Path, process_index: int, is_main_process: bool) -> None:
        """Write the state into the existing ``folder``: every part on the main process, the RNG states of
        ``process_index`` on each."""
        folder = Path(folder)
        if is_main_process:
            save_file(model_tensors(self.model), str(folder / MODEL_FILE))
            for name, obj in self.objects().items():
                write_part(folder, name, obj.state_dict())
        write_part(folder, rng_part(process_index), rng_state())

    def load(self, folder: Path, process_index: int, ignore_missing_rng_state: bool = False) -> None:
        """Load every part from ``folder`` (with the RNG states of ``process_index``), each checked first.
        Without the RNG states (or with ones that do not fit this machine) it refuses, unless
        ``ignore_missing_rng_state``: then it warns and keeps the current ones."""
        folder = Path(folder)
        model_file = require(folder / MODEL_FILE, "the model's weights")
        tensors = read_tensors(model_file)
        check_dtypes(tensors, self.model.state_dict(), model_file)
        _load_into(model_file, lambda: load_model_tensors(self.model, tensors))
        _load_part(folder, "optimizer", self.optimizer,
                   lambda state, file: check_optimizer_state(state, self.optimizer, file))
        _load_part(folder, "scheduler", self.scheduler,
                   lambda state, file: check_like(state, self.scheduler.state_dict(), file, signs=True))
        for name, obj in self.extras.items():  # an extra checks the values of its state in load_state_dict
            _load_part(folder, name, obj, lambda state, file, obj=obj: check_like(state, obj.state_dict(), file, False))
        rng_file = folder / f"{rng_part(process_index)}.json"
        try:
            state = read_part(folder, rng_part(process_index))
            check_like(state, rng_state(), rng_file)
            _load_into(rng_file, lambda: set_rng_state(state))
        except ValueError as error:
            if not ignore_missing_rng_state:
                raise ValueError(f"{error} Without the random states of process {process_index} the resumed run "
                                 f"differs from an uninterrupted one; pass --ignore_missing_rng_state to resume "
                                 f"anyway.") from error
            logger.warning(f"{error} Resuming with fresh random states (--ignore_missing_rng_state): the run "
                           f"differs from an uninterrupted one.")


def model_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s state dict to write: a tied weight once (under its first name), every tensor its own contiguous
    copy. safetensors' ``save_model`` refuses tensors that share memory without one covering it all, which is how
    cuDNN keeps a recurrent layer's weights on a GPU (views into one flat buffer)."""
    tensors, seen = {}, set()
    for name, tensor in model.state_dict().items():
        identity = (tensor.data_ptr(), tensor.dtype, tuple(tensor.shape), tensor.stride())
        if identity not in seen:
            seen.add(identity)
            tensors[name] = tensor.detach().clone().contiguous()
    return tensors


def load_model_tensors(model: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Load what `model_tensors` (or safetensors' ``save_model``) wrote: every weight, a tied one under any of its
    names; a ValueError naming the keys that are missing or of another model."""
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    state = model.state_dict()
    loaded = {state[name].data_ptr() for name in tensors if name in state}
    missing = [name for name in missing if state[name].data_ptr() not in loaded]
    if missing or unexpected:
        raise ValueError(f"the weights do not fit the model: missing {missing or 'none'}, of another model "
                         f"{unexpected or 'none'}")


def _load_part(folder: Path, name: str, obj, check) -> None:
    """Read the part ``name``, ``check(state, file)`` it, and load it into ``obj``."""
    state, file = read_part(folder, name), folder / f"{name}.json"
    check(state, file)
    _load_into(file, lambda: obj.load_state_dict(state))


def rng_state() -> dict:
    """The random states of this process: Python's, NumPy's (the legacy global generator), torch's on the CPU and,
    when there is one, on each CUDA device."""
    numpy = np.random.get_state(legacy=False)
    numpy["state"]["key"] = numpy["state"]["key"].tolist()
    state = {"python": random.getstate(), "numpy": numpy, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore the states `rng_state` returned, refusing (ValueError) Mersenne Twister states out of range, which
    Python would truncate silently."""
    words = [*state["python"][1], *state["numpy"]["state"]["key"]]
    positions = (state["python"][1][-1], state["numpy"]["state"]["pos"])
    if not (all(0 <= word < 2**32 for word in words) and all(0 <= position <= 624 for position in positions)):
        raise ValueError("a Mersenne Twister state holds 32-bit words and a position in 0..624; this one does not")
    random.setstate(state["python"])
    numpy = dict(state["numpy"], state=dict(state["numpy"]["state"]))
    numpy["state"]["key"] = np.array(numpy["state"]["key"], dtype=np.uint32)
    np.random.set_state(numpy)
    torch.set_rng_state(state["torch"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


def require(file: Path, what: str) -> Path:
    """``file``, or a ValueError saying that its checkpoint lacks it."""
    if not file.is_file():
        raise ValueError(f"{file.parent} has no {file.name} ({what}): it is not a complete checkpoint of this "
                         f"version; {WHAT_TO_DO}.")
    return file


def write_part(folder: Path, name: str, state) -> None:
    """``state`` as ``<name>.json``, with its tensors in ``<name>.safetensors`` (written only when it has some)."""
    tensors = {}
    text = json.dumps(to_json(state, tensors, name), indent=1)
    if tensors:
        save_file(tensors, str(folder / f"{name}.safetensors"))
    (folder / f"{name}.json").write_text(text + "\n", encoding="utf-8")


def read_part(folder: Path, name: str):
    """The state written by `write_part`; a ValueError naming the file when it is missing or damaged."""
    file = require(folder / f"{name}.json", f"the {name} state")
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
        raise ValueError(f"{file} is not valid JSON ({error}): the checkpoint is damaged; {WHAT_TO_DO}.") from error
    tensors = {}
    if _has_tensors(value):
        tensors = read_tensors(require(folder / f"{name}.safetensors", f"the tensors of {file.name}"))
    try:
        return from_json(value, tensors)
    except (KeyError, TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"{file} is not a training state this version wrote ({type(error).__name__}: {error}); "
                         f"{WHAT_TO_DO}.") from error


def read_tensors(file: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors ``file``; a ValueError naming it when it is damaged."""
    try:
        return load_file(str(file))
    except (SafetensorError, OSError) as error:
        raise ValueError(f"{file} is not a readable safetensors file ({error}): the checkpoint is damaged; "
                         f"{WHAT_TO_DO}.") from error


def check_dtypes(tensors: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], file: Path) -> None:
    """Refuse weights of another dtype than the model's (loading would cast them: integers, say, silently)."""
    for name, tensor in tensors.items():
        if name in expected and tensor.dtype != expected[name].dtype:
            raise ValueError(f"{file} does not fit this run: {name} is {_describe(tensor)}, the model's is "
                             f"{_describe(expected[name])}; {WHAT_TO_DO}.")


def to_json(value, tensors: dict, key: str):
    """``value`` (a state dict) in JSON form; its tensors go to ``tensors`` under their path ``key``."""
    if isinstance(value, torch.Tensor):
        tensors[key] = value.detach().cpu().contiguous()
        return {TENSOR: key}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        items = [to_json(item, tensors, f"{key}.{i}") for i, item in enumerate(value)]
        return {TUPLE: items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        if value and all(type(k) is int for k in value):
            return {INT_KEYS: {str(k): to_json(v, tensors, f"{key}.{k}") for k, v in value.items()}}
        if all(isinstance(k, str) and k not in (TENSOR, TUPLE, INT_KEYS) for k in value):
            return {k: to_json(v, tensors, f"{key}.{k}") for k, v in value.items()}
    elif value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{key}: a {type(value).__name__} has no JSON form in a training state.")


def from_json(value, tensors: dict):
    """The state that `to_json` turned into ``value`` (``tensors``: the contents of its safetensors file)."""
    if isinstance(value, list):
        return [from_json(item, tensors) for item in value]
    if not isinstance(value, dict):
        return value
    if TENSOR in value:
        return tensors[value[TENSOR]]
    if TUPLE in value:
        return tuple(from_json(value[TUPLE], tensors))
    if INT_KEYS in value:
        return {int(k): from_json(v, tensors) for k, v in value[INT_KEYS].items()}
    return {k: from_json(v, tensors) for k, v in value.items()}


def _has_tensors(value) -> bool:
    if isinstance(value, list):
        return any(map(_has_tensors, value))
    return isinstance(value, dict) and (TENSOR in value or any(map(_has_tensors, value.values())))


def check_like(state, expected, file: Path, values: bool = True, key: str = "", signs: bool = False) -> None:
    """Refuse (a ValueError naming ``file``) a loaded ``state`` whose form differs from ``expected``, the state of
    the object it is to replace: other keys, lengths, types, tensor shapes or dtypes, or a number that is not finite
    where the run's own is (with ``signs``: negative where the run's own is not). With ``values`` False only
    the top-level keys are compared (an object whose fresh state has ``None`` where a saved one has values).
    ``key``: where ``state`` is in the file (messages name it)."""
    if not values:
        expected = {key: None for key in expected} if isinstance(expected, dict) else expected
        state = {key: None for key in state} if isinstance(state, dict) else state
    if (difference := _difference(state, expected, key, signs)) is not None:
        raise ValueError(f"{file} does not fit this run: {difference}; {WHAT_TO_DO}.")


def _difference(value, expected, key: str, signs: bool) -> str | None:
    """Where ``value`` differs in form from ``expected`` (None where it does not)."""
    where = key or "the top level"
    if isinstance(expected, torch.Tensor):
        if not isinstance(value, torch.Tensor) or (value.shape, value.dtype) != (expected.shape, expected.dtype):
            return f"{where} is {_describe(value)}, expected {_describe(expected)}"
        return None
    if isinstance(expected, dict):
        if not isinstance(value, dict) or value.keys() != expected.keys():
            return f"{where} has {_describe(value)}, expected keys {sorted(map(str, expected))}"
        return next((found for k in expected
                     if (found := _difference(value[k], expected[k], f"{key}.{k}".lstrip("."), signs))), None)
    if isinstance(expected, (list, tuple)):
        if type(value) is not type(expected) or len(value) != len(expected):
            return f"{where} is {_describe(value)}, expected {_describe(expected)}"
        return next((found for i, (item, wanted) in enumerate(zip(value, expected))
                     if (found := _difference(item, wanted, f"{key}.{i}".lstrip("."), signs))), None)
    if type(value) is not type(expected):
        return f"{where} is {_describe(value)}, expected {_describe(expected)}"
    if isinstance(expected, float) and math.isfinite(expected) and not math.isfinite(value):
        return f"{where} is {value}, expected a finite number"
    if signs and isinstance(expected, (int, float)) and not isinstance(expected, bool) and value < 0 <= expected:
        return f"{where} is {value}, expected a number >= 0"
    return None


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, dict):
        return f"keys {sorted(map(str, value))}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"{value!r:.60} ({type(value).__name__})"


def check_optimizer_state(state, optimizer: torch.optim.Optimizer, file: Path) -> None:
    """Refuse an optimizer state that does not fit ``optimizer`` (which may not have taken a step yet): other
    parameter groups (options, parameters), options its class refuses (a negative learning rate, say), per-parameter
    states unlike each other, or tensors of other shapes than their parameters (scalars, like ``step``, aside)."""
    expected = optimizer.state_dict()
    check_like(state, expected, file, values=False)
    check_like(state["param_groups"], expected["param_groups"], file, key="param_groups", signs=True)
    optimizer_class = type(getattr(optimizer, "optimizer", optimizer))  # the one Accelerate's wrapper holds
    accepted = set(inspect.signature(optimizer_class).parameters) - DEVICE_OPTIONS
    for group in state["param_groups"]:
        options = {name: value for name, value in group.items() if name in accepted}  # checked by the class itself
        _load_into(file, lambda: optimizer_class([torch.zeros(1, requires_grad=True)], **options))
    if [group["params"] for group in state["param_groups"]] != [group["params"] for group in expected["param_groups"]]:
        raise ValueError(f"{file} does not fit this run: its parameter groups list other parameters; {WHAT_TO_DO}.")
    shapes = dict(enumerate(tuple(param.shape) for group in optimizer.param_groups for param in group["params"]))
    entries = state["state"]
    if not isinstance(entries, dict):
        raise ValueError(f"{file} does not fit this run: state is {_describe(entries)}, expected a dict; {WHAT_TO_DO}.")
    names = {frozenset(entry) for entry in entries.values() if isinstance(entry, dict)}
    for index, entry in entries.items():
        if index not in shapes or not isinstance(entry, dict) or len(names) > 1:
            raise ValueError(f"{file} does not fit this run: state.{index} is not the state of one of its "
                             f"{len(shapes)} parameters, like the others; {WHAT_TO_DO}.")
        for name, tensor in entry.items():
            if isinstance(tensor, torch.Tensor) and tensor.dim() and tuple(tensor.shape) != shapes[index]:
                raise ValueError(f"{file} does not fit this run: state.{index}.{name} has shape "
                                 f"{tuple(tensor.shape)}, parameter {index} has {shapes[index]}; {WHAT_TO_DO}.")


def _load_into(file: Path, load) -> None:
    """Run ``load()`` (which fills an object from ``file``), its failure (torch's report of a mismatch, a value out
    of range) turned into a ValueError naming ``file``."""
    try:
        load()
    except ValueError as error:
        if str(file) in str(error):
            raise
        raise ValueError(f"{file} does not fit this run ({str(error).rstrip('.')}); {WHAT_TO_DO}.") from error
    except (RuntimeError, KeyError, TypeError, IndexError, OverflowError, SafetensorError) as error:
        raise ValueError(f"{file} does not fit this run or is damaged ({type(error).__name__}: {error}); "
                         f"{WHAT_TO_DO}.") from error
