"""The dashboard's model, panels and snapshot, fed by recorded event streams (no browser)."""
import json
import re
import threading
import time

import numpy as np
import pytest

pytest.importorskip("bokeh")
pytest.importorskip("jupyter_bokeh")

import tfjupyter as tf  # noqa: E402
import tfjupyter.lab as tfj_lab  # noqa: E402
from tfjupyter.cluster import cluster as cluster_module  # noqa: E402
from tfjupyter.distributed.telemetry import TaskStatus, TelemetryEvent  # noqa: E402
from tfjupyter.framework.device import short_device, short_task  # noqa: E402
from tfjupyter.runtime import events  # noqa: E402
from tfjupyter.widgets import Dashboard, DashboardHook  # noqa: E402
from tfjupyter.widgets.feed import TOTAL, Feed, TaskRow  # noqa: E402
from tfjupyter.widgets.panels import Panels  # noqa: E402
from tfjupyter.widgets.sources import ClusterSource  # noqa: E402


class FakeClock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def make_feed(window=5.0):
    wall, mono = FakeClock(1_700_000_000.0), FakeClock(50.0)
    return Feed(window=window, sample_every=0.5, clock=wall, monotonic=mono), wall, mono


# -- Feed: coalescing, rates, bounded state ------------------------------------------------------
def test_many_steps_coalesce_into_one_point_per_task_with_hand_computed_rates():
    feed, wall, mono = make_feed(window=5.0)
    # worker:0: 100 steps of 32 examples, 0.01 s each, ending at task times 0.01 .. 1.00 (its
    # clock reads 1.0 when the last one arrives); worker:1: 10 steps of 8, ending 0.1 .. 1.0.
    for i in range(1, 101):
        feed.on_step("worker:0", i * 0.01, 0.01, 32, i)
    for i in range(1, 11):
        feed.on_step("worker:1", i * 0.1, 0.1, 8, None)
    update = feed.drain()
    assert update.events == 110
    assert set(update.throughput) == {"worker:0", "worker:1", TOTAL}
    w0 = update.throughput["worker:0"]
    assert len(w0["t"]) == 1                                   # one point, not 100
    # span = min(window, now - first start) = 1.0 - 0.0 = 1.0 s
    assert w0["steps"][0] == pytest.approx(100.0)
    assert w0["examples"][0] == pytest.approx(3200.0)
    assert update.throughput["worker:1"]["examples"][0] == pytest.approx(80.0)
    assert update.throughput[TOTAL]["examples"][0] == pytest.approx(3280.0)
    assert w0["t"][0] == pytest.approx(wall.t * 1000)
    # Nothing new within sample_every: an empty update.
    mono.t += 0.1
    assert not feed.drain()
    # 6 s later (task clocks extrapolated) every step left the 5 s window: rates fall to 0.
    mono.t += 6.0
    later = feed.drain()
    assert later.throughput["worker:0"]["examples"] == [0.0]
    assert feed.rates("worker:0") == (0.0, 0.0)


def test_runs_without_a_batch_do_not_double_the_step_rate():
    feed, wall, mono = make_feed()
    for i in range(1, 11):   # a sync chief: a training run and a bookkeeping run per step
        feed.on_step("worker:0", i * 0.1, 0.05, 50, None)
        feed.on_step("worker:0", i * 0.1 + 0.001, 0.001, 0, None)
    update = feed.drain()
    steps = update.throughput["worker:0"]["steps"][0]
    assert steps == pytest.approx(10 / (1.001 - 0.05))


def test_summaries_use_the_step_global_step_else_the_step_count():
    feed, _, _ = make_feed()
    feed.on_summary("local", "loss", 2.5, None)          # before any step: step 0
    feed.on_step("local", 1.0, 0.1, 4, None)
    feed.on_step("local", 1.1, 0.1, 4, None)
    feed.on_summary("local", "loss", 2.0, None)          # no global step fetched: count 2
    feed.on_step("worker:0", 1.0, 0.1, 4, 41)
    feed.on_summary("worker:0", "loss", 1.5, None)       # the task's last fetched global step
    feed.on_summary("worker:0", "loss", 1.25, 57)        # telemetry's own global step wins
    update = feed.drain()
    assert update.scalars["loss"]["local"] == {"step": [0, 2], "value": [2.5, 2.0]}
    assert update.scalars["loss"]["worker:0"] == {"step": [41, 57], "value": [1.5, 1.25]}
    assert feed.last_scalars["loss"]["worker:0"] == (57, 1.25)


