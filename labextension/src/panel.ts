// The tfjupyter cluster side panel (contract §3, §4).
//
// A left-sidebar widget that lists the clusters of GET {base}/tfjupyter/api/clusters,
// refreshed about once a second while it is visible, with per-cluster Stop / Forget /
// Dashboard actions. The DOM is updated in place by keyed rows so buttons, focus and
// scroll survive the refreshes.

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

// ---------------------------------------------------------------------------------------
// The REST API's shapes (contract §3)

export type ClusterState = 'running' | 'stopping' | 'stopped' | 'orphaned';
export type TaskState = 'starting' | 'idle' | 'running' | 'dead' | 'unreachable';

export interface ITaskInfo {
  name: string;
  job: string;
  index: number;
  host: string;
  address: string;
  devices: string;
  state: TaskState;
  error: string;
  global_step: number | null;
  steps_per_sec: number;
  examples_per_sec: number;
}

export interface IClusterInfo {
  id: string;
  created: number;
  state: ClusterState;
  engines: string;
  kernel: { pid: number | null; kernel_id: string; alive: boolean };
  tasks: ITaskInfo[];
  error: string;
}

export interface IClusterList {
  version: number;
  clusters: IClusterInfo[];
}

// ---------------------------------------------------------------------------------------
// Constants

const PLUGIN_ID = 'tfjupyter-labextension:clusters';
const PANEL_ID = 'tfjupyter-clusters';
const API_PATH = 'tfjupyter/api/clusters';

const REFRESH_MS = 1000;
const BACKOFF_MAX_MS = 30000;
const INFO_NOTICE_MS = 12000;

const NOT_ENABLED =
  "tfjupyter's server extension is not enabled on this Jupyter server " +
  '(jupyter server extension list)';
const EMPTY_HINT =
  'No clusters yet: %tf_cluster start --ps 1 --workers 2 in a notebook starts one.';

// The numbers come before host and devices so they stay in view in a narrow sidebar (the
// table scrolls sideways for the rest).
const TASK_COLUMNS: ReadonlyArray<{ label: string; title: string; cls: string }> = [
  { label: 'task', title: 'job:index', cls: 'tfj-col-task' },
  { label: 'state', title: 'task state', cls: 'tfj-col-state' },
  { label: 'step', title: 'global step', cls: 'tfj-col-num' },
  { label: 'steps/s', title: 'steps per second', cls: 'tfj-col-num' },
  { label: 'ex/s', title: 'examples per second', cls: 'tfj-col-num' },
  { label: 'host', title: 'host (address)', cls: 'tfj-col-host' },
  { label: 'devices', title: 'devices of the task', cls: 'tfj-col-devices' }
];

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
// Formatting

function shortId(id: string): string {
  return id.slice(0, 8);
}

