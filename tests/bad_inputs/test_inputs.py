"""Bad inputs to every model class's forward and generate(): each must give a clear error naming the argument, or
(for inputs that are unusual but valid) the right result."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.generation import utils as generation_utils
from transformers.testing_utils import CaptureLogger

import transformers

import hf_seqmodels as hs

from .outcomes import assert_outcome

VOCAB, PAD, BOS, EOS = 16, 0, 1, 2
IDS = dict(pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS)
RECURRENT = hs.RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, num_labels=3, **IDS)
SEQ2SEQ = hs.AttentionSeq2SeqConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, **IDS)
TRANSFORMER = hs.TransformerConfig(vocab_size=VOCAB, d_model=8, num_heads=2, ffn_dim=16, encoder_layers=1,
                                   decoder_layers=1, max_position_embeddings=32, num_labels=3, **IDS)
CLASSES = {  # model class: its config
    hs.RecurrentModel: RECURRENT, hs.RecurrentForCausalLM: RECURRENT, hs.RecurrentForSequenceClassification: RECURRENT,
    hs.RecurrentForTokenClassification: RECURRENT, hs.AttentionSeq2SeqModel: SEQ2SEQ,
    hs.AttentionSeq2SeqForConditionalGeneration: SEQ2SEQ, hs.TransformerModel: TRANSFORMER,
    hs.TransformerForConditionalGeneration: TRANSFORMER, hs.TransformerForCausalLM: TRANSFORMER,
    hs.TransformerForSequenceClassification: TRANSFORMER, hs.TransformerForTokenClassification: TRANSFORMER,
}
GENERATORS = [cls for cls in CLASSES if cls.can_generate()]
SOURCE = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 3]])
MASK = torch.ones_like(SOURCE)


def model_of(model_class):
    torch.manual_seed(0)
    return model_class(CLASSES[model_class]).eval()


def inputs_for(model) -> dict:
    """A valid batch for ``model``: the source, and the decoder inputs of an encoder-decoder."""
    batch = {"input_ids": SOURCE, "attention_mask": MASK}
    if model.config.is_encoder_decoder:
        batch["decoder_input_ids"] = torch.tensor([[BOS, 4, 5], [BOS, 6, 7]])
    return batch


def embedding_size(model) -> int:
    return model.get_input_embeddings().weight.shape[1]


BAD_FORWARD = {  # name: (changes to the valid batch, given the model; the message that must name what to change)
    "ids as a list": (lambda m: {"input_ids": SOURCE.tolist()}, r"`input_ids` must be a torch.Tensor, got list"),
    "ids as an array": (lambda m: {"input_ids": SOURCE.numpy()}, r"`input_ids` must be a torch.Tensor, got ndarray"),
    "float ids": (lambda m: {"input_ids": SOURCE.float()}, r"`input_ids` must hold integer token ids"),
    "1-D ids": (lambda m: {"input_ids": SOURCE[0], "attention_mask": None}, r"`input_ids` must have shape"),
    "3-D ids": (lambda m: {"input_ids": SOURCE[None], "attention_mask": None}, r"`input_ids` must have shape"),
    "id = vocab size": (lambda m: {"input_ids": SOURCE.clamp(max=VOCAB - 1).index_fill(1, torch.tensor([0]), VOCAB)},
                        rf"`input_ids` holds token ids in \[\d+, {VOCAB}\]"),
    "negative id": (lambda m: {"input_ids": SOURCE - 10}, r"`input_ids` holds token ids in \[-\d+"),
    "no tokens": (lambda m: {"input_ids": SOURCE[:, :0], "attention_mask": None}, r"`input_ids` is empty"),
    "ids and embeds": (lambda m: {"inputs_embeds": torch.zeros(2, 4, embedding_size(m))}, r"Pass exactly one of"),
    "neither ids nor embeds": (lambda m: {"input_ids": None}, r"Pass exactly one of"),
    "embeds of the wrong size": (lambda m: {"input_ids": None, "inputs_embeds": torch.zeros(2, 4, 3)},
                                 r"`inputs_embeds` must have shape \(batch, length, \d+\)"),
    "float64 embeds": (lambda m: {"input_ids": None, "inputs_embeds": torch.zeros(2, 4, embedding_size(m),
                                                                                   dtype=torch.float64)},
                       r"`inputs_embeds` has dtype torch.float64 .*convert them"),
    "empty embeds": (lambda m: {"input_ids": None, "attention_mask": None,
                                "inputs_embeds": torch.zeros(2, 0, embedding_size(m))}, r"`inputs_embeds` is empty"),
    "mask as a list": (lambda m: {"attention_mask": MASK.tolist()}, r"`attention_mask` must be a torch.Tensor"),
    "mask value 2": (lambda m: {"attention_mask": MASK * 2}, r"`attention_mask` must hold 1 for a token and 0"),
    "mask value -1": (lambda m: {"attention_mask": -MASK}, r"`attention_mask` must hold 1 for a token and 0"),
    "mask value 0.5": (lambda m: {"attention_mask": MASK / 2}, r"`attention_mask` must hold 1 for a token and 0"),
    "mask value NaN": (lambda m: {"attention_mask": MASK.float().index_fill(1, torch.tensor([2]), math.nan)},
                       r"`attention_mask` must hold 1 for a token and 0"),
    "mask too short": (lambda m: {"attention_mask": MASK[:, :-1]}, r"`attention_mask` has shape \(2, 3\)"),
    "mask of another batch": (lambda m: {"attention_mask": MASK[:1]}, r"`attention_mask` has shape \(1, 4\)"),
    "mask of no token": (lambda m: {"attention_mask": MASK.index_fill(0, torch.tensor([1]), 0)},
                         r"Rows \[1\] of `attention_mask` are all padding"),
    "an argument the model does not take": (lambda m: {"token_type_ids": torch.zeros_like(SOURCE)},
                                            r"token_type_ids"),
}


@pytest.mark.parametrize("bad", list(BAD_FORWARD))
@pytest.mark.parametrize("model_class", list(CLASSES), ids=lambda cls: cls.__name__)
def test_bad_forward_inputs(model_class, bad):
    model = model_of(model_class)
    change, message = BAD_FORWARD[bad]
    batch = {**inputs_for(model), **change(model)}
    assert_outcome("inputs", lambda: model(**batch), error=message)


def labels_for(model, batch: dict, value: int | None = None) -> torch.Tensor:
    """Labels of the head's shape: one per sequence, per token, or per decoder input; ``value`` in each."""
    name = type(model).__name__
    if name.endswith("SequenceClassification"):
        shape = (2,)
    elif model.config.is_encoder_decoder:
        shape = tuple(batch["decoder_input_ids"].shape)
    else:
        shape = tuple(batch["input_ids"].shape)
    return torch.full(shape, 1 if value is None else value, dtype=torch.long)