def test_placement_rows_soft_flags_counts_and_no_duplicates():
    feed, _, _ = make_feed()
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    feed.on_placement("local", "a", "Const", "/device:CPU:0", cpu, "")
    feed.on_placement("local", "b", "MatMul", "/device:GPU:1", cpu,
                      "soft placement: /device:GPU:1 does not exist")
    feed.on_placement("local", "b", "MatMul", "/device:GPU:1", cpu, "soft placement: again")
    feed.on_placement("worker:0", "b", "MatMul", "", "/job:worker/replica:0/task:0/device:CPU:0",
                      "")
    update = feed.drain()
    assert update.placement["op"] == ["a", "b", "b"]
    assert update.placement["soft"] == [False, True, False]
    assert update.device_counts == {cpu: 2, "/job:worker/replica:0/task:0/device:CPU:0": 1}
    assert feed.soft_placed == 1
    assert short_device(cpu) == "CPU:0"
    assert short_device("/job:worker/replica:0/task:1/device:GPU:0") == "worker:1/GPU:0"
    assert short_task("/job:worker/replica:0/task:1") == "worker:1"


def test_sync_steps_aggregate_across_accumulators_and_count_late_drops():
    feed, _, _ = make_feed()
    for acc in ("w", "b"):                 # two variables' accumulators, 2 of 3 replicas
        feed.on_sync("ps:0", acc, 0, 2, 0)
    for acc in ("w", "b"):                 # the backup's gradients for step 0 arrive late
        feed.on_sync("ps:0", acc, 0, 0, 1)
    feed.on_sync("ps:0", "w", 1, 3, 0)     # step 1: all three arrived before the take
    feed.on_sync("ps:0", "b", 1, 3, 0)
    update = feed.drain()
    assert update.sync == {"step": [0, 1], "aggregated": [2, 3], "dropped": [1, 0]}


def test_sync_state_stays_bounded():
    from tfjupyter.widgets.feed import SYNC_STEPS
    feed, _, _ = make_feed()
    for step in range(1000):
        feed.on_sync("ps:0", "w", step, 1, 0)
        feed.on_sync("ps:0", "b", step, 1, 0)
    update = feed.drain()
    assert len(update.sync["step"]) == SYNC_STEPS
    assert update.sync["step"][-1] == 999
    assert len(feed._sync_parts) <= 2 * SYNC_STEPS


def test_trace_becomes_per_device_lanes_in_ms_from_the_first_op():
    feed, _, mono = make_feed()
    feed.on_trace("local", 7, 70, 0.004, {
        "/device:CPU:0": [{"node_name": "a", "op": "MatMul", "all_start_micros": 1_000_100,
                           "op_end_rel_micros": 1500}],
        "/device:GPU:0": [{"node_name": "b", "op": "Relu", "all_start_micros": 1_000_000,
                           "op_end_rel_micros": 0}]})
    feed.on_trace("local", 8, 80, 0.002, {"/device:CPU:0": [
        {"node_name": "c", "op": "Add", "all_start_micros": 5, "op_end_rel_micros": 10}]})
    trace = feed.drain().trace
    assert trace["step"] == 8   # only the latest traced step of a drain is kept
    feed.on_trace("local", 9, 90, 0.002, {})
    assert feed.drain().trace is None     # the timeline is redrawn at most every 2 s
    mono.t += 2.1
    feed.on_trace("local", 7, 70, 0.004, {
        "/device:CPU:0": [{"node_name": "a", "op": "MatMul", "all_start_micros": 1_000_100,
                           "op_end_rel_micros": 1500}],
        "/device:GPU:0": [{"node_name": "b", "op": "Relu", "all_start_micros": 1_000_000,
                           "op_end_rel_micros": 0}]})
    cols = feed.drain().trace["columns"]
    assert cols["op"] == ["a", "b"]
    assert cols["start"] == [0.1, 0.0]
    assert cols["end"] == [pytest.approx(1.6), pytest.approx(0.001)]   # a 0 us op stays visible
    assert cols["duration_us"] == [1500, 0]


