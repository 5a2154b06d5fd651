"""The Transformer family: the common model and generation suites, and checks against independent references
with copied weights (transformers' Marian and GPT-2, torch's nn.TransformerEncoder)."""

import json
import subprocess
import sys

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    CompileConfig,
    GPT2Config,
    GPT2LMHeadModel,
    MarianConfig,
    MarianMTModel,
    PreTrainedModel,
)
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache, StaticCache
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from transformers.testing_utils import CaptureLogger
from transformers.utils import logging as transformers_logging

from hf_seqmodels import (
    TransformerConfig,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
    TransformerForTokenClassification,
    TransformerModel,
)
from hf_seqmodels.models.modeling_transformer import TransformerEncoderModel, TransformerLayer
from hf_seqmodels.models.modeling_utils import output_cache
from hf_seqmodels.storage.safe_loading import load_pretrained
from tests.test_generation_common import GenerationTesterMixin, prompt_batch
from tests.test_modeling_common import BOS, EOS, PAD, REMOTE_CODE_SCRIPT, ModelTesterMixin, make_model

VOCAB_SIZE = 14
NUM_LABELS = 3
ENCODER_DECODERS = (TransformerModel, TransformerForConditionalGeneration)
# Each variant keeps the randomly redrawn tiny models sensitive to their prefixes (some draws with random LayerNorm
# gains are not, and then a broken beam reordering would go unnoticed).
VARIANTS = {
    "paper": dict(norm_position="post", position_embedding="sinusoidal", activation="relu"),
    "pre-norm-shared": dict(
        norm_position="pre", position_embedding="sinusoidal", activation="relu", share_encoder_decoder_embeddings=True
    ),
    "learned-gelu": dict(norm_position="post", position_embedding="learned", activation="gelu"),
}


def tiny_config(**changes) -> TransformerConfig:
    fields = dict(
        vocab_size=VOCAB_SIZE, d_model=16, num_heads=4, encoder_layers=2, decoder_layers=2, ffn_dim=32,
        max_position_embeddings=32, dropout=0.0, num_labels=NUM_LABELS,
        pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS, decoder_start_token_id=BOS,
    )
    return TransformerConfig(**{**fields, **changes})


class TransformerModelTester:
    """Tiny Transformers: 2 + 2 layers of width 16 with 4 heads."""

    all_model_classes = (
        TransformerModel,
        TransformerForConditionalGeneration,
        TransformerForCausalLM,
        TransformerForSequenceClassification,
        TransformerForTokenClassification,
    )
    generative_model_classes = (TransformerForConditionalGeneration, TransformerForCausalLM)
    # DynamicCache, StaticCache and both halves of EncoderDecoderCache reorder through Cache.reorder_cache.
    cache_class = Cache
    cache_implementations = ("static",)
    padding_sides = ("right", "left")

    def __init__(self, variant: str):
        self.variant = variant

    def get_config(self, model_class=TransformerForConditionalGeneration, **changes) -> TransformerConfig:
        return tiny_config(**VARIANTS[self.variant], is_encoder_decoder=model_class in ENCODER_DECODERS, **changes)

    def get_examples(self, config) -> list[dict]:
        generator = torch.Generator().manual_seed(1)
        examples = []
        for length, target_length in ((5, 4), (2, 2), (7, 5), (3, 6)):
            example = {"input_ids": torch.randint(3, config.vocab_size, (length,), generator=generator)}
            if config.is_encoder_decoder:
                target = torch.randint(3, config.vocab_size, (target_length - 1,), generator=generator)
                example["decoder_input_ids"] = torch.cat([torch.tensor([BOS]), target])
            examples.append(example)
        return examples

    def expected_num_hidden_states(self, config) -> dict[str, int]:
        if config.is_encoder_decoder:
            return {"encoder_hidden_states": config.encoder_layers + 1,
                    "decoder_hidden_states": config.decoder_layers + 1}
        return {"hidden_states": config.encoder_layers + 1}  # encoder_layers == decoder_layers here


@pytest.fixture(params=list(VARIANTS))
def tester(request):
    return TransformerModelTester(request.param)


class TestTransformerModel(ModelTesterMixin, GenerationTesterMixin):
    def remote_code_testers(self, tester) -> list:
        return [tester] if tester.variant == "paper" else []

    def test_unknown_cache_implementation(self, tester):
        for model, examples in self.generative_models(tester):
            with pytest.raises(ValueError, match="`cache_implementation='offloaded'` is not supported"):
                model.generate(**prompt_batch(model, examples[:1]), max_new_tokens=2, cache_implementation="offloaded")


# --- independent references with copied weights ------------------------------------------------------------------


def random_model(model_class, config, std: float = 0.3):
    return make_model(model_class, config, std=std)


def split_projection(state: dict, fused: str, prefix: str, names: tuple[str, ...]) -> dict:
    """Our fused projection ``fused`` (rows stacked in the order of ``names``) as ``prefix.<name>`` projections."""
    mapped = {}
    for kind in ("weight", "bias"):
        for name, part in zip(names, state[f"{fused}.{kind}"].chunk(len(names))):
            mapped[f"{prefix}.{name}.{kind}"] = part
    return mapped


MARIAN_NAMES = {"self_attn.out_proj": "self_attn.out_proj", "self_attn_norm": "self_attn_layer_norm",
                "cross_attn.q_proj": "encoder_attn.q_proj", "cross_attn.out_proj": "encoder_attn.out_proj",
                "cross_attn_norm": "encoder_attn_layer_norm", "ffn.fc1": "fc1", "ffn.fc2": "fc2",
                "ffn_norm": "final_layer_norm"}


