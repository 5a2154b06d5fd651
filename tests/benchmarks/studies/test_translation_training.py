"""benchmarks.studies.translation_training's floor computes the main job's loss and gradients, so that its timing is a floor
of the same work."""

import copy

import pytest
import torch

from benchmarks.studies.translation_training import Floor, variants
from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.training.arguments import TrainingArguments
from hf_seqmodels.training.loop import training_loss


@pytest.fixture
def model_and_batch():
    torch.manual_seed(0)
    config = AttentionSeq2SeqConfig(vocab_size=20, embedding_size=8, hidden_size=8, pad_token_id=0, bos_token_id=1,
                                    eos_token_id=2, decoder_start_token_id=2)  # the main job's kind, tiny
    model = AttentionSeq2SeqForConditionalGeneration(config)
    source = torch.randint(3, 20, (3, 6))
    mask = torch.ones_like(source)
    mask[1, 4:], mask[2, 2:] = 0, 0
    labels = torch.randint(3, 20, (3, 5))
    labels[0, 3:], labels[2, 1:] = -100, -100
    return model, {"input_ids": source * mask, "attention_mask": mask, "labels": labels}


def test_floor_has_our_loss_and_gradients(model_and_batch):
    model, batch = model_and_batch
    ours, floor = copy.deepcopy(model).eval(), Floor.from_ours(model).eval()  # no dropout
    expected = training_loss(ours, batch, 0.1)
    got = floor(batch["input_ids"], batch["attention_mask"], batch["labels"], model.config.decoder_start_token_id, 0.1)
    torch.testing.assert_close(got, expected)
    expected.backward()
    got.backward()
    pairs = {"encoder": (ours.model.encoder.rnn.layers[0].rnn.weight_hh_l0_reverse, floor.encoder.weight_hh_l0_reverse),
             "attention": (ours.model.decoder.attention.key_layer.weight, floor.keys.weight),
             "tied embeddings": (ours.model.decoder.embed_tokens.weight, floor.target_embeddings.weight)}
    for name, (mine, its) in pairs.items():
        torch.testing.assert_close(its.grad, mine.grad, msg=name)


def test_every_variant_trains(model_and_batch):
    model, batch = model_and_batch
    args = TrainingArguments(output_dir="unused", label_smoothing_factor=0.1, max_grad_norm=1.0)
    for name, update in variants(model, args).items():
        update(batch)  # an update runs: forward, backward, clipping and the optimizer
