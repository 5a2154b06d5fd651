"""Bad checkpoints and model folders: what a user may resume from or load (a missing, damaged or foreign file, a
pickle, a folder that is no checkpoint, one of another model or other options). Each gives a clear error naming the
file (or the option) and what to do, never a raw error from torch, safetensors or json, and nothing is unpickled;
the few that are valid (the opt-ins) are loaded correctly."""

import json
import math
import pickle
import random
import runpy
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    get_scheduler,
)

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
)
from hf_seqmodels.storage.safe_loading import load_pretrained
from hf_seqmodels.tasks.translation import load_translation_model
from hf_seqmodels.training.checkpoint_format import PICKLE_SUFFIXES
from hf_seqmodels.training.checkpoints import Checkpoints
from hf_seqmodels.training.loop import BestModel, TrainingArguments, make_accelerator

from ..training.test_checkpoints import Marker, saved_state, tiny_state
from .outcomes import assert_outcome

AREA = "checkpoints"
STATE_FILES = ("model.safetensors", "optimizer.json", "optimizer.safetensors", "scheduler.json", "best_model.json",
               "best_model.safetensors", "rng_state_0.json", "rng_state_0.safetensors")
JSON_FILES = [name for name in STATE_FILES if name.endswith(".json")]
TENSOR_FILES = [name for name in STATE_FILES if name.endswith(".safetensors")]


def load(folder: Path, hidden_size: int = 8, best: bool = True, ignore_missing_rng_state: bool = False):
    """Resume a fresh tiny state (with a best model unless not ``best``) from ``folder``; returns it."""
    state = tiny_state(seed=1, hidden_size=hidden_size, best=best, steps=0)
    state.load(folder, process_index=0, ignore_missing_rng_state=ignore_missing_rng_state)
    return state


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    saved_state(tmp_path / "step_2")
    return tmp_path / "step_2"


def edit_json(file: Path, change) -> None:
    data = json.loads(file.read_text())
    change(data)
    file.write_text(json.dumps(data))


def edit_tensors(file: Path, change) -> None:
    tensors = load_file(file)
    change(tensors)
    save_file(tensors, file)


def in_a_fresh_checkpoint(case) -> None:
    """Run ``case(folder)`` on a newly saved checkpoint (hypothesis runs many examples per test)."""
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp) / "step_2"
        saved_state(folder)
        case(folder)


# Resolving --resume_from_checkpoint

def test_resume_from_paths_that_are_no_checkpoint(tmp_path):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "checkpoints" / "step_old").mkdir(parents=True)  # a folder of the user's, not a step_<n> checkpoint
    (tmp_path / "checkpoints" / "step_7").write_text("a file, not a folder")
    for bad in (tmp_path / "a-file", tmp_path / "missing", tmp_path / "checkpoints",
                tmp_path / "checkpoints" / "step_7"):
        assert_outcome(AREA, lambda: Checkpoints(tmp_path / "checkpoints", str(bad)),
                       error=rf"--resume_from_checkpoint={bad} is not a step_<n> checkpoint folder; pass one from")
    for folder in (tmp_path / "checkpoints", tmp_path / "none", tmp_path / "a-file"):
        assert_outcome(AREA, lambda: Checkpoints(folder, "latest"),
                       error=rf"--resume_from_checkpoint=latest, but {folder} has no step_<n> checkpoint")


def test_latest_skips_folders_that_only_look_like_checkpoints(tmp_path):
    for name in ("step_old", "step_", "step_2", "step_10", "step_3x"):
        (tmp_path / name).mkdir()
    assert_outcome(AREA, lambda: Checkpoints(tmp_path, "latest").resume_from,
                   check=lambda found: found == tmp_path / "step_10")


@pytest.mark.parametrize("suffix", PICKLE_SUFFIXES + (".PKL", ".Bin"))
@pytest.mark.parametrize("where", ["", "tokenizer/", "deep/er/"])
def test_a_pickle_anywhere_in_the_checkpoint_is_refused_unloaded(checkpoint, tmp_path, suffix, where):
    marker = tmp_path / "code-ran"
    (checkpoint / where).mkdir(parents=True, exist_ok=True)
    (checkpoint / f"{where}state{suffix}").write_bytes(pickle.dumps(Marker(marker)))
    assert_outcome(AREA, lambda: Checkpoints(checkpoint.parent, "latest"),
                   error=rf"state{suffix} is a pickle .*not loaded.*pass --trust_pickled_checkpoint")
    assert not marker.exists()


