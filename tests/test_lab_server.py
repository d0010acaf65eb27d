"""The server extension (tfjupyter.lab.server) in a real Jupyter server (pytest-jupyter): the
cluster panel's REST API, the dashboards' BokehJS, and its stop at server exit.

The registry is a temporary directory. Clusters are in-process ``tf.train.Server``s on loopback
(the entries written by the test, pointing at them), and one real ipyparallel cluster started
by ``tfjupyter.cluster.Cluster`` and stopped through the API. Every server, watcher and process
a test starts is stopped by it; every wait is bounded.
"""
import pytest

pytest.importorskip("pytest_jupyter")
pytest.importorskip("ipyparallel")

# pytest-jupyter's fixtures, for this module only (its autouse fixtures, an event loop per test
# and the server's cleanup, would apply to the whole suite if it were loaded as a plugin).
from pytest_jupyter.jupyter_server import *  # noqa: E402,F401,F403

import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from jupyter_server.auth import Authorizer  # noqa: E402

import tfjupyter as tf  # noqa: E402
from tfjupyter.cluster import Cluster, ClusterError, registry  # noqa: E402
from tfjupyter.distributed import telemetry  # noqa: E402
from tfjupyter.lab import server  # noqa: E402
from tfjupyter.lab.server import SETTINGS_KEY  # noqa: E402

from cluster_util import TOKEN, ipyparallel_children, two_phase_cluster  # noqa: E402

pytestmark = pytest.mark.timeout(120)

API = ("tfjupyter", "api", "clusters")


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"tfjupyter.lab": True}}}


@pytest.fixture
def registry_dir(tmp_path, monkeypatch):
    path = tmp_path / "registry"
    monkeypatch.setenv(registry.ENV_DIR, str(path))
    return path


@pytest.fixture
def api(jp_fetch, jp_asyncio_loop, jp_serverapp, registry_dir):
    """api(method, *path) -> (status, JSON body), authenticated as the test server's user.
    No answer may carry a cluster's token (why entries are 0600): every 200 is checked."""
    def call(method, *parts, **kwargs):
        body = b"" if method == "POST" else None
        response = jp_asyncio_loop.run_until_complete(jp_fetch(
            *API, *parts, method=method, body=body, raise_error=False, **kwargs))
        text = response.body.decode()
        if response.code == 200:
            tokens = {TOKEN} | {entry["token"] for entry in registry.entries()}
            assert not [t for t in tokens if t in text], f"a cluster token in {method} {parts}"
        return response.code, json.loads(text) if text else None
    return call   # pytest-jupyter's jp_server_cleanup stops the server, and so the extension


@pytest.fixture
def cleanup():
    """cleanup(server): stopped when the test ends."""
    things = []
    yield things.append
    for thing in reversed(things):
        thing.stop(0)


