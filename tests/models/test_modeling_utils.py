"""The shared model base (hf_seqmodels/models/modeling_utils.py): searches that transformers moved to the Hub."""

import textwrap

import pytest
import torch

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
