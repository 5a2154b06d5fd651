"""Copies kept equal, in the manner of transformers' ``utils/check_copies.py``.

A block of ``hf_seqmodels/models/*.py`` written as a copy of another carries, on the line above its ``def`` or
``class``, the comment

    # Copied from hf_seqmodels.models.<module>.<Name>[.<method>] [with A->B[, C->D]] [all-casing]

The block is the ``def``/``class`` under the comment and every line indented deeper (blank lines included; the
closing ``):`` of a long header too); the source is found the same way, by its dotted name, in ``<module>.py``.
Each ``A->B`` (a regular expression and its replacement, ``re.sub``) is applied to the source, with ``all-casing``
also in lower and upper case, and the result must equal the copy line for line, blank lines aside; only the copy's
own name in its header may differ. Decorators go above the comment. Unlike transformers, the replaced source is not
reformatted: a replacement that changes a line's length must leave it as the copy has it.
"""

import re
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[2] / "hf_seqmodels" / "models"
PACKAGE = "hf_seqmodels.models"
MARK = re.compile(rf"^(\s*)#\s*Copied from\s+{re.escape(PACKAGE)}\.(\S+\.\S+)\s*($|\S.*$)")
REPLACEMENT = re.compile(r"^\s*(\S+)->(\S+)(\s+.*|$)")
HEADER = re.compile(r"^(\s*)(class|def)\s+(\w+)\s*[(:]")
HEADER_END = re.compile(r"^\s*\)(\s*->.*:|:)\s*$")


def block_end(lines: list[str], header: int) -> int:
    """The index after the block whose ``def``/``class`` header is ``lines[header]``, trailing blank lines left out."""
    body_indent = HEADER.match(lines[header]).group(1) + "    "
    end = header + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(body_indent)
                                or HEADER_END.match(lines[end])):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return end


def source_block(name: str, models: Path) -> list[str]:
    """The lines of the ``def``/``class`` that ``name`` (``<module>.<Name>[.<method>]``) names under ``models``."""
    module, *parts = name.split(".")
    path = models / f"{module}.py"
    if not path.is_file() or not parts:
        raise ValueError(f"`# Copied from {PACKAGE}.{name}`: {path} does not exist, or no name follows the module.")
    lines = path.read_text().splitlines()
    index, indent = 0, ""
    for depth, part in enumerate(parts):
        pattern = re.compile(rf"^{indent}(class|def)\s+{re.escape(part)}\s*[(:]")
        while index < len(lines) and not pattern.match(lines[index]):
            index += 1
        if index == len(lines):
            raise ValueError(f"`# Copied from {PACKAGE}.{name}`: {path} defines no {'.'.join(parts[:depth + 1])}.")
        if depth < len(parts) - 1:
            index, indent = index + 1, indent + "    "
    return lines[index:block_end(lines, index)]


def replace(code: str, replacements: str) -> str:
    """``code`` with the mark's ``with A->B, C->D [all-casing]`` applied, as transformers' ``replace_code``."""
    for pattern in replacements.removeprefix("with").split(","):
        if not (found := REPLACEMENT.match(pattern)):
            continue
        old, new, option = found.groups()
        code = re.sub(old, new, code)
        if option.strip() == "all-casing":
            code = re.sub(old.lower(), new.lower(), code)
            code = re.sub(old.upper(), new.upper(), code)
    return code


def without_name(header: str) -> str:
    return HEADER.sub(lambda found: f"{found.group(1)}{found.group(2)} _(", header, count=1)