HEADS = [cls for cls in CLASSES if not cls.__name__.endswith("Model")]
BAD_LABELS = {
    "labels as a list": (lambda labels: labels.tolist(), r"`labels` must be a torch.Tensor, got list"),
    "labels of another shape": (lambda labels: labels[:1], r"`labels` has shape"),
    "labels beyond the classes": (lambda labels: labels.fill_(VOCAB + 3),
                                  rf"`labels` hold(s token ids| values) in \[{VOCAB + 3}, {VOCAB + 3}\]"),
    "float labels": (lambda labels: labels.float() + 0.5, r"`labels` (must hold integer|have dtype)"),
}


@pytest.mark.parametrize("bad", list(BAD_LABELS))
@pytest.mark.parametrize("model_class", HEADS, ids=lambda cls: cls.__name__)
def test_bad_labels(model_class, bad):
    model = model_of(model_class)
    if bad == "float labels" and model_class.__name__.endswith("SequenceClassification"):
        pytest.skip("float labels ask a sequence classifier for regression or multi-label (problem_type), validly")
    batch = inputs_for(model)
    change, message = BAD_LABELS[bad]
    labels = change(labels_for(model, batch))
    assert_outcome("inputs", lambda: model(**batch, labels=labels), error=message)


def transformers_reference(model) -> torch.nn.Module:
    """transformers' own model of the same head as ``model``: GPT-2 for a causal LM, BART for an encoder-decoder,
    BERT for a classifier."""
    name = type(model).__name__
    if name.endswith("CausalLM"):
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=VOCAB, n_embd=8, n_layer=1, n_head=2))
    if model.config.is_encoder_decoder:
        return transformers.BartForConditionalGeneration(transformers.BartConfig(
            vocab_size=VOCAB, d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=8, decoder_ffn_dim=8, **IDS))
    bert = transformers.BertConfig(vocab_size=VOCAB, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=8, num_labels=3)
    head = "BertForSequenceClassification" if name.endswith("SequenceClassification") else "BertForTokenClassification"
    return getattr(transformers, head)(bert)


