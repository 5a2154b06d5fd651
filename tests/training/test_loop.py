"""hf_seqmodels.training.loop on a tiny LSTM LM: resuming from a checkpoint reproduces an uninterrupted run, saving is
atomic, evaluation weighs every target token once, and bad options (an output folder or checkpoints of something
else, empty datasets) fail early."""

import json
import math
import time

import datasets
import pytest
import torch
from accelerate.state import AcceleratorState
from transformers import (
    AutoModelForCausalLM,
    DataCollatorForSeq2Seq,
    SchedulerType,
    default_data_collator,
    get_scheduler,
)
from transformers.trainer_pt_utils import LabelSmoother

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
    RecurrentForSequenceClassification,
)
from hf_seqmodels.data.loading import TokenBatchSampler
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.models.modeling_utils import lm_loss
from hf_seqmodels.storage.atomic_folders import MANIFEST
from hf_seqmodels.training.arguments import METRIC_SCHEDULERS, MIN_LR_SCHEDULERS, TrainingArguments, check_earlier_run
from hf_seqmodels.training.loop import (
    TRACKER_PACKAGES,
    evaluate_loss,
    length_order,
    make_accelerator,
    make_optimizer,
    save_model,
    start_run,
    train,
    training_loss,
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


def pairs_of_varied_lengths(rows: int, seed: int = 0) -> datasets.Dataset:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 9, (rows, 2), generator=generator).tolist()
    ids = [(torch.randint(3, VOCAB, (source,), generator=generator).tolist() + [2],
            torch.randint(3, VOCAB, (target,), generator=generator).tolist() + [2]) for source, target in lengths]
    return datasets.Dataset.from_dict({"input_ids": [source for source, _ in ids], "labels": [target for _, target in ids]})


def test_length_order_sorts_by_source_then_target_length():
    data = pairs_of_varied_lengths(40).select(range(39, -1, -1))  # an indices mapping, as a shard or a split has
    expected = sorted(range(len(data)), key=lambda i: (len(data[i]["input_ids"]), len(data[i]["labels"]), i))
    assert length_order(data) == expected
    assert length_order(blocks(5)) == list(range(5))  # equal lengths keep their order


def test_evaluate_loss_of_padded_pairs_of_varied_lengths_is_the_token_mean(tmp_path):
    """Batched by length, padded sources and targets: the mean over every target token of the rows one by one."""
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path)))
    model = tiny_seq2seq()[0].eval()
    data = pairs_of_varied_lengths(11)

    def collator(rows: list[dict]) -> dict:
        def pad(key: str, value: int) -> torch.Tensor:
            width = max(len(row[key]) for row in rows)
            return torch.tensor([row[key] + [value] * (width - len(row[key])) for row in rows])
        return {"input_ids": pad("input_ids", 0), "attention_mask": (pad("input_ids", -1) != -1).long(),
                "labels": pad("labels", -100)}
    losses = [(model(**collator([row])).loss.item(), len(row["labels"])) for row in data]
    expected = sum(loss * targets for loss, targets in losses) / sum(targets for _, targets in losses)
    assert evaluate_loss(accelerator, model, data, collator, batch_size=4) == pytest.approx(expected, rel=1e-5)


def test_save_model_replaces_what_the_earlier_run_wrote_and_keeps_the_rest(tmp_path):
    accelerator = make_accelerator(TrainingArguments(output_dir=str(tmp_path)))
    target = tmp_path / "model"
    target.mkdir()
    (target / "stale.txt").write_text("from an older run")
    (target / MANIFEST).write_text(json.dumps({"files": ["stale.txt"]}))  # what the older run wrote
    (target / "notes.txt").write_text("the user's")
    tokenizer = train_tokenizer(["a b c"], "word")
    save_model(accelerator, tiny_model(), tokenizer, str(target), results={"test_perplexity": 1.5})
    assert not (target / "stale.txt").exists() and (target / "notes.txt").read_text() == "the user's"
    assert "notes.txt" not in json.loads((target / MANIFEST).read_text())["files"]
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
    with pytest.raises(ValueError, match="holds no earlier run .*replaces nothing there: notes.txt are not a run's"):
        check(output_dir=str(folder), overwrite_output_dir=True)
    (folder / "results.json").write_text("{}")  # a name a run writes proves nothing without the model it goes with
    with pytest.raises(ValueError, match="holds no earlier run .*: notes.txt, results.json are not a run's"):
        check(output_dir=str(folder), overwrite_output_dir=True)
    tiny_model().save_pretrained(folder)  # an earlier run's model, saved before runs wrote a manifest
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


