"""``tf.logging``: TensorFlow 1.x's logging module over Python's ``logging``, on the logger
"tfjupyter". As in TensorFlow, messages go to stderr as "LEVEL:tfjupyter:message" and the
verbosity starts at WARN, so ``tf.logging.set_verbosity(tf.logging.INFO)`` is what shows INFO."""
from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "debug", "info", "warn", "warning",
           "error", "fatal", "log", "vlog", "log_if", "log_every_n", "log_first_n", "flush",
           "get_verbosity", "set_verbosity"]

DEBUG, INFO, WARN, ERROR, FATAL = (_logging.DEBUG, _logging.INFO, _logging.WARN, _logging.ERROR,
                                   _logging.FATAL)



class _StderrHandler(_logging.StreamHandler):
    """Writes to whatever sys.stderr is when a message is logged (Jupyter and test runners
    replace it after import)."""

    def __init__(self):
        super().__init__(_sys.stderr)

    @property
    def stream(self):
        return _sys.stderr

    @stream.setter
    def stream(self, value):
        pass


_logger = _logging.getLogger("tfjupyter")
# As TensorFlow's: a handler of its own only when the root logger has none (no double lines
# where the application configured logging), and records still propagate to the root, so
# applications and test runners that capture logging see them.
if not _logger.handlers and not _logging.getLogger().handlers:
    _handler = _StderrHandler()
    _handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
    _logger.addHandler(_handler)
if _logger.level == _logging.NOTSET:
    _logger.setLevel(WARN)


def log(level: int, msg, *args, **kwargs) -> None:
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    _logger.fatal(msg, *args, **kwargs)


def vlog(level: int, msg, *args, **kwargs) -> None:
    _logger.log(level, msg, *args, **kwargs)


def log_if(level: int, msg, condition, *args) -> None:
    if condition:
        _logger.log(level, msg, *args)


_counts: dict = {}
_counts_lock = _threading.Lock()


def _call_count() -> int:
    """How many times the calling line has logged through log_every_n/log_first_n before."""
    frame = _sys._getframe(2)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _counts_lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    return count


def log_every_n(level: int, msg, n: int, *args) -> None:
    """Logs on the 1st, (n+1)th, (2n+1)th... call from the same line."""
    if _call_count() % max(int(n), 1) == 0:
        _logger.log(level, msg, *args)


def log_first_n(level: int, msg, n: int, *args) -> None:
    """Logs the first n calls from the same line."""
    if _call_count() < n:
        _logger.log(level, msg, *args)


def flush() -> None:
    for handler in _logger.handlers:
        handler.flush()


def get_verbosity() -> int:
    return _logger.getEffectiveLevel()


def set_verbosity(v: int) -> None:
    _logger.setLevel(v)
