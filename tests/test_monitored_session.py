"""MonitoredSession, MonitoredTrainingSession, Scaffold, SessionManager and the session-run
hooks (local sessions; every wait is bounded and short)."""
import glob
import logging
import os
import threading
import time

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.summary import FileWriterCache, summary_iterator
from tfjupyter.train import basic_session_run_hooks as hooks
from tfjupyter.train import monitored_session as ms
from tfjupyter.train import session_manager as sm


@pytest.fixture(autouse=True)
def close_cached_writers():
    yield
    FileWriterCache.clear()


def _model(lr=0.1):
    """loss = (w - 3)^2 from w = 1 with SGD: after k steps w = 3 - 2 * (1 - 2 lr)^k."""
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(1.0, name="w")
    loss = tf.square(w - 3.0, name="loss")
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)
    return gs, w, loss, train


def _w_after(k, lr=0.1):
    return 3.0 - 2.0 * (1.0 - 2.0 * lr) ** k


class _Recorder(hooks.SessionRunHook):
    """Records every call, with what it saw."""

    def __init__(self, name, log, fetches=None, feeds=None):
        self.name, self.log = name, log
        self.fetches, self.feeds = fetches, feeds
        self.results = []

    def begin(self):
        self.log.append((self.name, "begin", tf.get_default_graph().finalized))

    def after_create_session(self, session, coord):
        self.log.append((self.name, "after_create_session", session.graph.finalized))
        assert isinstance(coord, tf.train.Coordinator)

    def before_run(self, run_context):
        self.log.append((self.name, "before_run"))
        if self.fetches is None and self.feeds is None:
            return None
        return hooks.SessionRunArgs(self.fetches, self.feeds)

    def after_run(self, run_context, run_values):
        self.log.append((self.name, "after_run"))
        self.results.append(run_values.results)

    def end(self, session):
        self.log.append((self.name, "end"))


# -- the hook protocol -----------------------------------------------------------------------------
def test_session_run_args_defaults_and_context():
    args = hooks.SessionRunArgs("x")
    assert args == ("x", None, None) and args.fetches == "x" and args.options is None
    ctx = hooks.SessionRunContext(original_args=args, session="sess")
    assert ctx.original_args is args and ctx.session == "sess" and not ctx.stop_requested
    ctx.request_stop()
    assert ctx.stop_requested
    values = hooks.SessionRunValues(results=1, options=None, run_metadata=None)
    assert values.results == 1


def test_hooks_are_called_in_order_around_each_step():
    log = []
    gs, w, loss, train = _model()
    h1, h2 = _Recorder("a", log), _Recorder("b", log, fetches=loss)
    graph = tf.get_default_graph()
    with ms.MonitoredSession(hooks=[h1, h2]) as sess:
        sess.run(train)
        sess.run(train)
    assert log == [("a", "begin", False), ("b", "begin", False),
                   ("a", "after_create_session", True), ("b", "after_create_session", True),
                   ("a", "before_run"), ("b", "before_run"), ("a", "after_run"), ("b", "after_run"),
                   ("a", "before_run"), ("b", "before_run"), ("a", "after_run"), ("b", "after_run"),
                   ("a", "end"), ("b", "end")]
    # Only b asked for something; the loss it got is the value the step computed.
    assert h1.results == [None, None]
    np.testing.assert_allclose(h2.results, [(1 - 3) ** 2, (_w_after(1) - 3) ** 2], rtol=1e-6)
    assert not graph.finalized   # MonitoredSession finalized it while open, not for good


def test_hook_fetch_structures_feeds_and_caller_results():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.multiply(x, 2.0, name="y")
    z = tf.add(x, 1.0, name="z")
    hook = _Recorder("h", [], fetches={"double": y, "pair": (z, "y:0")}, feeds={x: 5.0})
    with ms.MonitoredSession(hooks=[hook]) as sess:
        out = sess.run({"z": z, "list": [y, z.op]})
        assert out == {"z": 6.0, "list": [10.0, None]}
        assert hook.results[-1] == {"double": 10.0, "pair": (6.0, 10.0)}
        # The caller's feed goes in too; feeding what a hook feeds is an error.
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(y, feed_dict={x: 1.0})


def test_two_hooks_feeding_the_same_tensor_is_an_error():
    x = tf.placeholder(tf.float32, [], name="x")
    y = x * 2.0
    h1 = hooks.FeedFnHook(lambda: {x: 1.0})
    h2 = hooks.FeedFnHook(lambda: {x: 2.0})
    with ms.MonitoredSession(hooks=[h1, h2]) as sess:
        with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
            sess.run(y)


