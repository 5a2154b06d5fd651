"""The Speed section: a translation or language model's card states what the benchmarks measured only when the timed
model is a model like this one (family, sizes and attention, all recorded in the entry and equal), each sentence with
its entry's own commit; otherwise no section at all."""

import copy
from string import Formatter

from hf_seqmodels import AttentionSeq2SeqConfig, RecurrentConfig, TransformerConfig
from hf_seqmodels.cards import MEASURES, render_card
from hf_seqmodels.cards.results import IDENTITY
from hf_seqmodels.cards.speed import SENTENCES

from .runs import BENCHMARKS, RUN, TRANSLATION_RUN

GRU = AttentionSeq2SeqConfig(vocab_size=6000, cell_type="gru", attention_type="luong_general", embedding_size=256,
                             hidden_size=256).to_dict()
DECODING = ("translation", "batch1_overhead")


def timing(config: dict) -> dict:
    """The repository's benchmarks, with the decoding entries' sizes recording ``config``'s identity fields (as an
    entry that describes its timed model does)."""
    benchmarks = copy.deepcopy(BENCHMARKS)
    for name in DECODING:
        benchmarks["entries"][name]["sizes"] = {field: config[field] for field in IDENTITY["attention_seq2seq"]}
    return benchmarks


def own_commit(entry: dict) -> str:
    """How a card names the commit an entry records: its provenance (abbreviated), or an older entry's machine."""
    commit = (entry.get("provenance") or {}).get("commit", "")[:7] or (entry.get("machine") or {}).get("git_commit")
    return f"code `{commit}`" if commit else "code commit not recorded"


def card(config: dict, benchmarks: dict) -> str:
    return str(render_card({**TRANSLATION_RUN, "model_config": config}, benchmarks=benchmarks))


def test_the_card_of_the_timed_model_states_its_figures_with_each_entry_commit():
    benchmarks = timing(GRU)
    translation = benchmarks["entries"]["translation"]
    batch1 = benchmarks["entries"]["batch1_overhead"]
    # the two entries at different commits, so that each sentence must name its own entry's
    batch1["provenance"] = {**batch1["provenance"], "commit": "f" * 40}
    summary, batch1_summary = (entry["summary"]["attention GRU (luong_general)"] for entry in (translation, batch1))
    text = card(GRU, benchmarks)
    assert "## Speed" in text
    assert (f"(batches of {summary['batch_size']} sorted by source length) ran "
            f"{summary['sorted_speedup_vs_beams_batched']['ratio']}x as fast as a per-sentence beam search") in text
    assert f"{summary['custom_sorted_speedup_vs_beams_batched']['ratio']}x as fast as that per-sentence search" in text
    assert (f"at {batch1_summary['greedy, generate()']['ratio']} (greedy) and "
            f"{batch1_summary['beam 5, generate()']['ratio']} (beam 5)") in text
    # Each sentence names the commit of its own entry.
    assert own_commit(translation) != own_commit(batch1)
    assert f"entry `translation`, {own_commit(translation)}" in text
    assert f"entry `batch1_overhead`, {own_commit(batch1)}" in text


def test_no_speed_section_for_another_model():
    benchmarks = timing(GRU)
    others = {
        "Bahdanau": {**GRU, "attention_type": "bahdanau"},
        "input feeding": {**GRU, "input_feeding": True},
        "LSTM": {**GRU, "cell_type": "lstm"},
        "wider": {**GRU, "hidden_size": 512},
        "two layers": {**GRU, "decoder_layers": 2},
    }
    for name, config in others.items():
        text = card(config, benchmarks)
        assert "## Speed" not in text, name
        assert "luong_general" not in text, name
    # An entry that does not record its timed model (the committed one's sizes: a recipe's, with a list of cells).
    assert "## Speed" not in card(GRU, BENCHMARKS)
    assert "## Speed" not in str(render_card(TRANSLATION_RUN, benchmarks=BENCHMARKS))  # the Bahdanau test run
    assert "## Speed" not in card(GRU, {})
    assert "## Speed" not in str(render_card(RUN, benchmarks=BENCHMARKS))  # a classifier: no benchmark family


def test_marian_comparison_only_for_a_transformer_of_the_entry_sizes():
    marian = BENCHMARKS["entries"]["transformer_vs_marian"]
    sizes = marian["sizes"]
    same = TransformerConfig(vocab_size=sizes["vocab_size"], d_model=sizes["d_model"], num_heads=sizes["num_heads"],
                             encoder_layers=sizes["layers"], decoder_layers=sizes["layers"],
                             ffn_dim=sizes["ffn_dim"]).to_dict()
    text = card(same, BENCHMARKS)
    assert f"MarianMTModel of the same sizes: {marian['summary']['train']['ratio']}x its training throughput" in text
    assert f"entry `transformer_vs_marian`, {own_commit(marian)}" in text
    smaller = {**same, "d_model": sizes["d_model"] // 2}
    assert "MarianMTModel" not in card(smaller, BENCHMARKS)


def test_language_model_figures_only_for_the_timed_sizes():
    sizes = BENCHMARKS["entries"]["incremental"]["sizes"]
    lstm = RecurrentConfig(vocab_size=sizes["vocab_size"], cell_type="lstm", hidden_size=sizes["hidden_size"],
                           num_layers=sizes["num_layers"]).to_dict()
    lm = {**TRANSLATION_RUN, "task": "text-generation", "eval_perplexity": 99.0, "model_config": lstm}
    text = str(render_card(lm, benchmarks=BENCHMARKS))
    speedup = BENCHMARKS["entries"]["incremental"]["summary"]["recurrent LM (lstm)"]["cache_speedup_at_1024"]["ratio"]
    assert f"{speedup}x less than recomputing" in text
    for other in ({**lstm, "cell_type": "gru"}, {**lstm, "hidden_size": 64}, {**lstm, "num_layers": 1}):
        assert "## Speed" not in str(render_card({**lm, "model_config": other}, benchmarks=BENCHMARKS))


def test_sentences_quote_only_declared_measures():
    for family, sentences in SENTENCES.items():
        for sentence in sentences:
            fields = {field for _, field, _, _ in Formatter().parse(sentence) if field} - {"model"}
            assert fields and all((family, field) in MEASURES for field in fields), (family, sentence)
