"""Graph views (tfjupyter.lab.GraphView, tf.Graph's display, %tf_graph show): the JSON document
against hand-computed expectations, the static HTML fallback, and the magic."""
import json
import re

import numpy as np
import pytest

import tfjupyter as tf
from tfjupyter.client import session as session_module
from tfjupyter.lab import MIME_TYPE, GraphView, show_graph
from tfjupyter.lab import graph as graph_view
from tfjupyter.lab import svg
from tfjupyter.runtime.events import PlacementRecord

from cluster_util import TOKEN, loopback_cluster

LOCAL = "/job:localhost/replica:0/task:0"
CPU0, CPU1 = LOCAL + "/device:CPU:0", LOCAL + "/device:CPU:1"
BLUE, ORANGE = graph_view.PALETTE[:2]
NO_GPU = {"GPU": 0}   # the same placements with or without a GPU on the test machine


@pytest.fixture(autouse=True)
def no_last_session(monkeypatch):
    """No session of an earlier test counts as "the session that ran last"."""
    monkeypatch.setattr(session_module, "_last_run_session", None)


def small_graph():
    """x, w -> y (MatMul on CPU:1) -> z (Relu asking for a GPU) -> done (control)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.constant(np.ones((3, 10), np.float32), name="w")
        with tf.device("/cpu:1"):
            y = tf.matmul(x, w, name="y")
        with tf.device("/device:GPU:0"):
            z = tf.nn.relu(y, name="z")
        with tf.control_dependencies([z]):
            done = tf.no_op(name="done")
    return g, x, done


def run_small(g, x, done):
    config = tf.ConfigProto(allow_soft_placement=True, device_count={"CPU": 2, **NO_GPU})
    sess = tf.Session(graph=g, config=config)
    sess.run(done, {x: np.zeros((2, 3), np.float32)})
    return sess


def by_name(doc):
    return {n["name"]: n for n in doc["nodes"]}


# -- the document ------------------------------------------------------------------------------------
def test_unplaced_graph_lists_every_op_with_its_request():
    g, _, _ = small_graph()
    view = GraphView(g)
    doc = view.document
    assert doc["version"] == 1 and doc["title"] == "graph — not placed"
    assert (doc["placed"], doc["truncated"], doc["total_ops"], doc["devices"]) == (False, False, 5, [])
    assert [n["name"] for n in doc["nodes"]] == ["x", "w", "y", "z", "done"]
    z = by_name(doc)["z"]
    assert z == {"name": "z", "type": "Relu", "device": "", "requested": "/device:GPU:0",
                 "reason": "", "soft": False, "inputs": ["y:0"],
                 "outputs": [{"dtype": "float32", "shape": "(?, 10)"}], "attrs": {}}
    assert "edges" not in doc           # the renderer derives them from the inputs
    assert all(e["cross"] == "none" for e in view.edges)
    assert json.loads(view.to_json()) == doc


def test_placed_graph_devices_edges_and_soft_placement():
    g, x, done = small_graph()
    sess = run_small(g, x, done)
    view = GraphView(g)                  # the session that ran last placed it
    doc = view.document
    assert doc["title"] == f"graph — placed by session {sess.id}" and doc["placed"]
    assert doc["devices"] == [
        {"name": CPU0, "short": "CPU:0", "task": LOCAL, "type": "CPU", "color": BLUE, "ops": 3},
        {"name": CPU1, "short": "CPU:1", "task": LOCAL, "type": "CPU", "color": ORANGE, "ops": 1}]
    nodes = by_name(doc)
    # x is fed, so it never runs and is never placed.
    assert (nodes["x"]["device"], nodes["x"]["reason"]) == ("", "")
    assert nodes["x"]["attrs"] == {"dtype": "float32", "shape": "(?, 3)"}
    assert nodes["w"]["attrs"] == {"value": "float32 (3, 10)", "dtype": "float32"}
    y = nodes["y"]
    assert (y["type"], y["device"], y["requested"], y["reason"], y["soft"]) == (
        "MatMul", CPU1, "/device:CPU:1", "requested", False)
    assert y["inputs"] == ["x:0", "w:0"]
    assert y["outputs"] == [{"dtype": "float32", "shape": "(?, 10)"}]
    assert y["attrs"] == {"transpose_a": "false", "transpose_b": "false"}
    z = nodes["z"]
    assert (z["device"], z["requested"], z["soft"]) == (CPU0, "/device:GPU:0", True)
    assert z["reason"] == "soft placement: /device:GPU:0 does not exist"
    assert (nodes["done"]["inputs"], nodes["done"]["outputs"]) == (["^z"], [])
    assert view.edges == [
        {"source": "x", "target": "y", "tensor": "x:0", "control": False, "cross": "none"},
        {"source": "w", "target": "y", "tensor": "w:0", "control": False, "cross": "device"},
        {"source": "y", "target": "z", "tensor": "y:0", "control": False, "cross": "device"},
        {"source": "z", "target": "done", "tensor": "", "control": True, "cross": "none"}]


def test_session_choice():
    g, x, done = small_graph()
    sess = run_small(g, x, done)
    other = tf.Graph()
    with other.as_default():
        c = tf.constant(1.0, name="c")
    with tf.Session(graph=other) as last:
        last.run(c)
        # The session that ran last runs another graph: g is not placed ...
        assert not GraphView(g).document["placed"]
        # ... unless its session is named.
        assert GraphView(g, session=sess).document["placed"]
        with pytest.raises(ValueError, match="another graph"):
            GraphView(g, session=last)
    for bad in (3, "s"):
        with pytest.raises(TypeError):
            GraphView(bad)
    with pytest.raises(ValueError, match="max_ops"):
        GraphView(g, max_ops=0)


def test_session_view_shows_what_it_placed():
    g, x, done = small_graph()
    with g.as_default():
        tf.constant(0.0, name="never_run")
    sess = run_small(g, x, done)
    view = show_graph(sess)
    doc = view.document
    assert doc["title"] == f"session {sess.id} — the ops it placed"
    assert [n["name"] for n in doc["nodes"]] == ["w", "y", "z", "done"]
    assert doc["total_ops"] == 4
    assert [(e["source"], e["target"]) for e in view.edges] == [("w", "y"), ("y", "z"),
                                                                   ("z", "done")]
    assert str(view) == (f"session {sess.id} — the ops it placed: 4 ops, 2 devices, 1 soft-placed; "
                         "3 edges (0 cross-task, 2 cross-device)\n"
                         "  CPU:0  3 ops, 1 soft-placed\n"
                         "  CPU:1  1 op")


def test_attrs_are_short_text():
    g = tf.Graph()
    with g.as_default():
        tf.constant("hello", name="s")
        tf.constant([[1, 2], [3, 4]], name="m")
        tf.constant("x" * 100, name="long")
        tf.constant([True, False], name="flags")
    attrs = {n["name"]: n["attrs"] for n in GraphView(g).document["nodes"]}
    assert attrs == {"s": {"value": "hello", "dtype": "string"},
                     "m": {"value": "int32 (2, 2)", "dtype": "int32"},
                     "long": {"dtype": "string"},           # 100 characters: left out
                     "flags": {"value": "[true, false]", "dtype": "bool"}}


def test_truncation_keeps_the_first_ops_and_their_edges():
    g, _, _ = small_graph()
    view = GraphView(g, max_ops=3)
    doc = view.document
    assert doc["truncated"] and doc["total_ops"] == 5
    assert [n["name"] for n in doc["nodes"]] == ["x", "w", "y"]
    assert [(e["source"], e["target"]) for e in view.edges] == [("x", "y"), ("w", "y")]
    assert not GraphView(g, max_ops=5).document["truncated"]


def test_devices_ordered_by_task_then_cpu_before_gpu_then_index():
    names = ["/job:worker/replica:0/task:1/device:CPU:0", "/job:worker/replica:0/task:0/device:GPU:1",
             "/job:worker/replica:0/task:0/device:GPU:0", "/job:ps/replica:0/task:0/device:CPU:0",
             "/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:GPU:1"]
    ops = [object() for _ in names]
    records = {op: PlacementRecord(f"op{i}", "T", "", name,
                                   "soft placement: x" if i == 1 else "default")
               for i, (op, name) in enumerate(zip(ops, names))}
    devices = graph_view._devices(ops, records)
    assert [(d["short"], d["ops"], d["soft"], d["color"]) for d in devices] == [
        ("ps:0/CPU:0", 1, 0, graph_view.PALETTE[0]),
        ("worker:0/CPU:0", 1, 0, graph_view.PALETTE[1]),
        ("worker:0/GPU:0", 1, 0, graph_view.PALETTE[2]),
        ("worker:0/GPU:1", 2, 1, graph_view.PALETTE[3]),
        ("worker:1/CPU:0", 1, 0, graph_view.PALETTE[4])]
    assert devices[3]["task"] == "/job:worker/replica:0/task:0" and devices[3]["type"] == "GPU"
    assert graph_view.SOFT_COLOR not in graph_view.PALETTE
    assert graph_view.UNPLACED_COLOR not in graph_view.PALETTE


def test_cluster_partitions_cross_tasks(monkeypatch, tmp_path):
    monkeypatch.setenv("TFJUPYTER_CLUSTER_TOKEN", TOKEN)
    monkeypatch.setenv("TFJUPYTER_TOKEN_DIR", str(tmp_path / "tokens"))
    cluster = loopback_cluster(ps=1, worker=1)
    config = tf.ConfigProto(device_count=NO_GPU)
    servers = [tf.train.Server(cluster, job_name=job, task_index=0, config=config)
               for job in ("ps", "worker")]
    try:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([1.0, 2.0], name="w")
        with tf.device("/job:worker/task:0"):
            y = tf.multiply(w, 2.0, name="y")
        with tf.device("/job:ps/task:0"), tf.control_dependencies([y]):
            after = tf.no_op(name="after")
        with tf.Session(servers[1].target, config=config) as sess:
            sess.run(w.initializer)
            sess.run(after)
            view = GraphView(sess)
            doc = view.document
    finally:
        for server in servers:
            server.stop(0)
    ps, worker = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
    assert [(d["name"], d["short"], d["task"], d["ops"]) for d in doc["devices"]] == [
        (ps + "/device:CPU:0", "ps:0/CPU:0", ps, 5),
        (worker + "/device:CPU:0", "worker:0/CPU:0", worker, 2)]
    assert [n["name"] for n in doc["nodes"]] == ["w/initial_value", "w", "w/Assign", "w/read",
                                                 "y/y", "y", "after"]
    assert {(e["source"], e["target"], e["tensor"], e["cross"]) for e in view.edges} == {
        ("w/initial_value", "w/Assign", "w/initial_value:0", "none"),
        ("w", "w/Assign", "w:0", "none"), ("w", "w/read", "w:0", "none"),
        ("w/read", "y", "w/read:0", "task"),        # a _Send on ps, a _Recv on the worker
        ("y/y", "y", "y/y:0", "none"),
        ("y", "after", "", "task")}                 # a control edge between tasks
    assert by_name(doc)["after"]["inputs"] == ["^y"]


# -- the HTML fallback -------------------------------------------------------------------------------
def test_html_fallback_draws_the_top_level():
    g, x, done = small_graph()
    with g.as_default(), tf.name_scope("layer"):
        tf.constant(1.0, name="a")
        tf.constant(2.0, name="b")
    run_small(g, x, done)
    view = GraphView(g, title="model <v2> & 'friends'")
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {MIME_TYPE, "text/html", "text/plain"}
    page = bundle["text/html"]
    assert "<script" not in page
    assert "model &lt;v2&gt; &amp; &#x27;friends&#x27;" in page and "<v2>" not in page
    drawing = re.search(r"<svg xmlns=.*?</svg>", page).group(0)
    nodes = re.findall(r"<g class='tfj-static-node' data-name='([^']*)' data-kind='(\w+)'>"
                       r"<title>[^<]*</title><rect [^>]*fill='(#\w+)' ([^/]*)/>", drawing)
    assert [(name, kind, fill) for name, kind, fill, _ in nodes] == [
        ("x", "op", graph_view.UNPLACED_COLOR), ("w", "op", BLUE), ("y", "op", ORANGE),
        ("z", "op", BLUE), ("done", "op", BLUE), ("layer", "group", graph_view.UNPLACED_COLOR)]
    outline = {name: stroke for name, _, _, stroke in nodes}
    assert "stroke-dasharray='4 2'" in outline["z"] and graph_view.SOFT_COLOR in outline["z"]
    assert "stroke-dasharray" not in outline["y"]
    assert drawing.count(">soft</text>") == 1
    # The y -> z edge crosses devices (dotted); z -> done is a control edge (dashed).
    assert re.search(rf"stroke-dasharray='{svg.DEVICE_DASH}'[^>]*><title>y → z: 1 tensor across",
                     drawing)
    assert re.search(rf"stroke-dasharray='{svg.CONTROL_DASH}'[^>]*><title>z → done: 1 control",
                     drawing)
    # Legend and device table, op table under <details>.
    assert "class='tfj-legend'" in page and f"background:{ORANGE}" in page
    table = re.search(r"<th[^>]*>device</th>.*?</table>", page).group(0)
    assert re.findall(r"<td[^>]*>(?:<span[^>]*></span>)?(?:<span[^>]*>)?([^<]*)(?:</span>)?</td>"
                      r"<td[^>]*>(\d+)</td><td[^>]*>(\d*)</td>", table) == [
        ("CPU:0", "3", "1"), ("CPU:1", "1", "0"), ("not placed", "3", "")]
    assert "<details><summary>Ops (7)</summary>" in page
    assert ("<td style='text-align:left;padding:1px 8px 1px 0'>soft placement: /device:GPU:0 "
            "does not exist</td>") in page


def test_html_fallback_of_a_large_graph_keeps_to_the_tables():
    g = tf.Graph()
    with g.as_default():
        total = tf.constant(0.0, name="c")
        for _ in range(200):
            total = total + 1.0                # 200 top-level scopes add, add_1, ... (add/y)
    page = GraphView(g).to_html()
    assert "<svg xmlns" not in page and "The top level has 201 name scopes and ops" in page
    assert page.count("<tr>") == 1 + 401          # the op table: its header and every op
    small = GraphView(g, max_ops=10)
    assert "the first 10 are drawn and listed" in small.to_html()


def test_layered_layout_breaks_cycles_and_orders_by_barycenter():
    # a -> b -> c, a -> c, d -> c; c -> a closes a cycle. d, a source, moves down next to b.
    assert svg.layered_layout("abcd", [("a", "b"), ("b", "c"), ("a", "c"), ("d", "c"),
                                       ("c", "a")]) == {
        "a": (0, 0), "b": (1, 0), "d": (1, 1), "c": (2, 0)}
    # Crossing edges a -> y, b -> x are uncrossed by the first (downward) sweep.
    assert svg.layered_layout("abxy", [("a", "y"), ("b", "x")]) == {
        "a": (0, 0), "b": (0, 1), "y": (1, 0), "x": (1, 1)}
    assert svg.layered_layout("", []) == {}


def test_top_level_aggregates_scopes_and_edges():
    nodes = [{"name": n, "type": t, "device": d, "soft": s} for n, t, d, s in (
        ("w", "VariableV2", "A", False), ("w/read", "Identity", "A", False),
        ("net/mm", "MatMul", "B", True), ("net/add", "Add", "B", False),
        ("net/c", "Const", "A", False), ("out", "Identity", "", False))]
    edges = [{"source": s, "target": t, "control": c, "cross": x} for s, t, c, x in (
        ("w", "w/read", False, "none"), ("w/read", "net/mm", False, "task"),
        ("net/c", "net/add", False, "device"), ("net/mm", "net/add", False, "none"),
        ("net/add", "out", False, "none"), ("w", "out", True, "none"))]
    devices = [{"name": "A", "short": "a", "color": "#000001"},
               {"name": "B", "short": "b", "color": "#000002"}]
    items, links = svg.top_level(nodes, edges, devices, "#ccc")
    assert [(i["name"], i["group"], i["ops"], i["fill"], i["soft"]) for i in items] == [
        ("w", True, 2, "#000001", 0), ("net", True, 3, "#000002", 1), ("out", False, 1, "#ccc", 0)]
    assert items[1]["title"] == "net/ (3 ops; b: 2, a: 1)"
    assert links == [
        {"source": "w", "target": "net", "tensors": 1, "controls": 0, "cross": "task"},
        {"source": "net", "target": "out", "tensors": 1, "controls": 0, "cross": "none"},
        {"source": "w", "target": "out", "tensors": 0, "controls": 1, "cross": "none"}]


def test_a_5000_op_view_stays_compact_and_a_bigger_graph_says_how_to_see_more():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        h = x
        for i in range(1000):
            with tf.name_scope(f"layer{i}"):
                h = tf.nn.relu(tf.matmul(h, tf.ones([8, 8])) + 1.0)
    total = len(g.get_operations())
    assert total > 5000
    view = GraphView(g)                                          # the default: 5,000 ops
    doc = view.document
    assert doc["truncated"] and doc["total_ops"] == total and len(doc["nodes"]) == 5000
    text = view.to_json()
    assert json.loads(text) == doc
    assert len(text) < 400 * len(doc["nodes"])                 # bytes per op, edges included
    assert "the first 5000 listed; show_graph(g, max_ops=N) shows more" in view.summary()
    page = view.to_html()
    assert "<svg xmlns" not in page and len(page) < 300_000     # 500 table rows, no drawing
    assert "the first 5000 are drawn and listed (show_graph(g, max_ops=N) shows more)" in page
    assert f"The first 500 of {total} ops are listed." in page
    everything = show_graph(g, max_ops=total).document
    assert not everything["truncated"] and len(everything["nodes"]) == total


# -- Jupyter display -------------------------------------------------------------------------------------
@pytest.fixture
def ip(tmp_path_factory):
    """IPython's shell, for its display formatter (the %tf_graph show tests are in test_magics)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config,
                                     ipython_dir=str(tmp_path_factory.mktemp("ipython")))


def test_graph_displays_as_its_view_and_keeps_its_repr(ip):
    g, _, _ = small_graph()
    assert re.fullmatch(r"<tf.Graph with 5 ops at 0x[0-9a-f]+>", repr(g))
    data, _ = ip.display_formatter.format(g)
    assert data["text/plain"] == repr(g)
    assert data[MIME_TYPE] == GraphView(g).document and "<svg xmlns" in data["text/html"]
    assert set(g._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert MIME_TYPE not in g._repr_mimebundle_(exclude=[MIME_TYPE])
    # A terminal shows only text/plain: the view is not built there.
    saved = ip.display_formatter.active_types
    ip.display_formatter.active_types = ["text/plain"]
    try:
        assert g._repr_mimebundle_() == {"text/plain": repr(g)}
    finally:
        ip.display_formatter.active_types = saved