def test_bad_fetches_are_reported_by_the_session():
    tf.constant(1.0, name="c")
    with ms.MonitoredSession() as sess:
        with pytest.raises(ValueError, match="nope"):
            sess.run("nope:0")
        with pytest.raises(TypeError, match="None"):
            sess.run(None)


def test_repeated_steps_reuse_the_session_plan():
    gs, w, loss, train = _model()
    with ms.SingularMonitoredSession(
            hooks=[hooks.StopAtStepHook(last_step=100),
                   hooks.LoggingTensorHook([loss], every_n_iter=3)]) as sess:
        for _ in range(4):
            sess.run([train, loss])
        plans = len(sess.raw_session()._plans)
        for _ in range(6):
            sess.run([train, loss])
        assert len(sess.raw_session()._plans) == plans


def test_request_stop_from_a_hook_and_run_after_stop():
    class StopAfter(hooks.SessionRunHook):
        def __init__(self, n):
            self.n = n

        def after_run(self, run_context, run_values):
            self.n -= 1
            if self.n == 0:
                run_context.request_stop()

    gs, w, loss, train = _model()
    with ms.MonitoredSession(hooks=[StopAfter(3)]) as sess:
        steps = 0
        while not sess.should_stop():
            sess.run(train)
            steps += 1
        assert steps == 3
        with pytest.raises(RuntimeError, match="Run called even after should_stop requested"):
            sess.run(train)


# -- StopAtStepHook --------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,expected", [({"num_steps": 4}, 4), ({"last_step": 6}, 6)])
def test_stop_at_step_hook(kwargs, expected):
    gs, w, loss, train = _model()
    with ms.MonitoredSession(hooks=[hooks.StopAtStepHook(**kwargs)]) as sess:
        steps = 0
        while not sess.should_stop():
            sess.run(train)
            steps += 1
        assert sess._tf_sess().run(gs) == expected   # (sess.run refuses once stopped)
    assert steps == expected


def test_stop_at_step_counts_num_steps_from_the_restored_step(tmp_path):
    for expected in (3, 6):
        with tf.Graph().as_default():
            gs, w, loss, train = _model()
            with ms.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                             hooks=[hooks.StopAtStepHook(num_steps=3)]) as sess:
                while not sess.should_stop():
                    sess.run(train)
                assert sess._tf_sess().run(gs) == expected


def test_stop_at_step_hook_arguments():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        hooks.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        hooks.StopAtStepHook(num_steps=1, last_step=2)
    with pytest.raises(ValueError, match="non-negative"):
        hooks.StopAtStepHook(num_steps=-1)
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        ms.MonitoredSession(hooks=[hooks.StopAtStepHook(num_steps=1)])


# -- checkpoints -----------------------------------------------------------------------------------
def test_checkpoint_saver_hook_saves_by_steps_and_at_end(tmp_path):
    gs, w, loss, train = _model()
    calls = []

    class Listener(hooks.CheckpointSaverListener):
        def begin(self):
            calls.append("begin")

        def before_save(self, session, step):
            calls.append(("before", step))

        def after_save(self, session, step):
            calls.append(("after", step))

        def end(self, session, step):
            calls.append(("end", step))

    hook = hooks.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Listener()])
    with ms.SingularMonitoredSession(hooks=[hook]) as sess:
        for _ in range(5):
            sess.run(train)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    names = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert names == ["model.ckpt-0", "model.ckpt-2", "model.ckpt-4", "model.ckpt-5"]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "w"), _w_after(5),
                               rtol=1e-6)
    assert tf.train.load_variable(str(tmp_path), "global_step") == 5
    assert os.path.exists(tmp_path / "graph.pbtxt")
    assert calls == ["begin", ("before", 0), ("after", 0), ("before", 2), ("after", 2),
                     ("before", 4), ("after", 4), ("before", 5), ("after", 5), ("end", 5)]


def test_checkpoint_listener_can_stop_training(tmp_path):
    gs, w, loss, train = _model()

    class StopAt2(hooks.CheckpointSaverListener):
        def after_save(self, session, step):
            return step >= 2

    hook = hooks.CheckpointSaverHook(str(tmp_path), save_steps=1, listeners=[StopAt2()])
    with ms.MonitoredSession(hooks=[hook]) as sess:
        while not sess.should_stop():
            sess.run(train)
        assert sess._tf_sess().run(gs) == 2


def test_checkpoint_saver_hook_arguments(tmp_path):
    with pytest.raises(ValueError, match="Can not provide both every_secs and every_steps"):
        hooks.CheckpointSaverHook(str(tmp_path), save_secs=1, save_steps=1)
    with pytest.raises(ValueError, match="Either every_secs or every_steps"):
        hooks.CheckpointSaverHook(str(tmp_path))
    with pytest.raises(ValueError, match="both saver and scaffold"):
        hooks.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=object(),
                                  scaffold=ms.Scaffold())


