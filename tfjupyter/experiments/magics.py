"""``%tf_experiment``: a thin client of ``Experiment``, ``load`` and ``compare``.

    %tf_experiment start NAME [--cluster | --local] [--config KEY=VALUE ...]
    %tf_experiment end                      ends the running experiment; shows its record
    %tf_experiment [status]                 the running experiment
    %tf_experiment load NAME                shows a record
    %tf_experiment compare A B ... [--metric TAG] [--target X]

``%tf_experiment?`` lists every option.
"""
from __future__ import annotations

import argparse
import ast

from IPython.core.magic import Magics, UsageError, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..magic_args import one_of, parse_line, subcommand
from .store import shown_path

__all__ = ["ExperimentMagics"]

_DIR = argument("--dir", default=None, metavar="DIR",
                help="the folder that holds the records (default ./experiments)")


def _config_item(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


@magics_class
class ExperimentMagics(Magics):
    @magic_arguments()
    @subcommand(
        "start", "Record an experiment into DIR/NAME (a taken NAME becomes NAME-2, ...): this "
                 "kernel's sessions, cells and telemetry.",
        argument("name", metavar="NAME", help="the experiment's name"), _DIR,
        one_of(argument("--cluster", action="store_true",
                        help="record the running cluster's tasks too; it must be running "
                             "(default: a running cluster is recorded, if there is one)"),
               argument("--local", action="store_true",
                        help="record this kernel's sessions only")),
        argument("--config", type=_config_item, nargs="+", action="extend", default=[],
                 metavar="KEY=VALUE",
                 help="settings to record; values are Python literals where they parse "
                      "(lr=0.1 mode=async gives 0.1 and 'async')"),
        argument("--checkpoint-dir", default=None, metavar="DIR",
                 help="where the training saves its checkpoints"))
    @subcommand("end", "End the running experiment and show its record.")
    @subcommand("status", "The running experiment (the default).")
    @subcommand("load", "Show a record.",
                argument("name", metavar="NAME", help="an experiment's name, or its folder"),
                _DIR)
    @subcommand(
        "compare", "Compare records: their configs and final figures, and plots of the "
                   "metrics against step and wall time.",
        argument("names", nargs="+", metavar="NAME",
                 help="the experiments' names, or their folders"), _DIR,
        argument("--metric", default=None, metavar="TAG",
                 help="the summary tag to lead with (default: every tag)"),
        argument("--target", type=float, default=None, metavar="X",
                 help="a value of --metric: the table shows the time and step to reach it"),
        argument("--mode", choices=("min", "max"), default=None,
                 help="max: the target is reached at or above it, min: at or below it "
                      "(default: min for losses and errors, else max)"))
    @line_magic
    def tf_experiment(self, line: str = ""):
        """Record training runs as experiments, and load and compare their records."""
        from . import compare, current, load
        from .recorder import Experiment
        args = parse_line(self.tf_experiment, line)
        command = args.subcommand or "status"
        try:
            if command == "start":
                running = current()
                if running is not None:
                    raise UsageError(f"%tf_experiment start: experiment {running.name!r} is "
                                     "still running; '%tf_experiment end' it first")
                cluster = True if args.cluster else False if args.local else None
                experiment = Experiment(args.name, dir=args.dir, cluster=cluster,
                                        config=dict(args.config),
                                        checkpoint_dir=args.checkpoint_dir,
                                        shell=self.shell).start()
                following = ["this kernel's sessions"] + [
                    f"a cluster of {len(c.tasks)} tasks" for c in experiment.clusters]
                print(f"Recording experiment {experiment.id!r} into "
                      f"{shown_path(experiment.path)} ({' and '.join(following)}).")
                return None
            if command == "end":
                running = current()
                if running is None:
                    raise UsageError("%tf_experiment end: no experiment is running; start one "
                                     "with '%tf_experiment start NAME'")
                return running.end()
            if command == "status":
                running = current()
                if running is None:
                    print("No experiment is running.")
                return running
            if command == "load":
                return load(args.name, args.dir)
            if command == "compare":
                return compare(args.names, metric=args.metric, target=args.target,
                               mode=args.mode, dir=args.dir)
        except (ValueError, TypeError, RuntimeError) as e:   # NotARecord is a ValueError
            raise UsageError(f"%tf_experiment {command}: {e}") from None
