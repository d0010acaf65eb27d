"""The dashboard in a real ipykernel: updates leave from the kernel's IOPub thread while a cell
blocks the main thread in a training loop; the snapshot replaces the placeholder after cells."""
import json
import time

import pytest

pytest.importorskip("jupyter_bokeh")
jupyter_client = pytest.importorskip("jupyter_client")

TRAIN = '''
import time, numpy as np, tfjupyter as tf
tf.reset_default_graph()
x = tf.placeholder(tf.float32, [None, 4], name="x")
w = tf.Variable(tf.ones([4, 1]))
with tf.device("/gpu:2"):
    y = tf.matmul(x, w, name="y")
loss = tf.reduce_mean(y * y, name="mean_square")
tf.summary.scalar("loss", loss)
train = tf.train.GradientDescentOptimizer(0.001).minimize(loss)
summaries = tf.summary.merge_all()
sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
sess.run(tf.global_variables_initializer())
def train_for(seconds):
    t0, n = time.monotonic(), 0
    while time.monotonic() - t0 < seconds or n < 100:   # the main thread is busy throughout
        sess.run([train, summaries], {x: np.ones((32, 4))})
        n += 1
train_for(1.0)   # the dashboard makes its figures (a one-time cost) while this runs
'''


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code, timeout=120):
    """Runs ``code``; returns (comm patch times, other iopub messages, reply time), times
    relative to the request."""
    t0 = time.monotonic()
    msg_id = kc.execute(code)
    patches, messages = [], []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        kind = msg["msg_type"]
        if kind == "comm_msg":
            data = msg["content"]["data"]
            payload = (data.get("content") or {}).get("payload")
            if isinstance(payload, str) and '"PATCH-DOC"' in payload:
                patches.append(time.monotonic() - t0)
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
    reply = kc.get_shell_msg(timeout=timeout)
    assert reply["content"]["status"] == "ok", "\n".join(reply["content"].get("traceback", []))
    return patches, messages, time.monotonic() - t0


def test_updates_flow_from_the_iopub_thread_while_the_cell_trains(kernel):
    _, messages, _ = execute(kernel, "%load_ext tfjupyter\n%tf_dashboard --local --trace-every 50")
    displays = [m["content"] for m in messages if m["msg_type"] == "display_data"]
    # BokehJS first (jupyter_bokeh's views need it in the page): the loader of the Jupyter
    # server's, then the widget, then the placeholder the snapshot will replace.
    assert "tfjupyter/static/bokeh/" in displays[0]["data"]["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in displays[-2]["data"]
    placeholder = displays[-1]["transient"]["display_id"]
    execute(kernel, TRAIN)
    patches, messages, _ = execute(
        kernel, "cell_start = time.monotonic(); train_for(5.0); cell_end = time.monotonic()")
    # The pump applied updates on the IOPub thread while the main thread was busy in the cell's
    # training loop, and their patches reached the front end. (How many, and how soon they
    # arrive, depends on how much of the GIL and the cores the busy loop leaves the IOPub
    # thread: 3-12 per 3 s arrive during the cell on a loaded 2-core machine, but CI runs have
    # seen the IOPub thread starved to one or two updates in 5 s, whose patches then arrived as
    # the cell ended. The claim tested is that the dashboard does not wait for the cell.)
    _, info, _ = execute(kernel, (
        "d = get_ipython().find_line_magic('tf_dashboard').__self__.dashboard\n"
        "import json; print(json.dumps({'during': [t - cell_start for t in d.update_times\n"
        "                                          if cell_start < t < cell_end - 0.2],\n"
        "                               'cell': cell_end - cell_start}))"))
    pump = json.loads("".join(m["content"].get("text", "") for m in info
                              if m["msg_type"] == "stream"))
    assert pump["during"], (f"the pump applied no update while the {pump['cell']:.1f} s training "
                            f"cell ran; patches arrived at {patches} (s after the request)")
    assert patches, "no document patch reached the front end"
    updates = [m for m in messages if m["msg_type"] == "update_display_data"]
    assert updates and updates[-1]["content"]["transient"]["display_id"] == placeholder
    snapshot = updates[-1]["content"]["data"]
    assert "tfjupyter-dashboard-snapshot" in snapshot["text/html"]
    assert "local" in snapshot["text/plain"]
    _, messages, _ = execute(kernel, (
        "d = get_ipython().find_line_magic('tf_dashboard').__self__.dashboard\n"
        "import json; print(json.dumps({'threads': sorted(d.pump_threads), "
        "'updates': d.updates, 'events': d.feed.events, 'soft': d.feed.soft_placed, "
        "'times': d.update_times}))"))
    out = json.loads("".join(m["content"]["text"] for m in messages
                             if m["msg_type"] == "stream"))
    assert out["threads"] == ["IOPub"]
    assert out["soft"] >= 1 and out["events"] > 100
    # Coalesced: at most 10 updates in any second (the pump runs every 0.1 s).
    times = out["times"]
    assert times
    assert max(sum(1 for u in times if t <= u < t + 1.0) for t in times) <= 10
    _, messages, _ = execute(kernel, "%tf_dashboard close")
    final = [m for m in messages if m["msg_type"] == "update_display_data"]
    assert final and "tfjupyter-dashboard-snapshot" in final[-1]["content"]["data"]["text/html"]
