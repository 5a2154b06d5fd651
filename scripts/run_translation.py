#!/usr/bin/env python
"""Train a translation model (an attention GRU on Multi30k English -> German by default) and report its test BLEU.

The steps follow transformers' examples/pytorch/translation/run_translation_no_trainer.py: load the sentence
pairs, train BPE tokenizers (or, with --resume_from_checkpoint, load the checkpoint's), tokenize, train with
Accelerate (label smoothing, warmup, gradient clipping, the best checkpoint by validation BLEU, early stopping),
translate the test set with beam search and score it with sacreBLEU's BLEU and chrF, save, reload the folder
through `AutoModelForSeq2SeqLM` and translate a few sentences, and draw the attention of one of them.

    python scripts/run_translation.py --output_dir outputs/multi30k-gru
    python scripts/run_translation.py --output_dir outputs/multi30k-lstm --config_overrides cell_type=lstm
    python scripts/run_translation.py --output_dir outputs/multi30k-transformer --model_type vanilla_transformer \\
        --config_overrides d_model=256,ffn_dim=1024,encoder_layers=3,decoder_layers=3,num_heads=4,norm_position=pre,\\
dropout=0.2,share_encoder_decoder_embeddings=true --learning_rate 1e-3 --num_warmup_steps 1000 \\
        --num_train_epochs 25 --time_budget_minutes 60

The defaults (a bidirectional GRU encoder, a GRU decoder with Luong attention, 256 units, a joint BPE vocabulary of
6000; Adam at 3e-3 with warmup and linear decay over 3 epochs, label smoothing 0.1) train for 3 epochs, about 17
CPU-minutes. Training stops after 9 minutes (evaluations included) if the epochs are not done by then: on 2 free
CPU cores that is after about 2.75 epochs (test2016 BLEU 35.9 measured); raise --time_budget_minutes on a slower or
busy machine. The full 3 epochs reach test2016 BLEU 35.1 / chrF 59.5 with 5 beams (validation BLEU 33.5 greedy).
The Transformer recipe above (the defaults' 3e-3 is too high for it) reached 36.6 after 16 epochs on an H100, and
37.6 with d_model=512,ffn_dim=2048,num_heads=8,dropout=0.3 (results/gpu/).
"""

import json
import sys
import time
from dataclasses import asdict, dataclass, field

from transformers import AutoConfig, AutoModelForSeq2SeqLM, DataCollatorForSeq2Seq, HfArgumentParser

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.cli import check_at_least, parse_config_overrides
from hf_seqmodels.data import check_column_files, first_rows, load_text_dataset
from hf_seqmodels.translation import (
    CUSTOM_PIPELINES,
    LengthGroupedSampler,
    check_language_columns,
    implausible_bleu_warning,
    load_tokenizers,
    save_attention_plot,
    tokenize_pairs,
    train_tokenizers,
    translate,
    translation_scores,
)
from hf_seqmodels.training import (
    TrainingArguments, describe_device, make_accelerator, run_tokenizer, save_model, train,
)

VOCABULARIES = ("joint", "separate")
SEQ2SEQ_MODEL_TYPES = ("attention_seq2seq", "vanilla_transformer")
EXAMPLES = ["A little girl climbs into a wooden playhouse.", "Two dogs are running through the snow.",
            "A man in a blue shirt is standing on a ladder cleaning windows."]


