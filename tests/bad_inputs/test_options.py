"""Bad script options (area "options"): each is refused when parsed, exactly as the scripts parse it
(`tasks.arguments.task_parser(task).parse_args_into_dataclasses`, or `parse_dict` for a dict of fields), with a
message naming the ``--option``, the value seen and what is allowed; good values of the same options parse."""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hf_seqmodels  # noqa: F401  (registers the model types)
from hf_seqmodels.tasks import language_modeling, text_classification, token_classification, translation
from hf_seqmodels.tasks.arguments import parse_dict, task_parser

from .outcomes import assert_outcome

TASKS = {"translation": translation, "language_modeling": language_modeling,
         "text_classification": text_classification, "token_classification": token_classification}
LABELLING = ("text_classification", "token_classification")
FINITE = r"must be a finite number in"


def parse(task: str, *options: str) -> tuple:
    return task_parser(TASKS[task]).parse_args_into_dataclasses(["--output_dir", "out", *options])


# Options of training_args.TrainingArguments, the same in every task: (options, the message's pattern).
TRAINING = {
    "learning_rate nan": (["--learning_rate", "nan"], rf"--learning_rate {FINITE} \[0, inf\), got nan"),
    "learning_rate -1": (["--learning_rate", "-1"], rf"--learning_rate {FINITE} \[0, inf\), got -1.0"),
    "learning_rate -1e-3": (["--learning_rate=-1e-3"], rf"--learning_rate {FINITE} \[0, inf\), got -0.001"),
    "learning_rate inf": (["--learning_rate", "inf"], rf"--learning_rate {FINITE} \[0, inf\), got inf"),
    "max_grad_norm nan": (["--max_grad_norm", "nan"], rf"--max_grad_norm {FINITE} \[0, inf\), got nan"),
    "max_grad_norm -1": (["--max_grad_norm", "-1"], rf"--max_grad_norm {FINITE} \[0, inf\), got -1.0"),
    "max_grad_norm inf": (["--max_grad_norm", "inf"], rf"--max_grad_norm {FINITE} \[0, inf\), got inf"),
    "weight_decay nan": (["--weight_decay", "nan"], rf"--weight_decay {FINITE} \[0, inf\), got nan"),
    "weight_decay -0.1": (["--weight_decay", "-0.1"], rf"--weight_decay {FINITE} \[0, inf\), got -0.1"),
    "warmup -1": (["--num_warmup_steps", "-1"], r"--num_warmup_steps must be at least 0, got -1"),
    "time budget nan": (["--time_budget_minutes", "nan"], rf"--time_budget_minutes {FINITE} \(0, inf\), got nan"),
    "time budget 0": (["--time_budget_minutes", "0"], r"--time_budget_minutes .* got 0.0"),
    "time budget -5": (["--time_budget_minutes", "-5"], r"--time_budget_minutes .* got -5.0"),
    "time budget inf": (["--time_budget_minutes", "inf"], r"--time_budget_minutes .* got inf"),
    "seed -1": (["--seed", "-1"], r"--seed must be at least 0, got -1"),
    "seed 2**32": (["--seed", str(2**32)], rf"--seed {FINITE} \[0, 4294967295\], got 4294967296"),
    "label smoothing 1": (["--label_smoothing_factor", "1"], rf"--label_smoothing_factor {FINITE} \[0, 1\), got 1.0"),
    "label smoothing -0.1": (["--label_smoothing_factor", "-0.1"], r"--label_smoothing_factor .* got -0.1"),
    "label smoothing nan": (["--label_smoothing_factor", "nan"], r"--label_smoothing_factor .* got nan"),
    "train batch 0": (["--per_device_train_batch_size", "0"], r"--per_device_train_batch_size must be at least 1"),
    "eval batch -2": (["--per_device_eval_batch_size", "-2"], r"--per_device_eval_batch_size must be at least 1"),
    "epochs 0": (["--num_train_epochs", "0"], r"--num_train_epochs must be at least 1, got 0"),
    "max steps 0": (["--max_train_steps", "0"], r"--max_train_steps must be at least 1, got 0"),
    "logging steps 0": (["--logging_steps", "0"], r"--logging_steps must be at least 1, got 0"),
    "save limit 0": (["--save_total_limit", "0"], r"--save_total_limit must be at least 1, got 0"),
    "patience 0": (["--early_stopping_patience", "0", "--metric_for_best_model", "eval_loss"],
                   r"--early_stopping_patience must be at least 1, got 0"),
    "checkpointing 0": (["--checkpointing_steps", "0"], r"--checkpointing_steps must be a positive integer or 'epoch'"),
    "checkpointing -3": (["--checkpointing_steps", "-3"], r"--checkpointing_steps .* got '-3'"),
    "checkpointing 1.5": (["--checkpointing_steps", "1.5"], r"--checkpointing_steps .* got '1.5'"),
    "checkpointing superscript": (["--checkpointing_steps", "²"], r"--checkpointing_steps .* got '²'"),
    "checkpointing word": (["--checkpointing_steps", "often"], r"--checkpointing_steps .* got 'often'"),
    "optimizer": (["--optimizer", "lbfgs"], r"`--optimizer`='lbfgs' is not supported; .* of 'adamw', 'sgd', 'nt_asgd'"),
    "output_dir empty": (["--output_dir", ""], r"--output_dir must name a folder, got ''"),
    "output_dir blank": (["--output_dir", "  "], r"--output_dir must name a folder, got '  '"),
    **{f"scheduler {name}": (["--lr_scheduler_type", name], rf"--lr_scheduler_type='{name}' is not a SchedulerType "
                                                            r"this training loop runs.*choose one of \('linear'")
       for name in ("sometimes", "Linear")},
    "accumulation 0": (["--gradient_accumulation_steps", "0"], r"--gradient_accumulation_steps must be at least 1"),
    "max tokens 0": (["--max_tokens", "0"], r"--max_tokens must be at least 1, got 0"),
    "mixed precision fp32": (["--mixed_precision", "fp32"],
                             r"`--mixed_precision`='fp32' is not supported; choose one of 'no', 'fp16', 'bf16'"),
    "report_to wandb": (["--report_to", "wandb"], r"`--report_to`='wandb' is not supported; choose one of 'none', "
                                                  r"'tensorboard'\."),
    "report_to trackio": (["--report_to", "trackio"], r"--report_to trackio is not supported: .* pass --report_to "
                                                      r"tensorboard"),
    "min_lr missing": (["--lr_scheduler_type", "cosine_with_min_lr"],
                       r"--lr_scheduler_type cosine_with_min_lr needs the learning rate it ends at: pass --min_lr"),
    "min_lr of linear": (["--min_lr", "1e-5"], r"--min_lr is the end of the .* not of --lr_scheduler_type linear"),
    "min_lr -1": (["--lr_scheduler_type", "cosine_with_min_lr", "--min_lr=-1"], rf"--min_lr {FINITE} .* got -1.0"),
    "scheduler kwargs not JSON": (["--lr_scheduler_kwargs", "{num_cycles: 2}"], r"--lr_scheduler_kwargs=.* is not JSON"),
    "scheduler kwargs a list": (["--lr_scheduler_kwargs", "[2]"], r"--lr_scheduler_kwargs=\[2\] is not a JSON object"),
    "scheduler kwargs unknown": (["--lr_scheduler_kwargs", '{"num_cycles": 2}'],
                                 r"--lr_scheduler_kwargs=\{\"num_cycles\": 2\} does not fit --lr_scheduler_type linear"),
    "plateau with warmup": (["--lr_scheduler_type", "reduce_lr_on_plateau", "--num_warmup_steps", "10"],
                            r"--num_warmup_steps=10: --lr_scheduler_type reduce_lr_on_plateau has no warmup .* "
                            r"pass --num_warmup_steps 0"),
}

