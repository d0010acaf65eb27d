"""The lab extension's own unit tests (jest, labextension/src/__tests__), run from pytest so the
README's one test command covers them. pip install -e . leaves labextension/node_modules (it
builds the extension there); without it or without node the test is skipped, naming why."""
import shutil
import subprocess
from pathlib import Path

from system_programs import need, need_executables

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def test_jest_suite_passes():
    need_executables("the lab extension's jest tests", ["node", "npm"],
                     "apt-get install nodejs npm")
    jest = LABEXTENSION / "node_modules" / ".bin" / "jest"
    need("the lab extension's jest tests", [] if jest.exists() else [str(jest)],
         "run `pip install -e .` (or npm ci in labextension/) first")
    npm = shutil.which("npm")
    result = subprocess.run([npm, "test", "--silent", "--", "--ci"], cwd=LABEXTENSION,
                            capture_output=True, text=True, timeout=240)
    report = result.stdout[-4000:] + result.stderr[-4000:]
    assert result.returncode == 0, report
    assert "failed" not in report.split("Tests:")[-1].split("\n")[0], report
