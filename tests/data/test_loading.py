"""Data loading and its checks, LM preprocessing and length-grouped batches (hf_seqmodels.data.loading, .data_checks) on
hand-made examples and the bundled PTB."""

import datasets
import pytest
import torch

from hf_seqmodels.data.checks import check_values
from hf_seqmodels.data.loading import (
    LengthGroupedSampler,
    TokenBatchSampler,
    check_column_files,
    first_rows,
    group_texts,
    load_text_dataset,
    tokenize_for_lm,
)
from hf_seqmodels.data.tokenization import train_tokenizer


def test_group_texts_concatenates_and_drops_the_tail():
    examples = {"input_ids": [[1, 2], [3, 4, 5], [6, 7]], "attention_mask": [[1, 1], [1, 1, 1], [1, 1]]}
    blocks = group_texts(examples, block_size=3)
    assert blocks == {
        "input_ids": [[1, 2, 3], [4, 5, 6]],
        "attention_mask": [[1, 1, 1], [1, 1, 1]],
        "labels": [[1, 2, 3], [4, 5, 6]],
    }
    blocks["labels"][0][0] = 99  # labels are a copy, not the same lists
    assert blocks["input_ids"][0][0] == 1


def test_tokenize_for_lm_ends_every_sentence_with_eos():
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"sentence": ["a b", "c", "a b c d"]})})
    tokenizer = train_tokenizer(raw["train"]["sentence"], "word")
    ids = {word: tokenizer.convert_tokens_to_ids(word) for word in "abcd"}
    eos = tokenizer.eos_token_id
    blocks = tokenize_for_lm(raw, tokenizer, block_size=4)["train"]
    stream = [ids["a"], ids["b"], eos, ids["c"], eos, ids["a"], ids["b"], ids["c"], ids["d"], eos]
    assert blocks["input_ids"] == [stream[0:4], stream[4:8]]
    assert blocks["labels"] == blocks["input_ids"]


def test_tokenize_for_lm_rejects_a_missing_column():
    raw = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a b"]})})
    with pytest.raises(ValueError, match="--text_column_name"):
        tokenize_for_lm(raw, train_tokenizer(["a b"], "word"), block_size=4, text_column="sentence")


def test_tokenize_for_lm_names_a_split_shorter_than_a_block():
    raw = datasets.DatasetDict({split: datasets.Dataset.from_dict({"sentence": [text]})
                                for split, text in (("train", "a b c d e f"), ("validation", "a b"))})
    with pytest.raises(ValueError, match=r"'validation' split has 3 tokens, fewer than --block_size=4, .*"
                                         r"--max_eval_samples"):
        tokenize_for_lm(raw, train_tokenizer(raw["train"]["sentence"], "word"), block_size=4)


def test_bundled_ptb_loads_by_name(data_dir):
    raw = load_text_dataset("ptb")
    assert {split: len(rows) for split, rows in raw.items()} == {"train": 42068, "validation": 3370, "test": 3761}
    assert raw["train"].column_names == ["sentence"]


@pytest.mark.parametrize("suffix, separator", [(".csv", ","), (".tsv", "\t")])
def test_local_files_load_and_get_a_validation_split(tmp_path, suffix, separator):
    path = tmp_path / f"train{suffix}"
    path.write_text(f"idx{separator}sentence\n" + "".join(f"{i}{separator}line {i}\n" for i in range(20)))
    raw = load_text_dataset(data_files={"train": str(path)}, validation_split_percentage=10)
    assert raw["train"]["sentence"] == [f"line {i}" for i in range(18)]
    assert raw["validation"]["sentence"] == ["line 18", "line 19"]


def test_unsupported_file_and_missing_source_raise():
    with pytest.raises(ValueError, match="Unsupported data file"):
        load_text_dataset(data_files={"train": "train.parquet.gz"})
    with pytest.raises(ValueError, match="Pass a data set name"):
        load_text_dataset()


@pytest.mark.parametrize("name, content, message", [
    ("train.json", "sentence,label\nhi,1\n", r"could not be read \(JSON parse error.*\); a .json file holds JSON "
                                            "lines"),
    ("train.jsonl", "", "is empty; a .jsonl file holds JSON lines"),
    ("train.csv", "", "is empty; a .csv file holds a header row"),
    ("train.csv", "sentence,label\n", "has no rows; a .csv file holds a header row"),
    ("train.jsonl", "\n\n", "has no rows; a .jsonl file holds JSON lines"),
])
def test_a_file_not_in_its_format_is_named(name, content, message, tmp_path):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ValueError, match=f"The train file {path} {message}"):
        load_text_dataset(data_files={"train": str(path)})


def test_check_column_files_refuses_text_files():
    check_column_files({"--train_file": "train.jsonl.gz", "--validation_file": None})
    with pytest.raises(ValueError, match="--test_file=test.txt: a .txt file has one column, 'text'"):
        check_column_files({"--train_file": "train.csv", "--test_file": "test.txt"})


