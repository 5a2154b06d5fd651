"""A model's input embeddings started from pretrained vectors: word vectors from a file (word2vec, GloVe, fastText),
or the rows of a pretrained model's embeddings that `pretrained_rows` matches by token; and the switch that freezes
those embeddings.

Formats (``--word_vectors_format``; ``auto`` tells them apart by the first line):

* ``word2vec``: text, a header line ``<count> <dimension>``, then one ``<word> <value> ... <value>`` line per word.
  fastText's ``.vec`` files are this format.
* ``word2vec_binary``: the same header, then per word its UTF-8 bytes, a space and ``dimension`` little-endian
  float32 values (the original word2vec ``-binary 1`` output; gensim's ``binary=True``).
* ``glove``: text lines like ``word2vec``'s without the header; the first line sets the dimension.

The readers stream the file and keep only the words asked for (a model's vocabulary and its lowercase forms), so a
file of millions of words costs the memory of the rows used. A malformed file (a line with the wrong number of
values, a value that is not a finite number, a header the file does not match) raises a ValueError naming the file
and the line (the word's position, in the binary format).
"""

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

FORMATS = ("auto", "word2vec", "word2vec_binary", "glove")
# The bytes of a line of numbers: the first vector of a text file has only these, a binary one almost never.
NUMBER_TEXT_BYTES = frozenset(b"0123456789+-.eEinfaINFA \t\r\n")


def detect_format(path: str) -> str:
    """``word2vec``, ``word2vec_binary`` or ``glove``: a first line of two integers is a word2vec header, then the
    first vector tells text from binary; any other first line is GloVe's first word."""
    with _open(path) as file:
        head = file.read(1 << 16)
    first, _, rest = head.partition(b"\n")
    fields = first.split()
    if len(fields) != 2 or not all(field.isdigit() for field in fields):
        return "glove"
    word_end = rest.find(b" ")
    first_vector = rest[word_end + 1:word_end + 1 + 4 * int(fields[1])]
    return "word2vec" if set(first_vector) <= NUMBER_TEXT_BYTES else "word2vec_binary"


def vectors_dimension(path: str, format: str = "auto") -> int:
    """The dimension of the vectors of ``path``, from its header (or first line, for GloVe) alone."""
    format = detect_format(path) if format == "auto" else format
    if format == "word2vec_binary":
        with _open(path) as file:
            return _header(file.readline().decode("utf-8", "replace").split(), path)[1]
    with _open_text(path) as lines:
        line = next(lines, "")
    return _header(_fields(line), path)[1] if format == "word2vec" else _glove_dimension(line, path)


def read_word_vectors(path: str, format: str = "auto",
                      keep: Callable[[str], bool] | None = None) -> tuple[list[str], np.ndarray]:
    """The words of ``path`` (those for which ``keep`` is true; default: all) and their vectors, ``(words, dim)``
    float32, in file order.

    Args:
        path: a vectors file, optionally gzipped (``.gz``).
        format: one of `FORMATS`.
        keep: which words to keep (e.g. ``vocabulary.__contains__``); the values of the others are not parsed.

    Raises:
        ValueError: for a missing or malformed file, naming it and the line.
    """
    if format not in FORMATS:
        raise ValueError(f"--word_vectors_format={format!r} is not a vectors format; choose one of {FORMATS}.")
    if not Path(path).is_file():
        raise ValueError(f"--word_vectors {path}: no such file.")
    format = detect_format(path) if format == "auto" else format
    records = _binary_records(path) if format == "word2vec_binary" else _text_records(path, format == "word2vec")
    words, vectors = [], []
    for word, values in records:
        if keep is None or keep(word):
            words.append(word)
            vectors.append(values())
    return words, np.stack(vectors) if vectors else np.zeros((0, vectors_dimension(path, format)), np.float32)


def _open(path: str, mode: str = "rb"):
    return gzip.open(path, mode) if str(path).endswith(".gz") else open(path, mode)


def _open_text(path: str):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8")


def _fields(line: str) -> list[str]:
    """The space-separated fields of a text line (word2vec writes a space after the last value; some files a CR)."""
    return line.rstrip("\r\n").rstrip(" ").split(" ")


