"""The %tf_* IPython magics, driven through a real InteractiveShell."""
import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

import tfjupyter as tf  # noqa: E402
from tfjupyter import magics as tf_magics  # noqa: E402
from tfjupyter.client import session as session_module  # noqa: E402
from tfjupyter.framework import ops as framework_ops  # noqa: E402
from tfjupyter.lab import GraphView  # noqa: E402

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config,
                                     ipython_dir=str(tmp_path_factory.mktemp("ipython")))


def _magics(shell) -> tf_magics.TFMagics:
    return shell.magics_manager.registry["TFMagics"]


@pytest.fixture
def ip(shell):
    assert shell.run_cell("%load_ext tfjupyter").success
    shell.run_cell("import tfjupyter as tf")
    yield shell
    _magics(shell).reset()
    shell.reset(new_session=False)
    assert framework_ops._default_graph_stack.stack == []


def run(ip, code: str):
    result = ip.run_cell(code)
    assert result.success, f"cell failed: {result.error_before_exec or result.error_in_exec!r}"
    return result.result


def op_names(graph):
    return [op.name for op in graph.get_operations()]


# -- %%tf_graph / %tf_graph ------------------------------------------------------------------------
def test_cell_graph_is_built_across_cells(ip):
    run(ip, "%%tf_graph g1\na = tf.constant(1.0, name='a')\nb = tf.constant(2.0, name='b')")
    run(ip, "%%tf_graph g1\nc = tf.add(a, b, name='add')\ninside = tf.get_default_graph()")
    g1 = _magics(ip).graphs["g1"]
    assert ip.user_ns["inside"] is g1 and ip.user_ns["c"].graph is g1
    assert op_names(g1) == ["a", "b", "add"]
    assert op_names(tf.get_default_graph()) == []          # the default graph is untouched
    run(ip, "d = tf.constant(0.0, name='outside')")
    assert op_names(tf.get_default_graph()) == ["outside"]
    assert framework_ops._default_graph_stack.stack == []
    listing = run(ip, "%tf_graph")
    assert isinstance(listing, tf_magics.GraphTable) and listing.counts == {"g1": 3}
    assert repr(listing).splitlines()[1:] == ["  g1  3 ops"]
    assert "<td style='text-align:left;padding:0 8px'>g1</td>" in listing._repr_html_()


def test_line_graph_is_the_default_for_following_cells(ip):
    assert "No named graphs yet" in repr(run(ip, "%tf_graph"))
    run(ip, "%tf_graph g2\nx = tf.constant(1.0, name='x')")   # the rest of this cell too
    run(ip, "y = tf.identity(x, name='y')")
    g2 = _magics(ip).graphs["g2"]
    assert op_names(g2) == ["x", "y"] and ip.user_ns["y"].graph is g2
    assert framework_ops._default_graph_stack.stack == []     # only pushed while a cell runs
    run(ip, "%%tf_graph other\nz = tf.constant(3.0, name='z')")  # a cell graph wins
    assert op_names(_magics(ip).graphs["other"]) == ["z"]
    run(ip, "w = tf.constant(4.0, name='w')")
    assert op_names(g2) == ["x", "y", "w"]
    listing = repr(run(ip, "%tf_graph")).splitlines()[1:]
    assert listing == ["* g2     3 ops", "  other  1 op"]
    run(ip, "%tf_graph --reset")
    run(ip, "v = tf.constant(5.0, name='v')")
    assert ip.user_ns["v"].graph is tf.get_default_graph() is not g2
    assert repr(run(ip, "%tf_graph")).splitlines()[1:] == ["  g2     3 ops", "  other  1 op"]


def test_switching_and_dropping_graphs(ip):
    run(ip, "%tf_graph a\np = tf.constant(1.0)\n%tf_graph b\nq = tf.constant(2.0)")
    graphs = _magics(ip).graphs
    assert ip.user_ns["p"].graph is graphs["a"] and ip.user_ns["q"].graph is graphs["b"]
    run(ip, "%tf_graph --drop b")
    assert list(graphs) == ["a"] and _magics(ip).active is None
    run(ip, "r = tf.constant(3.0)")
    assert ip.user_ns["r"].graph is tf.get_default_graph()


def test_graph_usage_errors(ip, capsys):
    for cell in ("%%tf_graph\nx = 1", "%%tf_graph a b\nx = 1", "%tf_graph --drop nope",
                 "%tf_graph --bogus", "%tf_graph a b"):
        result = ip.run_cell(cell)
        assert not result.success and isinstance(result.error_in_exec, UsageError), cell
    assert "x" not in ip.user_ns
    assert "no graph named 'nope'" in capsys.readouterr().err


