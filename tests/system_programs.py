"""The system programs some tests need, and what happens when one is missing.

A test that needs OpenSSH's server, Chromium, Node.js or openssl calls ``need(...)``: where the
program is missing the test skips, naming the program and the command that installs it. CI sets
``TFJUPYTER_TEST_SYSTEM_PROGRAMS=require`` (``.ci/run``, which installs them all first): then a
missing program fails the test instead, so a broken install step cannot pass as skipped tests.
Nothing else decides it: not the user the tests run as, nor whether this looks like CI.
"""
from __future__ import annotations

import os
import shutil
from typing import Iterable, Optional

import pytest

MODE_ENV = "TFJUPYTER_TEST_SYSTEM_PROGRAMS"
MODES = ("skip", "require")


def mode() -> str:
    value = os.environ.get(MODE_ENV, "skip").strip().lower() or "skip"
    if value not in MODES:
        raise pytest.UsageError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def missing_executables(names: Iterable[str]) -> list:
    """The names (a command on PATH, or an absolute path) that cannot be run here."""
    return [n for n in names
            if not (os.access(n, os.X_OK) if os.path.isabs(n) else shutil.which(n))]


def need(what: str, missing: Iterable[str], install: str) -> None:
    """Skips (or, under ``require``, fails) the calling test when ``missing`` is not empty.

    ``what`` says what needs them ("the ssh launcher tests"), ``install`` how to get them
    ("apt-get install openssh-server openssh-client")."""
    missing = list(missing)
    if not missing:
        return
    message = f"{what} need {', '.join(missing)}: {install}"
    if mode() == "require":
        pytest.fail(f"{message} ({MODE_ENV}=require makes this a failure)", pytrace=False)
    pytest.skip(message)


def need_executables(what: str, names: Iterable[str], install: str) -> None:
    need(what, missing_executables(names), install)

