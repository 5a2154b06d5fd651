"""Train `tokenizers` tokenizers and wrap them as `PreTrainedTokenizerFast`.

The result has pad/unk/bos/eos set, so ``save_pretrained`` writes ``tokenizer.json`` and
``AutoTokenizer.from_pretrained`` loads it back with the same ids.

Kinds:
* ``"word"``: whitespace-separated words (``WordLevel``). Right for PTB, which is already tokenized and has
  ``<unk>``; the ``vocab_size`` most frequent words are kept, the rest map to ``unk``. Every word decodes with
  the space before it, as GPT-2's tokens carry theirs: ``decode`` of ``the cat`` is `` the cat``. A decode that
  continues a text then keeps the space between them: the ``text-generation`` pipeline returns the prompt
  followed by the decoded new tokens, and without the space they would be glued to the prompt's last word.
* ``"bpe"``: byte-pair encoding over ``Metaspace`` pre-tokens (SentencePiece style: "▁" marks a word start,
  so decoding restores the spaces).
* ``"wordpiece"``: BERT-style WordPiece (``##`` marks a word continuation) over ``BertPreTokenizer`` words, with
  BERT's CJK handling: every Chinese/Japanese/Korean ideograph is a word of its own (``BertNormalizer``, case and
  accents kept). Decoding joins the words with spaces, except next to a CJK character or CJK punctuation: a Chinese
  sentence decodes back to itself, without the spaces BERT's own Chinese tokenizer leaves between characters.
* ``"unigram"``: a SentencePiece-style unigram language model over ``Metaspace`` pre-tokens (as Marian's
  SentencePiece vocabularies; a text without spaces, such as Chinese, is one pre-token that the model segments).
* ``"char"``: one token per character, spaces included (the ``vocab_size`` most frequent characters; the rest map
  to ``unk``); decoding concatenates them.

The same texts give byte-identical tokenizer files in every process (see `_continuation_tokens`), except with
``"unigram"``: its trainer walks hash maps whose order changes from process to process, and the vocabulary it keeps
differs slightly from run to run (`REPRODUCIBLE_KINDS` are the others).
"""

import json
import unicodedata
from collections.abc import Callable, Iterable
from itertools import accumulate
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

# The files a tokenizer's save_pretrained may write.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "vocab.json",
                   "merges.txt", "added_tokens.json", "chat_template.jinja")

DEFAULT_SPECIAL_TOKENS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}
KINDS = ("word", "bpe", "wordpiece", "unigram", "char")
REPRODUCIBLE_KINDS = ("word", "bpe", "wordpiece", "char")
# The largest tokenizer.json a vocabulary of n tokens can have: BYTES_PER_TOKEN * n + SLACK_BYTES. A vocabulary
# entry takes about 20 bytes in it (a word-level or unigram entry, or a BPE token with its merge; an added special
# token about 150), and its other parts (normalizer, pre-tokenizer, a SentencePiece character map) less than a MB.
BYTES_PER_TOKEN, SLACK_BYTES = 1024, 4 * 2**20
# CJK ideographs and CJK / full-width punctuation: no space is written next to them when decoding WordPiece.
CJK = r"\p{Han}\u3000-\u303f\uff00-\uffef"


def train_tokenizer(
    texts: Iterable[str],
    kind: str = "word",
    vocab_size: int = 30000,
    min_frequency: int = 0,
    special_tokens: dict[str, str] | None = None,
) -> PreTrainedTokenizerFast:
    """Train a tokenizer on ``texts``.

    Args:
        texts: the training texts (any iterable of strings, e.g. ``dataset["sentence"]``).
        kind: one of ``KINDS`` (see the module docstring).
        vocab_size: the largest vocabulary, special tokens included.
        min_frequency: tokens seen fewer times are left out of the vocabulary.
        special_tokens: ``PreTrainedTokenizerFast`` attribute -> token, e.g. ``{"eos_token": "</s>"}``;
            ``DEFAULT_SPECIAL_TOKENS`` when None. ``unk_token`` is required. They get the first ids, in order.
    """
    special_tokens = dict(DEFAULT_SPECIAL_TOKENS if special_tokens is None else special_tokens)
    if "unk_token" not in special_tokens:
        raise ValueError(f"special_tokens must include 'unk_token', got {special_tokens}.")
    unk, tokens = special_tokens["unk_token"], list(special_tokens.values())
    if vocab_size <= len(tokens):
        raise ValueError(f"vocab_size (--vocab_size) must be larger than the {len(tokens)} special tokens {tokens}, "
                         f"got {vocab_size}.")
    options = {"vocab_size": vocab_size, "min_frequency": min_frequency, "special_tokens": tokens}
    if kind in ("word", "char"):
        tokenizer = Tokenizer(models.WordLevel(unk_token=unk))
        tokenizer.pre_tokenizer = (pre_tokenizers.WhitespaceSplit() if kind == "word"
                                   else pre_tokenizers.Split(Regex("."), behavior="isolated"))
        tokenizer.decoder = word_decoder() if kind == "word" else decoders.Fuse()
        trainer = trainers.WordLevelTrainer(**options)
    elif kind == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=unk))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(**options)
    elif kind == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=tokens, unk_token=unk)
    elif kind == "wordpiece":
        texts = list(texts)
        tokenizer = _wordpiece(models.WordPiece(unk_token=unk))
        continuations = _continuation_tokens(texts, tokenizer)
        trainer = trainers.WordPieceTrainer(**{**options, "special_tokens": tokens + continuations})
    else:
        raise ValueError(f"Unknown tokenizer kind {kind!r}; valid options: {KINDS}.")
    tokenizer.train_from_iterator(texts, trainer)
    if kind in ("word", "char"):
        # WordLevelTrainer gives a special token that also occurs in the data (PTB's "<unk>") a second id and
        # leaves unused ids behind (huggingface/tokenizers#1616): renumber, special tokens first.
        trained = tokenizer.get_vocab(with_added_tokens=False)
        words = [word for word in sorted(trained, key=trained.get) if word not in tokens]
        tokenizer.model = models.WordLevel({word: i for i, word in enumerate(tokens + words)}, unk_token=unk)
    if kind == "wordpiece":  # the same vocabulary, without the continuations' special-token marking
        tokenizer = _wordpiece(models.WordPiece(tokenizer.get_vocab(with_added_tokens=False), unk_token=unk))
        tokenizer.add_special_tokens(tokens)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special_tokens)