def check_copies(path: Path, models: Path = MODELS) -> list[str]:
    """What differs between each marked copy in the file ``path`` and its source under ``models``: one line per
    copy that differs, naming its first differing line; none when every copy matches."""
    lines = path.read_text().splitlines()
    problems = []
    for index, line in enumerate(lines):
        if not (mark := MARK.match(line)):
            continue
        indent, name, replacements = mark.groups()
        header = index + 1
        if header == len(lines) or not (found := HEADER.match(lines[header])) or found.group(1) != indent:
            problems.append(f"{path.name}:{index + 1}: `# Copied from` must stand right above a def or class at its "
                            "indentation.")
            continue
        theirs = replace("\n".join(source_block(name, models)), replacements).split("\n")
        ours = lines[header:block_end(lines, header)]
        theirs, ours = ([(number, text) for number, text in numbered if text.strip()]
                        for numbered in (enumerate(theirs), enumerate(ours, start=header + 1)))
        theirs[0], ours[0] = (theirs[0][0], without_name(theirs[0][1])), (ours[0][0], without_name(ours[0][1]))
        for (_, expected), (number, got) in zip(theirs, ours):
            if expected != got:
                problems.append(f"{path.name}:{number}: differs from {PACKAGE}.{name} {replacements}: "
                                f"{got.strip()!r} where the source has {expected.strip()!r}.")
                break
        else:
            if len(theirs) != len(ours):
                problems.append(f"{path.name}:{header + 1}: the copy of {PACKAGE}.{name} has {len(ours)} lines (blank "
                                f"lines aside) where the source has {len(theirs)}.")
    return problems


@pytest.mark.parametrize("path", sorted(MODELS.glob("*.py")), ids=lambda path: path.name)
def test_every_marked_copy_matches_its_source(path):
    assert check_copies(path) == []


SOURCE = '''
class Attention:
    """Attends."""

    def forward(
        self, query, key
    ) -> float:
        scores = query @ key  # Attention's scores
        return scores.softmax(-1)


def attention_weights(x):
    return ATTENTION_SCALE * x
'''

# Attention.forward as its copy in COPY has it: renamed, and Attention->Pooling applied.
POOL = SOURCE[SOURCE.index("    def forward("):SOURCE.index("\n\n\ndef")].replace("forward", "pool").replace(
    "Attention", "Pooling")
COPY = f'''
# Copied from hf_seqmodels.models.source.attention_weights with Attention->Pooling all-casing
def pooling_weights(x):

    return POOLING_SCALE * x


class Other:
    # Copied from hf_seqmodels.models.source.Attention.forward with Attention->Pooling
{POOL}

    def after(self):
        return None
'''


def write(models: Path, copy: str) -> Path:
    models.mkdir(exist_ok=True)
    (models / "source.py").write_text(SOURCE)
    (path := models / "copy.py").write_text(copy)
    return path


def test_a_faithful_copy_passes(tmp_path):
    """The replacements (with all-casing) apply to the source; blank lines and the copy's own name do not count; the
    block ends where the indentation does (``after`` is not part of the copy)."""
    assert check_copies(write(tmp_path, COPY), tmp_path) == []


@pytest.mark.parametrize("tampered, message", [
    (COPY.replace("return scores.softmax(-1)", "return scores.softmax(0)"), r"copy.py:14: differs .*softmax\(0\)"),
    (COPY.replace("with Attention->Pooling\n", "\n"), r"copy.py:13: differs from .*Attention's scores"),
    (COPY.replace("POOLING_SCALE", "Pooling_SCALE"), r"copy.py:5: differs from .*attention_weights"),
    (COPY.replace("        return scores.softmax(-1)\n", ""), r"copy.py:10: the copy .* has 4 lines .* source has 5"),
    (COPY.replace("def pool(", "x = 1\n    def pool("), r"copy.py:9: `# Copied from` must stand right above"),
], ids=["changed line", "replacement dropped", "casing", "line missing", "not above a def"])
def test_a_tampered_copy_fails(tmp_path, tampered, message):
    problems = check_copies(write(tmp_path, tampered), tmp_path)
    assert len(problems) == 1 and re.match(message, problems[0]), problems


def test_a_copy_of_nothing_is_refused(tmp_path):
    with pytest.raises(ValueError, match="source.py defines no Attention.backward"):
        check_copies(write(tmp_path, COPY.replace("Attention.forward", "Attention.backward")), tmp_path)
