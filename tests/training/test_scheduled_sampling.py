"""Scheduled sampling: the three decays of Bengio et al. (2015) against their definitions, the options' checks, and
the training loop giving the attention seq2seq its ratio at every optimizer step (other models refused)."""

import math

import datasets
import pytest
import torch
from transformers import default_data_collator

from hf_seqmodels import (
    AttentionSeq2SeqConfig,
    AttentionSeq2SeqForConditionalGeneration,
    RecurrentConfig,
    RecurrentForCausalLM,
    TransformerConfig,
    TransformerForConditionalGeneration,
)
from hf_seqmodels.tasks import translation
from hf_seqmodels.tasks.arguments import task_parser
from hf_seqmodels.training.loop import TrainingArguments, make_accelerator, train
from hf_seqmodels.training.scheduled_sampling import SCHEDULES, TeacherForcing, teacher_forcing_ratio

PAD, BOS, EOS = 0, 1, 2


def arguments(**options) -> TrainingArguments:
    return TrainingArguments(output_dir="unused", **options)


def product(factor: float, times: int) -> float:
    value = 1.0
    for _ in range(times):
        value *= factor
    return value


# The paper's definitions (section 2.4), with the floor epsilon: k - c*i with k = 1, k**i, k / (k + exp(i / k)).
DEFINITIONS = {
    "linear": (1e-3, lambda i, k: 1.0 - k * i),
    "exponential": (0.99, lambda i, k: product(k, i)),
    "inverse_sigmoid": (20.0, lambda i, k: k / (k + math.exp(i / k))),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("floor", [0.0, 0.25])
def test_schedules_follow_the_paper_and_decay_monotonically_to_the_floor(schedule, floor):
    k, definition = DEFINITIONS[schedule]
    ratios = [teacher_forcing_ratio(schedule, step, k, floor) for step in range(0, 2000, 7)]
    for step, ratio in zip(range(0, 2000, 7), ratios):
        assert ratio == pytest.approx(max(floor, definition(step, k)), rel=1e-12, abs=1e-15)
    assert all(later <= earlier for earlier, later in zip(ratios, ratios[1:]))
    assert ratios[0] <= 1.0 and ratios[0] > floor
    assert ratios[-1] == pytest.approx(floor, abs=1e-6)  # reached (or nearly, without a floor) within 2000 steps
    assert teacher_forcing_ratio(schedule, 10**9, k, floor) == floor  # no overflow far out


def test_schedules_start_as_the_paper_says():
    assert teacher_forcing_ratio("linear", 0, 0.5) == 1.0
    assert teacher_forcing_ratio("exponential", 0, 0.5) == 1.0
    assert teacher_forcing_ratio("inverse_sigmoid", 0, 1.0) == pytest.approx(0.5)  # k / (k + 1)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"teacher_forcing_ratio": 1.5}, r"--teacher_forcing_ratio must be a finite number in \[0, 1\]"),
        ({"scheduled_sampling": "cosine", "scheduled_sampling_k": 0.1}, "`--scheduled_sampling`='cosine' is not"),
        ({"scheduled_sampling": "linear"}, "--scheduled_sampling linear needs --scheduled_sampling_k"),
        ({"scheduled_sampling": "linear", "scheduled_sampling_k": 0.0}, "k is the decrease per step, > 0"),
        ({"scheduled_sampling": "exponential", "scheduled_sampling_k": 1.0}, r"k is the factor per step, in \(0, 1\)"),
        ({"scheduled_sampling": "inverse_sigmoid", "scheduled_sampling_k": 0.5}, "k is the steps' scale, >= 1"),
        ({"scheduled_sampling": "linear", "scheduled_sampling_k": 1e-3, "teacher_forcing_ratio": 0.5},
         "exclude each other"),
        ({"scheduled_sampling": "linear", "scheduled_sampling_k": 1e-3, "scheduled_sampling_floor": 1.0},
         r"--scheduled_sampling_floor must be a finite number in \[0, 1\)"),
        ({"scheduled_sampling_k": 0.5}, "need --scheduled_sampling"),
        ({"scheduled_sampling_floor": 0.5}, "need --scheduled_sampling"),
    ],
)
def test_bad_options_are_refused_when_parsed(options, message):
    with pytest.raises(ValueError, match=message):
        arguments(**options)


