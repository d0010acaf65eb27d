"""The installed package carries its JupyterLab extension and enables its server extension:
what `jupyter labextension list` / `jupyter server extension list` report after pip install."""
import json
import re
import subprocess
import sys
from pathlib import Path

import jupyter_core.paths
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _jupyter(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jupyter", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def reports():
    """Both lists, run at once: each command imports every installed extension (seconds)."""
    running = {"labextension": _jupyter("labextension", "list"),
               "server": _jupyter("server", "extension", "list")}
    out = {}
    for name, process in running.items():
        try:
            text, _ = process.communicate(timeout=120)
        finally:
            process.kill()
        assert process.returncode == 0, text
        out[name] = re.sub(r"\x1b\[[0-9;]*m", "", text)   # the lists are colored
    return out


def _line(report: str, name: str) -> str:
    lines = [line for line in report.splitlines() if name in line]
    assert lines, f"{name} is not listed:\n{report}"
    return lines[0]


def test_labextension_is_installed_enabled_and_ok(reports):
    line = _line(reports["labextension"], "tfjupyter-labextension")
    assert "enabled" in line and "OK" in line and "disabled" not in line, line
    source = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert f"v{source['version']}" in line, line


def test_server_extension_is_enabled_and_ok(reports):
    report = reports["server"]
    assert re.search(r"^\s*tfjupyter\.lab enabled\s*$", report, re.M), report
    validation = report.split("- Validating tfjupyter.lab...", 1)
    assert len(validation) == 2, report
    # The verdict line ("tfjupyter.lab <version> OK"); import timings may come before it.
    verdict = next(line for line in validation[1].splitlines()
                   if line.strip().startswith("tfjupyter.lab"))
    assert verdict.split()[-1] == "OK", report


def test_installed_extension_matches_the_build():
    """A stale copy in share/jupyter/labextensions would make the browser tests test old code."""
    built = ROOT / "tfjupyter" / "lab" / "labextension" / "package.json"
    installed = [Path(d) / "labextensions" / "tfjupyter-labextension" / "package.json"
                 for d in jupyter_core.paths.jupyter_path()]
    installed = [p for p in installed if p.exists()]
    assert installed, "tfjupyter-labextension is in no labextensions directory of jupyter_path()"
    assert json.loads(installed[0].read_text())["jupyterlab"]["_build"] == \
        json.loads(built.read_text())["jupyterlab"]["_build"]
