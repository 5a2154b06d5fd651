"""A card's Speed section: what ``python -m benchmarks.run`` measured on a model of this card's family, sizes and
attention, or on this very trained model (`results.timed_is`; none on any other model), one sentence a finding,
each naming its entry, the entry's own code commit and the model it timed; every figure is the median over
interleaved rounds (a ratio: of the per-round ratios), as the benchmarks report it.

Each sentence names the measures it quotes as format fields (``{beam_speedup}``, keys of `MEASURES` for the
family) plus ``{model}``, the label of the model the benchmark measured; a sentence is stated only when every figure
it quotes was measured.
"""

from string import Formatter

from .results import benchmark_family, benchmark_figure, run_commit

_INCREMENTAL = ("{model}: with the cache, a token after a 1024-token prefix took {cached_token_growth}x the time of "
                "one after 16 tokens, {cache_speedup}x less than recomputing the prefix.")

SENTENCES = {
    "attention_seq2seq": (
        "{model}: batched `generate(num_beams=5)` (batches of {beam_batch_size} sorted by source length) ran "
        "{beam_speedup}x as fast "
        "as a per-sentence beam search that batches each sentence's beams (as JoeyNMT and OpenNMT decode a single "
        "sentence), and found the same best hypothesis for {beam_agreement:.0%} of the sentences; "
        "{per_hypothesis_speedup}x as fast as one calling the decoder once per hypothesis.",
        "{model}: at batch 1, `generate()` ran at {batch1_greedy_speed} (greedy) and {batch1_beam_speed} (beam 5) "
        "of the speed of a plain decoding loop.",
        "{model}: with our decoding loop (`custom_generate`, which this folder's `generate()` runs when loaded with "
        "`trust_remote_code=True`), the batched beam search ran {our_loop_beam_speedup}x as fast as that "
        "per-sentence search, and at batch 1 at {our_loop_batch1_greedy_speed} (greedy) and "
        "{our_loop_batch1_beam_speed} (beam 5) of the speed of the plain loop.",
    ),
    "transformer_seq2seq": (
        "Against transformers' MarianMTModel of the same sizes: {train_vs_marian}x its training throughput, "
        "{greedy_vs_marian}x its greedy and {beam_vs_marian}x its beam-search `generate()` speed; "
        "{greedy_vs_tutorial}x the speed of a tutorial greedy loop that recomputes the prefix at every step.",
    ),
    "recurrent_lm": (
        _INCREMENTAL,
        "{model}: training on padded, masked batches ran at {training_vs_tutorial}x the throughput of a tutorial "
        "model over PyTorch's fused recurrent layer, and {training_vs_cell_loop}x that of a per-timestep cell loop.",
    ),
    "transformer_lm": (_INCREMENTAL,),
}


def speed_lines(run: dict, benchmarks: dict) -> list[str]:
    """The sentences of `SENTENCES` on the run's model family whose figures ``benchmarks`` (the results of
    ``python -m benchmarks.run``) hold for a model like the run's, each followed by where it comes from
    (`entry_source`); none for a model the benchmarks did not time."""
    config = run.get("model_config") or {}
    family = benchmark_family(config)
    lines = []
    for sentence in SENTENCES.get(family, ()):
        measures = [field for _, field, _, _ in Formatter().parse(sentence) if field not in (None, "model")]
        figures = [benchmark_figure(benchmarks, family, measure, config, run) for measure in measures]
        if figures and None not in figures:
            values = {measure: figure.value for measure, figure in zip(measures, figures)}
            sources = "; ".join(dict.fromkeys(entry_source(benchmarks, figure.entry, figure.model)
                                              for figure in figures))
            lines.append(f"{sentence.format(model=figures[0].model, **values)} ({sources})")
    return lines


def entry_source(benchmarks: dict, name: str, model: str) -> str:
    """Which entry a figure comes from: the commit of the code it ran (the entry's own), its device and date, and
    the folder of the trained model it timed as ``model`` where it names one (otherwise it timed its own copy)."""
    entry = benchmarks["entries"][name]
    record = entry.get("provenance") or {}
    commit = run_commit(entry)
    device = record.get("device") or entry.get("device")
    when = (record.get("date") or entry.get("ran_at") or "")[:10]
    folder = ((entry.get("summary", {}).get(model) or {}).get("model") or {}).get("model_dir")
    return ", ".join([f"entry `{name}`", f"code `{commit}`" if commit else "code commit not recorded",
                      *([device] if device else []), *([when] if when else []),
                      f"timed the trained model in `{folder}`" if folder else "timed its own copy"])

