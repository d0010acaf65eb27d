"""One evaluation pass over a checkpoint (TF 1.15's ``evaluation._evaluate_once``): run the
metrics' update ops until the input ends or ``steps`` batches, then read their values; and the
eval summaries written under ``model_dir/eval``."""
from __future__ import annotations

import logging
import time

import numpy as np

from ..framework import dtypes
from ..framework.ops import GraphKeys, get_collection, get_default_graph
from ..ops import array_ops
from ..summary import Summary
from ..summary.writer import FileWriterCache
from ..train.basic_session_run_hooks import FinalOpsHook, SessionRunArgs, SessionRunHook
from ..train.monitored_session import ChiefSessionCreator, MonitoredSession
from .. import variables

__all__ = ["evaluate_once", "StopAfterNEvalsHook", "write_dict_to_summary", "dict_to_str"]

_log = logging.getLogger("tfjupyter")
EVAL_STEP = "eval_step"   # TF's GraphKeys.EVAL_STEP


def get_or_create_eval_step():
    """The graph's ``eval_step`` counter, a local int64 variable."""
    steps = get_collection(EVAL_STEP)
    if len(steps) == 1:
        return steps[0]
    if len(steps) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return variables.Variable(0, dtype=dtypes.int64, name="eval_step", trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES, EVAL_STEP])


class StopAfterNEvalsHook(SessionRunHook):
    """Stops the evaluation after ``num_evals`` batches, logging its progress."""

    def __init__(self, num_evals, log_progress: bool = True):
        self._num_evals = num_evals
        self._log_progress = log_progress
        self._evals_completed = None

    def set_evals_completed_tensor(self, tensor) -> None:
        self._evals_completed = tensor

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values) -> None:
        done = int(run_values.results["evals_completed"])
        if self._log_progress:
            if self._num_evals is None:
                _log.info("Evaluation [%d]", done)
            elif done % max(1, self._num_evals // 10) == 0 or done == self._num_evals:
                _log.info("Evaluation [%d/%d]", done, self._num_evals)
        if self._num_evals is not None and done >= self._num_evals:
            run_context.request_stop()


def evaluate_once(checkpoint_path, master, scaffold, eval_ops, final_ops, hooks, config):
    """Restores ``checkpoint_path`` (or initializes), runs ``eval_ops`` until a hook stops or
    the input ends, and returns the values of ``final_ops``."""
    eval_step = get_or_create_eval_step()
    hooks = list(hooks or [])
    if eval_ops is not None:
        update_eval_step = variables.assign_add(eval_step, 1, use_locking=True)
        eval_ops = [eval_ops, update_eval_step]
        # Read after this batch's updates: the count includes the batch just run.
        with get_default_graph().control_dependencies(eval_ops):
            eval_step_value = array_ops.identity(eval_step.read_value())
        for hook in hooks:
            if isinstance(hook, StopAfterNEvalsHook):
                hook.set_evals_completed_tensor(eval_step_value)
    _log.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime()))
    start = time.time()
    session_creator = ChiefSessionCreator(scaffold=scaffold,
                                          checkpoint_filename_with_path=checkpoint_path,
                                          master=master, config=config)
    final_ops_hook = FinalOpsHook(final_ops)
    hooks.append(final_ops_hook)
    with MonitoredSession(session_creator=session_creator, hooks=hooks) as session:
        if eval_ops is not None:
            while not session.should_stop():
                session.run(eval_ops)
    _log.info("Inference Time : %.5fs", time.time() - start)
    _log.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime()))
    return final_ops_hook.final_ops_values


def dict_to_str(dictionary) -> str:
    """"k1 = v1, k2 = v2" in key order, as TF logs evaluation results."""
    return ", ".join(f"{k} = {v}" for k, v in sorted(dictionary.items())
                     if not isinstance(v, bytes))


def write_dict_to_summary(output_dir: str, dictionary, current_global_step: int) -> None:
    """Writes the scalar results of an evaluation as summaries at ``current_global_step`` in
    ``output_dir`` (TF's ``_write_dict_to_summary``; other values are skipped with a log)."""
    _log.info("Saving dict for global step %d: %s", current_global_step, dict_to_str(dictionary))
    writer = FileWriterCache.get(output_dir)
    summary = Summary()
    for key, value in dictionary.items():
        if value is None or key == "global_step":
            continue
        if isinstance(value, (np.floating, float, np.integer, int)) and \
                not isinstance(value, bool):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, np.ndarray) and value.size == 1:
            summary.value.add(tag=key, simple_value=float(value.reshape(-1)[0]))
        else:
            _log.warning("Skipping summary for %s, must be a float, np.float32, np.int64, "
                         "np.int32 or int or a serialized string of Summary.", key)
    writer.add_summary(summary, current_global_step)
    writer.flush()
