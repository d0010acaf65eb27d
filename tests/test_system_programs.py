"""A missing system program skips a test, naming it and its install command, unless
TFJUPYTER_TEST_SYSTEM_PROGRAMS=require (CI's switch) makes it a failure; who runs the tests
(root or not) decides nothing."""
import os
import sys

import pytest
from _pytest.outcomes import Failed, Skipped

import system_programs
from system_programs import need_executables

ABSENT = "/nonexistent/tfjupyter-test-program"


def test_a_missing_program_skips_naming_it_and_its_install_command(monkeypatch):
    monkeypatch.delenv(system_programs.MODE_ENV, raising=False)
    with pytest.raises(Skipped, match=f"the x tests need {ABSENT}, no-such-command-here: "
                                      "apt-get install x"):
        need_executables("the x tests", [ABSENT, "no-such-command-here", sys.executable, "sh"],
                         "apt-get install x")


def test_require_makes_a_missing_program_a_failure_whoever_runs_the_tests(monkeypatch):
    monkeypatch.setenv(system_programs.MODE_ENV, "require")
    with pytest.raises(Failed, match=f"need {ABSENT}: apt-get install x .*=require"):
        need_executables("the x tests", [ABSENT], "apt-get install x")
    for uid in (0, 1000):  # root or not: the same answer
        monkeypatch.setattr(os, "getuid", lambda uid=uid: uid)
        monkeypatch.setattr(os, "geteuid", lambda uid=uid: uid)
        with pytest.raises(Failed):
            need_executables("the x tests", [ABSENT], "apt-get install x")


def test_present_programs_pass_in_either_mode(monkeypatch):
    for mode in ("skip", "require"):
        monkeypatch.setenv(system_programs.MODE_ENV, mode)
        need_executables("the x tests", [sys.executable, "sh"], "unused")


def test_an_unknown_mode_is_a_usage_error(monkeypatch):
    monkeypatch.setenv(system_programs.MODE_ENV, "always")
    with pytest.raises(pytest.UsageError, match="TFJUPYTER_TEST_SYSTEM_PROGRAMS='always'"):
        need_executables("the x tests", [ABSENT], "apt-get install x")
