"""Serve our Transformer with CTranslate2 (Klein et al.'s C++ inference engine for Transformers): export a saved
encoder-decoder (`TransformerForConditionalGeneration`) or decoder-only language model (`TransformerForCausalLM`)
into a CTranslate2 model folder, and translate with the export.

CTranslate2's converters know transformers' Marian, BART, T5... but not our model, so `model_spec` fills its
Transformer specification (``ctranslate2.specs``) from our config and weights, as its own converters do from theirs
(``ctranslate2/converters/transformers.py``). The layers map one to one: our fused ``qkv_proj`` is its self-attention
``linear[0]``, our cross-attention ``q_proj`` / ``kv_proj`` its ``linear[0]`` / ``linear[1]``. Our position table
(sinusoidal or learned) is written into the export as a table: CTranslate2's own sinusoidal encodings put the sines
and cosines in two halves and start at position 1, ours interleave them from position 0.

CTranslate2 reads token strings, so the export holds the vocabularies in id order (``shared_vocabulary.json``, or
``source_vocabulary.json`` and ``target_vocabulary.json``), our tokenizers (as the model folder has them, so that the
same ids come out) and the model's ``generation_config.json`` (the defaults `CTranslate2Translator` decodes with).

    export_ctranslate2("outputs/multi30k-transformer", "outputs/multi30k-ct2", quantization="int8")
    translator = CTranslate2Translator("outputs/multi30k-ct2")
    translator.translate_nbest(["A dog runs."], num_beams=5)   # [[Hypothesis(text=..., score=...)]]

Needs ``pip install "hf-seqmodels[serve]"`` (ctranslate2).
"""

import json
import math
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

from ..data.tokenization import load_tokenizer, save_tokenizer
from ..models.configuration_transformer import TransformerConfig
from ..storage.atomic_folders import replacing
from ..storage.safe_loading import load_pretrained
from ..tasks.translation import SOURCE_TOKENIZER_DIR, batches_by_length, load_tokenizers, load_translation_model
from .translations import Hypothesis, check_translation_options

try:
    import ctranslate2
    from ctranslate2.specs import common_spec, transformer_spec
except ImportError as error:
    raise ImportError('Exporting to CTranslate2 needs ctranslate2: pip install "hf-seqmodels[serve]".') from error

__all__ = ["EXPORT_FILE", "QUANTIZATIONS", "check_exportable", "check_generation_defaults", "model_spec",
           "export_ctranslate2", "CTranslate2Translator", "as_translated"]

EXPORT_FILE = "hf_seqmodels_export.json"  # what the export was made from; marks a folder export_ctranslate2 wrote
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16", "float16", "bfloat16", "int8_float16", "int8_bfloat16")
ACTIVATIONS = {
    "relu": common_spec.Activation.RELU,
    "gelu": common_spec.Activation.GELU,
    "gelu_new": common_spec.Activation.GELUTanh,
    "silu": common_spec.Activation.SWISH,
}
# The generation options `CTranslate2Translator.options` passes on, and those that change nothing it decodes.
GENERATION_OPTIONS = ("num_beams", "length_penalty", "max_new_tokens", "max_length", "min_new_tokens",
                      "no_repeat_ngram_size", "repetition_penalty", "eos_token_id")
GENERATION_BOOKKEEPING = ("bos_token_id", "pad_token_id", "decoder_start_token_id", "early_stopping", "use_cache",
                          "transformers_version", "_from_model_config", "output_attentions", "output_hidden_states",
                          "output_scores", "return_dict_in_generate")
# The heads CTranslate2 has a model for: a translator and a language model. (It has no classifier heads.)
EXPORTABLE_HEADS = ("TransformerForConditionalGeneration", "TransformerForCausalLM")


def check_exportable(config) -> None:
    """Raise a ValueError naming the config field (and its value) that CTranslate2's Transformer cannot express."""
    if config.model_type != TransformerConfig.model_type:
        raise ValueError(f"`model_type`={config.model_type!r}: only hf_seqmodels' Transformer "
                         f"({TransformerConfig.model_type!r}) exports to CTranslate2.")
    heads = [name for name in config.architectures or () if name not in EXPORTABLE_HEADS]
    if heads or not config.architectures:
        raise ValueError(f"`architectures`={config.architectures}: CTranslate2 runs translators and language models, "
                         f"export a folder saved from {' or '.join(EXPORTABLE_HEADS)}.")
    if config.activation not in ACTIVATIONS:
        raise ValueError(f"`activation`={config.activation!r} has no CTranslate2 counterpart; those that have one: "
                         f"{sorted(ACTIVATIONS)}.")
    if config.is_encoder_decoder and config.decoder_start_token_id is None:
        raise ValueError("`decoder_start_token_id`=None (and no `bos_token_id`): CTranslate2 starts every "
                         "translation from that token; set it in the config.")
    if config.eos_token_id is None:
        raise ValueError("`eos_token_id`=None: CTranslate2 needs an end-of-sequence token; set it in the config.")


