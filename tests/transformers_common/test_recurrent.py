"""transformers' common tests on the recurrent family, one test case per cell type."""

import unittest

from hf_seqmodels import (
    RecurrentConfig,
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    RecurrentModel,
)

from .common import ConfigTester, GenerationTesterMixin, ModelTesterMixin, RecurrentStateChecks, TinyModelTester


class RecurrentModelTester(TinyModelTester):
    def __init__(self, parent, cell_type: str):
        super().__init__(parent)
        self.cell_type = cell_type

    def get_config(self):
        return RecurrentConfig(
            vocab_size=self.vocab_size, embedding_size=self.hidden_size, hidden_size=self.hidden_size,
            num_layers=self.num_hidden_layers, cell_type=self.cell_type, num_labels=self.num_labels,
            pad_token_id=self.pad_token_id, bos_token_id=self.bos_token_id, eos_token_id=self.eos_token_id,
        )


class RecurrentCommonTests(RecurrentStateChecks, ModelTesterMixin, GenerationTesterMixin):
    all_model_classes = (
        RecurrentModel, RecurrentForCausalLM, RecurrentForSequenceClassification, RecurrentForTokenClassification,
    )
    pipeline_model_mapping = {}
    has_attentions = False  # a recurrent layer has no attention weights, as transformers' Mamba
    cell_type = None

    def setUp(self):
        self.model_tester = RecurrentModelTester(self, self.cell_type)
        self.config_tester = ConfigTester(self, config_class=RecurrentConfig, hidden_size=self.model_tester.hidden_size,
                                          common_properties=["vocab_size", "hidden_size"])

    def test_config(self):
        self.config_tester.run_common_tests()


class RecurrentLSTMTest(RecurrentCommonTests, unittest.TestCase):
    cell_type = "lstm"


class RecurrentGRUTest(RecurrentCommonTests, unittest.TestCase):
    cell_type = "gru"


class RecurrentRNNTest(RecurrentCommonTests, unittest.TestCase):
    cell_type = "rnn"
