"""transformers' common tests on the attention seq2seq family, one test case per attention type."""

import unittest

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration, AttentionSeq2SeqModel

from .common import (
    INPUTS_EMBEDS_SKIP,
    ConfigTester,
    GenerationTesterMixin,
    ModelTesterMixin,
    RecurrentStateChecks,
    TinyModelTester,
)


class AttentionSeq2SeqModelTester(TinyModelTester):

    def __init__(self, parent, attention_type: str, input_feeding: bool):
        super().__init__(parent)
        self.attention_type, self.input_feeding = attention_type, input_feeding

    def get_config(self):
        return AttentionSeq2SeqConfig(
            vocab_size=self.vocab_size, embedding_size=self.hidden_size, hidden_size=self.hidden_size, attention_size=10,
            encoder_layers=self.num_hidden_layers, decoder_layers=self.num_hidden_layers, cell_type="lstm",
            attention_type=self.attention_type, input_feeding=self.input_feeding,
            bidirectional_encoder=self.attention_type != "luong_dot",  # dot scores need equal sizes on both sides
            pad_token_id=self.pad_token_id, bos_token_id=self.bos_token_id, eos_token_id=self.eos_token_id,
        )

    def prepare_config_and_inputs_for_common(self):
        config, inputs = super().prepare_config_and_inputs_for_common()
        inputs["decoder_input_ids"] = self.input_ids(self.seq_length)  # as long as the source, as transformers' seq2seq testers
        return config, inputs


class AttentionSeq2SeqCommonTests(RecurrentStateChecks, ModelTesterMixin, GenerationTesterMixin):
    all_model_classes = (AttentionSeq2SeqModel, AttentionSeq2SeqForConditionalGeneration)
    pipeline_model_mapping = {}
    is_encoder_decoder = True
    has_attentions = False  # the attention weights are not returned as per-head self-attention maps
    attention_type, input_feeding = None, False

    def setUp(self):
        self.model_tester = AttentionSeq2SeqModelTester(self, self.attention_type, self.input_feeding)
        self.config_tester = ConfigTester(self, config_class=AttentionSeq2SeqConfig,
                                          hidden_size=self.model_tester.hidden_size,
                                          common_properties=["vocab_size", "hidden_size"])

    def test_config(self):
        self.config_tester.run_common_tests()

    test_inputs_embeds_matches_input_ids = unittest.skip(INPUTS_EMBEDS_SKIP)(lambda self: None)


class BahdanauTest(AttentionSeq2SeqCommonTests, unittest.TestCase):
    attention_type = "bahdanau"


class LuongGeneralTest(AttentionSeq2SeqCommonTests, unittest.TestCase):
    attention_type = "luong_general"


class LuongInputFeedingTest(AttentionSeq2SeqCommonTests, unittest.TestCase):
    attention_type, input_feeding = "luong_dot", True