def check_generation_defaults(generation_config: GenerationConfig) -> None:
    """Raise a ValueError naming the saved generation option that the export's translator cannot pass on to
    CTranslate2 (sampling, forced tokens, ...). ``early_stopping`` is accepted whatever its value, but CTranslate2's
    beam search always stops as generate(early_stopping=True) does: once ``num_beams`` hypotheses are finished."""
    unknown = sorted(set(generation_config.to_diff_dict()) - set(GENERATION_OPTIONS) - set(GENERATION_BOOKKEEPING))
    if unknown:
        values = ", ".join(f"`{name}`={getattr(generation_config, name, None)!r}" for name in unknown)
        raise ValueError(f"generation_config.json sets {values}, which the CTranslate2 export does not pass on (it "
                         f"decodes with {', '.join(GENERATION_OPTIONS)}): remove them from the model's "
                         "generation_config.json, or translate with our generate().")


def _vocabulary(tokenizer, size: int, field: str) -> list[str]:
    """The tokens of ``tokenizer`` in id order, ``size`` of them; a mismatch is a ValueError naming ``field``."""
    if len(tokenizer) != size:
        raise ValueError(f"`{field}`={size} but the tokenizer has {len(tokenizer)} tokens: CTranslate2 maps each "
                         "embedding row to one token string, so they must be as many.")
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    if None in tokens or len(set(tokens)) != size:
        raise ValueError(f"The tokenizer's ids 0..{size - 1} do not name {size} distinct tokens, which CTranslate2 "
                         "needs (its vocabularies are lists of token strings).")
    if tokenizer.unk_token not in tokens:
        raise ValueError(f"The tokenizer has no unknown token in its vocabulary (unk_token={tokenizer.unk_token!r}):"
                         " CTranslate2 would append one and the vocabulary would no longer match the model's.")
    return tokens


def _set_linear(spec, linear: torch.nn.Linear) -> None:
    spec.weight = linear.weight
    if linear.bias is not None:
        spec.bias = linear.bias


def _set_layer_norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = norm.weight, norm.bias


def _set_stack(spec, stack, config: TransformerConfig) -> None:
    """Fill a ``TransformerEncoderSpec`` or ``TransformerDecoderSpec`` from one of our stacks."""
    embeddings = stack.embeddings
    token_spec = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings  # encoder: a list
    token_spec.weight = embeddings.embed_tokens.weight
    spec.scale_embeddings = math.sqrt(config.d_model) if config.scale_embedding else 1.0
    table = embeddings.position_table if embeddings.embed_positions is None else embeddings.embed_positions.weight
    spec.position_encodings.encodings = table
    if stack.final_norm is not None:
        _set_layer_norm(spec.layer_norm, stack.final_norm)
    for layer_spec, layer in zip(spec.layer, stack.layers, strict=True):
        _set_linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
        _set_linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
        _set_layer_norm(layer_spec.self_attention.layer_norm, layer.self_attn_norm)
        if layer.cross_attn is not None:
            _set_linear(layer_spec.attention.linear[0], layer.cross_attn.q_proj)
            _set_linear(layer_spec.attention.linear[1], layer.cross_attn.kv_proj)
            _set_linear(layer_spec.attention.linear[2], layer.cross_attn.out_proj)
            _set_layer_norm(layer_spec.attention.layer_norm, layer.cross_attn_norm)
        _set_linear(layer_spec.ffn.linear_0, layer.ffn.fc1)
        _set_linear(layer_spec.ffn.linear_1, layer.ffn.fc2)
        _set_layer_norm(layer_spec.ffn.layer_norm, layer.ffn_norm)


