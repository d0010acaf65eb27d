"""The %tf_* magics' options, declared with IPython's ``magic_arguments``.

IPython builds each magic's ``%name?`` help from the options its decorators declare. This
module adds what the magics need on top:

- ``subcommand``: a first word that picks what the magic does, with options of its own
  (``%tf_cluster start --ps 1``); the help lists every subcommand with its options.
- ``one_of``: options that exclude each other (``--cluster`` or ``--local``).
- ``parse_line``: a line parsed as a shell splits it (quotes group words and are removed;
  IPython's ``parse_argstring`` keeps them), every error a ``UsageError`` that names the
  magic and shows its usage, never argparse's exit.
"""
from __future__ import annotations

import argparse
import shlex
import textwrap
from typing import Optional

from IPython.core.error import UsageError
from IPython.core.magic_arguments import ArgDecorator

__all__ = ["subcommand", "one_of", "parse_line", "usage"]


class one_of(ArgDecorator):
    """``@one_of(argument(...), argument(...))``: at most one of these options may be given."""

    def __init__(self, *options: ArgDecorator):
        self.options = options

    def add_to_parser(self, parser, group):
        exclusive = (group or parser).add_mutually_exclusive_group()
        for option in self.options:
            option.add_to_parser(exclusive, None)
        return None


class subcommand(ArgDecorator):
    """``@subcommand(NAME, HELP, *options)``: the magic's first word may be NAME, which takes
    ``options`` (``argument``s and ``one_of``s).

    The parsed line's ``subcommand`` is the NAME given, None when the line starts with none.
    Meant for magics whose options all belong to a subcommand: the magic's usage line becomes
    ``%magic [NAME|...] ...``.
    """

    def __init__(self, name: str, help: str, *options: ArgDecorator):
        self.name = name
        self.help = help
        self.options = options
        self.parser: Optional[argparse.ArgumentParser] = None

    def add_to_parser(self, parser, group):
        if getattr(parser, "subcommands", None) is None:
            parser.subcommands = parser.add_subparsers(dest="subcommand", title="subcommands")
        self.parser = parser.subcommands.add_parser(self.name, help=self.help,
                                                    description=textwrap.fill(self.help, 79))
        for option in self.options:
            option.add_to_parser(self.parser, None)
        parser.usage = f"%(prog)s [{'|'.join(parser.subcommands.choices)}] ..."
        # The help IPython shows is the parser's; the epilog adds each subcommand's own help,
        # which argparse would show only for "%magic NAME -h".
        parser.epilog = (parser.epilog or "") + "\n" + self.parser.format_help()
        return None


def usage(magic_func) -> str:
    """``magic_func``'s usage line(s), as its ``%name?`` help starts."""
    return _usage(magic_func.parser)


def _usage(parser: argparse.ArgumentParser) -> str:
    # IPython's help formatter starts the usage with "::" and "%" for its reST help pages.
    return "usage: %" + parser.format_usage().partition("%")[2].strip()


def parse_line(magic_func, line: str, magic: Optional[str] = None) -> argparse.Namespace:
    """``line`` parsed by the options ``magic_func`` declares (its ``@magic_arguments``).

    A bad line raises a ``UsageError`` naming ``magic`` (default: ``%`` and the magic's name),
    or the subcommand, with what was wrong and the usage.
    """
    parser = magic_func.parser
    magic = magic or "%" + parser.prog
    try:
        words = shlex.split(line)
    except ValueError as e:   # an unclosed quote
        raise UsageError(f"{magic}: {e} in {line.strip()!r}") from None
    subcommands = [d for d in getattr(magic_func, "decorators", ()) if isinstance(d, subcommand)]
    if subcommands and words[:1] and words[0].startswith("-"):
        # argparse would take the option's value for the subcommand and say that is invalid
        raise UsageError(f"{magic}: options follow a subcommand, e.g. "
                         f"'{magic} {subcommands[-1].name} {words[0]} ...'\n{_usage(parser)}")
    try:
        return parser.parse_args(words)
    except UsageError as e:
        chosen = next((d for d in subcommands if words[:1] == [d.name]), None)
        if chosen is not None:
            magic, parser = f"{magic} {chosen.name}", chosen.parser
        raise UsageError(f"{magic}: {e}\n{_usage(parser)}") from None