def _header(fields: list, path: str) -> tuple[int, int]:
    """``(count, dimension)`` from the fields of a word2vec header line."""
    if len(fields) != 2 or not all(str(field).isdigit() and int(field) > 0 for field in fields):
        raise ValueError(f"{path}, line 1: a word2vec file starts with the header '<count> <dimension>' (two "
                         f"positive integers), got {' '.join(map(str, fields))!r}; a GloVe file has no header: "
                         "pass --word_vectors_format glove (or auto).")
    return int(fields[0]), int(fields[1])


def _glove_dimension(first_line: str, path: str) -> int:
    """The dimension of a GloVe file: the number of values after the word of its first line."""
    dimension = len(_fields(first_line)) - 1
    if dimension < 1:
        raise ValueError(f"{path}, line 1: {first_line.strip()!r} is not a word followed by its vector.")
    return dimension


def _vector(values: list[str] | bytes, path: str, where: str) -> np.ndarray:
    """The float32 vector of the text fields (or float32 bytes) ``values``, refusing a value that is not a finite
    number."""
    try:
        vector = np.frombuffer(values, "<f4") if isinstance(values, bytes) else np.asarray(values, np.float32)
    except ValueError as error:  # numpy names the bad value: "could not convert string to float: 'x'"
        raise ValueError(f"{path}, {where}: {error}.") from None
    if not np.isfinite(vector).all():
        raise ValueError(f"{path}, {where}: a value is not a finite number ({vector[~np.isfinite(vector)][0]}).")
    return vector


def _text_records(path: str, has_header: bool) -> Iterator[tuple[str, Callable[[], np.ndarray]]]:
    """``(word, parse its vector)`` per line of a word2vec text or GloVe file, checking every line's length."""
    count = dimension = None
    number = 0
    with _open_text(path) as lines:
        try:
            for number, line in enumerate(lines, 1):
                fields = _fields(line)
                if number == 1 and has_header:
                    count, dimension = _header(fields, path)
                    continue
                if dimension is None:
                    dimension = _glove_dimension(line, path)
                if len(fields) != dimension + 1:
                    raise ValueError(
                        f"{path}, line {number}: {len(fields) - 1} values after the word {fields[0]!r}, expected "
                        f"{dimension} (the dimension of the {'header' if has_header else 'first line'}).")
                yield fields[0], lambda fields=fields, number=number: _vector(fields[1:], path, f"line {number}")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}, line {number + 1}: not UTF-8 text ({error.reason}); a binary word2vec file "
                             "needs --word_vectors_format word2vec_binary (or auto).") from None
    if count is not None and number - 1 != count:
        raise ValueError(f"{path}: the header promises {count} words but the file has {number - 1}.")
    if number == 0:
        raise ValueError(f"{path} is empty.")


def _binary_records(path: str) -> Iterator[tuple[str, Callable[[], np.ndarray]]]:
    """``(word, its vector)`` per record of a binary word2vec file."""
    with _open(path) as file:
        count, dimension = _header(file.readline().decode("utf-8", "replace").split(), path)
        for number in range(1, count + 1):
            where = f"word {number} of {count}"
            word = bytearray()
            while (byte := file.read(1)) != b" ":
                if not byte:
                    raise ValueError(f"{path}, {where}: the file ends early (the header promises {count} words).")
                if byte != b"\n" or word:  # a newline may end the previous vector
                    word += byte
            data = file.read(4 * dimension)
            if len(data) < 4 * dimension:
                raise ValueError(f"{path}, {where}: the file ends inside the vector (the header promises {count} "
                                 f"words of {dimension} values).")
            try:
                text = word.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}, {where}: the word {bytes(word)!r} is not UTF-8.") from None
            yield text, lambda data=data, where=where: _vector(data, path, where)
        if file.read().strip():
            raise ValueError(f"{path}: more data after the {count} words the header promises.")


def pretrained_rows(vocab: dict[str, int], pretrained_vocab: dict[str, int]) -> dict[int, int]:
    """Token id -> pretrained row, for the tokens of ``vocab`` found in ``pretrained_vocab``: the same string, or
    else its lowercase form (so "Paris" and "paris" both start from an uncased model's "paris"). A leading
    SentencePiece "▁" is dropped first, so word-initial BPE pieces find whole words."""
    rows = {}
    for token, i in vocab.items():
        for candidate in _candidates(token):
            if candidate in pretrained_vocab:
                rows[i] = pretrained_vocab[candidate]
                break
    return rows