@pytest.mark.parametrize("model_class", HEADS, ids=lambda cls: cls.__name__)
def test_labels_all_ignored_give_what_transformers_gives(model_class):
    """A batch whose labels are all -100 (every token masked out): no token counts, and transformers' own heads
    give NaN (0 / 0); ours give the same, every head (the CRF tagger's included)."""
    model = model_of(model_class).train()
    batch = inputs_for(model)
    labels = labels_for(model, batch, value=-100)
    reference = transformers_reference(model).train()
    expected = reference(**{**batch, "labels": labels}).loss
    for config in ({}, {"use_crf": True}) if model_class.__name__.endswith("TokenClassification") else ({},):
        model = model_class(type(model.config)(**{**model.config.to_diff_dict(), **config})).train()
        assert_outcome("inputs", lambda: model(**batch, labels=labels).loss,
                       check=lambda loss: math.isnan(loss.item()) == math.isnan(expected.item()))


BAD_GENERATE = {  # generate() options: (kwargs, message)
    "num_beams 0": ({"num_beams": 0}, r"`num_beams`=0 must be an integer of at least 1"),
    "num_beams -1": ({"num_beams": -1}, r"`num_beams`=-1 must be an integer"),
    "num_beams 2.5": ({"num_beams": 2.5}, r"`num_beams`=2.5 must be an integer"),
    "num_return_sequences 0": ({"num_return_sequences": 0}, r"`num_return_sequences`=0"),
    "more sequences than beams": ({"num_return_sequences": 3, "num_beams": 2}, r"`num_return_sequences`"),
    "max_new_tokens 2.5": ({"max_new_tokens": 2.5}, r"`max_new_tokens`=2.5"),
    "max_new_tokens 0": ({"max_new_tokens": 0}, r"`max_new_tokens`"),
    "min above max": ({"min_new_tokens": 5, "max_new_tokens": 2}, r"`min_new_tokens`=5 is more than"),
    "min_length -1": ({"min_length": -1}, r"`min_length`=-1"),
    "no_repeat_ngram_size -1": ({"no_repeat_ngram_size": -1}, r"`no_repeat_ngram_size`=-1"),
    "top_p 1.5": ({"do_sample": True, "top_p": 1.5}, r"`top_p`=1.5 must be a probability"),
    "top_k -1": ({"do_sample": True, "top_k": -1}, r"`top_k`"),
    "temperature 0": ({"do_sample": True, "temperature": 0.0}, r"`temperature`"),
    "epsilon_cutoff 2": ({"do_sample": True, "epsilon_cutoff": 2.0}, r"`epsilon_cutoff`=2.0"),
    "length_penalty NaN": ({"num_beams": 2, "length_penalty": math.nan}, r"`length_penalty`=nan must be a finite number"),
    "eos outside the vocabulary": ({"eos_token_id": 99}, r"`eos_token_id`=99 is outside"),
    "pad outside the vocabulary": ({"pad_token_id": 99}, r"`pad_token_id`=99 is outside"),
    "negative bos": ({"bos_token_id": -1}, r"`bos_token_id`=-1 is outside"),
    "forced bos outside the vocabulary": ({"forced_bos_token_id": 99}, r"`forced_bos_token_id`=99 is outside"),
    "suppressed token outside the vocabulary": ({"suppress_tokens": [99]}, r"`suppress_tokens`=\[99\] is outside"),
    "group beam search offline": ({"num_beams": 2, "num_beam_groups": 2}, r"trust_remote_code"),
}