def _exited_pid() -> int:
    """The pid of a process of this machine that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(30)
    return proc.pid


def _entry(cluster_id, servers, token=TOKEN, kernel_pid=None, task_pid=None, state="running"):
    """A registry entry for in-process servers, as a kernel in this process would write it."""
    me = psutil.Process()
    kernel_pid = kernel_pid or os.getpid()
    return {
        "id": cluster_id, "created": time.time(), "state": state, "stopped_by": "",
        "kernel": {"pid": kernel_pid, "connection_file": "", "kernel_id": "",
                   "host": socket.gethostname(),
                   "create_time": me.create_time() if kernel_pid == os.getpid() else 0.0},
        "engines": "local", "profile_dir": "", "cluster_file": "", "token": token,
        "tasks": [{"job": job, "index": 0, "engine_id": i, "host": socket.gethostname(),
                   "pid": task_pid or os.getpid(), "address": f"localhost:{server.port}",
                   "devices": [{"name": d.name, "type": d.device_type,
                                "description": d.description} for d in server.devices]}
                  for i, (job, server) in enumerate(servers.items())]}


def _poll(api, done, timeout=15.0):
    """GETs the clusters until ``done(clusters by id)`` holds (bounded); returns them."""
    deadline = time.monotonic() + timeout
    while True:
        code, body = api("GET")
        assert code == 200, body
        clusters = {c["id"]: c for c in body["clusters"]}
        if done(clusters):
            return clusters
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out; last answer: {json.dumps(clusters, indent=1)}")
        time.sleep(0.3)


def _tasks(cluster):
    return {t["name"]: t for t in cluster["tasks"]}


# -- reading the registry --------------------------------------------------------------------------
def test_an_empty_registry(api, registry_dir):
    assert api("GET") == (200, {"version": 1, "clusters": []})


def test_tasks_show_idle_with_devices_then_running_with_rates(api, cleanup):
    spec, servers = two_phase_cluster(cleanup)
    registry.write(_entry("live", servers))
    # Idle: answering, no step in the last 2 s (the process's earlier tests may have stepped).
    clusters = _poll(api, lambda cs: all(t["state"] == "idle" for t in cs["live"]["tasks"]))
    live = clusters["live"]
    assert live["state"] == "running" and live["error"] == "" and live["engines"] == "local"
    assert live["kernel"] == {"pid": os.getpid(), "kernel_id": "", "alive": True}
    tasks = _tasks(live)
    assert sorted(tasks) == ["ps:0", "worker:0"]
    assert tasks["worker:0"]["address"] == spec.task_address("worker", 0)
    assert tasks["worker:0"]["host"] == socket.gethostname()
    assert all(t["devices"] == "CPU:0" and t["error"] == "" for t in tasks.values())

    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        gs = tf.train.get_or_create_global_step()
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        w = tf.Variable(tf.zeros([8, 1]), name="w")
        train = tf.train.GradientDescentOptimizer(0.01).minimize(
            tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0)), global_step=gs)
    stop = threading.Event()

    def training():
        with tf.Session(servers["worker"].target,
                        config=tf.ConfigProto(cluster_token=TOKEN)) as sess:
            sess.run(tf.global_variables_initializer())
            while not stop.is_set():
                sess.run(train, {x: np.ones((50, 8))})
                time.sleep(0.01)

    trainer = threading.Thread(target=training)
    trainer.start()
    try:
        # Every step carries a batch of 50, so the two rates agree (up to the rounding to
        # 1e-3) once the rate window (5 s) holds only this trainer's steps: records are per
        # process, and this process's earlier tests may have stepped with other batches.
        clusters = _poll(api, lambda cs: (
            _tasks(cs["live"])["worker:0"]["state"] == "running"
            and _tasks(cs["live"])["worker:0"]["steps_per_sec"] > 0
            and _tasks(cs["live"])["worker:0"]["examples_per_sec"] == pytest.approx(
                50 * _tasks(cs["live"])["worker:0"]["steps_per_sec"], rel=0.01)
            and (_tasks(cs["live"])["ps:0"]["global_step"] or 0) > 0), timeout=30.0)
    finally:
        stop.set()
        trainer.join(30)
    assert isinstance(_tasks(clusters["live"])["ps:0"]["global_step"], int)


def test_dead_unreachable_refused_orphaned_and_forgotten(api, cleanup, registry_dir):
    spec, servers = two_phase_cluster(cleanup)
    exited = _exited_pid()
    registry.write(_entry("half", servers))                     # its worker will stop
    registry.write(_entry("wrongtoken", {"ps": servers["ps"]}, token="0" * 64))
    registry.write(_entry("exited", {"ps": servers["ps"]}, task_pid=exited))
    registry.write(_entry("orphan", {"ps": servers["ps"]}, kernel_pid=exited))
    registry.write(_entry("gone", {"ps": servers["ps"]}, kernel_pid=exited, task_pid=exited))
    servers["worker"].stop(0)

    # (ps:0 may show "running" a moment: records are per process, and this one's earlier tests
    # may have stepped within the last 2 s. Each cluster has its own watcher, polled at its own
    # time, so every entry's view of ps:0 is waited for.)
    clusters = _poll(api, lambda cs: _tasks(cs["half"])["worker:0"]["state"] == "unreachable"
                     and _tasks(cs["half"])["ps:0"]["state"] == "idle"
                     and _tasks(cs["orphan"])["ps:0"]["state"] == "idle")
    # Kernel gone and tasks gone: the entry is cleaned up.
    assert "gone" not in clusters and not (registry_dir / "gone.json").exists()

    half = _tasks(clusters["half"])
    assert clusters["half"]["state"] == "running" and half["ps:0"]["state"] == "idle"
    error = half["worker:0"]["error"]
    assert "cluster half" in error and "worker:0" in error and "does not answer" in error
    assert half["worker:0"]["steps_per_sec"] == 0.0

    refused = _tasks(clusters["wrongtoken"])["ps:0"]
    assert refused["state"] == "unreachable"
    assert "cluster wrongtoken: ps:0" in refused["error"]
    assert "refused the token" in refused["error"] and "UNAUTHENTICATED" in refused["error"]

    dead = _tasks(clusters["exited"])["ps:0"]
    assert dead["state"] == "dead"
    assert dead["error"] == (f"cluster exited: ps:0 ({spec.task_address('ps', 0)}): its process "
                             f"{exited} on {socket.gethostname()} has exited")

    orphan = clusters["orphan"]
    assert orphan["state"] == "orphaned" and orphan["kernel"]["alive"] is False
    assert str(exited) in orphan["error"] and _tasks(orphan)["ps:0"]["state"] == "idle"

    # Forgetting: an orphaned cluster may be; one whose kernel uses it may not.
    code, body = api("DELETE", "half")
    assert code == 409 and "cluster half is running" in body["error"]
    assert (registry_dir / "half.json").exists()
    assert api("DELETE", "orphan") == (200, {"id": "orphan", "deleted": True})
    assert not (registry_dir / "orphan.json").exists()
    assert "orphan" not in _poll(api, lambda cs: True)


def test_watchers_close_when_nobody_asks_or_the_entry_goes(api, cleanup, jp_serverapp):
    monitor = jp_serverapp.web_app.settings[SETTINGS_KEY]
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    registry.write(_entry("a", servers))
    registry.write(_entry("b", servers))
    assert monitor.watching() == []                  # made when asked for, not before
    assert api("GET")[0] == 200 and monitor.watching() == ["a", "b"]
    registry.remove("a")
    code, body = api("GET")
    assert [c["id"] for c in body["clusters"]] == ["b"] and monitor.watching() == ["b"]
    monitor.idle_after = 0.2
    time.sleep(0.3)
    monitor.sweep()
    assert monitor.watching() == []
    assert api("GET")[0] == 200 and monitor.watching() == ["b"]   # asked for again


def test_the_servers_watchers_keep_no_backlog_of_events(api, cleanup, jp_serverapp):
    monitor = jp_serverapp.web_app.settings[SETTINGS_KEY]
    spec, servers = two_phase_cluster(cleanup)
    registry.write(_entry("busy", servers))
    assert api("GET")[0] == 200
    watcher = monitor._watches["busy"].watcher
    deadline = time.monotonic() + 15
    while watcher.dropped < 3:   # a few polls' events (alive, health) of both tasks
        assert time.monotonic() < deadline, watcher.dropped
        time.sleep(0.2)
    assert len(watcher.events()) <= 1           # only snapshot() is read: nothing piles up
    with pytest.raises(ValueError, match="max_events must be an int >= 1"):
        telemetry.watch(spec, max_events=0)


def test_the_extension_is_an_extension_app_that_closes_its_monitor_at_server_exit(
        api, cleanup, jp_serverapp, jp_asyncio_loop):
    (app,) = jp_serverapp.extension_manager.extension_apps["tfjupyter.lab"]
    assert isinstance(app, server.TfjupyterExtension)
    monitor = jp_serverapp.web_app.settings[SETTINGS_KEY]
    assert app.monitor is monitor
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    registry.write(_entry("a", servers))
    assert api("GET")[0] == 200
    watcher = monitor._watches["a"].watcher
    t0 = time.monotonic()
    # What the server runs at exit (ServerApp._cleanup -> cleanup_extensions).
    jp_asyncio_loop.run_until_complete(jp_serverapp.extension_manager.stop_all_extensions())
    assert time.monotonic() - t0 < 10
    assert watcher.closed and monitor.watching() == []
    with pytest.raises(RuntimeError):            # the pool takes no more work
        monitor.executor.submit(time.sleep, 0)


def test_a_corrupt_entry_is_skipped(api, registry_dir, cleanup):
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    registry.write(_entry("fine", servers))
    (registry_dir / "broken.json").write_text('{"id": "broken", "created": 1.0, "tas')
    code, body = api("GET")
    assert code == 200 and [c["id"] for c in body["clusters"]] == ["fine"]
    code, body = api("POST", "broken", "stop")
    assert code == 404 and "broken" in body["error"]


def test_unknown_ids_are_404(api, registry_dir):
    for method, parts in (("POST", ("nope", "stop")), ("DELETE", ("nope",))):
        code, body = api(method, *parts)
        assert code == 404, body
        assert "no cluster 'nope'" in body["error"] and str(registry_dir) in body["error"]


def test_requests_without_the_servers_token_are_refused(api, registry_dir, http_server_client,
                                                        jp_base_url, jp_asyncio_loop, cleanup):
    spec, servers = two_phase_cluster(cleanup, ("ps",))
    registry.write(_entry("secret", servers, state="stopped"))
    base = jp_base_url + "/".join(API)
    for method, path, headers in (
            ("GET", base, {}),                                         # no credentials at all
            ("GET", base, {"Authorization": "token not-the-token"}),
            ("POST", base + "/secret/stop", {}),
            ("DELETE", base + "/secret", {"Authorization": "token not-the-token"})):
        response = jp_asyncio_loop.run_until_complete(http_server_client.fetch(
            path, method=method, headers=headers, raise_error=False,
            body=b"" if method == "POST" else None))
        assert response.code == 403, (method, path, response.code)
        refusal = json.loads(response.body)   # an error, and nothing of the registry
        assert list(refusal) == ["error"] and "403" in refusal["error"]
        assert TOKEN not in response.body.decode() and "created" not in response.body.decode()
    assert registry.read("secret")["state"] == "stopped"      # nothing was done
    code, body = api("GET")                                     # while with the token: 200
    assert code == 200 and [c["id"] for c in body["clusters"]] == ["secret"]


class ReadOnlyAuthorizer(Authorizer):
    """Lets users read tfjupyter's clusters (GET) but not write them (POST, DELETE)."""

    def is_authorized(self, handler, user, action, resource):
        return not (resource == "tfjupyter" and action == "write")