def test_evaluation_seconds_are_recorded(tmp_path):
    """Each evaluation's seconds (evaluate_fn's included) and their sum, a part of train_runtime_s."""
    def slow_score(model):
        time.sleep(0.2)
        return {"eval_score": 1.0}

    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_train_epochs=2)
    results = train(make_accelerator(args), tiny_model(), blocks(8), blocks(4), default_data_collator, args,
                    evaluate_fn=slow_score)
    seconds = [entry["evaluation_s"] for entry in results["eval_history"]]
    assert len(seconds) == 2 and min(seconds) >= 0.2
    assert results["evaluation_runtime_s"] == pytest.approx(sum(seconds))
    assert results["train_runtime_s"] > results["evaluation_runtime_s"]

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


def tiny_seq2seq(**options) -> tuple[AttentionSeq2SeqForConditionalGeneration, dict]:
    """An attention GRU without dropout (both losses see the same logits) and a batch with padded sources and
    targets."""
    torch.manual_seed(0)
    config = AttentionSeq2SeqConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8, pad_token_id=0,
                                    bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, dropout=0.0, **options)
    source = torch.randint(3, VOCAB, (3, 5))
    mask = torch.ones_like(source)
    mask[1, 3:] = 0
    labels = torch.randint(3, VOCAB, (3, 6))
    labels[0, 4:], labels[2, 1:] = -100, -100
    return AttentionSeq2SeqForConditionalGeneration(config), {"input_ids": source * mask, "attention_mask": mask,
                                                               "labels": labels}


def loss_and_gradients(model: torch.nn.Module, compute) -> tuple[torch.Tensor, dict]:
    model.zero_grad()
    loss = compute()
    loss.backward()
    return loss.detach(), {name: parameter.grad.clone() for name, parameter in model.named_parameters()}


def assert_same(got: tuple[torch.Tensor, dict], expected: tuple[torch.Tensor, dict]) -> None:
    torch.testing.assert_close(got[0], expected[0])
    for name, gradient in expected[1].items():
        torch.testing.assert_close(got[1][name], gradient, msg=name)


@pytest.mark.parametrize("shift", [False, True])
def test_smoothed_loss_is_label_smoothers(shift):
    """The fused loss over the labelled positions has the value and the gradient of transformers' LabelSmoother over
    every position, on an attention GRU's logits of a batch with padded targets."""
    model, batch = tiny_seq2seq()
    labels = batch["labels"]
    expected = loss_and_gradients(model, lambda: LabelSmoother(0.1)(model(**batch), labels, shift_labels=shift))
    got = loss_and_gradients(model, lambda: lm_loss(model(**batch).logits, labels, shift, label_smoothing=0.1))
    assert_same(got, expected)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("teacher_forcing_ratio", [1.0, 0.5])
def test_training_loss_of_the_labelled_positions_is_the_full_forwards(smoothing, teacher_forcing_ratio):
    """The loop's loss of an attention seq2seq (the model smooths, output layer over the labelled positions only) has
    the value and the gradients of LabelSmoother (or the plain loss) over the logits of every position, scheduled
    sampling included (the same coins: the same seed)."""
    model, batch = tiny_seq2seq(teacher_forcing_ratio=teacher_forcing_ratio)

    def reference():
        outputs = model(**batch)
        return LabelSmoother(smoothing)(outputs, batch["labels"]) if smoothing else outputs.loss

    torch.manual_seed(1)
    expected = loss_and_gradients(model, reference)
    torch.manual_seed(1)
    got = loss_and_gradients(model, lambda: training_loss(model, batch, smoothing))
    assert_same(got, expected)
    logits = model(**batch, logits_to_keep=batch["labels"] != -100).logits
    assert logits.shape == ((batch["labels"] != -100).sum(), VOCAB)


def test_training_loss_checks_the_labels():
    """The labels' checks still raise on the loop's path (the model smooths), naming the labels."""
    model, batch = tiny_seq2seq()
    batch["labels"][1, 0] = VOCAB
    with pytest.raises(ValueError, match=rf"`labels` holds token ids in \[\d+, {VOCAB}\]"):
        training_loss(model, batch, 0.1)
    batch["labels"][1, 0] = 3
    with pytest.raises(ValueError, match=r"`logits_to_keep` as a bool mask must have the shape \(3, 6\)"):
        model(**batch, logits_to_keep=torch.ones(3, 5, dtype=torch.bool))


