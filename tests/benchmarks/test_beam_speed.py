"""The ``translation`` entry (``benchmarks.beam_speed``) on its smoke results: the searches that share
``generate()``'s semantics find its best hypotheses, and the decoder-call accounting is filled in."""


def test_translation_searches_agree(smoke_entries):
    entry = smoke_entries["translation"]
    for summary in entry["summary"].values():
        # Same semantics, same weights: the matched per-sentence search and the batched hand loop must find
        # generate()'s best hypotheses; the naive tutorial search may differ, but is reported.
        assert summary["agreement_matched"] == 1.0
        assert summary["agreement_hand_batched"] == 1.0
        assert summary["agreement_sorted_batches"] == 1.0
        assert summary["agreement_static"] == 1.0
        assert 0.0 <= summary["agreement_naive"] <= 1.0
        # Every decoder call of generate() has batch x beams rows, and each of the per-sentence search one.
        batch_rows = entry["sizes"]["batch_size"] * entry["sizes"]["num_beams"]
        assert summary[f"row_cost_1_vs_{batch_rows}_rows"] > 0
        assert summary["decoder_step_bound"] > 0 and summary["decoder_rows_generate_vs_per_sentence"] > 0
    assert len(entry["rows"]) == 7 * len(entry["summary"])
