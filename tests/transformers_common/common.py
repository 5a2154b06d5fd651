"""What the three families' runs of transformers' common tests share: the imports from transformers' test package
(made importable by conftest.py) and the base of our model testers."""

import torch
from transformers_tests.test_configuration_common import ConfigTester  # noqa: F401
from transformers_tests.test_modeling_common import ModelTesterMixin, ids_tensor, random_attention_mask  # noqa: F401
from transformers_tests.generation.test_utils import GenerationTesterMixin  # noqa: F401

from hf_seqmodels import _AUTO_CLASSES
from hf_seqmodels.models.cache import RecurrentCache
from tests.test_modeling_common import BOS, EOS, PAD

# transformers' mixins tell a base model from a head, and pick the labels a head takes, by its class name in the
# Auto classes' name tables (MODEL_MAPPING_NAMES, ...), which list in-tree models only: list ours there too, as
# registering them (hf_seqmodels/__init__.py) lists them in the Auto classes themselves.
for _models in _AUTO_CLASSES.values():
    for _auto_class, _model_class in _models.items():
        _auto_class._model_mapping._model_mapping.setdefault(_model_class.config_class.model_type, _model_class.__name__)

# transformers' test embeds the decoder's ids with get_input_embeddings() too, the encoder's matrix: an encoder-decoder
# of ours has a decoder matrix of its own (unless shared). tests/test_modeling_common.py's test_inputs_embeds embeds
# each side's ids with its own.
INPUTS_EMBEDS_SKIP = "embeds the decoder's ids with the encoder's matrix; ours has its own (our test_inputs_embeds)"


class RecurrentStateChecks:
    """transformers' checks of what generate() returns that read attention layers' keys and values, or expect every
    encoder layer to output `hidden_size` vectors, overridden for a recurrent state as their own messages ask of a
    model with another cache layout (transformers' Mamba and xLSTM tests override or skip them)."""

    def _check_past_key_values_for_generate(self, batch_size, past_key_values, seq_length, config):
        # one RecurrentLayerCache per recurrent (decoder) layer, holding (h,) or the LSTM's (h, c), torch's layout
        self.assertIsInstance(past_key_values, RecurrentCache)
        self.assertEqual(len(past_key_values), config.num_hidden_layers)
        parts = 2 if config.cell_type == "lstm" else 1
        for layer in past_key_values.layers:
            self.assertEqual([tuple(t.shape) for t in layer.recurrent_states],
                             [(1, batch_size, config.hidden_size)] * parts)

    def _check_encoder_hidden_states_for_generate(self, hidden_states, batch_size, config, prompt_length):
        # the embeddings, then each encoder layer's outputs: both directions' states side by side when bidirectional
        directions = 2 if config.bidirectional_encoder else 1
        expected = [(batch_size, prompt_length, config.embedding_size)]
        expected += [(batch_size, prompt_length, directions * config.hidden_size)] * config.encoder_layers
        self.assertIsInstance(hidden_states, tuple)
        self.assertListEqual([tuple(states.shape) for states in hidden_states], expected)


class TinyModelTester:
    """The attributes transformers' mixins read of a model tester, for tiny models (batch 13, length 7 as
    transformers' own testers); a family's tester gives ``get_config`` and, for encoder-decoders, the decoder's
    inputs."""

    batch_size = 13
    seq_length = 7
    vocab_size = 99
    hidden_size = 16
    num_hidden_layers = 2
    num_attention_heads = 4
    is_training = True
    pad_token_id, bos_token_id, eos_token_id = PAD, BOS, EOS
    num_labels = 3

    def __init__(self, parent):
        self.parent = parent

    def get_config(self):
        raise NotImplementedError

    def input_ids(self, length: int) -> torch.Tensor:
        # no special tokens inside inputs: a random PAD or EOS mid-sequence would change what the tests compare
        return ids_tensor([self.batch_size, length], self.vocab_size - 3) + 3

    def prepare_config_and_inputs_for_common(self):
        inputs = {"input_ids": self.input_ids(self.seq_length),
                  "attention_mask": random_attention_mask([self.batch_size, self.seq_length])}
        return self.get_config(), inputs
