// The graph view's model: the document of application/vnd.tfjupyter.graph+json (built by
// tfjupyter/lab/graph.py)
// turned into TensorBoard's name-scope hierarchy, the expanded/collapsed state, the visible
// graph (leaves, clusters, aggregated edges) and the input dagre lays out.
//
// Pure TypeScript on purpose: no DOM, no JupyterLab, no dagre. The view (view.ts) lays out
// and draws what `layoutInput()` describes; the tests run this file directly under jest.

export const MIME_TYPE = 'application/vnd.tfjupyter.graph+json';

/** Fill of ops without an assigned device (and of groups whose ops mostly have none). */
export const UNPLACED_COLOR = '#c8c8c8';
/** A level (a group's children) holding more than this many nodes is grouped further. */
export const MAX_CHILDREN = 100;
/** A graph with at most this many ops starts fully expanded. */
export const SMALL_GRAPH_OPS = 60;
/** "Expand all" is offered up to this many ops. */
export const EXPAND_ALL_MAX_OPS = 1500;
/** A name series ("add", "add_1", "add_2"...) becomes one node from this many members. */
export const SERIES_MIN = 3;
/** An op-type group is made from this many ops of one type. */
export const TYPE_GROUP_MIN = 2;

// ---------------------------------------------------------------------------------------
// The JSON document (tfjupyter/lab/graph.py)

export type CrossKind = 'none' | 'device' | 'task';

export interface IDeviceDoc {
  name: string;
  short: string;
  task: string;
  type: string;
  color: string;
  ops: number;
}

export interface IOutputDoc {
  dtype: string;
  shape: string;
}

export interface INodeDoc {
  name: string;
  type: string;
  device: string;
  requested: string;
  reason: string;
  soft: boolean;
  inputs: string[];
  outputs: IOutputDoc[];
  attrs: { [key: string]: string };
}

export interface IGraphDoc {
  version: number;
  title: string;
  placed: boolean;
  truncated: boolean;
  total_ops: number;
  devices: IDeviceDoc[];
  nodes: INodeDoc[];
  // No `edges`: each edge is in its target's `inputs`; deriveEdges() rebuilds them.
}

/** An edge derived from a node's `inputs` (deriveEdges). */
export interface IGraphEdge {
  /** Op names. */
  source: string;
  target: string;
  /** The tensor carried ("x:0"); "" for a control edge. */
  tensor: string;
  control: boolean;
  /** Ends on different tasks ("task": a _Send/_Recv pair in TF), on different devices of one
   * task ("device": a copy), or neither ("none": same device, or an end not placed). */
  cross: CrossKind;
}

// ---------------------------------------------------------------------------------------
// The hierarchy

/**
 * What a group stands for: a name scope, a series of like-named siblings ("add[0-57]"),
 * the ops of one type at a crowded level, or a slice of a crowded level/synthetic group.
 */
export type GroupKind = 'scope' | 'series' | 'type' | 'range';

export interface IOp {
  /** Layout/DOM id: "o" + index. */
  id: string;
  index: number;
  name: string;
  /** The last component of the name. */
  label: string;
  type: string;
  device: string;
  soft: boolean;
  /** Index of the enclosing group (0 = the root). */
  parent: number;
  doc: INodeDoc;
}

export interface IGroup {
  /** Layout/DOM id: "g" + index; the root is "g0". */
  id: string;
  index: number;
  kind: GroupKind;
  /** Name scope path ("a/b"); for synthetic groups the parent's path + "/" + label. */
  path: string;
  label: string;
  /** Index of the enclosing group; -1 for the root. */
  parent: number;
  /** Child ids, ops ("o…") and groups ("g…") mixed, in document order. */
  children: string[];
  /** Ops inside, at any depth. */
  opCount: number;
  /** Ops inside per assigned device ("" = not placed). */
  deviceCounts: Map<string, number>;
  softCount: number;
}

export interface IDeviceInfo {
  name: string;
  short: string;
  color: string;
  /** Ops of this graph assigned to the device (counted here, not taken from the doc). */
  ops: number;
  /** Position in the document's device order (unplaced last). */
  order: number;
}

export interface ICompositionPart {
  device: string;
  short: string;
  color: string;
  count: number;
  fraction: number;
}

// ---------------------------------------------------------------------------------------
// The visible graph and the layout input

export interface IVisibleEdge {
  /** "<source id>><target id>" */
  id: string;
  source: string;
  target: string;
  /** Graph edges aggregated into this one. */
  count: number;
  dataCount: number;
  controlCount: number;
  /** Every aggregated edge is a control edge. */
  controlOnly: boolean;
  /** The strongest cross kind among them: task > device > none. */
  cross: CrossKind;
  /** A few of the tensors carried (for tooltips). */
  tensors: string[];
}