def test_trust_pickled_checkpoint_is_the_opt_in(checkpoint):
    (checkpoint / "random_states_0.pkl").write_bytes(pickle.dumps({"step": 2}))
    args = TrainingArguments(output_dir=str(checkpoint.parent / "out"), checkpoint_dir=str(checkpoint.parent),
                             resume_from_checkpoint="latest", trust_pickled_checkpoint=True)
    make_accelerator(args)  # as a run does before it looks for its checkpoint (the warning needs its state)
    assert_outcome(AREA, lambda: Checkpoints.for_run(args).resume_from, check=lambda found: found == checkpoint)


# Missing and damaged files

@pytest.mark.parametrize("name", STATE_FILES)
def test_a_missing_file_is_named(checkpoint, name):
    (checkpoint / name).unlink()
    hint = "--ignore_missing_rng_state" if name.startswith("rng") else "start a new run"
    assert_outcome(AREA, lambda: load(checkpoint), error=rf"{checkpoint} has no {name} .*{hint}")


def test_a_folder_with_other_files_is_no_checkpoint(tmp_path):
    folder = tmp_path / "step_5"
    (folder / "tokenizer").mkdir(parents=True)
    (folder / "notes.txt").write_text("not a checkpoint")
    assert_outcome(AREA, lambda: load(folder), error=rf"{folder} has no model.safetensors .*not a complete checkpoint")


@pytest.mark.parametrize("name", STATE_FILES)
@pytest.mark.parametrize("keep", [0.0, 0.5, 0.99])
def test_a_truncated_file_is_named(checkpoint, name, keep):
    data = (checkpoint / name).read_bytes()
    (checkpoint / name).write_bytes(data[: int(len(data) * keep)])
    assert_outcome(AREA, lambda: load(checkpoint), error=rf"{checkpoint / name} (is not|does not)")


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(STATE_FILES), content=st.binary(max_size=300))
def test_any_garbage_in_a_file_is_named(name, content):
    def case(folder):
        (folder / name).write_bytes(content)
        assert_outcome(AREA, lambda: load(folder), error=rf"{folder / name} (is not|does not)")
    in_a_fresh_checkpoint(case)


UINT32 = 2**32


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 623), value=st.integers(-2 * UINT32, 2 * UINT32))
@example(index=0, value=UINT32)
def test_any_value_in_the_numpy_random_state(index, value):
    """Any 32-bit word of NumPy's generator key is a state to restore; anything else is named."""
    def case(folder):
        edit_json(folder / "rng_state_0.json", lambda d: d["numpy"]["state"]["key"].__setitem__(index, value))
        if 0 <= value < UINT32:
            assert_outcome(AREA, lambda: load(folder),
                           check=lambda _: np.random.get_state(legacy=False)["state"]["key"][index] == value)
        else:
            assert_outcome(AREA, lambda: load(folder), error=rf"{folder / 'rng_state_0.json'} does not fit")
    in_a_fresh_checkpoint(case)


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 624), value=st.integers(-2 * UINT32, 2 * UINT32))
@example(index=0, value=UINT32)  # Python itself would keep only its low 32 bits
@example(index=624, value=625)
def test_any_value_in_the_python_random_state(index, value):
    """Python's Mersenne Twister state: 624 32-bit words and a position in 0..624; anything else is named."""
    def case(folder):
        edit_json(folder / "rng_state_0.json",
                  lambda d: d["python"]["__tuple__"][1]["__tuple__"].__setitem__(index, value))
        valid = 0 <= value < UINT32 and (index < 624 or value <= 624)
        if valid:
            assert_outcome(AREA, lambda: load(folder), check=lambda _: random.getstate()[1][index] == value)
        else:
            assert_outcome(AREA, lambda: load(folder), error=rf"{folder / 'rng_state_0.json'} does not fit")
    in_a_fresh_checkpoint(case)