function formatAge(seconds: number): string {
  if (!isFinite(seconds) || seconds < 0) {
    return '';
  }
  if (seconds < 60) {
    return `${Math.floor(seconds)} s`;
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min`;
  }
  if (seconds < 86400) {
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    return m ? `${h} h ${m} min` : `${h} h`;
  }
  return `${Math.floor(seconds / 86400)} d`;
}

function formatRate(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return '–';
  }
  if (value === 0) {
    return '0';
  }
  const a = Math.abs(value);
  if (a < 10) {
    return value.toFixed(2);
  }
  if (a < 100) {
    return value.toFixed(1);
  }
  if (a < 100000) {
    return value.toFixed(0);
  }
  return `${(value / 1000).toFixed(0)}k`;
}

function formatStep(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return '–';
  }
  return String(value);
}

// ---------------------------------------------------------------------------------------
// Small DOM helpers (write only what changed, so refreshes do not disturb the page)

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

function setAttr(node: HTMLElement, name: string, value: string | null): void {
  if (value === null) {
    if (node.hasAttribute(name)) {
      node.removeAttribute(name);
    }
  } else if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}

function setHidden(node: HTMLElement, hidden: boolean): void {
  if (node.hidden !== hidden) {
    node.hidden = hidden;
  }
}

function setDisabled(node: HTMLButtonElement, disabled: boolean): void {
  if (node.disabled !== disabled) {
    node.disabled = disabled;
  }
}

/** Puts `nodes` in this order as the children of `parent`, moving only what is misplaced. */
function arrangeChildren(parent: HTMLElement, nodes: HTMLElement[]): void {
  nodes.forEach((node, i) => {
    const current = parent.children[i];
    if (current !== node) {
      parent.insertBefore(node, current ?? null);
    }
  });
  while (parent.children.length > nodes.length) {
    parent.removeChild(parent.lastElementChild!);
  }
}

function button(className: string, label: string, title: string): HTMLButtonElement {
  const b = el('button', `tfj-button ${className}`, label);
  b.type = 'button';
  b.title = title;
  return b;
}

// ---------------------------------------------------------------------------------------
// Keyed views

/** What the panel is doing for a cluster (a request in flight). */
type PendingAction = 'stop' | 'forget' | undefined;

interface IClusterActions {
  stop(cluster: IClusterInfo): void;
  forget(cluster: IClusterInfo): void;
  dashboard(cluster: IClusterInfo): void;
}

/** One task: a `tr.tfj-task` row plus a `tr.tfj-task-error` row shown under it on error. */
class TaskView {
  readonly row: HTMLTableRowElement;
  readonly errorRow: HTMLTableRowElement;

  constructor(name: string) {
    this.row = el('tr', 'tfj-task');
    this.row.dataset.task = name;
    this._name = el('td', 'tfj-col-task');
    this._host = el('td', 'tfj-col-host');
    this._devices = el('td', 'tfj-col-devices');
    const state = el('td', 'tfj-col-state');
    this._dot = el('span', 'tfj-dot');
    this._dot.setAttribute('aria-hidden', 'true');
    this._state = el('span', 'tfj-state-label');
    state.append(this._dot, this._state);
    this._step = el('td', 'tfj-col-num tfj-step');
    this._steps = el('td', 'tfj-col-num tfj-steps-per-sec');
    this._examples = el('td', 'tfj-col-num tfj-examples-per-sec');
    this.row.append(
      this._name,
      state,
      this._step,
      this._steps,
      this._examples,
      this._host,
      this._devices
    );

    this.errorRow = el('tr', 'tfj-task-error');
    this.errorRow.dataset.task = name;
    this._error = el('td');
    this._error.colSpan = TASK_COLUMNS.length;
    this.errorRow.append(this._error);
    this.errorRow.hidden = true;
  }

  update(task: ITaskInfo): void {
    setAttr(this.row, 'data-state', task.state);
    setText(this._name, task.name);
    setText(this._host, task.host);
    setAttr(this._host, 'title', task.address ? `${task.host} (${task.address})` : task.host);
    setText(this._devices, task.devices);
    setAttr(this._devices, 'title', task.devices);
    setText(this._state, task.state);
    setText(this._step, formatStep(task.global_step));
    setText(this._steps, formatRate(task.steps_per_sec));
    setText(this._examples, formatRate(task.examples_per_sec));
    const failed = task.state === 'dead' || task.state === 'unreachable';
    const error = task.error || (failed ? `${task.name} is ${task.state}` : '');
    setText(this._error, error);
    setHidden(this.errorRow, !error);
    setAttr(this.errorRow, 'data-state', task.state);
  }

  private _name: HTMLTableCellElement;
  private _host: HTMLTableCellElement;
  private _devices: HTMLTableCellElement;
  private _dot: HTMLSpanElement;
  private _state: HTMLSpanElement;
  private _step: HTMLTableCellElement;
  private _steps: HTMLTableCellElement;
  private _examples: HTMLTableCellElement;
  private _error: HTMLTableCellElement;
}

/** One cluster: `div.tfj-cluster[data-id]` with its header, buttons and task table. */
class ClusterView {
  readonly node: HTMLDivElement;

  constructor(id: string, actions: IClusterActions) {
    this.node = el('div', 'tfj-cluster');
    this.node.dataset.id = id;

    const header = el('div', 'tfj-cluster-header');
    const line1 = el('div', 'tfj-cluster-line');
    this._title = el('span', 'tfj-cluster-id', `cluster ${shortId(id)}`);
    this._title.title = id;
    this._state = el('span', 'tfj-cluster-state');
    this._engines = el('span', 'tfj-cluster-engines');
    this._age = el('span', 'tfj-cluster-age');
    line1.append(this._title, this._state, this._engines, this._age);

    const line2 = el('div', 'tfj-cluster-line');
    this._kernel = el('span', 'tfj-kernel');
    line2.append(this._kernel);

    const buttons = el('div', 'tfj-cluster-buttons');
    this._dashboard = button(
      'tfj-open-dashboard',
      'Dashboard',
      "Open this cluster's dashboard (%tf_dashboard --cluster) with the kernel that started it"
    );
    this._stop = button('tfj-stop', 'Stop', 'Stop this cluster: its engines and tasks end');
    this._forget = button('tfj-forget', 'Forget', 'Remove this entry from the list');
    this._dashboard.addEventListener('click', () => actions.dashboard(this._cluster!));
    this._stop.addEventListener('click', () => actions.stop(this._cluster!));
    this._forget.addEventListener('click', () => actions.forget(this._cluster!));
    buttons.append(this._dashboard, this._stop, this._forget);

    this._error = el('div', 'tfj-cluster-error');
    this._error.hidden = true;

    header.append(line1, line2, buttons);

    const table = el('table', 'tfj-tasks');
    const thead = el('thead');
    const headRow = el('tr');
    for (const col of TASK_COLUMNS) {
      const th = el('th', col.cls, col.label);
      th.title = col.title;
      headRow.append(th);
    }
    thead.append(headRow);
    this._tbody = el('tbody');
    table.append(thead, this._tbody);
    this._tableBox = el('div', 'tfj-tasks-scroll');
    this._tableBox.append(table);
    this._noTasks = el('div', 'tfj-no-tasks', 'no tasks');
    this._noTasks.hidden = true;

    this.node.append(header, this._error, this._tableBox, this._noTasks);
  }

  update(cluster: IClusterInfo, nowSec: number, pending: PendingAction): void {
    this._cluster = cluster;
    setAttr(this.node, 'data-state', cluster.state);
    setText(this._state, cluster.state);
    setAttr(this._state, 'data-state', cluster.state);
    setText(this._engines, cluster.engines ? `engines: ${cluster.engines}` : '');
    setText(this._age, formatAge(nowSec - cluster.created));
    setAttr(
      this._age,
      'title',
      cluster.created ? `started ${new Date(cluster.created * 1000).toLocaleString()}` : null
    );

    const k = cluster.kernel ?? { pid: null, kernel_id: '', alive: false };
    const who = k.kernel_id
      ? `kernel ${shortId(k.kernel_id)}` + (k.pid ? ` (pid ${k.pid})` : '')
      : k.pid
        ? `kernel pid ${k.pid}`
        : 'kernel unknown';
    setText(this._kernel, `${who} · ${k.alive ? 'alive' : 'gone'}`);
    setAttr(this._kernel, 'data-alive', k.alive ? 'true' : 'false');
    setAttr(this._kernel, 'title', k.kernel_id ? `kernel id ${k.kernel_id}` : null);

    setText(this._error, cluster.error || '');
    setHidden(this._error, !cluster.error);

    // Buttons.
    const live = cluster.state === 'running' || cluster.state === 'stopping';
    const stoppable = live || cluster.state === 'orphaned';
    const stopping = pending === 'stop' || cluster.state === 'stopping';
    setHidden(this._dashboard, !live);
    setHidden(this._stop, !stoppable);
    setDisabled(this._stop, stopping || pending === 'forget');
    setText(this._stop, stopping ? 'stopping…' : 'Stop');
    const forgettable = cluster.state === 'stopped' || cluster.state === 'orphaned';
    setHidden(this._forget, !forgettable);
    setDisabled(this._forget, pending !== undefined);
    setText(this._forget, pending === 'forget' ? 'forgetting…' : 'Forget');

    // Tasks, keyed by name.
    const seen = new Set<string>();
    const rows: HTMLElement[] = [];
    for (const task of cluster.tasks ?? []) {
      seen.add(task.name);
      let view = this._tasks.get(task.name);
      if (!view) {
        view = new TaskView(task.name);
        this._tasks.set(task.name, view);
      }
      view.update(task);
      rows.push(view.row, view.errorRow);
    }
    for (const name of Array.from(this._tasks.keys())) {
      if (!seen.has(name)) {
        this._tasks.delete(name);
      }
    }
    arrangeChildren(this._tbody, rows);
    const none = rows.length === 0;
    setHidden(this._tableBox, none);
    setHidden(this._noTasks, !none);
  }

  private _cluster: IClusterInfo | null = null;
  private _title: HTMLSpanElement;
  private _state: HTMLSpanElement;
  private _engines: HTMLSpanElement;
  private _age: HTMLSpanElement;
  private _kernel: HTMLSpanElement;
  private _error: HTMLDivElement;
  private _dashboard: HTMLButtonElement;
  private _stop: HTMLButtonElement;
  private _forget: HTMLButtonElement;
  private _tableBox: HTMLDivElement;
  private _tbody: HTMLTableSectionElement;
  private _noTasks: HTMLDivElement;
  private _tasks = new Map<string, TaskView>();
}

// ---------------------------------------------------------------------------------------
// The panel

export namespace ClusterPanel {
  export interface IOptions {
    app: JupyterFrontEnd;
    serverSettings: ServerConnection.ISettings;
    notebooks: INotebookTracker | null;
  }
}

/** The left-sidebar widget listing the tfjupyter clusters. */
export class ClusterPanel extends Widget implements IClusterActions {
  constructor(options: ClusterPanel.IOptions) {
    super();
    this._app = options.app;
    this._settings = options.serverSettings;
    this._notebooks = options.notebooks;

    this.id = PANEL_ID;
    this.addClass('tfj-panel');
    this.title.icon = clusterIcon;
    this.title.caption = 'tfjupyter clusters';

    const header = el('div', 'tfj-panel-header');
    const heading = el('h2', 'tfj-panel-title', 'tfjupyter clusters');
    this._refreshButton = button('tfj-refresh', '', 'Refresh now');
    this._refreshButton.setAttribute('aria-label', 'Refresh now');
    this._refreshButton.append(refreshIcon.element({ tag: 'span' }));
    this._refreshButton.addEventListener('click', () => {
      this._failures = 0;
      this.refresh();
    });
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
  }

  /** Refreshes now (or right after the request in flight), then keeps the usual pace. */
  refresh(): void {
    if (this.isDisposed) {
      return;
    }
    if (this._inFlight) {
      this._again = true;
      return;
    }
    this._clearTimer();
    void this._poll();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._clearTimer();
    this._clearNoticeTimer();
    document.removeEventListener('visibilitychange', this);
    super.dispose();
  }

  handleEvent(event: Event): void {
    if (event.type === 'visibilitychange') {
      if (this._active()) {
        this.refresh();
      } else {
        this._clearTimer();
      }
    }
  }

  // -- visibility: poll only while shown (a collapsed sidebar hides the widget) --

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    document.addEventListener('visibilitychange', this);
    if (this._active()) {
      this.refresh();
    }
  }

  protected onBeforeDetach(msg: Message): void {
    document.removeEventListener('visibilitychange', this);
    this._clearTimer();
    super.onBeforeDetach(msg);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._active()) {
      this.refresh();
    }
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._clearTimer();
  }

  private _active(): boolean {
    return !this.isDisposed && this.isVisible && !document.hidden;
  }

  // -- polling --

  private _clearTimer(): void {
    if (this._timer) {
      window.clearTimeout(this._timer);
      this._timer = 0;
    }
  }

  private _schedule(delayMs: number): void {
    this._clearTimer();
    if (!this._active()) {
      return; // resumes on show
    }
    this._timer = window.setTimeout(() => {
      this._timer = 0;
      void this._poll();
    }, delayMs);
  }

  private async _poll(): Promise<void> {
    if (this._inFlight || this.isDisposed) {
      return;
    }
    this._inFlight = true;
    let delay = REFRESH_MS;
    try {
      const data = await apiRequest<IClusterList>(this._settings, '', 'GET');
      if (!data || !Array.isArray(data.clusters)) {
        throw new ApiError('http', 200, 'unexpected answer from the tfjupyter server extension');
      }
      this._failures = 0;
      this._fetchError = '';
      this._everLoaded = true;
      this._renderClusters(data.clusters);
    } catch (reason) {
      this._failures += 1;
      delay = Math.min(REFRESH_MS * 2 ** (this._failures - 1), BACKOFF_MAX_MS);
      this._fetchError = this._describeFetchError(reason, delay);
    } finally {
      this._inFlight = false;
    }
    if (this.isDisposed) {
      return;
    }
    this._renderStatus();
    if (this._again) {
      this._again = false;
      delay = 0;
    }
    this._schedule(delay);
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
      view.update(cluster, now, this._pending.get(cluster.id));
      nodes.push(view.node);
    }
    for (const id of Array.from(this._views.keys())) {
      if (!seen.has(id)) {
        this._views.delete(id);
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
      this._setNotice(`Cluster ${short} stopped.`, 'info');
    } catch (reason) {
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
      await OutputArea.execute('%tf_dashboard --cluster', outputArea, sessionContext);
      if (busyNotice && this._notice === busyNotice) {
        this._setNotice('', 'info');
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
  private _dashboards = new Map<
    string,
    { widget: MainAreaWidget<OutputArea>; notebook: NotebookPanel }
  >();

  private _timer = 0;
  private _inFlight = false;
  private _again = false;
  private _failures = 0;
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
      notebooks
    });
    // The file browser is rank 100, running sessions 200: come right after the file browser.
    if (labShell) {
      labShell.add(panel, 'left', { rank: 150 });
    } else {
      app.shell.add(panel, 'left', { rank: 150 });
    }
    if (restorer) {
      restorer.add(panel, PANEL_ID);
    }
  }
};
