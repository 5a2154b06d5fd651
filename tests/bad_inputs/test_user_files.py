"""The user's own files in the folders a run writes (area "files"), and the last raw errors of the scripts (issue
42; area "scripts"). A run replaces or deletes only what it wrote (what the folder's `atomic_folders.MANIFEST` lists, or
for a folder of an older version the names a run writes): --overwrite_output_dir keeps every other file and folder, a
``step_<n>/`` folder of the user's is never replaced, rotated or deleted, staging never takes the user's files; and
each raw case ends in an error naming the option or file. The same cases killed at every step: test_kills.py."""

import runpy
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from hf_seqmodels import AttentionSeq2SeqConfig, AttentionSeq2SeqForConditionalGeneration
from hf_seqmodels.cards import prepare_hub_folder, render_card, stage_hub_folder
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.serving import inference
from hf_seqmodels.storage import atomic_folders
from hf_seqmodels.tasks import labelling, text_classification
from hf_seqmodels.tasks.translation import TranslationTokenizers, end_with_eos
from hf_seqmodels.training.checkpoints import Checkpoints

from ..cards.runs import NER_RUN
from ..cards.test_hub import bert_folder
from .outcomes import assert_outcome
from .saved_models import accelerator, loaded_version, save_version, tiny_model, training_state
from .test_checkpoints import run_clm  # noqa: F401  (run_clm: the fixture running scripts/run_clm.py)
from .test_files import start
from .test_kills import intact, user_files, write_user_files

AREA = "files"
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
USER_NAMES = ["data", "link-to-notes", "notes.txt", "step_1"]  # what write_user_files writes at the top


@pytest.mark.slow
def test_overwrite_output_dir_keeps_the_users_files(run_clm, tmp_path):
    """run_clm.py --overwrite_output_dir over its earlier run, whose folder also holds the user's files: the run's
    files are replaced, the user's kept; the same for a folder of an older version (no manifest)."""
    for name in ("with-manifest", "older-version"):
        out = tmp_path / name
        run_clm(out)
        write_user_files(out)
        if name == "older-version":
            (out / atomic_folders.MANIFEST).unlink()
        assert_outcome(AREA, lambda: run_clm(out, "--overwrite_output_dir", "--seed", "7")["arguments"]["seed"],
                       check=lambda seed: seed == 7)
        assert_outcome(AREA, lambda: (user_files(out), atomic_folders.foreign(out)),
                       check=lambda found: intact(found[0]) and found[1] == USER_NAMES)
        assert_outcome(AREA, lambda: AutoModelForCausalLM.from_pretrained(out).config.model_type,
                       check=lambda model_type: model_type == "recurrent")


def test_a_checkpoint_dir_holding_the_users_step_folder_is_refused(run_clm, tmp_path):
    checkpoints = tmp_path / "mine"
    write_user_files(checkpoints)
    for options in ([], ["--overwrite_output_dir"], ["--resume_from_checkpoint", "latest"]):
        assert_outcome(AREA, lambda: run_clm(tmp_path / "out", "--checkpoint_dir", str(checkpoints), *options),
                       error=r"--checkpoint_dir .*mine holds step_1, named like the run's step_<n> checkpoints but "
                             r"not written by one .* Move or rename them, or pass another --checkpoint_dir")
    assert_outcome(AREA, lambda: (user_files(checkpoints), (tmp_path / "out").exists()),
                   check=lambda found: intact(found[0]) and not found[1])


def test_rotation_deletes_only_the_runs_checkpoints(run_clm, tmp_path):
    checkpoints = tmp_path / "out-checkpoints"
    write_user_files(checkpoints)
    atomic_folders.delete_dir(checkpoints / "step_1")  # a step_1/ of the user's is refused: test above
    assert_outcome(AREA, lambda: run_clm(tmp_path / "out", "--save_total_limit", "1")["steps"],
                   check=lambda steps: steps == 4)
    assert_outcome(AREA, lambda: sorted(p.name for p in checkpoints.iterdir()),
                   check=lambda names: names == ["data", "link-to-notes", "notes.txt", "step_4"])
    assert_outcome(AREA, lambda: ((checkpoints / "data" / "deep" / "er.txt").read_text(),
                                  (checkpoints / "notes.txt").read_text()),
                   check=lambda texts: texts == ("deeper", "my notes"))


