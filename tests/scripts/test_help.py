"""Every script answers --help (argparse formats each help text with %-formatting: a bare "%" in one broke it)."""

import runpy
import sys

import pytest

from hf_seqmodels.data.paths import REPO_ROOT

SCRIPTS = sorted(path.name for path in (REPO_ROOT / "scripts").glob("*.py"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_help(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(REPO_ROOT / "scripts" / name), run_name="__main__")
    assert exit_.value.code in (0, None) and "usage:" in capsys.readouterr().out
