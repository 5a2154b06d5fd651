"""hf_seqmodels.data.pretrained_embeddings: every format reads back what gensim wrote, a malformed file is refused naming its
line, tokens take the vector of the same word (else of its lowercase form) with the coverage counted, and
--freeze_embeddings / --unfreeze_embeddings_after_epochs decide whether the train loop changes the embeddings."""

import gzip

import datasets
import numpy as np
import pytest
import torch
from gensim.models import KeyedVectors
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, default_data_collator

from hf_seqmodels import RecurrentConfig, RecurrentForCausalLM
from hf_seqmodels.cards import render_card
from hf_seqmodels.data.pretrained_embeddings import (
    detect_format,
    load_word_vectors,
    read_word_vectors,
    vectors_dimension,
)
from hf_seqmodels.data.tokenization import train_tokenizer
from hf_seqmodels.tasks import labelling, translation
from hf_seqmodels.training.loop import TrainingArguments, make_accelerator, train
from tests.cards.runs import ARGUMENTS, RUN

WORDS = ["the", "Cat", "cat", "sat", "dog", "naïve", "</s>"]
WRITERS = {  # format -> gensim's save_word2vec_format options
    "word2vec": {},
    "word2vec_binary": {"binary": True},
    "glove": {"write_header": False},
}


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # make_accelerator leaves the thread count alone


@pytest.fixture
def reference() -> KeyedVectors:
    vectors = KeyedVectors(vector_size=5)
    vectors.add_vectors(WORDS, np.random.default_rng(0).normal(size=(len(WORDS), 5)).astype(np.float32))
    return vectors


def write(vectors: KeyedVectors, path, format: str) -> str:
    vectors.save_word2vec_format(str(path), **WRITERS[format])
    return str(path)


@pytest.mark.parametrize("format", WRITERS)
@pytest.mark.parametrize("gz", [False, True])
def test_each_format_reads_back_what_gensim_wrote(tmp_path, reference, format, gz):
    path = write(reference, tmp_path / "vectors", format)
    if gz:
        with open(path, "rb") as file, gzip.open(f"{path}.gz", "wb") as packed:
            packed.write(file.read())
        path = f"{path}.gz"
    assert detect_format(path) == format
    assert vectors_dimension(path) == 5
    for given in ("auto", format):
        words, vectors = read_word_vectors(path, given)
        assert words == WORDS
        np.testing.assert_array_equal(vectors, reference.vectors)
    words, vectors = read_word_vectors(path, keep={"dog", "Cat"}.__contains__)
    assert words == ["Cat", "dog"]
    np.testing.assert_array_equal(vectors, reference.vectors[[1, 4]])


def lines_of(reference: KeyedVectors, tmp_path) -> list[str]:
    return open(write(reference, tmp_path / "good.txt", "word2vec"), encoding="utf-8").read().splitlines()


@pytest.mark.parametrize("line, change, message", [
    (3, lambda line: line + " 0.5", "line 3: 6 values after the word 'Cat', expected 5"),
    (4, lambda line: " ".join(line.split()[:-1]), "line 4: 4 values"),
    (5, lambda line: line.replace(line.split()[2], "abc"), "line 5: could not convert string to float: 'abc'"),
    (2, lambda line: line.replace(line.split()[1], "nan"), "line 2: a value is not a finite number"),
    (1, lambda line: "7 five", "line 1: a word2vec file starts with the header"),
])
def test_a_malformed_text_line_is_refused_naming_it(tmp_path, reference, line, change, message):
    lines = lines_of(reference, tmp_path)
    lines[line - 1] = change(lines[line - 1])
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}, {message}"):
        read_word_vectors(str(path), "word2vec")