def test_second_training_session_restores_and_continues(tmp_path):
    ckpt = str(tmp_path)
    for run, (start, stop) in enumerate([(0, 4), (4, 7)]):
        with tf.Graph().as_default():
            gs, w, loss, train = _model()
            with ms.MonitoredTrainingSession(checkpoint_dir=ckpt, save_checkpoint_steps=100,
                                             hooks=[hooks.StopAtStepHook(last_step=stop)]) as sess:
                assert sess.run(gs) == start
                np.testing.assert_allclose(sess.run(w), _w_after(start), rtol=1e-6)
                while not sess.should_stop():
                    sess.run(train)
                np.testing.assert_allclose(sess._tf_sess().run(w), _w_after(stop), rtol=1e-6)
    assert tf.train.latest_checkpoint(ckpt).endswith("model.ckpt-7")


def test_monitored_training_session_default_hooks(tmp_path):
    gs, w, loss, train = _model()
    tf.summary.scalar("train_loss", loss)
    with ms.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=3,
                                     save_summaries_steps=2, log_step_count_steps=2) as sess:
        kinds = [type(h).__name__ for h in sess._hooks]
        assert kinds == ["StepCounterHook", "SummarySaverHook", "CheckpointSaverHook"]
        for _ in range(5):
            sess.run(train)
    FileWriterCache.clear()
    (events_file,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = list(summary_iterator(events_file))
    loss_steps = [e.step for e in events for v in e.summary.value if v.tag == "train_loss"]
    rate_steps = [e.step for e in events for v in e.summary.value if v.tag == "global_step/sec"]
    assert loss_steps == [1, 3, 5]
    assert rate_steps == [3, 5]
    assert any(e.session_log.status == tf.SessionLog.START for e in events)
    assert sum(e.session_log.status == tf.SessionLog.CHECKPOINT for e in events) == 3
    assert any(e.graph_def for e in events)
    # No checkpoint_dir: no checkpoints, no summaries, but the same session behaviour.
    with tf.Graph().as_default():
        _model()
        with ms.MonitoredTrainingSession() as sess:
            assert sess._hooks == []


def test_monitored_training_session_defaults_to_600_second_checkpoints(tmp_path):
    _model()
    with ms.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        (saver_hook,) = [h for h in sess._hooks if isinstance(h, hooks.CheckpointSaverHook)]
        assert saver_hook._timer._every_secs == 600 and saver_hook._timer._every_steps is None
        (summary_hook,) = [h for h in sess._hooks if isinstance(h, hooks.SummarySaverHook)]
        assert summary_hook._timer._every_steps == 100


# -- logging hooks ---------------------------------------------------------------------------------
def test_logging_tensor_hook_every_n_iter(caplog):
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.multiply(x, 2.0, name="y")
    feeds = iter(range(100))
    hook = hooks.LoggingTensorHook({"y": y, "x": "x"}, every_n_iter=2)
    with caplog.at_level(logging.INFO, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hooks.FeedFnHook(lambda: {x: next(feeds)}),
                                        hook]) as sess:
            for _ in range(5):
                sess.run(y.op)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("x = ")]
    assert lines[0] == "x = 0.0, y = 0.0"   # tags sorted; no elapsed time the first time
    assert [line.split(" (")[0] for line in lines[1:]] == ["x = 2.0, y = 4.0", "x = 4.0, y = 8.0"]
    assert all(line.endswith(" sec)") for line in lines[1:])


def test_logging_tensor_hook_list_keeps_order_and_prints_float32_digits(caplog):
    a = tf.constant(0.1, name="a")
    b = tf.constant([1.5, 2.0], name="b")
    with caplog.at_level(logging.INFO, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hooks.LoggingTensorHook([b, "a"], every_n_iter=1)]) as sess:
            sess.run(a)
    assert "b:0 = [1.5 2. ], a = 0.1" in caplog.text.splitlines()[-1]