def model_spec(model, source_tokenizer, target_tokenizer=None):
    """The CTranslate2 specification of ``model`` (a `TransformerForConditionalGeneration` or a
    `TransformerForCausalLM`, with its weights), its vocabularies from the tokenizers (``target_tokenizer``: the
    translator's target side; None = the same as ``source_tokenizer``, or a language model's)."""
    config = model.config
    check_exportable(config)
    target_tokenizer = target_tokenizer or source_tokenizer
    pre_norm = config.norm_position == "pre"
    activation = ACTIVATIONS[config.activation]
    target_tokens = _vocabulary(target_tokenizer, config.vocab_size, "vocab_size")
    if config.is_encoder_decoder:
        spec = transformer_spec.TransformerSpec.from_config(
            (config.encoder_layers, config.decoder_layers), config.num_heads, pre_norm=pre_norm, activation=activation)
        _set_stack(spec.encoder, model.model.encoder, config)
        _set_stack(spec.decoder, model.model.decoder, config)
        spec.register_source_vocabulary(_vocabulary(source_tokenizer, config.encoder_vocab_size,
                                                    "source_vocab_size" if config.source_vocab_size else "vocab_size"))
        spec.register_target_vocabulary(target_tokens)
        spec.config.decoder_start_token = target_tokens[config.decoder_start_token_id]
    else:
        spec = transformer_spec.TransformerDecoderModelSpec.from_config(
            config.decoder_layers, config.num_heads, pre_norm=pre_norm, activation=activation)
        _set_stack(spec.decoder, model.model, config)
        spec.register_vocabulary(target_tokens)
    _set_linear(spec.decoder.projection, model.get_output_embeddings())
    eos_ids = config.eos_token_id if isinstance(config.eos_token_id, list) else [config.eos_token_id]
    spec.config.eos_token = target_tokens[eos_ids[0]]  # generation stops on every one of them (end_token)
    spec.config.unk_token = target_tokenizer.unk_token
    if config.bos_token_id is not None:
        spec.config.bos_token = target_tokens[config.bos_token_id]
    spec.config.layer_norm_epsilon = config.layer_norm_eps
    return spec


