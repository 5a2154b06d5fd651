"""docs/architecture.md names every module of the package (every hf_seqmodels/**/*.py but __init__.py) by its path,
and no module that does not exist: the map stays complete as modules come and go."""

import re

from hf_seqmodels.data.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "architecture.md"


def package_modules() -> set[str]:
    return {path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "hf_seqmodels").rglob("*.py")
            if path.name != "__init__.py"}


def named_modules(text: str) -> set[str]:
    """The module paths ``text`` names in backquotes, e.g. `hf_seqmodels/training/loop.py`."""
    return set(re.findall(r"`(hf_seqmodels/[\w/]+\.py)`", text))


def test_every_module_of_the_package_is_named():
    missing = sorted(package_modules() - named_modules(DOC.read_text()))
    assert not missing, f"docs/architecture.md does not name {missing}: add each to its section 'The modules'."


def test_every_module_named_exists():
    stale = sorted(named_modules(DOC.read_text()) - package_modules())
    assert not stale, f"docs/architecture.md names {stale}, which do not exist: update or drop them."


def test_a_module_left_out_is_missing():
    text = DOC.read_text()
    module = sorted(package_modules())[0]
    assert module in named_modules(text)
    assert module not in named_modules(text.replace(f"`{module}`", f"{module}"))
