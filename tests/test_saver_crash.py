"""Crash safety of checkpoint writes (issue 13, item 4): a save killed at any instant, also one
over an existing checkpoint of the same prefix (``saver.save(sess, path)`` without
``global_step``), leaves that prefix restoring to the old values or the new ones, never a
DataLossError; the next save of the prefix removes what killed saves left behind.

The crashing saves run in child processes forked from a helper process (one interpreter start
per test, not per crash): they die by ``os._exit`` at a chosen step, or by SIGKILL from the
test at a random moment. The helpers are functions of this module, run through
``_run_child`` / ``_start_child``.
"""
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
import tfjupyter.kernels.cpu.io_kernels  # noqa: F401  (until kernels/cpu/__init__ imports it)
from tfjupyter.framework import errors
from tfjupyter.train import tensor_bundle

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the crashing saves are forked")

_CRASHED = 86          # exit status of a child that died at its chosen step
_CHILD_TIMEOUT_S = 120


class _Model:
    """Variables whose elements all hold one number (the save counter), with a Saver."""

    def __init__(self, size, sharded=False):
        self.graph = tf.Graph()
        with self.graph.as_default():
            if sharded:   # one variable per device: one SaveV2 each, then MergeV2Checkpoints
                with tf.device("/job:localhost/replica:0/task:0/cpu:0"):
                    a = tf.Variable(tf.zeros([size]), name="a")
                with tf.device("/job:localhost/replica:0/task:0/cpu:1"):
                    b = tf.Variable(tf.zeros([size]), name="b")
                self.variables = [a, b]
            else:
                self.variables = [tf.Variable(tf.zeros([size]), name="v")]
            self._counter = tf.placeholder(tf.float32, [], name="counter")
            self._fill = tf.group(*[v.assign(tf.fill([size], self._counter))
                                    for v in self.variables])
            # max_to_keep=None: saves to many directories must not delete each other.
            self.saver = tf.train.Saver(sharded=sharded, max_to_keep=None)
            init = tf.global_variables_initializer()
        config = tf.ConfigProto(device_count={"CPU": 2}) if sharded else None
        self.sess = tf.Session(graph=self.graph, config=config)
        self.sess.run(init)

    def set_value(self, counter):
        self.sess.run(self._fill, {self._counter: float(counter)})

    def save(self, prefix):
        return self.saver.save(self.sess, prefix)

    def restored_value(self, prefix):
        """Saver.restore, then the one number all elements hold (fails on a mix)."""
        self.saver.restore(self.sess, prefix)
        return _single_value([self.sess.run(v) for v in self.variables])

    def read_value(self, prefix):
        """The same through NewCheckpointReader (BundleReader), without the Saver."""
        reader = tf.train.NewCheckpointReader(prefix)
        return _single_value([reader.get_tensor(v.op.name) for v in self.variables])


def _single_value(arrays):
    values = np.concatenate([np.ravel(a) for a in arrays])
    assert (values == values[0]).all(), f"a mix of saves: {np.unique(values)}"
    return float(values[0])


def _leftovers(directory, basename="model"):
    """The prefix's files that a completed save does not leave: temporaries and journals."""
    return sorted(n for n in os.listdir(directory)
                  if n.startswith(basename + ".") and (".tempstate" in n or
                                                       n.endswith(".tfjupyter-commit")))