def export_ctranslate2(model_dir, output_dir, quantization: str | None = None) -> Path:
    """Export the model folder ``model_dir`` (saved by scripts/run_translation.py or run_clm.py) into the
    CTranslate2 folder ``output_dir``, its weights stored as ``quantization`` (one of `QUANTIZATIONS`; None keeps
    float32). ``output_dir`` is written whole beside and then put in place; an existing one is replaced only if
    it is empty or an earlier export (it holds `EXPORT_FILE`). Returns ``output_dir``."""
    output_dir = Path(output_dir)
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"--quantization={quantization!r}: choose one of {QUANTIZATIONS}.")
    if output_dir.is_dir() and any(output_dir.iterdir()) and not (output_dir / EXPORT_FILE).is_file():
        raise ValueError(f"{output_dir} is not empty and was not written by an export (no {EXPORT_FILE} in it): "
                         "pass a new or empty folder, so that nothing else is overwritten.")
    model_dir = Path(model_dir)
    config = AutoConfig.from_pretrained(model_dir)
    check_exportable(config)
    if config.is_encoder_decoder:
        model = load_translation_model(model_dir)
        tokenizers = load_tokenizers(model_dir)
        source, target = tokenizers.source, tokenizers.target
    else:
        model = load_pretrained(AutoModelForCausalLM, model_dir, config=config)
        source = target = load_tokenizer(model_dir, "--model_dir")
    check_generation_defaults(model.generation_config)
    spec = model_spec(model.float().eval(), source, target)
    spec.validate()
    spec.optimize(quantization=quantization)
    with replacing(output_dir) as folder:
        spec.save(str(folder))
        save_tokenizer(target, folder)
        if source is not target:
            save_tokenizer(source, folder / SOURCE_TOKENIZER_DIR)
        model.generation_config.save_pretrained(folder)
        eos = model.generation_config.eos_token_id
        record = {"model_dir": str(model_dir.resolve()), "architectures": config.architectures,
                  "quantization": quantization or "float32", "ctranslate2": ctranslate2.__version__,
                  "max_position_embeddings": config.max_position_embeddings,
                  "eos_token_id": config.eos_token_id if eos is None else eos}
        (folder / EXPORT_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return output_dir


class CTranslate2Translator:
    """An exported translator (a folder `export_ctranslate2` wrote), translating as `inference.translate_nbest` does
    with our ``generate()``: the same tokenizers, the same saved generation defaults.

    Args:
        folder: the export.
        compute_type: CTranslate2's compute type ("default": the type the weights were stored in; "int8",
            "int8_float32", "float32", ...).
        intra_threads: CPU threads per translation (0: CTranslate2's default).
        device: "cpu", "cuda" or "auto".
    """

    def __init__(self, folder, compute_type: str = "default", intra_threads: int = 0, device: str = "cpu"):
        folder = Path(folder)
        if not (folder / EXPORT_FILE).is_file():
            raise ValueError(f"{folder} is not a CTranslate2 export (no {EXPORT_FILE} in it): make one with "
                             "scripts/export_ctranslate2.py <model folder> <out folder>.")
        self.record = json.loads((folder / EXPORT_FILE).read_text(encoding="utf-8"))
        if "TransformerForConditionalGeneration" not in self.record["architectures"]:
            raise ValueError(f"{folder} holds an export of a {self.record['architectures']}, not a translator.")
        self.translator = ctranslate2.Translator(str(folder), device=device, compute_type=compute_type,
                                                 intra_threads=intra_threads)
        self.tokenizers = load_tokenizers(folder)
        self.generation_config = GenerationConfig.from_pretrained(folder)
        self._target_ids = {token: i for i, token in enumerate(
            self.tokenizers.target.convert_ids_to_tokens(list(range(len(self.tokenizers.target)))))}

    def options(self, num_beams: int | None = None, max_new_tokens: int | None = None,
                length_penalty: float | None = None, num_return_sequences: int = 1) -> dict:
        """``translate_batch`` options for these generate() options, the saved generation defaults filling in
        those left None. The first step may end the translation, as in generate(); beam search stops once
        ``num_beams`` hypotheses are finished (generate()'s ``early_stopping=True``, what run_translation.py saves)."""
        defaults = self.generation_config
        max_new_tokens = max_new_tokens or defaults.max_new_tokens or defaults.max_length - 1
        eos = self.record["eos_token_id"]
        return {"beam_size": num_beams or defaults.num_beams or 1, "num_hypotheses": num_return_sequences,
                "length_penalty": next(value for value in (length_penalty, defaults.length_penalty, 1.0)
                                       if value is not None),
                "max_decoding_length": max_new_tokens, "min_decoding_length": defaults.min_new_tokens or 0,
                "max_input_length": 0,
                "no_repeat_ngram_size": defaults.no_repeat_ngram_size or 0,
                "repetition_penalty": defaults.repetition_penalty or 1.0,
                "end_token": eos if isinstance(eos, list) else [eos], "return_end_token": True, "return_scores": True}

    def translate_ids(self, source_ids: list[list[int]], **options) -> list[list[tuple[list[int], float]]]:
        """Each source (token ids, as the source tokenizer gives them) translated as one batch: its hypotheses as
        (target ids, score), best first; the ids are generate()'s sequence without the start token and the padding:
        through the end token that ended it, if one did. ``options``: those of `options`."""
        limit = self.record["max_position_embeddings"]
        if (longest := max(map(len, source_ids), default=0)) > limit:
            raise ValueError(f"A source has {longest} tokens but the model reads at most {limit} "
                             "(`max_position_embeddings`): truncate it.")
        source = [self.tokenizers.source.convert_ids_to_tokens(ids) for ids in source_ids]
        results = self.translator.translate_batch(source, **self.options(**options))
        return [[([self._target_ids[token] for token in tokens], score)
                 for tokens, score in zip(result.hypotheses, result.scores)] for result in results]

    def translate_nbest(self, texts: list[str], num_return_sequences: int = 1, batch_size: int = 64,
                        num_beams: int | None = None, max_new_tokens: int | None = None) -> list[list[Hypothesis]]:
        """`inference.translate_nbest` through CTranslate2: the ``num_return_sequences`` best translations of each
        text, best first, with beam search's scores; an empty (or blank) text gets none."""
        check_translation_options(self, num_beams, num_return_sequences, batch_size=batch_size,
                                  max_new_tokens=max_new_tokens)
        beams = num_beams or self.generation_config.num_beams or 1
        results = [[] for _ in texts]
        for batch in batches_by_length(texts, batch_size, [i for i, text in enumerate(texts) if text.strip()]):
            source_ids = self.tokenizers.source([texts[i] for i in batch])["input_ids"]
            hypotheses = self.translate_ids(source_ids, num_beams=num_beams, max_new_tokens=max_new_tokens,
                                            num_return_sequences=num_return_sequences)
            for i, found in zip(batch, hypotheses):
                results[i] = [Hypothesis(self.tokenizers.target.decode(ids, skip_special_tokens=True).strip(),
                                         score if beams > 1 else None) for ids, score in found]
        return results


def as_translated(row: list[int], end_ids, skip: int = 1) -> list[int]:
    """A row of generate()'s ``sequences`` as `CTranslate2Translator.translate_ids` gives a translation: without
    its first ``skip`` tokens (the start token, or a prompt), through the first of ``end_ids`` (generate() pads a
    batch's shorter rows after it)."""
    row = row[skip:]
    return next((row[: i + 1] for i, token in enumerate(row) if token in end_ids), row)
