"""The cluster's status table and the task-state rule it shares with the cluster panel's
server (tfjupyter/lab/server.py), without a cluster."""
import html

from test_tables import _Cells

from tfjupyter.cluster.status import RECENT_STEP_S, StatusRow, StatusTable, alive_state


def test_status_table_renders_through_the_shared_tables():
    rows = [StatusRow("worker:0", 3, "host<1>", 42, "127.0.0.1:5000", "CPU:0", "running", 7,
                      1.25, 100.0, waiting="QueueDequeueV2 sync_token_q 12s"),
            StatusRow("ps:0", 2, "h", 41, "127.0.0.1:5001", "CPU:0", "dead", None, 0.0, 0.0,
                      error="its engine left")]
    table = StatusTable(rows, "a cluster")
    lines = str(table).splitlines()
    assert lines[0] == "a cluster"
    assert lines[1].split()[:11] == ["task", "engine", "host", "pid", "address", "devices",
                                     "state", "global", "step", "steps/s", "examples/s"]
    assert "waiting in" in lines[1]
    state_at = lines[1].index("state")          # the columns are aligned
    assert lines[2][state_at:].startswith("running ")
    assert lines[3][state_at:].startswith("dead (its engine left) ")
    assert lines[2][lines[1].index("waiting in"):].startswith("QueueDequeueV2 sync_token_q 12s")
    cells = _Cells(table._repr_html_())
    assert cells.rows[1][:3] == ["worker:0", "3", "host<1>"] and cells.rows[2][7] == ""
    assert html.escape("host<1>") in table._repr_html_()


def test_the_task_state_rule():
    now = 1000.0
    assert alive_state(None, now=now) == "idle"
    assert alive_state(now - RECENT_STEP_S / 2, now=now) == "running"
    assert alive_state(now - RECENT_STEP_S - 0.1, now=now) == "idle"
    assert alive_state(now - 60, busy=True, now=now) == "running"   # a cell runs there
