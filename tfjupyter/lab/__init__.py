"""tfjupyter in JupyterLab: graph views our lab extension renders, and the Jupyter server
extension behind its cluster panel.

``GraphView`` / ``show_graph`` display a graph (or what a session placed of it) with the MIME
type ``application/vnd.tfjupyter.graph+json`` and a static HTML fallback. The server extension
(``tfjupyter.lab.server``, enabled by ``jupyter_server_config.d/tfjupyter.json``) serves the
cluster registry and the tasks' status to the panel, and BokehJS to the dashboards
(``tfjupyter.lab.bokehjs``); the panel's Dashboard button runs ``cluster_dashboard(id)`` in the
kernel that started the cluster.

The Jupyter server imports this package to find its extension, so what it imports stays light:
the graph views (and the TF API behind them) are imported on first use.
"""
from .. import __version__  # noqa: F401 (what `jupyter server extension list` shows)
from .dashboards import cluster_dashboard

__all__ = ["MIME_TYPE", "GraphView", "show_graph", "cluster_dashboard"]

_GRAPH_NAMES = ("MIME_TYPE", "GraphView", "show_graph")


def __getattr__(name: str):
    if name in _GRAPH_NAMES:
        from . import graph
        return getattr(graph, name)
    raise AttributeError(f"module 'tfjupyter.lab' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_GRAPH_NAMES))


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "tfjupyter-labextension"}]


def _jupyter_server_extension_points():
    from .server import TfjupyterExtension
    return [{"module": "tfjupyter.lab.server", "app": TfjupyterExtension}]
