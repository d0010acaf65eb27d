"""``tf.app``: ``tf.app.run()`` and command-line flags (``tf.app.flags``), without absl.

    flags = tf.app.flags
    flags.DEFINE_integer("max_steps", 1000, "Number of steps to run.")
    FLAGS = flags.FLAGS

    def main(argv):
        print(FLAGS.max_steps)

    if __name__ == "__main__":
        tf.app.run()

Flags are parsed with argparse from ``sys.argv`` when first read (unknown arguments, such as
the ones Jupyter passes to its kernels, are left alone): ``--name=value``, ``--name value``,
``--bool``/``--nobool``/``--bool=false``, single-dash forms too. Defining a flag again from
the same module (re-running a notebook cell) replaces it; from another module is an error.
"""
from __future__ import annotations

import argparse
import sys
import types
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

__all__ = ["run", "flags"]


class Error(Exception):
    """Base class of flag errors."""


class DuplicateFlagError(Error):
    pass


class IllegalFlagValueError(Error):
    pass


class UnrecognizedFlagError(Error):
    pass


_TRUE = ("true", "t", "1", "yes", "y")
_FALSE = ("false", "f", "0", "no", "n")


def _parse_bool(text) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"Non-boolean argument to boolean flag: {text!r}")


def _parse_int(text) -> int:
    try:
        return int(text)
    except ValueError:
        return int(text, 0)   # 0x1f, 0o17, 0b101


def _parse_list(text) -> List[str]:
    if isinstance(text, (list, tuple)):
        return [str(x) for x in text]
    text = str(text).strip()
    return [item.strip() for item in text.split(",")] if text else []


class _Flag:
    __slots__ = ("name", "default", "help", "kind", "parse", "module", "value", "present",
                 "enum_values", "required")

    def __init__(self, name: str, default, help_text: str, kind: str, parse: Callable,
                 module: str, enum_values: Optional[Sequence[str]] = None):
        self.name = name
        self.kind = kind
        self.parse = parse
        self.help = help_text or "(no help available)"
        self.module = module
        self.enum_values = list(enum_values) if enum_values is not None else None
        self.default = parse(default) if (kind == "list" and isinstance(default, str)) else default
        self.value = self.default
        self.present = False
        self.required = False

    def usage(self) -> str:
        kind = f"one of <{'|'.join(self.enum_values)}>" if self.enum_values else self.kind
        return f"  --{self.name}: {self.help}\n    (default: {self.default!r}) ({kind})"


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit; we raise instead
        raise IllegalFlagValueError(message.replace("argument ", "flag ", 1))