@dataclass
class DataArguments:
    dataset_name: str | None = field(
        default="multi30k_en_de",
        metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."},
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The Hub configuration name."})
    train_file: str | None = field(default=None, metadata={"help": "json/jsonl/csv/tsv (optionally .gz)."})
    validation_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    test_file: str | None = field(default=None, metadata={"help": "Same format as --train_file."})
    source_lang: str = field(default="en", metadata={"help": "The column holding the source sentences."})
    target_lang: str = field(default="de", metadata={"help": "The column holding the target sentences."})
    max_source_length: int = field(default=64, metadata={"help": "Source tokens kept (eos included)."})
    max_target_length: int = field(default=64, metadata={"help": "Target tokens kept (eos included)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N training pairs."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Keep only the first N validation and "
                                                                         "test pairs."})
    preprocessing_num_workers: int | None = field(default=None, metadata={"help": "Processes for tokenizing."})
    vocabulary: str = field(default="joint", metadata={"help": f"BPE vocabularies: one of {VOCABULARIES}."})
    vocab_size: int = field(default=6000, metadata={"help": "BPE vocabulary size (of each, when separate)."})

    def __post_init__(self):
        if self.vocabulary not in VOCABULARIES:
            raise ValueError(f"--vocabulary={self.vocabulary!r} is not supported; choose one of {VOCABULARIES}.")
        for name in ("max_source_length", "max_target_length"):
            check_at_least(self, name, 2, " (a token and the eos)")
        check_column_files({"--train_file": self.train_file, "--validation_file": self.validation_file,
                            "--test_file": self.test_file})


@dataclass
class ModelArguments:
    model_type: str = field(default="attention_seq2seq", metadata={"help": f"One of {SEQ2SEQ_MODEL_TYPES}."})
    config_overrides: str | None = field(
        default=None,
        metadata={"help": "Config fields to change from the family's defaults, e.g. "
                          "'cell_type=lstm,attention_type=bahdanau,hidden_size=512'."},
    )

    def __post_init__(self):
        if self.model_type not in SEQ2SEQ_MODEL_TYPES:
            raise ValueError(f"--model_type={self.model_type!r} is not supported; choose one of "
                             f"{SEQ2SEQ_MODEL_TYPES}.")


@dataclass
class GenerationArguments:
    num_beams: int = field(default=5, metadata={"help": "Beam size for the test set (saved as the default)."})
    length_penalty: float = field(default=1.0, metadata={"help": "Beam scores are divided by length**this."})
    max_new_tokens: int = field(default=64, metadata={"help": "Longest translation, in tokens."})
    eval_num_beams: int = field(default=1, metadata={"help": "Beam size for the validation BLEU of each epoch."})

    def __post_init__(self):
        for name in ("num_beams", "eval_num_beams", "max_new_tokens"):
            check_at_least(self, name, 1)


def show_examples(model_dir: str, sentences: list[str]) -> None:
    """Reload the saved folder through the Auto classes and translate ``sentences`` with its saved defaults."""
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
    tokenizers = load_tokenizers(model_dir)
    for source, translation in zip(sentences, translate(model, tokenizers, sentences)):
        print(f"  {source}\n    -> {translation}")


def main():
    start = time.monotonic()
    parser = HfArgumentParser((ModelArguments, DataArguments, GenerationArguments, TrainingArguments))
    # Translation defaults for the shared training options (tuned for the attention GRU on 2 CPU cores).
    parser.set_defaults(per_device_train_batch_size=64, per_device_eval_batch_size=128, learning_rate=3e-3,
                        max_grad_norm=1.0, lr_scheduler_type="linear", num_warmup_steps=200, num_train_epochs=3,
                        time_budget_minutes=9.0, logging_steps=50, checkpointing_steps="500",
                        label_smoothing_factor=0.1, metric_for_best_model="eval_bleu", early_stopping_patience=3)
    model_args, data_args, generation_args, training_args = parser.parse_args_into_dataclasses()
    accelerator = make_accelerator(training_args)

    with accelerator.main_process_first():
        files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
        raw = load_text_dataset(data_args.dataset_name, data_args.dataset_config_name,
                                {split: path for split, path in files.items() if path})
        check_language_columns(raw, data_args.source_lang, data_args.target_lang)
        raw = first_rows(raw, data_args.max_train_samples, data_args.max_eval_samples)
        tokenizers = run_tokenizer(
            training_args,
            lambda: train_tokenizers(raw["train"], data_args.source_lang, data_args.target_lang,
                                     data_args.vocab_size, joint=data_args.vocabulary == "joint"),
            load_tokenizers,
        )
        tokenized = tokenize_pairs(raw, tokenizers, data_args.source_lang, data_args.target_lang,
                                   data_args.max_source_length, data_args.max_target_length,
                                   data_args.preprocessing_num_workers)

    target = tokenizers.target
    config = AutoConfig.for_model(
        model_args.model_type,
        vocab_size=len(target),
        source_vocab_size=None if tokenizers.joint else len(tokenizers.source),
        pad_token_id=target.pad_token_id,
        bos_token_id=target.bos_token_id,
        eos_token_id=target.eos_token_id,
        decoder_start_token_id=target.bos_token_id,
        **parse_config_overrides(model_args.model_type, model_args.config_overrides),
    )
    config.custom_pipelines = CUSTOM_PIPELINES  # pipeline("translation", model=folder, trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_config(config)
    model.generation_config.update(num_beams=generation_args.num_beams, length_penalty=generation_args.length_penalty,
                                   max_new_tokens=generation_args.max_new_tokens,
                                   early_stopping=generation_args.num_beams > 1)  # only valid with beam search

    src, tgt = data_args.source_lang, data_args.target_lang
    decode = {"batch_size": training_args.per_device_eval_batch_size, "max_source_length": data_args.max_source_length,
              "max_new_tokens": generation_args.max_new_tokens}

    def validation_bleu(model) -> dict:
        scores, _ = translation_scores(model, tokenizers, raw["validation"][src], raw["validation"][tgt],
                                       prefix="eval_", num_beams=generation_args.eval_num_beams, **decode)
        return scores

    train_rows = tokenized["train"]
    sampler = LengthGroupedSampler([len(ids) for ids in train_rows["input_ids"]],
                                   training_args.per_device_train_batch_size, seed=training_args.seed)
    collator = DataCollatorForSeq2Seq(tokenizers.source, label_pad_token_id=-100)
    results = train(accelerator, model, train_rows, tokenized["validation"], collator, training_args,
                    evaluate_fn=validation_bleu, train_sampler=sampler, tokenizer=tokenizers)

    model = accelerator.unwrap_model(model)
    if "test" in raw and accelerator.is_main_process:
        test_start = time.monotonic()
        scores, translations = translation_scores(
            model, tokenizers, raw["test"][src], raw["test"][tgt], prefix="test_",
            num_beams=generation_args.num_beams, length_penalty=generation_args.length_penalty, **decode
        )
        results.update(scores, test_decoding_s=time.monotonic() - test_start, test_num_beams=generation_args.num_beams)
        if warning := implausible_bleu_warning(scores, translations):
            results["warnings"] = [warning]
    results.update(
        task="translation",
        model_config=model.config.to_dict(),  # what the model card describes
        num_parameters=model.num_parameters(),
        vocab_size=len(target),
        source_vocab_size=len(tokenizers.source),
        num_processes=accelerator.num_processes,
        device=describe_device(accelerator.device),
        wall_time_s=time.monotonic() - start,
        arguments={**asdict(model_args), **asdict(data_args), **asdict(generation_args), **asdict(training_args)},
    )
    save_model(accelerator, model, tokenizers, training_args.output_dir, results)

    if accelerator.is_main_process:
        summary = {k: v for k, v in results.items() if k not in ("eval_history", "arguments")}
        print(json.dumps(summary, indent=2))
        for warning in results.get("warnings", []):
            print(warning, file=sys.stderr)
        print(f"Translations by the reloaded {training_args.output_dir}:")
        show_examples(training_args.output_dir, EXAMPLES)
        picture = save_attention_plot(training_args.output_dir, EXAMPLES[0])
        if picture is not None:
            print(f"Attention of the first sentence: {picture}")


if __name__ == "__main__":
    main()
