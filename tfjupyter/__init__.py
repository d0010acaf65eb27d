"""tfjupyter: the TensorFlow 1.x graph programming model, interactive in Jupyter.

``import tfjupyter as tf`` gives the TF 1.x API and the 0.x names the classic tutorials use.

The API (gathered in tfjupyter/_api.py) loads on the first use of one of its names
(``tf.constant``, ``dir(tf)``, ``from tfjupyter import *``), so that a process that needs only
a light part of the package — the Jupyter server extension, ``tfjupyter.lab.server`` — never
pays for it. ``import tfjupyter as tf`` and a first ``tf.<name>`` cost what the import alone
cost before. Any module of the package can be imported first (tests/test_light_imports.py).
"""
from __future__ import annotations

import importlib as _importlib
import importlib.util as _importlib_util

__version__ = "0.1.0"

# tf.logging at once: whether it adds its own stderr handler depends on whether the root logger
# has one when it is imported (as TensorFlow's), which must not move to a first use.
from . import logging  # noqa: E402,F401


def load_ipython_extension(ipython) -> None:
    """``%load_ext tfjupyter``: registers the %tf_* magics."""
    from .magics import load_ipython_extension as load
    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext tfjupyter``: removes the magics and their event hooks."""
    from .magics import unload_ipython_extension as unload
    unload(ipython)


def _load_api() -> None:
    """Imports the API and copies its names here: from then on they are plain attributes."""
    api = _importlib.import_module("._api", __name__)
    globals().update((name, value) for name, value in vars(api).items()
                     if not name.startswith("_"))


def __getattr__(name: str):
    """A submodule (``tf.nn``, ``tf.experiments``), imported alone; else the API's names, on
    first use. (``from . import init_ops`` in a module being imported asks here first: it must
    not load the whole API in the middle of that import.)"""
    if name.startswith("__") and name != "__all__":   # probes (__path__, __wrapped__...)
        raise AttributeError(f"module 'tfjupyter' has no attribute {name!r}")
    if _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        return _importlib.import_module(f".{name}", __name__)
    _load_api()
    if name == "__all__":   # `from tfjupyter import *`: every public name
        return sorted(n for n in globals() if not n.startswith("_"))
    if name in globals():
        return globals()[name]
    raise AttributeError(f"module 'tfjupyter' has no attribute {name!r}")


def __dir__() -> list:
    _load_api()
    return sorted(globals())