# Options of one task's argument classes: (the tasks, the options, the message's pattern).
LM, TRANSLATION = ("language_modeling",), ("translation",)
TASK_OPTIONS = [
    (TRANSLATION, "--vocabulary shared", r"`--vocabulary`='shared' is not supported; choose one of"),
    (TRANSLATION, "--max_source_length 1", r"--max_source_length must be at least 2"),
    (TRANSLATION, "--max_target_length -1", r"--max_target_length must be at least 2"),
    (TRANSLATION, "--vocab_size 4", r"--vocab_size must be at least 5 \(more than the special tokens\)"),
    (TRANSLATION, "--target_lang en", r"--source_lang and --target_lang are both 'en'"),
    (TRANSLATION, "--length_penalty nan", r"--length_penalty must be a finite number in .* got nan"),
    (TRANSLATION, "--length_penalty=-inf", r"--length_penalty must be a finite number in .* got -inf"),
    (TRANSLATION, "--num_beams 0", r"--num_beams must be at least 1, got 0"),
    (TRANSLATION, "--eval_num_beams -1", r"--eval_num_beams must be at least 1"),
    (TRANSLATION, "--max_new_tokens 0", r"--max_new_tokens must be at least 1"),
    (TRANSLATION, "--model_type recurrent", r"`--model_type`='recurrent' is not supported"),
    (TRANSLATION, "--train_file train.txt", r"--train_file=train.txt: a .txt file has one column"),
    (LM, "--block_size 1", r"--block_size must be at least 2 \(one input and one target\)"),
    (LM, "--tokenizer_type sentencepiece", r"`--tokenizer_type`='sentencepiece' is not supp"),
    (LM, "--vocab_size 0", r"--vocab_size must be at least 5"),
    (LM, "--cell_type transformer", r"`--cell_type`='transformer' is not supported; choose one of"),
    (LM, "--hidden_size 0", r"--hidden_size must be at least 1, got 0"),
    (LM, "--embedding_size -4", r"--embedding_size must be at least 1, got -4"),
    (LM, "--num_layers 0", r"--num_layers must be at least 1"),
    (LM, "--dropout 1", r"--dropout must be a finite number in \[0, 1\), got 1.0"),
    (LM, "--embedding_dropout nan", r"--embedding_dropout .* got nan"),
    (LM, "--output_dropout -0.5", r"--output_dropout .* got -0.5"),
    (LM, "--model_type attention_seq2seq", r"`--model_type`='attention_seq2seq' is not"),
    (LABELLING, "--tokenizer_type chars", r"`--tokenizer_type`='chars' is not supported"),
    (LABELLING, "--cell_type LSTM", r"`--cell_type`='LSTM' is not supported; choose one of"),
    (LABELLING, "--model_type transformer --classifier_pooling last", r"`--classifier_pooling`='last' .* 'mean'"),
    (LABELLING, "--classifier_pooling first", r"`--classifier_pooling`='first' is not supported"),
    (LABELLING, "--num_heads 0", r"--num_heads must be at least 1"),
    (LABELLING, "--model_type transformer --hidden_size 100 --num_heads 3", r"--hidden_size=100 .* of --num_heads=3"),
    (LABELLING, "--ffn_dim 0", r"--ffn_dim must be at least 1"),
    (LABELLING, "--dropout nan", r"--dropout must be a finite number in \[0, 1\), got nan"),
    (LABELLING, "--dropout -1", r"--dropout .* got -1.0"),
    (LABELLING, "--spelling_features -1", r"--spelling_features must be at least 0"),
    (LABELLING, "--vocab_size 3", r"--vocab_size must be at least 5"),
    (LABELLING, "--max_seq_length 1", r"--max_seq_length must be at least 2"),
    (LABELLING, "--label_column_name x --text_column_name x", r"--text_column_name and --label_column_name are both"),
    (("token_classification",), "--crf_constrain_bio", r"--crf_constrain_bio constrains the CRF of --use_crf"),
    (("token_classification",), "--use_crf --model_name_or_path .", r"--use_crf adds a CRF to a new model"),
    (LABELLING, "--model_type attention_seq2seq", r"`--model_type`='attention_seq2seq' is not supported"),
]