def test_interactive_session_inside_a_named_graph(ip):
    run(ip, "%tf_graph g\nsess = tf.InteractiveSession()\nk = tf.constant(7.0)")
    g = _magics(ip).graphs["g"]
    # our push is gone; the InteractiveSession's own entry stays until it is closed
    assert framework_ops._default_graph_stack.stack == [g]
    assert run(ip, "k.eval()") == 7.0
    run(ip, "%tf_graph --reset\nsess.close()")
    assert framework_ops._default_graph_stack.stack == []


def test_recovers_when_a_post_run_cell_event_is_lost(ip):
    run(ip, "%tf_graph g")
    magics = _magics(ip)
    g = magics.graphs["g"]
    magics.pre_run_cell(object())  # a cell that started and never reported its end
    assert framework_ops._default_graph_stack.stack == [g]
    result = ip.run_cell("h = tf.constant(1.0)", store_history=True)
    assert result.success and ip.user_ns["h"].graph is g
    assert framework_ops._default_graph_stack.stack == []
    magics.pre_run_cell(object())
    magics.post_run_cell(None)  # ipykernel's report for a cell whose coroutine died
    assert framework_ops._default_graph_stack.stack == []
    run(ip, "%%tf_graph other\nk = tf.constant(2.0)")  # nested cells still recognised
    assert ip.user_ns["k"].graph is magics.graphs["other"]


# -- %%tf_device -----------------------------------------------------------------------------------
def test_device_places_the_cells_ops(ip):
    run(ip, "before = tf.constant(0.0)")
    run(ip, "%%tf_device /cpu:0\n"
            "a = tf.constant(1.0)\n"
            "with tf.device('/job:localhost'):\n    b = tf.constant(2.0)\n"
            "with tf.device('/device:GPU:0'):\n    c = tf.constant(3.0)")
    run(ip, "after = tf.constant(4.0)")
    ns = ip.user_ns
    assert ns["a"].op.device == "/device:CPU:0"
    assert ns["b"].op.device == "/job:localhost/device:CPU:0"      # merged with the cell's scope
    assert ns["c"].op.device == "/device:GPU:0"                    # the innermost scope wins
    assert ns["before"].op.device == "" and ns["after"].op.device == ""
    assert tf.get_default_graph()._device_stack == []


def test_device_in_a_named_graph(ip):
    run(ip, "%%tf_graph g1\n%%tf_device /job:worker/task:1/cpu:0\nx = tf.constant(1.0)")
    assert ip.user_ns["x"].graph is _magics(ip).graphs["g1"]
    assert ip.user_ns["x"].op.device == "/job:worker/task:1/device:CPU:0"
    run(ip, "%tf_graph g2")
    run(ip, "%%tf_device /cpu:0\ny = tf.constant(1.0)")
    assert ip.user_ns["y"].graph is _magics(ip).graphs["g2"]
    assert ip.user_ns["y"].op.device == "/device:CPU:0"


def test_malformed_device_does_not_run_the_cell(ip, capsys):
    result = ip.run_cell("%%tf_device /gpu:1:2\nran = True")
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    assert "ran" not in ip.user_ns
    err = capsys.readouterr().err
    assert "Malformed device specification '/gpu:1:2'" in err and "was not run" in err
    for line in ("", "/cpu:0 /gpu:0"):
        result = ip.run_cell(f"%%tf_device {line}\nran = True")
        assert isinstance(result.error_in_exec, UsageError) and "ran" not in ip.user_ns


def test_failing_cell_fails_the_magic_cell_once(ip, capsys):
    result = ip.run_cell("%%tf_device /cpu:0\nz = tf.constant(1.0)\n1 / 0")
    assert not result.success
    error = result.error_in_exec
    assert isinstance(error, tf_magics.MagicCellError)
    assert isinstance(error.error, ZeroDivisionError)
    out = capsys.readouterr().out
    assert out.count("Traceback") == 1
    assert "(%%tf_device /cpu:0: the cell raised ZeroDivisionError; see above)" in out
    assert tf.get_default_graph()._device_stack == []       # the scope was left
    result = ip.run_cell("%%tf_graph g\nx = = 1")
    assert isinstance(result.error_in_exec, tf_magics.MagicCellError)
    assert isinstance(result.error_in_exec.error, SyntaxError)
    assert framework_ops._default_graph_stack.stack == []


