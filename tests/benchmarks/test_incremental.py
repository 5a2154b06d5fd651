"""The ``incremental`` entry's smoke results: the cached loop, generate() and the recomputing loop agree."""


def test_incremental_decoding_agrees(smoke_entries):
    entry = smoke_entries["incremental"]
    assert all(row["tokens_agree"] for row in entry["rows"])
    prefixes = {row["prefix_length"] for row in entry["rows"]}
    assert prefixes == set(entry["sizes"]["prefix_lengths"])
    assert entry["targets"] and entry["targets"][0]["value"] > 0
