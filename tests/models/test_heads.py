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
    labels = {} if "id2label" in changes else {"num_labels": NUM_LABELS}
    return model_class(config_class(vocab_size=10, **labels, **sizes, **changes)).eval()


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


BIO_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TAGGERS = [RecurrentForTokenClassification, TransformerForTokenClassification]


def crf_tagger(model_class, seed: int = 0, **changes):
    torch.manual_seed(seed)
    labels = {"id2label": dict(enumerate(BIO_LABELS)), "label2id": {name: i for i, name in enumerate(BIO_LABELS)}}
    return tiny_head(model_class, use_crf=True, crf_constrain_bio=True, **labels, **changes)


def crf_batch():
    input_ids = torch.randint(1, 10, (3, 6), generator=torch.Generator().manual_seed(1))
    attention_mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 6])
    labels = torch.tensor([[0, 1, 2, -100, 0, 3], [-100, 3, -100, 4, -100, -100], [-100] * 6])  # a row to skip
    return input_ids, attention_mask, labels


@pytest.mark.parametrize("model_class", TAGGERS, ids=lambda cls: cls.__name__)
def test_crf_loss_is_the_nll_of_each_rows_labelled_positions(model_class):
    model = crf_tagger(model_class)
    input_ids, attention_mask, labels = crf_batch()
    output = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    nlls = []
    for row in range(2):  # the third row has no labelled position
        keep = labels[row] != -100
        nlls.append(model.crf.neg_log_likelihood(output.logits[row, keep][None], labels[row, keep][None])[0])
    torch.testing.assert_close(output.loss, torch.stack(nlls).mean())
    # The logits stay the classifier's scores (the emissions).
    assert output.logits.shape == (3, 6, len(BIO_LABELS))
    # Viterbi over the same positions, row by row.
    tags = model.viterbi_tags(input_ids, attention_mask, tag_mask=labels != -100)
    for row in range(2):
        keep = labels[row] != -100
        path, _ = model.crf.decode(output.logits[row, keep][None])
        assert tags[row, keep].tolist() == path[0].tolist() and (tags[row, ~keep] == -100).all()
    assert (tags[2] == -100).all()


@pytest.mark.parametrize("model_class", TAGGERS, ids=lambda cls: cls.__name__)
def test_crf_weights_survive_save_and_load(model_class, tmp_path):
    model = crf_tagger(model_class)
    assert {"crf.transitions", "crf.start_transitions", "crf.end_transitions"} <= set(model.state_dict())
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path).eval()
    for name in ("transitions", "start_transitions", "end_transitions", "transition_penalty", "start_penalty"):
        torch.testing.assert_close(getattr(loaded.crf, name), getattr(model.crf, name), rtol=0, atol=0)
    input_ids, attention_mask, _ = crf_batch()
    assert torch.equal(loaded.viterbi_tags(input_ids, attention_mask), model.viterbi_tags(input_ids, attention_mask))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"crf_constrain_bio": True}, r"`crf_constrain_bio`=True constrains a CRF, but `use_crf`=False"),
        ({"use_crf": "yes"}, r"`use_crf`='yes' must be True or False"),
        ({"use_crf": True, "crf_constrain_bio": True, "num_labels": 3},
         r"`crf_constrain_bio`=True needs BIO \(IOB2\) labels in `id2label`"),
    ],
)
@pytest.mark.parametrize("config_class", [RecurrentConfig, TransformerConfig])
def test_crf_fields_are_checked(config_class, changes, message):
    with pytest.raises(ValueError, match=message):
        config_class(**changes)


def test_a_model_without_crf_has_no_viterbi_tags():
    with pytest.raises(ValueError, match=r"no CRF \(config.use_crf=False\)"):
        tiny_head(RecurrentForTokenClassification).viterbi_tags(torch.tensor([[1, 2]]))
