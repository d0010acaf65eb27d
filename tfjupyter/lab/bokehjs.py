"""BokehJS in the browser: served by this Jupyter server, loaded by the dashboards, the snapshots
and the experiment comparison plots.

Where a live notebook page gets BokehJS from is ``TFJUPYTER_BOKEHJS``, read by the kernel:

    server (default)  the Jupyter server that serves the page: the tfjupyter server extension
                      serves the installed bokeh's own files at
                      ``<base_url>tfjupyter/static/bokeh/<version>/``; no internet needed
    cdn               Bokeh's CDN (cdn.bokeh.org): the browser needs internet access
    inline            embedded in the notebook (~8 MB), for exports that must be self-contained

The page's base URL comes from its ``jupyter-config-data`` element (JupyterLab and Notebook 7
pages both have one). A page without one (an nbconvert HTML export, nbviewer) has no Jupyter
server behind it and loads from the CDN. A live widget's BokehJS is loaded synchronously, so
that jupyter_bokeh's widget views, which are made right after and call ``window.Bokeh.require``
in their constructor, find it. When it cannot be loaded, the output says so, with the fix.

The server half (paths, version) imports neither bokeh nor the TF API: the server extension
imports it.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import uuid
from typing import List

__all__ = ["ENV", "MODES", "STATIC_PATH", "bokeh_version", "bokehjs_dir", "mode",
           "loader_js", "display_loader"]

ENV = "TFJUPYTER_BOKEHJS"
MODES = ("server", "cdn", "inline")
STATIC_PATH = "tfjupyter/static/bokeh"   # under the server's base_url, then <version>/<file>

SERVER_FIX = ("Is the tfjupyter server extension enabled in this Jupyter server? Run `jupyter "
              "server extension enable tfjupyter.lab` and restart Jupyter, or set "
              f"{ENV}=inline in the kernel's environment to embed BokehJS in the notebook.")
CDN_FIX = (f"This browser cannot reach Bokeh's CDN: unset {ENV} to load BokehJS from the "
           f"Jupyter server, or set {ENV}=inline to embed it in the notebook.")


# -- the server's half ----------------------------------------------------------------------------
def bokeh_version() -> str:
    """The installed bokeh's version, read from its metadata (bokeh is not imported)."""
    return importlib.metadata.version("bokeh")


def bokehjs_dir() -> str:
    """The directory of the installed bokeh's BokehJS files (bokeh.min.js, ...)."""
    spec = importlib.util.find_spec("bokeh")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("bokeh is not installed: tfjupyter's dashboards need it")
    return os.path.join(list(spec.submodule_search_locations)[0], "server", "static", "js")


# -- the kernel's half ----------------------------------------------------------------------------
def mode() -> str:
    """``TFJUPYTER_BOKEHJS``, checked: one of MODES (unset or empty: "server")."""
    value = os.environ.get(ENV, "").strip().lower() or "server"
    if value not in MODES:
        raise ValueError(f"{ENV}={os.environ[ENV]!r}: expected one of {', '.join(MODES)} "
                         "(unset: server, the Jupyter server that serves the page)")
    return value


def _file_names() -> List[str]:
    """The BokehJS files a page needs, in load order, as bokeh's own server mode lists them."""
    from bokeh.resources import Resources
    return [url.rsplit("/", 1)[1].split("?")[0]
            for url in Resources(mode="server", root_url="/").js_files]


def _options(prefer: str) -> dict:
    from bokeh.resources import CDN
    version = bokeh_version()
    return {"version": version, "prefer": prefer, "cdn": CDN.js_files,
            "server": [f"{STATIC_PATH}/{version}/{name}" for name in _file_names()],
            "serverFix": SERVER_FIX, "cdnFix": CDN_FIX}