class FlagValues:
    """The set of defined flags and their values (``tf.app.flags.FLAGS``)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)
        object.__setattr__(self, "_extra", {})

    # -- definitions -------------------------------------------------------------------------------
    def _define(self, flag: _Flag) -> None:
        flags: Dict[str, _Flag] = self._flags
        old = flags.get(flag.name)
        if old is not None:
            if old.module != flag.module:
                raise DuplicateFlagError(
                    f"The flag '{flag.name}' is defined twice. First from {old.module}, Second "
                    f"from {flag.module}.  Description from first occurrence: {old.help}")
            if old.present:   # re-defined (a notebook cell run again): keep the command line's
                flag.value, flag.present = old.value, True
        flags[flag.name] = flag
        self._extra.pop(flag.name, None)

    # -- parsing -----------------------------------------------------------------------------------
    def _parser(self) -> argparse.ArgumentParser:
        parser = _ArgumentParser(add_help=False, allow_abbrev=False, prog="")
        for name, flag in self._flags.items():
            parser.add_argument(f"--{name}", dest=name, type=_named(flag.parse, flag.kind),
                                default=argparse.SUPPRESS)
            if flag.kind == "bool":
                parser.add_argument(f"--no{name}", dest=name, action="store_false",
                                    default=argparse.SUPPRESS)
        return parser

    def _normalize(self, arg: str) -> str:
        """'-name=v' -> '--name=v' and a bare boolean '--name' -> '--name=true', for our flags
        only (argparse would take '-f' for an abbreviation of '-fake', or a bool's value from
        the next argument)."""
        if not arg.startswith("-") or arg == "-":
            return arg
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, eq, _ = body.partition("=")
        flag = self._flags.get(name)
        if flag is None:
            if name.startswith("no") and not eq and name[2:] in self._flags \
                    and self._flags[name[2:]].kind == "bool":
                return "--" + body
            return arg
        if flag.kind == "bool" and not eq:
            return f"--{name}=true"
        return "--" + body

    def _parse(self, args: Sequence[str], known_only: bool) -> List[str]:
        """Parses args (no program name); returns the arguments that are not flags of ours."""
        args = [str(a) for a in args]
        if "--" in args:   # everything after '--' is left to the program
            cut = args.index("--")
            args, tail = args[:cut], args[cut + 1:]
        else:
            tail = []
        namespace, unparsed = self._parser().parse_known_args([self._normalize(a) for a in args])
        if not known_only:
            unknown = [a for a in unparsed if a.startswith("-") and len(a) > 1]
            if unknown:
                name = unknown[0].lstrip("-").partition("=")[0]
                raise UnrecognizedFlagError(f"Unknown command line flag '{name}'")
        for name, value in vars(namespace).items():
            flag = self._flags[name]
            flag.value, flag.present = value, True
        for flag in self._flags.values():
            if flag.required and flag.value is None:
                raise IllegalFlagValueError(f"flag --{flag.name}=None: Flag --{flag.name} must "
                                            "have a value other than None.")
        object.__setattr__(self, "_parsed", True)
        return unparsed + tail

    def __call__(self, argv: Sequence[str], known_only: bool = False) -> List[str]:
        """Parses ``argv`` (program name first); returns the program name and what is left."""
        argv = list(argv)
        if not argv:
            raise ValueError("argv cannot be an empty list, and must contain the program name "
                             "as the first element.")
        return argv[:1] + self._parse(argv[1:], known_only)

    def _parse_flags(self, args: Optional[Sequence[str]] = None) -> List[str]:
        """TensorFlow <= 1.4's entry point: parses args (default sys.argv[1:])."""
        return self._parse(sys.argv[1:] if args is None else args, known_only=True)

    def is_parsed(self) -> bool:
        return self._parsed

    def mark_as_parsed(self) -> None:
        object.__setattr__(self, "_parsed", True)

    def unparse_flags(self) -> None:
        for flag in self._flags.values():
            flag.value, flag.present = flag.default, False
        object.__setattr__(self, "_parsed", False)

    def _ensure_parsed(self) -> None:
        if not self._parsed:
            self._parse(sys.argv[1:], known_only=True)

    # -- values ------------------------------------------------------------------------------------
    def __getattr__(self, name: str):
        if name.startswith("__") and name != "__flags":
            raise AttributeError(name)
        self._ensure_parsed()
        if name == "__flags":  # old code: FLAGS.__flags -> {name: value}
            return self.flag_values_dict()
        flag = self._flags.get(name)
        if flag is not None:
            return flag.value
        if name in self._extra:
            return self._extra[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value) -> None:
        self._ensure_parsed()
        flag = self._flags.get(name)
        if flag is None:
            self._extra[name] = value   # TensorFlow <= 1.4 allowed setting undefined flags
        else:
            flag.value = value

    def __delattr__(self, name: str) -> None:
        if name not in self._flags:
            raise AttributeError(name)
        del self._flags[name]

    def __contains__(self, name: str) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(list(self._flags))

    def __len__(self) -> int:
        return len(self._flags)

    def __dir__(self) -> List[str]:
        return sorted(set(self._flags) | set(self._extra) | set(super().__dir__()))

    def flag_values_dict(self) -> Dict[str, Any]:
        values = {name: flag.value for name, flag in self._flags.items()}
        values.update(self._extra)
        return values

    def get_flag_value(self, name: str, default):
        flag = self._flags.get(name)
        return default if flag is None else flag.value

    def get_help(self) -> str:
        by_module: Dict[str, List[_Flag]] = {}
        for flag in self._flags.values():
            by_module.setdefault(flag.module, []).append(flag)
        parts = []
        for module, module_flags in by_module.items():
            parts.append(f"{module}:")
            parts.extend(f.usage() for f in sorted(module_flags, key=lambda f: f.name))
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.get_help()


def _named(fn: Callable, name: str) -> Callable:
    def convert(text):
        return fn(text)
    convert.__name__ = name   # argparse names the type in its error: "invalid int value"
    return convert


FLAGS = FlagValues()