@pytest.mark.parametrize("bad", list(BAD_GENERATE))
@pytest.mark.parametrize("model_class", GENERATORS, ids=lambda cls: cls.__name__)
def test_bad_generate_options(model_class, bad):
    model = model_of(model_class)
    options, message = BAD_GENERATE[bad]
    options = {"max_new_tokens": 3, **options}
    assert_outcome("inputs", lambda: model.generate(input_ids=SOURCE, attention_mask=MASK, **options), error=message)


DECODER_ONLY = [hs.RecurrentForCausalLM, hs.TransformerForCausalLM]


@pytest.mark.parametrize("model_class", DECODER_ONLY, ids=lambda cls: cls.__name__)
def test_prompts_padded_on_either_side_generate_as_alone(model_class):
    """Right padding: transformers' own decoder-only models generate after the padding, with generate()'s warning;
    ours too, and exactly as the prompt alone (padding is invisible to the tokens after it: see
    `masks.carry_over_padding`)."""
    model = model_of(model_class)
    prompt = torch.tensor([[8, 9]])
    right = {"input_ids": torch.tensor([[5, 6, 7], [8, 9, PAD]]), "attention_mask": torch.tensor([[1, 1, 1],
                                                                                                 [1, 1, 0]])}
    alone = model.generate(input_ids=prompt, max_new_tokens=3, do_sample=False)
    with CaptureLogger(generation_utils.logger) as captured:
        padded = model.generate(**right, max_new_tokens=3, do_sample=False)
    assert "right-padding was detected" in captured.out
    assert torch.equal(padded[1, 3:], alone[0, 2:])
    left = {"input_ids": torch.tensor([[PAD, 5, 6, 7], [PAD, PAD, 8, 9]]),
            "attention_mask": torch.tensor([[0, 1, 1, 1], [0, 0, 1, 1]])}
    assert_outcome("inputs", lambda: model.generate(**left, max_new_tokens=3, do_sample=False),
                   check=lambda out: torch.equal(out[1, 2:], alone[0]))


@pytest.mark.parametrize("model_class", GENERATORS, ids=lambda cls: cls.__name__)
def test_generate_with_one_dimensional_ids_names_input_ids(model_class):
    """transformers' own models fail with an IndexError on 1-D `input_ids`; ours say what to change."""
    model = model_of(model_class)
    assert_outcome("inputs", lambda: model.generate(SOURCE[0], max_new_tokens=2),
                   error=r"`input_ids` has shape \(4,\) but generate\(\) takes a batch, \(batch, length\)")
    assert_outcome("inputs", lambda: model.generate(input_ids=SOURCE[0], max_new_tokens=2),
                   error=r"`input_ids` has shape \(4,\)")


@pytest.mark.parametrize("model_class", GENERATORS, ids=lambda cls: cls.__name__)
def test_eos_token_id_minus_one_never_stops(model_class):
    """transformers' tests set `eos_token_id=-1` (and `pad_token_id=-1`) to generate to the maximum length: the
    same tokens as with no eos at all."""
    model = model_of(model_class)
    options = {"max_new_tokens": 4, "do_sample": False, "min_new_tokens": 4}
    unstopped = model.generate(input_ids=SOURCE, attention_mask=MASK, **options,
                               suppress_tokens=None, eos_token_id=None)
    assert_outcome("inputs", lambda: model.generate(input_ids=SOURCE, attention_mask=MASK, eos_token_id=-1,
                                                    pad_token_id=-1, **options),
                   check=lambda out: torch.equal(out, unstopped))


@pytest.mark.parametrize("model_class", [hs.AttentionSeq2SeqForConditionalGeneration,
                                         hs.TransformerForConditionalGeneration], ids=lambda cls: cls.__name__)
