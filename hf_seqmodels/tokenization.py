"""Train `tokenizers` tokenizers and wrap them as `PreTrainedTokenizerFast`.

The result has pad/unk/bos/eos set, so ``save_pretrained`` writes ``tokenizer.json`` and
``AutoTokenizer.from_pretrained`` loads it back with the same ids.

Kinds:
* ``"word"``: whitespace-separated words (``WordLevel``). Right for PTB, which is already tokenized and has
  ``<unk>``; the ``vocab_size`` most frequent words are kept, the rest map to ``unk``.
* ``"bpe"``: byte-pair encoding over ``Metaspace`` pre-tokens (SentencePiece style: "▁" marks a word start,
  so decoding restores the spaces).
* ``"wordpiece"``: BERT-style WordPiece (``##`` marks a word continuation) over ``BertPreTokenizer`` words.
"""

from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

DEFAULT_SPECIAL_TOKENS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}
KINDS = ("word", "bpe", "wordpiece")


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
    if kind == "word":
        tokenizer = Tokenizer(models.WordLevel(unk_token=unk))
        tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        trainer = trainers.WordLevelTrainer(**options)
    elif kind == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=unk))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(**options)
    elif kind == "wordpiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token=unk))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(**options)
    else:
        raise ValueError(f"Unknown tokenizer kind {kind!r}; valid options: {KINDS}.")
    tokenizer.train_from_iterator(texts, trainer)
    if kind == "word":
        # WordLevelTrainer gives a special token that also occurs in the data (PTB's "<unk>") a second id and
        # leaves unused ids behind (huggingface/tokenizers#1616): renumber, special tokens first.
        trained = tokenizer.get_vocab(with_added_tokens=False)
        words = [word for word in sorted(trained, key=trained.get) if word not in tokens]
        tokenizer.model = models.WordLevel({word: i for i, word in enumerate(tokens + words)}, unk_token=unk)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **special_tokens)
