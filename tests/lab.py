"""Browser tests of notebooks in a real JupyterLab, driven by Playwright + Chromium.

A test module imports the fixtures and helpers it uses::

    from lab import (browser_page, jupyter_lab,  # noqa: F401 (fixtures)
                     requires_chromium, open_notebook, run_all, wait_idle, save)

    pytestmark = requires_chromium

    def test_x(jupyter_lab, browser_page):
        nbformat.write(nb, jupyter_lab.root_dir / "x.ipynb")
        open_notebook(browser_page, jupyter_lab, "x.ipynb")
        run_all(browser_page)
        state = wait_idle(browser_page)          # per-cell counts, outputs, errors
        path = save(browser_page)                # the file on disk, once rewritten

Fixtures
--------
The session-scoped ones (``chromium_browser`` and the server behind ``jupyter_lab``) are
registered by tests/conftest.py, so that every module gets the same instance; a module that
imported them itself would get copies of its own.

``jupyter_lab`` (module scope) -> :class:`Lab`
    A JupyterLab server (:func:`start_lab`): ``python -m jupyterlab`` on
    127.0.0.1, a free port, a random token, a temporary root dir, and temporary
    JUPYTER_CONFIG_DIR, JUPYTER_RUNTIME_DIR, IPYTHONDIR, TFJUPYTER_TOKEN_DIR,
    JUPYTERLAB_SETTINGS_DIR and JUPYTERLAB_WORKSPACES_DIR. JUPYTER_DATA_DIR is left
    alone, so the lab extensions and kernel specs installed with the Python packages
    (ipywidgets, jupyter_bokeh) are found. No tfjupyter variable is set: dashboards load
    BokehJS from the server, as a user's would. A start takes
    seconds (about 10 on a loaded two-core machine), so one server serves the whole
    session: the browser test modules share it and its root dir (use distinct notebook
    names). The kernels a module starts live until the module ends unless a test calls
    ``lab.shutdown_kernels()``; then they are shut down through the REST API, and a
    child process of the server still alive 10 s later is killed and reported as an
    error of the module's teardown. At the end of the session the server is stopped
    (SIGTERM, then SIGKILL), with the same check. For a server per test, write a
    fixture that does ``with start_lab(tmp_path) as lab: yield lab``.
``jupyter_notebook`` (module scope) -> :class:`Lab`
    A Notebook 7 server (``start_lab(app="notebook")``, ``python -m notebook``) with the
    same environment; the helpers work in it too (it exposes window.jupyterapp, and
    :func:`open_notebook` opens /notebooks/<name>).
``chromium_browser`` (session scope)
    Playwright's Chromium started from /usr/bin/chromium (Playwright cannot download
    its own browser here), shared by the browser test modules.
``browser_page`` (function scope)
    A page in a fresh browser context, viewport 1400x1000. From its start it records
    the page's websockets (so a :func:`websocket_counter` made after the notebook
    opened still sees the kernel's socket) and console errors. Closed at teardown.

Without /usr/bin/chromium, playwright or jupyterlab, ``requires_chromium`` skips
(the reason names what is missing), and so do the fixtures; under
``TFJUPYTER_TEST_SYSTEM_PROGRAMS=require`` (``.ci/run``) they fail instead.

How the helpers drive JupyterLab
--------------------------------
The server runs with ``--LabApp.expose_app_in_browser=True``, so the page has
``window.jupyterapp``. The helpers run commands through its registry
(``notebook:run-all-cells``, ``notebook:run-cell``, ``docmanager:save``) and read
the kernel status and the cells from the notebook panel's models rather than the
DOM. Without the app object (``start_lab(expose_app=False)``) they fall back to the
Run menu, Ctrl+S and the DOM (``.jp-Notebook-ExecutionIndicator[data-status]``,
``[*]`` prompts, ``.jp-KernelName``). A notebook opens in a workspace of its own
(``/lab/workspaces/<random>/tree/<name>``), so that a page never restores what an
earlier test left open, and its kernel is started through the REST API while the
page loads. User settings turn news, update checks, the extension manager and
autosave off, and set the notebook windowing mode to "none" so that every cell
and output is in the DOM. Helpers that wait raise AssertionError carrying the
notebook state, the page's console errors and the tail of the lab log.

Rendering notes
---------------
* Playwright CSS selectors pierce open shadow roots, so ``.bk-Figure canvas``
  finds the canvas of a Bokeh 3 plot.
* jupyter_bokeh's ``BokehModel`` view needs BokehJS in the page (window.Bokeh):
  run ``bokeh.io.output_notebook(INLINE, hide_banner=True)`` (from
  ``bokeh.resources``) first; the browser has no network for the CDN. Without it
  the output shows ipywidgets' "Could not create a view for model id ..." error,
  which :func:`widget_errors` reports.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from offline import Offline
from system_programs import missing_executables, need

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1400, "height": 1000}
LAB_START_TIMEOUT = 60.0


# ----------------------------------------------------------------------------- availability

def _missing_for_browser_tests() -> list:
    """What browser tests lack here (imports nothing: importing jupyterlab alone takes
    seconds)."""
    missing = missing_executables([CHROMIUM])
    for module in ("playwright", "jupyterlab"):
        if importlib.util.find_spec(module) is None:
            missing.append(f"the Python package {module}")
    return missing


def chromium_skip_reason() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    missing = _missing_for_browser_tests()
    return "browser tests need " + " and ".join(missing) if missing else None


def _skip_without_chromium() -> None:
    missing = _missing_for_browser_tests()
    need("browser tests", missing, "apt-get install chromium" if missing == [CHROMIUM]
         else "apt-get install chromium; pip install -e '.[test]'")


@pytest.fixture
def needs_chromium() -> None:
    _skip_without_chromium()


# A module mark (``pytestmark = requires_chromium``): skips each test, naming what is missing,
# or fails it under TFJUPYTER_TEST_SYSTEM_PROGRAMS=require (system_programs.py).
requires_chromium = pytest.mark.usefixtures("needs_chromium")


# ----------------------------------------------------------------------------- the server

@dataclass
class Lab:
    """A running JupyterLab server (what ``jupyter_lab`` yields)."""

    base_url: str                 # "http://127.0.0.1:PORT/" (always ends with "/")
    token: str
    root_dir: Path                # the server's root: notebooks go here
    log_path: Path                # the server's stdout and stderr
    proc: subprocess.Popen
    env: dict = field(repr=False)
    app: str = "lab"              # the front end: a key of FRONT_ENDS


    def url(self, path: str = "", **query: str) -> str:
        """Absolute URL of ``path`` (relative to base_url) with ``?token=...`` added."""
        query = {**query, "token": self.token}
        return self.base_url + path.lstrip("/") + "?" + urllib.parse.urlencode(query)

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """Call the REST API (``path`` like "api/kernels"); returns the decoded JSON or None."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path.lstrip("/"), data=data,
                                     method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with _NO_PROXY.open(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def kernels(self) -> list[dict]:
        return self.api("GET", "api/kernels")

    def shutdown_kernels(self, timeout: float = 20.0) -> None:
        """Shut every session and kernel down through the REST API and wait for them."""
        for s in self.api("GET", "api/sessions"):
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"api/sessions/{s['id']}", timeout=timeout)
        for k in self.kernels():
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"api/kernels/{k['id']}", timeout=timeout)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"(no lab log: {e})"
        return "\n".join(text.splitlines()[-lines:])

    def child_processes(self) -> list:
        import psutil
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 direct


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(settings_dir: Path, settings: dict[str, dict]) -> None:
    for plugin, values in settings.items():
        pkg, _, name = plugin.partition(":")
        target = settings_dir / pkg / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))


