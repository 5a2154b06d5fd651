"""transformers' common tests on the Transformer: the encoder-decoder, the decoder-only and the encoder-only heads,
each as its own test case (as transformers tests T5 and its encoder-only model)."""

import unittest

import torch

from hf_seqmodels import (
    TransformerConfig,
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
    TransformerForTokenClassification,
    TransformerModel,
)

from .common import INPUTS_EMBEDS_SKIP, ConfigTester, GenerationTesterMixin, ModelTesterMixin, TinyModelTester


class TransformerModelTester(TinyModelTester):

    def __init__(self, parent, is_encoder_decoder: bool, decoder_inputs: bool):
        super().__init__(parent)
        self.is_encoder_decoder, self.decoder_inputs = is_encoder_decoder, decoder_inputs

    def get_config(self):
        return TransformerConfig(
            vocab_size=self.vocab_size, d_model=self.hidden_size, num_heads=self.num_attention_heads,
            encoder_layers=self.num_hidden_layers, decoder_layers=self.num_hidden_layers, ffn_dim=32,
            max_position_embeddings=64, num_labels=self.num_labels, is_encoder_decoder=self.is_encoder_decoder,
            pad_token_id=self.pad_token_id, bos_token_id=self.bos_token_id, eos_token_id=self.eos_token_id,
            decoder_start_token_id=self.bos_token_id,
        )

    def prepare_config_and_inputs_for_common(self):
        config, inputs = super().prepare_config_and_inputs_for_common()
        if self.decoder_inputs:
            inputs["decoder_input_ids"] = self.input_ids(self.seq_length)  # as long as the source, as transformers' seq2seq testers
            # as Bart's tester: generate() continuing from a cache tells cached from new decoder ids by the mask's width
            inputs["decoder_attention_mask"] = torch.ones_like(inputs["decoder_input_ids"])
        return config, inputs


class TransformerCommonTests(ModelTesterMixin):
    pipeline_model_mapping = {}
    decoder_inputs = False

    def setUp(self):
        self.model_tester = TransformerModelTester(self, self.is_encoder_decoder, self.decoder_inputs)
        self.config_tester = ConfigTester(self, config_class=TransformerConfig, d_model=self.model_tester.hidden_size,
                                          common_properties=["vocab_size", "d_model"])

    def test_config(self):
        self.config_tester.run_common_tests()


class TransformerEncoderDecoderTest(TransformerCommonTests, GenerationTesterMixin, unittest.TestCase):
    all_model_classes = (TransformerModel, TransformerForConditionalGeneration)
    is_encoder_decoder = decoder_inputs = True
    test_inputs_embeds_matches_input_ids = unittest.skip(INPUTS_EMBEDS_SKIP)(lambda self: None)


class TransformerDecoderOnlyTest(TransformerCommonTests, GenerationTesterMixin, unittest.TestCase):
    all_model_classes = (TransformerForCausalLM,)
    is_encoder_decoder = False


class TransformerEncoderOnlyTest(TransformerCommonTests, unittest.TestCase):
    all_model_classes = (TransformerForSequenceClassification, TransformerForTokenClassification)
    is_encoder_decoder = False
