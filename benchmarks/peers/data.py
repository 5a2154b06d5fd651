"""The data every toolkit gets: the same Multi30k rows, cut into the same subword pieces.

The main job (`scripts/run_translation.py`) trains a joint BPE tokenizer on the training rows
(`translation.train_tokenizers`); the same call here gives the same tokenizer (BPE training is deterministic,
`tokenization.REPRODUCIBLE_KINDS`). Every sentence is written as its pieces separated by spaces, so JoeyNMT and eole
read exactly the tokens our model reads (they split on spaces and learn nothing of their own); their outputs are
turned back into text by the same tokenizer (`detokenize`), as our `generate()` outputs are.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from transformers import PreTrainedTokenizerFast

from hf_seqmodels.tasks import translation

from .pieces import detokenize as text_of
from .pieces import escape, unescape  # noqa: F401  (the peers' escaping, read here by the tests and callers)
from .pieces import pretokenize as pieces_of

SPLITS = {"train": "train", "validation": "valid", "test": "test"}  # ours -> the file stem the peers read


def pretokenize(tokenizer: PreTrainedTokenizerFast, text: str) -> str:
    """``text`` as its subword pieces separated by single spaces (no special tokens), whitespace inside a piece
    escaped (`pieces.pretokenize`, the decoding servers' transform too)."""
    return pieces_of(tokenizer.backend_tokenizer, text)


def detokenize(tokenizer: PreTrainedTokenizerFast, pieces: str) -> str:
    """Text from space-separated pieces, as our `translate` decodes a generated sequence: special tokens (``<unk>``
    included) dropped, the tokenizer's decoder restoring the spaces (`pieces.detokenize`)."""
    return text_of(tokenizer.backend_tokenizer, pieces, tokenizer.unk_token)


def mean_pieces(tokenizer: PreTrainedTokenizerFast, texts: list[str]) -> float:
    """The mean number of pieces of ``texts``: how long the translations a decoding speed was measured on are."""
    return sum(len(tokenizer.tokenize(text)) for text in texts) / max(1, len(texts))


@dataclass
class PreparedData:
    """Where `prepare` wrote the data: ``folder/<stem>.<lang>`` raw and ``folder/<stem>.tok.<lang>`` pieces, for
    the stems of `SPLITS`; ``vocab.txt`` (every token in id order, specials first) and ``vocab_counts.txt``
    (``piece<TAB>count`` on the training rows, no specials); the tokenizer in ``tokenizer/``."""

    folder: Path
    source_lang: str
    target_lang: str

    def raw(self, split: str, lang: str) -> Path:
        return self.folder / f"{SPLITS[split]}.{lang}"

    def pieces(self, split: str, lang: str) -> Path:
        return self.folder / f"{SPLITS[split]}.tok.{lang}"

    def prefix(self, split: str) -> Path:
        """The path JoeyNMT's plain datasets take (it appends ``.<lang>``)."""
        return self.folder / f"{SPLITS[split]}.tok"

    @property
    def vocab(self) -> Path:
        return self.folder / "vocab.txt"

    @property
    def vocab_counts(self) -> Path:
        return self.folder / "vocab_counts.txt"

    @property
    def tokenizer_dir(self) -> Path:
        return self.folder / "tokenizer"

    def tokenizer(self) -> PreTrainedTokenizerFast:
        return translation.load_tokenizers(self.tokenizer_dir).target

    def lines(self, split: str, lang: str, pieces: bool = False) -> list[str]:
        path = self.pieces(split, lang) if pieces else self.raw(split, lang)
        return path.read_text(encoding="utf-8").splitlines()

    def stats(self) -> dict:
        return json.loads((self.folder / "stats.json").read_text())


def prepare(folder: Path, data_args: translation.DataArguments) -> PreparedData:
    """Export the splits ``data_args`` loads (the main job's rows) as text and pieces into ``folder``, with the
    vocabulary and tokenizer (see `PreparedData`). A pair with an empty side is dropped from the training file, as
    `translation.tokenize_pairs` drops it for our model; validation and test keep every row, so that every
    toolkit translates every test sentence."""
    folder.mkdir(parents=True, exist_ok=True)
    src, tgt = data_args.source_lang, data_args.target_lang
    raw = data_args.load()
    tokenizers = translation.train_tokenizers(raw["train"], src, tgt, data_args.vocab_size, joint=True,
                                              kinds=data_args.tokenizer_types())
    tokenizer = tokenizers.target
    prepared = PreparedData(folder, src, tgt)
    counts = Counter()
    stats = {}
    for split in SPLITS:
        rows = [(row[src].strip(), row[tgt].strip()) for row in raw[split]]
        pieces = [(pretokenize(tokenizer, s), pretokenize(tokenizer, t)) for s, t in rows]
        if split == "train":
            kept = [i for i, (s, t) in enumerate(pieces) if s and t]
            rows, pieces = [rows[i] for i in kept], [pieces[i] for i in kept]
            for s, t in pieces:
                counts.update(s.split())
                counts.update(t.split())
        for side, lang in enumerate((src, tgt)):
            prepared.raw(split, lang).write_text("".join(f"{r[side]}\n" for r in rows), encoding="utf-8")
            prepared.pieces(split, lang).write_text("".join(f"{p[side]}\n" for p in pieces), encoding="utf-8")
        # Source tokens as our model reads them: the pieces and the eos.
        stats[split] = {"sentences": len(rows),
                        "source_tokens": sum(len(s.split()) + 1 for s, _ in pieces),
                        "target_tokens": sum(len(t.split()) + 1 for _, t in pieces),
                        "longest_pieces": max(len(piece.split()) for pair in pieces for piece in pair)}
    vocabulary = tokenizer.get_vocab()
    prepared.vocab.write_text("".join(f"{escape(token)}\n" for token in sorted(vocabulary, key=vocabulary.get)),
                              encoding="utf-8")
    specials = set(tokenizer.all_special_tokens)
    prepared.vocab_counts.write_text(
        "".join(f"{escape(token)}\t{counts[escape(token)]}\n" for token in sorted(vocabulary, key=vocabulary.get)
                if token not in specials), encoding="utf-8")
    tokenizers.save_pretrained(prepared.tokenizer_dir)
    stats["vocab_size"] = len(tokenizer)
    (folder / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return prepared