def marian_state_dict(model: TransformerForConditionalGeneration) -> dict:
    """Our encoder-decoder's weights under MarianMTModel's names."""
    ours = model.state_dict()
    mapped = {"lm_head.weight": ours["lm_head.weight"], "final_logits_bias": torch.zeros(1, model.config.vocab_size)}
    for side in ("encoder", "decoder"):
        stack = getattr(model.model, side)
        mapped[f"model.{side}.embed_tokens.weight"] = ours[f"model.{side}.embeddings.embed_tokens.weight"]
        mapped[f"model.{side}.embed_positions.weight"] = stack.embeddings.position_table
        for i in range(len(stack.layers)):
            prefix = f"model.{side}.layers.{i}"
            mapped.update(split_projection(ours, f"{prefix}.self_attn.qkv_proj", f"{prefix}.self_attn",
                                           ("q_proj", "k_proj", "v_proj")))
            if side == "decoder":
                mapped.update(split_projection(ours, f"{prefix}.cross_attn.kv_proj", f"{prefix}.encoder_attn",
                                               ("k_proj", "v_proj")))
            for old, new in MARIAN_NAMES.items():
                if f"{prefix}.{old}.weight" in ours:
                    for kind in ("weight", "bias"):
                        mapped[f"{prefix}.{new}.{kind}"] = ours[f"{prefix}.{old}.{kind}"]
    return mapped


def test_post_norm_sinusoidal_encoder_decoder_matches_marian():
    """The paper's model (post-norm, sinusoidal positions, scaled embeddings) == MarianMTModel with our weights:
    logits on a padded batch, and greedy and beam search outputs."""
    config = tiny_config(source_vocab_size=11, activation="relu")
    model = random_model(TransformerForConditionalGeneration, config)
    marian = MarianMTModel(MarianConfig(
        vocab_size=11, decoder_vocab_size=VOCAB_SIZE, share_encoder_decoder_embeddings=False, d_model=16,
        encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=32, decoder_ffn_dim=32, activation_function="relu", dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, max_position_embeddings=32, scale_embedding=True, pad_token_id=PAD,
        eos_token_id=EOS, decoder_start_token_id=BOS, forced_eos_token_id=None,
    )).eval()
    marian.load_state_dict(marian_state_dict(model), strict=True)

    source = torch.tensor([[5, 9, 4, 7, 3, 10], [8, 6, 3, PAD, PAD, PAD]])
    source_mask = (source != PAD).long()
    target = torch.tensor([[BOS, 4, 12, 7, 13], [BOS, 9, 5, 6, 11]])
    with torch.no_grad():
        ours = model(input_ids=source, attention_mask=source_mask, decoder_input_ids=target).logits
        theirs = marian(input_ids=source, attention_mask=source_mask, decoder_input_ids=target).logits
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)
        for search in ({"num_beams": 1}, {"num_beams": 4, "num_return_sequences": 2}):
            kwargs = dict(input_ids=source, attention_mask=source_mask, max_new_tokens=6, do_sample=False, **search)
            assert torch.equal(model.generate(**kwargs), marian.generate(**kwargs)), search


def test_pre_norm_learned_causal_lm_matches_gpt2():
    """A pre-norm decoder-only model with learned positions and GELU (tanh) == GPT-2 with our weights, on a
    left-padded batch (GPT-2 given the positions that skip the padding)."""
    config = tiny_config(norm_position="pre", position_embedding="learned", activation="gelu_new",
                         scale_embedding=False)
    model = random_model(TransformerForCausalLM, config)
    gpt2 = GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCAB_SIZE, n_positions=32, n_embd=16, n_layer=2, n_head=4, n_inner=32,
        activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5,
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD,
    )).eval()
    ours = model.state_dict()
    mapped = {"transformer.wte.weight": ours["model.embeddings.embed_tokens.weight"],
              "transformer.wpe.weight": ours["model.embeddings.embed_positions.weight"],
              "transformer.ln_f.weight": ours["model.final_norm.weight"],
              "transformer.ln_f.bias": ours["model.final_norm.bias"],
              "lm_head.weight": ours["lm_head.weight"]}
    for i in range(2):
        renames = {"ln_1": "self_attn_norm", "ln_2": "ffn_norm"}
        linears = {"attn.c_attn": "self_attn.qkv_proj", "attn.c_proj": "self_attn.out_proj",
                   "mlp.c_fc": "ffn.fc1", "mlp.c_proj": "ffn.fc2"}
        for theirs, our_name in {**renames, **linears}.items():
            weight = ours[f"model.layers.{i}.{our_name}.weight"]
            # GPT-2's Conv1D stores (in, out), nn.Linear (out, in).
            mapped[f"transformer.h.{i}.{theirs}.weight"] = weight.T if theirs in linears else weight
            mapped[f"transformer.h.{i}.{theirs}.bias"] = ours[f"model.layers.{i}.{our_name}.bias"]
    gpt2.load_state_dict(mapped, strict=True)

    input_ids = torch.tensor([[4, 9, 7, 12, 5, 3], [PAD, PAD, 8, 6, 11, 13]])
    attention_mask = (input_ids != PAD).long()
    position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0)
    with torch.no_grad():
        got = model(input_ids=input_ids, attention_mask=attention_mask).logits
        expected = gpt2(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits
    keep = attention_mask.bool()
    torch.testing.assert_close(got[keep], expected[keep], rtol=0, atol=1e-5)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_encoder_matches_torch_transformer_encoder(norm_position):
    """The encoder stack == nn.TransformerEncoder (norm_first for pre-norm, with its final norm) fed our embeddings."""
    config = tiny_config(norm_position=norm_position, activation="relu", is_encoder_decoder=False)
    model = random_model(TransformerForTokenClassification, config)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="relu", batch_first=True,
                                       norm_first=norm_position == "pre", layer_norm_eps=1e-5)
    final_norm = nn.LayerNorm(16) if norm_position == "pre" else None
    reference = nn.TransformerEncoder(layer, 2, norm=final_norm, enable_nested_tensor=False).eval()
    ours = model.state_dict()
    mapped = {}
    for i in range(2):
        for theirs, our_name in {"self_attn.in_proj": "self_attn.qkv_proj", "self_attn.out_proj": "self_attn.out_proj",
                                 "linear1": "ffn.fc1", "linear2": "ffn.fc2", "norm1": "self_attn_norm",
                                 "norm2": "ffn_norm"}.items():
            for kind in ("weight", "bias"):
                key = f"layers.{i}.{theirs}_{kind}" if theirs == "self_attn.in_proj" else f"layers.{i}.{theirs}.{kind}"
                mapped[key] = ours[f"model.layers.{i}.{our_name}.{kind}"]
    if final_norm is not None:
        mapped.update({"norm.weight": ours["model.final_norm.weight"], "norm.bias": ours["model.final_norm.bias"]})
    reference.load_state_dict(mapped, strict=True)

    input_ids = torch.tensor([[4, 9, 7, 12, 5], [8, 6, 11, PAD, PAD]])
    mask = input_ids != PAD
    with torch.no_grad():
        got = model.model(input_ids=input_ids, attention_mask=mask.long()).last_hidden_state
        embeddings = model.model.embeddings(input_ids)
        expected = reference(embeddings, src_key_padding_mask=~mask)
    torch.testing.assert_close(got[mask], expected[mask], rtol=0, atol=1e-5)