def test_health_rows_merge_states_and_a_dead_task_stands_out():
    feed, _, _ = make_feed()
    feed.on_health(TaskRow(task="worker:0", host="h1", devices="CPU:0"))
    feed.on_step("worker:0", 1.0, 0.1, 10, 5)
    update = feed.drain(force_sample=True)
    assert [r.task for r in update.health] == ["worker:0"]
    assert update.health[0].global_step == 5
    feed.on_health(TaskRow(task="worker:0", state="dead", host="h1", devices="CPU:0",
                           error="UNAVAILABLE: connection refused"))
    update = feed.drain(force_sample=True)
    row = update.health[0]
    assert (row.state, row.global_step, row.error) == ("dead", 5, "UNAVAILABLE: connection refused")
    assert feed.rates("worker:0") == (0.0, 0.0)   # a dead task trains no more


# -- Panels: rollover keeps memory bounded -------------------------------------------------------
def test_panels_roll_over_and_grow_lines_figures_and_factors():
    panels = Panels(history=5, scalar_history=3)
    feed, wall, mono = make_feed()
    for i in range(20):
        feed.on_step("worker:0", i * 0.1 + 0.1, 0.1, 10, i)
        feed.on_step("worker:1", i * 0.1 + 0.1, 0.1, 10, i)
        feed.on_summary("worker:0", "loss", 1.0 / (i + 1), i)
        feed.on_summary("worker:0", "accuracy", i / 20, i)
        mono.t += 0.6
        wall.t += 0.6
        panels.apply(feed.drain())
    assert len(panels.throughput["worker:0"].data["t"]) == 5
    assert len(panels.throughput[TOTAL].data["examples"]) == 5
    assert len(panels.scalar_sources[("loss", "worker:0")].data["value"]) == 3
    assert panels.scalar_sources[("loss", "worker:0")].data["value"][-1] == pytest.approx(1 / 20)
    assert set(panels.scalars) == {"loss", "accuracy"}
    assert len(panels.examples_fig.renderers) == 3          # two tasks and the total
    feed.on_placement("local", "x", "Add", "/gpu:3", "/job:localhost/replica:0/task:0/device:CPU:0",
                      "soft placement: /device:GPU:3 does not exist")
    panels.apply(feed.drain())
    assert panels.device_select.options[1:] == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert panels.counts_fig.y_range.factors == ["CPU:0"]
    assert "<b>1</b> soft-placed" in panels.placement_note.text


# -- a local session end to end ------------------------------------------------------------------
def _train_graph():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    w = tf.Variable(tf.ones([4, 1]), name="w")
    with tf.device("/gpu:3"):
        y = tf.matmul(x, w, name="y")
    loss = tf.reduce_mean(y * y, name="mean_square")
    tf.summary.scalar("loss", loss)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=step)
    return x, train, step, tf.summary.merge_all()


def test_a_session_dashboard_sees_its_run_and_closes_with_the_session():
    x, train, step, summaries = _train_graph()
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    dash = Dashboard(sess, trace_every=5, max_rate=10)
    try:
        other = tf.Session()               # not followed
        other.run(tf.constant(1.0, name="not_followed"))
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            sess.run([train, step, summaries], {x: np.ones((16, 4))})
        sess.close()
        deadline = time.monotonic() + 5
        while not dash.closed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dash.closed, "the dashboard should close once its session is closed"
        feed = dash.feed
        [row] = feed.rows()
        assert row.task == "local" and row.global_step == 20
        assert row.mean_examples_per_sec > 0
        ops = dash.panels.placement.data["op"]
        assert "y" in ops and "not_followed" not in ops   # the other session's op
        soft = [op for op, s in zip(ops, dash.panels.placement.data["soft"]) if s]
        assert soft == ["y"]
        assert dash.panels.scalar_sources[("loss", "local")].data["step"][-1] in (19, 20)
        # Runs 5, 10, 15, 20 were traced; the timeline shows one of them, by device.
        assert dash.panels.trace.data["op"], "a sampled trace should reach the timeline"
        assert "y" in dash.panels.trace.data["op"]
        assert events.trace_every == 0, "closing releases the trace request"
    finally:
        dash.close()
        sess.close()


