"""The tutorial baselines compute the same function as the recurrent LM whose weights they copy."""

import pytest
import torch

from benchmarks.helpers.language_models import LMSizes, recurrent_lm
from benchmarks.helpers.tutorial import TutorialCellLM, TutorialLM


@pytest.mark.parametrize("cell_type", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("tutorial_class", [TutorialLM, TutorialCellLM])
def test_tutorial_lm_matches_the_model_it_copies(cell_type, tutorial_class):
    torch.manual_seed(0)
    model = recurrent_lm(LMSizes(cell_type=cell_type, vocab_size=30, hidden_size=8, num_layers=2)).eval()
    tutorial = tutorial_class.from_recurrent_lm(model).eval()
    ids = torch.randint(1, 30, (3, 7))
    labels = ids.clone()
    labels[0, 4:] = -100
    expected = model(input_ids=ids, labels=labels)
    logits, loss = tutorial(ids, labels)
    torch.testing.assert_close(logits, expected.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss, expected.loss, atol=1e-5, rtol=1e-5)


def test_tutorial_refuses_an_untied_model():
    model = recurrent_lm(LMSizes(vocab_size=30, hidden_size=8, num_layers=1))
    model.config.tie_word_embeddings = False
    with pytest.raises(ValueError, match="tied, unidirectional"):
        TutorialLM.from_recurrent_lm(model)
