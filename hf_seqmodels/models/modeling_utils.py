"""What the models of every family share, in the shape of transformers' `modeling_utils`: the `PreTrainedModel`
base (which writes a saved folder's `custom_generate/`), the name of the cache argument, the checks of a model's token
inputs and padding masks (a mask is ``(batch, length)``, True or 1 = a real token, False or 0 = padding), the
language-model output layer and loss, and the encoder-decoders' decoder inputs and vocabulary resizing. A family's
modeling file imports this and layers, never another family.

The checks that read tensor values (token ids in range, a mask of 0s and 1s, no empty row) run in eager mode only:
while ``torch.compile``, ``torch.export`` or ``torch.fx`` trace a graph the values are unknown, and a branch on them
would break the graph. The traced code is the code that ran (and checked) eagerly."""

import functools
import inspect
import math
import os
import shutil
import warnings
from pathlib import Path
from typing import TypedDict

import torch
from torch import nn
from torch.nn import functional as F
from transformers import GenerationConfig, PretrainedConfig, PreTrainedModel
from transformers.cache_utils import Cache
from transformers import initialization as init
from transformers.generation.utils import GENERATION_MODES_MAPPING
from transformers.utils.hub import is_offline_mode
from transformers.loss.loss_utils import ForCausalLMLoss, ForMaskedLMLoss
from transformers.modeling_outputs import CausalLMOutputWithPast, ModelOutput
from transformers.modeling_utils import safe_open
from transformers.models.bart.modeling_bart import shift_tokens_right
from transformers.utils import is_tracing

from .configuration_utils import LABEL_KEYS, CheckedConfig, own_fields
from .weight_files import check_config_fits_weights, refuse_pickled_weights, safetensors_files

# The name under which transformers passes the decoding cache: ``past_key_values`` up to 5.23, ``cache`` from 5.24.
# generate() hands the cache to ``forward`` under that name and reads it back from the output under that name, and
# transformers' output classes declare a field of that name. Our models take the cache under either name (code written
# for either version keeps working) and return it under the installed version's name, decided here at import time, so
# that a folder saved for ``trust_remote_code`` works whichever version loads it.
CACHE_NAME = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def cache_argument(cache, past_key_values):
    """The cache a caller passed, as ``cache`` or as ``past_key_values`` (with transformers' deprecation warning
    where the installed version has renamed it)."""
    if past_key_values is None:
        return cache
    if cache is not None:
        raise TypeError("Pass the cache once: as `cache` or as `past_key_values`, not both.")
    if CACHE_NAME == "cache":
        warnings.warn("`past_key_values` is deprecated since transformers 5.24: pass the cache as `cache`.",
                      FutureWarning, stacklevel=3)
    return past_key_values


def takes_cache(forward):
    """A public ``forward`` whose cache argument is ``cache`` (transformers' name from 5.24), taking it also as
    ``past_key_values`` (its name before, which generate() of transformers 5.23 passes): the name is resolved here,
    once, where the call enters, and the model's code below knows only ``cache``. Both at once are refused."""

    @functools.wraps(forward)
    def resolved(self, *args, past_key_values: Cache | None = None, **kwargs):
        if past_key_values is not None:
            kwargs["cache"] = cache_argument(kwargs.get("cache"), past_key_values)
        return forward(self, *args, **kwargs)

    return resolved


def cache_field(cache) -> dict:
    """``{name: cache}`` under the installed transformers' name, for an output class's keyword arguments."""
    return {CACHE_NAME: cache}


def output_cache(output):
    """The cache an output carries (``output.cache`` or ``output.past_key_values``, whichever this version has)."""
    return getattr(output, CACHE_NAME)


