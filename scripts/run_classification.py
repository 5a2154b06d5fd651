#!/usr/bin/env python
"""Train a sentence classifier (SST-2 sentiment by default) and report validation accuracy and macro-F1.

The steps follow transformers' examples/pytorch/text-classification/run_glue_no_trainer.py: load the data, train
a tokenizer (or take the checkpoint's), tokenize, train with Accelerate, score the validation split with
`evaluate`, and save model, tokenizer and results.json (`hf_seqmodels.classification.run`). The same script, data
pipeline and metric code fine-tune a pretrained encoder:

    python scripts/run_classification.py --model_type recurrent --cell_type lstm --bidirectional \\
        --output_dir outputs/sst2-bilstm
    python scripts/run_classification.py --bidirectional --embeddings_from ../shared/data/models/all-MiniLM-L6-v2 \
        --dropout 0.3 --output_dir outputs/sst2-bilstm-emb   # word embeddings start from the encoder's rows
    python scripts/run_classification.py --model_name_or_path ../shared/data/models/all-MiniLM-L6-v2 \\
        --learning_rate 5e-5 --output_dir outputs/sst2-minilm
    accelerate launch --multi_gpu --num_processes 2 scripts/run_classification.py --output_dir outputs/sst2-lstm
"""

from dataclasses import dataclass, field

from transformers import HfArgumentParser

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.classification import DataArguments, ModelArguments, run
from hf_seqmodels.training import TrainingArguments


@dataclass
class ClassificationDataArguments(DataArguments):
    dataset_name: str | None = field(
        default="sst2", metadata={"help": "A bundled data set (under $HF_SEQMODELS_DATA), a local folder or a Hub name."}
    )


def main(argv: list[str] | None = None) -> dict:
    parser = HfArgumentParser((ModelArguments, ClassificationDataArguments, TrainingArguments))
    return run("text-classification", *parser.parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
