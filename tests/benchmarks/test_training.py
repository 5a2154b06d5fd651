"""The ``training`` entry's smoke results: the four variants compute the same loss and all are measured."""


def test_training_variants_agree(smoke_entries):
    entry = smoke_entries["training"]
    assert len(entry["rows"]) == 4
    assert entry["summary"]["losses_agree"] is True
    assert all(row["tokens_per_s"] > 0 and row["peak_memory_mb"] > 0 for row in entry["rows"])