# A JS expression: a function of (options, sync) that returns a Promise resolved once
# window.Bokeh is the kernel's BokehJS version, or rejected with an Error saying why, with the fix.
# One BokehJS per page: the page's own when its version matches (replacing it would break live
# widgets), else one load that every later loader of the page waits for.
_LOADER_JS = r"""
function(opts, sync) {
  var B = window.Bokeh, pending = window.__tfjupyterBokehJS;
  if (B && B.version === opts.version && B.embed) return Promise.resolve();
  if (pending && pending.version === opts.version) return pending.promise;
  var base = null, config = document.getElementById('jupyter-config-data');
  if (config) { try { base = JSON.parse(config.textContent).baseUrl; } catch (e) {} }
  var fromServer = opts.prefer === 'server' && typeof base === 'string';
  var urls = fromServer ? opts.server.map(function(path) {
    return base.replace(/\/?$/, '/') + path; }) : opts.cdn;
  var fix = fromServer ? opts.serverFix : opts.cdnFix;
  function failure(url, why) {
    var link = document.createElement('a');
    link.href = url;   // the address in full, as the browser asked for it
    return new Error('BokehJS ' + opts.version + ' could not be loaded from ' +
                     (link.href || url) + ' (' + why + '). ' + fix);
  }
  var promise;
  if (sync) {   // before the widget views that need it are made
    promise = new Promise(function(ok, fail) {
      for (var i = 0; i < urls.length; i++) {
        var xhr = new XMLHttpRequest();
        try {
          xhr.open('GET', urls[i], false);
          xhr.send();
        } catch (e) { return fail(failure(urls[i], 'the request failed: ' + e)); }
        if (xhr.status !== 200) {
          var type = xhr.getResponseHeader('Content-Type') || '';
          var said = type.indexOf('text/plain') === 0 ? ': ' + xhr.responseText.slice(0, 300) : '';
          return fail(failure(urls[i], 'HTTP ' + (xhr.status || 'error') + said));
        }
        try {
          (0, eval)(xhr.responseText + '\n//# sourceURL=' + urls[i]);
        } catch (e) { return fail(failure(urls[i], 'it did not run: ' + e)); }
      }
      ok();
    });
  } else {
    promise = urls.reduce(function(previous, url) {
      return previous.then(function() { return new Promise(function(ok, fail) {
        var s = document.createElement('script');
        s.src = url; s.onload = ok;
        s.onerror = function() { fail(failure(url, 'the request failed')); };
        document.head.appendChild(s); }); });
    }, Promise.resolve());
  }
  window.__tfjupyterBokehJS = {version: opts.version, promise: promise};
  promise.catch(function() {   // a later output may try again (the server may be fixed by then)
    if (window.__tfjupyterBokehJS && window.__tfjupyterBokehJS.promise === promise)
      delete window.__tfjupyterBokehJS;
  });
  return promise;
}
"""


def loader_js(prefer: str) -> str:
    """A JS expression: a function of ``sync`` that loads BokehJS into the page (see _LOADER_JS);
    ``prefer``: "server" (this Jupyter server when the page has one, else the CDN) or "cdn"."""
    if prefer not in ("server", "cdn"):
        raise ValueError(f"loader_js: prefer must be 'server' or 'cdn', got {prefer!r}")
    return (f"(function(sync) {{ return ({_LOADER_JS.strip()})"
            f"({json.dumps(_options(prefer))}, sync); }})")


_INLINE_LOADED = False


def display_loader() -> None:
    """Displays what puts BokehJS in the page before a live jupyter_bokeh widget, as ``mode()``
    says: a small script (server, cdn) that loads it unless the page has it, and shows why not
    in words when it cannot; or, once per kernel, BokehJS itself (inline)."""
    global _INLINE_LOADED
    from IPython.display import display
    chosen = mode()
    if chosen == "inline":
        if not _INLINE_LOADED:
            from bokeh.io import output_notebook
            from bokeh.resources import INLINE
            output_notebook(resources=INLINE, hide_banner=True)
            _INLINE_LOADED = True
        return
    element_id = f"tfj-bokehjs-{uuid.uuid4().hex[:12]}"
    # On failure: the words, and the dashboards' widget error boxes hidden (ipywidgets' "Click to
    # show javascript error", from jupyter_bokeh's view without BokehJS), which they explain.
    script = (f"{loader_js(chosen)}(true).catch(function(e) {{"
              f" var el = document.getElementById({json.dumps(element_id)});"
              " if (el) { el.textContent = e.message; el.style.display = ''; }"
              " if (!document.getElementById('tfj-bokehjs-failed')) {"
              "  var style = document.createElement('style'); style.id = 'tfj-bokehjs-failed';"
              "  style.textContent = '.tfjupyter-dashboard .jupyter-widgets-error-widget"
              " {display: none}'; document.head.appendChild(style); } });")
    html = (f"<div id='{element_id}' class='tfjupyter-bokehjs-error' style='display:none;"
            "color:#b00020;border:1px solid #b00020;padding:4px 8px;margin:2px 0'></div>"
            f"<script type='text/javascript'>{script}</script>")
    display({"text/html": html, "text/plain": ""}, raw=True)