export interface IVisibleGraph {
  /** Leaves drawn as nodes: ops and collapsed groups. */
  nodes: string[];
  /** Expanded groups other than the root, drawn as boxes around their children, outer first. */
  clusters: string[];
  edges: IVisibleEdge[];
  /** For each op index, the id of the visible node standing for it. */
  representative: string[];
}

export interface ILayoutNode {
  id: string;
  width: number;
  height: number;
  /** The enclosing cluster's id, absent at the top level. */
  parent?: string;
}

export interface ILayoutCluster {
  id: string;
  parent?: string;
  /** Room for the cluster's header (its label and the collapse button). */
  minWidth: number;
}

export interface ILayoutEdge {
  id: string;
  source: string;
  target: string;
  weight: number;
  /** Label box (edges across tasks are labelled "_Send/_Recv"). */
  label?: string;
  width?: number;
  height?: number;
}

export interface ILayoutInput {
  graph: {
    rankdir: 'TB';
    nodesep: number;
    ranksep: number;
    edgesep: number;
    marginx: number;
    marginy: number;
  };
  nodes: ILayoutNode[];
  clusters: ILayoutCluster[];
  edges: ILayoutEdge[];
}

export interface IOpDetails {
  kind: 'op';
  name: string;
  type: string;
  device: string;
  deviceShort: string;
  color: string;
  requested: string;
  reason: string;
  soft: boolean;
  inputs: { name: string; op: string; control: boolean }[];
  outputs: IOutputDoc[];
  attrs: [string, string][];
}

export interface IGroupDetails {
  kind: 'group';
  groupKind: GroupKind;
  path: string;
  label: string;
  opCount: number;
  childCount: number;
  softCount: number;
  expanded: boolean;
  composition: ICompositionPart[];
}

// Sizes (px) the layout input gives nodes; the view draws with the same numbers.
export const OP_HEIGHT = 26;
export const GROUP_HEIGHT = 44;
const CHAR_WIDTH = 7;
const OP_MIN_WIDTH = 50;
const OP_MAX_WIDTH = 240;
const GROUP_MIN_WIDTH = 96;
const GROUP_MAX_WIDTH = 270;
/** Labels longer than this are cut with an ellipsis. */
export const MAX_LABEL_CHARS = 32;
export const SEND_RECV_LABEL = '_Send/_Recv';

const CROSS_RANK: { [k in CrossKind]: number } = { none: 0, device: 1, task: 2 };
/**
 * Colors for devices the document lists without a usable color, or does not list: the same
 * palette as Python's tfjupyter/lab/graph.py PALETTE. Category10 without its red (#d62728:
 * soft placement, cross-task edges) and its grey (#7f7f7f: too close to the unplaced grey),
 * then the light halves of Category20 by the same rule.
 */
export const DEVICE_PALETTE: readonly string[] = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#bcbd22',
  '#17becf',
  '#aec7e8',
  '#ffbb78',
  '#98df8a',
  '#c5b0d5',
  '#c49c94',
  '#f7b6d2',
  '#dbdb8d',
  '#9edae5'
];

// ---------------------------------------------------------------------------------------
// Small helpers (exported for the view and the tests)

/** Cut a label to `max` characters with an ellipsis. */
export function shortLabel(text: string, max = MAX_LABEL_CHARS): string {
  return text.length <= max ? text : text.slice(0, max - 1) + '\u2026';
}

/** A color usable in an SVG attribute or a style, else `fallback` (never pass doc text on). */
export function safeColor(color: unknown, fallback = UNPLACED_COLOR): string {
  if (typeof color !== 'string') {
    return fallback;
  }
  const c = color.trim();
  if (/^#[0-9a-fA-F]{3,8}$/.test(c) || /^[a-zA-Z]{3,20}$/.test(c)) {
    return c;
  }
  if (/^rgba?\(\s*[\d.%\s,]+\)$/.test(c)) {
    return c;
  }
  return fallback;
}

