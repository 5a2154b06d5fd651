"""Every toolkit reads the same pieces and its output is turned back into text as ours is (benchmarks.peers.data)."""

import gzip
import json

import pytest

from benchmarks.peers import data as peers_data
from hf_seqmodels.tasks import translation

PAIRS = [("A man\xa0in a blue shirt.", "Ein Mann\xa0in einem blauen Hemd."),
         ("Two dogs\tplay in the snow!", "Zwei Hunde spielen im Schnee!"),
         ("A girl climbs a wooden playhouse.", "Ein Mädchen klettert in ein Spielhaus aus Holz."),
         ("", "Leer.")]


def write_split(path, pairs):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"en": en, "de": de}) + "\n" for en, de in pairs)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("peers")
    for split in ("train", "validation", "test"):
        write_split(folder / f"{split}.jsonl.gz", PAIRS)
    data_args = translation.DataArguments(
        dataset_name=None, train_file=str(folder / "train.jsonl.gz"), validation_file=str(folder /
                                                                                          "validation.jsonl.gz"),
        test_file=str(folder / "test.jsonl.gz"), vocab_size=120)
    return peers_data.prepare(folder / "out", data_args)


def test_pieces_round_trip_to_the_raw_text(prepared):
    tokenizer = prepared.tokenizer()
    for split in peers_data.SPLITS:
        for lang in ("en", "de"):
            raw, pieces = prepared.lines(split, lang), prepared.lines(split, lang, pieces=True)
            assert len(raw) == len(pieces)
            for text, line in zip(raw, pieces):
                assert all(piece and not any(c.isspace() for c in piece) for piece in line.split(" ") if line)
                assert peers_data.detokenize(tokenizer, line) == text
                # the pieces are the ids our model reads (less the eos the tokenizer appends)
                ids = [tokenizer.convert_tokens_to_ids(peers_data.unescape(piece)) for piece in line.split()]
                assert ids + [tokenizer.eos_token_id] == tokenizer(text)["input_ids"]


def test_empty_training_pairs_are_dropped_as_ours_drops_them(prepared):
    assert prepared.lines("train", "en") == [en for en, _ in PAIRS if en]
    assert prepared.lines("test", "de") == [de for _, de in PAIRS]  # every test sentence is translated
    stats = prepared.stats()
    assert stats["train"]["sentences"] == 3 and stats["test"]["sentences"] == 4


def test_vocabulary_files_follow_the_tokenizer(prepared):
    tokenizer = prepared.tokenizer()
    tokens = [peers_data.unescape(line) for line in prepared.vocab.read_text(encoding="utf-8").splitlines()]
    assert tokens == sorted(tokenizer.get_vocab(), key=tokenizer.get_vocab().get)
    counted = dict(line.split("\t") for line in prepared.vocab_counts.read_text(encoding="utf-8").splitlines())
    assert set(map(peers_data.unescape, counted)) == set(tokens) - set(tokenizer.all_special_tokens)
    pieces = [piece for lang in ("en", "de") for line in prepared.lines("train", lang, pieces=True)
              for piece in line.split()]
    assert {piece: str(pieces.count(piece)) for piece in set(pieces)}.items() <= counted.items()


def test_mean_pieces_counts_the_tokenizers_pieces(prepared):
    tokenizer = prepared.tokenizer()
    texts = prepared.lines("test", "de")
    pieces = prepared.lines("test", "de", pieces=True)
    assert peers_data.mean_pieces(tokenizer, texts) == sum(len(line.split()) for line in pieces) / len(pieces)


def test_outputs_lose_special_tokens_as_ours_do(prepared):
    tokenizer = prepared.tokenizer()
    pieces = peers_data.pretokenize(tokenizer, "Zwei Hunde")
    assert peers_data.detokenize(tokenizer, f"<unk> {pieces} </s>") == tokenizer.decode(
        tokenizer(["Zwei Hunde"])["input_ids"][0], skip_special_tokens=True) == "Zwei Hunde"