# -- %tf_placement ---------------------------------------------------------------------------------
def test_placement_of_the_last_run(ip, capsys, monkeypatch):
    monkeypatch.setattr(session_module, "_last_run_session", None)
    assert run(ip, "%tf_placement") is None
    assert "No session has run yet." in capsys.readouterr().out
    run(ip, "%%tf_device /cpu:0\na = tf.constant(1.0, name='a')")
    run(ip, "b = tf.constant(2.0, name='b')\n"
            "total = tf.add(a, b, name='add')\n"
            "unused = tf.constant(3.0, name='unused')\n"
            "sess = tf.Session()\nsess.run(unused)\nvalue = sess.run(total)")
    assert ip.user_ns["value"] == 3.0
    table = run(ip, "%tf_placement")
    assert isinstance(table, tf_magics.PlacementTable)
    assert {r.op for r in table} == {"a", "b", "add"}
    text = repr(table)
    assert "Placement for the last Session.run" in text
    add_line = next(line for line in text.splitlines() if "add: (Add)" in line)
    assert CPU0 in add_line and "default" in add_line
    a_line = next(line for line in text.splitlines() if "a: (Const)" in line)
    assert "/device:CPU:0" in a_line and "requested" in a_line
    html = table._repr_html_()
    assert html.startswith("<table>")
    assert "<td style='text-align:left;padding:0 8px'>Add</td>" in html
    assert {r.op for r in run(ip, "%tf_placement --all")} == {"a", "b", "add", "unused"}
    assert not ip.run_cell("%tf_placement extra").success


# -- loading ---------------------------------------------------------------------------------------
def test_load_is_idempotent_and_unload_removes_everything(ip):
    first = _magics(ip)
    assert tf_magics.load_ipython_extension(ip) is first
    assert ip.events.callbacks["pre_run_cell"].count(first.pre_run_cell) == 1
    run(ip, "%tf_graph g")
    tf_magics.unload_ipython_extension(ip)
    assert "tf_graph" not in ip.magics_manager.magics["line"]
    assert first.pre_run_cell not in ip.events.callbacks["pre_run_cell"]
    run(ip, "n = tf.constant(1.0)")
    assert ip.user_ns["n"].graph is tf.get_default_graph()
    again = tf_magics.load_ipython_extension(ip)
    assert again is not first and _magics(ip) is again
    run(ip, "%tf_graph")


# -- %tf_graph show ----------------------------------------------------------------------------------
def test_tf_graph_show(ip):
    run(ip, "%%tf_graph model\na = tf.constant(1.0, name='a')\nb = tf.negative(a, name='b')")
    view = run(ip, "%tf_graph show model")
    assert isinstance(view, GraphView) and view.document["title"] == "graph 'model' — not placed"
    assert [n["name"] for n in view.document["nodes"]] == ["a", "b"]
    run(ip, "%%tf_graph model\nsess = tf.Session()\nsess.run(b)")
    sess = ip.user_ns["sess"]
    view = run(ip, "%tf_graph show model --session sess")
    assert view.document["title"] == f"graph 'model' — placed by session {sess.id}"
    assert view.document["placed"] and all(n["device"] for n in view.document["nodes"])
    only = run(ip, "%tf_graph show --session=sess")
    assert only.document["title"] == f"sess (session {sess.id}) — the ops it placed"
    assert only.document["total_ops"] == 2
    # Without a name: the cell's default graph (the %tf_graph NAME one while it is active).
    run(ip, "c = tf.constant(3.0, name='c')")
    default = run(ip, "%tf_graph show")
    assert default.document["title"] == "the default graph — not placed"
    assert [n["name"] for n in default.document["nodes"]] == ["c"]
    run(ip, "%tf_graph model")
    assert run(ip, "%tf_graph show").document["title"].startswith("graph 'model'")
    run(ip, "%tf_graph --reset")
    # A MonitoredSession stands for the tf.Session it runs.
    run(ip, "%%tf_graph model\nmon = tf.train.MonitoredSession()\nmon.run(b)")
    inner = ip.user_ns["mon"]._tf_sess()
    view = run(ip, "%tf_graph show model --session mon")
    assert view.document["title"] == f"graph 'model' — placed by session {inner.id}"
    run(ip, "mon.close()")


def test_tf_graph_show_errors(ip):
    run(ip, "%%tf_graph g1\na = tf.constant(1.0, name='a')")
    run(ip, "%%tf_graph g2\nb = tf.constant(1.0, name='b')\ns2 = tf.Session()\nnot_a_session = 3")

    def error(line):
        with pytest.raises(UsageError) as e:
            ip.run_line_magic("tf_graph", line)
        return str(e.value)

    assert error("show nope") == "%tf_graph show: no graph named 'nope'; named graphs: g1, g2"
    assert "no variable named 'missing'" in error("show g1 --session missing")
    assert error("show --session not_a_session") == (
        "%tf_graph show --session: not_a_session is a int, not a tf.Session (or an open "
        "MonitoredSession)")
    assert "s2 runs another graph than graph 'g1'" in error("show g1 --session s2")
    assert "argument --session: expected one argument" in error("show g1 --session")
    assert "at most one graph name" in error("show g1 g2")
    assert "unrecognized arguments: --all" in error("show --all")
