"""hf_seqmodels: classic sequence models as Hugging Face transformers models.

Importing the package registers every model with the Auto classes, and marks them for `trust_remote_code`
saving: `save_pretrained` writes the code files next to the weights and an `auto_map` into config.json that names
every Auto class of the model's family, so the folder loads through any of them without the package.
"""

from transformers import (
    CONFIG_MAPPING,
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from .models.configuration_attention_seq2seq import AttentionSeq2SeqConfig
from .models.configuration_recurrent import RecurrentConfig
from .models.modeling_attention_seq2seq import AttentionSeq2SeqForConditionalGeneration, AttentionSeq2SeqModel
from .models.modeling_recurrent import (
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
    RecurrentForTokenClassification,
    RecurrentModel,
)
from .models.configuration_transformer import TransformerConfig
from .models.modeling_transformer import (
    TransformerForCausalLM,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
    TransformerEncoderModel,
    TransformerForTokenClassification,
    TransformerModel,
)

_AUTO_CLASSES = {
    RecurrentConfig: {
        AutoModel: RecurrentModel,
        AutoModelForCausalLM: RecurrentForCausalLM,
        AutoModelForSequenceClassification: RecurrentForSequenceClassification,
        AutoModelForTokenClassification: RecurrentForTokenClassification,
    },
    AttentionSeq2SeqConfig: {
        AutoModel: AttentionSeq2SeqModel,
        AutoModelForSeq2SeqLM: AttentionSeq2SeqForConditionalGeneration,
    },
    TransformerConfig: {
        AutoModel: TransformerModel,
        AutoModelForSeq2SeqLM: TransformerForConditionalGeneration,
        AutoModelForCausalLM: TransformerForCausalLM,
        AutoModelForSequenceClassification: TransformerForSequenceClassification,
        AutoModelForTokenClassification: TransformerForTokenClassification,
    },
}

# Base models that an Auto class reaches through the class registered for it: AutoModel gives TransformerModel, whose
# from_pretrained hands an encoder-only head's folder to TransformerEncoderModel. Saved alone, they write their code
# and the family's auto_map too (AutoModel naming themselves).
_REACHED_THROUGH = {TransformerConfig: {AutoModel: TransformerEncoderModel}}

for _config_class, _models in _AUTO_CLASSES.items():
    AutoConfig.register(_config_class.model_type, _config_class)
    for _former in _config_class.former_model_types:  # folders saved under an earlier name still load
        CONFIG_MAPPING.register(_former, _config_class)
    _config_class.register_for_auto_class()
    # Every Auto class of the family goes into a saved folder's auto_map, whichever head is saved.
    _family_auto_map = {
        _auto_class.__name__: f"{_model_class.__module__.rsplit('.', 1)[-1]}.{_model_class.__name__}"
        for _auto_class, _model_class in _models.items()
    }
    for _auto_class, _model_class in _models.items():
        _auto_class.register(_config_class, _model_class)
        _model_class.register_for_auto_class(_auto_class.__name__)
        _model_class._family_auto_map = _family_auto_map
    for _auto_class, _model_class in _REACHED_THROUGH.get(_config_class, {}).items():
        _model_class.register_for_auto_class(_auto_class.__name__)
        _model_class._family_auto_map = _family_auto_map

__all__ = [
    "RecurrentConfig",
    "RecurrentModel",
    "RecurrentForCausalLM",
    "RecurrentForSequenceClassification",
    "RecurrentForTokenClassification",
    "AttentionSeq2SeqConfig",
    "AttentionSeq2SeqModel",
    "AttentionSeq2SeqForConditionalGeneration",
    "TransformerConfig",
    "TransformerModel",
    "TransformerEncoderModel",
    "TransformerForConditionalGeneration",
    "TransformerForCausalLM",
    "TransformerForSequenceClassification",
    "TransformerForTokenClassification",
]
