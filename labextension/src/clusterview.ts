// The cluster panel's rows: the REST API's shapes and the keyed DOM views of
// a cluster and its tasks. No JupyterLab imports, so jest tests them under jsdom.

// ---------------------------------------------------------------------------------------
// The REST API's shapes (tfjupyter/lab/server.py answers with them)

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

// The numbers come before host and devices so they stay in view in a narrow sidebar (the
// table scrolls sideways for the rest).
export const TASK_COLUMNS: ReadonlyArray<{ label: string; title: string; cls: string }> = [
  { label: 'task', title: 'job:index', cls: 'tfj-col-task' },
  { label: 'state', title: 'task state', cls: 'tfj-col-state' },
  { label: 'step', title: 'global step', cls: 'tfj-col-num' },
  { label: 'steps/s', title: 'steps per second', cls: 'tfj-col-num' },
  { label: 'ex/s', title: 'examples per second', cls: 'tfj-col-num' },
  { label: 'host', title: 'host (address)', cls: 'tfj-col-host' },
  { label: 'devices', title: 'devices of the task', cls: 'tfj-col-devices' }
];

// ---------------------------------------------------------------------------------------
// Formatting

export function shortId(id: string): string {
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
// The dashboard

/** Cluster ids the panel puts into code (registry ids are hex; anything else is refused). */
const CLUSTER_ID_RE = /^[A-Za-z0-9_-]+$/;

/**
 * The Python the owning kernel runs for the Dashboard button: a Dashboard of exactly this
 * cluster, displayed as the expression's result (LookupError if the kernel does not know it).
 * null if `id` is not a plain id.
 */
export function dashboardCode(id: string): string | null {
  if (typeof id !== 'string' || !CLUSTER_ID_RE.test(id)) {
    return null;
  }
  return `import tfjupyter.lab as _tfj_lab; _tfj_lab.cluster_dashboard("${id}")`;
}

// ---------------------------------------------------------------------------------------
// Small DOM helpers (write only what changed, so refreshes do not disturb the page)

export function el<K extends keyof HTMLElementTagNameMap>(
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

export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

export function setAttr(node: HTMLElement, name: string, value: string | null): void {
  if (value === null) {
    if (node.hasAttribute(name)) {
      node.removeAttribute(name);
    }
  } else if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}

export function setHidden(node: HTMLElement, hidden: boolean): void {
  if (node.hidden !== hidden) {
    node.hidden = hidden;
  }
}

export function setDisabled(node: HTMLButtonElement, disabled: boolean): void {
  if (node.disabled !== disabled) {
    node.disabled = disabled;
  }
}

/** Puts `nodes` in this order as the children of `parent`, moving only what is misplaced. */
export function arrangeChildren(parent: HTMLElement, nodes: HTMLElement[]): void {
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

export function button(className: string, label: string, title: string): HTMLButtonElement {
  const b = el('button', `tfj-button ${className}`, label);
  b.type = 'button';
  b.title = title;
  return b;
}

// ---------------------------------------------------------------------------------------
// Keyed views

/** What the panel is doing for a cluster (a request in flight). */
export type PendingAction = 'stop' | 'forget' | undefined;

export interface IClusterActions {
  /** Whether the Dashboard button is offered (the front end can open a dashboard tab). */
  readonly opensDashboards: boolean;
  stop(cluster: IClusterInfo): void;
  forget(cluster: IClusterInfo): void;
  dashboard(cluster: IClusterInfo): void;
}

/** One task: a `tr.tfj-task` row plus a `tr.tfj-task-error` row shown under it on error. */
export class TaskView {
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
export class ClusterView {
  readonly node: HTMLDivElement;

  constructor(id: string, actions: IClusterActions) {
    this._opensDashboards = actions.opensDashboards;
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
      "Open this cluster's dashboard, run by the kernel that started it"
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

  update(
    cluster: IClusterInfo,
    nowSec: number,
    pending: PendingAction,
    stopFailed = false
  ): void {
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

    // Buttons. A stop under way disables Stop, unless the cluster reports an error: a failed
    // stop leaves it "stopping" with the error, and the user can try again ("Retry stop"),
    // as after a stop request of this panel that failed.
    const live = cluster.state === 'running' || cluster.state === 'stopping';
    const stoppable = live || cluster.state === 'orphaned';
    const stopping = pending === 'stop' || (cluster.state === 'stopping' && !cluster.error);
    const retry = stopFailed || (cluster.state === 'stopping' && !!cluster.error);
    setHidden(this._dashboard, !live || !this._opensDashboards);
    setHidden(this._stop, !stoppable);
    setDisabled(this._stop, stopping || pending === 'forget');
    setText(this._stop, stopping ? 'stopping…' : retry ? 'Retry stop' : 'Stop');
    setAttr(
      this._stop,
      'title',
      retry && !stopping
        ? 'Try again to stop this cluster: its engines and tasks end'
        : 'Stop this cluster: its engines and tasks end'
    );
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
  private _opensDashboards: boolean;
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
