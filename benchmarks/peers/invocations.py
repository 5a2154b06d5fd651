"""Which command trained each stored row of a results file that several invocations fill (the sweep's rows, the
quality phase's seeds): a row's ``run_by``, and the sentence the reports give of them."""

from collections.abc import Callable


def run_by(made: dict, command: str, **settings) -> dict:
    """What trained a row, from its invocation's provenance ``made`` (`hf_seqmodels.provenance.provenance`), with
    any ``settings`` that change its numbers (e.g. the threads)."""
    return {"command": command, "commit": made["commit"], "tree_clean": made["tree_clean"], "date": made["date"],
            "cpu": made["machine"]["cpu"], **settings}


def described(runs: list[dict], name: Callable[[dict], str], results: dict) -> str:
    """The commands that trained ``runs``, each with its commit, date, CPU and the rows (``name`` of each) it
    trained; rows stored before rows recorded theirs are said to be such; then the last command on the file
    (``results``' own ``command`` and provenance)."""
    by = {}
    for run in runs:
        made = run.get("run_by")
        key = (made["command"], made["commit"][:7], made["date"][:10], made["cpu"]) if made else None
        by.setdefault(key, []).append(name(run))
    parts = [f"`{command}` (commit {commit}, {date}, {cpu}): {', '.join(names)}"
             for (command, commit, date, cpu), names in ((key, names) for key, names in by.items() if key)]
    if None in by:
        parts.append(f"trained before rows recorded their command (the file's history holds it): "
                     f"{', '.join(by[None])}")
    return (f"Trained by {'; '.join(parts)}. Last command on the file: `{results['command']}`, commit "
            f"{results['provenance']['commit'][:7]}.")
