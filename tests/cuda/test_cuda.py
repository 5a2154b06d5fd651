"""Real CUDA tests (marker ``cuda``; skipped where torch sees no GPU, as in CI): tiny models of every family on the
GPU, each compared with an independent result on the same GPU.

- decoding steps replayed as CUDA graphs (the static cache of the recurrent families, ``cuda_graphs.StepGraphStore``; the
  Transformer's compiled forward, which ``generate()`` replays as CUDA graphs) give eager's tokens and scores;
- ``generate(cache_implementation="static")`` gives the dynamic cache's results;
- a bf16 autocast training step of every head gives a finite loss and finite gradients close to float32's;
- our decoding loop (``custom_generate=decode``) gives GenerationMixin's results.

``benchmarks/gpu_run.sh`` runs them first (``pytest -m cuda``) on a lent GPU machine.
"""

import pytest
import torch

from hf_seqmodels import (
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
    TransformerForTokenClassification,
)
from hf_seqmodels.models.decoding import decode as our_loop
from hf_seqmodels.models.cuda_graphs import StepGraphStore
from tests.models.test_modeling_attention_seq2seq import tiny_config as seq2seq_config
from tests.models.test_modeling_recurrent import RecurrentModelTester
from tests.models.test_modeling_transformer import tiny_config as transformer_config
from tests.models.test_step_graphs import check_displaced_caches_keep_their_state
from tests.test_modeling_common import EOS, PAD, make_model

pytestmark = pytest.mark.cuda
CUDA = "cuda"
SEARCH = {"max_new_tokens": 6, "do_sample": False, "output_scores": True, "return_dict_in_generate": True}


def recurrent_lm(cell_type: str, **changes):
    config = RecurrentModelTester(cell_type).get_config(RecurrentForCausalLM, **changes)
    return make_model(RecurrentForCausalLM, config).to(CUDA)


def seq2seq(cell_type: str, attention_type: str, input_feeding: bool, **changes):
    return make_model(AttentionSeq2SeqForConditionalGeneration,
                      seq2seq_config(cell_type, attention_type, input_feeding, **changes)).to(CUDA)


def transformer(model_class, **changes):
    return make_model(model_class, transformer_config(**changes)).to(CUDA)


# name -> (a tiny generative model on the GPU without EOS, so that every search runs all its steps, whether it is an
# encoder-decoder). The recurrent ones replay their static-cache steps as CUDA graphs.
GENERATIVE = {
    "recurrent_lstm": (lambda: recurrent_lm("lstm", eos_token_id=None), False),
    "recurrent_gru": (lambda: recurrent_lm("gru", eos_token_id=None), False),
    "seq2seq_gru_luong": (lambda: seq2seq("gru", "luong_general", False, eos_token_id=None), True),
    "seq2seq_lstm_bahdanau": (lambda: seq2seq("lstm", "bahdanau", False, eos_token_id=None), True),
    "seq2seq_lstm_concat_feeding": (lambda: seq2seq("lstm", "luong_concat", True, eos_token_id=None), True),
    "transformer_seq2seq": (lambda: transformer(TransformerForConditionalGeneration, eos_token_id=None), True),
    "transformer_lm": (lambda: transformer(TransformerForCausalLM, eos_token_id=None), False),
}


