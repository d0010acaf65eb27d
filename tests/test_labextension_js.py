"""The lab extension's own unit tests (jest, labextension/src/__tests__), run from pytest so the
README's one test command covers them. pip install -e . leaves labextension/node_modules (it
builds the extension there); without it or without node the test is skipped, naming why."""
import shutil
import subprocess
from pathlib import Path

import pytest

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def test_jest_suite_passes():
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node/npm not on PATH")
    if not (LABEXTENSION / "node_modules" / ".bin" / "jest").exists():
        pytest.skip("labextension/node_modules has no jest: run `pip install -e .` (or npm ci "
                    "in labextension/) first")
    result = subprocess.run([npm, "test", "--silent", "--", "--ci"], cwd=LABEXTENSION,
                            capture_output=True, text=True, timeout=240)
    report = result.stdout[-4000:] + result.stderr[-4000:]
    assert result.returncode == 0, report
    assert "failed" not in report.split("Tests:")[-1].split("\n")[0], report