def test_generate_from_the_source_embeddings(model_class):
    """`generate(inputs_embeds=...)` on an encoder-decoder (transformers' own accept it): the encoder reads the
    vectors, with the same result as from the ids they embed."""
    model = model_of(model_class)
    embeds = model.get_input_embeddings()(SOURCE)
    from_ids = model.generate(input_ids=SOURCE, attention_mask=MASK, max_new_tokens=3, do_sample=False)
    assert_outcome("inputs", lambda: model.generate(inputs_embeds=embeds, attention_mask=MASK, max_new_tokens=3,
                                                    do_sample=False),
                   check=lambda out: torch.equal(out, from_ids))


SEQ2SEQ_CLASSES = [hs.AttentionSeq2SeqModel, hs.AttentionSeq2SeqForConditionalGeneration, hs.TransformerModel,
                   hs.TransformerForConditionalGeneration]
BAD_DECODER = {
    "decoder ids as a list": (lambda: {"decoder_input_ids": [[BOS, 4]]}, r"`decoder_input_ids` must be a torch.Tensor"),
    "decoder id = vocab size": (lambda: {"decoder_input_ids": torch.tensor([[BOS, VOCAB], [BOS, 4]])},
                                rf"`decoder_input_ids` holds token ids in \[1, {VOCAB}\]"),
    "decoder ids of another batch": (lambda: {"decoder_input_ids": torch.tensor([[BOS, 4]])},
                                     r"one target per source"),
    "decoder mask value 2": (lambda: {"decoder_input_ids": torch.tensor([[BOS, 4], [BOS, 5]]),
                                      "decoder_attention_mask": torch.tensor([[1, 2], [1, 1]])},
                             r"`decoder_attention_mask` must hold 1 for a token and 0"),
    "decoder mask of another width": (lambda: {"decoder_input_ids": torch.tensor([[BOS, 4], [BOS, 5]]),
                                               "decoder_attention_mask": torch.ones(2, 3)},
                                      r"`decoder_attention_mask` has shape \(2, 3\)"),
    "no source at all": (lambda: {"input_ids": None, "attention_mask": None}, r"Pass exactly one of `input_ids`"),
}


@pytest.mark.parametrize("bad", list(BAD_DECODER))
@pytest.mark.parametrize("model_class", SEQ2SEQ_CLASSES, ids=lambda cls: cls.__name__)
def test_bad_decoder_inputs(model_class, bad):
    model = model_of(model_class)
    batch = {**inputs_for(model), **BAD_DECODER[bad][0]()}
    assert_outcome("inputs", lambda: model(**batch), error=BAD_DECODER[bad][1])


@pytest.mark.parametrize("model_class", [hs.RecurrentForCausalLM, hs.TransformerForCausalLM,
                                         hs.AttentionSeq2SeqForConditionalGeneration],
                         ids=lambda cls: cls.__name__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.floats(width=32, allow_nan=True, allow_infinity=True).filter(lambda v: v not in (0.0, 1.0)),
       column=st.integers(0, 3))
def test_any_mask_value_but_0_and_1_is_refused(model_class, value, column):
    model = model_of(model_class)
    mask = MASK.float().clone()
    mask[0, column] = value
    assert_outcome("inputs", lambda: model(**{**inputs_for(model), "attention_mask": mask}),
                   error=r"`attention_mask` must hold 1 for a token and 0")


@pytest.mark.parametrize("model_class", [hs.RecurrentForCausalLM, hs.TransformerForSequenceClassification,
                                         hs.AttentionSeq2SeqForConditionalGeneration],
                         ids=lambda cls: cls.__name__)
@settings(max_examples=25, deadline=None)
@given(token=st.one_of(st.integers(max_value=-1), st.integers(min_value=VOCAB)), column=st.integers(0, 3))
def test_any_id_outside_the_vocabulary_is_refused(model_class, token, column):
    model = model_of(model_class)
    ids = SOURCE.clone()
    token = int(np.clip(token, -(2**62), 2**62))
    ids[0, column] = token
    assert_outcome("inputs", lambda: model(**{**inputs_for(model), "input_ids": ids}),
                   error=r"`input_ids` holds token ids in \[")
