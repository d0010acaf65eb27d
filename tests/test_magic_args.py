"""Every %tf_* magic declares its options with IPython's magic_arguments: its ``%name?`` help
lists them, its lines parse as they always did, and every bad line is a UsageError naming the
magic (never argparse's SystemExit, never a traceback)."""
import re

import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

from tfjupyter.magic_args import parse_line  # noqa: E402


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config,
                                      ipython_dir=str(tmp_path_factory.mktemp("ipython")))
    shell.run_line_magic("load_ext", "tfjupyter")
    yield shell
    shell.run_line_magic("unload_ext", "tfjupyter")
    InteractiveShell.clear_instance()


def _help(ip, name: str) -> str:
    """What ``name?`` shows (IPython's inspector, the text a notebook's help pager gets)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", ip.object_inspect_text(name))


# What each magic's help must show: its usage line, subcommands and options.
HELP = {
    "%tf_cluster": ["%tf_cluster [start|scale|attach|status|wait|why|interrupt|stop]",
                    "%tf_cluster start [--ps N] [--workers N] [--engines LAUNCHER]",
                    "--hosts HOSTS", "--gpus-per-worker N", "--profile P", "--controller-ip IP",
                    "--location HOST", "--timeout S", "--restart", "--detach",
                    "%tf_cluster scale --workers N",
                    "%tf_cluster attach [--cluster ID] [--workers IDS] [--ps IDS]",
                    "--ps IDS", "--cluster-id ID", "%tf_cluster status",
                    "%tf_cluster wait [--timeout S]", "%tf_cluster why [--task TASK]",
                    "%tf_cluster interrupt",
                    "%tf_cluster stop"],
    "%%tf_worker": ["%%tf_worker [--tasks INDICES] [--no-block] [--timeout S]",
                    "task_index, is_chief"],
    "%%tf_ps": ["%%tf_ps [--tasks INDICES] [--no-block] [--timeout S]"],
    "%tf_dashboard": ["%tf_dashboard [--cluster | --local] [--trace-every N]",
                      "--history POINTS", "--max-rate HZ", "--title TEXT", "[close]"],
    "%tf_experiment": ["%tf_experiment [start|end|status|load|compare]",
                       "%tf_experiment start [--dir DIR] [--cluster | --local]",
                       "--config <KEY=VALUE [KEY=VALUE ...]>", "--checkpoint-dir DIR",
                       "%tf_experiment end", "%tf_experiment status",
                       "%tf_experiment load [--dir DIR] NAME",
                       "%tf_experiment compare [--dir DIR] [--metric TAG] [--target X]",
                       "--mode <{min,max}>"],
    "%%tf_device": ["%%tf_device DEVICE", "/job:worker/task:1/device:GPU:0"],
    "%tf_graph": ["%tf_graph [NAME | --reset | --drop NAME [NAME ...] | show [NAME] "
                  "[--session VAR]]", "%%tf_graph NAME", "--reset", "--drop <NAME [NAME ...]>",
                  "--session VAR"],
    "%%tf_graph": ["%%tf_graph NAME", "--session VAR"],
    "%tf_placement": ["%tf_placement [--all]", "--all"],
}


@pytest.mark.parametrize("name", sorted(HELP))
def test_help_lists_the_options(ip, name):
    shown = _help(ip, name)
    for expected in HELP[name]:
        assert expected in shown, f"{name}? lacks {expected!r}:\n{shown}"


def test_help_through_the_question_mark(ip, capsys):
    assert ip.run_cell("%tf_cluster?").success
    shown = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "%tf_cluster start [--ps N] [--workers N]" in shown
    assert "--gpus-per-worker N  GPUs each worker task sees (default 0)" in shown


# A bad line, and what its UsageError must say: the magic (or subcommand) first, then why.
BAD_LINES = [
    ("tf_cluster", "bogus", "%tf_cluster: argument subcommand: invalid choice: 'bogus'"),
    ("tf_cluster", "--ps 2", "%tf_cluster: options follow a subcommand, e.g. "
                             "'%tf_cluster start --ps ...'"),
    ("tf_cluster", "start --workers two",
     "%tf_cluster start: argument --workers: invalid int value: 'two'"),
    ("tf_cluster", "start --bogus", "%tf_cluster start: unrecognized arguments: --bogus"),
    ("tf_cluster", "attach --ps 0", "%tf_cluster attach needs --cluster ID (a detached "
                                    "cluster) or --workers IDS"),
    ("tf_cluster", "scale", "%tf_cluster scale: the following arguments are required: "
                            "--workers"),
    ("tf_cluster", "why", "no cluster: start one with '%tf_cluster start"),
    ("tf_cluster", "attach --workers 1,x",
     "%tf_cluster attach: argument --workers: expected comma-separated indices, got '1,x'"),
    ("tf_cluster", "status now", "%tf_cluster status: unrecognized arguments: now"),
    ("tf_cluster", "wait --timeout soon",
     "%tf_cluster wait: argument --timeout: invalid float value: 'soon'"),
    ("tf_cluster", "start --hosts 'a b", "%tf_cluster: No closing quotation"),
    ("tf_cluster", "status", "no cluster: start one with '%tf_cluster start"),
    ("tf_dashboard", "--cluster --local",
     "%tf_dashboard: argument --local: not allowed with argument --cluster"),
    ("tf_dashboard", "--trace-every often",
     "%tf_dashboard: argument --trace-every: invalid int value: 'often'"),
    ("tf_dashboard", "open", "%tf_dashboard: argument close: invalid choice: 'open'"),
    ("tf_dashboard", "--local close", "%tf_dashboard close takes no options"),
    ("tf_dashboard", "--max-rate 50", "%tf_dashboard: Dashboard: max_rate"),
    ("tf_experiment", "bogus", "%tf_experiment: argument subcommand: invalid choice: 'bogus'"),
    ("tf_experiment", "start", "%tf_experiment start: the following arguments are required: "
                               "NAME"),
    ("tf_experiment", "start x --config novalue",
     "%tf_experiment start: argument --config: expected KEY=VALUE, got 'novalue'"),
    ("tf_experiment", "start x --cluster --local",
     "%tf_experiment start: argument --local: not allowed with argument --cluster"),
    ("tf_experiment", "end now", "%tf_experiment end: unrecognized arguments: now"),
    ("tf_experiment", "compare a --mode up",
     "%tf_experiment compare: argument --mode: invalid choice: 'up'"),
    ("tf_experiment", "compare --target 0.5", "%tf_experiment compare: the following arguments "
                                              "are required: NAME"),
    ("tf_graph", "a b", "%tf_graph takes one of NAME, --reset, --drop NAME... and show"),
    ("tf_graph", "--reset a", "%tf_graph takes one of NAME, --reset, --drop NAME... and show"),
    ("tf_graph", "--drop", "%tf_graph: argument --drop: expected at least one argument"),
    ("tf_graph", "--session s", "%tf_graph: --session goes with show"),
    ("tf_graph", "show a b", "%tf_graph show takes at most one graph name"),
    ("tf_graph", "show --all", "%tf_graph: unrecognized arguments: --all"),
    ("tf_placement", "--last", "%tf_placement: unrecognized arguments: --last"),
]


@pytest.mark.parametrize("magic,line,message", BAD_LINES)
def test_bad_lines_are_usage_errors(ip, capsys, magic, line, message):
    result = ip.run_cell(f"%{magic} {line}")
    error = result.error_in_exec
    assert isinstance(error, UsageError), f"%{magic} {line}: {error!r}"
    assert str(error).startswith(message) or message in str(error), str(error)
    shown = capsys.readouterr()
    assert "Traceback" not in shown.out + shown.err      # IPython shows a UsageError as one line


BAD_CELLS = [
    ("%%tf_worker --tasks 0,x", "%%tf_worker: argument --tasks: expected comma-separated "
                                "indices, got '0,x'"),
    ("%%tf_ps --timeout never", "%%tf_ps: argument --timeout: invalid float value: 'never'"),
    ("%%tf_worker", "no cluster: start one"),
    ("%%tf_device", "%%tf_device: the following arguments are required: DEVICE"),
    ("%%tf_device /cpu:0 /gpu:0", "%%tf_device: unrecognized arguments: /gpu:0"),
    ("%%tf_device /gpu:1:2", "%%tf_device: Malformed device specification '/gpu:1:2'"),
    ("%%tf_graph", "%%tf_graph takes one graph name"),
    ("%%tf_graph a --reset", "%%tf_graph takes one graph name"),
    ("%%tf_graph --bogus", "%%tf_graph: unrecognized arguments: --bogus"),
]


@pytest.mark.parametrize("first_line,message", BAD_CELLS)
def test_bad_cell_magic_lines_are_usage_errors(ip, first_line, message):
    result = ip.run_cell(f"{first_line}\nran = True")
    assert isinstance(result.error_in_exec, UsageError), repr(result.error_in_exec)
    assert str(result.error_in_exec).startswith(message), str(result.error_in_exec)
    assert "ran" not in ip.user_ns


def _parse(ip, kind: str, name: str, line: str):
    return parse_line(ip.magics_manager.magics[kind][name], line)


def test_the_documented_lines_parse_as_before(ip):
    a = _parse(ip, "line", "tf_cluster",
               "start --ps 1 --workers 4 --engines ssh --hosts gpu1,gpu2 --gpus-per-worker 1")
    assert (a.subcommand, a.ps, a.workers, a.engines, a.hosts, a.gpus_per_worker, a.profile,
            a.timeout) == ("start", 1, 4, "ssh", "gpu1,gpu2", 1, None, 120.0)
    a = _parse(ip, "line", "tf_cluster", "attach --profile default --ps 0 --workers 1,2,3")
    assert (a.subcommand, a.profile, a.ps, a.workers, a.cluster_id) == (
        "attach", "default", [0], [1, 2, 3], "")
    assert _parse(ip, "line", "tf_cluster", "").subcommand is None      # status
    assert _parse(ip, "line", "tf_cluster", "wait --timeout 30").timeout == 30.0
    a = _parse(ip, "cell", "tf_worker", "--tasks 0,2 --no-block")
    assert (a.tasks, a.no_block, a.timeout) == ([0, 2], True, None)
    a = _parse(ip, "line", "tf_dashboard", '--local --trace-every 50 --title "my run"')
    assert (a.local, a.cluster, a.trace_every, a.history, a.max_rate, a.title, a.action) == (
        True, False, 50, 3600, 10.0, "my run", None)     # the quotes group words, and go
    a = _parse(ip, "line", "tf_experiment",
               "start sync_backup --cluster --config lr=0.1 mode=async 'note=a b'")
    assert (a.subcommand, a.name, a.cluster, a.config) == (
        "start", "sync_backup", True, [("lr", 0.1), ("mode", "async"), ("note", "a b")])
    a = _parse(ip, "line", "tf_experiment",
               "compare async sync sync_backup --metric accuracy --target 0.9 --mode max")
    assert (a.names, a.metric, a.target, a.mode, a.dir) == (
        ["async", "sync", "sync_backup"], "accuracy", 0.9, "max", None)
    a = _parse(ip, "line", "tf_graph", "show model --session=sess")
    assert (a.words, a.session, a.reset, a.drop) == (["show", "model"], "sess", False, None)
    assert _parse(ip, "line", "tf_graph", "--drop a b").drop == ["a", "b"]
    assert _parse(ip, "cell", "tf_device", "'/job:worker/task:1/cpu:0'").device == (
        "/job:worker/task:1/cpu:0")
