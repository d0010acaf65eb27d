"""tf.train.Coordinator, LooperThread, QueueRunner / start_queue_runners, and tf.app."""
import threading
import time

import pytest

import tfjupyter as tf
from tfjupyter.framework import errors
from tfjupyter.framework.registry import register_op
from tfjupyter.kernels.cpu import KERNELS


# -- Coordinator -----------------------------------------------------------------------------------
def test_request_stop_should_stop_and_clear():
    coord = tf.train.Coordinator()
    assert not coord.should_stop()
    assert coord.wait_for_stop(0.01) is False
    coord.request_stop()
    assert coord.should_stop() and coord.wait_for_stop(0.01) is True
    coord.clear_stop()
    assert not coord.should_stop()


def _worker(coord, fail_after=None, error=None, steps=None):
    n = 0
    while not coord.should_stop():
        n += 1
        if fail_after is not None and n == fail_after:
            coord.request_stop(error)
        time.sleep(0.001)
    if steps is not None:
        steps.append(n)


def test_join_reraises_first_reported_exception():
    coord = tf.train.Coordinator()
    first, second = ValueError("first"), RuntimeError("second")
    threads = [threading.Thread(target=_worker, args=(coord, 3, first)),
               threading.Thread(target=_worker, args=(coord, 50, second))]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="first"):
        coord.join(threads)
    assert all(not t.is_alive() for t in threads)
    assert coord.joined
    with pytest.raises(KeyError, match="late"):   # nobody joins again: the reporter raises
        coord.request_stop(KeyError("late"))
    coord.request_stop()


def test_stop_on_exception_reports_and_swallows():
    coord = tf.train.Coordinator()

    def body():
        with coord.stop_on_exception():
            raise KeyError("boom")
    t = threading.Thread(target=body)
    t.start()
    with pytest.raises(KeyError, match="boom"):
        coord.join([t])
    with pytest.raises(KeyError):
        coord.raise_requested_exception()


def test_out_of_range_is_a_clean_stop():
    coord = tf.train.Coordinator()
    coord.request_stop(errors.OutOfRangeError(None, None, "queue closed"))
    assert coord.should_stop()
    coord.join([])   # nothing raised
    custom = tf.train.Coordinator(clean_stop_exception_types=(KeyError,))
    custom.request_stop(KeyError("done"))
    custom.join()


def test_join_without_stop_waits_for_threads_and_registered_ones():
    coord = tf.train.Coordinator()
    done = []
    t1 = threading.Thread(target=lambda: (time.sleep(0.05), done.append(1)))
    t2 = threading.Thread(target=lambda: (time.sleep(0.02), done.append(2)))
    coord.register_thread(t2)
    t1.start()
    t2.start()
    coord.join([t1])
    assert sorted(done) == [1, 2]


def test_join_grace_period_names_stragglers():
    coord = tf.train.Coordinator()
    release = threading.Event()
    t = threading.Thread(target=release.wait, name="stubborn", daemon=True)
    t.start()
    coord.request_stop()
    start = time.time()
    with pytest.raises(RuntimeError, match="threads still running: stubborn"):
        coord.join([t], stop_grace_period_secs=0.1)
    assert time.time() - start < 2
    coord.clear_stop()
    coord.request_stop()
    coord.join([t], stop_grace_period_secs=0.05, ignore_live_threads=True)
    release.set()
    t.join()


def test_request_stop_with_exc_info_tuple():
    coord = tf.train.Coordinator()
    try:
        raise IndexError("from exc_info")
    except IndexError:
        import sys
        coord.request_stop(sys.exc_info())
    with pytest.raises(IndexError, match="from exc_info"):
        coord.join()


def test_looper_thread():
    coord = tf.train.Coordinator()
    calls = []
    looper = tf.train.LooperThread.loop(coord, 0.01, target=calls.append, args=("tick",))
    time.sleep(0.1)
    coord.request_stop()
    coord.join([looper])
    assert 3 <= len(calls) <= 15 and set(calls) == {"tick"}

    coord = tf.train.Coordinator()

    def fail():
        raise ValueError("looper failed")
    tf.train.LooperThread.loop(coord, None, target=fail)
    with pytest.raises(ValueError, match="looper failed"):
        coord.join()   # the looper registered itself
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        tf.train.LooperThread(coord, 1.0, args=(1,))


