"""What an Estimator does with an ``input_fn``'s result: a ``tf.data.Dataset`` becomes an
initializable iterator (initialized by a hook when the session starts), and a
``(features, labels)`` pair is split, as TF 1.15's ``estimator/util.py``."""
from __future__ import annotations

from ..data.dataset_ops import Dataset
from ..framework.ops import GraphKeys, get_collection, get_default_graph
from ..train.basic_session_run_hooks import SessionRunHook

__all__ = ["parse_input_fn_result", "uses_dataset_or_queue_runner"]


class _DatasetInitializerHook(SessionRunHook):
    """Initializes the input_fn's dataset iterator when the session is created (and again
    when a lost session is recreated)."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord) -> None:
        session.run(self._initializer)


def parse_input_fn_result(result):
    """(features, labels or None, input hooks) from what an input_fn returned."""
    hooks = []
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


def uses_dataset_or_queue_runner() -> bool:
    """Whether the default graph's input ends by itself: it reads a dataset's iterator or
    has queue runners."""
    return bool(get_collection(GraphKeys.QUEUE_RUNNERS)) or \
        any(op.type == "IteratorGetNext" for op in get_default_graph().get_operations())
