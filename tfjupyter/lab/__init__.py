"""tfjupyter in JupyterLab: graph views our lab extension renders, and the Jupyter server
extension behind its cluster panel.

``GraphView`` / ``show_graph`` display a graph (or what a session placed of it) with the MIME
type ``application/vnd.tfjupyter.graph+json`` and a static HTML fallback. The server extension
(``tfjupyter.lab.server``, enabled by ``jupyter_server_config.d/tfjupyter.json``) serves the
cluster registry and the tasks' status to the panel; the panel's Dashboard button runs
``cluster_dashboard(id)`` in the kernel that started the cluster.
"""
from .. import __version__  # noqa: F401 (what `jupyter server extension list` shows)
from .dashboards import cluster_dashboard
from .graph import MIME_TYPE, GraphView, show_graph

__all__ = ["MIME_TYPE", "GraphView", "show_graph", "cluster_dashboard"]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "tfjupyter-labextension"}]


def _jupyter_server_extension_points():
    return [{"module": "tfjupyter.lab.server"}]
