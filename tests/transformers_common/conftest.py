"""transformers' own common tests (ModelTesterMixin, GenerationTesterMixin, ConfigTester) run against our families:
an opt-in run, since their files are not in the transformers wheel.

    HF_SEQMODELS_TRANSFORMERS_TESTS=<path> bash scripts/test.sh tests/transformers_common

``<path>`` is a transformers source checkout of the installed version (``git clone --depth 1 --branch v5.24.0
https://github.com/huggingface/transformers``), or ``sdist``: the source distribution of the installed version is then
fetched from the package index into the git-ignored ``.transformers_tests/`` and its ``tests/`` used. That archive
lacks three files its ``test_modeling_common.py`` and ``test_configuration_common.py`` import
(``generation/test_utils.py``, ``exporters/test_export.py``, ``utils/test_configuration_utils.py``); they are replaced
by empty stand-ins, so that a run from the sdist is ModelTesterMixin and ConfigTester without GenerationTesterMixin,
the export tests and the common-kwargs check, and says so in its header. Without the variable these tests are not
collected.
"""

import importlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import transformers

from tests.conftest import REPO_ROOT

SETTING = "HF_SEQMODELS_TRANSFORMERS_TESTS"
PACKAGE = "transformers_tests"  # not "tests": that name is ours
# What the PyPI sdist's tests/ imports but does not ship, and what stands in for each in a run from the sdist.
STAND_INS = {
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "utils/test_configuration_utils.py": "config_common_kwargs = {}\n",
}

collect_ignore_glob = [] if os.environ.get(SETTING) else ["test_*.py"]


def _from_sdist(folder: Path) -> tuple[Path, list[str]]:
    """``folder/transformers_tests``: the sdist's tests/ with stand-ins for the files it lacks (fetched once)."""
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
    missing = [name for name in STAND_INS if not (tests / name).is_file() or (tests / name).read_text() == STAND_INS[name]]
    for name in missing:
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).parent.joinpath("__init__.py").touch()
        (tests / name).write_text(STAND_INS[name])
    return tests, missing


def _from_checkout(source: Path, folder: Path) -> Path:
    """``folder/transformers_tests``: a link to a transformers checkout's tests/."""
    tests = source / "tests" if (source / "tests" / "test_modeling_common.py").is_file() else source
    if not (tests / "test_modeling_common.py").is_file():
        raise FileNotFoundError(f"{SETTING}={source} is neither a transformers checkout nor its tests/ folder.")
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
    if setting == "sdist":
        tests, stand_ins = _from_sdist(root / "sdist")
        folder = root / "sdist"
    else:
        folder = root / "checkout"
        tests, stand_ins = _from_checkout(Path(setting), folder), []
    sys.path.insert(0, str(folder))
    importlib.import_module(f"{PACKAGE}.test_modeling_common")
    config.stash_transformers_tests = (tests, stand_ins)


def pytest_report_header(config):
    if not hasattr(config, "stash_transformers_tests"):
        return None
    tests, stand_ins = config.stash_transformers_tests
    lines = [f"transformers {transformers.__version__} common tests from {tests}"]
    if stand_ins:
        lines.append("not in the sdist, replaced by empty stand-ins (not run): " + ", ".join(stand_ins))
    return lines