# The front ends start_lab can run: their Python module and the traitlets class that holds
# expose_app_in_browser. Both serve the same lab extensions; Notebook 7 opens a notebook at
# /notebooks/<path>, JupyterLab in a workspace.
FRONT_ENDS = {"lab": ("jupyterlab", "LabApp"), "notebook": ("notebook", "JupyterNotebookApp")}

DEFAULT_SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {"checkForUpdates": False,
                                                     "fetchNews": "false"},
    "@jupyterlab/extensionmanager-extension:plugin": {"enabled": False},
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


@contextlib.contextmanager
def start_lab(tmp_dir: Path, settings: dict[str, dict] | None = None,
              extra_args: tuple[str, ...] = (), expose_app: bool = True,
              timeout: float = LAB_START_TIMEOUT,
              env: dict[str, str] | None = None, app: str = "lab") -> Iterator[Lab]:
    """Run a JupyterLab server under ``tmp_dir`` (its root is ``tmp_dir/root``); with
    ``app="notebook"`` a Notebook 7 server (``jupyter notebook``) instead.

    ``settings`` ({"pkg:plugin": {...}}) is merged over DEFAULT_SETTINGS; ``extra_args``
    go to the command line (do not repeat an option given here: traitlets then sees a
    list); ``expose_app=False`` leaves window.jupyterapp out (the helpers fall back to
    the menus, Ctrl+S and the DOM); ``env`` is added to the environment of the server
    and its kernels. The log is ``tmp_dir/lab.log``. On exit:
    the kernels are shut down through the REST API, the server gets SIGTERM (then
    SIGKILL after 15 s), and any child process still alive 10 s later is killed and
    reported as a RuntimeError.
    """
    import psutil

    if app not in FRONT_ENDS:
        raise ValueError(f"start_lab: app must be one of {sorted(FRONT_ENDS)}, not {app!r}")
    module, app_class = FRONT_ENDS[app]
    tmp_dir = Path(tmp_dir)
    root = tmp_dir / "root"
    dirs = {name: tmp_dir / name for name in ("config", "runtime", "ipython", "tokens",
                                                "settings", "workspaces")}
    for d in (root, *dirs.values()):
        d.mkdir(parents=True, exist_ok=True)
    _write_settings(dirs["settings"], {**DEFAULT_SETTINGS, **(settings or {})})
    env = dict(os.environ, **(env or {}),
               JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
               IPYTHONDIR=str(dirs["ipython"]),
               TFJUPYTER_TOKEN_DIR=str(dirs["tokens"]),
               JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
               JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
               PYTHONUNBUFFERED="1")
    env.pop("JUPYTER_TOKEN", None)
    # The server's cluster panel and its kernels meet in the default registry: the runtime dir.
    env.pop("TFJUPYTER_REGISTRY_DIR", None)
    token = secrets.token_hex(16)
    log_path = tmp_dir / "lab.log"
    for attempt in range(3):          # the free port may be taken before the server binds it
        port = _free_port()
        cmd = [sys.executable, "-m", module, "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--{app_class}.expose_app_in_browser={expose_app}",
               *(["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
                 if app == "lab" else []),
               *extra_args]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(log_path, "ab") as log:
            log.write(f"--- start_lab attempt {attempt + 1}: {' '.join(cmd)}\n".encode())
            log.flush()
            proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        lab = Lab(base_url=f"http://127.0.0.1:{port}/", token=token, root_dir=root,
                  log_path=log_path, proc=proc, env=env, app=app)
        try:
            _wait_for_server(lab, timeout)
            break
        except _LabExited:
            tail = lab.log_tail(20)
            if attempt == 2 or not ("already in use" in tail or "not available" in tail):
                raise
        except BaseException:
            _stop_lab(lab, psutil)
            raise
    try:
        yield lab
    finally:
        _stop_lab(lab, psutil)


class _LabExited(RuntimeError):
    pass


def _wait_for_server(lab: Lab, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if lab.proc.poll() is not None:
            raise _LabExited(f"JupyterLab exited with {lab.proc.returncode} while starting:\n"
                             + lab.log_tail())
        try:
            lab.api("GET", "api/status", timeout=2)
            return
        except (OSError, ValueError) as e:
            last = e
        time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer /api/status within {timeout:.0f} s "
                       f"(last error: {last!r}):\n" + lab.log_tail())


def _stop_lab(lab: Lab, psutil) -> None:
    children = lab.child_processes()
    if lab.proc.poll() is None:
        with contextlib.suppress(Exception):
            lab.shutdown_kernels()
        children += [c for c in lab.child_processes() if c not in children]
        lab.proc.terminate()                  # the server also stops what is left
        try:
            lab.proc.wait(15)
        except subprocess.TimeoutExpired:
            lab.proc.kill()
            lab.proc.wait(5)
    try:
        _kill_lingering(children, psutil, "JupyterLab")
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(lab.proc.pid, signal.SIGKILL)    # the session start_lab made


def _end_kernels(lab: Lab) -> None:
    """Shut down the kernels (and so what they started) of a server that goes on running."""
    import psutil
    children = lab.child_processes()
    lab.shutdown_kernels()
    _kill_lingering(children + [c for c in lab.child_processes() if c not in children], psutil,
                    "their kernels")


def _kill_lingering(children: list, psutil, outlived: str) -> None:
    """Wait up to 10 s for ``children`` to exit; kill those left and report them."""
    _gone, alive = psutil.wait_procs(children, timeout=10)
    lingering = []
    for p in alive:
        with contextlib.suppress(psutil.Error):
            lingering.append(f"{p.pid} {' '.join(p.cmdline())[:200]}")
            p.kill()
    psutil.wait_procs(alive, timeout=5)
    if lingering:
        raise RuntimeError(f"child processes of JupyterLab outlived {outlived} (killed now):\n"
                           + "\n".join(lingering))


# ----------------------------------------------------------------------------- fixtures

# The environment the test servers add for their kernels: no TFJUPYTER_BOKEHJS, so dashboards
# load BokehJS from the server, the default (the browser has no network).
SERVER_ENV: dict = {}


@pytest.fixture(scope="session")
def _session_lab(tmp_path_factory) -> Iterator[Lab]:
    _skip_without_chromium()
    with start_lab(tmp_path_factory.mktemp("jupyter_lab"), env=SERVER_ENV) as lab:
        yield lab


@pytest.fixture(scope="module")
def jupyter_lab(_session_lab) -> Iterator[Lab]:
    """The session's JupyterLab server; the kernels of the module end with it (module doc)."""
    yield _session_lab
    _end_kernels(_session_lab)


@pytest.fixture(scope="module")
def jupyter_notebook(tmp_path_factory) -> Iterator[Lab]:
    """A Notebook 7 server (``jupyter notebook``) of the module's own, with the environment of
    the session's JupyterLab; stopped with its kernels when the module ends."""
    _skip_without_chromium()
    with start_lab(tmp_path_factory.mktemp("jupyter_notebook"), env=SERVER_ENV,
                   app="notebook") as lab:
        yield lab


@pytest.fixture(scope="module")
def chromium_browser():
    """Chromium through Playwright, per module: Playwright's sync API keeps an event loop
    running in the main thread while it is open, which later modules' asyncio fixtures
    (pytest-jupyter's, tests/test_lab_server.py) cannot share."""
    _skip_without_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--no-proxy-server"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_page(chromium_browser):
    """A fresh page (own context, viewport 1400x1000) that records websockets and errors, and
    reaches only 127.0.0.1 (``page.offline``): a test cannot pass by loading something from
    the internet, as a browser on an air-gapped cluster could not."""
    context = chromium_browser.new_context(viewport=VIEWPORT)
    offline = Offline(context)
    page = context.new_page()
    page.offline = offline
    track_page(page)
    try:
        yield page
    finally:
        context.close()


# ----------------------------------------------------------------------------- page state

class _PageState:
    def __init__(self) -> None:
        self.lab: Lab | None = None
        self.opened: str | None = None          # the last open_notebook name
        self.tracked = False
        self.websockets: list = []
        self.counters: list[WebSocketCounter] = []
        self.console_errors: list[str] = []


_STATES: "weakref.WeakKeyDictionary[Any, _PageState]" = weakref.WeakKeyDictionary()


def _state(page) -> _PageState:
    st = _STATES.get(page)
    if st is None:
        st = _STATES[page] = _PageState()
    return st


def track_page(page) -> None:
    """Record the page's websockets and console errors (browser_page does this)."""
    st = _state(page)
    if st.tracked:
        return
    st.tracked = True

    def on_ws(ws):
        st.websockets.append(ws)
        for c in st.counters:
            c._attach(ws)

    page.on("websocket", on_ws)
    page.on("console", lambda m: m.type == "error" and st.console_errors.append(m.text))
    page.on("pageerror", lambda e: st.console_errors.append(f"pageerror: {e}"))


def console_errors(page) -> list[str]:
    """Console errors and uncaught exceptions of the page so far."""
    return list(_state(page).console_errors)


def _fail(page, message: str) -> AssertionError:
    st = _state(page)
    parts = [message]
    with contextlib.suppress(Exception):
        parts.append("notebook: " + json.dumps(notebook_state(page)))
    if st.console_errors:
        parts.append("console errors:\n  " + "\n  ".join(st.console_errors[-15:]))
    if st.lab is not None:
        parts.append("lab log tail:\n" + st.lab.log_tail())
    return AssertionError("\n".join(parts))


# ----------------------------------------------------------------------------- notebooks

# Finds the notebook panel: by path, else the current widget. Used by every helper.
_PANEL_JS = """
(path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  if (path) {
    for (const w of app.shell.widgets('main'))
      if (w.context && w.context.path === path && w.content && w.content.widgets) return w;
    return null;
  }
  const w = app.shell.currentWidget;
  return (w && w.context && w.content && w.content.widgets) ? w : null;
}
"""

_STATE_JS = f"""
(path) => {{
  const dialog = document.querySelector('.jp-Dialog');
  const dialogText = dialog ? dialog.innerText : null;
  if (!window.jupyterapp) {{
    // Without the app object: what the DOM shows for the visible notebook.
    const node = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    if (!node) return {{app: false, panel: false, dialog: dialogText}};
    const ind = node.querySelector('.jp-Notebook-ExecutionIndicator');
    const kname = node.querySelector('.jp-KernelName');
    const label = document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current');
    const hasKernel = !!kname && kname.textContent.trim() !== 'No Kernel';
    return {{app: false, panel: true,
            path: label ? label.querySelector('.lm-TabBar-tabLabel').textContent : null,
            ready: hasKernel,
            kernel: hasKernel && ind ? ind.dataset.status : null,
            connection: hasKernel && ind && ind.dataset.status !== 'connecting'
              ? 'connected' : null,
            dirty: !!(label && label.classList.contains('jp-mod-dirty')),
            runPending: false, runError: null, dialog: dialogText,
            cells: [...node.querySelectorAll('.jp-Notebook .jp-Cell')].map((c) => {{
              const p = c.querySelector('.jp-InputPrompt');
              const t = p ? p.textContent : '';
              const m = /\\[(\\d+)\\]/.exec(t);
              const code = c.classList.contains('jp-CodeCell');
              return {{type: code ? 'code' : 'other', count: m ? Number(m[1]) : null,
                       running: code && t.includes('*'),
                       outputs: c.querySelectorAll('.jp-OutputArea-output').length,
                       errors: []}};
            }})}};
  }}
  const panel = ({_PANEL_JS})(path);
  if (!panel) return {{app: true, panel: false, dialog: dialogText}};
  const sc = panel.sessionContext;
  const kernel = sc.session && sc.session.kernel;
  const cells = panel.content.widgets.map((c) => {{
    const m = c.model;
    const code = m.type === 'code';
    return {{type: m.type,
             count: code ? m.executionCount : null,
             running: code ? (m.executionState === 'running' ||
                              (c.promptNode && c.promptNode.textContent.includes('*'))) : false,
             outputs: code ? m.outputs.length : 0,
             errors: code ? [...Array(m.outputs.length).keys()]
               .map((i) => m.outputs.get(i).toJSON())
               .filter((o) => o.output_type === 'error')
               .map((o) => o.ename + ': ' + o.evalue) : []}};
  }});
  return {{app: true, panel: true, path: panel.context.path, id: panel.id,
          ready: panel.context.isReady && sc.isReady,
          kernel: kernel ? kernel.status : null,
          connection: kernel ? kernel.connectionStatus : null,
          dirty: panel.context.model.dirty,
          runPending: !!window.__tfjRunPending,
          runError: window.__tfjRunError || null,
          dialog: dialogText,
          cells}};
}}
"""


def notebook_state(page, name: str | None = None) -> dict:
    """Kernel status, readiness and per-cell state of the notebook ``name`` (or the current one)."""
    return page.evaluate(_STATE_JS, name)


def open_notebook(page, lab: Lab, name: str, timeout: float = 60.0,
                  start_kernel: bool = True) -> None:
    """Open ``name`` (relative to lab.root_dir) in a fresh workspace (in Notebook 7: at
    /notebooks/<name>); wait for an idle kernel.

    With ``start_kernel`` the kernel named in the notebook's metadata is started through
    the REST API (POST /api/sessions) before the page loads, so that both happen at
    once; JupyterLab then connects to that session. A kernel-selection dialog (a
    notebook without kernelspec metadata) is accepted.
    """
    st = _state(page)
    track_page(page)
    st.lab = lab
    st.opened = name
    if start_kernel:
        _start_session(lab, name)
    quoted = "/".join(urllib.parse.quote(p) for p in name.split("/"))
    if lab.app == "notebook":
        path = f"notebooks/{quoted}"
    else:
        path = f"lab/workspaces/tfj-{secrets.token_hex(4)}/tree/{quoted}"
    page.goto(lab.url(path), timeout=timeout * 1000)
    deadline = time.monotonic() + timeout
    state: dict = {}
    while time.monotonic() < deadline:
        state = notebook_state(page, name)
        if (state.get("panel") and state["ready"] and state["kernel"] == "idle"
                and state["connection"] == "connected"
                and (state["app"] or state["path"] == name.rsplit("/", 1)[-1])):
            if state["app"]:
                page.evaluate(f"(p) => window.jupyterapp.shell.activateById(({_PANEL_JS})(p).id)",
                              name)
            page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.wait_for(
                timeout=10000)
            return
        if state.get("dialog") and not (state.get("panel") and state.get("kernel")):
            with contextlib.suppress(Exception):
                page.locator(".jp-Dialog .jp-mod-accept").first.click(timeout=2000)
        page.wait_for_timeout(100)
    raise _fail(page, f"notebook {name!r} did not open with an idle kernel within "
                      f"{timeout:.0f} s (last state {state})")


def _start_session(lab: Lab, name: str) -> None:
    try:
        meta = json.loads((lab.root_dir / name).read_text()).get("metadata", {})
        kernel = meta["kernelspec"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return                                  # JupyterLab will ask, or use its default
    if any(s.get("path") == name for s in lab.api("GET", "api/sessions")):
        return
    lab.api("POST", "api/sessions", {"path": name, "name": name.rsplit("/", 1)[-1],
                                     "type": "notebook", "kernel": {"name": kernel}},
            timeout=60)


def _run_command(page, command: str, args: dict | None = None) -> bool:
    """Start a JupyterLab command without waiting for it; False without window.jupyterapp.
    wait_idle waits for it to settle and reports an error it raised."""
    return page.evaluate("""([command, args]) => {
      const app = window.jupyterapp;
      if (!app) return false;
      window.__tfjRunPending = true;
      window.__tfjRunError = null;
      app.commands.execute(command, args || {})
        .catch((e) => { window.__tfjRunError = command + ': ' + String(e); })
        .finally(() => { window.__tfjRunPending = false; });
      return true;
    }""", [command, args])


def run_all(page) -> None:
    """Start running all cells of the current notebook; returns at once (see wait_idle).

    Executes 'notebook:run-all-cells'; without window.jupyterapp, Run > Run All Cells.
    """
    if not _run_command(page, "notebook:run-all-cells"):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def run_cell(page, index: int) -> None:
    """Start running the cell at ``index`` (0-based) of the current notebook; returns at once.

    Needs window.jupyterapp (the jupyter_lab fixture exposes it)."""
    ok = page.evaluate(f"""(i) => {{
      const panel = ({_PANEL_JS})(null);
      if (!panel) return false;
      panel.content.activeCellIndex = i;
      panel.content.deselectAll();
      return panel.content.activeCellIndex === i;
    }}""", index)
    if not ok or not _run_command(page, "notebook:run-cell"):
        raise _fail(page, f"run_cell({index}): no such cell or no window.jupyterapp")


def wait_idle(page, timeout: float = 60.0, settle: float = 0.3) -> dict:
    """Wait until no cell is running or queued and the kernel is idle; returns the state.

    The state must hold for ``settle`` seconds (the kernel goes idle between cells).
    """
    deadline = time.monotonic() + timeout
    idle_since = None
    state: dict = {}
    while time.monotonic() < deadline:
        state = notebook_state(page)
        idle = (state.get("panel") and state["kernel"] == "idle" and not state["runPending"]
                and not any(c["running"] for c in state["cells"]))
        if idle:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                if state.get("runError"):
                    raise _fail(page, f"JupyterLab command failed: {state['runError']}")
                return state
        else:
            idle_since = None
        page.wait_for_timeout(50)
    raise _fail(page, f"notebook not idle within {timeout:.0f} s")


def wait_for_text(page, text: str, timeout: float = 30.0, scope: str = "#main") -> None:
    """Wait until ``text`` appears in the page (inside ``scope``; pierces shadow DOM)."""
    try:
        page.locator(scope).get_by_text(text).first.wait_for(state="attached",
                                                            timeout=timeout * 1000)
    except Exception as e:
        raise _fail(page, f"text {text!r} did not appear within {timeout:.0f} s ({e})") from None


def save(page, timeout: float = 30.0) -> Path | None:
    """Save the current notebook ('docmanager:save', else Ctrl+S); wait for the file to change.

    Returns the file's path on disk (None when the page has no Lab from open_notebook).
    """
    st = _state(page)
    path = page.evaluate(f"() => {{ const p = ({_PANEL_JS})(null); return p && p.context.path; }}")
    path = path or st.opened                    # without window.jupyterapp
    if path is None:
        raise _fail(page, "save: no current notebook")
    disk = st.lab.root_dir / path if st.lab else None

    def stamp():
        try:
            return disk.stat().st_mtime_ns, hashlib.sha1(disk.read_bytes()).hexdigest()
        except OSError:
            return None

    before = stamp() if disk else None
    ok = page.evaluate("""async () => {
      const app = window.jupyterapp;
      if (!app) return false;
      await app.commands.execute('docmanager:save');
      return true;
    }""")
    if not ok:
        page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (disk is None or stamp() != before) and not notebook_state(page).get("dirty"):
            return disk
        page.wait_for_timeout(50)
    raise _fail(page, f"{path} was not saved within {timeout:.0f} s")


def widget_errors(page) -> list[str]:
    """Texts of widget outputs that failed to render: ipywidgets' error view ("Could not
    create a view ..."), "Error displaying widget", "Failed to load model class ..."."""
    return page.evaluate("""() => {
      const bad = /Error displaying widget|Failed to load model class|Could not create a view/;
      const found = [];
      for (const e of document.querySelectorAll('.jp-OutputArea-output')) {
        if (e.querySelector('.jupyter-widgets-error-widget') || bad.test(e.innerText))
          found.push((e.innerText.trim() || e.textContent.trim()).slice(0, 500));
      }
      return found;
    }""") + [e for e in console_errors(page)
             if "Could not create a view" in e or "Failed to load model class" in e]


def shot(target, path) -> Path:
    """Screenshot of a page (the viewport) or a locator (scrolled into view) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(path))
    return path


# ----------------------------------------------------------------------------- websockets

def decode_ws_v1(payload: bytes) -> tuple[str, list[bytes]] | None:
    """Split a v1.kernel.websocket.jupyter.org frame into (channel, [header, parent_header,
    metadata, content, *buffers]) (JSON bytes); None when it is not such a frame."""
    try:
        n = int.from_bytes(payload[:8], "little")
        if n < 2 or len(payload) < 8 * (n + 1):
            return None
        offs = [int.from_bytes(payload[8 * (i + 1):8 * (i + 2)], "little") for i in range(n)]
        if offs[0] != 8 * (n + 1) or offs != sorted(offs) or offs[-1] > len(payload):
            return None
        parts = [payload[a:b] for a, b in zip(offs, offs[1:])]
        return parts[0].decode(), parts[1:]
    except (ValueError, UnicodeDecodeError):
        return None


def frame_msg_type(payload: bytes | str) -> str | None:
    """The Jupyter msg_type of a kernel websocket frame (v1 binary or the JSON protocol)."""
    try:
        if isinstance(payload, str):
            return json.loads(payload)["header"]["msg_type"]
        decoded = decode_ws_v1(payload)
        if decoded is None:
            return json.loads(payload)["header"]["msg_type"]
        return json.loads(decoded[1][0])["msg_type"]
    except (ValueError, KeyError, TypeError, IndexError):
        return None


class WebSocketCounter:
    """Counts frames received on a page's kernel websockets whose payload contains ``needle``
    (and, with ``msg_type``, whose Jupyter message has that msg_type, e.g. "comm_msg").

    ``count``; ``times``: time.monotonic() when Playwright delivered each match; ``frames``:
    the first ``keep`` matching payloads (bytes). Playwright's sync API delivers events only
    while the test is inside a Playwright call, so when the timestamps matter wait with the
    helpers here (they poll the page every 50 ms) or ``page.wait_for_timeout``, not
    ``time.sleep``.
    """

    def __init__(self, needle: bytes, msg_type: str | None = None,
                 url_contains: str = "/api/kernels/", keep: int = 200) -> None:
        self.needle = needle
        self.msg_type = msg_type
        self.url_contains = url_contains
        self.keep = keep
        self.times: list[float] = []
        self.frames: list[bytes] = []
        self.active = True
        self._attached: set[int] = set()

    @property
    def count(self) -> int:
        return len(self.times)

    def _attach(self, ws) -> None:
        if id(ws) in self._attached or self.url_contains not in ws.url:
            return
        self._attached.add(id(ws))
        ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload) -> None:
        if not self.active:
            return
        data = payload.encode() if isinstance(payload, str) else payload
        if self.needle not in data:
            return
        if self.msg_type is not None and frame_msg_type(payload) != self.msg_type:
            return
        self.times.append(time.monotonic())
        if len(self.frames) < self.keep:
            self.frames.append(data)

    def reset(self) -> None:
        self.times.clear()
        self.frames.clear()

    def stop(self) -> None:
        """Stop counting (the listeners stay, but ignore frames)."""
        self.active = False

    def span(self) -> float:
        """Seconds between the first and the last match (0 with fewer than 2)."""
        return self.times[-1] - self.times[0] if len(self.times) >= 2 else 0.0

    def rate(self) -> float:
        """Matches per second between the first and the last match (0 with fewer than 2)."""
        span = self.span()
        return (len(self.times) - 1) / span if span > 0 else 0.0

    def wait_for(self, page, n: int, timeout: float = 30.0) -> None:
        """Wait until ``count >= n`` (pumping Playwright events meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.count < n and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        if self.count < n:
            raise _fail(page, f"saw {self.count} websocket frames with {self.needle!r} "
                              f"within {timeout:.0f} s, wanted {n}")


def websocket_counter(page, needle: bytes, msg_type: str | None = None,
                      url_contains: str = "/api/kernels/") -> WebSocketCounter:
    """Count frames with ``needle`` received on the page's websockets whose URL contains
    ``url_contains`` (the kernels' sockets), those already open and those opened later
    (browser_page records every socket of the page from its start)."""
    st = _state(page)
    track_page(page)
    counter = WebSocketCounter(needle, msg_type, url_contains)
    st.counters.append(counter)
    for ws in st.websockets:
        if not ws.is_closed():
            counter._attach(ws)
    return counter
