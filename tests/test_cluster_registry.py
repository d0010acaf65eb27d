"""The on-disk registry of clusters (tfjupyter.cluster.registry) and the Cluster's side of it.

No processes: a Cluster that is never started, with its task table filled in by hand, is what
register() reads; files are checked byte for byte where it matters (permissions, no partial
files)."""
import json
import logging
import os
import socket
import stat
import subprocess
import sys
import threading
import types

import pytest

from tfjupyter.cluster import Cluster, ClusterError, registry
from tfjupyter.cluster.cluster import Task


@pytest.fixture
def registry_dir(tmp_path, monkeypatch):
    path = tmp_path / "registry"
    monkeypatch.setenv(registry.ENV_DIR, str(path))
    return path


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _entry(cluster_id="c1", created=1.0, **changes):
    entry = {"id": cluster_id, "created": created, "state": "running", "stopped_by": "",
             "kernel": {"pid": 4242, "connection_file": "", "kernel_id": ""},
             "engines": "local", "profile_dir": "/p", "cluster_file": "/p/security/cluster-x.json",
             "token": "ab" * 32,
             "tasks": [{"job": "worker", "index": 0, "engine_id": 1, "host": "h", "pid": 99,
                        "address": "127.0.0.1:45678", "devices": []}]}
    entry.update(changes)
    return entry


def _unstarted_cluster():
    """A Cluster as _bootstrap leaves it, without processes: its task table set by hand."""
    cluster = Cluster(ps=1, workers=1)
    cluster.tasks = [
        Task("ps", 0, 0, "host-a", 111, "127.0.0.1:5000",
             [{"name": "/job:ps/replica:0/task:0/device:CPU:0", "type": "CPU",
               "description": "cpu"}]),
        Task("worker", 0, 1, "host-b", 222, "127.0.0.1:5001", [])]
    return cluster


# -- where, and who may read it --------------------------------------------------------------------
def test_the_directory_is_private_and_defaults_to_jupyters_runtime_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(registry.ENV_DIR, raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    path = registry.registry_dir()
    assert path == str(tmp_path / "runtime" / "tfjupyter-clusters")
    assert _mode(path) == 0o700


def test_an_existing_directory_keeps_its_mode_and_an_open_one_is_warned_about_once(
        tmp_path, monkeypatch, caplog):
    # Not chmod-ed: $TFJUPYTER_REGISTRY_DIR may name $HOME, or a directory shared on purpose.
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o755)
    monkeypatch.setenv(registry.ENV_DIR, str(loose))
    with caplog.at_level(logging.WARNING, logger="tfjupyter.cluster"):
        assert registry.registry_dir() == str(loose)
        registry.register(_unstarted_cluster())            # and the panel's polls after it
        registry.entries()
    assert _mode(loose) == 0o755
    assert [r.getMessage() for r in caplog.records] == [
        f"tfjupyter cluster registry: {loose} is open to other users (mode 755); its entries "
        f"are not, but make it private: chmod 700 {loose}"]
    assert [_mode(f) for f in loose.glob("*.json")] == [0o600]
    caplog.clear()
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setenv(registry.ENV_DIR, str(private))
    with caplog.at_level(logging.WARNING, logger="tfjupyter.cluster"):
        registry.registry_dir()
    assert caplog.records == [] and _mode(private) == 0o700


def test_register_writes_the_clusters_entry_readable_by_its_owner_only(registry_dir):
    cluster = _unstarted_cluster()
    path = registry.register(cluster)
    assert path == str(registry_dir / f"{cluster.id}.json")
    assert _mode(path) == 0o600 and _mode(registry_dir) == 0o700
    with open(path) as f:
        entry = json.load(f)
    assert entry["id"] == cluster.id and entry["token"] == cluster.token
    assert entry["state"] == "running" and entry["stopped_by"] == ""
    assert entry["engines"] == "local" and entry["cluster_file"] == ""
    assert entry["kernel"]["pid"] == os.getpid()
    assert entry["kernel"]["host"] == socket.gethostname()
    assert entry["tasks"] == [
        {"job": "ps", "index": 0, "engine_id": 0, "host": "host-a", "pid": 111,
         "address": "127.0.0.1:5000",
         "devices": [{"name": "/job:ps/replica:0/task:0/device:CPU:0", "type": "CPU",
                      "description": "cpu"}]},
        {"job": "worker", "index": 0, "engine_id": 1, "host": "host-b", "pid": 222,
         "address": "127.0.0.1:5001", "devices": []}]
    assert registry.read(cluster.id) == entry


