"""Tokenizer training (hf_seqmodels.data.tokenization): ids, special tokens, the save_pretrained round trip, the same
files from the same texts in every process, and the pieces as a reader sees them."""

import os
import re
import subprocess
import sys

import datasets
import pytest
import torch
from transformers import AutoTokenizer, pipeline

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.data.tokenization import (
    CONTINUATION_MARK,
    DEFAULT_SPECIAL_TOKENS,
    KINDS,
    REPRODUCIBLE_KINDS,
    SPACE_PIECE,
    piece_labels,
    piece_texts,
    train_tokenizer,
)

# PTB style: already tokenized, with "<unk>" in the text.
TEXTS = ["the company said <unk> N shares", "the market fell", "<unk> said the market rose N %"] * 3


def test_word_level_ids_are_contiguous_with_special_tokens_first():
    tokenizer = train_tokenizer(TEXTS, "word")
    vocab = tokenizer.get_vocab()
    assert sorted(vocab.values()) == list(range(len(tokenizer)))  # no holes (huggingface/tokenizers#1616)
    assert [tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id] == [0, 1, 2, 3]
    assert len(tokenizer) == len(set(" ".join(TEXTS).split()) | set(DEFAULT_SPECIAL_TOKENS.values()))
    ids = tokenizer("the <unk> zebra said", add_special_tokens=False)["input_ids"]
    assert ids == [vocab["the"], tokenizer.unk_token_id, tokenizer.unk_token_id, vocab["said"]]


def test_word_level_vocab_size_keeps_the_most_frequent_words():
    tokenizer = train_tokenizer(["a a a b b c"], "word", vocab_size=len(DEFAULT_SPECIAL_TOKENS) + 2)
    assert set(tokenizer.get_vocab()) == set(DEFAULT_SPECIAL_TOKENS.values()) | {"a", "b"}


@pytest.mark.parametrize("kind", ["word", "bpe", "wordpiece"])
def test_save_pretrained_round_trip(tmp_path, kind):
    tokenizer = train_tokenizer(TEXTS, kind, vocab_size=60)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "the market said N %"
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    # A word-level token decodes with the space before it (see test_text_generation_pipeline_keeps_the_space).
    assert loaded.decode(loaded(text)["input_ids"]) == (" " + text if kind == "word" else text)
    assert loaded.special_tokens_map == tokenizer.special_tokens_map
    assert loaded.get_vocab() == tokenizer.get_vocab()


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="valid options"):
        train_tokenizer(TEXTS, "sentencepiece")
    with pytest.raises(ValueError, match="unk_token"):
        train_tokenizer(TEXTS, special_tokens={"pad_token": "<pad>"})


@pytest.mark.parametrize("kind, vocab_size", [("word", 0), ("bpe", 4)])
def test_vocab_size_must_leave_room_beyond_the_special_tokens(kind, vocab_size):
    with pytest.raises(ValueError, match=f"must be larger than the 4 special tokens .* got {vocab_size}"):
        train_tokenizer(TEXTS, kind, vocab_size=vocab_size)


TRAIN_IN_A_FRESH_PROCESS = """
import sys
import datasets
from hf_seqmodels.data.tokenization import REPRODUCIBLE_KINDS, train_tokenizer

texts = datasets.load_dataset("json", data_files=sys.argv[1], split="train")["sentence"][:2000]
for kind in REPRODUCIBLE_KINDS:
    train_tokenizer(texts, kind, vocab_size=1000).save_pretrained(f"{sys.argv[2]}/{kind}")
"""


@pytest.mark.slow
def test_the_same_texts_give_byte_identical_tokenizer_files(tmp_path, data_dir):
    """Trained in two processes (hash maps iterate in another order in each), every reproducible kind writes the same
    files."""
    for run in ("first", "second"):
        subprocess.run([sys.executable, "-c", TRAIN_IN_A_FRESH_PROCESS, str(data_dir / "sst2" / "train.jsonl.gz"),
                        str(tmp_path / run)], check=True, env={**os.environ, "HF_DATASETS_OFFLINE": "1"})
    for kind in REPRODUCIBLE_KINDS:
        files = sorted(path.name for path in (tmp_path / "first" / kind).iterdir())
        assert "tokenizer.json" in files
        for name in files:
            first, second = ((tmp_path / run / kind / name).read_bytes() for run in ("first", "second"))
            assert first == second, f"{kind}: {name} differs between two trainings on the same texts"