# -- QueueRunner -----------------------------------------------------------------------------------
# A stand-in queue, built from two test op types: each enqueue op counts down a budget and
# then fails like a closed queue; closing is logged.
_BUDGET = {}
_LOG = []


@register_op("QueueRunnerTestEnqueue", stateful=True)
def _enqueue_shape(op):
    return []


@register_op("QueueRunnerTestClose", stateful=True)
def _close_shape(op):
    return []


@KERNELS.register("QueueRunnerTestEnqueue")
def _enqueue_kernel(op, ctx):
    name = op.name
    failure = op.get_attr("failure")

    def run():
        with threading.Lock():
            _BUDGET[name] -= 1
            left = _BUDGET[name]
        if left < 0:
            if failure == "closed":
                raise errors.OutOfRangeError(None, op, "Queue is closed and has insufficient "
                                             "elements")
            raise errors.InvalidArgumentError(None, op, "enqueue failed")
        _LOG.append(name)
    return run


@KERNELS.register("QueueRunnerTestClose")
def _close_kernel(op, ctx):
    return lambda: _LOG.append(op.name)


class _TestQueue:
    def __init__(self, name="fifo"):
        self.name = name

    def close(self, cancel_pending_enqueues=False, name=None):
        graph = tf.get_default_graph()
        return graph.create_op("QueueRunnerTestClose", [],
                               name="cancel" if cancel_pending_enqueues else "close")


def _enqueue(name, budget, failure="closed"):
    _BUDGET[name] = budget
    return tf.get_default_graph().create_op("QueueRunnerTestEnqueue", [], {"failure": failure},
                                            name=name)


def test_queue_runner_runs_until_the_queue_closes():
    _LOG.clear()
    with tf.Graph().as_default():
        qr = tf.train.QueueRunner(_TestQueue(), [_enqueue("enq_a", 5), _enqueue("enq_b", 3)])
        tf.train.add_queue_runner(qr)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord, start=False)
            assert len(threads) == 3 and all(t.daemon for t in threads)
            assert tf.train.start_queue_runners(sess, coord) == []   # already running
            for t in threads:
                t.start()
            for t in threads[:2]:
                t.join(5)
            coord.request_stop()
            coord.join(threads)
    assert _LOG.count("enq_a") == 5 and _LOG.count("enq_b") == 3
    assert _LOG.count("close") == 1      # by the last enqueue thread to finish
    assert _LOG.count("cancel") == 1     # by the close_on_stop thread


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_queue_runner_errors_reach_the_coordinator():
    with tf.Graph().as_default():
        qr = tf.train.QueueRunner(_TestQueue(), [_enqueue("enq_bad", 2, failure="error")])
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = qr.create_threads(sess, coord=coord, start=True)
            with pytest.raises(errors.InvalidArgumentError, match="enqueue failed"):
                coord.join(threads)
        with tf.Session() as sess:   # without a coordinator the error is kept on the runner
            _BUDGET["enq_bad"] = 0
            (t,) = qr.create_threads(sess, start=True)
            t.join(5)
            assert len(qr.exceptions_raised) == 1


def test_start_queue_runners_without_runners_and_argument_checks():
    with tf.Graph().as_default():
        with tf.Session() as sess:
            assert tf.train.start_queue_runners(sess) == []
            with sess.as_default():
                assert tf.train.start_queue_runners() == []
        with pytest.raises(ValueError, match="No default session"):
            tf.train.start_queue_runners()
        with pytest.raises(TypeError, match="must be a `tf.Session`"):
            tf.train.start_queue_runners(sess=object())
        with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
            tf.train.QueueRunner(_TestQueue(), [])
        with pytest.raises(TypeError, match="queue_closed_exception_types"):
            tf.train.QueueRunner(_TestQueue(), [_enqueue("e", 1)],
                                 queue_closed_exception_types=(ValueError,))


# -- tf.app ----------------------------------------------------------------------------------------
def _fresh_flags():
    from tfjupyter import app
    return app.FlagValues()


