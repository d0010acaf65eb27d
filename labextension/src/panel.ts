// The tfjupyter cluster side panel.
//
// A left-sidebar widget that lists the clusters of GET {base}/tfjupyter/api/clusters,
// refreshed about once a second while it is visible (./clusterpoll), with per-cluster
// Stop / Forget / Dashboard actions. The DOM is updated in place by keyed rows so buttons,
// focus and scroll survive the refreshes.

import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ClusterPoll } from './clusterpoll';
import {
  arrangeChildren,
  button,
  ClusterView,
  dashboardCode,
  el,
  IClusterActions,
  IClusterInfo,
  IClusterList,
  PendingAction,
  setAttr,
  setHidden,
  setText,
  shortId
} from './clusterview';

export { dashboardCode } from './clusterview';
export type {
  ClusterState,
  IClusterInfo,
  IClusterList,
  ITaskInfo,
  TaskState
} from './clusterview';

// ---------------------------------------------------------------------------------------
// Constants

const PLUGIN_ID = 'tfjupyter-labextension:clusters';
const PANEL_ID = 'tfjupyter-clusters';
const API_PATH = 'tfjupyter/api/clusters';

const INFO_NOTICE_MS = 12000;

const NOT_ENABLED =
  "tfjupyter's server extension is not enabled on this Jupyter server " +
  '(jupyter server extension list)';
const EMPTY_HINT =
  'No clusters yet: %tf_cluster start --ps 1 --workers 2 in a notebook starts one.';

const CLUSTER_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <circle cx="12" cy="5" r="3.2"/>
    <circle cx="4.8" cy="18.5" r="3.2"/>
    <circle cx="19.2" cy="18.5" r="3.2"/>
    <path d="M11 7.6h2v3.9l5.3 4.3-1.3 1.6-5-4.1-5 4.1-1.3-1.6L11 11.5z"/>
  </g>