# --- family-specific behaviour -----------------------------------------------------------------------------------


def test_returned_attentions_match_the_fused_path():
    """output_attentions takes the explicit softmax path: same logits, weights that are distributions over real
    keys, causal in the decoder's self-attention."""
    config = tiny_config()
    model = random_model(TransformerForConditionalGeneration, config)
    source = torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]])
    source_mask = (source != PAD).long()
    target = torch.tensor([[BOS, 4, 12], [BOS, 9, 5]])
    with torch.no_grad():
        fused = model(input_ids=source, attention_mask=source_mask, decoder_input_ids=target)
        explicit = model(input_ids=source, attention_mask=source_mask, decoder_input_ids=target,
                         output_attentions=True)
    torch.testing.assert_close(explicit.logits, fused.logits, rtol=0, atol=1e-5)
    assert len(explicit.encoder_attentions) == len(explicit.decoder_attentions) == len(explicit.cross_attentions) == 2
    for weights in explicit.encoder_attentions + explicit.cross_attentions:
        assert weights.shape[:2] == (2, 4) and weights.shape[-1] == 4
        assert bool((weights[1, ..., 2:] == 0).all())  # padded source tokens get no weight
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    for weights in explicit.decoder_attentions:
        assert weights.shape == (2, 4, 3, 3)
        assert bool((weights.triu(diagonal=1) == 0).all())


@pytest.mark.parametrize("left_padding", [False, True])
def test_causal_lm_chunked_prefill_matches_full_forward(left_padding):
    """Feeding a sequence in two chunks through the KV cache gives the logits of one full forward."""
    model = random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False))
    input_ids = torch.tensor([[4, 9, 7, 12, 5, 3, 8], [6, 11, 13, 4, 10, 9, 5]])
    attention_mask = torch.ones_like(input_ids)
    if left_padding:
        attention_mask[1, :3] = 0
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
        first = model(input_ids=input_ids[:, :4], attention_mask=attention_mask[:, :4], use_cache=True)
        assert isinstance(output_cache(first), DynamicCache) and output_cache(first).get_seq_length() == 4
        second = model(input_ids=input_ids[:, 4:], attention_mask=attention_mask,
                       cache=output_cache(first)).logits
    keep = attention_mask.bool()
    torch.testing.assert_close(torch.cat([first.logits, second], 1)[keep], full[keep], rtol=0, atol=1e-5)


def test_cross_attention_keys_and_values_are_projected_once_per_source():
    model = random_model(TransformerForConditionalGeneration, tiny_config())
    calls = []
    for layer in model.model.decoder.layers:
        layer.cross_attn.kv_proj.register_forward_hook(lambda module, args, output: calls.append(args[0].shape))
    source = torch.tensor([[5, 9, 4, 7], [8, 6, 3, PAD]])
    for num_beams in (1, 3):
        calls.clear()
        with torch.no_grad():
            model.generate(input_ids=source, attention_mask=(source != PAD).long(), num_beams=num_beams,
                           max_new_tokens=5, min_new_tokens=5, do_sample=False)
        assert len(calls) == model.config.decoder_layers, calls  # the first step only, not once per step


def test_labels_become_shifted_decoder_inputs():
    model = random_model(TransformerForConditionalGeneration, tiny_config())
    source = torch.tensor([[5, 9, 4], [8, 6, 3]])
    labels = torch.tensor([[7, 12, EOS, -100], [4, 9, 5, EOS]])
    decoder_input_ids = torch.tensor([[BOS, 7, 12, EOS], [BOS, 4, 9, 5]])
    with torch.no_grad():
        outputs = model(input_ids=source, labels=labels)
        logits = model(input_ids=source, decoder_input_ids=decoder_input_ids.masked_fill(
            decoder_input_ids == -100, PAD)).logits
    torch.testing.assert_close(outputs.logits, logits, rtol=0, atol=0)
    keep = labels != -100
    torch.testing.assert_close(outputs.loss, F.cross_entropy(logits[keep], labels[keep]))


def test_heads_use_the_documented_stacks():
    config = tiny_config(encoder_layers=3, decoder_layers=1, source_vocab_size=9)
    assert len(TransformerForCausalLM(config).model.layers) == 1
    assert TransformerForCausalLM(config).get_input_embeddings().num_embeddings == VOCAB_SIZE
    encoder_only = TransformerForSequenceClassification(config)
    assert len(encoder_only.model.layers) == 3 and encoder_only.get_input_embeddings().num_embeddings == 9
    model = TransformerModel(config)
    assert (len(model.encoder.layers), len(model.decoder.layers)) == (3, 1)
    assert config.is_encoder_decoder  # the decoder-only and encoder-only heads changed their own copy