def test_a_header_the_file_does_not_match_is_refused(tmp_path, reference):
    lines = lines_of(reference, tmp_path)
    path = tmp_path / "short.txt"
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="the header promises 7 words but the file has 6"):
        read_word_vectors(str(path))
    glove = tmp_path / "glove.txt"
    glove.write_text("\n".join(lines[1:3] + [lines[3] + " 1.0"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 3: 6 values .* expected 5 \\(the dimension of the first line\\)"):
        read_word_vectors(str(glove), "glove")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.txt is empty"):
        read_word_vectors(str(empty))
    with pytest.raises(ValueError, match="line 1: '' is not a word followed by its vector"):
        vectors_dimension(str(empty), "glove")


def test_a_truncated_binary_file_is_refused_naming_the_word(tmp_path, reference):
    path = write(reference, tmp_path / "vectors.bin", "word2vec_binary")
    data = open(path, "rb").read()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:-7])
    with pytest.raises(ValueError, match="word 7 of 7: the file ends inside the vector"):
        read_word_vectors(str(cut))


def tokenizer(texts=("the Cat sat", "the cat sat on the Dog", "a naïve Naïve dog")):
    return train_tokenizer(list(texts), "word", vocab_size=100)


def expected_rows(tokens, words: list[str]) -> dict[int, int]:
    """Brute force: each token's row in ``words``, the exact string first, then its lowercase form."""
    rows = {}
    for token, i in tokens.get_vocab().items():
        matches = [words.index(form) for form in (token, token.lower()) if form in words]
        if matches:
            rows[i] = matches[0]
    return rows


def recurrent_lm(vocab_size: int, embedding_size: int = 5) -> RecurrentForCausalLM:
    torch.manual_seed(0)
    return RecurrentForCausalLM(RecurrentConfig(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=6))


def test_tokens_take_the_exact_word_else_its_lowercase_form(tmp_path, reference, capsys):
    path = write(reference, tmp_path / "vectors.txt", "word2vec")
    tokens = tokenizer()
    model = recurrent_lm(len(tokens))
    before = model.get_input_embeddings().weight.detach().clone()
    coverage = load_word_vectors(model, path, "auto", tokens)

    rows = expected_rows(tokens, WORDS)
    vocab = tokens.get_vocab()
    assert rows[vocab["Cat"]] == WORDS.index("Cat") and rows[vocab["cat"]] == WORDS.index("cat")
    assert rows[vocab["Dog"]] == WORDS.index("dog") and rows[vocab["Naïve"]] == WORDS.index("naïve")
    weights = model.get_input_embeddings().weight.detach()
    for i in range(len(tokens)):
        expected = torch.from_numpy(reference.vectors[rows[i]]) if i in rows else before[i]
        torch.testing.assert_close(weights[i], expected, rtol=0, atol=0)
    assert coverage == {"embeddings": {"found": len(rows), "tokens": len(tokens)}}
    assert f"vectors for {len(rows)} of {len(tokens)} tokens" in capsys.readouterr().out


def test_an_encoder_decoder_takes_vectors_for_both_vocabularies(tmp_path, reference):
    path = write(reference, tmp_path / "vectors.txt", "glove")
    source, target = tokenizer(), tokenizer(["le chat", "the dog sat"])
    args = translation.ModelArguments(model_type="transformer", word_vectors=path,
                                      config_overrides="d_model=5,num_heads=1,ffn_dim=8,encoder_layers=1,"
                                                       "decoder_layers=1")
    model = AutoModelForSeq2SeqLM.from_config(args.config(target, source_vocab_size=len(source),
                                                          decoder_start_token_id=target.bos_token_id))
    coverage = args.load_word_vectors(model, source, target)
    assert coverage == {"encoder": {"found": len(expected_rows(source, WORDS)), "tokens": len(source)},
                        "decoder": {"found": len(expected_rows(target, WORDS)), "tokens": len(target)}}
    decoder_rows = expected_rows(target, WORDS)
    dog = target.get_vocab()["dog"]
    torch.testing.assert_close(model.get_decoder().get_input_embeddings().weight[dog].detach(),
                               torch.from_numpy(reference.vectors[decoder_rows[dog]]))


def test_the_vectors_size_the_recurrent_embeddings_and_a_transformer_must_match(tmp_path, reference):
    path = write(reference, tmp_path / "vectors.bin", "word2vec_binary")
    tokens = tokenizer()
    args = labelling.ModelArguments(word_vectors=path, embedding_size=64)
    assert args.config(tokens, embedding_size=64).embedding_size == 5
    transformer = labelling.ModelArguments(model_type="transformer", word_vectors=path, hidden_size=8, num_heads=2)
    model = labelling.make_model(transformer, AutoModelForSequenceClassification, tokens, ["a", "b"])
    with pytest.raises(ValueError, match="5-dimensional vectors .* 8-dimensional: .*--config_overrides d_model=5"):
        transformer.load_word_vectors(model, tokens)


def test_options_that_cannot_go_together_are_refused(tmp_path, reference):
    path = write(reference, tmp_path / "vectors.txt", "word2vec")
    with pytest.raises(ValueError, match="--embeddings_from and --word_vectors"):
        labelling.ModelArguments(word_vectors=path, embeddings_from=str(tmp_path))
    with pytest.raises(ValueError, match="--word_vectors .*: no such file"):
        labelling.ModelArguments(word_vectors=str(tmp_path / "missing.vec"))
    with pytest.raises(ValueError, match="`--word_vectors_format`='fasttext'"):
        labelling.ModelArguments(word_vectors=path, word_vectors_format="fasttext")
    with pytest.raises(ValueError, match="--unfreeze_embeddings_after_epochs needs --freeze_embeddings"):
        TrainingArguments(output_dir=str(tmp_path), unfreeze_embeddings_after_epochs=1)


def train_recording_embeddings(tmp_path, **options) -> tuple[list[torch.Tensor], torch.Tensor, RecurrentForCausalLM]:
    """Train a tiny LM for 2 epochs; returns its embeddings before training and after each epoch, and its LSTM
    weights before training."""
    args = TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, learning_rate=1e-2,
                             num_train_epochs=2, **options)
    accelerator = make_accelerator(args)
    model = recurrent_lm(12)
    ids = torch.randint(0, 12, (12, 6), generator=torch.Generator().manual_seed(0)).tolist()
    data = datasets.Dataset.from_dict({"input_ids": ids, "labels": ids})
    embeddings = model.get_input_embeddings().weight
    snapshots = [embeddings.detach().clone()]
    lstm = next(model.base_model.rnn.parameters()).detach().clone()

    def snapshot(_) -> dict:
        snapshots.append(embeddings.detach().clone())
        return {}

    train(accelerator, model, data, data, default_data_collator, args, evaluate_fn=snapshot)
    return snapshots, lstm, model