def _candidates(token: str) -> tuple[str, str]:
    """The strings a token's pretrained row is looked up by, best first (see `pretrained_rows`)."""
    bare = token[1:] if token.startswith("\u2581") and len(token) > 1 else token
    return bare, bare.lower()


def input_embeddings(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                     target_tokenizer: PreTrainedTokenizerBase | None = None
                     ) -> dict[str, tuple[torch.nn.Embedding, PreTrainedTokenizerBase]]:
    """The input embedding matrices of ``model`` with the tokenizer of their vocabulary: ``{"embeddings": ...}``,
    or for an encoder-decoder ``{"encoder": (.., tokenizer), "decoder": (.., target_tokenizer or tokenizer)}``
    (the encoder only, when both read one shared matrix)."""
    if not model.config.is_encoder_decoder:
        return {"embeddings": (model.get_input_embeddings(), tokenizer)}
    encoder, decoder = model.get_input_embeddings(), model.get_decoder().get_input_embeddings()
    if decoder.weight is encoder.weight:
        return {"encoder": (encoder, tokenizer)}
    return {"encoder": (encoder, tokenizer), "decoder": (decoder, target_tokenizer or tokenizer)}


def load_word_vectors(model: PreTrainedModel, path: str, format: str, tokenizer: PreTrainedTokenizerBase,
                      target_tokenizer: PreTrainedTokenizerBase | None = None) -> dict[str, dict]:
    """Copy the vectors of ``path`` into the input embeddings of ``model`` (`input_embeddings`): each token takes
    the vector of the same word, or else of its lowercase form (`pretrained_rows`); the other rows keep their
    initialisation. Prints the coverage of each matrix.

    Returns:
        Coverage, matrix name -> ``{"found": rows copied, "tokens": vocabulary size}``.

    Raises:
        ValueError: for a malformed file, or vectors whose dimension is not the embeddings' (naming the option).
    """
    matrices = input_embeddings(model, tokenizer, target_tokenizer)
    wanted = {candidate for _, tokens in matrices.values() for token in tokens.get_vocab()
              for candidate in _candidates(token)}
    words, vectors = read_word_vectors(path, format, keep=wanted.__contains__)
    index = {word: row for row, word in enumerate(words)}
    coverage = {}
    for name, (embeddings, tokens) in matrices.items():
        _check_dimension(model, embeddings, vectors.shape[1], path)
        rows = pretrained_rows(tokens.get_vocab(), index)
        with torch.no_grad():
            embeddings.weight[list(rows)] = torch.from_numpy(vectors[list(rows.values())]).to(embeddings.weight)
        coverage[name] = {"found": len(rows), "tokens": embeddings.num_embeddings}
        print(f"{path}: {'' if name == 'embeddings' else name + ' '}vectors for {len(rows):,} of "
              f"{embeddings.num_embeddings:,} tokens")
    return coverage


def _check_dimension(model: PreTrainedModel, embeddings: torch.nn.Embedding, dimension: int, path: str) -> None:
    if embeddings.embedding_dim == dimension:
        return
    if hasattr(model.config, "embedding_size"):
        change = f"drop embedding_size from --config_overrides (the vectors set it to {dimension})"
    else:
        change = (f"set the Transformer's d_model to {dimension}: --config_overrides d_model={dimension} "
                  f"(--hidden_size {dimension} in run_classification.py and run_ner.py)")
    raise ValueError(f"--word_vectors {path} has {dimension}-dimensional vectors but the model's input embeddings "
                     f"are {embeddings.embedding_dim}-dimensional: {change}.")


def set_embeddings_trainable(model: PreTrainedModel, trainable: bool) -> None:
    """Freeze (``trainable=False``) or unfreeze every input embedding matrix of ``model``: ``requires_grad`` off
    gives them no gradient, so the optimizer, which holds every parameter, leaves them as they are. Output
    embeddings tied to them (a language model's default) follow."""
    for embeddings, _ in input_embeddings(model, None).values():
        embeddings.weight.requires_grad_(trainable)
