"""Where a page gets BokehJS from (tfjupyter.lab.bokehjs): TFJUPYTER_BOKEHJS, and the loader's
JavaScript run in Node.js against a fake page (its requests, its order, its failure messages).
The real page, the real server and an offline browser: tests/test_dashboard_offline_browser.py.
"""
import json
import subprocess

import bokeh
import pytest
from bokeh.resources import CDN, Resources

from system_programs import need_executables
from tfjupyter.lab import bokehjs

VERSION = bokeh.__version__
FILES = [url.rsplit("/", 1)[1] for url in Resources(mode="server", root_url="/").js_files]


@pytest.mark.parametrize("value, expected", [(None, "server"), ("", "server"), (" CDN ", "cdn"),
                                             ("inline", "inline"), ("server", "server")])
def test_the_variable_picks_the_source(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("TFJUPYTER_BOKEHJS", raising=False)
    else:
        monkeypatch.setenv("TFJUPYTER_BOKEHJS", value)
    assert bokehjs.mode() == expected


def test_a_bad_value_names_the_variable_and_the_choices(monkeypatch):
    monkeypatch.setenv("TFJUPYTER_BOKEHJS", "offline")
    with pytest.raises(ValueError, match=r"TFJUPYTER_BOKEHJS='offline': expected one of server, "
                                         r"cdn, inline \(unset: server"):
        bokehjs.mode()
    with pytest.raises(ValueError, match="prefer must be 'server' or 'cdn', got 'inline'"):
        bokehjs.loader_js("inline")


def test_the_server_half_reads_the_installed_bokeh_without_importing_it():
    assert bokehjs.bokeh_version() == VERSION
    for name in FILES:
        with open(f"{bokehjs.bokehjs_dir()}/{name}", "rb") as f:
            assert f.read(1)


# A page for the loader: a jupyter-config-data element (or none), window.Bokeh (or none), and
# XMLHttpRequest/script elements that answer from `answers` ({url: [status, content type,
# body]}; a body "RUN" defines window.Bokeh) and record what was asked, in order.
FAKE_PAGE = r"""
const setup = JSON.parse(process.argv[process.argv.length - 1]);
const asked = [];
global.window = global;
if (setup.bokeh) window.Bokeh = {version: setup.bokeh, embed: {}};
function answer(url) {
  return setup.answers[url] || [404, 'text/html', '<html>Lab page: 404</html>'];
}
function run(url, body) {
  if (body === 'RUN') window.Bokeh = {version: setup.version, embed: {}, from: url};
  else if (body === 'THROW') throw new Error('broken bundle');
}
global.eval = (code) => run(code.split('\n//# sourceURL=')[1], code.split('\n')[0]);
global.XMLHttpRequest = class {
  open(method, url, async) { this.url = url; this.sync = async === false; }
  send() {
    asked.push(['xhr', this.url, this.sync]);
    [this.status, this.type, this.responseText] = answer(this.url);
  }
  getResponseHeader(name) { return name === 'Content-Type' ? this.type : null; }
};
global.document = {
  getElementById: (id) => (id === 'jupyter-config-data' && setup.config) ?
    {textContent: JSON.stringify(setup.config)} : null,
  createElement: () => ({}),
  head: {appendChild: (s) => {
    asked.push(['script', s.src]);
    const [status, , body] = answer(s.src);
    setTimeout(() => { if (status === 200) { run(s.src, body); s.onload(); } else s.onerror(); });
  }},
};
const load = LOADER;
load(setup.sync).then(
  () => console.log(JSON.stringify({asked, ok: window.Bokeh.from || 'page'})),
  (e) => console.log(JSON.stringify({asked, error: e.message})));
"""


def _load(sync, config=None, answers=None, bokeh_in_page=None, prefer="server"):
    need_executables("the BokehJS loader's tests", ["node"], "apt-get install nodejs")
    setup = {"sync": sync, "config": config, "answers": answers or {}, "bokeh": bokeh_in_page,
             "version": VERSION}
    script = FAKE_PAGE.replace("LOADER", bokehjs.loader_js(prefer))
    done = subprocess.run(["node", "-e", script, json.dumps(setup)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _served(base):
    return [f"{base}tfjupyter/static/bokeh/{VERSION}/{name}" for name in FILES]


def test_a_jupyter_page_loads_bokehjs_from_its_server_in_order_and_synchronously():
    urls = _served("/user/ann/")
    result = _load(True, config={"baseUrl": "/user/ann/"},
                   answers={url: [200, "application/javascript", "RUN"] for url in urls})
    assert result["asked"] == [["xhr", url, True] for url in urls]
    assert result["ok"] == urls[-1]


def test_a_page_that_has_this_bokehjs_loads_nothing():
    assert _load(True, config={"baseUrl": "/"}, bokeh_in_page=VERSION) == {"asked": [],
                                                                           "ok": "page"}


def test_a_missing_server_extension_is_said_in_words_with_the_fix():
    first = _served("/")[0]
    result = _load(True, config={"baseUrl": "/"})     # every URL: Lab's HTML 404 page
    assert result["asked"] == [["xhr", first, True]]
    assert result["error"] == (
        f"BokehJS {VERSION} could not be loaded from {first} (HTTP 404). Is the tfjupyter "
        "server extension enabled in this Jupyter server? Run `jupyter server extension enable "
        "tfjupyter.lab` and restart Jupyter, or set TFJUPYTER_BOKEHJS=inline in the kernel's "
        "environment to embed BokehJS in the notebook.")


def test_the_servers_own_words_are_shown_and_a_broken_bundle_too():
    first, second = _served("/")[:2]
    answers = {first: [404, "text/plain; charset=utf-8", "404 this Jupyter server has bokeh 0"]}
    result = _load(True, config={"baseUrl": "/"}, answers=answers)
    assert f"from {first} (HTTP 404: 404 this Jupyter server has bokeh 0). Is the" in \
        result["error"]
    answers = {first: [200, "application/javascript", "RUN"],
               second: [200, "application/javascript", "THROW"]}
    result = _load(True, config={"baseUrl": "/"}, answers=answers)
    assert f"from {second} (it did not run: Error: broken bundle)" in result["error"]


def test_a_page_without_a_server_loads_from_the_cdn_and_says_so_when_it_cannot():
    answers = {url: [200, "application/javascript", "RUN"] for url in CDN.js_files}
    result = _load(False, answers=answers)           # an export: no jupyter-config-data
    assert result["asked"] == [["script", url] for url in CDN.js_files]
    result = _load(False)
    assert result["error"] == (
        f"BokehJS {VERSION} could not be loaded from {CDN.js_files[0]} (the request failed). "
        "This browser cannot reach Bokeh's CDN: unset TFJUPYTER_BOKEHJS to load BokehJS from "
        "the Jupyter server, or set TFJUPYTER_BOKEHJS=inline to embed it in the notebook.")


def test_cdn_when_asked_even_in_a_jupyter_page():
    answers = {url: [200, "application/javascript", "RUN"] for url in CDN.js_files}
    result = _load(True, config={"baseUrl": "/"}, answers=answers, prefer="cdn")
    assert [url for _, url, _ in result["asked"]] == CDN.js_files


def test_the_dashboard_displays_the_loader_before_its_widget(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401 (display's home)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append(obj))
    monkeypatch.delenv("TFJUPYTER_BOKEHJS", raising=False)
    bokehjs.display_loader()
    (bundle,) = shown
    html = bundle["text/html"]
    assert "class='tfjupyter-bokehjs-error'" in html and "display:none" in html
    assert f"tfjupyter/static/bokeh/{VERSION}/bokeh.min.js" in html
    monkeypatch.setenv("TFJUPYTER_BOKEHJS", "nope")
    with pytest.raises(ValueError, match="TFJUPYTER_BOKEHJS='nope'"):
        bokehjs.display_loader()