# Options of tasks.arguments' shared classes, the same in every task.
SHARED = {
    "workers 0": (["--preprocessing_num_workers", "0"], r"--preprocessing_num_workers must be at least 1, got 0"),
    "max_train_samples 0": (["--max_train_samples", "0"],
                            r"--max_train_samples must be at least 1 \(leave it out for all rows\), got 0"),
    "max_train_samples -5": (["--max_train_samples", "-5"], r"--max_train_samples must be at least 1 .*, got -5"),
    "max_eval_samples 0": (["--max_eval_samples", "0"], r"--max_eval_samples must be at least 1 .*, got 0"),
    "max_eval_samples -1": (["--max_eval_samples", "-1"], r"--max_eval_samples must be at least 1 .*, got -1"),
    "parquet file": (["--train_file", "train.parquet"], r"Unsupported data file --train_file=train.parquet: use one "
                                                         r"of \['.csv'"),
    "no extension": (["--validation_file", "valid"], r"Unsupported data file --validation_file=valid"),
    "model_type": (["--model_type", "lstm"], r"`--model_type`='lstm' is not supported; choose one of"),
    "overrides without =": (["--config_overrides", "dropout"], r"--config_overrides: 'dropout' is not 'field=value'"),
    "overrides unknown field": (["--config_overrides", "nope=1"], r"--config_overrides: 'nope=1' is not 'field=value'"),
    "overrides set by the script": (["--config_overrides", "vocab_size=3"],
                                    r"--config_overrides: vocab_size is set by the script"),
    "overrides not a bool": (["--config_overrides", "tie_word_embeddings=maybe"],
                             r"--config_overrides: tie_word_embeddings takes true or false, got 'maybe'"),
}
TASK_CASES = [(task, name, *case) for task in TASKS for cases in (TRAINING, SHARED) for name, case in cases.items()
              if not (task == "translation" and name == "model_type")]