def test_sequence_longer_than_the_position_table_is_a_clear_error():
    model = random_model(TransformerForCausalLM, tiny_config(max_position_embeddings=8, is_encoder_decoder=False))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(input_ids=torch.full((1, 9), 5))
    with pytest.raises(ValueError, match="already cached"):
        model.generate(input_ids=torch.full((1, 6), 5), max_new_tokens=5, min_new_tokens=5, do_sample=False)
    encoder_decoder = random_model(TransformerForConditionalGeneration, tiny_config(max_position_embeddings=8))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        encoder_decoder(input_ids=torch.full((1, 9), 5), decoder_input_ids=torch.tensor([[BOS]]))


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(d_model=18, num_heads=4), "d_model"),
        (dict(norm_position="middle"), "norm_position"),
        (dict(position_embedding="rotary"), "position_embedding"),
        (dict(activation="tanh"), "activation"),
        (dict(share_encoder_decoder_embeddings=True, source_vocab_size=9), "share_encoder_decoder_embeddings"),
        (dict(dropout=1.0), "dropout"),
        (dict(classifier_pooling="last"), "classifier_pooling"),
    ],
)
def test_config_errors_name_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        tiny_config(**changes)


def test_bad_inputs_are_clear_errors():
    model = random_model(TransformerForConditionalGeneration, tiny_config())
    source = torch.tensor([[5, 9, 4]])
    with pytest.raises(ValueError, match="decoder_input_ids"):
        model(input_ids=source)
    with pytest.raises(ValueError, match="EncoderDecoderCache"):
        model(input_ids=source, decoder_input_ids=torch.tensor([[BOS]]), cache=DynamicCache())
    with pytest.raises(ValueError, match="vocabulary"):
        model(input_ids=torch.tensor([[5, VOCAB_SIZE]]), decoder_input_ids=torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="attention_mask"):
        model(input_ids=source, attention_mask=torch.ones(1, 2), decoder_input_ids=torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="`labels` holds token ids"):
        model(input_ids=source, labels=torch.tensor([[4, 5, VOCAB_SIZE]]))  # the last label is never an input
    causal_lm = random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False))
    with pytest.raises(ValueError, match="`labels` holds token ids"):
        causal_lm(input_ids=torch.tensor([[4, 5, 6]]), labels=torch.tensor([[4, 5, VOCAB_SIZE]]))
    with pytest.raises(ValueError, match="`labels` has shape"):
        causal_lm(input_ids=torch.tensor([[4, 5, 6]]), labels=torch.tensor([[4, 5]]))


@pytest.mark.parametrize("inputs, message", [
    ({"decoder_input_ids": torch.tensor([[BOS, VOCAB_SIZE]])},
     rf"`decoder_input_ids` holds token ids in \[1, {VOCAB_SIZE}\]"),
    ({"labels": torch.tensor([[4, VOCAB_SIZE + 1]])}, rf"`labels` holds token ids in \[4, {VOCAB_SIZE + 1}\]"),
    ({"labels": torch.tensor([[4.0, 5.0]])}, "`labels` must hold integer token ids"),
    ({"decoder_input_ids": torch.tensor([[BOS], [BOS]])}, "2 rows but the source has 1: pass one target per source"),
    ({"decoder_inputs_embeds": torch.zeros(1, 0, 8)}, r"`decoder_inputs_embeds` is empty \(shape \(1, 0, 8\)\): "
                                                      "pass at least one token per sequence"),
    ({"decoder_inputs_embeds": torch.zeros(1, 2, 8, dtype=torch.float64)}, r"convert them with `.to\(torch.float32"),
    ({"decoder_input_ids": torch.tensor([[BOS]]), "attention_mask": torch.ones(1, 5)},
     r"`attention_mask` has shape \(1, 5\), expected \(1, 3\)"),  # not the last 3 columns of a wider mask
    ({"decoder_input_ids": torch.tensor([[BOS]]), "decoder_attention_mask": torch.ones(1, 2)},
     r"`decoder_attention_mask` has shape \(1, 2\), expected \(1, 1\)"),
    ({"decoder_input_ids": torch.tensor([[BOS]]), "attention_mask": torch.tensor(1)}, r"has shape \(\), expected"),
])
def test_encoder_decoder_errors_name_the_argument(inputs, message):
    model = random_model(TransformerForConditionalGeneration, tiny_config(d_model=8))
    with pytest.raises(ValueError, match=message):
        model(input_ids=torch.tensor([[5, 9, 4]]), **inputs)


def test_other_cache_implementations_and_masks_without_the_cached_positions_are_refused():
    causal_lm = random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False))
    with pytest.raises(ValueError, match="`cache_implementation='quantized'` is not supported"):
        causal_lm.generate(torch.tensor([[4, 5]]), max_new_tokens=2, cache_implementation="quantized")
    cache = output_cache(causal_lm(torch.tensor([[4, 5, 6]]), use_cache=True))
    with pytest.raises(ValueError, match=r"`attention_mask` has shape \(1, 1\), expected \(1, 4\)"):
        causal_lm(torch.tensor([[7]]), cache=cache, attention_mask=torch.ones(1, 1))


def test_too_long_is_a_clear_error_where_the_inputs_enter():
    causal_lm = random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False, max_position_embeddings=4))
    causal_lm(torch.tensor([[4, 5, 6, 7]]))
    with pytest.raises(ValueError, match="5 positions.*max_position_embeddings"):
        causal_lm(torch.tensor([[4, 5, 6, 7, 8]]))
    cache = output_cache(causal_lm(torch.tensor([[4, 5, 6]]), use_cache=True))
    with pytest.raises(ValueError, match="3 of them already cached"):
        causal_lm(torch.tensor([[7, 8]]), cache=cache)


