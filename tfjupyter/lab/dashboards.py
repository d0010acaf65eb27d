"""The dashboard of one cluster, as the cluster panel's Dashboard button opens it.

The button runs ``import tfjupyter.lab as _tfj_lab; _tfj_lab.cluster_dashboard("<id>")`` in the
kernel that started the cluster (the registry entry names it): only that kernel holds the
``Cluster``, its token and its watcher.
"""
from __future__ import annotations

__all__ = ["cluster_dashboard"]


def cluster_dashboard(cluster_id: str):
    """A live ``tfjupyter.widgets.Dashboard`` of the cluster whose ``Cluster.id`` is
    ``cluster_id``, served by this process; ``LookupError`` if this process serves none."""
    # At call time, not import time: the Jupyter server imports this module with tfjupyter.lab
    # when it loads the server extension, which must not import Bokeh, the widgets or the TF
    # API behind them (tests/test_light_imports.py).
    from ..cluster.cluster import serving_clusters
    from ..widgets import Dashboard

    for cluster in serving_clusters():
        if cluster.id == cluster_id:
            return Dashboard(cluster, title=f"cluster {cluster_id[:8]}")
    raise LookupError(f"cluster {cluster_id!r} is not serving in this kernel: it was stopped, "
                      "or another kernel started it")
