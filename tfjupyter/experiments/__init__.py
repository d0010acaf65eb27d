"""Shareable experiment records: what ran where, how fast and how well — and how to run it again.

    from tfjupyter.experiments import Experiment, ExperimentHook, load, compare

    with Experiment("baseline", config={"lr": 0.1}):       # -> ./experiments/baseline/
        ...train...
    record = load("baseline")                             # an ExperimentRecord
    compare(["baseline", "bigger_batch"], metric="accuracy", target=0.9)

or, after ``%load_ext tfjupyter``::

    %tf_experiment start async --cluster          # before a %%tf_worker cell
    %tf_experiment end
    %tf_experiment compare async sync sync_backup --metric accuracy --target 0.9

A record folder holds ``experiment.json`` (status, config, environment, cluster spec and tasks,
sessions' configs, checkpoint), ``events.jsonl`` (the timeline: steps/s and examples/s per
task, every scalar summary, placement), ``cells.jsonl`` and ``cells.ipynb`` (the code that
ran), ``graphs/<task>.pb`` (GraphDefs with assigned devices) and one TensorBoard run per task
(``local/``, ``worker_0/``...: scalars and the graph; ``tensorboard --logdir experiments``
compares experiments side by side). Modules: store (crash-safe files), environment, sessions
(graphs and checkpoints), cells (the cells that ran), tensorboard_writer (the TensorBoard runs),
recorder (``Experiment``: its lifecycle and timeline), record (``load``), compare, hook, magics.
"""
from .compare import Comparison, compare
from .hook import ExperimentHook
from .record import ExperimentRecord, NotARecord, Table, load
from .recorder import Experiment, current

__all__ = ["Experiment", "ExperimentHook", "ExperimentRecord", "Comparison", "NotARecord",
           "Table", "compare", "current", "load"]