class TestAnAuthorizerThatRefusesWrites:
    @pytest.fixture
    def jp_server_config(self):
        return {"ServerApp": {"jpserver_extensions": {"tfjupyter.lab": True},
                              "authorizer_class": ReadOnlyAuthorizer}}

    def test_users_see_clusters_but_cannot_stop_or_forget_them(self, api, cleanup):
        spec, servers = two_phase_cluster(cleanup, ("ps",))
        registry.write(_entry("guarded", servers))
        code, body = api("GET")
        assert code == 200 and [c["id"] for c in body["clusters"]] == ["guarded"]
        for method, parts in (("POST", ("guarded", "stop")), ("DELETE", ("guarded",))):
            code, body = api(method, *parts)
            assert code == 403, (method, body)
            assert "not authorized to write on resource: tfjupyter" in body["error"]
        entry = registry.read("guarded")
        assert (entry["state"], entry["stopped_by"]) == ("running", "")   # nothing was done


# -- stopping a real cluster -----------------------------------------------------------------------
def _gone(pid) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stop_from_the_panel_ends_a_real_cluster(api, registry_dir, tmp_path, monkeypatch,
                                                 jp_serverapp):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    before = {p.pid for p in ipyparallel_children()}
    cluster = Cluster(ps=1, workers=1, start_timeout=60)
    try:
        cluster.start()
        entry = registry.read(cluster.id)
        assert entry is not None and entry["state"] == "running"
        assert entry["cluster_file"] == cluster.ipyparallel_cluster.cluster_file
        assert os.path.exists(entry["cluster_file"])
        pids = [t.pid for t in cluster.tasks] + [cluster.ipyparallel_cluster.controller.pid]
        started = [p.pid for p in ipyparallel_children() if p.pid not in before]
        assert set(t.pid for t in cluster.tasks) <= set(started)

        clusters = _poll(api, lambda cs: all(t["state"] == "idle"
                                             for t in cs[cluster.id]["tasks"]))
        assert clusters[cluster.id]["state"] == "running"

        # A stop that fails puts the entry back: the kernel keeps its cluster, the panel says
        # why, and a second try stops it.
        monitor = jp_serverapp.web_app.settings[SETTINGS_KEY]
        stop_with_ipyparallel, attempts = monitor._stop_with_ipyparallel, []

        def failing_once(entry):
            attempts.append(entry["stopped_by"])
            if len(attempts) == 1:
                raise RuntimeError("the controller did not answer")
            stop_with_ipyparallel(entry)

        monkeypatch.setattr(monitor, "_stop_with_ipyparallel", failing_once)
        code, body = api("POST", cluster.id, "stop")
        failure = (f"stopping cluster {cluster.id} with ipyparallel failed: RuntimeError: the "
                   "controller did not answer")
        assert (code, body) == (500, {"error": failure})
        entry = registry.read(cluster.id)
        assert (entry["state"], entry["stopped_by"]) == ("running", "")
        failed = _poll(api, lambda cs: True)[cluster.id]
        assert failed["state"] == "running" and failed["error"] == failure
        assert sorted(cluster.run("1 + 1")) == ["worker:0"]      # the kernel's side still works
        assert not [pid for pid in pids + started if _gone(pid)]

        code, body = api("POST", cluster.id, "stop")
        assert code == 200, body
        assert attempts == ["panel", "panel"]
        assert body["id"] == cluster.id and body["state"] == "stopped", body
        assert body["error"] == ""
        assert {t["state"] for t in body["tasks"]} == {"dead"}
        deadline = time.monotonic() + 15
        while not all(_gone(pid) for pid in pids + started):
            assert time.monotonic() < deadline, [p for p in pids + started if not _gone(p)]
            time.sleep(0.2)
        assert registry.read(cluster.id)["stopped_by"] == "panel"

        # The kernel's Cluster notices at its next use, and lets go of its entry.
        with pytest.raises(ClusterError, match="stopped from JupyterLab's cluster panel"):
            cluster.run("1 + 1")
        assert registry.read(cluster.id) is None
        assert _poll(api, lambda cs: True) == {}
    finally:
        cluster.stop()