def test_logging_tensor_hook_at_end_and_formatter(caplog):
    gs, w, loss, train = _model()
    hook = hooks.LoggingTensorHook([loss], at_end=True,
                                   formatter=lambda values: "final loss %.4f" % values[loss])
    with caplog.at_level(logging.INFO, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(3):
                sess.run(train)
    messages = [r.getMessage() for r in caplog.records if "final loss" in r.getMessage()]
    assert messages == ["final loss %.4f" % (_w_after(3) - 3) ** 2]


def test_logging_tensor_hook_arguments():
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        hooks.LoggingTensorHook(["x"])
    with pytest.raises(ValueError, match="exactly one of every_n_iter and every_n_secs"):
        hooks.LoggingTensorHook(["x"], every_n_iter=1, every_n_secs=1)
    with pytest.raises(ValueError, match="invalid every_n_iter=0"):
        hooks.LoggingTensorHook(["x"], every_n_iter=0)
    tf.split(tf.constant([1.0, 2.0]), 2, name="two")
    with pytest.raises(ValueError, match="ambiguous"):
        ms.MonitoredSession(hooks=[hooks.LoggingTensorHook(["two"], every_n_iter=1)])
    with pytest.raises(ValueError, match="equal to current graph"):
        with tf.Graph().as_default():
            other = tf.constant(1.0)
        ms.MonitoredSession(hooks=[hooks.LoggingTensorHook([other], every_n_iter=1)])


def test_step_counter_hook_logs_steps_per_second(caplog, tmp_path):
    gs, w, loss, train = _model()
    writer = tf.summary.FileWriter(str(tmp_path))
    hook = hooks.StepCounterHook(every_n_steps=2, summary_writer=writer)
    with caplog.at_level(logging.INFO, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hook]) as sess:
            for _ in range(6):
                sess.run(train)
    writer.close()
    rates = [r for r in caplog.records if r.getMessage().startswith("global_step/sec: ")]
    assert len(rates) == 2   # triggers at 1 (start), then at steps 3 and 5
    (events_file,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    values = [(e.step, v.simple_value) for e in summary_iterator(events_file)
              for v in e.summary.value]
    assert [s for s, _ in values] == [3, 5] and all(v > 0 for _, v in values)
    with pytest.raises(ValueError, match="exactly one of every_n_steps and every_n_secs"):
        hooks.StepCounterHook(every_n_steps=None)


def test_step_counter_warns_when_the_global_step_does_not_move(caplog):
    tf.train.get_or_create_global_step()
    x = tf.constant(1.0)
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hooks.StepCounterHook(every_n_steps=10)]) as sess:
            for _ in range(8):
                sess.run(x)
    warnings = [r for r in caplog.records if "has not been increased" in r.getMessage()]
    assert len(warnings) == 5


# -- NaN -------------------------------------------------------------------------------------------
def _nan_model():
    gs = tf.train.get_or_create_global_step()
    v = tf.Variable(1.0, name="v")
    loss = tf.log(v - 2.0, name="nan_loss")  # log of a negative number: NaN
    train = tf.assign_add(gs, 1)
    return loss, train


def test_nan_tensor_hook_raises(caplog):
    loss, train = _nan_model()
    with caplog.at_level(logging.ERROR, logger="tfjupyter"):
        with pytest.raises(hooks.NanLossDuringTrainingError, match="NaN loss during training"):
            with ms.MonitoredSession(hooks=[hooks.NanTensorHook(loss)]) as sess:
                sess.run(train)
    assert "Model diverged with loss = NaN." in caplog.text


def test_nan_tensor_hook_can_just_stop(caplog):
    loss, train = _nan_model()
    with caplog.at_level(logging.WARNING, logger="tfjupyter"):
        with ms.MonitoredSession(hooks=[hooks.NanTensorHook(loss, fail_on_nan_loss=False)]) as sess:
            sess.run(train)
            assert sess.should_stop()
    assert "Model diverged with loss = NaN." in caplog.text


def test_nan_tensor_hook_passes_finite_losses():
    gs, w, loss, train = _model()
    with ms.MonitoredSession(hooks=[hooks.NanTensorHook(loss)]) as sess:
        for _ in range(3):
            sess.run(train)
        assert not sess.should_stop()


# -- other hooks -----------------------------------------------------------------------------------
def test_final_ops_hook_and_feed_fn_hook():
    x = tf.placeholder(tf.float32, [], name="x")
    total = tf.Variable(0.0, name="total")
    add = tf.assign_add(total, x)
    counter = iter(range(1, 100))
    final = hooks.FinalOpsHook({"total": total.value(), "twice": total.value() * 2})
    with ms.MonitoredSession(hooks=[hooks.FeedFnHook(lambda: {x: float(next(counter))}),
                                    final]) as sess:
        for _ in range(4):
            sess.run(add)
    assert final.final_ops_values == {"total": 10.0, "twice": 20.0}