# -- running helpers in a child interpreter --------------------------------------------------------
_BOOTSTRAP = (
    "import importlib.util, json, sys\n"
    "spec = importlib.util.spec_from_file_location('saver_crash_child', sys.argv[1])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "getattr(module, sys.argv[2])(*json.loads(sys.argv[3]))\n")


def _child_command(function, *args):
    return [sys.executable, "-c", _BOOTSTRAP, os.path.abspath(__file__), function.__name__,
            json.dumps(args)]


def _run_child(function, *args):
    """Runs function(*args) in a fresh interpreter; the last line it prints, as JSON."""
    proc = subprocess.run(_child_command(function, *args), capture_output=True, text=True,
                          timeout=_CHILD_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _die_before_step(k, steps_done):
    """Makes this (forked) process os._exit just before its k-th file system step: a data write,
    fsync, rename or removal, counted from 0. Appends each step it lets run to steps_done."""
    real_write_all = tensor_bundle.write_all

    def step(what, real):
        def run(*args, **kwargs):
            if len(steps_done) == k:
                os._exit(_CRASHED)
            name = getattr(args[0], "name", args[0])   # a file's name, a path or an fd
            steps_done.append(f"{what} {os.path.basename(str(name))}")
            return real(*args, **kwargs)
        return run

    tensor_bundle.write_all = step("write", real_write_all)
    for what in ("fsync", "replace", "rename", "remove", "unlink"):
        setattr(os, what, step(what, getattr(os, what)))


def crash_at_each_step_child(template_dir, runs_dir, size, sharded):
    """Child: for k = 0, 1, ...: copies template_dir (a checkpoint of 1.0s) to runs_dir/k, then
    forks a process that saves 2.0s to runs_dir/k/model and dies just before its k-th file
    system step; stops at the first k that the save survives. Prints {"steps": k, ...}."""
    model = _Model(size, sharded)
    model.set_value(2)
    os.makedirs(runs_dir)
    model.save(os.path.join(runs_dir, "warm-up", "model"))   # builds and caches the save plan
    for k in range(1000):
        directory = os.path.join(runs_dir, str(k))
        shutil.copytree(template_dir, directory)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                steps_done = []
                _die_before_step(k, steps_done)
                model.save(os.path.join(directory, "model"))
                print(json.dumps({"steps": k, "names": steps_done}), flush=True)
                status = 0
            finally:
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(wait_status)
        if status == 0:
            return
        assert status == _CRASHED, f"the save crashed on its own at step {k}: status {status}"
    raise AssertionError("the save never completed")


def saver_zygote_child(prefix, log_path, size):
    """Child: for each line on stdin (a counter value), forks a saver process that saves the
    counter, counter + 1, ... to prefix without global_step, appending each counter to log_path
    once its save has returned. Prints the saver's pid, then "exited" once it is gone (the test
    kills it)."""
    model = _Model(size)
    model.set_value(0)
    model.save(os.path.join(os.path.dirname(log_path), "warm-up", "model"))
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        counter = int(line)
        pid = os.fork()
        if pid == 0:
            try:
                log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                while True:
                    model.set_value(counter)
                    model.save(prefix)
                    os.write(log, f"{counter}\n".encode())   # one write: whole lines only
                    counter += 1
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("exited", flush=True)


# -- a crash at every step -------------------------------------------------------------------------
@pytest.mark.parametrize("sharded", [False, True], ids=["one-shard", "sharded"])
def test_save_killed_at_every_step_leaves_the_old_or_the_new_checkpoint(tmp_path, sharded):
    size = 1000
    template, runs = tmp_path / "template", tmp_path / "runs"
    model = _Model(size, sharded)
    model.set_value(1)
    model.save(str(template / "model"))
    result = _run_child(crash_at_each_step_child, str(template), str(runs), size, sharded)
    steps, names = result["steps"], result["names"]
    assert any(n.endswith(".tfjupyter-commit") for n in names), names   # a journal commit

    restored = []
    for k in range(steps + 1):
        directory = runs / str(k)
        prefix = str(directory / "model")
        # Half through the Saver, half through a bare reader: both complete a commit.
        read = model.restored_value if k % 2 == 0 else model.read_value
        restored.append(read(prefix))
        assert not os.path.exists(prefix + ".tfjupyter-commit")
        # The next save of the prefix cleans up after the killed one.
        model.set_value(3)
        model.save(prefix)
        assert _leftovers(directory) == []
        # (A save killed while replacing the directory's "checkpoint" state file leaves a
        # small checkpoint.tempstate* file: shared by all prefixes of the directory, it is
        # not one of this prefix's files to sweep.)
        assert sorted(n for n in os.listdir(directory)
                      if not n.startswith("checkpoint.tempstate")) == \
            sorted(os.listdir(template))
        assert model.restored_value(prefix) == 3.0
    # Old values until the commit point, new ones from there on.
    commit_point = restored.index(2.0)
    steps_log = "\n".join(f"{k}: {'new' if v == 2.0 else 'old'} after "
                          f"{names[k - 1] if k else 'nothing'}" for k, v in enumerate(restored))
    assert restored == [1.0] * commit_point + [2.0] * (steps + 1 - commit_point), steps_log
    assert names[commit_point - 1].startswith("replace model.tfjupyter-commit"), steps_log


# -- random kills ----------------------------------------------------------------------------------
def _next_line(lines, timeout=30):
    line = lines.get(timeout=timeout)
    assert line is not None, "the helper process ended"
    return line


def test_saves_killed_at_random_moments_never_lose_the_checkpoint(tmp_path):
    size = 1 << 20                       # 4 MB of float32
    kills = 32
    (tmp_path / "ckpt").mkdir()
    prefix = str(tmp_path / "ckpt" / "model")
    log_path = tmp_path / "committed.log"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    model = _Model(size)
    model.set_value(0)
    model.save(prefix)
    possible = {0.0}       # what the checkpoint may hold now
    next_counter = 1       # above every value any save has written so far
    stderr = open(tmp_path / "helper.stderr", "w")
    helper = subprocess.Popen(_child_command(saver_zygote_child, prefix, str(log_path), size),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                              text=True)
    lines = queue.Queue()

    def read_lines():
        for line in helper.stdout:
            lines.put(line.strip())
        lines.put(None)
    threading.Thread(target=read_lines, daemon=True).start()
    saver_pid = None
    deadline = time.monotonic() + 45
    try:
        for kill in range(kills):
            assert time.monotonic() < deadline, f"too slow: {kill} kills in 45 s"
            helper.stdin.write(f"{next_counter}\n")
            helper.stdin.flush()
            saver_pid = int(_next_line(lines))
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(saver_pid, signal.SIGKILL)
            assert _next_line(lines) == "exited"
            saver_pid = None

            logged = [int(x) for x in log_path.read_text().split()] if log_path.exists() else []
            committed = [c for c in logged if c >= next_counter]   # by this saver
            if committed:   # the last one returned; the next one may have committed too
                possible = {float(committed[-1]), float(committed[-1] + 1)}
                next_counter = committed[-1] + 2
            else:
                possible = possible | {float(next_counter)}
                next_counter += 1
            # At most what one interrupted save leaves: data, index, journal, meta graph.
            assert len(_leftovers(tmp_path / "ckpt")) <= 4, _leftovers(tmp_path / "ckpt")
            # Most rounds restore at once; the others leave an interrupted commit to the next
            # save to complete.
            if kill % 3 != 2:
                value = model.restored_value(prefix)
                assert value in possible, (f"restored {value}, expected one of {possible} "
                                           f"(seed {seed}, kill {kill})")
                possible = {value}
    finally:
        if saver_pid is not None:
            try:
                os.kill(saver_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        helper.kill()
        helper.wait(timeout=30)
        stderr.close()
    assert model.restored_value(prefix) in possible
    model.set_value(next_counter)
    model.save(prefix)
    assert _leftovers(tmp_path / "ckpt") == []
    assert model.restored_value(prefix) == next_counter


# -- stale temporary files and journals ------------------------------------------------------------
def test_next_save_removes_the_stale_temporary_files_of_its_prefix_only(tmp_path):
    model = _Model(10)
    prefix = str(tmp_path / "model")
    model.set_value(1)
    model.save(prefix)
    completed = set(os.listdir(tmp_path))
    stale = ["model.index.tempstate11", "model.data-00000-of-00001.tempstate22",
             "model.data-00001-of-00002.tempstate33", "model.tfjupyter-commit.tempstate44",
             "model.meta.tempstate55"]
    others = ["model-7.index.tempstate1", "model-7.data-00000-of-00001.tempstate2",
              "modelx.index.tempstate3", "other.data-00000-of-00001.tempstate4",
              "model.index.tempstate-notes", "model.index.bak", "checkpoint.tempstate5"]
    for name in stale + others:
        (tmp_path / name).write_bytes(b"x" * 100)
    # A temporary file that a save in another thread of this process is writing right now.
    live = tensor_bundle._claim_temp_name(prefix + ".index")
    try:
        with open(live, "wb") as f:
            f.write(b"being written")
        model.set_value(2)
        model.save(prefix)
        assert set(os.listdir(tmp_path)) == completed | set(others) | {os.path.basename(live)}
    finally:
        tensor_bundle._release_temp_name(live)
    assert model.restored_value(prefix) == 2.0


def _interrupted_after_commit_point(monkeypatch, model, prefix):
    """Saves 2.0s over prefix's 1.0s, stopping right after the commit journal is written."""
    class Crash(BaseException):
        pass

    def crash(directory, renames):
        raise Crash
    model.set_value(1)
    model.save(prefix)
    model.set_value(2)
    with monkeypatch.context() as patch:
        patch.setattr(tensor_bundle, "_apply_renames", crash)
        with pytest.raises(Crash):
            tensor_bundle.write_bundle(prefix, [("v", model.sess.run(model.variables[0]))])
    assert os.path.exists(prefix + ".tfjupyter-commit")


def test_concurrent_readers_complete_an_interrupted_commit_once(tmp_path, monkeypatch):
    model = _Model(1000)
    prefix = str(tmp_path / "model")
    _interrupted_after_commit_point(monkeypatch, model, prefix)
    results, failures = [], []

    def read():
        try:
            results.append(float(tensor_bundle.BundleReader(prefix).read("v")[0]))
        except Exception as e:   # noqa: BLE001 - reported below
            failures.append(e)
    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not failures and results == [2.0] * 4
    tensor_bundle.roll_forward_commit(prefix)    # again: nothing left to do
    assert _leftovers(tmp_path) == []
    assert model.restored_value(prefix) == 2.0


def test_removing_a_checkpoint_drops_its_interrupted_commit(tmp_path, monkeypatch):
    model = _Model(10)
    prefix = str(tmp_path / "model")
    _interrupted_after_commit_point(monkeypatch, model, prefix)
    tf.train.remove_checkpoint(prefix)
    assert os.listdir(tmp_path) == ["checkpoint"]
    assert not tf.train.checkpoint_exists(prefix)


def test_a_stale_journal_whose_files_are_gone_is_harmless(tmp_path):
    model = _Model(10)
    prefix = str(tmp_path / "model")
    model.set_value(1)
    model.save(prefix)
    journal = prefix + ".tfjupyter-commit"
    with open(journal, "wb") as f:
        f.write(tensor_bundle._encode_journal([(prefix + ".index.tempstate1", prefix + ".index")]))
    assert tf.train.checkpoint_exists(prefix)
    assert not os.path.exists(journal)
    assert model.restored_value(prefix) == 1.0


@pytest.mark.parametrize("payload", [b"{not json", b'{"format": "other", "version": 1}',
                                     b'{"format": "tfjupyter-commit", "version": 1, '
                                     b'"renames": [["../x.tempstate1", "model.index"]]}'])
def test_an_unreadable_journal_is_reported_not_guessed(tmp_path, payload):
    prefix = str(tmp_path / "model")
    tensor_bundle.write_bundle(prefix, [("v", np.ones(3, np.float32))])
    with open(prefix + ".tfjupyter-commit", "wb") as f:
        f.write(payload)
    with pytest.raises(errors.DataLossError, match="commit journal"):
        tensor_bundle.BundleReader(prefix)