TASK_CASES += [(task, options, options.split(), message) for tasks, options, message in TASK_OPTIONS for task in tasks]


@pytest.mark.parametrize("task, name, options, message", TASK_CASES,
                         ids=[f"{task}-{name}" for task, name, *_ in TASK_CASES])
def test_a_bad_option_is_refused_when_parsed(task, name, options, message):
    assert_outcome("options", lambda: parse(task, *options), error=message)


GOOD = {  # options that must parse, and what they must give
    "scheduler cosine": (["--lr_scheduler_type", "cosine"], lambda parsed: parsed[2].lr_scheduler_type == "cosine"),
    "scheduler plateau": (["--lr_scheduler_type", "reduce_lr_on_plateau", "--lr_scheduler_kwargs", '{"factor": 0.5}',
                           "--num_warmup_steps", "0"],
                          lambda parsed: parsed[2].lr_scheduler_kwargs == {"factor": 0.5}),
    "scheduler min_lr": (["--lr_scheduler_type", "cosine_with_min_lr", "--min_lr", "1e-5"],
                         lambda parsed: parsed[2].min_lr == 1e-5),
    "scheduler wsd": (["--lr_scheduler_type", "warmup_stable_decay"], lambda parsed: parsed[2].lr_scheduler_kwargs == {}),
    "accumulation": (["--gradient_accumulation_steps", "4"], lambda parsed: parsed[2].gradient_accumulation_steps == 4),
    "bf16": (["--mixed_precision", "bf16"], lambda parsed: parsed[2].mixed_precision == "bf16"),
    "tensorboard": (["--report_to", "tensorboard"], lambda parsed: parsed[2].logging_dir == "out-runs"),
    "checkpointing epoch": (["--checkpointing_steps", "epoch"], lambda p: p[2].checkpointing_steps == "epoch"),
    "no clipping": (["--max_grad_norm", "0"], lambda parsed: parsed[2].max_grad_norm == 0),
    "frozen": (["--learning_rate", "0"], lambda parsed: parsed[2].learning_rate == 0),
    "seed 0": (["--seed", "0"], lambda parsed: parsed[2].seed == 0),
    "short budget": (["--time_budget_minutes", "0.01"], lambda parsed: parsed[2].time_budget_minutes == 0.01),
    "gzip data": (["--train_file", "train.jsonl.gz"], lambda parsed: parsed[1].train_file == "train.jsonl.gz"),
    "bzip2 tsv": (["--train_file", "train.tsv.bz2"], lambda parsed: parsed[1].train_file == "train.tsv.bz2"),
}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", GOOD)
def test_a_good_option_parses(task, name):
    options, check = GOOD[name]
    assert_outcome("options", lambda: parse(task, *options), check=check)