/** Black or white, whichever reads better on `color` (a "#rgb"/"#rrggbb" color). */
export function contrastText(color: string): string {
  let hex = color.startsWith('#') ? color.slice(1) : '';
  if (hex.length === 3 || hex.length === 4) {
    hex = hex
      .slice(0, 3)
      .split('')
      .map(c => c + c)
      .join('');
  }
  if (hex.length < 6) {
    return '#1a1a1a';
  }
  const channel = (i: number) => {
    const v = parseInt(hex.slice(i, i + 2), 16) / 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  const luminance = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
  return luminance > 0.3 ? '#1a1a1a' : '#ffffff';
}

/** The op an input ("x:0", "^init", "x") reads. */
export function inputOpName(input: string): { op: string; control: boolean } {
  if (input.startsWith('^')) {
    return { op: input.slice(1), control: true };
  }
  const m = /^(.*):(\d+)$/.exec(input);
  return { op: m ? m[1] : input, control: false };
}

/** Width of a node showing `label` (and, for groups, a second line `sub`). */
export function nodeWidth(kind: 'op' | 'group', label: string, sub = ''): number {
  const text = shortLabel(label).length;
  if (kind === 'op') {
    return clamp(Math.round(text * CHAR_WIDTH + 24), OP_MIN_WIDTH, OP_MAX_WIDTH);
  }
  // room for the +/- button on the right
  const chars = Math.max(text, Math.ceil(sub.length * 0.85));
  return clamp(Math.round(chars * CHAR_WIDTH + 48), GROUP_MIN_WIDTH, GROUP_MAX_WIDTH);
}

/** Width a cluster (expanded group) box needs for its header: "label · N ops" and the button. */
export function clusterMinWidth(label: string, opCount: number): number {
  return clamp(Math.round(clusterHeader(label, opCount).length * 6.5 + 40), 80, 320);
}

/** The header of an expanded group. */
export function clusterHeader(label: string, opCount: number): string {
  return `${shortLabel(label)} \u00b7 ${opCount} op${opCount === 1 ? '' : 's'}`;
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

/** Read a document defensively: every key is filled in even if a producer left it out. */
export function normalizeDoc(raw: unknown): IGraphDoc {
  const d = (raw && typeof raw === 'object' ? raw : {}) as { [k: string]: unknown };
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const obj = (v: unknown): { [k: string]: unknown } =>
    v && typeof v === 'object' && !Array.isArray(v) ? (v as { [k: string]: unknown }) : {};
  const nodes: INodeDoc[] = list(d.nodes).map(x => {
    const n = obj(x);
    const attrs: { [key: string]: string } = {};
    for (const [k, v] of Object.entries(obj(n.attrs))) {
      attrs[k] = str(v);
    }
    return {
      name: str(n.name),
      type: str(n.type),
      device: str(n.device),
      requested: str(n.requested),
      reason: str(n.reason),
      soft: n.soft === true,
      inputs: list(n.inputs).map(str),
      outputs: list(n.outputs).map(o => ({
        dtype: str(obj(o).dtype),
        shape: str(obj(o).shape)
      })),
      attrs
    };
  });
  return {
    version: typeof d.version === 'number' ? d.version : 1,
    title: str(d.title),
    placed: d.placed === true,
    truncated: d.truncated === true,
    total_ops: typeof d.total_ops === 'number' ? d.total_ops : nodes.length,
    devices: list(d.devices).map(x => {
      const v = obj(x);
      return {
        name: str(v.name),
        short: str(v.short),
        task: str(v.task),
        type: str(v.type),
        color: str(v.color),
        ops: typeof v.ops === 'number' ? v.ops : 0
      };
    }),
    nodes
    // an `edges` array (the document's first form) is ignored: edges come from `inputs`
  };
}

/** The task of each device the document lists, as the producer named it. */
export function deviceTasks(devices: readonly IDeviceDoc[]): Map<string, string> {
  return new Map(devices.filter(d => d.name && d.task).map(d => [d.name, d.task]));
}

/**
 * How an edge between ops on these devices ("" = not placed) crosses them. Tasks come from the
 * document (`tasks`, see deviceTasks): the producer (tfjupyter/lab/graph.py) knows them, so the
 * renderer does not parse device names. Of a device it does not list only "another device" is
 * certain.
 */
export function crossKind(
  sourceDevice: string,
  targetDevice: string,
  tasks: ReadonlyMap<string, string>
): CrossKind {
  if (!sourceDevice || !targetDevice || sourceDevice === targetDevice) {
    return 'none';
  }
  const a = tasks.get(sourceDevice);
  const b = tasks.get(targetDevice);
  return a && b && a !== b ? 'task' : 'device';
}

/**
 * The graph's edges, from the nodes' `inputs`: "x:k" is a data edge from op x carrying tensor
 * "x:k" (a bare "x" is "x:0", as in a TF NodeDef), "^x" a control edge. Inputs from ops that are
 * not among `nodes` (beyond a truncated document, or fed) are skipped, as are self-edges; as in
 * the model, nameless nodes are ignored and of nodes sharing a name only the first counts.
 * Ordered by node, then by input.
 */
export function deriveEdges(
  nodes: readonly INodeDoc[],
  tasks: ReadonlyMap<string, string>
): IGraphEdge[] {
  const device = new Map<string, string>();
  for (const n of nodes) {
    if (n.name && !device.has(n.name)) {
      device.set(n.name, n.device);
    }
  }
  const edges: IGraphEdge[] = [];
  const seen = new Set<string>();
  for (const n of nodes) {
    if (!n.name || seen.has(n.name)) {
      continue;
    }
    seen.add(n.name);
    for (const input of n.inputs) {
      const { op, control } = inputOpName(input);
      const source = device.get(op);
      if (source === undefined || op === n.name) {
        continue;
      }
      edges.push({
        source: op,
        target: n.name,
        tensor: control ? '' : op === input ? `${op}:0` : input,
        control,
        cross: crossKind(source, n.device, tasks)
      });
    }
  }
  return edges;
}

// ---------------------------------------------------------------------------------------
// The model

interface IGraphEdgeRec {
  source: number;
  target: number;
  tensor: string;
  control: boolean;
  cross: CrossKind;
}

export interface IGraphModelOptions {
  /** Levels with more children than this are grouped (default MAX_CHILDREN). */
  maxChildren?: number;
  /** Graphs up to this many ops start fully expanded (default SMALL_GRAPH_OPS). */
  smallGraphOps?: number;
}

export class GraphModel {
  readonly doc: IGraphDoc;
  readonly ops: IOp[] = [];
  readonly groups: IGroup[] = [];
  readonly devices = new Map<string, IDeviceInfo>();
  readonly maxChildren: number;

  constructor(raw: IGraphDoc | unknown, options: IGraphModelOptions = {}) {
    this.doc = normalizeDoc(raw);
    this.maxChildren = Math.max(2, options.maxChildren ?? MAX_CHILDREN);
    this._buildDevices();
    this._buildHierarchy();
    this._groupCrowdedLevels();
    this._count(0);
    this._buildEdges();
    const small = options.smallGraphOps ?? SMALL_GRAPH_OPS;
    if (this.ops.length <= small) {
      this.expandAll();
    }
  }

  get root(): IGroup {
    return this.groups[0];
  }

  /** Whether "Expand all" is offered (not above EXPAND_ALL_MAX_OPS ops). */
  get canExpandAll(): boolean {
    return this.ops.length <= EXPAND_ALL_MAX_OPS;
  }

  get unplacedCount(): number {
    return this.root.deviceCounts.get('') ?? 0;
  }

  get softCount(): number {
    return this.root.softCount;
  }

  /** Devices in the document's order, each with this graph's op count. */
  deviceList(): IDeviceInfo[] {
    return [...this.devices.values()]
      .filter(d => d.name !== '')
      .sort((a, b) => a.order - b.order);
  }

  device(name: string): IDeviceInfo {
    const known = this.devices.get(name);
    if (known) {
      return known;
    }
    // a device the document did not list: its full name, a stable color from the palette
    const order = this.devices.size;
    const info: IDeviceInfo = {
      name,
      short: name || 'not placed',
      color: name ? DEVICE_PALETTE[order % DEVICE_PALETTE.length] : UNPLACED_COLOR,
      ops: 0,
      order: name ? order : Number.MAX_SAFE_INTEGER
    };
    this.devices.set(name, info);
    return info;
  }

  deviceColor(name: string): string {
    return name ? this.device(name).color : UNPLACED_COLOR;
  }

  // ---- lookups

  opByName(name: string): IOp | undefined {
    const i = this._opIndex.get(name);
    return i === undefined ? undefined : this.ops[i];
  }

  groupByPath(path: string): IGroup | undefined {
    const i = this._groupIndex.get(path);
    return i === undefined ? undefined : this.groups[i];
  }

  /** The op or group behind a layout/DOM id ("o12", "g3"). */
  item(id: string): IOp | IGroup | undefined {
    const i = Number(id.slice(1));
    if (!Number.isInteger(i) || i < 0) {
      return undefined;
    }
    return id[0] === 'o' ? this.ops[i] : id[0] === 'g' ? this.groups[i] : undefined;
  }

  isGroupId(id: string): boolean {
    return id[0] === 'g';
  }

  /** The groups enclosing an op or a group, outermost first, without the root. */
  ancestors(id: string): IGroup[] {
    const item = this.item(id);
    const out: IGroup[] = [];
    let p = item ? item.parent : -1;
    while (p > 0) {
      out.push(this.groups[p]);
      p = this.groups[p].parent;
    }
    return out.reverse();
  }

  /** Ops whose name contains `query` (case-insensitive), exact match first. */
  search(query: string, limit = 20): IOp[] {
    const q = query.trim();
    if (!q) {
      return [];
    }
    const exact = this.opByName(q);
    const out: IOp[] = exact ? [exact] : [];
    const lower = q.toLowerCase();
    for (const op of this.ops) {
      if (out.length >= limit) {
        break;
      }
      if (op !== exact && op.name.toLowerCase().includes(lower)) {
        out.push(op);
      }
    }
    return out;
  }

  // ---- expanded state

  isExpanded(groupIndex: number): boolean {
    return groupIndex === 0 || this._expanded.has(groupIndex);
  }

  setExpanded(groupIndex: number, expanded: boolean): void {
    if (groupIndex <= 0 || groupIndex >= this.groups.length) {
      return;
    }
    if (expanded) {
      this._expanded.add(groupIndex);
    } else {
      this._expanded.delete(groupIndex);
    }
  }

  toggle(groupIndex: number): boolean {
    const now = !this.isExpanded(groupIndex);
    this.setExpanded(groupIndex, now);
    return now;
  }

  expandAll(): void {
    for (let i = 1; i < this.groups.length; i++) {
      this._expanded.add(i);
    }
  }

  collapseAll(): void {
    this._expanded.clear();
  }

  /**
   * Expand every group enclosing the op (or group) `id` so it is visible; returns the id.
   */
  reveal(id: string): string {
    for (const g of this.ancestors(id)) {
      this._expanded.add(g.index);
    }
    return id;
  }

  // ---- the visible graph

  visibleGraph(): IVisibleGraph {
    const nodes: string[] = [];
    const clusters: string[] = [];
    const representative: string[] = new Array(this.ops.length);
    // walk the hierarchy; below a collapsed group every op is represented by that group
    const visit = (g: IGroup, rep: string | null) => {
      for (const child of g.children) {
        if (child[0] === 'o') {
          representative[Number(child.slice(1))] = rep ?? child;
          if (rep === null) {
            nodes.push(child);
          }
          continue;
        }
        const sub = this.groups[Number(child.slice(1))];
        if (rep !== null) {
          visit(sub, rep);
        } else if (this._expanded.has(sub.index)) {
          clusters.push(child);
          visit(sub, null);
        } else {
          nodes.push(child);
          visit(sub, child);
        }
      }
    };
    visit(this.root, null);

    const byKey = new Map<string, IVisibleEdge>();
    for (const e of this._edges) {
      const s = representative[e.source];
      const t = representative[e.target];
      if (s === t) {
        continue; // inside one collapsed group
      }
      const key = s + '>' + t;
      let agg = byKey.get(key);
      if (!agg) {
        agg = {
          id: key,
          source: s,
          target: t,
          count: 0,
          dataCount: 0,
          controlCount: 0,
          controlOnly: true,
          cross: 'none',
          tensors: []
        };
        byKey.set(key, agg);
      }
      agg.count++;
      if (e.control) {
        agg.controlCount++;
      } else {
        agg.dataCount++;
        agg.controlOnly = false;
        if (agg.tensors.length < 5 && e.tensor && !agg.tensors.includes(e.tensor)) {
          agg.tensors.push(e.tensor);
        }
      }
      if (CROSS_RANK[e.cross] > CROSS_RANK[agg.cross]) {
        agg.cross = e.cross;
      }
    }
    return { nodes, clusters, edges: [...byKey.values()], representative };
  }

  /** The id of the visible node an op is drawn in (itself, or its outermost collapsed group). */
  visibleIdOf(opIndex: number): string {
    let rep = this.ops[opIndex].id;
    let p = this.ops[opIndex].parent;
    while (p > 0) {
      if (!this._expanded.has(p)) {
        rep = this.groups[p].id;
      }
      p = this.groups[p].parent;
    }
    return rep;
  }

  /** What dagre lays out: visible leaves with sizes, clusters with parents, edges. */
  layoutInput(visible: IVisibleGraph = this.visibleGraph()): ILayoutInput {
    const parentOf = (id: string): string | undefined => {
      const item = this.item(id);
      return item && item.parent > 0 ? this.groups[item.parent].id : undefined;
    };
    const nodes: ILayoutNode[] = visible.nodes.map(id => {
      const size = this.nodeSize(id);
      const node: ILayoutNode = { id, width: size.width, height: size.height };
      const parent = parentOf(id);
      if (parent !== undefined) {
        node.parent = parent;
      }
      return node;
    });
    const clusters: ILayoutCluster[] = visible.clusters.map(id => {
      const parent = parentOf(id);
      const g = this.item(id) as IGroup;
      const minWidth = clusterMinWidth(g.label, g.opCount);
      return parent === undefined ? { id, minWidth } : { id, parent, minWidth };
    });
    const edges: ILayoutEdge[] = visible.edges.map(e => {
      const out: ILayoutEdge = {
        id: e.id,
        source: e.source,
        target: e.target,
        weight: e.controlOnly ? 1 : 2
      };
      if (e.cross === 'task') {
        out.label = edgeLabel(e);
        out.width = Math.round(out.label.length * 6 + 10);
        out.height = 14;
      }
      return out;
    });
    return {
      graph: { rankdir: 'TB', nodesep: 22, ranksep: 44, edgesep: 10, marginx: 16, marginy: 16 },
      nodes,
      clusters,
      edges
    };
  }

  /** The box a visible leaf gets. */
  nodeSize(id: string): { width: number; height: number } {
    const item = this.item(id);
    if (!item) {
      return { width: OP_MIN_WIDTH, height: OP_HEIGHT };
    }
    if (id[0] === 'o') {
      return { width: nodeWidth('op', item.label), height: OP_HEIGHT };
    }
    return {
      width: nodeWidth('group', item.label, groupSubtitle(item as IGroup)),
      height: GROUP_HEIGHT
    };
  }

  // ---- device composition and details

  /** Ops per device of a group, most first (ties in device order). */
  composition(groupIndex: number): ICompositionPart[] {
    const g = this.groups[groupIndex];
    const parts: ICompositionPart[] = [];
    for (const [device, count] of g.deviceCounts) {
      const info = this.device(device);
      parts.push({
        device,
        short: device ? info.short : 'not placed',
        color: device ? info.color : UNPLACED_COLOR,
        count,
        fraction: g.opCount ? count / g.opCount : 0
      });
    }
    parts.sort(
      (a, b) => b.count - a.count || this.device(a.device).order - this.device(b.device).order
    );
    return parts;
  }

  /** The device most of a group's ops are on ("" if most are not placed, or it is empty). */
  majorityDevice(groupIndex: number): string {
    const parts = this.composition(groupIndex);
    return parts.length ? parts[0].device : '';
  }

  /** The device a visible node is drawn as (its data-device): an op's, a group's majority. */
  deviceOf(id: string): string {
    const item = this.item(id);
    if (!item) {
      return '';
    }
    return id[0] === 'o' ? (item as IOp).device : this.majorityDevice(item.index);
  }

  /** The fill of a visible node: the color of `deviceOf(id)` (unplaced grey for ""). */
  fillOf(id: string): string {
    return this.deviceColor(this.deviceOf(id));
  }

  opDetails(index: number): IOpDetails {
    const op = this.ops[index];
    const d = op.doc;
    return {
      kind: 'op',
      name: op.name,
      type: op.type,
      device: op.device,
      deviceShort: op.device ? this.device(op.device).short : '',
      color: this.deviceColor(op.device),
      requested: d.requested,
      reason: d.reason,
      soft: op.soft,
      inputs: d.inputs.map(name => ({ name, ...inputOpName(name) })),
      outputs: d.outputs,
      attrs: Object.entries(d.attrs)
    };
  }

  groupDetails(index: number): IGroupDetails {
    const g = this.groups[index];
    return {
      kind: 'group',
      groupKind: g.kind,
      path: g.path,
      label: g.label,
      opCount: g.opCount,
      childCount: g.children.length,
      softCount: g.softCount,
      expanded: this.isExpanded(index),
      composition: this.composition(index)
    };
  }

  // ---- building

  private _buildDevices(): void {
    this.doc.devices.forEach((d, order) => {
      if (!d.name || this.devices.has(d.name)) {
        return;
      }
      this.devices.set(d.name, {
        name: d.name,
        short: d.short || d.name,
        color: safeColor(d.color, DEVICE_PALETTE[order % DEVICE_PALETTE.length]),
        ops: 0,
        order
      });
    });
  }

  private _newGroup(kind: GroupKind, path: string, label: string, parent: number): IGroup {
    const index = this.groups.length;
    const g: IGroup = {
      id: 'g' + index,
      index,
      kind,
      path,
      label,
      parent,
      children: [],
      opCount: 0,
      deviceCounts: new Map(),
      softCount: 0
    };
    this.groups.push(g);
    if (!this._groupIndex.has(path)) {
      this._groupIndex.set(path, index);
    }
    return g;
  }

  private _scope(path: string): number {
    const known = this._scopeIndex.get(path);
    if (known !== undefined) {
      return known;
    }
    const cut = path.lastIndexOf('/');
    const parent = cut < 0 ? 0 : this._scope(path.slice(0, cut));
    const g = this._newGroup('scope', path, path.slice(cut + 1), parent);
    this._scopeIndex.set(path, g.index);
    this.groups[parent].children.push(g.id);
    return g.index;
  }

  private _buildHierarchy(): void {
    const root = this._newGroup('scope', '', '', -1);
    this._scopeIndex.set('', root.index);
    const seen = new Set<string>();
    const docs = this.doc.nodes.filter(n => {
      // names are unique in a graph; keep the first if a producer repeats one
      if (!n.name || seen.has(n.name)) {
        return false;
      }
      seen.add(n.name);
      return true;
    });
    // every scope first: an op "w" sits inside group "w" whenever "w/…" exists
    for (const n of docs) {
      const cut = n.name.lastIndexOf('/');
      if (cut > 0) {
        this._scope(n.name.slice(0, cut));
      }
    }
    // groups created so far are scopes; ops go to their scope, or into the scope of their name
    const groupChildren = this.groups.map(g => g.children);
    const opChildren: string[][] = this.groups.map(() => []);
    docs.forEach((n, index) => {
      const cut = n.name.lastIndexOf('/');
      const own = this._scopeIndex.get(n.name);
      const parent = own ?? (cut > 0 ? this._scopeIndex.get(n.name.slice(0, cut))! : 0);
      const op: IOp = {
        id: 'o' + index,
        index,
        name: n.name,
        label: n.name.slice(cut + 1),
        type: n.type,
        device: n.device,
        soft: n.soft,
        parent,
        doc: n
      };
      this.ops.push(op);
      this._opIndex.set(n.name, index);
      opChildren[parent].push(op.id);
    });
    // in each scope: an op named like the scope first, then sub-scopes, then the other ops
    this.groups.forEach((g, i) => {
      const own = opChildren[i].filter(id => this.ops[Number(id.slice(1))].name === g.path);
      const rest = opChildren[i].filter(id => this.ops[Number(id.slice(1))].name !== g.path);
      g.children = [...own, ...groupChildren[i], ...rest];
    });
  }

  /** TensorBoard's answer to crowded levels: series, then op types, then plain slices. */
  private _groupCrowdedLevels(): void {
    // only the scopes that exist now; synthetic groups made below are sliced where needed
    const scopes = this.groups.length;
    for (let i = 0; i < scopes; i++) {
      const g = this.groups[i];
      if (g.children.length <= this.maxChildren) {
        continue;
      }
      this._groupSeries(g);
      if (g.children.length > this.maxChildren) {
        this._groupTypes(g);
      }
      if (g.children.length > this.maxChildren) {
        this._slice(g, g.children.length, () => '');
      }
    }
  }

  private _labelOf(id: string): string {
    return this.item(id)!.label;
  }

  private _setParent(childId: string, parent: number): void {
    this.item(childId)!.parent = parent;
  }

  /** Replace `members` among `g`'s children by one new group (at the first member's place). */
  private _wrap(
    g: IGroup,
    members: string[],
    kind: GroupKind,
    label: string
  ): IGroup {
    const sub = this._newGroup(kind, g.path ? g.path + '/' + label : label, label, g.index);
    const set = new Set(members);
    const first = g.children.findIndex(id => set.has(id));
    const kept: string[] = [];
    g.children.forEach((id, i) => {
      if (i === first) {
        kept.push(sub.id);
      }
      if (!set.has(id)) {
        kept.push(id);
      }
    });
    g.children = kept;
    sub.children = members;
    for (const m of members) {
      this._setParent(m, sub.index);
    }
    return sub;
  }

  private _groupSeries(g: IGroup): void {
    // TensorBoard's series: TF's unique names "add", "add_1", ... "add_57" -> "add[0-57]";
    // then other names that differ only in their last number ("op0" ... "op99" ->
    // "op[0-99]"). Ops and groups make separate series.
    interface IBucket {
      prefix: string;
      suffix: string;
      members: [string, number][];
    }
    const add = (map: Map<string, IBucket>, key: string, prefix: string, suffix: string) => {
      let b = map.get(key);
      if (!b) {
        b = { prefix, suffix, members: [] };
        map.set(key, b);
      }
      return b;
    };
    const unique = new Map<string, IBucket>();
    const rest: [string, string][] = [];
    for (const id of g.children) {
      const label = this._labelOf(id);
      const m = /^(.+)_(\d+)$/.exec(label);
      if (m) {
        add(unique, id[0] + '\u0000' + m[1], m[1], '').members.push([id, Number(m[2])]);
      } else {
        rest.push([id, label]);
      }
    }
    const numbered = new Map<string, IBucket>();
    for (const [id, label] of rest) {
      const own = unique.get(id[0] + '\u0000' + label);
      if (own) {
        own.members.push([id, 0]); // "add" is number 0 of "add_1", "add_2"...
        continue;
      }
      const m = /^(.*?)(\d+)(\D*)$/.exec(label);
      if (m) {
        const key = id[0] + '\u0000' + m[1] + '\u0000' + m[3];
        add(numbered, key, m[1], m[3]).members.push([id, Number(m[2])]);
      }
    }
    for (const b of [...unique.values(), ...numbered.values()]) {
      if (b.members.length < SERIES_MIN) {
        continue;
      }
      b.members.sort((x, y) => x[1] - y[1]);
      const members = b.members.map(x => x[0]);
      const numbers = b.members.map(x => x[1]);
      const name = (from: number, to: number) =>
        seriesLabel(b.prefix, numbers[from], numbers[to], b.suffix);
      const sub = this._wrap(g, members, 'series', name(0, members.length - 1));
      this._slice(sub, members.length, name);
    }
  }

  private _groupTypes(g: IGroup): void {
    const byType = new Map<string, string[]>();
    for (const id of g.children) {
      if (id[0] !== 'o') {
        continue;
      }
      const type = this.ops[Number(id.slice(1))].type || '?';
      const list = byType.get(type);
      if (list) {
        list.push(id);
      } else {
        byType.set(type, [id]);
      }
    }
    // the biggest types first, so the fewest groups are needed
    const types = [...byType.entries()].sort((a, b) => b[1].length - a[1].length);
    for (const [type, members] of types) {
      if (g.children.length <= this.maxChildren) {
        break;
      }
      if (members.length < TYPE_GROUP_MIN) {
        continue;
      }
      const sub = this._wrap(g, members, 'type', `${type} (${members.length})`);
      this._slice(sub, members.length, (from, to) => `${type} (${from + 1}-${to + 1})`);
    }
  }

  /**
   * Split a group's children into slices of equal size (they differ by one at most) so no
   * level has more than maxChildren: ceil(n / maxChildren) slices while that is at most
   * maxChildren (101 ops: 51 + 50, not 100 + 1), else as few slices of slices as it takes.
   * `label(from, to)` names the slice of children from..to.
   */
  private _slice(g: IGroup, n: number, label: (from: number, to: number) => string): void {
    if (n <= this.maxChildren) {
      return;
    }
    // the capacity of one slice: maxChildren, or a power of it for very crowded levels
    let capacity = this.maxChildren;
    while (Math.ceil(n / capacity) > this.maxChildren) {
      capacity *= this.maxChildren;
    }
    const count = Math.ceil(n / capacity);
    const base = Math.floor(n / count);
    const longer = n % count; // the first `longer` slices get one more child
    const children = g.children;
    g.children = [];
    let from = 0;
    for (let i = 0; i < count; i++) {
      const to = from + base + (i < longer ? 1 : 0) - 1;
      const part = children.slice(from, to + 1);
      let name = label(from, to);
      if (!name) {
        name = `${shortLabel(this._labelOf(part[0]), 12)} \u2026 ${shortLabel(
          this._labelOf(part[part.length - 1]),
          12
        )}`;
      }
      const sub = this._newGroup('range', g.path ? g.path + '/' + name : name, name, g.index);
      sub.children = part;
      for (const m of part) {
        this._setParent(m, sub.index);
      }
      g.children.push(sub.id);
      const start = from;
      this._slice(sub, part.length, (f, t) => label(start + f, start + t));
      from = to + 1;
    }
  }

  /** Op counts, device counts and soft counts, bottom-up. */
  private _count(index: number): void {
    const g = this.groups[index];
    g.opCount = 0;
    g.softCount = 0;
    g.deviceCounts = new Map();
    for (const id of g.children) {
      if (id[0] === 'o') {
        const op = this.ops[Number(id.slice(1))];
        g.opCount++;
        if (op.soft) {
          g.softCount++;
        }
        g.deviceCounts.set(op.device, (g.deviceCounts.get(op.device) ?? 0) + 1);
        continue;
      }
      const sub = this.groups[Number(id.slice(1))];
      this._count(sub.index);
      g.opCount += sub.opCount;
      g.softCount += sub.softCount;
      for (const [device, count] of sub.deviceCounts) {
        g.deviceCounts.set(device, (g.deviceCounts.get(device) ?? 0) + count);
      }
    }
    if (index === 0) {
      for (const [device, count] of g.deviceCounts) {
        if (device) {
          this.device(device).ops = count;
        }
      }
    }
  }

  private _buildEdges(): void {
    for (const e of deriveEdges(this.doc.nodes, deviceTasks(this.doc.devices))) {
      const s = this._opIndex.get(e.source);
      const t = this._opIndex.get(e.target);
      if (s === undefined || t === undefined || s === t) {
        continue; // cannot happen: deriveEdges keeps edges between listed ops only
      }
      this._edges.push({
        source: s,
        target: t,
        tensor: e.tensor,
        control: e.control,
        cross: e.cross
      });
    }
  }

  private _opIndex = new Map<string, number>();
  private _groupIndex = new Map<string, number>();
  private _scopeIndex = new Map<string, number>();
  private _expanded = new Set<number>();
  private _edges: IGraphEdgeRec[] = [];
}

/** "add[0-57]"; "op[0-99]_grad" for a name series with a suffix. */
export function seriesLabel(base: string, first: number, last: number, suffix = ''): string {
  return `${base}[${first}-${last}]${suffix}`;
}

/** The second line of a collapsed group: "120 ops" (+ the kind of synthetic group). */
export function groupSubtitle(g: IGroup): string {
  const ops = `${g.opCount} op${g.opCount === 1 ? '' : 's'}`;
  return g.kind === 'scope' ? ops : `${ops} \u00b7 ${g.kind}`;
}

/** The label of an edge across tasks. */
export function edgeLabel(e: IVisibleEdge): string {
  return e.count > 1 ? `${SEND_RECV_LABEL} \u00d7${e.count}` : SEND_RECV_LABEL;
}