def test_global_step_waiter_hook_waits_for_the_step():
    gs, w, loss, train = _model()
    hook = hooks.GlobalStepWaiterHook(wait_until_step=2, max_wait_secs=10)
    with ms.SingularMonitoredSession(hooks=[hook]) as sess:
        raw = sess.raw_session()
        bump = threading.Timer(0.2, lambda: [raw.run(train) for _ in range(2)])
        bump.start()
        start = time.monotonic()
        sess.run(loss)           # waits until the other "worker" made 2 steps
        assert time.monotonic() - start >= 0.2
        bump.join()
        assert sess.run(gs) == 2
        start = time.monotonic()
        sess.run(loss)           # started: no more waiting
        assert time.monotonic() - start < 0.2


def test_global_step_waiter_hook_is_bounded():
    _model()
    hook = hooks.GlobalStepWaiterHook(wait_until_step=5, max_wait_secs=0.3)
    with ms.MonitoredSession(hooks=[hook]) as sess:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError, match="did not reach 5 within 0.3 secs"):
            sess.run(tf.get_default_graph().get_tensor_by_name("loss:0"))
        assert time.monotonic() - start < 2


def test_summary_saver_hook_needs_one_source():
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        hooks.SummarySaverHook(save_steps=1)


def test_second_or_step_timer():
    timer = hooks.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(0) and not timer.should_trigger_for_step(2)
    assert timer.should_trigger_for_step(3)
    secs, steps = timer.update_last_triggered_step(4)
    assert steps == 4 and secs >= 0 and timer.last_triggered_step() == 4
    timer = hooks.SecondOrStepTimer(every_secs=0.05)
    timer.update_last_triggered_step(0)
    assert not timer.should_trigger_for_step(1)
    time.sleep(0.06)
    assert timer.should_trigger_for_step(1)


# -- MonitoredSession: closing, errors, recovery ---------------------------------------------------
def test_out_of_range_ends_the_with_block_cleanly_and_other_errors_propagate():
    log = []
    _model()
    with ms.MonitoredSession(hooks=[_Recorder("h", log)]) as sess:
        raise errors.OutOfRangeError(None, None, "input exhausted")
    assert log[-1] == ("h", "end") and sess.should_stop()
    log.clear()
    with pytest.raises(KeyError):
        with ms.MonitoredSession(hooks=[_Recorder("h", log)]) as sess:
            raise KeyError("boom")
    assert ("h", "end") not in log   # end() is for clean exits only
    with pytest.raises(RuntimeError, match="closed MonitoredSession"):
        sess.run("loss:0")


def test_close_twice_raises():
    _model()
    sess = ms.MonitoredSession()
    sess.close()
    with pytest.raises(RuntimeError, match="Session is already closed"):
        sess.close()


class _FlakySession:
    """A session that raises ``error`` from its run number ``fail_at`` (counted over all the
    sessions of the creator), once."""

    def __init__(self, sess, state):
        self._sess, self._state = sess, state

    graph = property(lambda self: self._sess.graph)

    def run(self, *args, **kwargs):
        self._state["runs"] += 1
        if self._state["runs"] == self._state["fail_at"]:
            raise self._state["error"](None, None, "worker went away")
        return self._sess.run(*args, **kwargs)

    def close(self):
        self._state["closed"] += 1
        self._sess.close()


class _FlakyCreator(ms.SessionCreator):
    def __init__(self, error, fail_at):
        self.inner = ms.ChiefSessionCreator()
        self.state = {"runs": 0, "fail_at": fail_at, "error": error, "closed": 0, "created": 0}

    def create_session(self):
        self.state["created"] += 1
        return _FlakySession(self.inner.create_session(), self.state)


@pytest.mark.parametrize("error", [errors.AbortedError, errors.UnavailableError])
def test_preemption_errors_recreate_the_session(error):
    gs, w, loss, train = _model()
    log = []
    creator = _FlakyCreator(error, fail_at=3)
    with ms.MonitoredSession(session_creator=creator, hooks=[_Recorder("h", log)]) as sess:
        sess.run(train)
        sess.run(train)
        sess.run(train)     # fails once; a new session (initialized again) runs the step
        assert creator.state["created"] == 2 and creator.state["closed"] == 1
        assert sess.run(gs) == 1
    assert [e for e in log if e[1] == "after_create_session"] == [
        ("h", "after_create_session", True)] * 2


def test_singular_monitored_session_does_not_recover():
    _model()

    sess = ms.SingularMonitoredSession()
    raw = sess.raw_session()
    assert isinstance(raw, tf.Session)
    sess.close()
    # Recovery belongs to MonitoredSession; with should_recover=False the error surfaces.
    creator = _FlakyCreator(errors.AbortedError, fail_at=1)
    session = ms._MonitoredSession(creator, [], should_recover=False)
    with pytest.raises(errors.AbortedError, match="worker went away"):
        session.run("loss:0")
    session.close()


