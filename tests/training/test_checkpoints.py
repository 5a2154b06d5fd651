"""hf_seqmodels.training.checkpoints: finding the checkpoint to resume from (once, without touching the arguments), keeping
only the newest, and loading the tokenizer a resumed run must use; checkpoints are safetensors and JSON, and a
pickle in one is never loaded unless asked."""

import os
import pickle
import random
import runpy
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
from accelerate import PartialState
from safetensors.torch import load_file, save_file, save_model
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, get_scheduler

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
)
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.training.averaging import average_checkpoints, average_weights, last_checkpoints
from hf_seqmodels.training.checkpoint_format import TrainingState, pickle_files
from hf_seqmodels.training.checkpoints import TOKENIZER_DIR, Checkpoints
from hf_seqmodels.training.loop import BestModel, TrainingArguments, make_accelerator, train


def tiny_state(seed: int = 0, hidden_size: int = 8, best: bool = True, steps: int = 2) -> TrainingState:
    """The training state of a tiny LSTM language model after ``steps`` AdamW steps, with a `BestModel`."""
    torch.manual_seed(seed)
    model = RecurrentForCausalLM(RecurrentConfig(vocab_size=12, embedding_size=8, hidden_size=hidden_size))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = get_scheduler("linear", optimizer, 1, 10)
    ids = torch.randint(0, 12, (2, 6))
    for _ in range(steps):
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step(), scheduler.step(), optimizer.zero_grad()
    extras = {}
    if best:
        extras["best_model"] = BestModel("eval_loss", False, model)
        extras["best_model"].update({"step": steps, "eval_loss": 1.5})
    return TrainingState(model, optimizer, scheduler, extras)


def saved_state(folder, **options) -> TrainingState:
    """`tiny_state` saved (one process) into ``folder``, which is made."""
    folder.mkdir(parents=True, exist_ok=True)
    state = tiny_state(**options)
    state.save(folder, process_index=0, is_main_process=True)
    return state


class Marker:
    """Unpickling it creates the folder ``path``: what a hostile pickle could do instead."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (str(self.path),))


@pytest.fixture
def accelerate_state():
    """The accelerate logger needs a PartialState (the tasks' make_accelerator sets one up); reset it after if
    this test made it."""
    made = not PartialState._shared_state
    yield PartialState()
    if made:
        PartialState._reset_state()


def test_resume_needs_the_checkpoint_tokenizer(tmp_path, accelerate_state):
    """A checkpoint without tokenizer/ cannot be resumed (the vocabulary would be guessed); the error says what to
    do. A new run trains its tokenizer; a resumed one loads the checkpoint's and never trains one."""
    checkpoint = tmp_path / "out-checkpoints" / "step_4"
    checkpoint.mkdir(parents=True)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), resume_from_checkpoint="latest")
    never = lambda: pytest.fail("a resumed run must not train a tokenizer")  # noqa: E731
    with pytest.raises(ValueError, match=r"step_4 has no tokenizer/ folder.*start a new run without "
                                         r"--resume_from_checkpoint"):
        Checkpoints.for_run(args).tokenizer(never)

    (checkpoint / TOKENIZER_DIR).mkdir()
    checkpoints = Checkpoints.for_run(args)
    assert checkpoints.resume_from == checkpoint  # 'latest' pinned to the checkpoint train() resumes
    assert checkpoints.tokenizer(never, load_tokenizer=lambda folder: folder) == checkpoint / TOKENIZER_DIR
    assert args.resume_from_checkpoint == "latest"  # the arguments carry no state
    new_run = Checkpoints.for_run(TrainingArguments(output_dir=str(tmp_path / "new")))
    assert new_run.resume_from is None and new_run.tokenizer(lambda: "trained") == "trained"