# -- the kernel's identity -------------------------------------------------------------------------
def test_kernel_id_comes_from_the_connection_files_name():
    parse = registry.kernel_id_from_connection_file
    assert parse("/run/user/1/jupyter/runtime/kernel-5b3c0f0e-91d2-4c8e-a3f4-0c2f1e9d7a61.json") \
        == "5b3c0f0e-91d2-4c8e-a3f4-0c2f1e9d7a61"
    assert parse("kernel-abc.json") == "abc"
    assert parse("/tmp/connection.json") == "" and parse("") == "" and parse("kernel-.json") == ""


def test_kernel_identity_outside_and_inside_a_kernel(monkeypatch):
    ipykernel = pytest.importorskip("ipykernel")
    # This test process is no kernel: ipykernel says so with a RuntimeError, taken as "".
    monkeypatch.setitem(os.sys.modules, "ipykernel", ipykernel)
    outside = registry.kernel_identity()
    assert outside["pid"] == os.getpid() and outside["connection_file"] == ""
    assert outside["kernel_id"] == "" and outside["create_time"] > 0
    path = "/run/jupyter/kernel-0d6f3a4e-1111-2222-3333-444455556666.json"
    monkeypatch.setattr(ipykernel, "get_connection_file", lambda: path)
    inside = registry.kernel_identity()
    assert inside["connection_file"] == path
    assert inside["kernel_id"] == "0d6f3a4e-1111-2222-3333-444455556666"


# -- writing whole files only ----------------------------------------------------------------------
def test_a_write_that_fails_half_way_leaves_the_old_entry_and_no_debris(registry_dir, monkeypatch):
    registry.write(_entry(state="running"))

    def dump_half_then_fail(obj, f, **kwargs):
        f.write(json.dumps(obj)[:20])
        raise OSError("No space left on device")
    with monkeypatch.context() as patch:
        patch.setattr(registry.json, "dump", dump_half_then_fail)
        with pytest.raises(OSError, match="No space"):
            registry.write(_entry(state="stopped"))
    assert sorted(os.listdir(registry_dir)) == ["c1.json"]
    assert registry.read("c1")["state"] == "running"


def test_readers_never_see_part_of_an_entry_while_it_is_rewritten(registry_dir):
    big = [{"job": "worker", "index": i, "address": f"127.0.0.1:{10000 + i}", "engine_id": i,
            "host": "h", "pid": i, "devices": [{"name": "x" * 200}]} for i in range(300)]
    registry.write(_entry(tasks=big))
    stop = threading.Event()
    seen, problems = [], []

    def rewrite():
        n = 0
        while not stop.is_set():
            n += 1
            registry.write(_entry(tasks=big, created=float(n)))

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for _ in range(200):
            with open(registry_dir / "c1.json") as f:
                text = f.read()
            try:
                seen.append(json.loads(text)["created"])
            except ValueError as e:
                problems.append(e)
    finally:
        stop.set()
        writer.join(10)
    assert not problems and len(seen) == 200
    assert [name for name in os.listdir(registry_dir) if name.endswith(".tmp")] == []


# -- reading past what is not an entry -------------------------------------------------------------
def test_corrupt_files_are_skipped_with_one_warning_each(registry_dir, caplog):
    registry.write(_entry("good", created=2.0))
    registry.write(_entry("older", created=1.0))
    (registry_dir / "half.json").write_text('{"id": "half", "created": 1.0, "tas')
    (registry_dir / "list.json").write_text("[1, 2]")
    no_token = _entry("notoken")
    del no_token["token"]
    (registry_dir / "notoken.json").write_text(json.dumps(no_token))
    (registry_dir / "renamed.json").write_text(json.dumps(_entry("other")))
    (registry_dir / ".good.x1.tmp").write_text("{")             # a writer's temporary file
    (registry_dir / "notes.txt").write_text("not an entry")
    with caplog.at_level(logging.WARNING, logger="tfjupyter.cluster"):
        assert [e["id"] for e in registry.entries()] == ["older", "good"]
        assert registry.read("half") is None
    warnings = [r.getMessage() for r in caplog.records]
    for name, problem in (("half.json", "not JSON"), ("list.json", "JSON object"),
                          ("notoken.json", "'token'"), ("renamed.json", "file name")):
        assert any(name in w and problem in w for w in warnings), (name, warnings)
    assert len(warnings) == 4
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tfjupyter.cluster"):
        assert len(registry.entries()) == 2
    assert caplog.records == []   # a panel polling every second is not told again


