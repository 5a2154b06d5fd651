"""PEFT LoRA on every family: only the adapters train, a saved adapter loaded onto a fresh base model gives the
trained model's outputs, and merging the adapters into the weights gives them too."""

import copy

import pytest
import torch

from hf_seqmodels import AttentionSeq2SeqForConditionalGeneration, RecurrentForCausalLM, TransformerForCausalLM

from .models.test_modeling_attention_seq2seq import AttentionSeq2SeqModelTester
from .models.test_modeling_recurrent import RecurrentModelTester
from .models.test_modeling_transformer import TransformerModelTester
from .test_modeling_common import ATOL, collate, main_output, make_model, random_labels, without_labels

peft = pytest.importorskip("peft")

CASES = {  # model class, its tester, the LoRA targets (module names)
    # The Transformer's attention projections: the fused self-attention input and the output projection.
    "transformer-attention": (TransformerForCausalLM, TransformerModelTester("paper"), ["qkv_proj", "out_proj"]),
    # A recurrent model's Linear and Embedding layers (nn.LSTM itself is not a layer LoRA adapts).
    "recurrent-lstm": (RecurrentForCausalLM, RecurrentModelTester("lstm"), ["embed_tokens", "projection"]),
    "attention-seq2seq": (AttentionSeq2SeqForConditionalGeneration,
                          AttentionSeq2SeqModelTester(("gru", "luong_general", True, True)),
                          ["embed_tokens", "bridge", "key_layer", "combine"]),
}


def base_model(model_class, tester):
    # Untied output layer: merging LoRA into an embedding matrix that the output layer shares would change the
    # output layer too, which the unmerged adapter does not.
    config = tester.get_config(model_class, tie_word_embeddings=False)
    return config, make_model(model_class, config)


@pytest.mark.parametrize("case", list(CASES))
def test_lora_trains_saves_loads_and_merges(case, tmp_path):
    model_class, tester, targets = CASES[case]
    config, base = base_model(model_class, tester)
    batch = collate(tester.get_examples(config), config.pad_token_id)
    batch["labels"] = random_labels(base, batch)
    inputs = without_labels(batch)
    with torch.no_grad():
        before = main_output(base(**inputs))
    frozen = {name: tensor.clone() for name, tensor in base.state_dict().items()}

    lora = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets))
    trainable = {name for name, param in lora.named_parameters() if param.requires_grad}
    assert trainable and all("lora_" in name for name in trainable), sorted(trainable)
    lora.train()
    optimizer = torch.optim.Adam([param for param in lora.parameters() if param.requires_grad], lr=1e-2)
    losses = []
    for _ in range(4):
        loss = lora(**batch).loss
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert losses[-1] < losses[0], losses
    lora.eval()
    # The base weights did not move: only the adapters did.
    base_state = lora.get_base_model().state_dict()
    for name, tensor in frozen.items():
        wrapped = next(key for key in (name, name.replace(".weight", ".base_layer.weight"),
                                       name.replace(".bias", ".base_layer.bias")) if key in base_state)
        assert torch.equal(base_state[wrapped], tensor), name
    with torch.no_grad():
        trained = main_output(lora(**inputs))
    assert not torch.allclose(trained, before, atol=1e-3), "the adapters changed nothing"

    lora.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    _, fresh = base_model(model_class, tester)  # the same seed: the same base weights, no adapters
    loaded = peft.PeftModel.from_pretrained(fresh, tmp_path / "adapter").eval()
    with torch.no_grad():
        torch.testing.assert_close(main_output(loaded(**inputs)), trained, rtol=0, atol=ATOL)

    merged = copy.deepcopy(lora).merge_and_unload()
    assert type(merged) is model_class
    assert not any("lora_" in name for name, _ in merged.named_parameters())
    with torch.no_grad():
        torch.testing.assert_close(main_output(merged(**inputs)), trained, rtol=0, atol=ATOL)