def test_latest_is_the_highest_step_and_bad_names_are_refused(tmp_path):
    for step in (2, 10, 4):
        (tmp_path / f"step_{step}").mkdir()
    (tmp_path / ".step_12.tmp").mkdir()  # being written: not a checkpoint
    checkpoints = Checkpoints(tmp_path)
    assert [p.name for p in checkpoints.all()] == ["step_2", "step_4", "step_10"]
    assert Checkpoints(tmp_path, "latest").resume_from == tmp_path / "step_10"
    assert Checkpoints(tmp_path, str(tmp_path / "step_4")).resume_from == tmp_path / "step_4"
    with pytest.raises(ValueError, match="is not a step_<n> checkpoint folder; pass one from"):
        Checkpoints(tmp_path, str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="--resume_from_checkpoint=latest, but .*empty has no step_<n> checkpoint"):
        Checkpoints(tmp_path / "empty", "latest")


def test_save_keeps_the_newest_limit_checkpoints(tmp_path):
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path / "out")))
    checkpoints = Checkpoints(tmp_path / "checkpoints", limit=2)
    for step in (1, 2, 3):
        checkpoints.save(accelerator, step, tiny_state())
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_2", "step_3"]
    checkpoints.delete_all(accelerator)
    assert checkpoints.all() == []


def test_a_checkpoint_is_safetensors_and_json_and_restores_every_part(tmp_path):
    """Saved and loaded into a fresh state: the same weights, optimizer and scheduler states, best model and RNG
    states (the next random numbers are those that followed the save); no file in it is a pickle."""
    state = saved_state(tmp_path / "step_2")
    expected_draws = (random.random(), np.random.rand(), torch.rand(3))
    assert sorted(p.name for p in (tmp_path / "step_2").iterdir()) == [
        "best_model.json", "best_model.safetensors", "model.safetensors", "optimizer.json",
        "optimizer.safetensors", "rng_state_0.json", "rng_state_0.safetensors", "scheduler.json"]
    assert pickle_files(tmp_path / "step_2") == []

    fresh = tiny_state(seed=1, steps=0)
    fresh.extras["best_model"] = BestModel("eval_loss", False, fresh.model)
    fresh.load(tmp_path / "step_2", process_index=0)
    torch.testing.assert_close(fresh.model.state_dict(), state.model.state_dict())
    torch.testing.assert_close(fresh.optimizer.state_dict(), state.optimizer.state_dict())
    assert fresh.scheduler.state_dict() == state.scheduler.state_dict()
    assert fresh.extras["best_model"].entry == {"step": 2, "eval_loss": 1.5}
    torch.testing.assert_close(fresh.extras["best_model"].weights, state.extras["best_model"].weights)
    assert (random.random(), np.random.rand()) == expected_draws[:2]
    torch.testing.assert_close(torch.rand(3), expected_draws[2])


def flatten_like_cudnn(model: torch.nn.Module) -> None:
    """Make every recurrent layer's weights views into one flat buffer per layer, as cuDNN keeps them on a GPU."""
    for module in model.modules():
        if isinstance(module, torch.nn.RNNBase):
            flat = torch.cat([weight.detach().flatten() for weight in module._flat_weights])
            offset = 0
            for weight in module._flat_weights:
                weight.data = flat[offset:offset + weight.numel()].view_as(weight)
                offset += weight.numel()


def test_weights_that_share_one_buffer_are_saved_and_loaded(tmp_path):
    """On a GPU, cuDNN keeps a recurrent layer's weights in one flat buffer, which safetensors' save_model refuses
    (the first GPU run's checkpoint failed so): each weight is saved on its own and loads back."""
    state = tiny_state()
    flatten_like_cudnn(state.model)
    state.save(tmp_path, process_index=0, is_main_process=True)
    fresh = tiny_state(seed=1, steps=0)
    flatten_like_cudnn(fresh.model)
    fresh.extras["best_model"] = BestModel("eval_loss", False, fresh.model)
    fresh.load(tmp_path, process_index=0)
    torch.testing.assert_close(fresh.model.state_dict(), state.model.state_dict())