def test_first_rows_limits_train_and_the_other_splits_separately():
    raw = datasets.DatasetDict({split: datasets.Dataset.from_dict({"x": list(range(10))})
                                for split in ("train", "validation", "test")})
    limited = first_rows(raw, max_train_samples=4, max_eval_samples=20)
    assert limited["train"]["x"] == [0, 1, 2, 3]
    assert len(limited["validation"]) == len(limited["test"]) == 10


def test_length_grouped_sampler():
    lengths = torch.randint(1, 60, (1000,), generator=torch.Generator().manual_seed(0)).tolist()
    sampler = LengthGroupedSampler(lengths, batch_size=16, seed=3, group_batches=10)
    first = list(sampler)
    assert sorted(first) == list(range(1000))  # every row once
    assert list(sampler) == first  # the same epoch gives the same order (what resuming relies on)
    sampler.set_epoch(1)
    assert list(sampler) != first

    def padding(order):
        batches = [[lengths[i] for i in order[b : b + 16]] for b in range(0, len(order), 16)]
        return sum(len(batch) * max(batch) - sum(batch) for batch in batches)

    shuffled = torch.randperm(1000, generator=torch.Generator().manual_seed(1)).tolist()
    assert padding(first) < padding(shuffled) / 5



def test_length_grouped_sampler_breaks_ties_by_the_second_length():
    """Pairs sorted by (source, target) length: the same source lengths in every position as by source length alone
    (the same source padding), and less target padding."""
    generator = torch.Generator().manual_seed(0)
    source, target = (torch.randint(1, high, (2000,), generator=generator).tolist() for high in (10, 30))
    by_source = list(LengthGroupedSampler(source, batch_size=16, seed=3))
    by_both = list(LengthGroupedSampler(list(zip(source, target)), batch_size=16, seed=3))
    assert sorted(by_both) == list(range(2000))
    assert [source[i] for i in by_both] == [source[i] for i in by_source]

    def padding(order):
        batches = [[target[i] for i in order[b : b + 16]] for b in range(0, len(order), 16)]
        return sum(len(batch) * max(batch) - sum(batch) for batch in batches)

    assert padding(by_both) < padding(by_source) * 0.8

def test_token_batch_sampler():
    """Every batch within the budget (padding counted: rows x (longest source + longest target)), every pair once per
    epoch, the same batches for a seed and epoch and a new order for the next epoch, few rows alone."""
    generator = torch.Generator().manual_seed(0)
    source, target = (torch.randint(1, 40, (500,), generator=generator).tolist() for _ in range(2))
    sampler = TokenBatchSampler(source, target, max_tokens=300, seed=3)
    first = list(sampler)
    assert len(first) == len(sampler)
    for batch in first:
        assert len(batch) * (max(source[i] for i in batch) + max(target[i] for i in batch)) <= 300
    assert sorted(row for batch in first for row in batch) == list(range(500))
    assert list(sampler) == first
    assert list(TokenBatchSampler(source, target, max_tokens=300, seed=3)) == first
    sampler.set_epoch(1)
    again = list(sampler)
    assert again != first and sorted(map(sorted, again)) == sorted(map(sorted, first))  # the same batches, reordered
    assert sum(map(len, first)) / len(first) > 300 / 80 * 1.2  # fuller than batches sized for the longest pair


def test_token_batch_sampler_refuses_a_pair_longer_than_the_budget():
    with pytest.raises(ValueError, match="Training pair 1 has 30 source \\+ 12 target tokens, more than "
                                         "--max_tokens=40 hold"):
        TokenBatchSampler([3, 30], [4, 12], max_tokens=40)


def test_check_values_names_the_row_and_column_of_a_value_of_the_wrong_kind():
    rows = datasets.Dataset.from_dict({"tokens": [["a", "b"], ["c"]], "tags": [["X", "Y"], ["X", "Y"]],
                                       "label": [1, None]})
    check_values(rows, "The train file t.jsonl", {"tokens": "words", "absent": "text"})
    with pytest.raises(ValueError, match=r"The train file t.jsonl, row 2: 1 words in column 'tokens' but 2 labels"):
        check_values(rows, "The train file t.jsonl", {"tokens": "words", "tags": "labels"})
    with pytest.raises(ValueError, match=r"The train file t.jsonl, row 2, column 'label': null .* is not a class name"):
        check_values(rows, "The train file t.jsonl", {"label": "label"})


def test_load_text_dataset_checks_the_columns_it_is_given(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"sentence": "a"}\n{"sentence": 3}\n{"sentence": "b"}\n')
    assert load_text_dataset(data_files={"train": str(path)})["train"]["sentence"] == ["a", 3]  # no kinds: not checked
    with pytest.raises(ValueError, match=rf"The train file {path}, row 2, column 'sentence': 3 is not a string"):
        load_text_dataset(data_files={"train": str(path)}, columns={"sentence": "text"})