def test_other_errors_are_not_recovered():
    gs, w, loss, train = _model()
    creator = _FlakyCreator(errors.InvalidArgumentError, fail_at=1)
    with pytest.raises(errors.InvalidArgumentError, match="worker went away"):
        with ms.MonitoredSession(session_creator=creator) as sess:
            sess.run(train)
    assert creator.state["created"] == 1


def test_thread_errors_reported_to_the_coordinator_surface_in_the_main_loop():
    class StartsFailingThread(hooks.SessionRunHook):
        def after_create_session(self, session, coord):
            def fail():
                with coord.stop_on_exception():
                    raise ValueError("input thread failed")
            t = threading.Thread(target=fail)
            coord.register_thread(t)
            t.start()
            t.join()

    gs, w, loss, train = _model()
    with pytest.raises(ValueError, match="input thread failed"):
        with ms.MonitoredSession(hooks=[StartsFailingThread()]) as sess:
            while not sess.should_stop():
                sess.run(train)


def test_preemption_reported_by_a_thread_recreates_the_session_in_should_stop():
    class PreemptedOnce(hooks.SessionRunHook):
        created = 0

        def after_create_session(self, session, coord):
            self.created += 1
            if self.created == 1:
                coord.request_stop(errors.UnavailableError(None, None, "ps went away"))

    gs, w, loss, train = _model()
    hook = PreemptedOnce()
    with ms.MonitoredSession(hooks=[hook]) as sess:
        assert hook.created == 1
        assert not sess.should_stop()     # recovered: a new session, training goes on
        assert hook.created == 2
        sess.run(train)
        assert sess._tf_sess().run(gs) == 1


def _queue_input(values):
    """A queue runner moving ``values`` from a closed source queue to the queue read by the
    returned dequeue: that one ends with OutOfRangeError once the values are used up."""
    src = tf.FIFOQueue(10, [tf.float32], shapes=[[]], name="src")
    fill, close_src = src.enqueue_many([values]), src.close()
    queue = tf.FIFOQueue(2, [tf.float32], shapes=[[]], name="q")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue([src.dequeue()])]))

    def init_fn(scaffold, session):
        session.run(fill)
        session.run(close_src)
    return queue.dequeue(), init_fn


def _queue_threads():
    return [t for t in threading.enumerate() if t.name.startswith("QueueRunnerThread")]


def test_queue_runners_feed_the_session_until_out_of_range():
    value, init_fn = _queue_input([1.0, 2.0, 3.0])
    got = []
    scaffold = ms.Scaffold(init_fn=init_fn)
    with ms.MonitoredSession(ms.ChiefSessionCreator(scaffold=scaffold)) as sess:
        assert _queue_threads()
        while not sess.should_stop():
            got.append(sess.run(value))   # the 4th raises OutOfRangeError: a clean end
    assert got == [1.0, 2.0, 3.0]
    assert _queue_threads() == []


def test_closing_stops_queue_runners_blocked_on_a_full_queue():
    value, init_fn = _queue_input([float(i) for i in range(10)])
    with ms.MonitoredSession(ms.ChiefSessionCreator(scaffold=ms.Scaffold(init_fn=init_fn)),
                             stop_grace_period_secs=2) as sess:
        assert sess.run(value) == 0.0
        time.sleep(0.05)                  # the runner now waits on the full queue
    assert _queue_threads() == []


def test_run_step_fn():
    gs, w, loss, train = _model()
    log = []
    with ms.MonitoredSession(hooks=[_Recorder("h", log)]) as sess:
        def step_fn(step_context):
            before = step_context.session.run(gs)   # no hooks
            step_context.run_with_hooks(train)      # hooks
            if before >= 2:
                step_context.request_stop()
            return before

        results = []
        while not sess.should_stop():
            results.append(sess.run_step_fn(step_fn))
    assert results == [0, 1]   # the third call raised StopIteration, which ended the block
    assert sum(1 for e in log if e[1] == "before_run") == 3
    with ms.MonitoredSession() as sess:
        with pytest.raises(ValueError, match="step_context"):
            sess.run_step_fn(lambda ctx: None)


