"""``%tf_experiment``: a thin client of ``Experiment``, ``load`` and ``compare``.

    %tf_experiment start NAME [--dir D] [--cluster | --local] [--config KEY=VALUE ...]
                              [--checkpoint-dir D]
    %tf_experiment end                      ends the running experiment; shows its record
    %tf_experiment [status]                 the running experiment
    %tf_experiment load NAME [--dir D]      shows a record
    %tf_experiment compare A B ... [--dir D] [--metric TAG] [--target X] [--mode min|max]

Records go to ./experiments/NAME (``--dir`` changes ./experiments; a taken NAME becomes
NAME-2, ...). ``--cluster`` requires a running cluster and records its tasks' telemetry (the
default follows one if it is running); ``--local`` records this kernel's sessions only.
Config values are Python literals where they parse (``lr=0.1 mode=async`` gives 0.1 and
"async").
"""
from __future__ import annotations

import argparse
import ast
import shlex
from typing import List

from IPython.core.magic import Magics, UsageError, line_magic, magics_class

__all__ = ["ExperimentMagics"]

_USAGE = "usage: %tf_experiment [start NAME ... | end | status | load NAME | compare A B ...]"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")


def _config_item(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def _start_parser() -> _Parser:
    p = _Parser(prog="%tf_experiment start", add_help=False)
    p.add_argument("name")
    p.add_argument("--dir", default=None)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--cluster", action="store_true")
    which.add_argument("--local", action="store_true")
    p.add_argument("--config", type=_config_item, nargs="+", action="extend", default=[])
    p.add_argument("--checkpoint-dir", default=None)
    return p


def _compare_parser() -> _Parser:
    p = _Parser(prog="%tf_experiment compare", add_help=False)
    p.add_argument("names", nargs="+")
    p.add_argument("--dir", default=None)
    p.add_argument("--metric", default=None)
    p.add_argument("--target", type=float, default=None)
    p.add_argument("--mode", choices=("min", "max"), default=None)
    return p


@magics_class
class ExperimentMagics(Magics):
    @line_magic
    def tf_experiment(self, line: str = ""):
        """%tf_experiment start NAME | end | status | load NAME | compare A B ... (see the
        module's help)."""
        from . import compare, current, load
        from .recorder import Experiment
        try:
            words: List[str] = shlex.split(line)
        except ValueError as e:
            raise UsageError(f"%tf_experiment: {e}") from None
        command, rest = (words[0], words[1:]) if words else ("status", [])
        try:
            if command == "start":
                a = _start_parser().parse_args(rest)
                running = current()
                if running is not None:
                    raise UsageError(f"%tf_experiment start: experiment {running.name!r} is "
                                     "still running; '%tf_experiment end' it first")
                cluster = True if a.cluster else False if a.local else None
                experiment = Experiment(a.name, dir=a.dir, cluster=cluster,
                                        config=dict(a.config), checkpoint_dir=a.checkpoint_dir,
                                        shell=self.shell).start()
                following = ["this kernel's sessions"] + [
                    f"a cluster of {len(c.tasks)} tasks" for c in experiment.clusters]
                print(f"Recording experiment {experiment.id!r} into {experiment.path} "
                      f"({' and '.join(following)}).")
                return None
            if command == "end" and not rest:
                running = current()
                if running is None:
                    raise UsageError("%tf_experiment end: no experiment is running; start one "
                                     "with '%tf_experiment start NAME'")
                return running.end()
            if command == "status" and not rest:
                running = current()
                if running is None:
                    print("No experiment is running.")
                return running
            if command == "load":
                p = _Parser(prog="%tf_experiment load", add_help=False)
                p.add_argument("name")
                p.add_argument("--dir", default=None)
                a = p.parse_args(rest)
                return load(a.name, a.dir)
            if command == "compare":
                a = _compare_parser().parse_args(rest)
                return compare(a.names, metric=a.metric, target=a.target, mode=a.mode,
                               dir=a.dir)
        except (ValueError, TypeError, RuntimeError) as e:   # NotARecord is a ValueError
            raise UsageError(f"%tf_experiment {command}: {e}") from None
        raise UsageError(f"{_USAGE}; got {line.strip()!r}")
