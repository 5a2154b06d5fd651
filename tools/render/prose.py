"""The prose check: the text of README.md and of every document under docs/ outside its figures blocks quotes no
measured figure (a score, a speed, a time, a ratio), with or without decimals; such a figure is rendered into a
block from its results entry (`tools.render.tables`) or not stated at all.

Every number of the prose counts as a figure unless a rule of `NOT_MEASURED` says what else it is: a pattern with
its reason (a version, a date, a range, a name, an identifier, a setting or data size a run is given, a test run's
counts), never a list of allowed figures. Code (fenced, indented or in backticks), HTML comments and link targets
are not prose. A table outside the blocks is read cell by cell, each cell after its column's header, so that a
column header says what its numbers are ("time limit | 110 s" reads as "time limit 110 s").
"""

import re
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

# A number as prose writes it: 35, 35.1, 1,362, 2.3.0, 1e-4, 4.7M, 9.13x, 5%.
NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)*(?:e-?\d+)?(?:[kMB]|x|%)?(?!\w)")


@dataclass(frozen=True)
class Rule:
    """A kind of number that is not a measured figure: ``pattern`` matches it with the words that say so (the
    number lies inside the match); ``reason`` says why it is not measured."""

    name: str
    pattern: str
    reason: str


@cache
def software_names() -> str:
    """A pattern of the names of the Python distributions installed here, and Python itself: the programs whose
    releases the documents name ("transformers 5.24", "Python 3.10")."""
    names = {dist.metadata["Name"] for dist in metadata.distributions() if dist.metadata["Name"]}
    spellings = {spelling for name in names for spelling in (name, name.replace("-", "_"), name.replace("_", "-"))}
    return "|".join(sorted((re.escape(name) for name in spellings | {"Python", "CUDA"}), key=len, reverse=True))


SETTING_NAMES = (r"beams?|batch(?:es)?(?:\s+size)?|length\s+penalty|dropout|label\s+smoothing|d_model|ffn|"
                 r"learning\s+rate|warmup|clipped\s+at|default|at\s+most|at\s+least|up\s+to|within|every|"
                 r"the\s+(?:last|first)|timeout_s|time\s+limit|budget|tokenizer|vocabulary|embeddings|encoder|"
                 r"decoder|cutoffs")
GIVEN_UNITS = (r"(?:cores?|threads?|layers?|heads|units|beams|rounds|epochs?|steps|updates|resamples|checkpoints|"
               r"validations|processes|workers|runs|seeds|sentences|pairs|words|tokens|rows|entries|lines|captions|"
               r"characters|examples)")
WHOLE = r"(?<![\d.])\d+(?:,\d{3})*"  # a whole number, not the end of a decimal one
AND_MORE = r"(?:(?:,\s*|,?\s+and\s+|,?\s+or\s+|\s*/\s*)\d+(?:,\d{3})*)*"  # "1, 2 and 3", "1 and 64", "2/3"