@settings(max_examples=40, deadline=None)
@given(option=st.sampled_from(["lr", "eps", "weight_decay", "initial_lr", "betas.0", "betas.1"]),
       value=st.floats(allow_nan=True, allow_infinity=True))
def test_any_number_for_an_optimizer_option(option, value):
    """A finite, non-negative learning rate, eps or weight decay (and betas in [0, 1)) is restored as saved; any
    other number is named."""
    name, _, beta = option.partition(".")

    def change(data):
        group = data["param_groups"][0]
        if beta:
            group["betas"]["__tuple__"][int(beta)] = value
        else:
            group[name] = value

    def restored(state):
        group = state.optimizer.param_groups[0]
        return (group["betas"][int(beta)] if beta else group[name]) == value

    def case(folder):
        edit_json(folder / "optimizer.json", change)
        valid = math.isfinite(value) and value >= 0 and (not beta or value < 1)
        if valid:
            assert_outcome(AREA, lambda: load(folder), check=restored)
        else:
            assert_outcome(AREA, lambda: load(folder), error=rf"{folder / 'optimizer.json'} does not fit this run")
    in_a_fresh_checkpoint(case)


@settings(max_examples=40, deadline=None)
@given(field=st.sampled_from(["last_epoch", "_step_count", "base_lrs", "_last_lr"]),
       value=st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True)))
def test_any_number_in_the_scheduler_state(field, value):
    """The scheduler's step counts are integers >= 0 and its learning rates finite numbers >= 0: such values are
    restored as saved, any other is named."""
    rates = field.endswith("lrs") or field == "_last_lr"

    def change(data):
        if rates:
            data[field][0] = value
        else:
            data[field] = value

    def restored(state):
        saved = state.scheduler.state_dict()[field]
        return (saved[0] if rates else saved) == value

    def case(folder):
        edit_json(folder / "scheduler.json", change)
        wanted_type = float if rates else int
        if type(value) is wanted_type and math.isfinite(value) and value >= 0:
            assert_outcome(AREA, lambda: load(folder), check=restored)
        else:
            assert_outcome(AREA, lambda: load(folder), error=rf"{folder / 'scheduler.json'} does not fit this run")
    in_a_fresh_checkpoint(case)


@pytest.mark.parametrize("name", JSON_FILES)
@pytest.mark.parametrize("content", ["[]", "{}", "null", "3", '"text"', '{"__tensor__": "nowhere"}', "[" * 100_000,
                                     '{"a": ' * 100_000, "NaN", "\ufeff{}", '{"__int_keys__": {"x": 1}}'])
def test_json_of_another_form_is_named(checkpoint, name, content):
    (checkpoint / name).write_text(content)
    assert_outcome(AREA, lambda: load(checkpoint),
                   error=rf"{checkpoint / name} (is not|does not fit)|has no .* \(the tensors of {name}\)")