# -- Scaffold --------------------------------------------------------------------------------------
def test_scaffold_defaults_and_init_fn():
    gs, w, loss, train = _model()
    local = tf.Variable(7.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    seen = []
    set_w = w.assign(5.0)

    def init_fn(scaffold, session):
        seen.append(scaffold)
        session.run(set_w)

    scaffold = ms.Scaffold(init_fn=init_fn)
    with ms.MonitoredSession(ms.ChiefSessionCreator(scaffold=scaffold)) as sess:
        assert seen == [scaffold]
        assert sess.run([w, local]) == [5.0, 7.0]
        assert isinstance(scaffold.saver, tf.train.Saver)
        assert scaffold.saver in tf.get_collection(tf.GraphKeys.SAVERS)
        assert tf.get_collection(tf.GraphKeys.INIT_OP) == [scaffold.init_op]
        assert list(sess.run(scaffold.ready_op)) == []
    copy = ms.Scaffold(copy_from_scaffold=scaffold)
    assert copy.saver is scaffold.saver and copy.ready_op is scaffold.ready_op
    with pytest.raises(TypeError, match="not a Scaffold"):
        ms.Scaffold(copy_from_scaffold=object())


def test_scaffold_refuses_ambiguous_collections():
    _model()
    tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.no_op())
    tf.add_to_collection(tf.GraphKeys.INIT_OP, tf.no_op())
    with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
        ms.Scaffold().finalize()


# -- SessionManager and non-chief workers ----------------------------------------------------------
def test_non_chief_times_out_naming_the_uninitialized_variables(caplog):
    with tf.device("/cpu:0"):
        tf.Variable([1.0, 2.0], name="w")
        tf.Variable(0.0, name="b")
    start = time.monotonic()
    with caplog.at_level(logging.INFO, logger="tfjupyter"):
        with pytest.raises(errors.DeadlineExceededError,
                           match=r"not ready after waiting 0.3 secs: still uninitialized: w, b"):
            ms.MonitoredTrainingSession(is_chief=False, max_wait_secs=0.3)
    assert time.monotonic() - start < 1.5
    assert "Waiting for model to be ready" in caplog.text and "w, b" in caplog.text
    assert not tf.get_default_graph().finalized


class _SharedSession:
    """A session shared by several "workers": closing it does not end it."""

    def __init__(self, sess):
        self._sess = sess

    graph = property(lambda self: self._sess.graph)

    def run(self, *args, **kwargs):
        return self._sess.run(*args, **kwargs)

    def close(self):
        pass


def test_non_chief_waits_for_the_chief_through_a_shared_session():
    gs, w, loss, train = _model()
    shared = tf.Session()
    init = tf.global_variables_initializer()
    manager = sm.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                recovery_wait_secs=0.05,
                                session_factory=lambda master, graph, config:
                                _SharedSession(shared))
    chief = threading.Timer(0.3, lambda: shared.run(init))
    chief.start()
    start = time.monotonic()
    sess = manager.wait_for_session("", max_wait_secs=5)
    assert 0.25 <= time.monotonic() - start < 3
    assert sess.run(w) == 1.0
    chief.join()
    shared.close()


def test_chief_and_worker_monitored_sessions_sharing_one_session():
    """Between-graph replication in miniature: the worker's MonitoredSession waits until the
    chief's has initialized the shared model, then both train it until the last step."""
    gs, w, loss, train = _model()
    shared = tf.Session()
    scaffold = ms.Scaffold()

    def shared_manager(creator):
        s = creator._scaffold
        return sm.SessionManager(local_init_op=s.local_init_op, ready_op=s.ready_op,
                                 ready_for_local_init_op=s.ready_for_local_init_op,
                                 recovery_wait_secs=0.05,
                                 session_factory=lambda *args: _SharedSession(shared))

    class SharedChief(ms.ChiefSessionCreator):
        _get_session_manager = shared_manager

    class SharedWorker(ms.WorkerSessionCreator):
        _get_session_manager = shared_manager

    chief_hook, worker_hook = hooks.StopAtStepHook(last_step=6), hooks.StopAtStepHook(last_step=6)
    chief_hook.begin()   # creates the global step read before the graph is finalized
    worker_steps, worker_error = [], []

    def worker():
        try:
            with ms.MonitoredSession(SharedWorker(scaffold=scaffold, max_wait_secs=5),
                                     hooks=[worker_hook]) as sess:
                while not sess.should_stop():
                    worker_steps.append(sess.run([train, gs])[1])
        except Exception as e:  # reported to the main thread
            worker_error.append(e)

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(0.2)
    assert not worker_steps   # still waiting: nobody initialized the model
    chief_steps = []
    with ms.MonitoredSession(SharedChief(scaffold=scaffold), hooks=[chief_hook]) as sess:
        while not sess.should_stop():
            chief_steps.append(sess.run([train, gs])[1])
            time.sleep(0.01)
    thread.join(10)
    assert not thread.is_alive() and not worker_error
    # Each worker may make one more step before it sees the other reach the last step.
    assert worker_steps and chief_steps and 6 <= shared.run(gs) <= 8
    shared.close()


def test_worker_session_creator_times_out_without_a_chief():
    _model()
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError,
                       match="still uninitialized: global_step, w"):
        ms.MonitoredSession(ms.WorkerSessionCreator(max_wait_secs=0.2))
    assert time.monotonic() - start < 1.5


