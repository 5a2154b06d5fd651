"""Train word vectors with gensim (word2vec skip-gram or CBOW, or fastText) on the text columns of a data set, write
them in word2vec format and show what they learned: nearest neighbours and an analogy, as the course notes do.

    from hf_seqmodels.tasks import word_vectors
    word_vectors.run(word_vectors.DataArguments(), word_vectors.VectorsArguments(output_file="outputs/sst2.vec"))

The words are split as ``--tokenizer_type word`` splits them (on whitespace, case kept), so every word of the
vectors file is a token of a word-level model trained on the same text, and ``--word_vectors`` finds it.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from gensim.models import FastText, KeyedVectors, Word2Vec
from tokenizers import pre_tokenizers

from ..models.configuration_utils import check_choice
from ..training.argument_checks import check_at_least, check_range
from . import arguments

MODELS = {"word2vec": Word2Vec, "fasttext": FastText}
TRAINING_DEFAULTS: dict = {}


@dataclass
class DataArguments(arguments.DataArguments):
    dataset_name: str | None = arguments.dataset_name_field("sst2")
    text_column_name: list[str] = field(
        default_factory=lambda: ["sentence"],
        metadata={"help": "The column(s) of the training split holding the text: strings, or lists of words (e.g. "
                          "'tokens'); several columns (e.g. 'en de') all feed one vocabulary."},
    )


@dataclass
class VectorsArguments:
    output_file: str = field(metadata={"help": "The vectors file to write, in word2vec text format (fastText's .vec)."})
    binary_file: str | None = field(default=None, metadata={"help": "Also write them in word2vec binary format."})
    overwrite: bool = field(default=False, metadata={"help": "Replace files that exist."})
    model: str = field(default="word2vec", metadata={"help": f"One of {tuple(MODELS)}."})
    sg: int = field(default=1, metadata={"help": "1: skip-gram (predict the context from the word); 0: CBOW."})
    vector_size: int = field(default=100, metadata={"help": "The dimension of the vectors."})
    window: int = field(default=5, metadata={"help": "Context words on each side."})
    min_count: int = field(default=2, metadata={"help": "Words seen fewer times get no vector."})
    negative: int = field(default=5, metadata={"help": "Negative samples per positive one."})
    epochs: int = field(default=5, metadata={"help": "Passes over the text."})
    workers: int = field(default=1, metadata={"help": "Threads; more than 1 is faster but not reproducible."})
    seed: int = field(default=42, metadata={"help": "Seed of the initial vectors and the sampling."})
    neighbours_of: list[str] = field(
        default_factory=lambda: ["good", "bad", "funny", "boring", "film"],
        metadata={"help": "Words whose nearest neighbours are printed (words without a vector are skipped)."},
    )
    analogy: list[str] = field(
        default_factory=lambda: ["king", "man", "woman"],
        metadata={"help": "Three words a b c: print the words nearest to a - b + c (king - man + woman ~ queen); "
                          "skipped when one has no vector."},
    )

    def __post_init__(self):
        check_choice("--model", self.model, tuple(MODELS))
        check_range(self, "sg", 0, 1)  # an integer: 0 or 1
        for name in ("vector_size", "window", "min_count", "epochs", "workers"):
            check_at_least(self, name, 1)
        check_at_least(self, "negative", 0)
        if len(self.analogy) not in (0, 3):
            raise ValueError(f"--analogy takes three words a b c (a - b + c), got {self.analogy}.")
        for path in (self.output_file, self.binary_file):
            if path is not None and Path(path).exists() and not self.overwrite:
                raise ValueError(f"{path} exists: pass --overwrite to replace it, or another file name.")


ARGUMENTS = (DataArguments, VectorsArguments)


def sentences(rows, columns: list[str]) -> list[list[str]]:
    """The words of every text of ``columns`` in ``rows`` (a split), split as the word tokenizer splits them."""
    split = pre_tokenizers.WhitespaceSplit()
    found = []
    for column in columns:
        if column not in rows.column_names:
            raise ValueError(f"Column {column!r} not found in the training split, which has columns "
                             f"{rows.column_names}. Pick the text with --text_column_name.")
        for number, text in enumerate(rows[column]):
            if isinstance(text, list) and all(isinstance(word, str) for word in text):
                found.append(text)
            elif isinstance(text, str):
                found.append([word for word, _ in split.pre_tokenize_str(text)])
            else:
                raise ValueError(f"Row {number} of column {column!r} holds {text!r}: a text column holds strings or "
                                 "lists of words.")
    return found


def train_vectors(texts: list[list[str]], args: VectorsArguments) -> KeyedVectors:
    """The vectors of a gensim ``args.model`` trained on ``texts`` (lists of words)."""
    model = MODELS[args.model](sentences=texts, vector_size=args.vector_size, window=args.window,
                               min_count=args.min_count, sg=args.sg, negative=args.negative, epochs=args.epochs,
                               workers=args.workers, seed=args.seed)
    return model.wv


def save_vectors(vectors: KeyedVectors, path: str, binary: bool) -> None:
    """Write ``vectors`` in word2vec format (text or binary) to a temporary file and rename it into place."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    temporary = f"{path}.tmp"
    vectors.save_word2vec_format(temporary, binary=binary)
    os.replace(temporary, path)