JSON_EDITS = {  # file: edits that leave valid JSON of the wrong form
    "optimizer.json": {
        "lr as text": lambda d: d["param_groups"][0].update(lr="0.01"),
        "betas as a list": lambda d: d["param_groups"][0].update(betas=[0.9, 0.999]),
        "no param_groups": lambda d: d.pop("param_groups"),
        "two groups": lambda d: d["param_groups"].append(d["param_groups"][0]),
        "a parameter too many": lambda d: d["param_groups"][0]["params"].append(99),
        "another parameter order": lambda d: d["param_groups"][0]["params"].reverse(),
        "a state for parameter 99": lambda d: d["state"]["__int_keys__"].update(
            {"99": d["state"]["__int_keys__"]["0"]}),
        "a state without exp_avg": lambda d: d["state"]["__int_keys__"]["0"].pop("exp_avg"),
        "a state that is a list": lambda d: d["state"]["__int_keys__"].update({"0": [1, 2]}),
        "state keys that are no integers": lambda d: d["state"].update({"__int_keys__": {"a": {}}}),
        "a tensor the safetensors file lacks": lambda d: d["state"]["__int_keys__"]["0"].update(
            exp_avg={"__tensor__": "optimizer.missing"}),
        "an SGD state": lambda d: d["param_groups"][0].update(momentum=0.0, dampening=0.0, nesterov=False),
    },
    "scheduler.json": {
        "last_epoch as text": lambda d: d.update(last_epoch="2"),
        "last_epoch a float": lambda d: d.update(last_epoch=2.0),
        "no base_lrs": lambda d: d.pop("base_lrs"),
        "two base_lrs": lambda d: d["base_lrs"].append(0.1),
        "another scheduler": lambda d: d.update(T_max=10),
    },
    "rng_state_0.json": {
        "python state too short": lambda d: d["python"]["__tuple__"][1]["__tuple__"].pop(),
        "python state as a list": lambda d: d.update(python=d["python"]["__tuple__"]),
        "numpy key too short": lambda d: d["numpy"]["state"]["key"].pop(),
        "numpy pos as text": lambda d: d["numpy"]["state"].update(pos="1"),
        "no torch state": lambda d: d.pop("torch"),
        "another numpy generator": lambda d: d["numpy"].update(bit_generator=7),
    },
    "best_model.json": {
        "negative evaluations_since": lambda d: d.update(evaluations_since=-1),
        "evaluations_since as text": lambda d: d.update(evaluations_since="0"),
        "an entry without weights": lambda d: d.update(weights=None),
        "weights without an entry": lambda d: d.update(entry=None),
        "an entry of another metric": lambda d: d["entry"].pop("eval_loss"),
        "a metric value as text": lambda d: d["entry"].update(eval_loss="1.5"),
        "a step as text": lambda d: d["entry"].update(step="2"),
        "a negative step": lambda d: d["entry"].update(step=-2),
        "a weight too few": lambda d: d["weights"].pop(next(iter(d["weights"]))),
        "no entry key": lambda d: d.pop("entry"),
    },
}


@pytest.mark.parametrize("name, edit", [(name, edit) for name, edits in JSON_EDITS.items() for edit in edits])
def test_json_with_a_wrong_value_is_named(checkpoint, name, edit):
    edit_json(checkpoint / name, JSON_EDITS[name][edit])
    hint = "--ignore_missing_rng_state" if name.startswith("rng") else "start a new run"
    assert_outcome(AREA, lambda: load(checkpoint), error=rf"{checkpoint / name} (is not|does not fit).*{hint}")


TENSOR_EDITS = {  # file: edits of its tensors
    "optimizer.safetensors": {
        "exp_avg of another shape": lambda t: t.update({"optimizer.state.0.exp_avg": torch.zeros(3, 3)}),
        "no exp_avg_sq": lambda t: t.pop("optimizer.state.0.exp_avg_sq"),
    },
    "rng_state_0.safetensors": {
        "torch state too short": lambda t: t.update({"rng_state_0.torch": t["rng_state_0.torch"][:100]}),
        "torch state as floats": lambda t: t.update({"rng_state_0.torch": t["rng_state_0.torch"].float()}),
        "no torch state": lambda t: t.pop("rng_state_0.torch"),
    },
    "best_model.safetensors": {
        "a weight of another shape": lambda t: t.update({next(iter(t)): torch.zeros(2)}),
        "a weight missing": lambda t: t.pop(next(iter(t))),
    },
    "model.safetensors": {
        "a weight of another shape": lambda t: t.update({next(iter(t)): torch.zeros(2)}),
        "a weight missing": lambda t: t.pop(next(iter(t))),
        "a weight too many": lambda t: t.update(extra=torch.zeros(2)),
        "weights as integers": lambda t: t.update({key: value.long() for key, value in t.items()}),
    },
}


@pytest.mark.parametrize("name, edit", [(name, edit) for name, edits in TENSOR_EDITS.items() for edit in edits])
def test_tensors_of_another_form_are_named(checkpoint, name, edit):
    edit_tensors(checkpoint / name, TENSOR_EDITS[name][edit])
    json_name = name.replace(".safetensors", ".json" if name != "model.safetensors" else ".safetensors")
    assert_outcome(AREA, lambda: load(checkpoint), error=rf"{checkpoint}/({name}|{json_name}) (is not|does not)")


# Checkpoints of other runs

def test_a_checkpoint_of_another_model_size_is_named(checkpoint):
    assert_outcome(AREA, lambda: load(checkpoint, hidden_size=16),
                   error=rf"(?s){checkpoint / 'model.safetensors'} does not fit this run .*size mismatch.*start a new "
                         rf"run")