def test_the_generic_smoothed_loss_shifts_a_causal_lms_labels():
    """A model without the `smoothing` argument (a causal LM) gets LabelSmoother's loss over its shifted labels."""
    model = tiny_model().eval()
    batch = {"input_ids": torch.randint(0, VOCAB, (2, 5))}
    batch["labels"] = batch["input_ids"].masked_fill(torch.tensor([[0, 0, 0, 1, 1], [0] * 5]).bool(), -100)
    expected = loss_and_gradients(model, lambda: LabelSmoother(0.1)(model(**batch), batch["labels"],
                                                                    shift_labels=True))
    assert_same(loss_and_gradients(model, lambda: training_loss(model, batch, 0.1)), expected)


def test_adamw_is_fused_and_steps_as_the_loop():
    """make_optimizer's AdamW runs torch's fused kernel and moves the weights as torch's per-parameter AdamW does."""
    args = TrainingArguments(output_dir="out", learning_rate=1e-2, weight_decay=0.1)
    models = [tiny_model(), tiny_model()]
    optimizers = [make_optimizer(models[0], args),
                  torch.optim.AdamW(models[1].parameters(), lr=1e-2, weight_decay=0.1, foreach=False)]
    assert optimizers[0].param_groups[0]["fused"]
    batch = default_data_collator(list(blocks(4)))
    for _ in range(3):
        for model, optimizer in zip(models, optimizers):
            model.eval()(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    for (name, fused), looped in zip(models[0].named_parameters(), models[1].parameters()):
        torch.testing.assert_close(fused, looped, msg=name)


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


@pytest.fixture
def fresh_accelerate_state():
    """Accelerate keeps one process-wide state that refuses another --mixed_precision: start and end afresh."""
    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


def plain_model(seed: int = 0) -> RecurrentForCausalLM:
    torch.manual_seed(seed)
    return RecurrentForCausalLM(RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8))  # no dropout


def train_plain(tmp_path, data, **options) -> tuple[RecurrentForCausalLM, dict]:
    args = TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=1e-2, logging_steps=1, **options)
    accelerator = make_accelerator(args)
    model = plain_model()
    results = train(accelerator, model, data, blocks(4, seed=1), default_data_collator, args)
    return accelerator.unwrap_model(model), results


def test_gradient_accumulation_gives_the_weights_of_the_larger_batch(tmp_path):
    """4 steps (2 epochs) of 2 batches of 4 rows each, accumulated, against 4 steps of batches of 8 rows: the same
    rows per step (the seeded shuffle), equal-length rows (the mean loss of the batch of 8 is the mean of the two)."""
    data = blocks(16)
    accumulated, results = train_plain(tmp_path / "a", data, per_device_train_batch_size=4, num_train_epochs=2,
                                       gradient_accumulation_steps=2)
    larger, larger_results = train_plain(tmp_path / "b", data, per_device_train_batch_size=8, num_train_epochs=2)
    assert results["steps"] == larger_results["steps"] == 4
    assert results["train_loss"] == pytest.approx(larger_results["train_loss"], rel=1e-5)
    for (name, expected), actual in zip(larger.state_dict().items(), accumulated.state_dict().values()):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=name)
    untrained = plain_model()
    assert not torch.equal(untrained.state_dict()["lm_head.weight"], larger.state_dict()["lm_head.weight"])


def test_resume_mid_epoch_with_gradient_accumulation_matches_an_uninterrupted_run(tmp_path):
    # 5 batches per epoch in steps of 2: 3 steps per epoch (the last of one batch), 6 in all; resumed from step 4.
    straight, results = run(tmp_path, checkpointing_steps="4", gradient_accumulation_steps=2)
    assert results["steps"] == 6 and results["epochs"] == 2
    resumed, resumed_results = run(tmp_path / "resumed", gradient_accumulation_steps=2,
                                   resume_from_checkpoint=str(tmp_path / "out-checkpoints" / "step_4"))
    assert resumed_results["steps"] == 6 and resumed_results["resumed_from_step"] == 4
    for (name, expected), actual in zip(straight.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(actual, expected, msg=name)


def test_the_launch_configuration_s_gradient_accumulation_counts_too(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "2")  # what accelerate launch sets from its config
    _, results = run(tmp_path)
    assert results["steps"] == 6 and results["gradient_accumulation_steps"] == 2  # 5 batches an epoch, 2 epochs


@pytest.mark.parametrize("cell_type", ["gru", "lstm"])
def test_bf16_mixed_precision_trains_or_is_refused_clearly(tmp_path, fresh_accelerate_state, cell_type):
    """bf16 autocast on the CPU: the evaluation loss falls; an LSTM where torch's CPU kernels lack bf16 is refused."""
    data = blocks(16)
    torch.manual_seed(0)
    model = RecurrentForCausalLM(RecurrentConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=8,
                                                 cell_type=cell_type))
    before = evaluate_loss(make_accelerator(TrainingArguments(output_dir="x")), model, data, default_data_collator,
                           batch_size=8)
    AcceleratorState._reset_state(reset_partial_state=True)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=3e-2, per_device_train_batch_size=4,
                             num_train_epochs=3, mixed_precision="bf16")
    accelerator = make_accelerator(args)
    assert accelerator.mixed_precision == "bf16"
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.LSTM(1, 1)(torch.zeros(1, 1, 1))
        runs = True
    except RuntimeError:
        runs = cell_type != "lstm"
    if not runs:
        with pytest.raises(ValueError, match="--mixed_precision bf16: torch on this CPU has no bf16 LSTM kernel"):
            train(accelerator, model, data, data, default_data_collator, args)
        return
    results = train(accelerator, model, data, data, default_data_collator, args)
    assert results["eval_loss"] < before - 0.02


