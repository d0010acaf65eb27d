"""Run the same graph on /gpu:0 and on /cpu:0 and compare: the CPU kernels are the reference
(they are checked against numerical gradients and TensorFlow's semantics in the main suite)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

import tfjupyter as tf


def run_on(device: str, build: Callable[[], Any], soft: bool = False,
           config: Optional[tf.ConfigProto] = None) -> Tuple[Any, tf.Session]:
    """Builds ``build()`` (fetches, or (fetches, feed_dict)) under ``device`` in a fresh graph,
    initializes its variables, runs it once; returns the values and the (closed) session."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(device):
            built = build()
        fetches, feed_dict = built if isinstance(built, tuple) and len(built) == 2 and \
            isinstance(built[1], dict) else (built, None)
        config = config or tf.ConfigProto(allow_soft_placement=soft)
        with tf.Session(config=config) as sess:
            if tf.global_variables():
                sess.run(tf.global_variables_initializer())
            values = sess.run(fetches, feed_dict=feed_dict)
    return values, sess


def placements(sess: tf.Session) -> Dict[str, str]:
    """op name -> assigned device name, for every op the session placed."""
    return {op.name: record.assigned for op, record in sess.placer.records.items()}


def compare(build: Callable[[], Any], rtol: float = 1e-6, atol: float = 1e-6,
            soft: bool = False, device: str = "/gpu:0") -> Tuple[Any, Any]:
    """Runs ``build`` on the GPU and on the CPU; asserts the fetched values agree (same dtype
    and shape, allclose) and that the GPU run placed its ops on the GPU. Returns (gpu, cpu)."""
    gpu, sess = run_on(device, build, soft=soft)
    cpu, _ = run_on("/cpu:0", build)
    if not soft:
        on_cpu = [name for name, where in placements(sess).items() if "GPU" not in where]
        assert not on_cpu, f"ops not on the GPU: {on_cpu}"
    assert_same(gpu, cpu, rtol, atol)
    return gpu, cpu


def assert_same(gpu, cpu, rtol: float, atol: float, path: str = "fetch") -> None:
    if isinstance(cpu, (list, tuple)):
        assert isinstance(gpu, (list, tuple)) and len(gpu) == len(cpu), path
        for i, (g, c) in enumerate(zip(gpu, cpu)):
            assert_same(g, c, rtol, atol, f"{path}[{i}]")
        return
    if isinstance(cpu, dict):
        assert gpu.keys() == cpu.keys(), path
        for k in cpu:
            assert_same(gpu[k], cpu[k], rtol, atol, f"{path}[{k!r}]")
        return
    if cpu is None:
        assert gpu is None, path
        return
    g, c = np.asarray(gpu), np.asarray(cpu)
    assert isinstance(gpu, (np.ndarray, np.generic, bytes)) or gpu is None, \
        f"{path}: the GPU fetch is a {type(gpu).__name__}, not a host value"
    assert g.dtype == c.dtype, f"{path}: dtype {g.dtype} on GPU, {c.dtype} on CPU"
    assert g.shape == c.shape, f"{path}: shape {g.shape} on GPU, {c.shape} on CPU"
    if c.dtype.kind in "fc":
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, err_msg=path)
    else:
        np.testing.assert_array_equal(g, c, err_msg=path)
