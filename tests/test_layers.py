"""The package's imports point down (docs/architecture.md, 'The modules'): each part imports only the parts below it
in `LAYERS`, no module imports another in a circle, and none imports a module of the package inside a function (the
way to dodge a circle)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hf_seqmodels"
# Lowest first. A part may import its own modules and those of the parts before it.
LAYERS = ["models", "data", "storage", "provenance", "evaluation", "training", "tasks", "serving", "cards", "comparison"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, bool]]:
    """The package's modules that ``path`` imports, each with whether the import is at the top of the module."""
    tree = ast.parse(path.read_text())
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package[:len(package) - node.level + 1] if node.level else []
        module = ".".join(base + (node.module.split(".") if node.module else []))
        if not module.startswith("hf_seqmodels"):
            continue
        for alias in node.names:  # `from . import models` imports a module
            sub = f"{module}.{alias.name}"
            is_module = (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").is_file() or (
                PACKAGE.parent / sub.replace(".", "/") / "__init__.py").is_file()
            found.append((sub if is_module else module, node in tree.body))
    return found


def part(module: str) -> str | None:
    """The part of the package ``module`` belongs to (its first name below hf_seqmodels); None for the root
    package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


GRAPH = {module_name(path): imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module):
    mine = part(module)
    if mine is None:
        return  # hf_seqmodels/__init__.py registers the models: it may import any part
    assert mine in LAYERS, f"{module}: add its part {mine!r} to LAYERS (and to docs/architecture.md)"
    upward = [target for target, _ in GRAPH[module] if part(target) is not None
              and LAYERS.index(part(target)) > LAYERS.index(mine)]
    assert not upward, f"{module} imports {upward}, which lie above {mine!r} in {LAYERS}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_import_of_the_package_inside_a_function(module):
    inner = [target for target, at_top in GRAPH[module] if not at_top]
    assert not inner, f"{module} imports {inner} inside a function"


def test_no_module_imports_itself_back():
    edges = {module: {target for target, _ in targets if target in GRAPH and target != module}
             for module, targets in GRAPH.items()}
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError(f"imports in a circle: {' -> '.join(path[path.index(module):] + [module])}")
        if module in done:
            return
        path.append(module)
        for target in sorted(edges[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(edges):
        visit(module)


def test_an_upward_import_would_be_found(tmp_path):
    upward = tmp_path / "hf_seqmodels" / "data" / "upward.py"
    upward.parent.mkdir(parents=True)
    upward.write_text("from ..training.loop import train\n\ndef f():\n    from ..tasks import translation\n")
    global PACKAGE
    real, PACKAGE = PACKAGE, tmp_path / "hf_seqmodels"
    try:
        found = imports(upward)
    finally:
        PACKAGE = real
    assert found == [("hf_seqmodels.training.loop", True), ("hf_seqmodels.tasks", False)]