def lm_cache(batch: int = 2, **changes):
    """The cache a causal LM of ``tiny_config(**changes)`` returns after 3 tokens of ``batch`` sequences."""
    model = random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False, **changes))
    return output_cache(model(torch.randint(4, VOCAB_SIZE, (batch, 3)), use_cache=True))


def seq2seq_cache(source_length: int = 3):
    """The cache of an encoder-decoder after 3 target tokens of 2 sequences, sources of ``source_length``."""
    model = random_model(TransformerForConditionalGeneration, tiny_config())
    return output_cache(model(input_ids=torch.randint(4, VOCAB_SIZE, (2, source_length)),
                              decoder_input_ids=torch.randint(4, VOCAB_SIZE, (2, 3)), use_cache=True))


SELF = "self-attention keys of shapes "
FOREIGN_CACHES = {  # name: (a cache that a tiny_config() model cannot continue 2 sequences from, expected message)
    "another batch size": (lambda: lm_cache(batch=1),
                           SELF + r"\[\(1, 4, 3, 4\), \(1, 4, 3, 4\)\], but this model continues from 2 layers of "
                                  r"shape \(2, 4, 3, 4\)"),
    "other heads": (lambda: lm_cache(num_heads=2), SELF + r"\[\(2, 2, 3, 8\), \(2, 2, 3, 8\)\], but"),
    "fewer layers": (lambda: lm_cache(decoder_layers=1), SELF + r"\[\(2, 4, 3, 4\)\], but this model continues from 2"),
    "more layers": (lambda: lm_cache(decoder_layers=3), SELF + r"\[(\(2, 4, 3, 4\), ){2}\(2, 4, 3, 4\)\], but"),
    "other sources": (lambda: seq2seq_cache(source_length=5),
                      r"cross-attention keys of shapes \[\(2, 4, 5, 4\), \(2, 4, 5, 4\)\], but .*\(2, 4, 3, 4\)"),
}


@pytest.mark.parametrize("foreign", list(FOREIGN_CACHES))
def test_foreign_cache_is_rejected(foreign):
    make_cache, match = FOREIGN_CACHES[foreign]
    encoder_decoder = foreign == "other sources"
    model = random_model(TransformerForConditionalGeneration if encoder_decoder else TransformerForCausalLM,
                         tiny_config(is_encoder_decoder=encoder_decoder))
    inputs = {"input_ids": torch.tensor([[4, 5, 6], [7, 8, 9]])} if encoder_decoder else {}
    own_cache = seq2seq_cache if encoder_decoder else lm_cache
    step = {"decoder_input_ids" if encoder_decoder else "input_ids": torch.tensor([[4], [5]])}
    with pytest.raises(ValueError, match=f"`past_key_values` holds {match}"):
        model(**inputs, **step, cache=make_cache())
    model(**inputs, **step, cache=own_cache())  # its own kind of cache is continued


# --- base models ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("head", [TransformerForSequenceClassification, TransformerForTokenClassification])
def test_encoder_only_heads_have_a_pretrained_base_model_that_automodel_loads(head, tmp_path):
    """The classifiers' base model is a TransformerEncoderModel that saves on its own; AutoModel on a classifier's
    folder gives it back with every encoder weight loaded (the encoder outputs of the classifier's base model)."""
    model = random_model(head, tiny_config(is_encoder_decoder=False))
    assert isinstance(model.base_model, TransformerEncoderModel) and isinstance(model.base_model, PreTrainedModel)
    assert "model.layers.0.self_attn.qkv_proj.weight" in model.state_dict()  # the names of earlier checkpoints
    model.save_pretrained(tmp_path / "head")
    base, info = AutoModel.from_pretrained(tmp_path / "head", output_loading_info=True)
    assert isinstance(base, TransformerEncoderModel)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert info["unexpected_keys"] <= {"classifier.weight", "classifier.bias"}  # the head's own layer only
    input_ids = torch.tensor([[4, 9, 7, 12], [8, 6, PAD, PAD]])
    attention_mask = (input_ids != PAD).long()
    with torch.no_grad():
        expected = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        got = base.eval()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    model.base_model.save_pretrained(tmp_path / "base")  # and the other way: a head over a saved base model
    reloaded, info = head.from_pretrained(tmp_path / "base", output_loading_info=True)
    assert info["missing_keys"] == {"classifier.weight", "classifier.bias"}
    embeddings = reloaded.model.embeddings.embed_tokens.weight
    torch.testing.assert_close(embeddings, model.model.embeddings.embed_tokens.weight)


def test_automodel_refuses_a_decoder_only_folder(tmp_path):
    """A causal LM's folder has no encoder-decoder in it: AutoModel says so rather than loading nothing."""
    random_model(TransformerForCausalLM, tiny_config(is_encoder_decoder=False)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="TransformerForCausalLM, which has no decoder attending to an encoder"):
        AutoModel.from_pretrained(tmp_path)


def save_as_vanilla_transformer(model, folder) -> None:
    """``model`` saved as before the family's model_type became "transformer": config.json and the saved
    configuration code say "vanilla_transformer"."""
    model.save_pretrained(folder)
    for name, old, new in (("config.json", '"model_type": "transformer"', '"model_type": "vanilla_transformer"'),
                           ("configuration_transformer.py", 'model_type = "transformer"',
                            'model_type = "vanilla_transformer"')):
        text = (folder / name).read_text()
        assert old in text, name
        (folder / name).write_text(text.replace(old, new))


@pytest.mark.parametrize("head", [TransformerForConditionalGeneration, TransformerForCausalLM,
                                  TransformerForSequenceClassification])