def _calling_module() -> str:
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__", "__main__") if frame is not None else "__main__"


def _define(name: str, default, help_text: str, kind: str, parse: Callable,
            flag_values: Optional[FlagValues], enum_values=None) -> None:
    if not isinstance(name, str) or not name:
        raise Error(f"Flag names must be non-empty strings, got {name!r}")
    values = FLAGS if flag_values is None else flag_values
    values._define(_Flag(name, default, help_text, kind, parse, _calling_module(), enum_values))


def DEFINE_string(name: str, default: Optional[str], help: str,  # noqa: N802,A002
                  flag_values: Optional[FlagValues] = None) -> None:
    _define(name, default, help, "string", str, flag_values)


def DEFINE_integer(name: str, default: Optional[int], help: str,  # noqa: N802,A002
                   flag_values: Optional[FlagValues] = None) -> None:
    _define(name, default, help, "int", _parse_int, flag_values)


def DEFINE_float(name: str, default: Optional[float], help: str,  # noqa: N802,A002
                 flag_values: Optional[FlagValues] = None) -> None:
    _define(name, default, help, "float", float, flag_values)


def DEFINE_boolean(name: str, default: Optional[bool], help: str,  # noqa: N802,A002
                   flag_values: Optional[FlagValues] = None) -> None:
    _define(name, default, help, "bool", _parse_bool, flag_values)


DEFINE_bool = DEFINE_boolean


def DEFINE_enum(name: str, default: Optional[str], enum_values: Iterable[str],  # noqa: N802
                help: str, flag_values: Optional[FlagValues] = None) -> None:  # noqa: A002
    choices = [str(v) for v in enum_values]
    if not choices:
        raise ValueError(f"enum_values of flag {name} cannot be empty")

    def parse(text):
        if text not in choices:
            raise argparse.ArgumentTypeError(f"value should be one of <{'|'.join(choices)}>, "
                                             f"got {text!r}")
        return text
    if default is not None and default not in choices:
        raise IllegalFlagValueError(f"flag --{name}={default}: value should be one of "
                                    f"<{'|'.join(choices)}>")
    _define(name, default, help, "enum", parse, flag_values, choices)


def DEFINE_list(name: str, default, help: str,  # noqa: N802,A002
                flag_values: Optional[FlagValues] = None) -> None:
    """A comma-separated list of strings."""
    _define(name, default, help, "list", _parse_list, flag_values)


def mark_flag_as_required(flag_name: str, flag_values: Optional[FlagValues] = None) -> None:
    """Parsing fails unless the flag ends up with a value other than None."""
    values = FLAGS if flag_values is None else flag_values
    if flag_name not in values:
        raise KeyError(f"Flag --{flag_name} is not defined")
    values._flags[flag_name].required = True


def mark_flags_as_required(flag_names: Iterable[str],
                           flag_values: Optional[FlagValues] = None) -> None:
    for name in flag_names:
        mark_flag_as_required(name, flag_values)


flags = types.ModuleType(f"{__name__}.flags", "Command-line flags (tf.app.flags).")
for _name in ("FLAGS", "FlagValues", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
              "DEFINE_boolean", "DEFINE_bool", "DEFINE_enum", "DEFINE_list",
              "mark_flag_as_required", "mark_flags_as_required", "Error", "DuplicateFlagError",
              "IllegalFlagValueError", "UnrecognizedFlagError"):
    setattr(flags, _name, globals()[_name])
flags.__all__ = [n for n in vars(flags) if not n.startswith("_")]
sys.modules[flags.__name__] = flags   # so that `import tfjupyter.app.flags` works too

_HELP_ARGS = ("--help", "-help", "--helpfull", "--helpshort", "-h", "-?")


def run(main: Optional[Callable] = None, argv: Optional[Sequence[str]] = None) -> None:
    """Parses flags from argv (default sys.argv), calls ``main(argv)`` with the program name
    and the arguments that are not flags, and exits with its return value (``sys.exit``)."""
    args = list(sys.argv if argv is None else argv) or [sys.argv[0] if sys.argv else ""]
    if any(a in _HELP_ARGS for a in args[1:]):
        print(FLAGS.get_help())
        sys.exit(0)
    try:
        remaining = FLAGS(args, known_only=True)
    except Error as e:
        sys.stderr.write(f"FATAL Flags parsing error: {e}\n"
                         "Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(remaining))