def test_text_mode_prints_summary_lines_outside_a_kernel(capsys):
    x, train, step, summaries = _train_graph()
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        dash = Dashboard("local", trace_every=0, text_every=0.2)
        dash.show()
        sess.run(tf.global_variables_initializer())
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.6:
            sess.run([train, step, summaries], {x: np.ones((8, 4))})
        time.sleep(0.3)
        dash.close()
    out = capsys.readouterr().out
    assert "no widget front end here" in out
    assert re.search(r"\[dashboard \d\d:\d\d:\d\d\] [\d,.]+ examples/s in total", out)
    assert re.search(r"local +alive +step \d+ +[\d,.]+ ex/s now", out)
    assert "loss: local" in out


def test_dashboard_hook_traces_every_n_steps_and_closes_at_end():
    x, train, step, summaries = _train_graph()
    traced = []
    listener = events.subscribe("trace", traced.append)
    try:
        hook = DashboardHook(trace_every_n_steps=4, display=False)
        with tf.train.MonitoredTrainingSession(
                hooks=[hook, tf.train.StopAtStepHook(last_step=12)], log_step_count_steps=0,
                config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            while not sess.should_stop():
                sess.run(train, {x: np.ones((8, 4))})
    finally:
        events.unsubscribe("trace", listener)
    assert hook.dashboard.closed
    assert len(traced) == 3                       # runs 4, 8 and 12 of the hooked session
    assert hook.dashboard.panels.trace.data["op"]
    with pytest.raises(ValueError, match="trace_every_n_steps"):
        DashboardHook(trace_every_n_steps=-1)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="trace_every"):
        Dashboard("local", trace_every=1.5)
    with pytest.raises(ValueError, match="max_rate"):
        Dashboard("local", max_rate=50)
    with pytest.raises(TypeError, match="cannot follow 42"):
        Dashboard(42)


# -- a cluster's recorded telemetry ----------------------------------------------------------------
class RecordedWatcher:
    """A telemetry Watcher replaying recorded events (the real one's callback interface)."""

    def __init__(self, statuses, last_reading=()):
        self.statuses = statuses
        self.callbacks = []
        self.closed = False
        self.last_reading = list(last_reading)   # (status, event) pairs a flush() brings
        self.flushes = 0

    def add_callback(self, fn):
        self.callbacks.append(fn)

    def remove_callback(self, fn):
        self.callbacks.remove(fn)

    def snapshot(self):
        return dict(self.statuses)

    def close(self):
        self.closed = True

    def flush(self, timeout=3.0):
        self.flushes += 1
        for status, event in self.last_reading:
            self.statuses[status.task] = status
            self.play(event)
        return True

    def play(self, event):
        for fn in self.callbacks:
            fn(event)


def _status(task, state="alive", step=None, error=None):
    return TaskStatus(task=task, address="127.0.0.1:1", state=state, host="node1", pid=1,
                      devices=[{"name": f"{task}/device:CPU:0", "type": "CPU"}],
                      global_step=step, health={"cpu_percent": 97.0, "rss_bytes": 200 * 2**20},
                      error=error)


