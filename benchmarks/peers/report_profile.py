"""The batch-1 profile's section of results/peers.md: where one beam-search translation of ours spends its time,
piece by piece (`benchmarks.studies.batch1_profile`, results/batch1_profile.json)."""

from tools.render.figures import Table

RESULTS = "batch1_profile.json"
OPERATORS_SHOWN = 10


def quartiles(figure: dict) -> str:
    low, high = figure["quartiles"]
    return f"{figure['median']:,.0f} ({low:,.0f}-{high:,.0f})"


def profile_section(profile: dict) -> list[str]:
    """The section's lines: the setting, the pieces per sentence and per decoding step, the busiest operators."""
    settings, made = profile["settings"], profile["provenance"]
    per_step = profile["per_step_us"]
    pieces = [(piece, quartiles(figure), quartiles(per_step[piece]) if piece in per_step else "")
              for piece, figure in profile["per_sentence_us"].items()]
    clock = ("the calling thread's CPU time (time spent waiting for a core left out)" if profile["clock"] == "thread"
             else "the wall clock")
    return [
        f"## Batch-1 profile of ours (results/{RESULTS})",
        "",
        f"One translation at a time, text in and detokenized text out as `translation.translate(..., batch_size=1)` "
        f"runs it: the first {settings['sentences']} sentences of test2016, beam {settings['num_beams']}, length "
        f"penalty {settings['length_penalty']:g}, at most {settings['max_new_tokens']} new tokens, "
        f"{profile['threads']} thread(s), clock: {clock}; median (quartiles) over {settings['rounds']} rounds. Model: "
        f"`{profile['model']['model_dir']}`. {made['device']}, load average {made['machine']['load_average'][0]:g} as "
        f"it began, commit {made['commit'][:7]}, {made['date'][:10]}. "
        f"Command: `{' '.join(['python', *made['argv'][1:]])}`.",
        "",
        f"Sentences/s, unclocked: {quartiles(profile['sentences_per_s'])}; decoding steps per sentence: "
        f"{profile['steps_per_sentence']:.2f}.",
        "",
        *Table(("piece", "µs per sentence", "µs per decoding step"), pieces).render().split("\n"),
        "",
        f"The operators with the most own CPU time (torch.profiler, one more pass; µs per sentence), the first "
        f"{OPERATORS_SHOWN}:",
        "",
        *Table(("operator", "own µs per sentence", "calls per sentence"),
               [(row["operator"], f"{row['own_us']:,.0f}", f"{row['calls']:.1f}")
                for row in profile["operators"][:OPERATORS_SHOWN]]).render().split("\n"),
    ]
