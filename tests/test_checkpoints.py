"""hf_seqmodels.checkpoints: finding the checkpoint to resume from (once, without touching the arguments), keeping
only the newest, and loading the tokenizer a resumed run must use."""

import pytest
from accelerate import PartialState

from hf_seqmodels.checkpoints import TOKENIZER_DIR, Checkpoints
from hf_seqmodels.training import TrainingArguments, make_accelerator


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
        checkpoints.save(accelerator, step)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_2", "step_3"]
    checkpoints.delete_all(accelerator)
    assert checkpoints.all() == []