def neighbours(vectors: KeyedVectors, words: list[str], topn: int = 5) -> dict[str, list[tuple[str, float]]]:
    """Word -> its ``topn`` nearest words by cosine similarity, for the ``words`` that have a vector."""
    return {word: vectors.most_similar(word, topn=topn) for word in words if word in vectors.key_to_index}


def analogy(vectors: KeyedVectors, words: list[str], topn: int = 5) -> list[tuple[str, float]] | None:
    """The ``topn`` words nearest to ``a - b + c`` for ``words`` = [a, b, c]; None when one has no vector."""
    if len(words) != 3 or any(word not in vectors.key_to_index for word in words):
        return None
    a, b, c = words
    return vectors.most_similar(positive=[a, c], negative=[b], topn=topn)


def run(data_args: DataArguments, args: VectorsArguments) -> dict:
    """Train vectors on the training split's text columns, write them, print neighbours and the analogy.

    Returns:
        ``output_file``, ``binary_file``, ``vocab_size``, ``vector_size``, ``sentences``, ``neighbours`` and
        ``analogy`` (None when a word has no vector).
    """
    texts = sentences(data_args.load()["train"], data_args.text_column_name)
    vectors = train_vectors(texts, args)
    if not len(vectors):
        raise ValueError(f"No word occurs --min_count={args.min_count} times in {len(texts)} texts: lower it or "
                         "pass more text.")
    save_vectors(vectors, args.output_file, binary=False)
    if args.binary_file is not None:
        save_vectors(vectors, args.binary_file, binary=True)
    results = {"output_file": args.output_file, "binary_file": args.binary_file, "vocab_size": len(vectors),
               "vector_size": vectors.vector_size, "sentences": len(texts),
               "neighbours": neighbours(vectors, args.neighbours_of), "analogy": analogy(vectors, args.analogy)}
    print(f"{results['vocab_size']:,} words x {results['vector_size']} from {len(texts):,} texts -> {args.output_file}")
    for word, near in results["neighbours"].items():
        print(f"  {word}: {_listed(near)}")
    skipped = [word for word in args.neighbours_of if word not in results["neighbours"]]
    if skipped:
        print(f"  (no vector for {', '.join(skipped)})")
    if args.analogy:
        a, b, c = args.analogy
        found = results["analogy"]
        print(f"  {a} - {b} + {c} = {_listed(found) if found is not None else '(skipped: a word has no vector)'}")
    return results


def _listed(similar: list[tuple[str, float]]) -> str:
    return ", ".join(f"{word} ({similarity:.2f})" for word, similarity in similar)
