#!/usr/bin/env python
"""Train a tagger (UD English-EWT UPOS by default; any BIO-tagged NER data in the same token/tag column format)
and report token accuracy and macro-F1, plus seqeval entity precision/recall/F1 when the tags are BIO.

The steps follow transformers' examples/pytorch/token-classification/run_ner_no_trainer.py: load pre-split words
and their tags, train a tokenizer (or take the checkpoint's), tokenize with the first sub-token of every word
labelled and the rest -100, train with Accelerate, score the validation split with `evaluate`, and save model,
tokenizer and results.json (`hf_seqmodels.classification.run`). The same script, data pipeline and metric code
fine-tune a pretrained encoder:

    python scripts/run_ner.py --model_type recurrent --bidirectional --output_dir outputs/upos-bilstm
    python scripts/run_ner.py --bidirectional --embeddings_from ../shared/data/models/all-MiniLM-L6-v2 \
        --spelling_features 32 --dropout 0.3 --output_dir outputs/upos-bilstm-emb   # pretrained rows, spellings
    python scripts/run_ner.py --model_name_or_path ../shared/data/models/all-MiniLM-L6-v2 \\
        --learning_rate 5e-5 --output_dir outputs/upos-minilm
    python scripts/run_ner.py --train_file ner/train.jsonl --validation_file ner/dev.jsonl \\
        --label_column_name ner_tags --bidirectional --output_dir outputs/ner-bilstm
"""

from dataclasses import dataclass, field

from transformers import HfArgumentParser

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.classification import DataArguments, ModelArguments, run
from hf_seqmodels.training import TrainingArguments


@dataclass
class TaggingDataArguments(DataArguments):
    dataset_name: str | None = field(
        default="ud_english_ewt",
        metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."},
    )
    text_column_name: str = field(default="tokens", metadata={"help": "The column holding each sentence's words."})
    label_column_name: str = field(default="upos", metadata={"help": "The column holding one tag per word."})


def main(argv: list[str] | None = None) -> dict:
    parser = HfArgumentParser((ModelArguments, TaggingDataArguments, TrainingArguments))
    return run("token-classification", *parser.parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