class SeqModelsPreTrainedModel(PreTrainedModel):
    """The base of every family's `PreTrainedModel`: a base model under `model`, flags that default to the
    config's, and torch's own initialisation for recurrent layers (transformers' default knows `nn.LSTM` only)."""

    base_model_prefix = "model"
    main_input_name = "input_ids"
    # Auto class name -> "modeling_<family>.<Class>" for every Auto class of the family's config, filled where the
    # package registers them (hf_seqmodels/__init__.py); None in a class loaded from a saved folder's code, whose
    # config already carries the whole map.
    _family_auto_map: dict[str, str] | None = None

    def save_pretrained(self, save_directory, *args, **kwargs):
        """transformers' ``save_pretrained``, with every Auto class of the family in config.json's ``auto_map``
        (transformers writes only this class's): the folder then loads through any of them with
        ``trust_remote_code=True``. They all live in the modeling file that the save copies.

        A model that generates also gets ``custom_generate/generate.py`` (``save_custom_generate``): loaded with
        ``trust_remote_code=True``, its ``generate()`` runs our decoding loop, in which finished sentences leave
        the batch. (With ``push_to_hub=True`` the upload happens before it is written: upload the folder after.)"""
        if self._family_auto_map and self.is_remote_code():
            self.config.auto_map = {**(getattr(self.config, "auto_map", None) or {}), **self._family_auto_map}
        result = super().save_pretrained(save_directory, *args, **kwargs)
        if self.can_generate() and kwargs.get("is_main_process", True):
            save_custom_generate(self, save_directory)
        return result

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """transformers' ``from_pretrained``; a damaged safetensors file (truncated, empty, not safetensors) is an
        OSError naming the file, where safetensors' own error names none. Missing or unexpected weights keep
        transformers' behaviour (a log table; new weights initialised), which loading a body under a new head needs:
        ``hf_seqmodels.storage.safe_loading.load_pretrained`` refuses them.

        A local folder is judged before anything is built (`check_local_folder`): weights only pickled are refused
        unless ``use_safetensors=False`` is passed (a trusted pickle, to convert), and so is a config describing far
        more parameters than its safetensors files hold."""
        check_local_folder(cls, pretrained_model_name_or_path, kwargs)
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            # safetensors' error, known by its name: the files of this folder import only torch and transformers
            if type(error).__name__ != "SafetensorError":
                raise
            raise OSError(f"{damaged_file(pretrained_model_name_or_path, kwargs.get('subfolder', ''))} is damaged "
                          f"({error}); save or download the model again.") from error

    def _init_weights(self, module):
        if isinstance(module, nn.RNNBase):
            # torch's default for recurrent weights, U(-1/sqrt(H), 1/sqrt(H)); biases too.
            bound = module.hidden_size**-0.5
            for param in module.parameters():
                init.uniform_(param, -bound, bound)  # skips weights already loaded from a checkpoint
        else:
            super()._init_weights(module)

    def _flag(self, value: bool | None, name: str) -> bool:
        """A forward argument such as ``output_hidden_states``, or the config's value when it is None."""
        return value if value is not None else getattr(self.config, name)

    def _use_cache(self, use_cache: bool | None) -> bool:
        """``use_cache``, else the config's in evaluation: training never keeps a cache."""
        return use_cache if use_cache is not None else (self.config.use_cache and not self.training)

    def _prepare_generation_config(self, generation_config, **kwargs):
        # Where generate()'s options enter: transformers leaves some bad values to fail deep in its loop (num_beams=0
        # divides by zero) or to pass unnoticed (a top_p of 1.5, an eos id outside the vocabulary).
        generation_config, model_kwargs = super()._prepare_generation_config(generation_config, **kwargs)
        check_generation_config(generation_config, self.config.vocab_size)
        return generation_config, model_kwargs

    def _prepare_model_inputs(self, *args, **kwargs):
        # Where generate() picks its main input: transformers' own models fail later with an IndexError on 1-D ids.
        inputs, input_name, model_kwargs = super()._prepare_model_inputs(*args, **kwargs)
        check_generate_input(inputs, input_name)
        return inputs, input_name, model_kwargs

    def _get_deprecated_gen_repo(self, generation_mode, trust_remote_code, custom_generate=None):
        # Where generate() finds a search that transformers 5 moved to a Hub `custom_generate` repo (group beam search
        # from `num_beam_groups` > 1, constrained beam search, contrastive search, DoLa). Without trust_remote_code,
        # or offline, transformers fails without saying how to run it; a local copy of the repo runs offline.
        repo = GENERATION_MODES_MAPPING.get(generation_mode, "")
        if custom_generate is None and "/" in repo and (not trust_remote_code or is_offline_mode()):
            mode = generation_mode.name.replace("_", " ").lower()
            hint = ("`num_beam_groups` > 1 asks for it; set it to 1 for plain beam search. "
                    if generation_mode.name == "GROUP_BEAM_SEARCH" else "")
            raise ValueError(
                f"{mode.capitalize()} is no longer part of transformers' generate(): it runs from the Hub's "
                f"`custom_generate` repo {repo} (https://hf.co/{repo}). {hint}Pass "
                f"`custom_generate='{repo}', trust_remote_code=True` to generate() to download and run that code"
                f"{' (not possible offline: HF_HUB_OFFLINE is set)' if is_offline_mode() else ''}, or, offline, a "
                "local copy of it: `custom_generate='<folder holding custom_generate/generate.py>', "
                "trust_remote_code=True`."
            )
        return super()._get_deprecated_gen_repo(generation_mode, trust_remote_code, custom_generate)


