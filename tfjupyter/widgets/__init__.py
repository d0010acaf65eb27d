"""Live training dashboards in Jupyter (Bokeh figures in an ipywidget).

    from tfjupyter.widgets import Dashboard, DashboardHook
    Dashboard()                      # every session of this kernel and every running cluster
    Dashboard(sess) / Dashboard(cluster)
    tf.train.MonitoredTrainingSession(..., hooks=[DashboardHook()])

or ``%tf_dashboard`` after ``%load_ext tfjupyter``. Modules: feed (events in, coalesced updates
out), sources (runtime.events and telemetry adapters), panels (the Bokeh document), snapshot
(the static copy a saved notebook keeps), dashboard (threads, display, lifecycle), hook, magics.
"""
from .dashboard import Dashboard
from .hook import DashboardHook

__all__ = ["Dashboard", "DashboardHook"]
