"""The repository's tooling stays outside the installed package: pyproject's package discovery finds hf_seqmodels and
its sub-packages only, and the package imports nothing of tools/ (nor cards/ anything of comparison/, which renders
with it: imports point one way)."""

import ast
import tomllib

from setuptools import find_packages

from tools.render.figures import REPO_ROOT


def imported_modules(folder: str) -> set[str]:
    """Every module the files under ``folder`` import, relative imports resolved to absolute names."""
    found = set()
    for path in (REPO_ROOT / folder).rglob("*.py"):
        package = path.relative_to(REPO_ROOT).with_suffix("").parts[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else ()
                found.add(".".join([*base, *([node.module] if node.module else [])]))
    return found


def test_only_the_package_is_installed():
    find = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(REPO_ROOT), include=find["include"], exclude=find.get("exclude", ()))
    assert "hf_seqmodels.cards" in packages
    assert [name for name in packages if name.split(".")[0] != "hf_seqmodels"] == []


def test_the_package_imports_no_tooling_and_cards_no_comparison():
    package = imported_modules("hf_seqmodels")
    assert [name for name in package if name.split(".")[0] in ("tools", "benchmarks", "scripts", "tests")] == []
    assert [name for name in imported_modules("hf_seqmodels/cards") if "comparison" in name.split(".")] == []


def test_imported_modules_sees_a_relative_import():
    assert "hf_seqmodels.cards.results" in imported_modules("hf_seqmodels/cards")  # from .results import ...
