"""int8 serving of the recurrent families (the attention encoder-decoder, the recurrent language model and
classifiers) by torch's dynamic quantization: CTranslate2, which serves our Transformer in int8
(`ctranslate2_export`), has no recurrent models.

`quantize_for_serving` (in place, on the CPU) replaces, through ``torch.ao.quantization.quantize_dynamic``:

- every ``nn.Linear``, the output layer included, by an int8 one (``DynamicQuantizedLinear``);
- every ``nn.LSTM`` / ``nn.GRU`` kernel by an int8 one (``DynamicQuantizedLSTM`` / ``GRU``). A decoding step then
  runs that kernel (`recurrent_layers.RecurrentLayer._step`): it has no float weights for torch's cell functions.

Weights are int8 with one scale per output channel (a row of the output layer is one target word; rows differ in
norm), activations are quantized on the fly, per tensor, at every call; the sums are int32, the outputs float32. So
the outputs depend, within int8 precision, on the batch a sentence is decoded in (the activations' range is the
batch's). Left in float32:

- the Elman RNN (``cell_type="rnn"``): torch has no dynamic int8 kernel for ``nn.RNN``;
- the embeddings: a lookup, no product to speed up;
- a layer the model reads by its weight rather than by calling it: Luong's ``concat`` score (``concat_layer``, whose
  two halves `attention.LuongAttention` multiplies apart) and the adaptive softmax (``nn.AdaptiveLogSoftmaxWithLoss``).

A tied output layer (``tie_word_embeddings``, the default) is quantized too: it is the largest product of a
decoding step. ``quantize_dynamic`` gives it an int8 copy of the embedding matrix while the embedding stays float32;
each still computes what it did (the lookup the same rows, the output layer their int8 rounding), and the tie, a
constraint of training, has nothing left to keep in step. Nothing may re-tie them afterwards: a quantized model
refuses to be saved (`DynamicInt8Quantizer.is_serializable`), so no folder holds a half-quantized model, and it does
not train.

The same quantization is a transformers ``quantization_config``, `DynamicInt8Config` (registered with transformers
when this module is imported), for ``from_pretrained`` and ``pipeline(..., model_kwargs=...)``:

    model = quantize_for_serving(AutoModelForSeq2SeqLM.from_pretrained(folder).eval())
    model = AutoModelForSeq2SeqLM.from_pretrained(folder, quantization_config=DynamicInt8Config())
    translator = pipeline("translation", model=folder, trust_remote_code=True,
                          model_kwargs={"quantization_config": DynamicInt8Config()})
"""

import warnings

import torch
from torch import nn
from torch.ao.nn.quantized import dynamic as quantized_dynamic
from transformers.quantizers import HfQuantizer
from transformers.quantizers.auto import register_quantization_config, register_quantizer
from transformers.utils.quantization_config import QuantizationConfigMixin

from ..models.configuration_attention_seq2seq import AttentionSeq2SeqConfig
from ..models.configuration_recurrent import RecurrentConfig
from ..models.configuration_transformer import TransformerConfig

__all__ = ["QUANT_METHOD", "QUANTIZED_TYPES", "quantize_for_serving", "quantized_module_names", "check_quantizable",
           "DynamicInt8Config", "DynamicInt8Quantizer"]

QUANT_METHOD = "hf_seqmodels_dynamic_int8"  # the name transformers knows the quantization by
# Which model types it serves (a folder loaded with trust_remote_code has classes of its own: read the config's type).
RECURRENT_MODEL_TYPES = (AttentionSeq2SeqConfig.model_type, RecurrentConfig.model_type)
TRANSFORMER_MODEL_TYPES = (TransformerConfig.model_type, *TransformerConfig.former_model_types)
# torch's float modules -> the int8 modules quantize_dynamic puts in their place.
QUANTIZED_TYPES = {nn.Linear: quantized_dynamic.Linear, nn.LSTM: quantized_dynamic.LSTM,
                   nn.GRU: quantized_dynamic.GRU}
# Layers the model reads by their weight, not by calling them (an int8 layer has no float weight to read).
READ_BY_WEIGHT = ("concat_layer",)  # attention.LuongAttention's concat score
# quantize_dynamic's messages (torch.ao.quantization is deprecated in favour of torchao, whose quantize_ has no
# recurrent kernels; both are raised at every call).
_TORCH_WARNINGS = (r"torch\.ao\.quantization is deprecated", r"torch\.quantize_per_tensor, torch\.quantize_per_channel")


