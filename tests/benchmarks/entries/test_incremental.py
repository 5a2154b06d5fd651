"""The ``incremental`` entry's smoke results: the cached loop, generate() and the recomputing loop agree, and every
time and ratio is a median over the rounds with its quartiles."""


def test_incremental_decoding_agrees(smoke_entries):
    entry = smoke_entries["incremental"]
    assert all(row["tokens_agree"] for row in entry["rows"])
    prefixes = {row["prefix_length"] for row in entry["rows"]}
    assert prefixes == set(entry["sizes"]["prefix_lengths"])
    assert entry["targets"] and entry["targets"][0]["value"] > 0
    for row in entry["rows"]:
        for column in ("cached_ms_per_token", "recompute_ms_per_token", "cache_speedup"):
            low, high = row[f"{column}_iqr"]
            assert 0 < low <= row[column] <= high, column
    for summary in entry["summary"].values():
        growth = next(value for key, value in summary.items() if key.startswith("per_token_growth_"))
        assert growth["cached"]["quartiles"][0] <= growth["cached"]["ratio"] <= growth["cached"]["quartiles"][1]
