"""The recurrent family (Elman RNN, LSTM, GRU): the common model and generation suites, plus its own heads' checks."""

import pytest
import torch
from torch.nn import functional as F
from transformers import pipeline

from hf_seqmodels import (
    RecurrentConfig,
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    RecurrentModel,
)
from hf_seqmodels.models.cache import RecurrentCache
from tests.test_generation_common import GenerationTesterMixin
from tests.test_modeling_common import (
    BOS,
    EOS,
    PAD,
    ModelTesterMixin,
    collate,
    make_model,
    make_tokenizer,
    per_example,
)

CELL_TYPES = ("rnn", "lstm", "gru")
VOCAB_SIZE = 14
NUM_LABELS = 3


class RecurrentModelTester:
    """Tiny recurrent models: two layers, hidden size != embedding size (so a tied LM head needs its projection),
    bidirectional for every class but the causal LM."""

    all_model_classes = (
        RecurrentModel,
        RecurrentForCausalLM,
        RecurrentForSequenceClassification,
        RecurrentForTokenClassification,
    )
    generative_model_classes = (RecurrentForCausalLM,)
    cache_class = RecurrentCache
    padding_sides = ("right", "left")

    def __init__(self, cell_type: str):
        self.cell_type = cell_type

    def get_config(self, model_class=RecurrentForSequenceClassification, **changes) -> RecurrentConfig:
        fields = dict(
            vocab_size=VOCAB_SIZE, embedding_size=8, hidden_size=12, num_layers=2, cell_type=self.cell_type,
            bidirectional=model_class is not RecurrentForCausalLM, num_labels=NUM_LABELS,
            pad_token_id=PAD, bos_token_id=BOS, eos_token_id=EOS,
        )
        return RecurrentConfig(**{**fields, **changes})

    def get_examples(self, config) -> list[dict]:
        generator = torch.Generator().manual_seed(1)
        return [{"input_ids": torch.randint(0, config.vocab_size, (length,), generator=generator)}
                for length in (5, 2, 7, 3)]

    def expected_num_hidden_states(self, config) -> dict[str, int]:
        return {"hidden_states": config.num_layers + 1}


@pytest.fixture(params=CELL_TYPES)
def tester(request):
    return RecurrentModelTester(request.param)


class TestRecurrentModel(ModelTesterMixin, GenerationTesterMixin):
    pass