def batch(encoder_decoder: bool, seed: int = 0) -> dict:
    """Two inputs on the GPU, the second padded: right-padded sources, left-padded prompts."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 12, (2, 6), generator=generator)
    mask = torch.ones_like(ids)
    if encoder_decoder:
        mask[1, 4:] = 0
    else:
        mask[1, :2] = 0
    ids[mask == 0] = PAD
    return {"input_ids": ids.to(CUDA), "attention_mask": mask.to(CUDA)}


def graphs_captured(model) -> int:
    return sum(len(module.graphs) for module in model.modules() if isinstance(module, StepGraphStore))


def assert_same_search(expected, found, beams: int, step_scores: bool = True) -> None:
    """The same tokens and beam scores; ``step_scores``: also the same scores at every step."""
    assert torch.equal(expected.sequences, found.sequences)
    if step_scores:
        torch.testing.assert_close(expected.scores, found.scores)
    if beams > 1:
        # Our loop drops finished sentences from the batch, and cuDNN picks its kernels by batch size, so a beam's
        # summed log-probabilities may differ in the last float32 digits (2e-5 over 17 steps on an H200).
        torch.testing.assert_close(expected.sequences_scores, found.sequences_scores, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("beams", [1, 3])
@pytest.mark.parametrize("name", list(GENERATIVE))
def test_static_cache_generate_matches_the_dynamic_cache(name, beams):
    """The recurrent families replay every step after the first as a CUDA graph (captured here, once per batch
    shape: a second input of the same shape replays the graphs on new inputs); the Transformer keeps eager
    (``disable_compile``: its compiled graphs are the next test's)."""
    make, encoder_decoder = GENERATIVE[name]
    model = make()
    static = {"cache_implementation": "static", "disable_compile": True}
    with torch.no_grad():
        for seed in (0, 1):
            inputs = batch(encoder_decoder, seed)
            dynamic = model.generate(**inputs, num_beams=beams, **SEARCH)
            assert_same_search(dynamic, model.generate(**inputs, num_beams=beams, **static, **SEARCH), beams)
    assert graphs_captured(model) == (0 if name.startswith("transformer") else 1)


def test_displaced_static_caches_keep_their_state_on_cuda():
    check_displaced_caches_keep_their_state(CUDA)


@pytest.mark.parametrize("beams", [1, 3])
@pytest.mark.parametrize("name", list(GENERATIVE))
def test_our_loop_matches_generation_mixin(name, beams):
    """A batch whose sentences end at different steps (EOS on), so that finished sentences leave our loop's batch
    (whose step scores are then -inf by design: the tokens and beam scores are compared)."""
    make, encoder_decoder = GENERATIVE[name]
    model = make()
    model.generation_config.eos_token_id = model.config.eos_token_id = EOS
    search = {**SEARCH, "max_new_tokens": 12, "num_beams": beams}
    with torch.no_grad():
        for seed in (0, 1, 2):
            inputs = batch(encoder_decoder, seed)
            assert_same_search(model.generate(**inputs, **search),
                               model.generate(**inputs, custom_generate=our_loop, **search), beams,
                               step_scores=False)


@pytest.mark.parametrize("beams", [1, 3])
def test_our_loop_replays_the_graphs_for_one_sentence(beams):
    """One sentence leaves no rows to drop, so our loop takes it with a static cache: forward runs for the first
    step only, the captured graph for the others, with GenerationMixin's results on the default cache."""
    model = seq2seq("lstm", "luong_concat", True, eos_token_id=None)
    source = torch.randint(4, 14, (1, 6), generator=torch.Generator().manual_seed(0)).to(CUDA)
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        with torch.no_grad():
            default = model.generate(source, num_beams=beams, **SEARCH)
            calls.clear()
            graphed = model.generate(source, num_beams=beams, cache_implementation="static",
                                     custom_generate=our_loop, **SEARCH)
    finally:
        handle.remove()
    assert len(calls) == 1 and graphs_captured(model) == 1
    assert_same_search(default, graphed, beams)


def training_inputs(model_class, config) -> dict:
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(4, config.vocab_size, (3, 7), generator=generator)
    mask = torch.ones_like(ids)
    mask[2, 5:] = 0
    ids[mask == 0] = PAD
    inputs = {"input_ids": ids, "attention_mask": mask}
    if model_class in (RecurrentForSequenceClassification, TransformerForSequenceClassification):
        inputs["labels"] = torch.randint(0, config.num_labels, (3,), generator=generator)
    elif model_class in (RecurrentForTokenClassification, TransformerForTokenClassification):
        inputs["labels"] = torch.randint(0, config.num_labels, (3, 7), generator=generator).masked_fill(mask == 0, -100)
    elif config.is_encoder_decoder:
        inputs["labels"] = torch.randint(4, config.vocab_size, (3, 5), generator=generator)
    else:
        inputs["labels"] = ids.masked_fill(mask == 0, -100)
    return {name: tensor.to(CUDA) for name, tensor in inputs.items()}


HEADS = {
    "recurrent_lm_lstm": lambda: make_model(RecurrentForCausalLM,
                                            RecurrentModelTester("lstm").get_config(RecurrentForCausalLM)),
    "recurrent_classification_gru": lambda: make_model(RecurrentForSequenceClassification,
                                                       RecurrentModelTester("gru").get_config()),
    "recurrent_tagging_lstm": lambda: make_model(RecurrentForTokenClassification,
                                                 RecurrentModelTester("lstm").get_config()),
    "seq2seq_lstm": lambda: make_model(AttentionSeq2SeqForConditionalGeneration,
                                       seq2seq_config("lstm", "luong_concat", True)),
    "seq2seq_gru": lambda: make_model(AttentionSeq2SeqForConditionalGeneration, seq2seq_config()),
    "transformer_seq2seq": lambda: make_model(TransformerForConditionalGeneration, transformer_config()),
    "transformer_lm": lambda: make_model(TransformerForCausalLM, transformer_config()),
    "transformer_classification": lambda: make_model(TransformerForSequenceClassification, transformer_config()),
    "transformer_tagging": lambda: make_model(TransformerForTokenClassification, transformer_config()),
}


def loss_and_gradient(model, inputs: dict, autocast: bool) -> tuple[torch.Tensor, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    with torch.autocast(CUDA, dtype=torch.bfloat16, enabled=autocast):
        loss = model(**inputs).loss
    loss.backward()
    return loss.detach().float(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("name", list(HEADS))
def test_bf16_training_step(name):
    """Accelerate's ``mixed_precision="bf16"`` is this autocast: the weights stay float32, the loss and gradients
    are finite and close to float32's, and an optimizer step changes the weights."""
    model = HEADS[name]().to(CUDA).train()
    inputs = training_inputs(type(model), model.config)
    loss32, gradient32 = loss_and_gradient(model, inputs, autocast=False)
    loss16, gradient16 = loss_and_gradient(model, inputs, autocast=True)
    assert torch.isfinite(loss16) and torch.isfinite(gradient16).all()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    torch.testing.assert_close(loss16, loss32, rtol=0.05, atol=0.05)
    assert torch.nn.functional.cosine_similarity(gradient16, gradient32, dim=0) > 0.98
    before = [p.detach().clone() for p in model.parameters()]
    torch.optim.Adam(model.parameters(), lr=1e-3).step()
    assert any(not torch.equal(old, new) for old, new in zip(before, model.parameters()))


@pytest.mark.parametrize("model_class", [TransformerForConditionalGeneration, TransformerForCausalLM])
def test_transformer_compiled_static_generate_matches_eager(model_class):
    """On a GPU, ``generate()`` with a static cache compiles the Transformer's forward (``_can_compile_fullgraph``)
    and replays its decoding steps as CUDA graphs (torch.compile's "reduce-overhead"). Last in the file: compiling
    takes the longest, and a time limit should cut it rather than the others."""
    model = transformer(model_class, eos_token_id=None)
    inputs = batch(model.config.is_encoder_decoder)
    with torch.no_grad():
        eager = model.generate(**inputs, **SEARCH)
        compiled = model.generate(**inputs, cache_implementation="static", **SEARCH)
    assert hasattr(model, "_compiled_call"), "generate() did not compile forward (transformers' get_compiled_call)"
    assert torch.equal(eager.sequences, compiled.sequences)
    torch.testing.assert_close(eager.scores, compiled.scores, rtol=1e-4, atol=1e-4)  # fused kernels round otherwise