def test_a_folder_saved_as_vanilla_transformer_loads_and_saves_as_transformer(head, tmp_path):
    """``model_type`` is "transformer"; a folder saved under the former "vanilla_transformer" loads through the Auto
    classes (every weight, no warning) and through ``load_pretrained``'s strict checks, and saves as "transformer"."""
    model = random_model(head, tiny_config(is_encoder_decoder=head is TransformerForConditionalGeneration))
    assert model.config.model_type == "transformer" and "transformer" not in CONFIG_MAPPING_NAMES
    save_as_vanilla_transformer(model, tmp_path / "old")
    auto_class = {TransformerForConditionalGeneration: AutoModelForSeq2SeqLM, TransformerForCausalLM:
                  AutoModelForCausalLM, TransformerForSequenceClassification: AutoModelForSequenceClassification}[head]
    with CaptureLogger(transformers_logging.get_logger("transformers")) as logs:
        config = AutoConfig.from_pretrained(tmp_path / "old")
        own = TransformerConfig.from_pretrained(tmp_path / "old")
        loaded = load_pretrained(auto_class, tmp_path / "old")
    assert logs.out == ""
    assert type(config) is TransformerConfig
    assert config.model_type == own.model_type == loaded.config.model_type == "transformer"
    inputs = HEAD_INPUTS[head]
    with torch.no_grad():
        torch.testing.assert_close(first_output(loaded.eval()(**inputs)), first_output(model(**inputs)),
                                   rtol=0, atol=0)
    loaded.save_pretrained(tmp_path / "new")
    assert json.loads((tmp_path / "new" / "config.json").read_text())["model_type"] == "transformer"


def test_a_folder_saved_as_vanilla_transformer_loads_with_its_own_code(tmp_path):
    """With ``trust_remote_code``, in a process where ``import hf_seqmodels`` fails, such a folder loads its own
    (saved) code, as before."""
    model = random_model(TransformerForConditionalGeneration, tiny_config())
    save_as_vanilla_transformer(model, tmp_path / "old")
    inputs = HEAD_INPUTS[TransformerForConditionalGeneration]
    with torch.no_grad():
        expected = model(**inputs).logits
    case = {"auto_class": "AutoModelForSeq2SeqLM", "folder": str(tmp_path / "old"), "inputs": inputs,
            "expected": expected, "state_dict": model.state_dict()}
    torch.save([case], tmp_path / "cases.pt")
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", REMOTE_CODE_SCRIPT, str(tmp_path / "cases.pt")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "loaded TransformerForConditionalGeneration" in result.stdout, result.stderr


# --- attention implementations ----------------------------------------------------------------------------------


HEAD_INPUTS = {  # a padded batch for each head: (the head, its forward's inputs)
    TransformerForConditionalGeneration: dict(input_ids=torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]]),
                                              attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]),
                                              decoder_input_ids=torch.tensor([[BOS, 4, 12], [BOS, 9, 5]])),
    TransformerModel: dict(input_ids=torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]]),
                           attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]),
                           decoder_input_ids=torch.tensor([[BOS, 4, 12], [BOS, 9, 5]])),
    TransformerForCausalLM: dict(input_ids=torch.tensor([[5, 9, 4, 7], [PAD, PAD, 8, 6]]),
                                 attention_mask=torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])),
    TransformerForSequenceClassification: dict(input_ids=torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]]),
                                               attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])),
    TransformerForTokenClassification: dict(input_ids=torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]]),
                                            attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])),
    TransformerEncoderModel: dict(input_ids=torch.tensor([[5, 9, 4, 7], [8, 6, PAD, PAD]]),
                                  attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])),
}


def head_model(head, **changes):
    return random_model(head, tiny_config(is_encoder_decoder=head in ENCODER_DECODERS, **changes))


def first_output(outputs) -> torch.Tensor:
    return outputs.logits if "logits" in outputs else outputs.last_hidden_state


def count_fused_calls(monkeypatch) -> list:
    """Record each call of torch's fused attention kernel (transformers' "sdpa" function looks it up per call)."""
    calls, fused = [], F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention",
                        lambda *args, **kwargs: calls.append(1) or fused(*args, **kwargs))
    return calls


@pytest.mark.parametrize("head", list(HEAD_INPUTS))
def test_eager_and_sdpa_attention_agree(head, monkeypatch):
    """The same weights under attn_implementation "eager" and "sdpa": the same outputs on a padded batch; only
    "sdpa" runs the fused kernel, and set_attn_implementation switches between them."""
    model = head_model(head)
    assert model.config._attn_implementation == "sdpa"  # the default, now declared
    calls = count_fused_calls(monkeypatch)
    with torch.no_grad():
        fused = first_output(model(**HEAD_INPUTS[head]))
        assert calls
        model.set_attn_implementation("eager")
        assert model.config._attn_implementation == "eager"
        calls.clear()
        explicit = first_output(model(**HEAD_INPUTS[head]))
        assert not calls
    keep = HEAD_INPUTS[head].get("decoder_input_ids", HEAD_INPUTS[head]["input_ids"]) != PAD
    if head is TransformerForSequenceClassification:
        keep = slice(None)
    torch.testing.assert_close(explicit[keep], fused[keep], rtol=0, atol=1e-5)