def test_a_checkpoint_never_replaces_a_folder_of_the_users(tmp_path):
    (tmp_path / "step_1").mkdir()
    (tmp_path / "step_1" / "mine.txt").write_text("mine")
    assert_outcome(AREA, lambda: Checkpoints(tmp_path).save(accelerator(tmp_path), 1, training_state()),
                   error=r"step_1 is a folder that no run wrote .*, so the checkpoint of step 1 does not replace it")
    assert_outcome(AREA, lambda: [p.name for p in (tmp_path / "step_1").iterdir()],
                   check=lambda names: names == ["mine.txt"])


def test_a_users_file_of_a_name_the_run_writes_is_refused(tmp_path):
    """In a folder with a manifest, a file the earlier run did not write but the new one would: refused when the
    run starts, and at the save itself (a file that appeared meanwhile); a damaged manifest replaces nothing."""
    target = tmp_path / "out"
    save_version(accelerator(tmp_path), target, "old")
    (target / "vocab.txt").write_text("mine")
    assert_outcome(AREA, lambda: start(target, overwrite_output_dir=True),
                   error=r"--output_dir=.*out holds vocab.txt, which the earlier run there did not write and this run "
                         r"would .* move them out")

    def save_a_vocabulary():
        with atomic_folders.replacing(target) as temp:
            (temp / "vocab.txt").write_text("the run's")

    assert_outcome(AREA, save_a_vocabulary, error=r"out holds vocab.txt, which no earlier run wrote, and the new one "
                                                  r"writes files of the same names: nothing was replaced")
    (target / atomic_folders.MANIFEST).write_text("{")
    assert_outcome(AREA, lambda: start(target, overwrite_output_dir=True),
                   error=r"\.hf_seqmodels-files\.json is damaged .* nothing is replaced")
    assert_outcome(AREA, lambda: ((target / "vocab.txt").read_text(), loaded_version(target)),
                   check=lambda found: found == ("mine", "old"))


def test_staging_never_takes_the_users_files(tmp_path):
    """A staged folder to which the user added files is refused (they would be uploaded), listing them; one staged
    by an older version (no manifest) is replaced as before."""
    model_dir, card, staging = bert_folder(tmp_path), render_card(NER_RUN), tmp_path / "hub"
    staged = stage_hub_folder(model_dir, staging, card)
    write_user_files(staging)
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, staging, card),
                   error=r"hub holds data, link-to-notes, notes.txt, step_1, which no staging wrote: the staged "
                         r"folder is uploaded whole")
    assert_outcome(AREA, lambda: user_files(staging), check=intact)
    for name in USER_NAMES:
        atomic_folders.delete_dir(staging / name) if (staging / name).is_dir() else (staging / name).unlink()
    (staging / atomic_folders.MANIFEST).unlink()
    assert_outcome(AREA, lambda: stage_hub_folder(model_dir, staging, card), check=lambda names: names == staged)


# The raw errors of issue 42, each now naming the option or the file.

def script(monkeypatch, name: str, *argv) -> None:
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS / name), *map(str, argv)])
    runpy.run_path(str(SCRIPTS / name), run_name="__main__")


def test_max_samples_below_one_through_run_clm(run_clm, tmp_path):
    for value in ("0", "-5"):
        assert_outcome("scripts", lambda: run_clm(tmp_path / "out", "--max_train_samples", value),
                       error=rf"--max_train_samples must be at least 1 \(leave it out for all rows\), got {value}")


