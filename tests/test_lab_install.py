"""The installed package carries its JupyterLab extension and enables its server extension:
what `jupyter labextension list` / `jupyter server extension list` report after pip install."""
import json
import re
import subprocess
import sys
from pathlib import Path

import jupyter_core.paths

ROOT = Path(__file__).resolve().parents[1]


def _jupyter(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "jupyter", *args], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    # Both commands write their lists to stderr, colored.
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


def _line(report: str, name: str) -> str:
    lines = [line for line in report.splitlines() if name in line]
    assert lines, f"{name} is not listed:\n{report}"
    return lines[0]


def test_labextension_is_installed_enabled_and_ok():
    line = _line(_jupyter("labextension", "list"), "tfjupyter-labextension")
    assert "enabled" in line and "OK" in line and "disabled" not in line, line
    source = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert f"v{source['version']}" in line, line


def test_server_extension_is_enabled_and_ok():
    report = _jupyter("server", "extension", "list")
    assert re.search(r"^\s*tfjupyter\.lab enabled\s*$", report, re.M), report
    validation = report.split("- Validating tfjupyter.lab...", 1)
    assert len(validation) == 2, report
    verdict = next(line for line in validation[1].splitlines() if line.strip())
    assert verdict.split()[0] == "tfjupyter.lab" and verdict.split()[-1] == "OK", report


def test_installed_extension_matches_the_build():
    """A stale copy in share/jupyter/labextensions would make the browser tests test old code."""
    built = ROOT / "tfjupyter" / "lab" / "labextension" / "package.json"
    installed = [Path(d) / "labextensions" / "tfjupyter-labextension" / "package.json"
                 for d in jupyter_core.paths.jupyter_path()]
    installed = [p for p in installed if p.exists()]
    assert installed, "tfjupyter-labextension is in no labextensions directory of jupyter_path()"
    assert json.loads(installed[0].read_text())["jupyterlab"]["_build"] == \
        json.loads(built.read_text())["jupyterlab"]["_build"]