@pytest.mark.parametrize("head", [TransformerForConditionalGeneration, TransformerForCausalLM])
@pytest.mark.parametrize("num_beams", [1, 3])
def test_eager_and_sdpa_attention_agree_when_generating_with_a_cache(head, num_beams):
    inputs = {k: v for k, v in HEAD_INPUTS[head].items() if k != "decoder_input_ids"}
    results = {}
    for implementation in ("sdpa", "eager"):
        model = random_model(head, tiny_config(is_encoder_decoder=head in ENCODER_DECODERS,
                                               attn_implementation=implementation))
        assert model.config._attn_implementation == implementation
        results[implementation] = model.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=False,
                                                 num_beams=num_beams, output_logits=True,
                                                 return_dict_in_generate=True)
    torch.testing.assert_close(results["eager"].sequences, results["sdpa"].sequences, rtol=0, atol=0)
    torch.testing.assert_close(torch.stack(results["eager"].logits), torch.stack(results["sdpa"].logits),
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_attention_weights_are_distributions_over_the_keys_not_masked(implementation):
    """output_attentions returns weights under either implementation ("sdpa" runs that call in "eager"): rows that
    sum to 1, exactly 0 on padding and on later positions of a causal self-attention."""
    model = head_model(TransformerForConditionalGeneration, attn_implementation=implementation)
    inputs = HEAD_INPUTS[TransformerForConditionalGeneration]
    with torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
    for weights in outputs.encoder_attentions + outputs.cross_attentions + outputs.decoder_attentions:
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    for weights in outputs.encoder_attentions + outputs.cross_attentions:
        assert bool((weights[1, ..., 2:] == 0).all())
    for weights in outputs.decoder_attentions:
        assert bool((weights.triu(diagonal=1) == 0).all())
    causal_lm = head_model(TransformerForCausalLM, attn_implementation=implementation)
    with torch.no_grad():
        attentions = causal_lm(**HEAD_INPUTS[TransformerForCausalLM], output_attentions=True).attentions
    for weights in attentions:  # row 1 is left-padded: its real queries see no padding
        assert bool((weights[1, :, 2:, :2] == 0).all())
        assert bool((weights[0].triu(diagonal=1) == 0).all())
        assert bool((weights[1, :, 2:, 2:].triu(diagonal=1) == 0).all())
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))


# --- half precision ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head", list(HEAD_INPUTS))
def test_half_precision_loads_runs_and_generates_close_to_float32(head, dtype, tmp_path):
    """Loaded with ``dtype`` (and with dtype="auto" from a folder saved in it), every head computes in it, with
    outputs close to the float32 model's; the generative heads generate in it, their first scores close too."""
    model = head_model(head)  # sinusoidal positions: the table is built in the dtype being loaded
    model.save_pretrained(tmp_path / "float32")
    half = head.from_pretrained(tmp_path / "float32", dtype=dtype).eval()
    half.save_pretrained(tmp_path / "half")
    auto = head.from_pretrained(tmp_path / "half", dtype="auto").eval()
    inputs = HEAD_INPUTS[head]
    with torch.no_grad():
        expected = first_output(model(**inputs))
        for loaded in (half, auto):
            assert {p.dtype for p in loaded.parameters()} | {b.dtype for b in loaded.buffers()} == {dtype}
            got = first_output(loaded(**inputs))
            assert got.dtype == dtype
            keep = inputs.get("decoder_input_ids", inputs["input_ids"]) != PAD
            keep = slice(None) if head is TransformerForSequenceClassification else keep
            scale = expected[keep].abs().max()
            torch.testing.assert_close(got[keep].float(), expected[keep], rtol=0, atol=2e-2 * scale)
    if head in (TransformerForConditionalGeneration, TransformerForCausalLM):
        prompt = {k: v for k, v in inputs.items() if k != "decoder_input_ids"}
        settings = dict(max_new_tokens=3, min_new_tokens=3, do_sample=False, output_logits=True,
                        return_dict_in_generate=True)
        expected = model.generate(**prompt, **settings).logits[0]
        generated = half.generate(**prompt, **settings)  # generate hands out its scores in float32
        assert len(generated.logits) == 3
        scale = expected.abs().max()
        torch.testing.assert_close(generated.logits[0], expected, rtol=0, atol=2e-2 * scale)


# --- gradient checkpointing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("head", list(HEAD_INPUTS))
def test_gradient_checkpointing_recomputes_and_gives_the_same_gradients(head):
    """With gradient checkpointing every layer's feed-forward runs again in the backward pass (twice in all, once
    without), and every weight gets the gradient of the run that kept its activations (dropout 0)."""
    gradients, calls = {}, {}
    for checkpointing in (False, True):
        model = head_model(head).train()
        if checkpointing:
            model.activation_checkpointing_enable()
        assert model.is_activation_checkpointing == checkpointing
        counted = [layer.ffn for layer in model.modules() if isinstance(layer, TransformerLayer)]
        calls[checkpointing] = []
        for ffn in counted:
            ffn.register_forward_hook(lambda module, args, output: calls[checkpointing].append(module))
        first_output(model(**HEAD_INPUTS[head])).pow(2).mean().backward()
        gradients[checkpointing] = {name: param.grad for name, param in model.named_parameters()
                                    if param.grad is not None}
        assert len(calls[checkpointing]) == len(counted) * (2 if checkpointing else 1)
    assert gradients[True].keys() == gradients[False].keys() and len(gradients[True]) > 10
    for name, grad in gradients[False].items():
        torch.testing.assert_close(gradients[True][name], grad, rtol=0, atol=1e-6, msg=name)


# --- torch.export and torch.compile -----------------------------------------------------------------------------


def traceable_inputs(head) -> dict:
    inputs = dict(HEAD_INPUTS[head])
    if head in (TransformerForConditionalGeneration, TransformerModel, TransformerForCausalLM):
        inputs["use_cache"] = False  # a cache object is no graph output; generation compiles with the static cache
    return inputs


@pytest.mark.parametrize("head", list(HEAD_INPUTS))
def test_exported_program_gives_the_eager_outputs(head):
    """torch.export of each head's forward (padded batch): the value checks step aside while tracing, and the
    exported program computes what the eager model does."""
    model = head_model(head)
    inputs = traceable_inputs(head)
    program = torch.export.export(model, (), kwargs=inputs, strict=False)
    with torch.no_grad():
        expected = first_output(model(**inputs))
        got = first_output(program.module()(**inputs))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("head", list(HEAD_INPUTS))
def test_compiled_forward_is_one_graph_with_the_eager_outputs(head):
    model = head_model(head)
    assert model._can_compile_fullgraph
    inputs = traceable_inputs(head)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="eager")  # fullgraph: any graph break raises
    with torch.no_grad():
        expected = first_output(model(**inputs))
        got = first_output(compiled(**inputs))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


