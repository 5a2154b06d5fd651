"""train_word_vectors.py end to end on a slice of SST-2: the file it writes is what gensim trained (read back by
gensim), reproducible, and the vectors then start (and, frozen, stay) the embeddings of run_classification.py."""

import numpy as np
import pytest
from gensim.models import KeyedVectors
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from hf_seqmodels.cards import render_card

from tests.scripts.test_run_classification_ner import TINY, script

VECTORS = ["--dataset_name", "sst2", "--text_column_name", "sentence", "--max_train_samples", "60",
           "--vector_size", "16", "--min_count", "1", "--epochs", "1", "--neighbours_of", "film", "zzz",
           "--analogy", "good", "bad", "funny"]


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vectors")
    results = script("train_word_vectors").main([*VECTORS, "--output_file", str(folder / "sst2.vec"),
                                                 "--binary_file", str(folder / "sst2.bin")])
    return folder, results


def test_the_vectors_file_holds_what_gensim_trained(vectors_file, capsys):
    folder, results = vectors_file
    text = KeyedVectors.load_word2vec_format(str(folder / "sst2.vec"))
    binary = KeyedVectors.load_word2vec_format(str(folder / "sst2.bin"), binary=True)
    assert text.index_to_key == binary.index_to_key and len(text) == results["vocab_size"]
    np.testing.assert_allclose(text.vectors, binary.vectors, atol=1e-6)  # text keeps 8 significant digits
    assert [word for word, _ in results["neighbours"]["film"]] == [w for w, _ in binary.most_similar("film", topn=5)]
    assert "zzz" not in results["neighbours"]
    again = script("train_word_vectors").main([*VECTORS, "--output_file", str(folder / "again.vec")])
    assert again["vocab_size"] == results["vocab_size"]
    assert (folder / "again.vec").read_bytes() == (folder / "sst2.vec").read_bytes()  # seeded, one worker


def test_run_classification_starts_from_the_vectors_and_keeps_them_frozen(vectors_file, tmp_path):
    folder, _ = vectors_file
    out = tmp_path / "out"
    results = script("run_classification").main([
        "--output_dir", str(out), "--max_train_samples", "32", "--max_eval_samples", "16", *TINY,
        "--tokenizer_type", "word", "--word_vectors", str(folder / "sst2.vec"), "--freeze_embeddings"])
    vectors = KeyedVectors.load_word2vec_format(str(folder / "sst2.vec"))
    tokenizer = AutoTokenizer.from_pretrained(out)
    embeddings = AutoModelForSequenceClassification.from_pretrained(out).get_input_embeddings().weight.detach()
    assert embeddings.shape[1] == vectors.vector_size  # --embedding_size 16 gave way to the vectors' size
    found = {}  # token id -> the word whose vector it takes: the token itself, else its lowercase form
    for token, i in tokenizer.get_vocab().items():
        word = next((form for form in (token, token.lower()) if form in vectors.key_to_index), None)
        if word is not None:
            found[i] = word
    assert results["word_vectors_coverage"] == {"embeddings": {"found": len(found), "tokens": len(tokenizer)}}
    assert len(found) > len(tokenizer) // 2
    for i, word in found.items():  # the trained model still holds the vectors: frozen
        np.testing.assert_array_equal(embeddings[i].numpy(), vectors[word])
    assert results["arguments"]["freeze_embeddings"] and results["arguments"]["word_vectors"] == str(
        folder / "sst2.vec")
    assert "started from the word vectors sst2.vec" in str(render_card(results))