def test_cluster_telemetry_feeds_every_panel_and_a_dead_task_stands_out():
    w0, w1, ps = ("/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1",
                  "/job:ps/replica:0/task:0")
    watcher = RecordedWatcher({t: _status(t) for t in (ps, w0, w1)})
    feed, wall, mono = make_feed()
    panels = Panels()
    source = ClusterSource(feed, watcher, owned=True)
    t = 100.0
    for i in range(1, 21):
        t += 0.05
        for task in (w0, w1):
            watcher.play(TelemetryEvent(task, "step", t, {
                "session": 1, "step": i, "duration": 0.04, "examples": 50, "global_step": i,
                "ops_run": 30, "fetches": 2, "seq": i}))
        watcher.play(TelemetryEvent(w0, "summary", t, {"tag": "loss", "value": 2.0 / i,
                                                       "global_step": i, "seq": 100 + i}))
        watcher.play(TelemetryEvent(ps, "sync", t, {"accumulator": "w1_acc", "step": i,
                                                    "applied": 1, "dropped": 0, "seq": 200 + i}))
        watcher.play(TelemetryEvent(ps, "sync", t, {"accumulator": "w1_acc", "step": i,
                                                    "applied": 0, "dropped": 1, "seq": 300 + i}))
    watcher.play(TelemetryEvent(w0, "placement", t, {
        "op": "MatMul", "type": "MatMul", "requested": "/job:worker/task:0",
        "assigned": "/job:worker/replica:0/task:0/device:CPU:0", "reason": "", "seq": 1}))
    watcher.play(TelemetryEvent(w0, "trace", t, {
        "session": 1, "step": 20, "duration": 0.01, "global_step": 20, "dev_stats": {
            "/job:worker/replica:0/task:0/device:CPU:0": [
                {"node_name": "MatMul", "op": "MatMul", "all_start_micros": 10,
                 "op_end_rel_micros": 40}],
            "/job:ps/replica:0/task:0/device:CPU:0": [
                {"node_name": "w1/read", "op": "Identity", "all_start_micros": 0,
                 "op_end_rel_micros": 5}]}}))
    panels.apply(feed.drain(force_sample=True))
    # 20 steps of 50 from the first one's start (100.05 - 0.04) to the last end (101.0)
    assert panels.throughput["worker:0"].data["examples"][-1] == pytest.approx(1000 / 0.99)
    assert panels.scalar_sources[("loss", "worker:0")].data["step"][-1] == 20
    assert panels.sync.data["aggregated"][-1] == 1 and panels.sync.data["dropped"][-1] == 1
    assert panels.placement.data["short"] == ["worker:0/CPU:0"]
    assert panels.timeline_fig.y_range.factors == ["ps:0/CPU:0", "worker:0/CPU:0"]
    assert dict(zip(panels.health.data["task"], panels.health.data["state"])) == {
        "ps:0": "alive", "worker:0": "alive", "worker:1": "alive"}
    # worker:1 dies: the watcher's status says so, and the health event carries it over.
    watcher.statuses[w1] = _status(w1, state="dead", error="UNAVAILABLE: Connection refused")
    watcher.play(TelemetryEvent(w1, "dead", time.time(), {"error": "UNAVAILABLE"}))
    panels.apply(feed.drain(force_sample=True))
    states = dict(zip(panels.health.data["task"], panels.health.data["state"]))
    assert states["worker:1"] == "dead"
    errors = dict(zip(panels.health.data["task"], panels.health.data["error"]))
    assert "Connection refused" in errors["worker:1"]
    source.close()
    assert watcher.closed and not watcher.callbacks


# -- the cluster panel's Dashboard button -------------------------------------------------------------
class ServingCluster:
    """What cluster_dashboard and a Dashboard use of a serving Cluster: its id, a watcher."""

    def __init__(self, cluster_id):
        self.id = cluster_id
        self.spec = None
        self.watchers = []

    def watch(self, **kwargs):
        self.watchers.append(RecordedWatcher({}))
        return self.watchers[-1]


def test_cluster_dashboard_follows_that_serving_cluster_only(monkeypatch):
    ours, other = ServingCluster("3f2a9c1e77d04b21"), ServingCluster("0123456789abcdef")
    monkeypatch.setattr(cluster_module, "serving_clusters", lambda: [other, ours])
    dash = tfj_lab.cluster_dashboard(ours.id)
    try:
        assert isinstance(dash, Dashboard) and dash.title == "cluster 3f2a9c1e"
        ours.watchers[0].play(TelemetryEvent("/job:worker/replica:0/task:0", "step", 1.0, {
            "session": 1, "step": 1, "duration": 0.1, "examples": 32, "global_step": 1,
            "ops_run": 3, "fetches": 1, "seq": 1}))
        dash._tick()                  # a pump's tick: it would look for new clusters here
        dash._pump_once(final=True)
        assert "worker:0" in dash.panels.throughput
        assert len(ours.watchers) == 1 and other.watchers == []
    finally:
        dash.close()
    assert ours.watchers[0].closed
    with pytest.raises(LookupError, match="cluster 'gone' is not serving in this kernel: it was "
                                          "stopped, or another kernel started it"):
        tfj_lab.cluster_dashboard("gone")


