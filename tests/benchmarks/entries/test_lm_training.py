"""The ``training`` entry's smoke results: the five variants compute the same loss, all are measured, and every
throughput is a median over the rounds with its quartiles."""


def test_training_variants_agree(smoke_entries):
    entry = smoke_entries["training"]
    assert len(entry["rows"]) == 5
    assert entry["summary"]["losses_agree"] is True
    assert [row["role"] for row in entry["rows"]][:3] == ["ours", "headline baseline", "second baseline"]
    assert "fused nn.LSTM" in entry["rows"][1]["variant"] and "LSTMCell loop" in entry["rows"][2]["variant"]
    for row in entry["rows"]:
        assert row["peak_memory_mb"] > 0
        for column in ("tokens_per_s", "ours_speedup"):
            low, high = row[f"{column}_iqr"]
            assert 0 < low <= row[column] <= high, (row["variant"], column)
    headline = entry["summary"]["masked_vs_tutorial_fused_throughput"]
    assert headline["ratio"] == entry["rows"][1]["ours_speedup"]