def check_local_folder(cls, name_or_path, kwargs: dict) -> None:
    """What ``cls.from_pretrained(name_or_path, **kwargs)`` checks in a local folder before building the model:
    weights only pickled are a ValueError naming the files (`refuse_pickled_weights`; not with an explicit
    ``use_safetensors=False``); a config (``kwargs["config"]``, else the folder's config.json with the config fields
    among ``kwargs``) whose embeddings and layers count far more parameters than the folder's safetensors files hold,
    a ValueError naming the config, the field and the files (`check_config_fits_weights`). A Hub name, a state dict
    or a GGUF file are left to transformers."""
    if name_or_path is None or kwargs.get("state_dict") is not None or kwargs.get("gguf_file"):
        return
    folder = Path(name_or_path, kwargs.get("subfolder") or "")
    if not folder.is_dir():
        return
    if kwargs.get("use_safetensors") is not False:
        refuse_pickled_weights(folder, cls.__name__)
    files = safetensors_files(folder, kwargs.get("variant"))
    config, config_file = kwargs.get("config"), folder / "config.json"
    if files is None or not issubclass(cls.config_class, CheckedConfig):
        return
    if isinstance(config, PretrainedConfig):
        if Path(config.name_or_path or "").absolute() not in (folder.absolute(), Path(name_or_path).absolute()):
            config_file = "the config passed to from_pretrained"
    else:
        config_file = Path(config) / "config.json" if isinstance(config, (str, os.PathLike)) else config_file
        if not config_file.is_file():
            return
        fields = set(own_fields(cls.config_class)) | set(cls.config_class.attribute_map) | LABEL_KEYS
        config = cls.config_class.from_pretrained(config_file.parent,
                                                  **{key: kwargs[key] for key in kwargs if key in fields})
    if hasattr(config, "size_terms"):
        stacks = "both" if issubclass(cls, EncoderDecoderMixin) else "decoder" if cls.can_generate() else "encoder"
        check_config_fits_weights(config, str(config_file), files, stacks)


def save_custom_generate(model: PreTrainedModel, folder: str | Path) -> None:
    """Write our decoding loop into ``model``'s saved ``folder`` as ``custom_generate/generate.py``, the module whose
    ``generate`` transformers loads as the model's ``generate`` with ``trust_remote_code=True``. The loop is
    ``decoding.py`` beside this file, copied by path, not imported (an import would also copy it to the folder's
    root). Code loaded from a saved folder has no ``decoding.py`` beside it: its loop is the module of its ``generate``
    (transformers' copy of the folder's ``custom_generate/generate.py``); a model loaded without one saves none."""
    loop = Path(__file__).with_name("decoding.py")
    if not loop.is_file():
        generate = getattr(model.generate, "func", None)
        if generate is None:
            return
        loop = Path(inspect.getsourcefile(generate))
    target = Path(folder) / "custom_generate"
    target.mkdir(exist_ok=True)
    shutil.copyfile(loop, target / "generate.py")


def damaged_file(name_or_path, subfolder: str = "") -> str:
    """The safetensors file of a model folder that cannot be opened (its path), or a description of the weights of
    a Hub repository."""
    folder = Path(name_or_path, subfolder)
    for path in sorted(folder.glob("*.safetensors")) if folder.is_dir() else []:
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except Exception:  # noqa: BLE001 - any failure to open is the damage to name
            return str(path)
    return f"a safetensors file of {name_or_path}"


