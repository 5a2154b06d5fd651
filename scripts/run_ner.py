#!/usr/bin/env python
"""Train a tagger (UD English-EWT UPOS by default; any BIO-tagged NER data in the same token/tag column format)
and report token accuracy and macro-F1, plus seqeval entity precision/recall/F1 when the tags are BIO
(`hf_seqmodels.tasks.token_classification.run`). The same script, data pipeline and metric code fine-tune a
pretrained encoder:

    python scripts/run_ner.py --model_type recurrent --bidirectional --output_dir outputs/upos-bilstm
    python scripts/run_ner.py --bidirectional --embeddings_from ../shared/data/models/all-MiniLM-L6-v2 \\
        --spelling_features 32 --dropout 0.3 --output_dir outputs/upos-bilstm-emb   # pretrained rows, spellings
    python scripts/run_ner.py --model_name_or_path ../shared/data/models/all-MiniLM-L6-v2 \\
        --learning_rate 5e-5 --output_dir outputs/upos-minilm
    python scripts/run_ner.py --train_file ner/train.jsonl --validation_file ner/dev.jsonl \\
        --label_column_name ner_tags --bidirectional --output_dir outputs/ner-bilstm
    python scripts/run_ner.py --dataset_name wnut17 --label_column_name ner_tags --bidirectional \\
        --use_crf --crf_constrain_bio --output_dir outputs/wnut17-bilstm-crf   # BiLSTM-CRF, Viterbi tags

A labelled test split (UD English-EWT, WNUT-17, or --test_file) scores the final model too (`test_*` in results.json).
"""

import hf_seqmodels  # noqa: F401  (registers the models with the Auto classes)
from hf_seqmodels.tasks import token_classification
from hf_seqmodels.tasks.arguments import task_parser


def main(argv: list[str] | None = None) -> dict:
    return token_classification.run(*task_parser(token_classification).parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