@pytest.mark.skipif(torch.accelerator.is_available(), reason="fp16 runs where there is a GPU")
def test_fp16_without_a_gpu_is_refused(tmp_path, fresh_accelerate_state):
    with pytest.raises(ValueError, match=r"--mixed_precision fp16 \(or the accelerate launch configuration's\) needs a "
                                         r"GPU.*bf16"):
        make_accelerator(TrainingArguments(output_dir=str(tmp_path), mixed_precision="fp16"))


def scheduler_case(name: str) -> dict:
    """Options that make ``name`` change the LR within 10 steps and 2 evaluations."""
    options = {"num_warmup_steps": 0 if name in METRIC_SCHEDULERS else 2}
    if name in MIN_LR_SCHEDULERS:
        options["min_lr"] = 1e-3
    if name in METRIC_SCHEDULERS:  # the same score twice: no progress, so the LR changes at the 2nd evaluation
        options.update(metric_for_best_model="eval_score",
                       lr_scheduler_kwargs='{"patience": 0, "factor": 0.5, "min_lr": 0.0001}')
    return options


@pytest.mark.parametrize("name", [member.value for member in SchedulerType])
def test_every_scheduler_type_follows_transformers_and_resumes(tmp_path, name):
    """The LR after each evaluation (2 epochs of 5 steps) is that of transformers' get_scheduler stepped as often on
    the same optimizer (a metric scheduler: at each evaluation, on its score); a run resumed mid-epoch ends alike."""
    options = scheduler_case(name)

    def score(model):
        return {"eval_score": 1.0}

    def run_with(folder, **more):
        args = TrainingArguments(output_dir=str(folder / "out"), per_device_train_batch_size=4, learning_rate=1e-2,
                                 num_train_epochs=2, lr_scheduler_type=name, **options, **more)
        results = train(make_accelerator(args), tiny_model(), blocks(20), blocks(6, seed=1), default_data_collator,
                        args, evaluate_fn=score)
        return args, results

    args, results = run_with(tmp_path, checkpointing_steps="7")
    optimizer = torch.optim.AdamW(tiny_model().parameters(), lr=1e-2)
    reference = get_scheduler(name, optimizer, options["num_warmup_steps"], 10, scheduler_options(args, 10))
    expected, initial = [], reference.get_last_lr()[0]
    for entry in results["eval_history"]:
        for _ in range(5):
            optimizer.step()  # no gradients: only the order torch expects
            if name not in METRIC_SCHEDULERS:
                reference.step()
        if name in METRIC_SCHEDULERS:
            reference.step(entry["eval_score"])
        expected.append(reference.get_last_lr()[0])
    assert [entry["learning_rate"] for entry in results["eval_history"]] == pytest.approx(expected, rel=1e-9)
    assert results["learning_rate"] == pytest.approx(expected[-1], rel=1e-9)
    assert len({initial, *expected}) > 1 or name == "constant"  # the type changes the LR in this run
    _, resumed = run_with(tmp_path / "resumed", resume_from_checkpoint=str(tmp_path / "out-checkpoints" / "step_7"))
    assert resumed["learning_rate"] == pytest.approx(results["learning_rate"], rel=1e-9)
    assert resumed["eval_loss"] == pytest.approx(results["eval_loss"])


def scheduler_options(args: TrainingArguments, max_steps: int) -> dict:
    from hf_seqmodels.training.arguments import scheduler_options as options_of
    return options_of(args, args.lr_scheduler_kwargs, max_steps)