NEGATIVE_MEANS_NONE = ("eos_token_id", "pad_token_id")


def check_generation_config(config: GenerationConfig, vocab_size: int) -> None:
    """Raise a ValueError naming the option unless ``config``'s search sizes, lengths, probabilities and token ids
    are valid for a model of ``vocab_size`` tokens."""
    def integer(name: str, minimum: int) -> None:
        value = getattr(config, name, None)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
            raise ValueError(f"`{name}`={value!r} must be an integer of at least {minimum}.")

    for name, minimum in (("num_beams", 1), ("num_return_sequences", 1), ("max_new_tokens", 1), ("max_length", 1),
                          ("min_new_tokens", 0), ("min_length", 0), ("no_repeat_ngram_size", 0), ("top_k", 0)):
        integer(name, minimum)
    if config.min_new_tokens and config.max_new_tokens is not None and config.min_new_tokens > config.max_new_tokens:
        raise ValueError(f"`min_new_tokens`={config.min_new_tokens} is more than `max_new_tokens`="
                         f"{config.max_new_tokens}: no output can satisfy both.")
    for name, low, high in (("top_p", 0.0, 1.0), ("epsilon_cutoff", 0.0, 1.0), ("eta_cutoff", 0.0, 1.0)):
        value = getattr(config, name, None)
        if value is not None and not (isinstance(value, (int, float)) and low <= value <= high):
            raise ValueError(f"`{name}`={value!r} must be a probability in [{low}, {high}].")
    if not (isinstance(config.length_penalty, (int, float)) and math.isfinite(config.length_penalty)):
        raise ValueError(f"`length_penalty`={config.length_penalty!r} must be a finite number.")
    for name in ("eos_token_id", "pad_token_id", "bos_token_id", "decoder_start_token_id", "forced_bos_token_id",
                 "forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens"):
        value = getattr(config, name, None)
        # A negative eos or pad id is transformers' "none": generation never stops early (transformers warns).
        lowest = -math.inf if name in NEGATIVE_MEANS_NONE else 0
        for token_id in value if isinstance(value, (list, tuple)) else [value]:
            if token_id is not None and not (isinstance(token_id, int) and lowest <= token_id < vocab_size):
                raise ValueError(f"`{name}`={value!r} is outside the model's vocabulary (0..{vocab_size - 1}).")


def check_generate_input(inputs: torch.Tensor | None, name: str) -> None:
    """Raise unless generate()'s main input ``inputs`` (named ``name``) is batched: ``input_ids`` ``(batch, length)``,
    ``inputs_embeds`` ``(batch, length, size)``."""
    dims = {"input_ids": 2, "inputs_embeds": 3}.get(name)
    if isinstance(inputs, torch.Tensor) and dims is not None and inputs.dim() != dims:
        shape = "(batch, length)" if dims == 2 else "(batch, length, size)"
        raise ValueError(f"`{name}` has shape {tuple(inputs.shape)} but generate() takes a batch, {shape}: add the "
                         f"batch dimension (`{name}[None]` for one sequence).")