</svg>`;

export const clusterIcon = new LabIcon({
  name: 'tfjupyter:clusters',
  svgstr: CLUSTER_SVG
});

// ---------------------------------------------------------------------------------------
// Requests

/** A failed API request: `kind` says whether the server answered at all. */
class ApiError extends Error {
  constructor(
    readonly kind: 'network' | 'http',
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

async function apiRequest<T>(
  settings: ServerConnection.ISettings,
  path: string,
  method: 'GET' | 'POST' | 'DELETE'
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, API_PATH, path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      { method, cache: 'no-store' },
      settings
    );
  } catch (reason) {
    throw new ApiError('network', 0, errorText(reason));
  }
  let text = '';
  try {
    text = await response.text();
  } catch (reason) {
    throw new ApiError('network', 0, errorText(reason));
  }
  let body: any = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!response.ok) {
    const message =
      body && typeof body.error === 'string' && body.error
        ? body.error
        : `HTTP ${response.status} ${response.statusText}`.trim();
    throw new ApiError('http', response.status, message);
  }
  return body as T;
}

function errorText(reason: unknown): string {
  if (reason instanceof Error) {
    return reason.message;
  }
  return String(reason);
}

// ---------------------------------------------------------------------------------------
// The panel

export namespace ClusterPanel {
  export interface IOptions {
    app: JupyterFrontEnd;
    serverSettings: ServerConnection.ISettings;
    notebooks: INotebookTracker | null;
    /**
     * Whether the shell can show a dashboard tab beside its notebook: JupyterLab's can;
     * Notebook 7's main area holds one document, so there the notebook's own
     * %tf_dashboard --cluster is the way.
     */
    opensDashboards: boolean;
  }
}

/** The left-sidebar widget listing the tfjupyter clusters. */
export class ClusterPanel extends Widget implements IClusterActions {
  constructor(options: ClusterPanel.IOptions) {
    super();
    this._app = options.app;
    this._settings = options.serverSettings;
    this._notebooks = options.notebooks;
    this.opensDashboards = options.opensDashboards;

    this.id = PANEL_ID;
    this.addClass('tfj-panel');
    this.title.icon = clusterIcon;
    this.title.caption = 'tfjupyter clusters';

    const header = el('div', 'tfj-panel-header');
    const heading = el('h2', 'tfj-panel-title', 'tfjupyter clusters');
    this._refreshButton = button('tfj-refresh', '', 'Refresh now');
    this._refreshButton.setAttribute('aria-label', 'Refresh now');
    this._refreshButton.append(refreshIcon.element({ tag: 'span' }));
    this._refreshButton.addEventListener('click', () => this.refresh());
    header.append(heading, this._refreshButton);

    this._message = el('div', 'tfj-panel-message');
    this._message.setAttribute('role', 'status');
    this._message.setAttribute('aria-live', 'polite');
    this._message.hidden = true;
    this._fetchLine = el('div', 'tfj-message-line tfj-message-fetch');
    this._fetchLine.hidden = true;
    this._noticeLine = el('div', 'tfj-message-line tfj-message-notice');
    this._noticeLine.hidden = true;
    this._noticeText = el('span', 'tfj-message-text');
    const dismiss = button('tfj-message-dismiss', '×', 'Dismiss');
    dismiss.setAttribute('aria-label', 'Dismiss');
    dismiss.addEventListener('click', () => this._setNotice('', 'info'));
    this._noticeLine.append(this._noticeText, dismiss);
    this._message.append(this._fetchLine, this._noticeLine);

    this._empty = el('div', 'tfj-panel-empty', EMPTY_HINT);
    this._empty.hidden = true;
    this._loading = el('div', 'tfj-panel-loading', 'Loading clusters…');
    this._list = el('div', 'tfj-cluster-list');

    this.node.append(header, this._message, this._loading, this._empty, this._list);

    // isShown: a collapsed sidebar hides the panel, and the poll stands by.
    this._poll = new ClusterPoll({
      request: () => apiRequest<IClusterList>(this._settings, '', 'GET'),
      isShown: () => !this.isDisposed && this.isVisible,
      onList: clusters => {
        this._fetchError = '';
        this._everLoaded = true;
        this._renderClusters(clusters);
        this._renderStatus();
      },
      onError: (reason, retryMs) => {
        this._fetchError = this._describeFetchError(reason, retryMs);
        this._renderStatus();
      }
    });
  }

  /** Refreshes now, then keeps the usual pace. */
  refresh(): void {
    if (!this.isDisposed) {
      this._poll.refresh();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    this._clearNoticeTimer();
    super.dispose();
  }

  // Shown again: ask now rather than at the next tick of the standing-by poll.

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.refresh();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.refresh();
  }

  private _describeFetchError(reason: unknown, delayMs: number): string {
    const seconds = Math.round(delayMs / 1000);
    if (reason instanceof ApiError) {
      if (reason.kind === 'network') {
        return `cannot reach the Jupyter server; retrying in ${seconds} s`;
      }
      if (reason.status === 404) {
        return NOT_ENABLED;
      }
      return reason.message;
    }
    return errorText(reason);
  }

  // -- rendering --

  private _renderClusters(clusters: IClusterInfo[]): void {
    const now = Date.now() / 1000;
    const seen = new Set<string>();
    const nodes: HTMLElement[] = [];
    for (const cluster of clusters) {
      if (!cluster || typeof cluster.id !== 'string' || seen.has(cluster.id)) {
        continue;
      }
      seen.add(cluster.id);
      let view = this._views.get(cluster.id);
      if (!view) {
        view = new ClusterView(cluster.id, this);
        this._views.set(cluster.id, view);
      }
      view.update(cluster, now, this._pending.get(cluster.id), this._stopFailed.has(cluster.id));
      nodes.push(view.node);
    }
    for (const id of Array.from(this._views.keys())) {
      if (!seen.has(id)) {
        this._views.delete(id);
        this._stopFailed.delete(id);
      }
    }
    arrangeChildren(this._list, nodes);
    this._clusters = clusters.filter(c => c && seen.has(c.id));
    setHidden(this._empty, nodes.length > 0);
  }

  /** Re-renders from the last good list (after a local change such as a pending action). */
  private _rerender(): void {
    if (this._everLoaded) {
      this._renderClusters(this._clusters);
    }
  }

  private _renderStatus(): void {
    setHidden(this._loading, this._everLoaded || !!this._fetchError);
    this._list.classList.toggle('tfj-mod-stale', !!this._fetchError);
    this._empty.classList.toggle('tfj-mod-stale', !!this._fetchError);
    setText(this._fetchLine, this._fetchError);
    setHidden(this._fetchLine, !this._fetchError);
    setAttr(this._fetchLine, 'data-kind', this._fetchError ? 'error' : null);
    setText(this._noticeText, this._notice);
    setHidden(this._noticeLine, !this._notice);
    setAttr(this._noticeLine, 'data-kind', this._notice ? this._noticeKind : null);
    setHidden(this._message, !this._fetchError && !this._notice);
  }

  private _clearNoticeTimer(): void {
    if (this._noticeTimer) {
      window.clearTimeout(this._noticeTimer);
      this._noticeTimer = 0;
    }
  }

  /** Shows (or, with '', clears) a message about an action; info messages fade out. */
  private _setNotice(text: string, kind: 'info' | 'error'): void {
    this._clearNoticeTimer();
    this._notice = text;
    this._noticeKind = kind;
    if (text && kind === 'info') {
      this._noticeTimer = window.setTimeout(() => {
        this._noticeTimer = 0;
        if (this._notice === text) {
          this._setNotice('', 'info');
        }
      }, INFO_NOTICE_MS);
    }
    if (!this.isDisposed) {
      this._renderStatus();
    }
  }

  // -- actions --

  stop(cluster: IClusterInfo): void {
    void this._stop(cluster);
  }

  forget(cluster: IClusterInfo): void {
    void this._forget(cluster);
  }

  dashboard(cluster: IClusterInfo): void {
    void this._openDashboard(cluster);
  }

  private async _stop(cluster: IClusterInfo): Promise<void> {
    const id = cluster.id;
    const short = shortId(id);
    if (this._pending.has(id)) {
      return;
    }
    const result = await showDialog({
      title: `Stop cluster ${short}?`,
      body: 'Its engines and tasks end; the kernel that started it gets an error at its next use.',
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
    });
    if (!result.button.accept || this.isDisposed) {
      return;
    }
    this._pending.set(id, 'stop');
    this._rerender();
    try {
      await apiRequest<IClusterInfo>(
        this._settings,
        `${encodeURIComponent(id)}/stop`,
        'POST'
      );
      this._stopFailed.delete(id);
      this._setNotice(`Cluster ${short} stopped.`, 'info');
    } catch (reason) {
      this._stopFailed.add(id);
      this._setNotice(`Could not stop cluster ${short}: ${this._actionError(reason)}`, 'error');
    } finally {
      this._pending.delete(id);
      this._rerender();
      this.refresh();
    }
  }

  private async _forget(cluster: IClusterInfo): Promise<void> {
    const id = cluster.id;
    const short = shortId(id);
    if (this._pending.has(id)) {
      return;
    }
    if (cluster.state === 'orphaned') {
      // its kernel is gone but its tasks still answer: forgetting does not stop them
      const result = await showDialog({
        title: `Forget cluster ${short}?`,
        body:
          'Its kernel is gone but its tasks still run. Forgetting it does not stop them: its ' +
          'processes keep running, and this panel will no longer show them. ' +
          'Use Stop to end them.',
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Forget' })]
      });
      if (!result.button.accept || this.isDisposed || this._pending.has(id)) {
        return;
      }
    }
    this._pending.set(id, 'forget');
    this._rerender();
    try {
      await apiRequest<unknown>(this._settings, encodeURIComponent(id), 'DELETE');
    } catch (reason) {
      this._setNotice(`Could not forget cluster ${short}: ${this._actionError(reason)}`, 'error');
    } finally {
      this._pending.delete(id);
      this._rerender();
      this.refresh();
    }
  }

  private _actionError(reason: unknown): string {
    if (reason instanceof ApiError && reason.kind === 'network') {
      return 'cannot reach the Jupyter server';
    }
    return errorText(reason);
  }

  private async _openDashboard(cluster: IClusterInfo): Promise<void> {
    const short = shortId(cluster.id);
    const code = dashboardCode(cluster.id);
    if (code === null) {
      this._setNotice(`Cluster ${short}: its id is not one a dashboard can be asked for.`, 'error');
      return;
    }
    const kernelId = cluster.kernel?.kernel_id ?? '';
    const kernelName = kernelId || (cluster.kernel?.pid ? `pid ${cluster.kernel.pid}` : 'unknown');
    const notOpen =
      `Cluster ${short}: open the notebook that started this cluster (kernel ${kernelName}) ` +
      'to see its dashboard.';

    if (!this._notebooks) {
      this._setNotice(`${notOpen} (Notebooks are not available in this front end.)`, 'error');
      return;
    }
    const matches: NotebookPanel[] = [];
    if (kernelId) {
      this._notebooks.forEach(panel => {
        if (!panel.isDisposed && panel.sessionContext.session?.kernel?.id === kernelId) {
          matches.push(panel);
        }
      });
    }
    if (matches.length === 0) {
      this._setNotice(notOpen, 'error');
      return;
    }
    const current = this._notebooks.currentWidget;
    const notebook = matches.find(p => p === current) ?? matches[0];

    // One dashboard tab per cluster: show it again if it is still open on this kernel.
    const existing = this._dashboards.get(cluster.id);
    if (existing && !existing.widget.isDisposed && existing.notebook === notebook) {
      this._app.shell.activateById(existing.widget.id);
      this._setNotice('', 'info');
      return;
    }
    if (existing && !existing.widget.isDisposed) {
      existing.widget.dispose();
    }

    const sessionContext = notebook.sessionContext;
    const kernel = sessionContext.session?.kernel;
    if (!kernel) {
      this._setNotice(notOpen, 'error');
      return;
    }

    const outputArea = new OutputArea({
      model: new OutputAreaModel({ trusted: true }),
      rendermime: notebook.content.rendermime
    });
    outputArea.addClass('tfj-dashboard-output');
    const widget = new MainAreaWidget<OutputArea>({ content: outputArea });
    widget.id = `tfjupyter-dashboard-${cluster.id}`;
    widget.addClass('tfj-dashboard');
    widget.title.label = `Dashboard: cluster ${short}`;
    widget.title.caption = `tfjupyter dashboard of cluster ${cluster.id}, run by ${notebook.title.label}`;
    widget.title.icon = clusterIcon;
    widget.title.closable = true;

    const record = { widget, notebook };
    this._dashboards.set(cluster.id, record);
    const onNotebookDisposed = (): void => widget.dispose();
    notebook.disposed.connect(onNotebookDisposed);
    widget.disposed.connect(() => {
      notebook.disposed.disconnect(onNotebookDisposed);
      if (this._dashboards.get(cluster.id) === record) {
        this._dashboards.delete(cluster.id);
      }
    });

    this._app.shell.add(widget, 'main', {
      mode: notebook.isAttached ? 'split-right' : 'tab-after',
      ref: notebook.isAttached ? notebook.id : undefined
    });
    this._app.shell.activateById(widget.id);

    const busy = kernel.status === 'busy';
    let busyNotice = '';
    if (busy) {
      busyNotice =
        `The kernel of ${notebook.title.label} is busy: the dashboard of cluster ${short} ` +
        'will appear when the running cell finishes.';
      this._setNotice(busyNotice, 'info');
    } else {
      this._setNotice('', 'info');
    }

    try {
      // What OutputArea.execute does, but without an execution count in the notebook
      // (store_history false) and without depending on %load_ext: plain Python.
      const future = kernel.requestExecute({
        code,
        store_history: false,
        stop_on_error: false,
        silent: false
      });
      outputArea.future = future;
      const reply = await future.done;
      if (busyNotice && this._notice === busyNotice) {
        this._setNotice('', 'info');
      }
      const content = reply?.content;
      if (content && content.status === 'error' && !widget.isDisposed) {
        // the traceback shows in the dashboard tab; say it here too
        this._setNotice(
          `Could not open the dashboard of cluster ${short}: ${content.ename}: ${content.evalue}`,
          'error'
        );
      }
    } catch (reason) {
      if (!widget.isDisposed) {
        this._setNotice(
          `Could not open the dashboard of cluster ${short}: ${errorText(reason)}`,
          'error'
        );
      }
    }
  }

  readonly opensDashboards: boolean;

  private _app: JupyterFrontEnd;
  private _settings: ServerConnection.ISettings;
  private _notebooks: INotebookTracker | null;

  private _refreshButton: HTMLButtonElement;
  private _message: HTMLDivElement;
  private _fetchLine: HTMLDivElement;
  private _noticeLine: HTMLDivElement;
  private _noticeText: HTMLSpanElement;
  private _empty: HTMLDivElement;
  private _loading: HTMLDivElement;
  private _list: HTMLDivElement;

  private _views = new Map<string, ClusterView>();
  private _clusters: IClusterInfo[] = [];
  private _pending = new Map<string, PendingAction>();
  /** Clusters whose last stop request from this panel failed (their button says "Retry stop"). */
  private _stopFailed = new Set<string>();
  private _dashboards = new Map<
    string,
    { widget: MainAreaWidget<OutputArea>; notebook: NotebookPanel }
  >();

  private _poll: ClusterPoll;
  private _everLoaded = false;
  private _fetchError = '';
  private _notice = '';
  private _noticeKind: 'info' | 'error' = 'info';
  private _noticeTimer = 0;
}

// ---------------------------------------------------------------------------------------
// The plugin

export const clusterPanelPlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'The tfjupyter clusters side panel: running clusters, their tasks, stop and dashboard.',
  autoStart: true,
  optional: [ILabShell, INotebookTracker, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell | null,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const panel = new ClusterPanel({
      app,
      serverSettings: app.serviceManager.serverSettings,
      notebooks,
      opensDashboards: labShell !== null
    });
    // JupyterLab's left sidebar, or Notebook 7's left side panel (View menu). In JupyterLab
    // the file browser is rank 100, running sessions 200: come right after the file browser.
    app.shell.add(panel, 'left', { rank: 150 });
    if (restorer) {
      restorer.add(panel, PANEL_ID);
    }
  }
};