def test_a_checkpoint_of_another_optimizer_is_named(checkpoint):
    state = tiny_state(seed=1, steps=0)
    state.optimizer = torch.optim.SGD(state.model.parameters(), lr=0.1, momentum=0.9)
    state.scheduler = get_scheduler("linear", state.optimizer, 1, 10)
    assert_outcome(AREA, lambda: state.load(checkpoint, process_index=0),
                   error=rf"{checkpoint / 'optimizer.json'} does not fit this run")


def test_a_checkpoint_of_another_scheduler_is_named(checkpoint):
    state = tiny_state(seed=1, steps=0)
    state.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(state.optimizer, 10)
    assert_outcome(AREA, lambda: state.load(checkpoint, process_index=0),
                   error=rf"{checkpoint / 'scheduler.json'} does not fit this run")


def test_a_checkpoint_without_the_best_model_of_a_run_that_keeps_one(tmp_path):
    saved_state(tmp_path / "step_2", best=False)
    assert_outcome(AREA, lambda: load(tmp_path / "step_2"), error=r"has no best_model.json .*start a new run")


def test_a_best_model_of_another_metric_is_named(checkpoint):
    state = tiny_state(seed=1, steps=0)
    state.extras["best_model"] = BestModel("eval_bleu", True, state.model)
    assert_outcome(AREA, lambda: state.load(checkpoint, process_index=0),
                   error=r"best_model.json does not fit this run \(its entry has no 'eval_bleu' value "
                         r"\(--metric_for_best_model\)\)")


def test_a_checkpoint_with_a_best_model_resumes_a_run_without_one(checkpoint):
    assert_outcome(AREA, lambda: load(checkpoint, best=False), check=lambda state: state.optimizer.state)


def test_random_states_of_a_process_the_checkpoint_did_not_have(checkpoint):
    assert_outcome(AREA, lambda: tiny_state(steps=0).load(checkpoint, process_index=1),
                   error=r"has no rng_state_1.json .*random states of process 1 .*--ignore_missing_rng_state")


@pytest.mark.parametrize("name", ["rng_state_0.json", "rng_state_0.safetensors"])
def test_ignore_missing_rng_state_resumes_the_rest(checkpoint, name):
    (checkpoint / name).unlink()
    expected = random.getstate()
    assert_outcome(AREA, lambda: load(checkpoint, ignore_missing_rng_state=True),
                   check=lambda state: state.optimizer.state and random.getstate() == expected)


def test_a_complete_checkpoint_resumes_exactly(tmp_path):
    original = saved_state(tmp_path / "step_2")
    assert_outcome(AREA, lambda: load(tmp_path / "step_2"), check=lambda state: all(
        torch.equal(a, b) for a, b in zip(state.model.state_dict().values(), original.model.state_dict().values())))


# Model folders: safetensors only

def bin_only_folder(folder: Path, marker: Path, name: str = "pytorch_model.bin") -> Path:
    """A saved translation model whose weights are a pickle ``name`` that would create ``marker``."""
    config = AttentionSeq2SeqConfig(vocab_size=12, embedding_size=8, hidden_size=8, pad_token_id=0,
                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    AttentionSeq2SeqForConditionalGeneration(config).save_pretrained(folder)
    (folder / "model.safetensors").unlink()
    (folder / name).write_bytes(pickle.dumps(Marker(marker)))
    return folder


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt", "weights.pth", "model.ckpt"])
@pytest.mark.parametrize("auto_class", [AutoModelForSeq2SeqLM, AutoModel])
def test_a_model_folder_with_pickled_weights_only_is_refused_unloaded(tmp_path, name, auto_class):
    folder = bin_only_folder(tmp_path / "model", tmp_path / "code-ran", name)
    assert_outcome(AREA, lambda: load_pretrained(auto_class, folder),
                   error=rf"{folder} holds its weights only as {name}, a pickle.*save_pretrained\(new_folder\)")
    assert not (tmp_path / "code-ran").exists()


def test_load_translation_model_refuses_pickled_weights(tmp_path):
    folder = bin_only_folder(tmp_path / "model", tmp_path / "code-ran")
    assert_outcome(AREA, lambda: load_translation_model(folder), error=r"holds its weights only as pytorch_model.bin")
    assert not (tmp_path / "code-ran").exists()


def test_a_model_folder_without_weights_names_the_file(tmp_path):
    folder = bin_only_folder(tmp_path / "model", tmp_path / "code-ran")
    (folder / "pytorch_model.bin").unlink()
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSeq2SeqLM, folder), error=r"model.safetensors")