def test_tensorboard_holds_the_logged_training_loss(tmp_path):
    _, results = train_plain(tmp_path, blocks(16), per_device_train_batch_size=8, max_train_steps=2,
                             report_to="tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = list((tmp_path / "out-runs").rglob("events.out.tfevents.*"))
    assert events
    scalars = {}
    for event_file in events:
        accumulator = EventAccumulator(str(event_file))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            scalars[tag] = [(event.step, event.value) for event in accumulator.Scalars(tag)]
    assert [step for step, _ in scalars["train_loss"]] == [1, 2]
    assert scalars["train_loss"][-1][1] == pytest.approx(results["train_loss"], rel=1e-6)
    assert scalars["eval_loss"] == [(2, pytest.approx(results["eval_loss"], rel=1e-6))]
    assert scalars["learning_rate"][0][1] == pytest.approx(1e-2 / 2)  # linear decay over 2 steps, after the first


def test_a_missing_tracker_package_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(TRACKER_PACKAGES, "tensorboard", "no_such_tracker_package")
    with pytest.raises(ValueError, match="--report_to tensorboard needs the no_such_tracker_package package: pip "
                                         "install no_such_tracker_package"):
        make_accelerator(TrainingArguments(output_dir=str(tmp_path), report_to="tensorboard"))


def test_max_tokens_batches_train_a_translation_model_and_resume(tmp_path):
    """--max_tokens through TokenBatchSampler: each batch within the budget, every pair once per epoch, and a run
    resumed mid-epoch ends with the weights of an uninterrupted one."""
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, 9, (24, 2), generator=generator).tolist()
    pairs = datasets.Dataset.from_dict({
        "input_ids": [torch.randint(4, VOCAB, (s,), generator=generator).tolist() for s, _ in lengths],
        "labels": [torch.randint(4, VOCAB, (t,), generator=generator).tolist() + [2] for _, t in lengths]})
    seen, pad = [], DataCollatorForSeq2Seq(train_tokenizer(["a b c"], "word"), label_pad_token_id=-100)

    def collate(rows):
        seen.append(len(rows) * (max(len(row["input_ids"]) for row in rows) + max(len(row["labels"]) for row in rows)))
        return pad(rows)

    def run_pairs(folder, **options):
        args = TrainingArguments(output_dir=str(folder / "out"), learning_rate=1e-2, num_train_epochs=2, max_tokens=40,
                                 checkpoint_dir=str(tmp_path / "checkpoints"), **options)
        torch.manual_seed(0)
        model = AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqConfig(
            vocab_size=VOCAB, embedding_size=8, hidden_size=8, dropout=0.2, pad_token_id=0, bos_token_id=1,
            eos_token_id=2))
        sampler = TokenBatchSampler([len(ids) for ids in pairs["input_ids"]], [len(ids) for ids in pairs["labels"]],
                                    40, seed=args.seed)
        results = train(make_accelerator(args), model, pairs, pairs, collate, args, train_sampler=sampler)
        return model, results, len(sampler)

    straight, results, batches = run_pairs(tmp_path / "straight", checkpointing_steps="3")
    assert results["steps"] == 2 * batches and max(seen[:batches]) <= 40  # the first epoch (then evaluation)
    resumed, _, _ = run_pairs(tmp_path / "resumed", resume_from_checkpoint=str(tmp_path / "checkpoints" / "step_3"))
    for (name, expected), got in zip(straight.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(got, expected, msg=name)


def test_max_tokens_is_refused_where_rows_are_batched(tmp_path):
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_tokens=100)
    with pytest.raises(ValueError, match="--max_tokens batches translation pairs .* drop it"):
        train(make_accelerator(args), tiny_model(), blocks(8), blocks(4), default_data_collator, args)


def test_folders_the_run_writes_must_lie_outside_the_output_dir(tmp_path):
    output = tmp_path / "out"
    with pytest.raises(ValueError, match=r"--checkpoint_dir=.*out/checkpoints lies inside --output_dir=.* "
                                         r"'<output_dir>-checkpoints'"):
        check_earlier_run(TrainingArguments(output_dir=str(output), checkpoint_dir=str(output / "checkpoints")))
    with pytest.raises(ValueError, match=r"--logging_dir=.*out/runs lies inside --output_dir=.* '<output_dir>-runs'"):
        check_earlier_run(TrainingArguments(output_dir=str(output), logging_dir=str(output / "runs"),
                                            report_to="tensorboard"))
    check_earlier_run(TrainingArguments(output_dir=str(output), logging_dir=str(output / "runs")))  # nothing logged