def check_tensor(value, name: str) -> None:
    """Raise a TypeError naming the argument unless ``value`` is a tensor (a list or an array is not converted: its
    dtype and device would be guesses)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}: pass tensors, e.g. "
                        "tokenizer(texts, return_tensors='pt').")


def check_input_ids(input_ids: torch.Tensor, vocab_size: int, name: str = "input_ids") -> None:
    """Raise a clear error for token ids outside ``[0, vocab_size)`` instead of an index error inside torch."""
    if input_ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"`{name}` must hold integer token ids, got dtype {input_ids.dtype}.")
    if input_ids.numel() == 0:
        raise ValueError(f"`{name}` is empty (shape {tuple(input_ids.shape)}): pass at least one token per sequence.")
    if is_tracing(input_ids):
        return
    low, high = torch.stack(torch.aminmax(input_ids)).tolist()  # one wait for a GPU, not two
    if low < 0 or high >= vocab_size:
        raise ValueError(
            f"`{name}` holds token ids in [{low}, {high}] but the model's vocabulary has {vocab_size} entries "
            f"(valid ids: 0..{vocab_size - 1}). Use the tokenizer the model was trained with, or set "
            f"`vocab_size` in the config to the tokenizer's size."
        )


def prepare_padding_mask(
    attention_mask: torch.Tensor | None,
    batch_size: int,
    length: int,
    past_length: int | None = None,
    name: str = "attention_mask",
) -> torch.Tensor | None:
    """Validate ``attention_mask`` (the argument ``name``) against the inputs and return it as a bool
    ``(batch, length)`` tensor.

    The mask has exactly ``length`` columns (a Transformer passes its cached positions plus the new ones). With
    ``past_length``, the positions a recurrent model already consumed from a cache, it may also cover those:
    ``length`` or ``past_length + length`` columns, of which the last ``length`` are returned.
    Returns ``None`` when there is no mask, meaning every position is a real token.
    """
    if attention_mask is None:
        return None
    check_tensor(attention_mask, name)
    widths = (length, past_length + length) if past_length else (length,)  # no hashing: sizes may be symbolic
    # Each width compared with `!=`, not `in`: under torch.compile a static cache's length is symbolic, and `in`
    # asks for a proof of equality that it cannot give.
    if (attention_mask.dim() != 2 or attention_mask.shape[0] != batch_size
            or all(attention_mask.shape[1] != width for width in widths)):
        expected = " or ".join(f"({batch_size}, {width})" for width in widths)
        raise ValueError(
            f"`{name}` has shape {tuple(attention_mask.shape)}, expected {expected}: one entry per position, "
            "1 for a token and 0 for padding" + (", the cached positions included or not" if len(widths) > 1 else "")
            + "."
        )
    if attention_mask.dtype != torch.bool and not is_tracing(attention_mask):
        if bool((not_binary := (attention_mask != 0) & (attention_mask != 1)).any()):
            raise ValueError(f"`{name}` must hold 1 for a token and 0 for padding, got the values "
                             f"{attention_mask[not_binary].unique()[:5].tolist()}.")
    # During generation the mask covers the cached prefix too; the current chunk is its last `length` columns.
    return attention_mask[:, -length:].bool()


def padding_or_none(mask: torch.Tensor | None) -> torch.Tensor | None:
    """``mask``, or ``None`` when it marks no padding, which lets the kernels take their fast paths (not while a
    graph is traced: the mask then stays, which gives the same results)."""
    return None if mask is not None and not is_tracing(mask) and bool(mask.all()) else mask


def check_no_empty_rows(mask: torch.Tensor, name: str = "attention_mask") -> None:
    """Raise if a row of ``mask`` has no real token: a sequence made only of padding has no result."""
    if is_tracing(mask):
        return
    empty = (~mask.any(dim=1)).nonzero().flatten()
    if empty.numel():
        raise ValueError(
            f"Rows {empty.tolist()} of `{name}` are all padding: every sequence needs at least one real token. "
            f"Drop empty sequences from the batch."
        )


def check_token_inputs(
    input_ids: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    vocab_size: int,
    embedding_size: int,
    dtype: torch.dtype,
    prefix: str = "",
) -> None:
    """The check of a stack's inputs where they enter the model: exactly one of ``input_ids`` ``(batch, length)``,
    ids in ``[0, vocab_size)``, and ``inputs_embeds`` ``(batch, length, embedding_size)`` of the model's ``dtype``,
    neither empty. ``prefix`` ("decoder_") names the arguments as the caller's forward does."""
    ids, embeds = f"{prefix}input_ids", f"{prefix}inputs_embeds"
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError(f"Pass exactly one of `{ids}` and `{embeds}`.")
    check_tensor(input_ids if input_ids is not None else inputs_embeds, ids if input_ids is not None else embeds)
    if input_ids is not None:
        if input_ids.dim() != 2:
            raise ValueError(f"`{ids}` must have shape (batch, length), got {tuple(input_ids.shape)}.")
        check_input_ids(input_ids, vocab_size, ids)
        return
    if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != embedding_size:
        raise ValueError(
            f"`{embeds}` must have shape (batch, length, {embedding_size}), got {tuple(inputs_embeds.shape)}."
        )
    if inputs_embeds.numel() == 0:
        raise ValueError(
            f"`{embeds}` is empty (shape {tuple(inputs_embeds.shape)}): pass at least one token per sequence."
        )
    if inputs_embeds.dtype != dtype:
        raise ValueError(f"`{embeds}` has dtype {inputs_embeds.dtype} but the model computes in {dtype}: convert "
                         f"them with `.to({dtype})`.")