def tiny_seq2seq(**changes) -> AttentionSeq2SeqForConditionalGeneration:
    torch.manual_seed(0)
    return AttentionSeq2SeqForConditionalGeneration(AttentionSeq2SeqConfig(
        vocab_size=12, embedding_size=6, hidden_size=8, dropout=0.0, pad_token_id=PAD, bos_token_id=BOS,
        eos_token_id=EOS, **changes))


@pytest.mark.parametrize("options", [{"teacher_forcing_ratio": 0.5},
                                     {"scheduled_sampling": "linear", "scheduled_sampling_k": 0.1}])
def test_models_without_a_ratio_are_refused(options):
    transformer = TransformerForConditionalGeneration(TransformerConfig(
        vocab_size=12, d_model=8, ffn_dim=16, num_heads=2, encoder_layers=1, decoder_layers=1, pad_token_id=PAD,
        bos_token_id=BOS, eos_token_id=EOS))
    two_pass = r"two-pass scheduled sampling \(Mihaylova & Martins 2019\) is not implemented"
    with pytest.raises(ValueError, match=two_pass):
        TeacherForcing.for_run(arguments(**options), transformer)
    with pytest.raises(ValueError, match="RecurrentForCausalLM does not: use --model_type attention_seq2seq"):
        TeacherForcing.for_run(arguments(**options), RecurrentForCausalLM(RecurrentConfig(vocab_size=12)))


def test_without_the_options_the_models_ratio_stays():
    model = tiny_seq2seq(teacher_forcing_ratio=0.75)
    TeacherForcing.for_run(arguments(), model).update(model, 100)
    assert model.config.teacher_forcing_ratio == 0.75


def pairs(rows: int, seed: int) -> datasets.Dataset:
    generator = torch.Generator().manual_seed(seed)
    return datasets.Dataset.from_dict({
        "input_ids": torch.randint(3, 12, (rows, 5), generator=generator).tolist(),
        "labels": torch.randint(3, 12, (rows, 4), generator=generator).tolist(),
    })


@pytest.mark.parametrize("options,expected", [
    ({"scheduled_sampling": "exponential", "scheduled_sampling_k": 0.5, "scheduled_sampling_floor": 0.2},
     [1.0, 0.5, 0.25, 0.2, 0.2, 0.2]),
    ({"teacher_forcing_ratio": 0.3}, [0.3] * 6),
])
def test_the_train_loop_sets_the_ratio_of_each_optimizer_step(tmp_path, monkeypatch, options, expected):
    """The ratio each training forward sees, set before each optimizer step."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, max_train_steps=6,
                             logging_steps=1, **options)
    model = tiny_seq2seq()
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append((module.training,
                                                                      module.config.teacher_forcing_ratio)))
    train(make_accelerator(args), model, pairs(24, 0), pairs(2, 1), default_data_collator, args)
    assert [ratio for training, ratio in seen if training] == expected


def test_the_scripts_parse_the_options():
    parse = task_parser(translation).parse_args_into_dataclasses
    training = parse(["--output_dir", "out", "--scheduled_sampling", "inverse_sigmoid", "--scheduled_sampling_k", "50",
                      "--scheduled_sampling_floor", "0.2"])[2]
    assert TeacherForcing.for_run(training, tiny_seq2seq()).ratio_at(0) == pytest.approx(50 / 51)
    with pytest.raises(ValueError, match="--scheduled_sampling linear needs --scheduled_sampling_k"):
        parse(["--output_dir", "out", "--scheduled_sampling", "linear"])