def check_quantizable(model) -> None:
    """Raise a ValueError saying what to change unless ``model`` is a float32 model of a recurrent family
    (`RECURRENT_MODEL_TYPES`, the package's classes or a folder's remote code), on the CPU, in eval mode and not
    quantized yet."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type in TRANSFORMER_MODEL_TYPES:
        raise ValueError(
            "quantize_for_serving quantizes the recurrent families; a Transformer is served in int8 by its CTranslate2 "
            "export: python scripts/export_ctranslate2.py <model folder> <export folder> --quantization int8 "
            "(hf_seqmodels.serving.ctranslate2_export.export_ctranslate2), then translate.py --engine ctranslate2.")
    if model_type not in RECURRENT_MODEL_TYPES:
        raise ValueError(f"quantize_for_serving quantizes the models of types {RECURRENT_MODEL_TYPES} (recurrent "
                         f"language models and classifiers, attention encoder-decoders); got {type(model).__name__} "
                         f"of model_type {model_type!r}.")
    if any(isinstance(module, tuple(QUANTIZED_TYPES.values())) for module in model.modules()):
        raise ValueError(f"{type(model).__name__} is quantized already: quantize a float32 model, once.")
    places = {tensor.device.type for tensor in [*model.parameters(), *model.buffers()]}
    if places - {"cpu"}:
        raise ValueError(f"The model is on {sorted(places - {'cpu'})}: dynamic int8 quantization runs on the CPU. "
                         "Move it there first (model.to('cpu')), or load it there (no device_map).")
    dtypes = {param.dtype for param in model.parameters() if param.is_floating_point()}
    if dtypes - {torch.float32}:
        raise ValueError(f"The model's weights are {sorted(map(str, dtypes))}: int8 quantization rounds float32 "
                         "weights. Load it in float32 (dtype=torch.float32) or call model.float() first.")
    if model.training:
        raise ValueError("The model is in training mode: an int8 model serves and does not train (its dropout would "
                         "run, and weight_drop reads float weights). Call model.eval() first.")


def quantized_module_names(model: nn.Module) -> list[str]:
    """The names of the modules of ``model`` that `quantize_for_serving` replaces: every ``nn.Linear``, ``nn.LSTM``
    and ``nn.GRU`` but those read by their weight (`READ_BY_WEIGHT`, anything inside an adaptive softmax)."""
    kept_float = {name for name, module in model.named_modules()
                  if isinstance(module, nn.AdaptiveLogSoftmaxWithLoss) or name.rsplit(".", 1)[-1] in READ_BY_WEIGHT}
    return [name for name, module in model.named_modules() if type(module) in QUANTIZED_TYPES
            and not any(name == kept or name.startswith(f"{kept}.") for kept in kept_float)]


def quantize_modules(model: nn.Module) -> None:
    """``quantize_dynamic`` of `quantized_module_names` in place: int8 weights with a scale per output channel."""
    spec = dict.fromkeys(quantized_module_names(model), torch.ao.quantization.per_channel_dynamic_qconfig)
    with warnings.catch_warnings():
        for message in _TORCH_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        torch.ao.quantization.quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)


def quantize_for_serving(model):
    """``model`` (a float32 recurrent model on the CPU, in eval mode: `check_quantizable`) with its linear layers and
    LSTM/GRU kernels replaced by int8 ones, in place (see the module's docstring for which and why); returned.

    It generates as before (greedy, beam search, sampling; the same output classes) and refuses to be saved. Raises
    a ValueError, before changing anything, for a Transformer (served in int8 by its CTranslate2 export), a model on
    another device, in another dtype, in training mode, or quantized already."""
    check_quantizable(model)
    quantize_modules(model)
    quantizer = DynamicInt8Quantizer(DynamicInt8Config(), pre_quantized=False)
    # What from_pretrained(quantization_config=...) sets on the model it quantizes: the same refusals follow.
    model.hf_quantizer, model.is_quantized, model.quantization_method = quantizer, True, QUANT_METHOD
    model.config.quantization_config = quantizer.quantization_config
    return model


@register_quantization_config(QUANT_METHOD)
class DynamicInt8Config(QuantizationConfigMixin):
    """`quantize_for_serving` as a transformers ``quantization_config``:
    ``AutoModelForSeq2SeqLM.from_pretrained(folder, quantization_config=DynamicInt8Config())`` loads the float32
    weights on the CPU, then quantizes. It has no options."""

    def __init__(self, **kwargs):
        kwargs.pop("quant_method", None)  # from_dict passes it back
        if kwargs:
            raise ValueError(f"DynamicInt8Config takes no options, got {sorted(kwargs)}.")
        self.quant_method = QUANT_METHOD


@register_quantizer(QUANT_METHOD)
class DynamicInt8Quantizer(HfQuantizer):
    """transformers' side of `DynamicInt8Config`: the device and dtype checked before loading, `quantize_for_serving`'s
    modules replaced after, and saving refused."""

    requires_calibration = False

    def validate_environment(self, device_map=None, **kwargs):
        places = set(device_map.values()) if isinstance(device_map, dict) else {device_map}
        if places - {None, "cpu", torch.device("cpu")}:
            raise ValueError(f"device_map={device_map!r}: dynamic int8 quantization runs on the CPU; leave device_map "
                             "out (or pass 'cpu').")

    def update_dtype(self, dtype: torch.dtype) -> torch.dtype:
        if dtype not in (None, torch.float32):
            raise ValueError(f"dtype={dtype}: int8 quantization rounds float32 weights; load with "
                             "dtype=torch.float32 (or leave dtype out for a float32 folder).")
        return torch.float32

    def _process_model_after_weight_loading(self, model, **kwargs):
        check_quantizable(model)
        quantize_modules(model)
        return model

    def is_serializable(self, *args, **kwargs):
        # save_pretrained asks before it writes anything: refusing here leaves no folder behind.
        raise ValueError(
            "A model quantized for serving (hf_seqmodels.serving.quantization) cannot be saved: its int8 layers hold "
            "torch's packed weights, which a safetensors folder does not, and the folder would load as float layers. "
            "Save the float32 model and quantize when loading: load_translator(folder, int8=True), translate.py "
            "--int8, or from_pretrained(folder, quantization_config=DynamicInt8Config()).")

    @property
    def is_trainable(self) -> bool:
        return False