def word_decoder() -> decoders.Decoder:
    """The decoder of a word-level tokenizer: every word with the space before it (see the module docstring)."""
    return decoders.Replace(Regex("^"), " ")


def _wordpiece(model: models.WordPiece) -> Tokenizer:
    """A BERT-style tokenizer around ``model``: BERT's normalizer (CJK ideographs split off; case and accents kept),
    its pre-tokenizer, and the WordPiece decoder without spaces next to CJK characters (see the module docstring)."""
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.BertNormalizer(handle_chinese_chars=True, strip_accents=False, lowercase=False)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # Fuse first: a Replace decoder sees one token at a time, and the fused text lets it look at both neighbours.
    tokenizer.decoder = decoders.Sequence([
        decoders.WordPiece(), decoders.Fuse(),
        decoders.Replace(Regex(f"(?<=[{CJK}]) | (?=[{CJK}])"), ""),
        # Mary's, well-known, 5,000
        decoders.Replace(Regex(r"(?<=\w) (?=['’-] ?\w)|(?<=\w['’-]|\w ['’-]|\d[,.]) (?=\w)"), ""),
    ])
    return tokenizer


def _continuation_tokens(texts: list[str], tokenizer: Tokenizer) -> list[str]:
    """The ``##c`` tokens that WordPiece training makes: each character that continues a pre-tokenized word, sorted.

    The trainer numbers these tokens in the order it walks its hash map of words, which changes from process to
    process, and it breaks ties between equally frequent merges by the lower ids: the same texts gave another
    vocabulary in every run. Passed to the trainer as leading special tokens, they get fixed ids.
    """
    pieces = {piece for text in texts for piece in tokenizer.normalizer.normalize_str(text).split(" ")}
    return sorted({f"##{char}" for piece in pieces for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(piece)
                   for char in word[1:]})


def save_tokenizer(tokenizer, folder) -> None:
    """``tokenizer.save_pretrained(folder)`` without the truncation and padding that its last call left on a fast
    tokenizer, which ``tokenizer.json`` would record: the files then depend on the training alone, not on whether
    ``datasets`` found the tokenized data in its cache and skipped the calls."""
    if (backend := getattr(tokenizer, "backend_tokenizer", None)) is not None:
        backend.no_truncation()
        backend.no_padding()
    tokenizer.save_pretrained(folder)


def check_tokenizer_size(folder, option: str) -> None:
    """Raise a ValueError naming ``option``, the tokenizer.json of ``folder``, its size and the config's vocab_size
    when that file is larger than a tokenizer of the vocabulary the model's config.json declares can be
    (`BYTES_PER_TOKEN` per token of the larger of its `vocab_size` and `source_vocab_size`, plus `SLACK_BYTES`). The
    config is ``folder``'s, else its parent's (a checkpoint keeps its tokenizer in ``tokenizer/``, a translation model
    its source tokenizer in ``source_tokenizer/``); without one, or without a tokenizer.json, nothing is checked. Only
    the file's size is read: a tokenizer.json of 10 million entries is refused at once, where loading it takes a
    minute and gigabytes before the model says its vocabulary differs."""
    folder = Path(folder)
    tokenizer_file = folder / "tokenizer.json"
    config_file = next((path for path in (folder / "config.json", folder.parent / "config.json") if path.is_file()),
                       None)
    if config_file is None or not tokenizer_file.is_file():
        return
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError):
        return  # loading the model names a damaged config.json
    sizes = {name: config.get(name) for name in ("vocab_size", "source_vocab_size")} if isinstance(config, dict) else {}
    sizes = {name: size for name, size in sizes.items() if isinstance(size, int) and not isinstance(size, bool)}
    if not sizes:
        return
    name, vocab_size = max(sizes.items(), key=lambda item: item[1])
    size, limit = tokenizer_file.stat().st_size, BYTES_PER_TOKEN * max(vocab_size, 0) + SLACK_BYTES
    if size > limit:
        raise ValueError(
            f"{option}: {tokenizer_file} is {size / 2**20:,.1f} MB, more than a tokenizer of the {vocab_size} tokens "
            f"that {config_file} declares ({name}={vocab_size}) can take ({limit / 2**20:,.1f} MB: "
            f"{BYTES_PER_TOKEN} bytes a token and {SLACK_BYTES // 2**20} MB for the rest); it was not loaded. It "
            f"holds another, far larger vocabulary than the model's: pass the tokenizer the model was trained with."
        )


