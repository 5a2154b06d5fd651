"""transformers' own common tests (ModelTesterMixin, GenerationTesterMixin, the export mixin, ConfigTester) run
against our families: an opt-in run, since their files are not in the transformers wheel.

    HF_SEQMODELS_TRANSFORMERS_TESTS=<path> bash scripts/test.sh tests/transformers_common

``<path>`` is one of:

- a transformers source tree of the installed version (``git clone --depth 1 --branch v5.24.0
  https://github.com/huggingface/transformers``): its ``tests/`` is used as it is;
- a transformers source tree of another version, such as a snapshot exported with ``git archive <commit> tests
  utils/test_module setup.py``: the source distribution of the installed version is fetched from the package index
  into the git-ignored ``.transformers_tests/``, and the three files that archive lacks (``generation/test_utils.py``,
  ``exporters/test_export.py``, ``utils/test_configuration_utils.py``) are taken from ``<path>``. ModelTesterMixin and
  ConfigTester are then the installed version's, GenerationTesterMixin and the export mixin ``<path>``'s;
- ``sdist``: the source distribution alone, with empty stand-ins for those three files (ModelTesterMixin and
  ConfigTester only).

The run's header names the tree, its version (its ``setup.py``) and commit (``git rev-parse HEAD`` in a checkout, else
a file ``COMMIT`` beside ``tests/``, which ``git archive --add-virtual-file=COMMIT:<commit>`` writes). A tree's tests
that call what the installed transformers no longer has are skipped with the reason (``version_disagreements``).
Without the variable these tests are not collected.
"""

import importlib
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import transformers

from tests.conftest import REPO_ROOT

SETTING = "HF_SEQMODELS_TRANSFORMERS_TESTS"
PACKAGE = "transformers_tests"  # not "tests": that name is ours
# What the PyPI sdist's tests/ imports but does not ship, and what stands in for each in a run from the sdist alone.
STAND_INS = {
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "utils/test_configuration_utils.py": "config_common_kwargs = {}\n",
}

collect_ignore_glob = [] if os.environ.get(SETTING) else ["test_*.py"]


def _sdist_tests(folder: Path) -> Path:
    """``folder/transformers_tests``: the installed version's sdist tests/ (fetched once)."""
    tests = folder / PACKAGE
    if not tests.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = folder / f"transformers-{transformers.__version__}.tar.gz"
        if not archive.is_file():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
                 f"transformers=={transformers.__version__}", "-d", str(folder)],
                check=True,
            )
        prefix = f"transformers-{transformers.__version__}/tests/"
        partial = folder / f"{PACKAGE}.partial"
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
            for member in members:
                member.name = member.name[len(prefix):]
            tar.extractall(partial, members=members, filter="data")
        (partial / "__init__.py").touch()  # a package in the repository, where its files import each other
        partial.rename(tests)
    return tests


def _fill(tests: Path, source: Path | None) -> None:
    """Write into ``tests`` the files of STAND_INS: ``source``'s (another tree's tests/), else the stand-ins."""
    for name, stand_in in STAND_INS.items():
        text = (source / name).read_text() if source is not None else stand_in
        path = tests / name
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.parent.joinpath("__init__.py").touch()
            path.write_text(text)


def _tree(source: Path) -> tuple[Path, str, str]:
    """The tests/ of a transformers tree (``source`` or its parent), its version and its commit."""
    root = source.parent if (source / "test_modeling_common.py").is_file() else source
    if not (root / "tests" / "test_modeling_common.py").is_file():
        raise FileNotFoundError(f"{SETTING}={source} is neither a transformers source tree nor its tests/ folder.")
    setup = root / "setup.py"
    found = re.search(r'version="([^"]+)"', setup.read_text()) if setup.is_file() else None
    version = found.group(1) if found else "unknown version (no setup.py)"
    # a checkout's own commit: not that of a repository the tree merely sits in (an export in .transformers_tests/)
    git = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"], capture_output=True,
                         text=True)
    top, _, head = git.stdout.partition("\n")
    if git.returncode == 0 and Path(top).resolve() == root.resolve():
        commit = head.strip()
    else:
        commit = (root / "COMMIT").read_text().strip() if (root / "COMMIT").is_file() else "unknown commit (no COMMIT)"
    return root / "tests", version, commit


def _link(tests: Path, folder: Path) -> Path:
    """``folder/transformers_tests``: a link to ``tests``."""
    link = folder / PACKAGE
    folder.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.resolve() != tests.resolve():
        link.unlink()
    if not link.exists():
        link.symlink_to(tests.resolve(), target_is_directory=True)
    return link


def pytest_configure(config):
    setting = os.environ.get(SETTING)
    if not setting:
        return
    root = REPO_ROOT / ".transformers_tests" / transformers.__version__
    lines = []
    if setting == "sdist":
        folder = root / "sdist"
        tests = _sdist_tests(folder)
        _fill(tests, None)
        lines.append(f"transformers {transformers.__version__} common tests from its sdist, {tests}")
        lines.append("not in the sdist, replaced by empty stand-ins (not run): " + ", ".join(STAND_INS))
    else:
        source, version, commit = _tree(Path(setting))
        described = f"{source} (transformers {version}, commit {commit})"
        if version == transformers.__version__:
            folder = root / "checkout"
            tests = _link(source, folder)
            lines.append(f"transformers {transformers.__version__} common tests from {described}")
        else:
            folder = root / "sdist"
            tests = _sdist_tests(folder)
            _fill(tests, source)
            # utils/test_configuration_utils.py imports a module of the tree's utils/ (next to tests/) by that path
            sys.path.append(str(source.parent / "utils"))
            lines.append(f"transformers {transformers.__version__} common tests from its sdist, {tests}")
            lines.append(f"not in the sdist, taken from {described}: " + ", ".join(STAND_INS))
    sys.path.insert(0, str(folder))
    # generation/test_utils.py imports the export mixin as `tests.exporters.test_export`, transformers' own package
    # name; here `tests` is ours, so that one module is found under the name it asks for.
    if setting != "sdist":
        export = importlib.import_module(f"{PACKAGE}.exporters.test_export")
        sys.modules["tests.exporters"] = importlib.import_module(f"{PACKAGE}.exporters")
        sys.modules["tests.exporters.test_export"] = export
    importlib.import_module(f"{PACKAGE}.test_modeling_common")
    config.stash_transformers_tests = lines


def version_disagreements() -> dict[str, str]:
    """Test name prefix -> why, for the tests of the run's tree that call what the installed transformers no longer
    has (a tree of another version than the installed one): those are skipped, each with its reason."""
    export = sys.modules.get(f"{PACKAGE}.exporters.test_export")
    exported_model = getattr(importlib.import_module("transformers.exporters.base"), "ExportedModel", None)
    found = {}
    if (export is not None and "exported_program.module()" in Path(export.__file__).read_text()
            and exported_model is not None and not hasattr(exported_model, "module")):
        found["test_torch_export"] = (
            f"the export test calls `.module()` on what DynamoExporter.export returns, a torch ExportedProgram in the "
            f"tree's transformers; in the installed {transformers.__version__} it returns an ExportedModel, which "
            "has no `.module()`")
    return found


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "stash_transformers_tests"):
        return
    for prefix, reason in version_disagreements().items():
        for item in items:
            if item.name.startswith(prefix):
                item.add_marker(pytest.mark.skip(reason=reason))


def pytest_report_header(config):
    return getattr(config, "stash_transformers_tests", None)