DICT_CASES = {  # fields of the wrong type in a dict (compare.py's recipes), which no command line can give
    "learning_rate as text": ({"learning_rate": "fast"}, rf"--learning_rate {FINITE} .* got 'fast'"),
    "batch size 2.5": ({"per_device_train_batch_size": 2.5},
                       r"--per_device_train_batch_size must be an integer of at least 1, got 2.5"),
    "seed True": ({"seed": True}, r"--seed must be an integer of at least 0, got True"),
    "checkpointing as a number": ({"checkpointing_steps": 500}, r"--checkpointing_steps .* got 500"),
    "optimizer as a list": ({"optimizer": ["adamw"]}, r"`--optimizer`=\['adamw'\] is not supported"),
    "output_dir None": ({"output_dir": None}, r"--output_dir must name a folder, got None"),
    "workers as text": ({"preprocessing_num_workers": "2"}, r"--preprocessing_num_workers must be an integer"),
}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", DICT_CASES)
def test_a_field_of_the_wrong_type_is_refused(task, name):
    fields, message = DICT_CASES[name]
    assert_outcome("options", lambda: parse_dict(TASKS[task], {"output_dir": "out", **fields}), error=message)


# Every float an option of these ranges can be given: refused unless finite and in range, else kept exactly.
FLOAT_OPTIONS = {  # option: (is the value allowed, which dataclass of the translation task holds it)
    "learning_rate": (lambda value: value >= 0, 2),
    "max_grad_norm": (lambda value: value >= 0, 2),
    "weight_decay": (lambda value: value >= 0, 2),
    "time_budget_minutes": (lambda value: value > 0, 2),
    "label_smoothing_factor": (lambda value: 0 <= value < 1, 2),
    "length_penalty": (lambda value: True, 3),
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option=st.sampled_from(sorted(FLOAT_OPTIONS)), value=st.floats(allow_nan=True, allow_infinity=True))
def test_any_float_is_refused_or_kept(option, value):
    allowed, position = FLOAT_OPTIONS[option]
    call = lambda: parse("translation", f"--{option}={value!r}")  # noqa: E731 (argparse takes -1e+16 for an option)
    if math.isfinite(value) and allowed(value):
        assert_outcome("options", call, check=lambda parsed: getattr(parsed[position], option) == value)
    else:
        assert_outcome("options", call, error=rf"--{option} {FINITE} .* got {re.escape(repr(value))}")


@settings(max_examples=15, deadline=None)
@given(option=st.sampled_from(["num_warmup_steps", "seed", "per_device_train_batch_size", "num_train_epochs"]),
       value=st.integers(min_value=-2**40, max_value=2**40))
def test_any_integer_is_refused_or_kept(option, value):
    minimum = 0 if option in ("num_warmup_steps", "seed") else 1
    call = lambda: parse("language_modeling", f"--{option}", str(value))  # noqa: E731
    if value < minimum or (option == "seed" and value >= 2**32):
        assert_outcome("options", call, error=rf"--{option} must be .*, got {value}")
    else:
        assert_outcome("options", call, check=lambda parsed: getattr(parsed[2], option) == value)
