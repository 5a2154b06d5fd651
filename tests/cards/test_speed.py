"""The Speed section: a translation or language model's card states what the benchmarks measured on its family,
and only that."""

from string import Formatter

from hf_seqmodels import RecurrentConfig, TransformerConfig
from hf_seqmodels.cards import MEASURES, render_card
from hf_seqmodels.cards.speed import SENTENCES

from .runs import BENCHMARKS, RUN, TRANSLATION_RUN


def test_generative_cards_state_the_benchmark_figures_of_their_family():
    entries = {name: entry["summary"] for name, entry in BENCHMARKS["entries"].items()}
    translation = next(v for k, v in entries["translation"].items() if k.startswith("attention GRU "))
    batch1 = next(v for k, v in entries["batch1_overhead"].items() if k.startswith("attention GRU "))
    text = str(render_card(TRANSLATION_RUN, benchmarks=BENCHMARKS))
    assert "## Speed" in text
    for name in ("translation", "batch1_overhead"):  # each entry the sentences quote, at its own commit
        record = BENCHMARKS["entries"][name]["provenance"]
        assert f"`{name}` at hf_seqmodels {record['commit'][:7]} on {record['device']}" in text
    assert (f"(batches of {translation['batch_size']} sorted by source length) ran "
            f"{translation['sorted_speedup_vs_beams_batched']['ratio']}x as fast as a per-sentence beam search that "
            "batches each sentence's beams") in text
    assert f"{translation['sorted_speedup_vs_per_hypothesis']['ratio']}x as fast as one calling the decoder" in text
    assert (f"at {batch1['greedy, generate()']['ratio']} (greedy) and {batch1['beam 5, generate()']['ratio']} "
            "(beam 5)") in text
    ours = {mode: batch1[f"{mode}, generate(custom_generate=decode)"]["ratio"] for mode in ("greedy", "beam 5")}
    assert (f"with our decoding loop (`custom_generate`, which this folder's `generate()` runs when loaded with "
            f"`trust_remote_code=True`), the batched beam search ran "
            f"{translation['custom_sorted_speedup_vs_beams_batched']['ratio']}x as fast as that per-sentence search, "
            f"and at batch 1 at {ours['greedy']} (greedy) and {ours['beam 5']} (beam 5)") in text

    marian = entries["transformer_vs_marian"]
    run = {**TRANSLATION_RUN, "model_config": TransformerConfig(vocab_size=100).to_dict()}
    assert f"{marian['train']['ratio']}x its training throughput" in str(render_card(run, benchmarks=BENCHMARKS))

    lm = {**TRANSLATION_RUN, "task": "text-generation", "eval_perplexity": 99.0,
          "model_config": RecurrentConfig(vocab_size=100, cell_type="lstm").to_dict()}
    text = str(render_card(lm, benchmarks=BENCHMARKS))
    speedup = entries["incremental"]["recurrent LM (lstm)"]["cache_speedup_at_1024"]["ratio"]
    assert f"{speedup}x less than recomputing" in text
    training = entries["training"]
    assert (f"{training['masked_vs_tutorial_fused_throughput']['ratio']}x the throughput of a tutorial model over "
            f"PyTorch's fused recurrent layer, and {training['masked_vs_tutorial_cell_loop_throughput']['ratio']}x "
            "that of a per-timestep cell loop") in text

    # No figures measured on the family, or no benchmarks: no section.
    assert "## Speed" not in str(render_card(TRANSLATION_RUN))
    gru_lm = {**lm, "model_config": RecurrentConfig(vocab_size=100, cell_type="gru").to_dict()}
    assert "## Speed" not in str(render_card(gru_lm, benchmarks=BENCHMARKS))  # the LM entries measure an LSTM
    assert "## Speed" not in str(render_card(RUN, benchmarks=BENCHMARKS))


def test_sentences_quote_only_declared_measures():
    for family, sentences in SENTENCES.items():
        for sentence in sentences:
            fields = {field for _, field, _, _ in Formatter().parse(sentence) if field} - {"model"}
            assert fields and all((family, field) in MEASURES for field in fields), (family, sentence)