def test_mark_stopped_and_remove(registry_dir):
    registry.write(_entry("c1"))
    stopped = registry.mark_stopped("c1", "panel")
    assert stopped["state"] == "stopped" and stopped["stopped_by"] == "panel"
    on_disk = registry.read("c1")
    assert on_disk == stopped and on_disk["token"] == "ab" * 32 and on_disk["tasks"]
    assert _mode(registry_dir / "c1.json") == 0o600
    with pytest.raises(ValueError, match="stopped_by"):
        registry.mark_stopped("c1", "someone")
    assert registry.mark_stopped("nope", "kernel") is None
    assert not (registry_dir / "nope.json").exists()
    assert registry.remove("c1") is True and registry.remove("c1") is False
    assert registry.read("c1") is None and registry.entries() == []


def test_a_failed_panel_stop_is_undone_unless_the_kernel_acted_meanwhile(registry_dir):
    registry.write(_entry("c1"))
    before = registry.read("c1")
    registry.mark_stopped("c1", "panel")
    restored = registry.undo_mark_stopped("c1", "panel", before)
    assert (restored["state"], restored["stopped_by"]) == ("running", "")
    assert registry.read("c1") == restored and _mode(registry_dir / "c1.json") == 0o600
    # Its kernel stopped it meanwhile (or saw the mark and let go of the entry): left so.
    registry.mark_stopped("c1", "kernel")
    assert registry.undo_mark_stopped("c1", "panel", before) is None
    assert registry.read("c1")["stopped_by"] == "kernel"
    registry.remove("c1")
    assert registry.undo_mark_stopped("c1", "panel", before) is None
    assert registry.read("c1") is None


def test_ids_cannot_name_files_outside_the_registry(registry_dir):
    for bad in ("../escape", "a/b", "", "x" * 65, ".hidden"):
        with pytest.raises(ValueError, match="not a cluster id"):
            registry.read(bad)
    with pytest.raises(ValueError, match="not a cluster id"):
        registry.write(_entry("../../etc/x"))


# -- the Cluster's side: stopped from the panel ----------------------------------------------------
def test_a_cluster_stopped_from_the_panel_says_so_at_its_next_use(registry_dir):
    cluster = _unstarted_cluster()
    cluster._register()
    assert registry.read(cluster.id)["state"] == "running"
    registry.mark_stopped(cluster.id, "panel")
    with pytest.raises(ClusterError, match="stopped from JupyterLab's cluster panel; start a new"):
        cluster.select()
    assert registry.read(cluster.id) is None      # it let go of its entry
    cluster.stop()                                 # and stopping it again is quiet
    with pytest.raises(ClusterError, match="cluster panel"):
        cluster.status()


def test_letting_go_after_a_panel_stop_reaps_what_of_the_cluster_is_left_here(registry_dir):
    pytest.importorskip("ipyparallel")
    # An engine the panel's stop left running (it failed half-way, or is still at work): the
    # kernel's Cluster, letting go of its side, must not leave it running unlisted.
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                                 "ipyparallel.engine"])
    try:
        cluster = _unstarted_cluster()
        cluster.tasks[1].host, cluster.tasks[1].pid = socket.gethostname(), leftover.pid
        cluster._ipp = types.SimpleNamespace(controller=None, engines={}, shutdown_atexit=True,
                                             profile_dir="", cluster_file="")
        cluster._register()
        registry.mark_stopped(cluster.id, "panel")
        with pytest.raises(ClusterError, match="stopped from JupyterLab's cluster panel"):
            cluster.select()
        leftover.wait(timeout=20)                      # reaped by then, not by the finally
        assert cluster.ipyparallel_cluster.shutdown_atexit is False and registry.read(cluster.id) is None
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


def test_a_cluster_without_a_writable_registry_still_works(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(registry.ENV_DIR, str(blocker / "registry"))   # under a plain file
    cluster = _unstarted_cluster()
    with caplog.at_level(logging.WARNING, logger="tfjupyter.cluster"):
        cluster._register()
    assert "cluster registry" in caplog.text
    assert cluster._stopped_from_panel() is False
