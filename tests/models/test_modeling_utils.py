"""The shared model base (hf_seqmodels/models/modeling_utils.py): the language-model loss, searches that transformers
moved to the Hub."""

import textwrap

import pytest
import torch
from torch.nn import functional as F

from hf_seqmodels import RecurrentForCausalLM, TransformerForConditionalGeneration
from hf_seqmodels.models import modeling_utils

from ..test_modeling_common import make_model
from .test_modeling_recurrent import RecurrentModelTester
from .test_modeling_transformer import tiny_config

GROUP_BEAMS = {"num_beams": 4, "num_beam_groups": 2, "diversity_penalty": 0.5, "max_new_tokens": 3, "do_sample": False}

# A local custom_generate folder: group beam search's options reach it, and it runs transformers' plain beam search
# (a stand-in for the Hub's transformers-community/group-beam-search, which a test cannot download).
PLAIN_BEAMS_GENERATE = textwrap.dedent(
    """
    from transformers import GenerationMixin

    def beams(model, input_ids, logits_processor, stopping_criteria, generation_config, synced_gpus=False,
              **model_kwargs):
        return GenerationMixin._beam_search(model, input_ids, logits_processor, stopping_criteria, generation_config,
                                            synced_gpus, **model_kwargs)

    def generate(model, *args, **kwargs):
        return GenerationMixin.generate(model, *args, custom_generate=beams, **kwargs)
    """
)


def models():
    config = RecurrentModelTester("gru").get_config(RecurrentForCausalLM)
    yield make_model(RecurrentForCausalLM, config), torch.tensor([[4, 5, 6]])
    yield make_model(TransformerForConditionalGeneration, tiny_config(is_encoder_decoder=True)), torch.tensor([[4, 5, 6]])


@pytest.mark.parametrize("trust_remote_code", [False, True])
def test_group_beam_search_names_the_hub_repo_and_a_local_copy(trust_remote_code, monkeypatch):
    """Without trust_remote_code, or offline with it, num_beam_groups > 1 is refused saying where group beam
    search lives now and how to run it (transformers would fail offline trying to download it)."""
    monkeypatch.setattr(modeling_utils, "is_offline_mode", lambda: True)
    for model, prompt in models():
        with pytest.raises(ValueError, match=r"transformers-community/group-beam-search.*num_beam_groups.*"
                                             r"custom_generate='<folder holding custom_generate/generate.py>'"):
            model.generate(prompt, trust_remote_code=trust_remote_code, **GROUP_BEAMS)


def test_other_moved_searches_are_named_too(monkeypatch):
    monkeypatch.setattr(modeling_utils, "is_offline_mode", lambda: True)
    model, prompt = next(models())
    with pytest.raises(ValueError, match="Contrastive search .*transformers-community/contrastive-search"):
        model.generate(prompt, penalty_alpha=0.6, top_k=4, max_new_tokens=3)


def test_a_local_custom_generate_runs(tmp_path):
    """The way the error gives: a local folder with custom_generate/generate.py and trust_remote_code=True runs,
    with the group options passed, offline; this one's plain beam search equals generate(num_beams=4)."""
    (tmp_path / "custom_generate").mkdir()
    (tmp_path / "custom_generate" / "generate.py").write_text(PLAIN_BEAMS_GENERATE)
    for model, prompt in models():
        expected = model.generate(prompt, num_beams=4, max_new_tokens=3, do_sample=False)
        got = model.generate(prompt, custom_generate=str(tmp_path), trust_remote_code=True, **GROUP_BEAMS)
        assert torch.equal(got, expected)


def test_lm_loss_with_shift_labels_scores_each_position_against_its_given_target():
    """``shift_labels`` (targets aligned with the logits, from sequence-parallel training) replace the labels: the
    loss is the cross-entropy of position t against shift_labels[t], whatever the labels say, as transformers'."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, generator=generator)
    labels = torch.randint(0, 7, (2, 5), generator=generator)
    shift_labels = torch.randint(0, 7, (2, 5), generator=generator)
    shift_labels[0, -1] = -100
    kept = shift_labels != -100
    expected = F.cross_entropy(logits[kept], shift_labels[kept])
    loss = modeling_utils.lm_loss(logits, labels, shift=True, shift_labels=shift_labels)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(modeling_utils.lm_loss(logits, labels.flip(0), shift=True, shift_labels=shift_labels),
                               expected)
    shifted = F.pad(labels[:, 1:], (0, 1), value=-100)  # the labels' own shift gives the loss of the labels alone
    torch.testing.assert_close(modeling_utils.lm_loss(logits, labels, shift=True, shift_labels=shifted),
                               modeling_utils.lm_loss(logits, labels, shift=True))
    with pytest.raises(ValueError, match="`shift_labels` is for causal language models"):
        modeling_utils.lm_loss(logits, labels, shift=False, shift_labels=shift_labels)


@pytest.mark.parametrize("bias", [True, False])
def test_output_layer_into_writes_what_the_layer_computes_into_the_buffer(bias):
    torch.manual_seed(0)
    layer, hidden = torch.nn.Linear(8, 50, bias=bias), torch.randn(6, 8)
    buffer = torch.full((10, 50), float("nan"))
    with torch.no_grad():
        result = modeling_utils.output_layer_into(layer, hidden, buffer[:6])
    assert result.data_ptr() == buffer.data_ptr() and torch.equal(result, layer(hidden))
    assert torch.isnan(buffer[6:]).all()


def test_output_layer_into_leaves_layers_it_cannot_see_through_to_their_call():
    """Autograd (``out=`` has none), a hook, another dtype, a subclass (a PEFT wrapper adds its own terms) or
    autocast: the layer's own call runs, and the buffer is not written."""
    torch.manual_seed(0)
    hidden, buffer = torch.randn(3, 8), torch.zeros(3, 50)
    plain, hooked, half = torch.nn.Linear(8, 50), torch.nn.Linear(8, 50), torch.nn.Linear(8, 50).bfloat16()
    calls = []
    hooked.register_forward_hook(lambda module, args, output: calls.append(output.shape))

    class Wrapped(torch.nn.Linear):
        def forward(self, hidden):
            return super().forward(hidden) + 1.0

    wrapped = Wrapped(8, 50)
    assert modeling_utils.output_layer_into(plain, hidden, buffer).requires_grad
    with torch.no_grad():
        assert torch.equal(modeling_utils.output_layer_into(hooked, hidden, buffer), hooked(hidden))
        assert len(calls) == 2
        assert torch.equal(modeling_utils.output_layer_into(wrapped, hidden, buffer), wrapped(hidden))
        assert modeling_utils.output_layer_into(half, hidden.bfloat16(), buffer).dtype == torch.bfloat16
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert modeling_utils.output_layer_into(plain, hidden, buffer).dtype == torch.bfloat16
    assert not buffer.any()