def test_a_closing_dashboard_takes_a_last_reading_of_every_task():
    # The polls in flight can be seconds old on a loaded host: without a last reading, the
    # final snapshot showed the ps's global step tens of steps behind the workers'.
    ps = "/job:ps/replica:0/task:0"
    final = _status(ps, step=200)
    watcher = RecordedWatcher({ps: _status(ps, step=130)},
                              last_reading=[(final, TelemetryEvent(ps, "health", 9.0, {}))])
    dash = Dashboard(watcher, trace_every=0)
    dash._pump_once(final=True)
    assert [r.global_step for r in dash.feed.rows()] == [130]
    dash.close()
    assert watcher.flushes == 1
    assert [(r.task, r.global_step) for r in dash.feed.rows()] == [("ps:0", 200)]


# -- the static snapshot ---------------------------------------------------------------------------
def test_snapshot_html_carries_the_final_data_tables_and_a_loader():
    dash = Dashboard(RecordedWatcher({}), trace_every=0)
    try:
        feed = dash.feed
        feed.on_health(TaskRow(task="worker:0", host="node1"))
        feed.on_health(TaskRow(task="worker:1", state="dead", host="node2", error="gone"))
        for i in range(1, 11):
            feed.on_step("worker:0", 100 + i * 0.1, 0.1, 64, i)
            feed.on_summary("worker:0", "loss", 0.5 + i / 1000, i)
        feed.on_placement("worker:0", "tower_3/MatMul", "MatMul", "/gpu:3",
                          "/job:worker/replica:0/task:0/device:CPU:0",
                          "soft placement: /device:GPU:3 does not exist")
        dash._pump_once(final=True)
        page = dash.snapshot_html()
    finally:
        dash.close()
    assert "tfjupyter-dashboard-snapshot" in page
    docs = re.search(r"<script type='application/json' id='[^']+'>(.*?)</script>", page, re.S)
    data = json.loads(docs.group(1).replace("<\\/", "</"))
    text = json.dumps(data)
    assert "tower_3/MatMul" in text and "soft placement: /device:GPU:3 does not exist" in text
    assert "0.51" in text                      # the last loss value
    # Plain tables for viewers that run no scripts (GitHub): tasks, last scalars, placement.
    assert "<td style='text-align:left;padding:0 8px'>dead</td>" in page
    assert "Scalar summaries (last value)" in page and "0.51" in page
    assert "Placement (1 ops soft-placed)" in page
    assert "Bokeh.embed.embed_items" in page and "cdn.bokeh.org" in page   # exports: the CDN
    assert "tfjupyter/static/bokeh/" in page                 # a live page: its Jupyter server
    assert f"tfjupyter-live-{dash.id}" in page   # folds beside the live widget


def test_save_writes_a_standalone_page(tmp_path, monkeypatch):
    dash = Dashboard(RecordedWatcher({}), trace_every=0)
    try:
        dash.feed.on_step("worker:0", 1.0, 0.1, 10, 1)
        dash._pump_once(final=True)
        monkeypatch.delenv("TFJUPYTER_BOKEHJS", raising=False)
        path = dash.save(str(tmp_path / "dash.html"))
        monkeypatch.setenv("TFJUPYTER_BOKEHJS", "inline")   # a page that needs no network
        inline = open(dash.save(str(tmp_path / "inline.html"))).read()
    finally:
        dash.close()
    page = open(path).read()
    assert page.startswith("<!DOCTYPE html>") and "worker:0" in page
    assert "src=\"https://cdn.bokeh.org/bokeh/release/bokeh-" in page
    assert "cdn.bokeh.org" not in inline and len(inline) > len(page) + 1_000_000


def test_events_from_many_threads_are_all_counted():
    feed, _, _ = make_feed()

    def produce(k):
        for i in range(2000):
            feed.on_step(f"worker:{k}", i * 0.001, 0.001, 1, None)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    drained = 0
    while any(th.is_alive() for th in threads):
        drained += feed.drain().events
    for th in threads:
        th.join()
    drained += feed.drain().events
    assert drained == 8000
