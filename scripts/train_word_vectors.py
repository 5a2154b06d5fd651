#!/usr/bin/env python
"""Train word vectors (word2vec skip-gram or CBOW, or fastText, with gensim) on a data set's text and write them in
word2vec format, with nearest neighbours and an analogy (`hf_seqmodels.tasks.word_vectors.run`):

    python scripts/train_word_vectors.py --dataset_name sst2 --text_column_name sentence \\
        --output_file outputs/sst2-w2v.vec --sg 1 --vector_size 100 --analogy king man woman
    python scripts/run_classification.py --tokenizer_type word --word_vectors outputs/sst2-w2v.vec \\
        --freeze_embeddings --output_dir outputs/sst2-lstm-w2v   # the vectors start (and stay) the embeddings
"""

from hf_seqmodels.tasks import word_vectors
from hf_seqmodels.tasks.arguments import task_parser


def main(argv: list[str] | None = None) -> dict:
    return word_vectors.run(*task_parser(word_vectors).parse_args_into_dataclasses(argv))


if __name__ == "__main__":
    main()