def lm_output_layers(
    hidden_size: int, embedding_size: int, vocab_size: int, tie_word_embeddings: bool
) -> tuple[nn.Linear | None, nn.Linear]:
    """The output layer of a language model reading vectors of ``hidden_size``, and the projection to
    ``embedding_size`` that must come first when the output layer shares the embedding matrix
    (``tie_word_embeddings``) and the sizes differ (``None`` otherwise)."""
    projection = None
    if tie_word_embeddings and hidden_size != embedding_size:
        projection = nn.Linear(hidden_size, embedding_size, bias=False)
    return projection, nn.Linear(embedding_size if tie_word_embeddings else hidden_size, vocab_size)


def output_layer_into(layer: nn.Module, hidden: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """``layer(hidden)`` for ``hidden`` ``(rows, size)``, written into ``out`` ``(rows, vocab_size)`` when it is given
    and ``layer`` is a plain ``nn.Linear`` of ``out``'s dtype: the same ``addmm`` as ``layer(hidden)``. A decoding loop
    passes one buffer for all its steps: asking the allocator for rows x vocabulary floats at every step costs, on a
    CPU, fresh pages each time. Any other layer (a PEFT wrapper, another dtype), a layer with hooks, autocast or
    autograd (``out=`` has no gradient) computes through ``layer(hidden)``, as in ``forward``."""
    if (out is None or type(layer) is not nn.Linear or layer.weight.dtype != out.dtype or _has_hooks(layer)
            or torch.is_grad_enabled() or torch.is_autocast_enabled(hidden.device.type)):
        return layer(hidden)
    if layer.bias is None:
        return torch.mm(hidden, layer.weight.t(), out=out)
    return torch.addmm(layer.bias, hidden, layer.weight.t(), out=out)


def as_float32(logits: torch.Tensor) -> torch.Tensor:
    """``logits.float()``, without the call where they are float32 already (a decoding step's logits, at every
    step)."""
    return logits if logits.dtype == torch.float32 else logits.float()


def _has_hooks(module: nn.Module) -> bool:
    """Whether calling ``module`` runs hooks, its own or global ones (what ``Module.__call__`` checks before its
    fast path)."""
    hooks = nn.modules.module
    return bool(module._forward_hooks or module._forward_pre_hooks or hooks._global_forward_hooks
                or hooks._global_forward_pre_hooks)


def head_output(output_class: type[ModelOutput], outputs: ModelOutput, **fields) -> ModelOutput:
    """A head's ``output_class`` from its own ``fields`` (its loss and logits) and the base model's ``outputs``, whose
    fields of the same names it carries on (hidden states, attentions, encoder outputs, the cache)."""
    carried = {name: getattr(outputs, name) for name in output_class.__dataclass_fields__
               if name not in fields and name in outputs.__dataclass_fields__}
    return output_class(**fields, **carried)


def keep_logits_positions(hidden: torch.Tensor, logits_to_keep: int | torch.Tensor,
                          takes_mask: bool = False) -> torch.Tensor:
    """The positions of ``hidden`` ``(batch, length, size)`` whose logits a language model computes, as transformers'
    ``logits_to_keep``: an int keeps the last ``logits_to_keep`` (0: all, what generate() does not ask for), a 1-D
    tensor the positions it lists. With ``takes_mask`` (a head that says so), a bool ``(batch, length)`` tensor keeps
    the positions where it is True, as ``(kept, size)`` in row-major order. Anything else, or positions outside
    ``[-length, length)``, is refused."""
    length = hidden.shape[1]
    if isinstance(logits_to_keep, torch.Tensor):
        if takes_mask and logits_to_keep.dtype == torch.bool:
            if logits_to_keep.shape != hidden.shape[:2]:
                raise ValueError(f"`logits_to_keep` as a bool mask must have the shape {tuple(hidden.shape[:2])} "
                                 f"(batch, decoder positions); got {tuple(logits_to_keep.shape)}.")
            return hidden[logits_to_keep]
        if logits_to_keep.dim() != 1 or logits_to_keep.dtype not in (torch.int64, torch.int32):
            raise ValueError(f"`logits_to_keep` as a tensor must hold positions: 1-D, integer; got shape "
                             f"{tuple(logits_to_keep.shape)} and dtype {logits_to_keep.dtype}.")
        if (logits_to_keep.numel() and not is_tracing(logits_to_keep)
                and not -length <= int(logits_to_keep.min()) <= int(logits_to_keep.max()) < length):
            raise ValueError(f"`logits_to_keep` holds positions outside the {length} positions "
                             f"(valid: {-length}..{length - 1}).")
        return hidden[:, logits_to_keep]
    if not isinstance(logits_to_keep, int) or isinstance(logits_to_keep, bool) or logits_to_keep < 0:
        raise ValueError(f"`logits_to_keep`={logits_to_keep!r} must be an int >= 0 (the last positions; 0: all) or "
                         "a 1-D tensor of positions.")
    return hidden[:, -logits_to_keep:] if logits_to_keep else hidden


def check_label_ids(labels: torch.Tensor, vocab_size: int) -> None:
    """Raise a clear error unless ``labels`` hold token ids in ``[0, vocab_size)`` or -100 (ignored); not while a
    graph is traced, when the values are unknown."""
    if not is_tracing(labels) and (targets := labels[labels != -100]).numel():
        check_input_ids(targets, vocab_size, "labels")


def check_lm_labels(labels: torch.Tensor, logits: torch.Tensor) -> None:
    """Raise a clear error unless ``labels`` hold one token id (or -100, ignored) for every position of a language
    model's ``logits`` ``(batch, length, vocab_size)`` (or ``(positions, vocab_size)``, positions kept by a mask)."""
    check_tensor(labels, "labels")
    if labels.shape != logits.shape[:-1]:
        raise ValueError(
            f"`labels` has shape {tuple(labels.shape)}, expected {tuple(logits.shape[:-1])}: one target token id per "
            "position, -100 where the loss should not count."
        )
    check_label_ids(labels, logits.shape[-1])


class CausalLMLossKwargs(TypedDict, total=False):
    """What a causal LM's forward takes through ``**kwargs``, as transformers' causal LMs do.

    shift_labels: `(batch, length)` targets already aligned with the logits (position t scored against
        ``shift_labels[t]``), in place of shifting ``labels``: sequence- and context-parallel training shift the
        whole sequence before splitting it. Not a named parameter because Trainer takes every forward parameter
        whose name holds "label" for a column each batch must carry.
    """

    shift_labels: torch.LongTensor


def shift_labels_of(model: nn.Module, kwargs: dict) -> torch.Tensor | None:
    """``shift_labels`` from the ``**kwargs`` of ``model``'s forward, refusing a name that is not in
    ``CausalLMLossKwargs`` as Python refuses an unknown argument (an argument is never dropped unread)."""
    for name in kwargs:
        if name not in CausalLMLossKwargs.__annotations__:
            raise TypeError(f"{type(model).__name__}.forward() got an unexpected keyword argument {name!r}")
    return kwargs.get("shift_labels")


def lm_loss(
    logits: torch.Tensor,
    labels: torch.Tensor | None,
    shift: bool,
    num_items_in_batch: int | torch.Tensor | None = None,
    shift_labels: torch.Tensor | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor | None:
    """The language-model loss of every family: cross-entropy over the positions not labelled -100, a mean over
    them, or a sum divided by ``num_items_in_batch`` (the target tokens of a whole accumulated batch, from Trainer).
    ``shift``: ``labels`` are the inputs themselves, and position ``t`` predicts label ``t + 1`` (causal LMs);
    otherwise they are aligned with the logits already (a decoder reading the target shifted right).
    ``shift_labels`` (causal LMs): targets already aligned with the logits, which then replace ``labels`` — what
    sequence- and context-parallel training passes, having shifted the whole sequence before splitting it.
    ``label_smoothing``: the label-smoothed cross-entropy of transformers' ``LabelSmoother`` (``(1 - factor) * NLL +
    factor * mean over the vocabulary of -log p``), in one fused ``cross_entropy`` over the labelled positions only:
    ``LabelSmoother`` materialises ``-log_softmax`` of every position, padding included, and its backward scatters
    into a tensor of that size (a sixth of an update of the main job on a CPU).
    Labels that are all -100 give NaN (no token counts: 0 / 0), as transformers' own models and ``LabelSmoother``
    do; no labels at all, no loss (None)."""
    if labels is None and shift_labels is None:
        return None
    if shift_labels is not None:
        if not shift:
            raise ValueError("`shift_labels` is for causal language models; pass `labels` aligned with the logits.")
        labels, shift = shift_labels, False
    check_lm_labels(labels, logits)
    if num_items_in_batch is None:
        targets = labels[:, 1:] if shift else labels
        num_items_in_batch = (targets != -100).sum()
    if label_smoothing:
        if shift:
            logits, labels = logits[..., :-1, :], labels[..., 1:]
        if logits.dim() > 2:  # every position: keep the labelled ones (a log-softmax per padded one would be waste)
            kept = labels != -100
            logits, labels = logits[kept], labels[kept]
        return F.cross_entropy(logits.float(), labels, ignore_index=-100, label_smoothing=label_smoothing,
                               reduction="sum") / num_items_in_batch
    loss = ForCausalLMLoss if shift else ForMaskedLMLoss
    return loss(logits, labels, logits.shape[-1], num_items_in_batch=num_items_in_batch)


class EncoderDecoderMixin:
    """What both encoder-decoders' `PreTrainedModel` classes share: decoder inputs built from ``labels`` and
    ``resize_token_embeddings`` of the target vocabulary.

    ``config.vocab_size`` is the target vocabulary: the decoder's embeddings and the output layer, and the encoder's
    embeddings too when the source reads the same vocabulary (``config.source_vocab_size`` unset). transformers'
    own resizing changes only ``get_input_embeddings()``, the encoder's, and would leave the decoder at the old size.
    A class names the ``(module, attribute)`` of each embedding that follows the target vocabulary in
    ``_target_embeddings``.
    """

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """Teacher forcing inputs: ``config.decoder_start_token_id``, then ``labels`` shifted right (-100 becomes
        padding)."""
        for name in ("pad_token_id", "decoder_start_token_id"):
            if getattr(self.config, name) is None:
                raise ValueError(
                    f"Building `decoder_input_ids` from `labels` needs `config.{name}`; it is unset: set it, or pass "
                    "`decoder_input_ids` yourself."
                )
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    def decoder_inputs_from_labels(
        self,
        labels: torch.Tensor | None,
        decoder_input_ids: torch.Tensor | None,
        decoder_inputs_embeds: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """``decoder_input_ids``, built from ``labels`` when neither they nor ``decoder_inputs_embeds`` are given.
        The labels' ids are checked first, as labels, since they become decoder inputs."""
        if labels is None:
            return decoder_input_ids
        check_tensor(labels, "labels")
        check_label_ids(labels, self.config.vocab_size)
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            return self.prepare_decoder_input_ids_from_labels(labels)
        return decoder_input_ids

    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> nn.Embedding:
        """Resize the target vocabulary to ``new_num_tokens`` (see transformers' ``resize_token_embeddings``);
        returns the decoder's new embeddings."""
        resized = {}  # old embedding -> new: a matrix the encoder and decoder share stays shared
        for module, name in self._target_embeddings():
            old = getattr(module, name)
            if old not in resized:
                resized[old] = self._get_resized_embeddings(old, new_num_tokens, pad_to_multiple_of, mean_resizing)
            setattr(module, name, resized[old])
        embeddings = next(iter(resized.values()))
        if (output := self.get_output_embeddings()) is not None:
            self.set_output_embeddings(
                self._get_resized_lm_head(output, embeddings.num_embeddings, mean_resizing=mean_resizing)
            )
        self.config.vocab_size = self.vocab_size = embeddings.num_embeddings  # both, as transformers' own
        self.tie_weights()
        return embeddings