def test_flags_parse_all_kinds():
    flags = tf.app.flags
    values = _fresh_flags()
    flags.DEFINE_integer("max_steps", 1000, "Number of steps.", flag_values=values)
    flags.DEFINE_float("learning_rate", 0.01, "Rate.", flag_values=values)
    flags.DEFINE_boolean("fake_data", False, "Use fake data.", flag_values=values)
    flags.DEFINE_bool("verbose", True, "Talk.", flag_values=values)
    flags.DEFINE_string("data_dir", "/tmp/data", "Where.", flag_values=values)
    flags.DEFINE_enum("mode", "train", ["train", "eval"], "Mode.", flag_values=values)
    flags.DEFINE_list("layers", "128,64", "Sizes.", flag_values=values)
    assert values.max_steps == 1000 and values.layers == ["128", "64"]   # defaults before parse
    values.unparse_flags()
    rest = values(["prog", "--max_steps=5", "-f", "/kernel.json", "--fake_data",
                   "--learning_rate", "0.5", "-mode=eval", "--noverbose", "--layers=1,2,3",
                   "positional", "--", "--max_steps=9"], known_only=True)
    assert rest == ["prog", "-f", "/kernel.json", "positional", "--max_steps=9"]
    assert (values.max_steps, values.learning_rate, values.fake_data, values.verbose,
            values.data_dir, values.mode, values.layers) == \
        (5, 0.5, True, False, "/tmp/data", "eval", ["1", "2", "3"])
    assert values.__flags["max_steps"] == 5
    assert values.flag_values_dict()["mode"] == "eval" and "mode" in values
    values.max_steps = 7
    assert values.max_steps == 7
    with pytest.raises(AttributeError):
        values.undefined_flag


def test_flag_errors():
    flags = tf.app.flags
    values = _fresh_flags()
    flags.DEFINE_integer("steps", 3, "Steps.", flag_values=values)
    flags.DEFINE_boolean("on", False, "On.", flag_values=values)
    flags.DEFINE_enum("mode", "a", ["a", "b"], "Mode.", flag_values=values)
    with pytest.raises(flags.IllegalFlagValueError, match="flag --steps: invalid int value"):
        values(["p", "--steps=abc"])
    with pytest.raises(flags.IllegalFlagValueError, match="Non-boolean argument"):
        values(["p", "--on=maybe"])
    with pytest.raises(flags.IllegalFlagValueError, match=r"one of <a\|b>"):
        values(["p", "--mode=c"])
    with pytest.raises(flags.UnrecognizedFlagError, match="Unknown command line flag 'nope'"):
        values(["p", "--nope=1"])
    assert values(["p", "--nope=1"], known_only=True) == ["p", "--nope=1"]
    flags.DEFINE_string("needed", None, "Required.", flag_values=values)
    flags.mark_flag_as_required("needed", flag_values=values)
    with pytest.raises(flags.IllegalFlagValueError, match="must have a value other than None"):
        values(["p"])
    assert values(["p", "--needed=x"]) == ["p"] and values.needed == "x"


def test_redefinition_same_module_replaces_other_module_fails():
    flags = tf.app.flags
    values = _fresh_flags()
    flags.DEFINE_integer("batch", 10, "Batch.", flag_values=values)
    values(["p", "--batch=32"])
    flags.DEFINE_integer("batch", 20, "Batch size.", flag_values=values)   # a cell run again
    assert values.batch == 32   # the command line still wins
    flags.DEFINE_integer("epochs", 1, "Epochs.", flag_values=values)
    assert values.epochs == 1   # defined after parsing: its default
    other = {"__name__": "some_other_module", "flags": flags, "values": values}
    with pytest.raises(flags.DuplicateFlagError, match="'batch' is defined twice"):
        exec("flags.DEFINE_integer('batch', 1, 'x', flag_values=values)", other)


def test_app_run_calls_main_and_exits_with_its_value(monkeypatch, capsys):
    from tfjupyter import app
    values = _fresh_flags()
    app.flags.DEFINE_integer("runs", 1, "Runs.", flag_values=values)
    monkeypatch.setattr(app, "FLAGS", values)
    seen = []

    def main(argv):
        seen.append((argv, values.runs))
        return 3
    with pytest.raises(SystemExit) as info:
        tf.app.run(main, argv=["prog", "--runs=4", "extra"])
    assert info.value.code == 3 and seen == [(["prog", "extra"], 4)]
    with pytest.raises(SystemExit) as info:
        tf.app.run(main, argv=["prog", "--runs=x"])
    assert info.value.code == 1
    assert "FATAL Flags parsing error: flag --runs: invalid int value" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        tf.app.run(main, argv=["prog", "--help"])
    assert info.value.code == 0 and "--runs: Runs." in capsys.readouterr().out


def test_global_flags_module():
    import tfjupyter.app.flags as flags_module
    assert flags_module is tf.app.flags
    assert isinstance(tf.app.flags.FLAGS, tf.app.flags.FlagValues)
