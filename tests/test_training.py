"""hf_seqmodels.training on a tiny LSTM LM: resuming from a checkpoint reproduces an uninterrupted run, saving is
atomic, evaluation weighs every target token once, and bad options (an output folder or checkpoints of something
else, empty datasets) fail early."""

import math

import datasets
import pytest
import torch
from transformers import AutoModelForCausalLM, default_data_collator

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM, RecurrentForSequenceClassification
from hf_seqmodels.tokenization import train_tokenizer
from hf_seqmodels.training import (
    TrainingArguments,
    check_earlier_run,
    evaluate_loss,
    make_accelerator,
    save_model,
    start_run,
    train,
)

VOCAB = 12


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # make_accelerator leaves the thread count alone


def blocks(rows: int, length: int = 8, seed: int = 0) -> datasets.Dataset:
    ids = torch.randint(0, VOCAB, (rows, length), generator=torch.Generator().manual_seed(seed)).tolist()
    return datasets.Dataset.from_dict({"input_ids": ids, "labels": ids})


def tiny_model(seed: int = 0) -> RecurrentForCausalLM:
    torch.manual_seed(seed)
    config = RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, embedding_dropout=0.2,
                             output_dropout=0.2)  # dropout: resuming must also restore the RNG states
    return RecurrentForCausalLM(config)


def run(tmp_path, **options) -> tuple[RecurrentForCausalLM, dict]:
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, learning_rate=1e-2,
                             num_train_epochs=2, logging_steps=1, **options)
    accelerator = make_accelerator(args)
    model = tiny_model()
    results = train(accelerator, model, blocks(20), blocks(6, seed=1), default_data_collator, args)
    return accelerator.unwrap_model(model), results


def test_resume_from_a_checkpoint_matches_an_uninterrupted_run(tmp_path):
    # 5 steps per epoch, 10 in all, a checkpoint at step 7 (mid-epoch 2); resuming there must give the same model.
    straight, results = run(tmp_path, checkpointing_steps="7")
    assert results["steps"] == 10 and results["epochs"] == 2
    checkpoint = tmp_path / "out-checkpoints" / "step_7"
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == ["step_7"]
    resumed, resumed_results = run(tmp_path / "resumed", resume_from_checkpoint=str(checkpoint))
    assert resumed_results["steps"] == 10
    for (name, expected), actual in zip(straight.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(actual, expected, msg=name)
    assert resumed_results["eval_loss"] == pytest.approx(results["eval_loss"])


def test_time_budget_stops_training(tmp_path):
    _, results = run(tmp_path, time_budget_minutes=1e-6)
    assert results["stopped_by_time_budget"] and results["steps"] == 1
    assert math.isfinite(results["eval_perplexity"])


def test_evaluate_loss_is_the_token_mean_over_all_rows(tmp_path):
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path)))
    model, data = tiny_model().eval(), blocks(7)
    expected = sum(model(**default_data_collator([row])).loss.item() for row in data) / len(data)
    assert evaluate_loss(accelerator, model, data, default_data_collator, batch_size=3) == pytest.approx(expected)


def test_evaluate_loss_counts_rows_for_sequence_classification(tmp_path):
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path)))
    torch.manual_seed(0)
    model = RecurrentForSequenceClassification(RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8,
                                                               num_labels=3)).eval()
    data = blocks(7).map(lambda row, i: {"labels": i % 3}, with_indices=True)
    expected = sum(model(**default_data_collator([row])).loss.item() for row in data) / len(data)
    assert evaluate_loss(accelerator, model, data, default_data_collator, batch_size=3) == pytest.approx(expected)


