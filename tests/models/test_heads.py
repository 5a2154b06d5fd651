"""The classification losses shared by every family's heads: label checks, and -100 ignored as in transformers' BERT."""

import pytest
import torch
from torch.nn import functional as F
from transformers import PretrainedConfig

from hf_seqmodels import (
    RecurrentConfig,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    TransformerConfig,
    TransformerForTokenClassification,
)
from hf_seqmodels.models.heads import sequence_classification_loss, token_classification_loss

BATCH, LENGTH, NUM_LABELS = 4, 5, 3
GENERATOR = torch.Generator().manual_seed(0)


def sequence_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return sequence_classification_loss(logits, labels, PretrainedConfig(problem_type="single_label_classification"))


LOSSES = {  # name: (loss, logits, labels with an ignored entry, whose ignored entries the loss skips)
    "tokens": (token_classification_loss, torch.randn(BATCH, LENGTH, NUM_LABELS, generator=GENERATOR),
               torch.tensor([[0, 1, 2, -100, 1]] * BATCH)),
    "sequences": (sequence_loss, torch.randn(BATCH, NUM_LABELS, generator=GENERATOR), torch.tensor([2, -100, 0, 1])),
}


@pytest.mark.parametrize("ignored", list(LOSSES))
def test_minus_100_is_ignored(ignored):
    loss, logits, labels = LOSSES[ignored]
    keep = labels != -100
    torch.testing.assert_close(loss(logits, labels), F.cross_entropy(logits[keep], labels[keep]))
    torch.testing.assert_close(loss(logits, labels.int()), F.cross_entropy(logits[keep], labels[keep]))


@pytest.mark.parametrize("ignored", list(LOSSES))
@pytest.mark.parametrize("value", [-1, NUM_LABELS])
def test_class_ids_outside_the_head_name_what_minus_100_ignores(ignored, value):
    loss, logits, labels = LOSSES[ignored]
    with pytest.raises(ValueError, match=rf"`labels` hold values in \[.*\] but the head has {NUM_LABELS} labels "
                                         rf"\(0..{NUM_LABELS - 1}; -100 marks {ignored} to ignore\)"):
        loss(logits, labels.masked_fill(labels == 1, value))


@pytest.mark.parametrize("ignored", list(LOSSES))
def test_float_class_labels_are_rejected_not_truncated(ignored):
    loss, logits, labels = LOSSES[ignored]
    with pytest.raises(ValueError, match=r"`labels` have dtype torch.float32 but must hold integer class ids.*"
                                         r"convert them with `labels.long\(\)`"):
        loss(logits, labels.float() + 0.9)


def tiny_head(model_class, **changes):
    config_class = TransformerConfig if model_class is TransformerForTokenClassification else RecurrentConfig
    sizes = ({"d_model": 8, "num_heads": 2, "encoder_layers": 1, "ffn_dim": 8} if config_class is TransformerConfig
             else {"embedding_size": 8, "hidden_size": 8})
    return model_class(config_class(vocab_size=10, num_labels=NUM_LABELS, **sizes, **changes)).eval()


@pytest.mark.parametrize(
    "model_class,changes,labels",
    [
        (RecurrentForTokenClassification, {}, torch.full((1, LENGTH), 1.9)),
        (TransformerForTokenClassification, {}, torch.full((1, LENGTH), 1.9)),
        (RecurrentForSequenceClassification, {"problem_type": "single_label_classification"}, torch.tensor([1.9])),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else None,
)
def test_heads_reject_float_class_labels(model_class, changes, labels):
    with pytest.raises(ValueError, match="`labels` have dtype torch.float32 but must hold integer class ids"):
        tiny_head(model_class, **changes)(torch.tensor([[1, 2, 3, 4, 5]]), labels=labels)