# -- BokehJS for the dashboards --------------------------------------------------------------------
def test_bokehjs_is_served_to_anyone_at_the_installed_version_only(http_server_client, jp_base_url,
                                                                   jp_asyncio_loop, jp_serverapp):
    import bokeh
    from bokeh.resources import Resources

    def get(path):
        return jp_asyncio_loop.run_until_complete(http_server_client.fetch(
            jp_base_url + path, raise_error=False))   # no token: public, as lab's static files

    static = os.path.join(os.path.dirname(bokeh.__file__), "server", "static", "js")
    names = [url.rsplit("/", 1)[1] for url in Resources(mode="server", root_url="/").js_files]
    assert "bokeh.min.js" in names
    for name in names:
        response = get(f"tfjupyter/static/bokeh/{bokeh.__version__}/{name}")
        assert response.code == 200, (name, response.code)
        with open(os.path.join(static, name), "rb") as f:
            assert response.body == f.read()
    response = get("tfjupyter/static/bokeh/0.0.1/bokeh.min.js")
    assert response.code == 404
    assert response.headers["Content-Type"].startswith("text/plain")
    assert response.body.decode() == (
        f"404 this Jupyter server has bokeh {bokeh.__version__}, not 0.0.1: install bokeh "
        f"{bokeh.__version__} in the kernel's environment, or set TFJUPYTER_BOKEHJS=inline there")
    for outside in ("../__init__.py", "..%2F__init__.py", "nope.js"):
        response = get(f"tfjupyter/static/bokeh/{bokeh.__version__}/{outside}")
        assert response.code in (403, 404), (outside, response.code)
        assert b"import" not in response.body