NOT_MEASURED = (
    Rule("version", r"\b\d+\.\d+\.\d+[\w.+-]*", "a release: three or more dotted parts (JoeyNMT 2.3.0)"),
    Rule("version", r"(?:==|>=|<=|~=|!=|<|>)\s?\d+(?:\.\d+)*", "a version bound of a requirement (torch<2.3)"),
    Rule("version", r"(?<![\w-])(?:{software})\s+\(?\d+(?:\.\d+)*(?:-dev)?",
         "a release of a program named right before it: an installed Python distribution, Python or CUDA "
         "(transformers 5.24, Python 3.10)"),
    Rule("date", r"\b(?:19|20)\d\d-\d\d-\d\d\b", "a date (2026-11-28)"),
    Rule("date", r"et\s+al\.?,?\s+\(?(?:19|20)\d\d\b", "the year of a cited paper (Vaswani et al. 2017)"),
    Rule("range", WHOLE + r"\s?[-–]\s?\d+(?!\d|\.\d)", "a range of whole numbers: ids, lines (ids 0-3, at the end "
                                                         "of a sentence too)"),
    Rule("name", r"[A-Za-z]-\d+\b", "part of a name (SST-2, WNUT-17, a beam-5 step)"),
    Rule("name", WHOLE + r"-[A-Za-z]", "a whole number in a compound word (a 2-core machine, a 64-token limit)"),
    Rule("shape", WHOLE + r"\s?x\s?\d+(?:,\d{3})*", "the shape of a matrix (a 6,000 x 256 table)"),
    Rule("formula", r"\b(?:[NU]|sqrt)\([^()\n]*\)", "the constants of a formula: an initialisation's "
                                                     "distribution (N(0, 0.1), U(-0.1, 0.1), sqrt(6 / 6,256))"),
    Rule("identifier", r"(?:#|\b(?:issues?|PRs?|items?|status|ISO|seeds?|ids?|step|stage|update|position)\s+)\d+"
                       + AND_MORE, "a number that names something: an issue, an exit status, a standard, a seed, "
                                   "an id, a position"),
    Rule("identifier", r"^\s*\d+\.\s", "a numbered list's item"),
    Rule("setting", rf"\b(?:{SETTING_NAMES})\s+(?:of\s+|at\s+|is\s+)?\(?\d+(?:,\d{{3}})*(?:\.\d+)?(?:e-?\d+)?[x%]?"
                    + AND_MORE,
         "the value of a setting, after its name (beam 5, length penalty 1.0, batch 1 and 64): given to a run"),
    Rule("setting", WHOLE + AND_MORE + rf"\s+(?:[\w-]+\s+)?(?:CPU\s+|GPU\s+)?{GIVEN_UNITS}\b(?!/)",
         "a whole number of what a run is given (2 CPU cores, 3 epochs, 600 steps) or of what its data holds "
         "(1,000 test sentences)"),
    Rule("test counts", WHOLE + r"\s+(?:[\w.]+\s+)?(?:passed|skipped|failed|subtests|tests)\b|"
                                r"\b(?:passed|skipped|failed)\s+\d+\b",
         "a test run's count of tests by outcome (pytest's summary), which that run re-establishes"),
)


@cache
def compiled_rules() -> tuple[tuple[Rule, re.Pattern], ...]:
    """Each rule of `NOT_MEASURED` with its pattern compiled (``{software}``: `software_names`)."""
    return tuple((rule, re.compile(rule.pattern.replace("{software}", software_names()), re.M))
                 for rule in NOT_MEASURED)


def table_as_prose(table: str) -> str:
    """A Markdown table's rows as lines of "header cell" pairs (the header row itself once, as it stands)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.strip().splitlines()]
    header, body = rows[0], rows[2:]  # rows[1] is the line under the header
    return "\n".join([" ".join(header)] + ["; ".join(f"{name} {cell}" for name, cell in zip(header, row))
                                           for row in body])


TABLE = re.compile(r"(?:^\|.*\|[ \t]*\n)+", re.M)
INDENTED_CODE = re.compile(r"(?:(?<=\n\n)|(?<=\A))(?:(?: {4}|\t).*\n?)+")


def prose_of(text: str) -> str:
    """``text`` (Markdown, its figures blocks already removed) less what is not prose: code, HTML comments and
    link targets; its tables read cell by cell after their column's header."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    text = INDENTED_CODE.sub("", text)
    text = re.sub(r"`[^`]+`", "(code)", text)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\]\([^)\s]*\)", "]", text)
    text = re.sub(r"https?://\S+", "", text)
    return TABLE.sub(lambda match: table_as_prose(match.group(0)) + "\n", text)


def measured_figures(prose: str) -> list[str]:
    """The numbers of ``prose`` that no rule of `NOT_MEASURED` covers."""
    covered = [match.span() for _, pattern in compiled_rules() for match in pattern.finditer(prose)]
    return [match.group(0) for match in NUMBER.finditer(prose)
            if not any(start <= match.start() and match.end() <= end for start, end in covered)]


def prose_documents(root: Path) -> list[str]:
    """README.md and every Markdown document under docs/, relative to ``root``."""
    return ["README.md"] + sorted(path.relative_to(root).as_posix() for path in (root / "docs").rglob("*.md"))
