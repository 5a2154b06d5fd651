"""The ``static_cache`` entry's smoke results: the static cache generates what the default cache does, and its
speed-up is a median of per-round ratios with its quartiles."""


def test_static_cache_outputs_agree(smoke_entries):
    entry = smoke_entries["static_cache"]
    assert entry["rows"] and all(row["same_sequences"] and row["max_score_difference"] <= 1e-5
                                 for row in entry["rows"])
    for row in entry["rows"]:
        low, high = row["static_speedup_iqr"]
        assert 0 < low <= row["static_speedup"] <= high