def test_weights_of_another_model_are_refused_naming_the_keys(tmp_path):
    saved_state(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    renamed = {name.replace("lm_head", "head"): tensor for name, tensor in tensors.items()}
    save_file(renamed, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="missing .*lm_head.*of another model .*head"):
        tiny_state(seed=1, steps=0).load(tmp_path, process_index=0)


def hostile_checkpoint(folder, marker, name: str):
    """A checkpoint in the old format (what accelerator.save_state wrote) with a pickle ``name`` whose loading
    would create ``marker``."""
    saved_state(folder)
    (folder / name).write_bytes(pickle.dumps({"state": Marker(marker)}))


@pytest.mark.parametrize("name", ["custom_checkpoint_0.pkl", "random_states_0.pkl", "optimizer.bin",
                                  "tokenizer/added.pt", "weights.PTH", "model.ckpt"])
def test_a_pickle_in_the_checkpoint_is_refused_and_never_loaded(tmp_path, name, accelerate_state):
    checkpoint = tmp_path / "checkpoints" / "step_2"
    (checkpoint / "tokenizer").mkdir(parents=True)
    marker = tmp_path / "code-ran"
    hostile_checkpoint(checkpoint, marker, name)
    with pytest.raises(ValueError, match=rf"{name.split('/')[-1]} is a pickle .* pass --trust_pickled_checkpoint"):
        Checkpoints(tmp_path / "checkpoints", "latest")
    assert not marker.exists()
    pickle.loads((checkpoint / name).read_bytes())  # the control: unpickling it would have run its code
    assert marker.exists()


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.safetensors", "optimizer.json"])
def test_a_pickle_renamed_to_a_checkpoint_file_is_refused_and_never_loaded(tmp_path, name):
    """Loading reads only safetensors and JSON: a pickle under their names is a damaged file, never unpickled."""
    checkpoint = tmp_path / "step_2"
    marker = tmp_path / "code-ran"
    hostile_checkpoint(checkpoint, marker, name)
    with pytest.raises(ValueError, match=rf"{name}.*(not valid JSON|not a readable safetensors|does not fit)"):
        tiny_state(steps=0).load(checkpoint, process_index=0)
    assert not marker.exists()


def test_missing_random_states_are_refused_unless_ignored(tmp_path, caplog):
    checkpoint = tmp_path / "step_2"
    saved_state(checkpoint, best=False)
    (checkpoint / "rng_state_0.json").unlink()
    with pytest.raises(ValueError, match=r"has no rng_state_0.json .*random states of process 0 .*pass "
                                         r"--ignore_missing_rng_state"):
        tiny_state(steps=0, best=False).load(checkpoint, process_index=0)
    with pytest.raises(ValueError, match=r"has no rng_state_1.json"):  # a process the checkpoint did not have
        tiny_state(steps=0, best=False).load(checkpoint, process_index=1)
    fresh = tiny_state(seed=1, steps=0, best=False)
    fresh.load(checkpoint, process_index=0, ignore_missing_rng_state=True)
    assert "Resuming with fresh random states" in caplog.text
    torch.testing.assert_close(fresh.optimizer.state_dict(), tiny_state(best=False).optimizer.state_dict())


def test_trust_pickled_checkpoint_resumes_an_old_format_checkpoint(tmp_path):
    """The opt-in: a checkpoint written by accelerator.save_state (the old format) is loaded through Accelerate."""
    args = TrainingArguments(output_dir=str(tmp_path / "out"))
    accelerator = make_accelerator(args)
    state = tiny_state(best=False)
    model, optimizer = accelerator.prepare(state.model, state.optimizer)
    accelerator.register_for_checkpointing(state.scheduler)
    accelerator.save_state(str(tmp_path / "checkpoints" / "step_2"))
    assert pickle_files(tmp_path / "checkpoints" / "step_2")

    fresh = tiny_state(seed=1, steps=0, best=False)
    accelerator = make_accelerator(args)
    fresh.model, fresh.optimizer = accelerator.prepare(fresh.model, fresh.optimizer)
    checkpoints = Checkpoints(tmp_path / "checkpoints", "latest", trust_pickled=True)
    assert checkpoints.resume(accelerator, fresh) == 2
    torch.testing.assert_close(fresh.model.state_dict(), state.model.state_dict())
    assert fresh.scheduler.state_dict() == state.scheduler.state_dict()


def test_averaged_checkpoints_are_the_mean_and_load_and_translate(tmp_path, monkeypatch):
    """Three checkpoints of a tiny attention seq2seq run averaged over the last two: each tensor is the mean of the
    two files' tensors, and the folder loads with AutoModelForSeq2SeqLM and generates with the saved tokenizer."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tokenizer = train_tokenizer(["a b c d e f g"], "word")
    ids = torch.randint(4, len(tokenizer), (12, 5), generator=torch.Generator().manual_seed(0)).tolist()
    pairs = datasets.Dataset.from_dict({"input_ids": ids, "labels": [row[::-1] for row in ids]})
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, learning_rate=1e-2,
                             max_train_steps=6, checkpointing_steps="2")
    torch.manual_seed(0)
    model = AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqConfig(
        vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id))
    train(make_accelerator(args), model, pairs, pairs, DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100),
          args, tokenizer=tokenizer)
    folders = last_checkpoints(tmp_path / "out-checkpoints", 2)
    assert [folder.name for folder in folders] == ["step_4", "step_6"]
    average_checkpoints(folders, tmp_path / "avg")

    inputs = [load_file(str(folder / "model.safetensors")) for folder in folders]
    averaged = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "avg")
    state = averaged.state_dict()
    for name in inputs[0]:
        torch.testing.assert_close(state[name], (inputs[0][name] + inputs[1][name]) / 2, msg=name)
    assert not torch.equal(inputs[0][name], inputs[1][name])
    loaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path / "avg")
    batch = loaded_tokenizer(["a b c"], return_tensors="pt")
    output = averaged.generate(**batch, max_new_tokens=4)
    assert isinstance(loaded_tokenizer.decode(output[0], skip_special_tokens=True), str) and output.shape[1] > 1
    with pytest.raises(ValueError, match="avg exists; averaging writes a new folder"):
        average_checkpoints(folders, tmp_path / "avg")
    script = Path(__file__).parents[2] / "scripts" / "average_checkpoints.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--checkpoint_dir", str(tmp_path / "out-checkpoints"), "--last",
                                      "2", "--output_dir", str(tmp_path / "by_script")])
    runpy.run_path(str(script), run_name="__main__")
    by_script = load_file(str(tmp_path / "by_script" / "model.safetensors"))
    assert by_script.keys() == load_file(str(tmp_path / "avg" / "model.safetensors")).keys()
    torch.testing.assert_close(by_script, load_file(str(tmp_path / "avg" / "model.safetensors")), rtol=0, atol=0)


def test_averaging_refuses_checkpoints_of_other_models(tmp_path):
    for name, hidden_size in (("step_1", 10), ("step_2", 12), ("step_3", 8)):  # 8: no projection to the embeddings
        folder = tmp_path / name
        folder.mkdir()
        save_model(tiny_state(hidden_size=hidden_size).model, str(folder / "model.safetensors"))
    with pytest.raises(ValueError, match=r"step_2: \S+ is torch.float32 \(.*\), .*step_1 has torch.float32 \(.*\): "
                                         r"average checkpoints of one model"):
        average_weights([tmp_path / "step_1", tmp_path / "step_2"])
    with pytest.raises(ValueError, match=r"step_3 and .*step_1 hold different tensors \(projection.weight\)"):
        average_weights([tmp_path / "step_1", tmp_path / "step_3"])
    with pytest.raises(ValueError, match="--last 4: .* holds 3 step_<n> checkpoint"):
        last_checkpoints(tmp_path, 4)