DAMAGES = {  # what a broken download or disk leaves in model.safetensors
    "truncated": lambda data: data[: len(data) // 2],
    "emptied": lambda data: b"",
    "random bytes": lambda data: random.Random(0).randbytes(len(data)),
    "a broken header": lambda data: b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}",
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_model_folder_with_a_damaged_safetensors_file_names_it(tmp_path, damage):
    """safetensors' own error names no file; from_pretrained (ours, through the Auto classes too) and load_pretrained
    name it."""
    config = AttentionSeq2SeqConfig(vocab_size=12, embedding_size=8, hidden_size=8, pad_token_id=0,
                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    folder = tmp_path / "model"
    AttentionSeq2SeqForConditionalGeneration(config).save_pretrained(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(DAMAGES[damage](weights.read_bytes()))
    message = rf"{weights} is damaged .*save or download the model again"
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSeq2SeqLM, folder), error=message)
    assert_outcome(AREA, lambda: AutoModelForSeq2SeqLM.from_pretrained(folder), error=message)
    assert_outcome(AREA, lambda: AttentionSeq2SeqForConditionalGeneration.from_pretrained(folder), error=message)


def saved_folder(folder: Path, num_layers: int = 2) -> Path:
    RecurrentForCausalLM(RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=8, num_layers=num_layers,
                                         pad_token_id=0, bos_token_id=1, eos_token_id=2)).save_pretrained(folder)
    return folder


def test_a_model_folder_missing_a_tensor_is_refused_naming_it(tmp_path):
    """transformers' from_pretrained initialises the missing tensor at random and logs a table (kept: loading a body
    under a new head needs it); load_pretrained, which every script loads through, refuses."""
    folder = saved_folder(tmp_path / "model")
    weights = load_file(folder / "model.safetensors")
    del weights["model.rnn.layers.1.rnn.weight_hh_l0"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, folder),
                   error=r"the folder lacks: model\.rnn\.layers\.1\.rnn\.weight_hh_l0\)")
    assert_outcome(AREA, lambda: AutoModelForCausalLM.from_pretrained(folder),
                   check=lambda model: isinstance(model, RecurrentForCausalLM))


def test_a_config_declaring_more_layers_than_the_weights_hold_is_refused(tmp_path):
    folder = saved_folder(tmp_path / "model")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_layers": 3}))
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, folder),
                   error=r"the folder lacks: model\.rnn\.layers\.2\.rnn\.bias_hh_l0, .*weight_ih_l0\)")


def test_a_config_declaring_fewer_layers_than_the_weights_hold_is_refused(tmp_path):
    folder = saved_folder(tmp_path / "model", num_layers=3)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_layers": 2}))
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForCausalLM, folder),
                   error=r"the model does not take: model\.rnn\.layers\.2\.")


def test_a_new_head_on_a_saved_body_loads_and_its_body_must_be_whole(tmp_path):
    """`new_head` (the labelling task's classifier on a saved language model): the head's weights are new, the
    language model's output layer is left over, and the body's weights must all be there."""
    folder = saved_folder(tmp_path / "model")
    saved = load_file(folder / "model.safetensors")["model.embed_tokens.weight"]
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSequenceClassification, folder, new_head=True,
                                                 num_labels=3),
                   check=lambda model: torch.equal(model.model.embed_tokens.weight, saved))
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSequenceClassification, folder, num_labels=3),
                   error=r"the folder lacks: classifier\.bias, classifier\.weight; the model does not take: lm_head")
    weights = load_file(folder / "model.safetensors")
    del weights["model.embed_tokens.weight"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSequenceClassification, folder, new_head=True,
                                                 num_labels=3),
                   error=r"the folder lacks: model\.embed_tokens\.weight\)")


