"""A saved folder names every Auto class of its family in config.json's ``auto_map``, and loads through each of
them with ``trust_remote_code=True`` in a process where ``import hf_seqmodels`` fails."""

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import hf_seqmodels
from hf_seqmodels import (
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentForCausalLM,
    TransformerEncoderModel,
    TransformerForConditionalGeneration,
    TransformerForSequenceClassification,
)

from .models.test_modeling_attention_seq2seq import tiny_config as attention_seq2seq_config
from .models.test_modeling_recurrent import RecurrentModelTester
from .models.test_modeling_transformer import tiny_config as transformer_config
from .test_modeling_common import REMOTE_CODE_SCRIPT, make_model

# The remote-code script's opening: a process where `import hf_seqmodels` fails, then torch and transformers.
BLOCKED_PACKAGE = REMOTE_CODE_SCRIPT[: REMOTE_CODE_SCRIPT.index("for case in")]
# Loads every Auto class of a folder's auto_map from the saved code alone. A loaded model whose base model is of the
# saved model's base class must hold the saved weights of that base model, and of every head weight it shares by
# name; one on another base model (the Transformer's encoder-only heads from an encoder-decoder) only loads.
LOAD_EVERY_AUTO_CLASS = BLOCKED_PACKAGE + "import json\n" + textwrap.dedent(
    """
    for case in torch.load(sys.argv[1]):
        with open(f"{case['folder']}/config.json") as file:
            auto_map = json.load(file)["auto_map"]
        assert sorted(set(auto_map) - {"AutoConfig"}) == sorted(case["expected"]), auto_map
        for auto_name, (class_name, same_base) in case["expected"].items():
            model = getattr(transformers, auto_name).from_pretrained(case["folder"], trust_remote_code=True)
            module = type(model).__module__
            assert module.startswith("transformers_modules."), f"{auto_name} loaded from {module}"
            assert type(model).__name__ == class_name, (auto_name, type(model).__name__, class_name)
            assert (type(model.base_model).__name__ == case["base_class"]) == same_base, auto_name
            saved, prefix = case["state_dict"], case["prefix"]
            state = model.state_dict()
            # A base model's weights are named without the heads' prefix (the saved ones are named with it).
            if model.base_model is model:
                state = {prefix + name: tensor for name, tensor in state.items()}
            shared = saved.keys() & state.keys()
            if same_base:
                base_names = {prefix + name for name in model.base_model.state_dict()}
                assert base_names <= shared, (auto_name, sorted(base_names - shared))
                for name in shared:
                    assert torch.equal(state[name], saved[name]), (auto_name, name)
            print("loaded", auto_name, type(model).__name__, "shared", len(shared), "same_base", same_base)
    """
)

CASES = [
    # (head saved, its config): every other Auto class of the family is loaded from the folder.
    (RecurrentForCausalLM, lambda: RecurrentModelTester("lstm").get_config(RecurrentForCausalLM)),
    (AttentionSeq2SeqForConditionalGeneration, attention_seq2seq_config),
    (TransformerForConditionalGeneration, lambda: transformer_config(is_encoder_decoder=True)),
    (TransformerForSequenceClassification, lambda: transformer_config(is_encoder_decoder=False)),
    # Not registered with AutoModel (TransformerModel is, and hands it an encoder-only folder), but saved alone
    # it names itself there.
    (TransformerEncoderModel, lambda: transformer_config(is_encoder_decoder=False)),
]


def family_auto_classes(config) -> dict[str, str]:
    """Auto class name -> class name of every Auto class registered for ``config``'s class."""
    return {auto.__name__: model.__name__ for auto, model in hf_seqmodels._AUTO_CLASSES[type(config)].items()}


def test_auto_map_names_every_auto_class_of_the_family(tmp_path):
    for model_class, make_config in CASES:
        folder = tmp_path / model_class.__name__
        config = make_config()
        make_model(model_class, config).save_pretrained(folder)
        auto_map = json.loads((folder / "config.json").read_text())["auto_map"]
        expected = {**family_auto_classes(config), model_class._auto_class: model_class.__name__}
        assert set(auto_map) == set(expected) | {"AutoConfig"}, model_class.__name__
        for auto_name, class_name in expected.items():
            module, name = auto_map[auto_name].split(".")
            assert name == class_name and (folder / f"{module}.py").is_file(), auto_map[auto_name]


@pytest.mark.slow
def test_every_auto_class_loads_from_the_saved_code(tmp_path):
    """For each family a saved head loads through every Auto class in its auto_map, without the package; the
    classes built on the saved base model get its weights (the Transformer's encoder-only heads and the
    encoder-decoder have different base models: both are saved)."""
    cases = []
    for model_class, make_config in CASES:
        model = make_model(model_class, make_config())
        folder = tmp_path / model_class.__name__
        model.save_pretrained(folder)
        # The reference: what each Auto class gives from the folder with the package installed.
        expected = {}
        for auto in hf_seqmodels._AUTO_CLASSES[type(model.config)]:
            local = auto.from_pretrained(folder)
            expected[auto.__name__] = (type(local).__name__, type(local.base_model) is type(model.base_model))
        assert sum(same_base for _, same_base in expected.values()) >= 2, expected  # the saved head and its base
        prefix = f"{model.base_model_prefix}."
        state_dict = {(prefix if model.base_model is model else "") + name: tensor  # named as under a head
                      for name, tensor in model.state_dict().items()}
        cases.append({"folder": str(folder), "state_dict": state_dict, "prefix": prefix,
                      "base_class": type(model.base_model).__name__, "expected": expected})
    torch.save(cases, tmp_path / "cases.pt")
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-c", LOAD_EVERY_AUTO_CLASS, str(tmp_path / "cases.pt")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    loads = sum(len(hf_seqmodels._AUTO_CLASSES[type(make_config())]) for _, make_config in CASES)
    assert result.stdout.count("loaded ") == loads, result.stdout
