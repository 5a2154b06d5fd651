#!/usr/bin/env python
"""Train a sentence classifier (SST-2 sentiment by default) and report validation accuracy and macro-F1
(`hf_seqmodels.tasks.text_classification.run`). The same script, data pipeline and metric code fine-tune a
pretrained encoder:

    python scripts/run_classification.py --model_type recurrent --cell_type lstm --bidirectional \\
        --output_dir outputs/sst2-bilstm
    python scripts/run_classification.py --bidirectional --embeddings_from ../shared/data/models/all-MiniLM-L6-v2 \\
        --dropout 0.3 --output_dir outputs/sst2-bilstm-emb   # word embeddings start from the encoder's rows
    python scripts/run_classification.py --model_name_or_path ../shared/data/models/all-MiniLM-L6-v2 \\
        --learning_rate 5e-5 --output_dir outputs/sst2-minilm
    accelerate launch --multi_gpu --num_processes 2 scripts/run_classification.py --output_dir outputs/sst2-lstm
"""

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import text_classification
from hf_seqmodels.tasks.arguments import task_parser


def main(argv: list[str] | None = None) -> dict:
    return text_classification.run(*task_parser(text_classification).parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
