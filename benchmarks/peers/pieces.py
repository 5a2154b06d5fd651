"""The one transform between text and the space-separated pieces every toolkit reads and writes, on a
`tokenizers.Tokenizer` (our tokenizer.json: ``tokenizer.backend_tokenizer`` of the transformers tokenizer, or
``tokenizers.Tokenizer.from_file``).

Standard library only: `data` (our environment, with transformers) cuts the peers' training files with it, and the
decoding servers of the peers (`serve_joeynmt`, `serve_eole`, in environments without transformers or this package)
cut and join the pieces of the sentences they time with it, so that the two are the same transform by construction.
"""

import re

# A few pieces hold whitespace (a tab, a no-break space: the Metaspace pre-tokenizer splits on " " only); the peers
# split lines on any whitespace, so such a character is written as <0xNN> inside its piece.
WHITESPACE = re.compile(r"\s")
ESCAPED = re.compile(r"<0x([0-9A-F]{2,6})>")


def escape(piece: str) -> str:
    return WHITESPACE.sub(lambda match: f"<0x{ord(match.group()):02X}>", piece)


def unescape(piece: str) -> str:
    return ESCAPED.sub(lambda match: chr(int(match.group(1), 16)), piece)


def pretokenize(backend, text: str) -> str:
    """``text`` as its subword pieces separated by single spaces (no special tokens), whitespace inside a piece
    escaped. ``backend``: a `tokenizers.Tokenizer`."""
    return " ".join(map(escape, backend.encode(text, add_special_tokens=False).tokens))


def detokenize(backend, pieces: str, unk_token: str = "<unk>") -> str:
    """Text from space-separated pieces, as our `translate` decodes a generated sequence: special tokens (``<unk>``
    included) dropped, the tokenizer's decoder restoring the spaces; a piece outside the vocabulary reads as
    ``unk_token``, as the transformers tokenizer's ``convert_tokens_to_ids`` reads it."""
    unk = backend.token_to_id(unk_token)
    ids = [backend.token_to_id(unescape(piece)) for piece in pieces.split()]
    return backend.decode([unk if index is None else index for index in ids], skip_special_tokens=True).strip()