def test_prepare_session_restores_or_initializes(tmp_path):
    gs, w, loss, train = _model()
    init = tf.global_variables_initializer()
    saver = tf.train.Saver()
    ready = tf.report_uninitialized_variables()
    manager = sm.SessionManager(ready_op=ready)
    sess = manager.prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
    sess.run(train)
    saver.save(sess, str(tmp_path / "model.ckpt"), global_step=gs)
    sess.close()
    sess = manager.prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path))
    assert sess.run(gs) == 1 and saver.last_checkpoints[-1].endswith("model.ckpt-1")
    sess.close()
    sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert restored and sess.run(gs) == 1
    sess.close()
    sess, restored = manager.recover_session("", saver=saver,
                                             checkpoint_dir=str(tmp_path / "empty"))
    assert not restored
    sess.close()
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
        manager.prepare_session("")
    with pytest.raises(RuntimeError, match="did not make model ready.*Variables not initialized: "
                                           "global_step"):
        manager.prepare_session("", init_op=w.initializer)
    with pytest.raises(ValueError, match="must also pass a local_init_op"):
        sm.SessionManager(ready_for_local_init_op=ready)


def test_prepare_session_waits_for_a_checkpoint_boundedly(tmp_path):
    _model()
    manager = sm.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                recovery_wait_secs=0.05)
    start = time.monotonic()
    sess = manager.prepare_session("", init_op=tf.global_variables_initializer(),
                                   saver=tf.train.Saver(), checkpoint_dir=str(tmp_path),
                                   wait_for_checkpoint=True, max_wait_secs=0.2)
    assert 0.15 <= time.monotonic() - start < 1.5
    assert sess.run("w:0") == 1.0
    sess.close()


# -- on a cluster (in-process servers on loopback) -------------------------------------------------
@pytest.fixture
def cluster_servers(monkeypatch, tmp_path):
    from cluster_util import loopback_cluster
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", "test-token-" + "0" * 20)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    cluster = loopback_cluster(ps=1, worker=2)
    servers = [tf.train.Server(cluster, job_name=job, task_index=task)
               for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]]
    yield cluster, servers
    for server in servers:
        server.stop(0)


def test_between_graph_chief_and_worker_share_the_ps_variables(cluster_servers, tmp_path):
    cluster, (ps, chief_server, worker_server) = cluster_servers

    def build(task):
        graph = tf.Graph()
        with graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=cluster)):
            model = _model()
        return graph, model

    worker_graph, (gs1, w1, loss1, train1) = build(1)
    with worker_graph.as_default():
        # No chief yet: the worker gives up after max_wait_secs, naming what it waited for.
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError,
                           match="still uninitialized: global_step, w"):
            ms.MonitoredTrainingSession(master=worker_server.target, is_chief=False,
                                        max_wait_secs=0.3)
        assert time.monotonic() - start < 3
    chief_graph, (gs0, w0, loss0, train0) = build(0)
    with chief_graph.as_default():
        chief = ms.MonitoredTrainingSession(
            master=chief_server.target, is_chief=True, checkpoint_dir=str(tmp_path),
            save_checkpoint_steps=100, hooks=[hooks.StopAtStepHook(last_step=6)])
        for _ in range(3):
            chief.run(train0)
    with worker_graph.as_default():
        with ms.MonitoredTrainingSession(master=worker_server.target, is_chief=False,
                                         max_wait_secs=5,
                                         hooks=[hooks.StopAtStepHook(last_step=6)]) as worker:
            assert worker._tf_sess().run(gs1) == 3    # the chief's progress, on the ps
            while not worker.should_stop():
                worker.run(train1)
    with chief_graph.as_default():
        chief.run(train0)                               # step 7: the chief sees the end
        assert chief.should_stop()
        chief.close()                                   # saves the final checkpoint
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7")
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "w"), _w_after(7),
                               rtol=1e-5)


def test_default_scaffold_initializes_local_variables_and_lookup_tables():
    # TF 1.x's Scaffold.default_local_init_op groups local_variables_initializer and
    # tables_initializer: a table built in an Estimator's input_fn works with no init call.
    table = tf.contrib.lookup.index_table_from_tensor(tf.constant([" <=50K", " >50K"]))
    ids = table.lookup(tf.constant([" >50K", " <=50K", "other"]))
    total = tf.Variable(5.0, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="total")
    with tf.train.MonitoredSession() as sess:
        np.testing.assert_array_equal(sess.run(ids), [1, 0, -1])
        assert sess.run(total) == 5.0