def test_a_model_folder_with_safetensors_beside_a_pickle_loads_the_safetensors(tmp_path):
    config = AttentionSeq2SeqConfig(vocab_size=12, embedding_size=8, hidden_size=8, pad_token_id=0,
                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    AttentionSeq2SeqForConditionalGeneration(config).save_pretrained(tmp_path / "model")
    (tmp_path / "model" / "pytorch_model.bin").write_bytes(pickle.dumps(Marker(tmp_path / "code-ran")))
    assert_outcome(AREA, lambda: load_pretrained(AutoModelForSeq2SeqLM, tmp_path / "model"),
                   check=lambda model: model.config.hidden_size == 8 and not (tmp_path / "code-ran").exists())


def test_training_state_refuses_nothing_valid():
    """A state of every kind round-trips (no false alarm): with and without a best model, before any step."""
    for options in ({}, {"best": False}, {"steps": 0, "best": False}):
        with tempfile.TemporaryDirectory() as temp:
            saved = saved_state(Path(temp) / "step_1", **options)
            assert_outcome(AREA, lambda: load(Path(temp) / "step_1", best=options.get("best", True)),
                           check=lambda state: state.scheduler.state_dict() == saved.scheduler.state_dict())


def test_saving_a_state_that_has_no_json_form_names_it(tmp_path):
    state = tiny_state(best=False)
    state.extras["odd"] = type("Odd", (), {"state_dict": lambda self: {"when": object()}})()
    assert_outcome(AREA, lambda: state.save(tmp_path, 0, True), error=r"odd.when: a object has no JSON form")


# Through a script: run_clm.py resuming from a checkpoint of its first run

RUN_CLM = Path(__file__).resolve().parents[2] / "scripts" / "run_clm.py"
TINY_CLM = ["--embedding_size", "16", "--hidden_size", "16", "--block_size", "20", "--max_train_samples", "200",
            "--max_eval_samples", "20", "--per_device_train_batch_size", "8", "--max_train_steps", "4",
            "--checkpointing_steps", "2", "--output_dropout", "0.3"]


@pytest.fixture
def run_clm(data_dir, monkeypatch):
    """``run_clm(output_dir, *options)``: run the script in this process; its results.json."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")

    def run(output_dir, *options):
        monkeypatch.setattr(sys, "argv", [str(RUN_CLM), "--output_dir", str(output_dir), *TINY_CLM, *options])
        runpy.run_path(str(RUN_CLM), run_name="__main__")
        return json.loads((output_dir / "results.json").read_text())
    return run


@pytest.mark.slow
def test_run_clm_refuses_pickled_or_incomplete_checkpoints(run_clm, tmp_path):
    run_clm(tmp_path / "first")
    checkpoint = tmp_path / "first-checkpoints" / "step_2"
    resume = ["--resume_from_checkpoint", str(checkpoint)]

    (checkpoint / "custom_checkpoint_0.pkl").write_bytes(pickle.dumps(Marker(tmp_path / "code-ran")))
    assert_outcome(AREA, lambda: run_clm(tmp_path / "pickled", *resume),
                   error=r"custom_checkpoint_0.pkl is a pickle .*pass --trust_pickled_checkpoint")
    assert not (tmp_path / "code-ran").exists() and not (tmp_path / "pickled").exists()
    (checkpoint / "custom_checkpoint_0.pkl").unlink()

    (checkpoint / "rng_state_0.safetensors").unlink()
    assert_outcome(AREA, lambda: run_clm(tmp_path / "no-rng", *resume),
                   error=r"rng_state_0.safetensors .*pass --ignore_missing_rng_state to resume anyway")
    assert_outcome(AREA, lambda: run_clm(tmp_path / "ignored", *resume, "--ignore_missing_rng_state"),
                   check=lambda results: results["resumed_from_step"] == 2 and results["steps"] == 4)

    (checkpoint / "optimizer.json").write_text('{"state": {}, "param_groups": []}')
    assert_outcome(AREA, lambda: run_clm(tmp_path / "foreign", *resume),
                   error=r"optimizer.json does not fit this run: param_groups is a list of 0, expected a list of 1")