def load_tokenizer(name_or_path, option: str, load: Callable = AutoTokenizer.from_pretrained, **kwargs):
    """``load(name_or_path, **kwargs)`` (``AutoTokenizer.from_pretrained`` by default), the tokenizer that ``option``
    names; whatever stops it (no tokenizer there, a damaged or empty file) is a ValueError naming the option, the
    folder and the tokenizer files it holds. A tokenizer.json far larger than the model's vocabulary is refused
    before it is loaded (`check_tokenizer_size`)."""
    check_tokenizer_size(name_or_path, option)
    try:
        return load(name_or_path, **kwargs)
    except Exception as error:  # noqa: BLE001 - a folder's files can fail in the tokenizers library in any way
        folder = Path(name_or_path)
        found = sorted(p.name for p in folder.iterdir() if p.name in TOKENIZER_FILES) if folder.is_dir() else []
        holds = f"it holds {', '.join(found)}" if found else "it holds no tokenizer file"
        first_line = (str(error).strip().splitlines() or [""])[0]
        raise ValueError(f"{option}: no tokenizer loads from {name_or_path} ({holds}; {type(error).__name__}: "
                         f"{first_line}). Pass a folder with a complete tokenizer, as tokenizer.save_pretrained "
                         f"writes it (tokenizer.json and tokenizer_config.json).") from error


# How `piece_labels` shows a piece that continues a word, and a piece that is only a space.
CONTINUATION_MARK, SPACE_PIECE = "…", "␣"


def piece_texts(tokenizer, ids: list[int]) -> list[str]:
    """The text each token of ``ids`` adds to ``tokenizer.decode(ids)`` (special tokens kept), with the whitespace
    before it: ``"".join(piece_texts(tokenizer, ids)) == tokenizer.decode(ids)``, whatever marks the tokenizer's
    pieces carry (``▁``, ``##``) or which spaces its decoder removes.

    Read from the decodings of growing prefixes: piece ``k`` ends where the non-whitespace characters of the first
    ``k + 1`` pieces end in the whole decoded text (a decoder may drop a space only once the next piece shows it should,
    as WordPiece's does in "don't", so the characters, not the prefixes' texts, are compared)."""
    if not ids:
        return []
    text = tokenizer.decode(ids)
    visible = [i + 1 for i, character in enumerate(text) if not character.isspace()]  # where each one ends
    counts = [_common_prefix(_without_spaces(tokenizer.decode(ids[:k])), _without_spaces(text))
              for k in range(1, len(ids))]
    ends = [visible[count - 1] if count else 0 for count in accumulate(counts, max)] + [len(text)]
    return [text[start:end] for start, end in zip([0, *ends], ends)]


def piece_labels(tokenizer, ids: list[int]) -> list[str]:
    """How a reader sees each token of ``ids``: the text it adds to the decoded sentence (`piece_texts`) without the
    space before it; a piece that continues a word (glued to a letter or digit before it, in a script that spaces
    its words) starts with `CONTINUATION_MARK`, and a piece that is only a space is `SPACE_PIECE`. "▁Kat", "zen",
    "▁sit", "zen", "." read "Kat", "…zen", "sit", "…zen", "."; a Chinese sentence's pieces read as written."""
    texts = piece_texts(tokenizer, ids)
    decoded = "".join(texts)
    starts = accumulate(map(len, texts[:-1]), initial=0)
    return [_piece_label(text, decoded[start - 1] if start else " ") for text, start in zip(texts, starts)]


def _piece_label(text: str, previous: str) -> str:
    """`piece_labels`' label of a piece whose text is ``text``, after the character ``previous``."""
    if not text.strip():
        return SPACE_PIECE
    return (CONTINUATION_MARK if _continues_word(previous, text[0]) else "") + text.strip()


def _continues_word(previous: str, first: str) -> bool:
    """Whether a piece starting with ``first`` right after ``previous`` (no space between) is inside a word: both are
    letters or digits of a script with spaces between its words (East Asian wide characters are words or syllables
    of their own)."""
    return all(character.isalnum() and unicodedata.east_asian_width(character) not in "WF"
               for character in (previous, first))


def _without_spaces(text: str) -> str:
    return "".join(text.split())


def _common_prefix(first: str, second: str) -> int:
    """The length of the longest common prefix of the two strings."""
    return next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
