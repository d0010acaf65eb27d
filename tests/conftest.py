import os
import shutil
import tempfile

import pytest

import tfjupyter as tf

# The browser tests' session-wide JupyterLab server and their Chromium (tests/lab.py):
# registered here, once for every module that uses them.
from lab import _session_lab, chromium_browser, needs_chromium  # noqa: E402,F401 (fixtures)

# Clusters the tests start register themselves (tfjupyter/cluster/registry.py): in a directory
# of this run, not in the user's Jupyter runtime directory.
_REGISTRY = tempfile.mkdtemp(prefix="tfjupyter-test-registry-")
os.environ["TFJUPYTER_REGISTRY_DIR"] = _REGISTRY


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_REGISTRY, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_default_graph():
    """Every test starts with an empty default graph."""
    tf.reset_default_graph()
    yield
