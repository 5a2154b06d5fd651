"""What the three families' runs of transformers' common tests share: the imports from transformers' test package
(made importable by conftest.py) and the base of our model testers."""

import types

import torch
import transformers_tests.test_modeling_common as modeling_common
from transformers.testing_utils import set_config_for_less_flaky_test
from transformers_tests.test_configuration_common import ConfigTester  # noqa: F401
from transformers_tests.test_modeling_common import ModelTesterMixin, ids_tensor, random_attention_mask  # noqa: F401
from transformers_tests.generation.test_utils import GenerationTesterMixin  # noqa: F401

from hf_seqmodels import _AUTO_CLASSES
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


def _set_own_norm_eps_for_less_flaky_test(config):
    """transformers' helper sets every norm-epsilon name any model uses (``batch_norm_eps``, ``rms_norm_eps``, ...)
    to 1.0 on the config, which is then saved and loaded; our configs refuse keys that are not their fields when
    loading (a misspelt key would otherwise be ignored), so set only the ones the config has."""
    names = types.SimpleNamespace()
    set_config_for_less_flaky_test(names)
    for name, value in vars(names).items():
        if hasattr(config, name):
            setattr(config, name, value)


modeling_common.set_config_for_less_flaky_test = _set_own_norm_eps_for_less_flaky_test


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