def test_frozen_embeddings_stay_as_they_were(tmp_path):
    snapshots, lstm, model = train_recording_embeddings(tmp_path, freeze_embeddings=True)
    assert len(snapshots) == 3
    for after in snapshots[1:]:
        torch.testing.assert_close(after, snapshots[0], rtol=0, atol=0)
    assert not torch.equal(next(model.base_model.rnn.parameters()), lstm)  # the rest trained


def test_unfrozen_embeddings_train_from_that_epoch_on(tmp_path):
    snapshots, _, _ = train_recording_embeddings(tmp_path, freeze_embeddings=True, unfreeze_embeddings_after_epochs=1)
    torch.testing.assert_close(snapshots[1], snapshots[0], rtol=0, atol=0)
    assert not torch.equal(snapshots[2], snapshots[1])
    trained, _, _ = train_recording_embeddings(tmp_path / "trained")
    assert not torch.equal(trained[1], trained[0])


@pytest.mark.parametrize("options, says", [
    ({"freeze_embeddings": True}, "frozen |"),
    ({"freeze_embeddings": True, "unfreeze_embeddings_after_epochs": 2}, "frozen for 2 epoch(s), then fine-tuned |"),
    ({}, "fine-tuned |"),
])
def test_the_card_records_the_vectors_and_the_freezing(options, says):
    arguments = {**ARGUMENTS, "word_vectors": "/data/sst2.vec", **options}
    run = {**RUN, "arguments": arguments, "word_vectors_coverage": {"embeddings": {"found": 18203, "tokens": 20000}}}
    text = str(render_card(run))
    assert "word embeddings started from the vectors of sst2.vec" in text and "128-dimensional" not in text
    assert f"| input embeddings | started from the word vectors sst2.vec (embeddings 18,203 of 20,000 tokens), {says}" \
        in text