HEAD_LABELS = {
    TransformerForConditionalGeneration: torch.tensor([[4, 12, EOS], [9, 5, -100]]),
    TransformerForCausalLM: torch.tensor([[5, 9, 4, 7], [-100, -100, 8, 6]]),
    TransformerForSequenceClassification: torch.tensor([2, 0]),
    TransformerForTokenClassification: torch.tensor([[0, 1, 2, 1], [2, 0, -100, -100]]),
}


@pytest.mark.parametrize("head", list(HEAD_LABELS))
def test_compiled_loss_is_one_graph_with_the_eager_loss(head):
    """With labels too (training compiles the loss): the labels' value checks step aside while tracing."""
    model = head_model(head)
    inputs = {**traceable_inputs(head), "labels": HEAD_LABELS[head]}
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    with torch.no_grad():
        torch.testing.assert_close(compiled(**inputs).loss, model(**inputs).loss, rtol=0, atol=1e-6)


def test_value_checks_still_run_in_eager_mode():
    model = head_model(TransformerForCausalLM)
    with pytest.raises(ValueError, match="vocabulary"):
        model(input_ids=torch.tensor([[4, VOCAB_SIZE]]))
    with pytest.raises(ValueError, match="must hold 1 for a token and 0 for padding"):
        model(input_ids=torch.tensor([[4, 5]]), attention_mask=torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="all padding"):
        model(input_ids=torch.tensor([[4, 5]]), attention_mask=torch.tensor([[0, 0]]))


# --- static cache -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("head", [TransformerForConditionalGeneration, TransformerForCausalLM])
@pytest.mark.parametrize("num_beams", [1, 3])
def test_static_cache_generates_what_the_dynamic_cache_does(head, num_beams):
    """generate(cache_implementation="static") keeps the keys and values in a StaticCache (a preallocated buffer,
    whose empty positions the mask hides) and gives the dynamic cache's tokens and scores, with a padded prompt."""
    model = head_model(head)
    inputs = {k: v for k, v in HEAD_INPUTS[head].items() if k != "decoder_input_ids"}
    settings = dict(max_new_tokens=5, min_new_tokens=5, do_sample=False, num_beams=num_beams, output_scores=True,
                    return_dict_in_generate=True)
    with torch.no_grad():
        dynamic = model.generate(**inputs, **settings)
        static = model.generate(**inputs, **settings, cache_implementation="static")
    cache = output_cache(static)
    self_cache = cache.self_attention_cache if head is TransformerForConditionalGeneration else cache
    assert isinstance(self_cache, StaticCache)
    assert isinstance(output_cache(dynamic), (DynamicCache, EncoderDecoderCache))
    torch.testing.assert_close(static.sequences, dynamic.sequences, rtol=0, atol=0)
    torch.testing.assert_close(torch.stack(static.scores), torch.stack(dynamic.scores), rtol=0, atol=1e-5)


@pytest.mark.parametrize("head", [TransformerForConditionalGeneration, TransformerForCausalLM])
def test_static_cache_generation_compiles_each_step_as_one_graph(head):
    """With a static cache generate() compiles the forward of its decoding steps (on every device, here): with
    fullgraph=True, so that any graph break raises, and dynamic=False, so that a step whose shapes or guarded values
    (the cache's length) differ from the first compiled one would be compiled anew: one graph serves every step of
    two generations from padded prompts, and the tokens are the dynamic cache's."""
    model = head_model(head)
    inputs = {k: v for k, v in HEAD_INPUTS[head].items() if k != "decoder_input_ids"}
    others = {k: v.flip(0) for k, v in inputs.items()}  # other prompts of the same shapes
    graphs = []

    def eager_backend(graph, example_inputs, **options):  # counts the compilations, runs the graph as it is
        graphs.append(graph)
        return graph.forward

    compile_config = CompileConfig(backend=eager_backend, fullgraph=True, dynamic=False)
    compile_config._compile_all_devices = True
    settings = dict(max_new_tokens=4, min_new_tokens=4, do_sample=False)
    torch._dynamo.reset()
    for prompts in (inputs, others):
        with torch.no_grad():
            expected = model.generate(**prompts, **settings)
            got = model.generate(**prompts, **settings, cache_implementation="static", compile_config=compile_config)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert model._compiled_call is not None  # generate compiled the forward
    assert len(graphs) == 1


def test_static_cache_too_small_is_a_clear_error():
    model = head_model(TransformerForCausalLM)
    cache = StaticCache(config=model.config, max_cache_len=3)
    with pytest.raises(ValueError, match="static cache holds 3 positions but the sequence reaches 4"):
        model(input_ids=torch.tensor([[4, 5, 6, 7]]), cache=cache)


# --- dynamic int8 quantization ----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("head", [TransformerForConditionalGeneration, TransformerForCausalLM])
def test_dynamically_quantized_model_generates_close_to_float32(head):
    """quantize_dynamic turns every nn.Linear (attention projections, feed-forward, output layer) into an int8
    one; generate runs, and its first scores stay within int8 error of the float model's."""
    model = head_model(head)
    quantized = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    assert not any(type(module) is nn.Linear for module in quantized.modules())
    inputs = {k: v for k, v in HEAD_INPUTS[head].items() if k != "decoder_input_ids"}
    settings = dict(max_new_tokens=4, min_new_tokens=4, do_sample=False, output_scores=True,
                    return_dict_in_generate=True)
    with torch.no_grad():
        expected = model.generate(**inputs, **settings)
        got = quantized.generate(**inputs, **settings)
    assert got.sequences.shape == expected.sequences.shape
    finite = expected.scores[0].isfinite()
    scale = expected.scores[0][finite].abs().max()
    assert bool((got.scores[0].isfinite() == finite).all())
    torch.testing.assert_close(got.scores[0][finite], expected.scores[0][finite], rtol=0, atol=0.1 * scale)