def test_a_tokenizer_folder_without_a_tokenizer(tmp_path):
    empty, broken = tmp_path / "empty", tmp_path / "broken"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{}")
    for option in ("tokenizer_name", "model_name_or_path"):
        for folder, holds in ((empty, "it holds no tokenizer file"), (broken, "it holds tokenizer.json")):
            arguments = text_classification.ModelArguments(**{option: str(folder)})
            assert_outcome("scripts", lambda: labelling.make_tokenizer(arguments, []),
                           error=rf"--{option}: no tokenizer loads from .*{folder.name} \({holds}; .*\)\. Pass a "
                                 r"folder with a complete tokenizer")


def test_resuming_from_a_checkpoint_whose_tokenizer_is_empty(run_clm, tmp_path):
    run_clm(tmp_path / "first")
    checkpoint = tmp_path / "first-checkpoints" / "step_2"
    (checkpoint / "tokenizer" / "tokenizer.json").write_text("{}")
    assert_outcome("scripts", lambda: run_clm(tmp_path / "resumed", "--resume_from_checkpoint", str(checkpoint)),
                   error=r"--resume_from_checkpoint: no tokenizer loads from .*step_2/tokenizer \(it holds "
                         r"tokenizer.json, tokenizer_config.json; KeyError: 'added_tokens'\)")


def test_push_to_hub_with_a_results_file_that_is_not_json(tmp_path, monkeypatch):
    model_dir = bert_folder(tmp_path)
    for text, message in (("{not json", r"results.json is not JSON \(Expecting property name"),
                          ("[1, 2]", r"results.json holds a JSON list, not an object")):
        (model_dir / "results.json").write_text(text)
        assert_outcome("scripts", lambda: script(monkeypatch, "push_to_hub.py", model_dir, "--repo_id", "me/ner",
                                                 "--dry-run", "--benchmarks", ""),
                       error=message + r".*; pass --results: the results.json a training script wrote")
    assert_outcome("scripts", lambda: prepare_hub_folder(model_dir, "me/ner", results=tmp_path / "nowhere.json"),
                   error=r"--results .*nowhere.json: no such file")


def test_plot_attention_into_a_folder_that_does_not_exist(tmp_path, monkeypatch):
    tokenizer = end_with_eos(train_tokenizer(["a man sleeps", "ein mann schlaeft"], "word"))
    ids = {f"{name}_token_id": getattr(tokenizer, f"{name}_token_id") for name in ("pad", "bos", "eos")}
    config = AttentionSeq2SeqConfig(vocab_size=len(tokenizer), embedding_size=8, hidden_size=8,
                                    decoder_start_token_id=tokenizer.bos_token_id, **ids)
    model_dir = tmp_path / "model"
    AttentionSeq2SeqForConditionalGeneration(config).save_pretrained(model_dir)
    TranslationTokenizers(tokenizer, tokenizer).save_pretrained(model_dir)
    picture = tmp_path / "plots" / "new" / "attention.png"
    assert_outcome("scripts", lambda: script(monkeypatch, "plot_attention.py", model_dir, "a man sleeps", "--output",
                                             picture, "--num_beams", "1") or picture.read_bytes()[:8],
                   check=lambda start: start == b"\x89PNG\r\n\x1a\n")
    (model_dir / "tokenizer.json").write_text("{}")  # the sibling case: a model folder whose tokenizer is damaged
    assert_outcome("scripts", lambda: script(monkeypatch, "plot_attention.py", model_dir, "a man sleeps"),
                   error=r"model_dir: no tokenizer loads from .*model \(it holds tokenizer.json, tokenizer_config.json")


def test_generate_from_a_model_folder_whose_tokenizer_is_damaged(tmp_path):
    model_dir = tmp_path / "lm"
    tiny_model(0).save_pretrained(model_dir)
    train_tokenizer(["a b c"], "word").save_pretrained(model_dir)
    (model_dir / "tokenizer.json").write_text("{}")
    assert_outcome("scripts", lambda: inference.load_language_model(model_dir),
                   error=r"model_dir: no tokenizer loads from .*lm \(it holds tokenizer.json, tokenizer_config.json; "
                         r"KeyError")