def test_text_generation_pipeline_keeps_the_space_after_the_prompt():
    """The pipeline returns the prompt + the decoded new tokens: with a word-level tokenizer that is the prompt, a
    space, and the new words separated by spaces (the reference: the ids generate() gives, as vocabulary words)."""
    tokenizer = train_tokenizer(TEXTS, "word")
    config = RecurrentConfig(vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, num_layers=1,
                             pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                             eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = RecurrentForCausalLM(config).eval()
    prompt = "the market said"
    options = {"max_new_tokens": 4, "min_new_tokens": 4, "do_sample": False}
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    new = model.generate(ids, **options)[0, ids.shape[1]:]
    words = tokenizer.convert_ids_to_tokens(new.tolist(), skip_special_tokens=True)
    assert words, "the continuation is all special tokens: pick another seed"
    generator = pipeline("text-generation", model=model, tokenizer=tokenizer)
    assert generator(prompt, **options)[0]["generated_text"] == prompt + " " + " ".join(words)


@pytest.mark.parametrize("kind", ["wordpiece", "unigram", "char", "bpe"])
def test_chinese_and_english_sentences_decode_back_to_themselves(kind, data_dir):
    """Tatoeba's Mandarin (simplified and traditional, CJK punctuation) decodes with no space between characters;
    its English comes back as written (WordPiece: all but a few rows whose spacing its pre-tokenizer cannot know,
    such as quotes with spaces inside)."""
    rows = datasets.load_dataset("json", data_files=str(data_dir / "tatoeba_en_zh" / "train.jsonl.gz"),
                                 split="train").select(range(1500))
    for lang, allowed in (("zh", 0.02), ("en", 0.02)):
        texts = list(rows[lang])
        tokenizer = train_tokenizer(texts, kind, vocab_size=4000)
        decoded = tokenizer.batch_decode(tokenizer(texts)["input_ids"], skip_special_tokens=True)
        changed = [(text, back) for text, back in zip(texts, decoded) if back.strip() != text]
        assert len(changed) <= (allowed * len(texts) if kind == "wordpiece" else 0), changed[:5]
        if lang == "zh":  # and never a space between two ideographs
            assert not any(re.search("[\u4e00-\u9fff] [\u4e00-\u9fff]", back) for back in decoded)


# Sentences for the pieces' labels: subwords, an apostrophe WordPiece's decoder glues back, a decimal comma, a
# hyphen, a Chinese sentence.
PIECE_TEXTS = ["two cats sit on a mat", "Katzen sitzen auf der Matte.", "don't run, it's 3,5 km", "T-shirts sind toll",
               "两只猫坐在垫子上"] * 10


@pytest.mark.parametrize("kind", KINDS)
def test_piece_texts_add_up_to_the_decoded_text(kind):
    tokenizer = train_tokenizer(PIECE_TEXTS, kind, vocab_size=60)
    for text in [*PIECE_TEXTS[:5], "zebras?"]:
        ids = tokenizer(text)["input_ids"] + [tokenizer.eos_token_id]
        assert "".join(piece_texts(tokenizer, ids)) == tokenizer.decode(ids)
        assert len(piece_labels(tokenizer, ids)) == len(ids) and "▁" not in "".join(piece_labels(tokenizer, ids))
    assert piece_texts(tokenizer, []) == piece_labels(tokenizer, []) == []


def marked_continuation(pieces: list[str], i: int, word_start: str, continuation: str) -> bool:
    """Whether the tokenizer's own marks say that piece ``i`` continues a word: it carries the ``continuation`` mark,
    or (tokenizers that mark word starts) neither it nor a bare mark before it starts a word."""
    if continuation:
        return pieces[i].startswith(continuation)
    return i > 0 and not pieces[i].startswith(word_start) and pieces[i - 1] != word_start


@pytest.mark.parametrize("kind, word_start, continuation", [("bpe", "▁", ""), ("unigram", "▁", ""),
                                                            ("wordpiece", "", "##")])
def test_piece_labels_follow_the_tokenizers_own_marks(kind, word_start, continuation):
    """In text of letters and spaces, a label is its piece without the tokenizer's mark, and starts with the
    continuation mark exactly where the piece continues a word by the tokenizer's own marks ("▁" starts a word in
    SentencePiece-style pieces, "##" continues one in WordPiece's)."""
    tokenizer = train_tokenizer(PIECE_TEXTS, kind, vocab_size=60)
    for text in ("Katzen sitzen auf der Matte", "two cats sit on a mat"):
        pieces = tokenizer.tokenize(text)
        expected = [(CONTINUATION_MARK if marked_continuation(pieces, i, word_start, continuation) else "")
                    + (piece.removeprefix(word_start).removeprefix(continuation) or SPACE_PIECE)
                    for i, piece in enumerate(pieces)]
        assert piece_labels(tokenizer, tokenizer.convert_tokens_to_ids(pieces)) == expected
        assert any(label.startswith(CONTINUATION_MARK) for label in expected)  # the text has pieces inside words


def test_piece_labels_of_chinese_characters_and_spaces():
    """A Chinese sentence's pieces carry no continuation mark (its script puts no spaces between words); a piece that
    is only a space shows as one."""
    tokenizer = train_tokenizer(PIECE_TEXTS, "char", vocab_size=60)
    ids = tokenizer("两只猫 a mat")["input_ids"]
    assert piece_labels(tokenizer, ids) == ["两", "只", "猫", SPACE_PIECE, "a", SPACE_PIECE, "m", "…a", "…t"]