def test_save_model_replaces_the_folder_whole(tmp_path):
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path)))
    target = tmp_path / "model"
    target.mkdir()
    (target / "stale.txt").write_text("from an older run")
    tokenizer = train_tokenizer(["a b c"], "word")
    save_model(accelerator, tiny_model(), tokenizer, str(target), results={"test_perplexity": 1.5})
    assert not (target / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temporary folder left behind
    assert (target / "results.json").read_text().strip().startswith("{")
    assert AutoModelForCausalLM.from_pretrained(target).config.vocab_size == VOCAB


@pytest.mark.parametrize("options, message", [
    ({"optimizer": "lbfgs"}, "--optimizer"),
    ({"checkpointing_steps": "0"}, "--checkpointing_steps"),
    ({"time_budget_minutes": 0}, "--time_budget_minutes"),
    ({"lr_scheduler_type": "sometimes"}, "SchedulerType"),
    ({"save_total_limit": 0}, "--save_total_limit must be at least 1"),
])
def test_bad_training_arguments_raise(options, message):
    with pytest.raises(ValueError, match=message):
        TrainingArguments(output_dir="out", **options)


def test_output_dir_is_replaced_only_when_it_holds_an_earlier_run_and_overwrite_is_asked(tmp_path):
    def check(**options):
        args = TrainingArguments(**options)  # parsing reads no file: the checks run where the run starts
        check_earlier_run(args)
        return args

    (tmp_path / "file").write_text("a user's file")
    with pytest.raises(ValueError, match="--output_dir=.*file is an existing file"):
        check(output_dir=str(tmp_path / "file"), overwrite_output_dir=True)
    folder = tmp_path / "folder"
    folder.mkdir()
    check(output_dir=str(folder))  # empty: fine
    (folder / "notes.txt").write_text("a user's notes")
    with pytest.raises(ValueError, match="--output_dir=.*folder is not empty; pass --overwrite_output_dir"):
        check(output_dir=str(folder))
    with pytest.raises(ValueError, match="holds no earlier run .*not replace it"):
        check(output_dir=str(folder), overwrite_output_dir=True)
    (folder / "results.json").write_text("{}")
    assert check(output_dir=str(folder), overwrite_output_dir=True).overwrite_output_dir
    assert (folder / "notes.txt").read_text() == "a user's notes"  # nothing is deleted before training


def test_parsing_arguments_reads_no_file(tmp_path):
    (tmp_path / "file").write_text("a user's file")
    TrainingArguments(output_dir=str(tmp_path / "file"))
    with pytest.raises(ValueError, match="is an existing file"):
        start_run(TrainingArguments(output_dir=str(tmp_path / "file")))


def test_a_new_run_next_to_old_checkpoints_needs_overwrite_and_deletes_them(tmp_path):
    run(tmp_path, checkpointing_steps="5")
    checkpoint_dir = tmp_path / "out-checkpoints"
    assert sorted(p.name for p in checkpoint_dir.iterdir()) == ["step_10", "step_5"]
    with pytest.raises(ValueError, match="out-checkpoints holds the step_<n> checkpoints of an earlier run; resume "
                                         "it with --resume_from_checkpoint latest, or pass --overwrite_output_dir"):
        check_earlier_run(TrainingArguments(output_dir=str(tmp_path / "out")))
    check_earlier_run(TrainingArguments(output_dir=str(tmp_path / "out"), resume_from_checkpoint="latest"))
    (checkpoint_dir / "notes.txt").write_text("not a checkpoint")
    run(tmp_path, checkpointing_steps="7", overwrite_output_dir=True)
    assert sorted(p.name for p in checkpoint_dir.iterdir()) == ["notes.txt", "step_7"]


def test_empty_datasets_raise_before_training(tmp_path):
    args = TrainingArguments(output_dir=str(tmp_path / "out"))
    accelerator = make_accelerator(args)
    with pytest.raises(ValueError, match="training set is empty after preprocessing; check --max_train_samples"):
        train(accelerator, tiny_model(), blocks(0), blocks(6), default_data_collator, args)
    with pytest.raises(ValueError, match="evaluation set is empty after preprocessing; check --max_eval_samples"):
        train(accelerator, tiny_model(), blocks(20), blocks(0), default_data_collator, args)
    with pytest.raises(ValueError, match="evaluation set is empty after preprocessing; check --max_eval_samples"):
        evaluate_loss(accelerator, tiny_model(), blocks(0), default_data_collator, batch_size=3)


def test_early_stopping_keeps_the_best_evaluated_model(tmp_path):
    """Scores 1, 3, 2, 2.5 over epochs 1-4 with patience 2: stop after epoch 4 with the weights of epoch 2."""
    scores, weights = iter([1.0, 3.0, 2.0, 2.5, 0.0]), []

    def score(model):
        weights.append({name: tensor.clone() for name, tensor in model.state_dict().items()})
        return {"eval_score": next(scores)}

    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, learning_rate=1e-2,
                             num_train_epochs=6, metric_for_best_model="eval_score", early_stopping_patience=2)
    accelerator = make_accelerator(args)
    model = tiny_model()
    results = train(accelerator, model, blocks(20), blocks(6, seed=1), default_data_collator, args,
                    evaluate_fn=score)
    assert results["stopped_early"] and results["steps"] == 20 and len(results["eval_history"]) == 4
    assert results["best_step"] == 10 and results["eval_score"] == 3.0
    assert results["eval_loss"] == results["eval_history"][1]["eval_loss"]
    for name, tensor in accelerator.unwrap_model(model).state_dict().items():
        torch.testing.assert_close(tensor, weights[1][name], rtol=0, atol=0, msg=name)


def test_label_smoothing_factor(tmp_path):
    """The first step's training loss is (1 - eps) * NLL + eps * mean over the vocabulary of -log p."""
    eps = 0.2
    torch.manual_seed(0)
    model = RecurrentForCausalLM(RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8))
    data = blocks(4)
    batch = default_data_collator(list(data))
    with torch.no_grad():
        log_probs = model(**batch).logits[:, :-1].log_softmax(-1)
    targets = batch["labels"][:, 1:]
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).mean()
    expected = (1 - eps) * nll - eps * log_probs.mean()
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, max_train_steps=1,
                             logging_steps=1, label_smoothing_factor=eps)
    results = train(make_accelerator(args), model, data, data, default_data_collator, args)
    assert results["train_loss"] == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("options, message", [
    ({"label_smoothing_factor": 1.0}, "--label_smoothing_factor"),
    ({"early_stopping_patience": 2}, "needs --metric_for_best_model"),
    ({"early_stopping_patience": 0, "metric_for_best_model": "eval_loss"}, "--early_stopping_patience"),
])
def test_bad_best_model_arguments_raise(options, message):
    with pytest.raises(ValueError, match=message):
        TrainingArguments(output_dir="out", **options)


def test_greater_is_better_defaults_by_metric_name():
    assert not TrainingArguments(output_dir="out", metric_for_best_model="eval_loss").greater_is_better
    assert TrainingArguments(output_dir="out", metric_for_best_model="eval_bleu").greater_is_better
