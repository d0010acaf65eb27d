// Lays out the model's layout input (model.ts: leaves, clusters, edges) with dagre.
//
// Like TensorBoard, one level at a time: the children of every expanded group are laid out
// by themselves (sub-clusters first, so their sizes are known), and the group becomes one
// box of that size in its parent's layout. An edge between leaves in different groups is
// laid out at their lowest common level, between the two children that hold its ends, and
// drawn from its source through that route to its target. Each dagre run sees at most one
// level (the model keeps levels to about 100 children), so expanding many groups stays
// fast, where a single compound dagre layout grows with every rank every cluster spans.

import { graphlib, layout } from '@dagrejs/dagre';

import { ILayoutEdge, ILayoutInput } from './model';

export interface IPoint {
  x: number;
  y: number;
}

export interface IBox {
  /** Center. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface IEdgeGeometry {
  points: IPoint[];
  /** Label center, for edges that have a label. */
  labelX?: number;
  labelY?: number;
}

export interface ILayoutResult {
  width: number;
  height: number;
  /** Leaves and clusters by id, absolute. */
  boxes: Map<string, IBox>;
  /** Edges by the visible edge's id, absolute. */
  edges: Map<string, IEdgeGeometry>;
}

/** Room inside a cluster box around its children (the top holds its label and button). */
export const CLUSTER_PAD_TOP = 26;
export const CLUSTER_PAD_SIDE = 12;
export const CLUSTER_PAD_BOTTOM = 12;
/** More isolated children than this (no edges at their level) are packed in a grid. */
const GRID_MIN = 6;

const ROOT = '';

interface ILevelEdge {
  v: string;
  w: string;
  weight: number;
  label?: string;
  width?: number;
  height?: number;
}

interface ILevelLayout {
  width: number;
  height: number;
  /** Child centers relative to the level's content origin. */
  centers: Map<string, IPoint>;
  /** Routes of the level's edges ("v>w"), relative to the content origin. */
  routes: Map<string, IEdgeGeometry>;
}

interface ISize {
  width: number;
  height: number;
}

export function runLayout(input: ILayoutInput): ILayoutResult {
  const opts = input.graph;
  const parent = new Map<string, string>();
  const children = new Map<string, string[]>([[ROOT, []]]);
  const sizes = new Map<string, ISize>();
  const minWidth = new Map<string, number>();
  for (const c of input.clusters) {
    children.set(c.id, []);
    minWidth.set(c.id, c.minWidth ?? 0);
  }
  for (const c of input.clusters) {
    const p = c.parent !== undefined && children.has(c.parent) ? c.parent : ROOT;
    parent.set(c.id, p);
    children.get(p)!.push(c.id);
  }
  for (const n of input.nodes) {
    const p = n.parent !== undefined && children.has(n.parent) ? n.parent : ROOT;
    parent.set(n.id, p);
    children.get(p)!.push(n.id);
    sizes.set(n.id, { width: n.width, height: n.height });
  }

  // every edge is laid out at the lowest level holding both ends
  const chain = (id: string): string[] => {
    const out = [id];
    let p = parent.get(id);
    while (p !== undefined) {
      out.push(p);
      p = p === ROOT ? undefined : parent.get(p) ?? ROOT;
    }
    if (out[out.length - 1] !== ROOT) {
      out.push(ROOT);
    }
    return out;
  };
  const levelEdges = new Map<string, Map<string, ILevelEdge>>();
  const placement = new Map<string, { level: string; key: string; direct: [boolean, boolean] }>();
  for (const e of input.edges) {
    if (!parent.has(e.source) || !parent.has(e.target) || e.source === e.target) {
      continue;
    }
    const sChain = chain(e.source);
    const tChain = chain(e.target);
    const tIndex = new Map(tChain.map((id, i) => [id, i]));
    let i = 1;
    while (i < sChain.length && !tIndex.has(sChain[i])) {
      i++;
    }
    const level = sChain[i] ?? ROOT;
    const j = tIndex.get(level) ?? tChain.length - 1;
    const v = sChain[i - 1];
    const w = tChain[j - 1];
    if (v === undefined || w === undefined || v === w) {
      continue;
    }
    const key = `${v}>${w}`;
    let edges = levelEdges.get(level);
    if (!edges) {
      edges = new Map();
      levelEdges.set(level, edges);
    }
    const known = edges.get(key);
    if (known) {
      known.weight += e.weight;
      mergeLabel(known, e);
    } else {
      const le: ILevelEdge = { v, w, weight: e.weight };
      mergeLabel(le, e);
      edges.set(key, le);
    }
    placement.set(e.id, { level, key, direct: [v === e.source, w === e.target] });
  }

  // bottom-up: lay out each level, which sizes its cluster for the level above
  const levels = new Map<string, ILevelLayout>();
  const layoutLevel = (c: string): void => {
    const kids = children.get(c)!;
    for (const k of kids) {
      if (children.has(k)) {
        layoutLevel(k);
      }
    }
    const result = layoutOneLevel(kids, sizes, levelEdges.get(c), opts);
    levels.set(c, result);
    if (c !== ROOT) {
      sizes.set(c, {
        width: Math.max(result.width + 2 * CLUSTER_PAD_SIDE, minWidth.get(c) ?? 0),
        height: result.height + CLUSTER_PAD_TOP + CLUSTER_PAD_BOTTOM
      });
    }
  };
  layoutLevel(ROOT);

  // top-down: absolute boxes and content origins
  const boxes = new Map<string, IBox>();
  const origins = new Map<string, IPoint>();
  const place = (c: string, origin: IPoint): void => {
    origins.set(c, origin);
    const level = levels.get(c)!;
    for (const k of children.get(c)!) {
      const center = level.centers.get(k);
      const size = sizes.get(k);
      if (!center || !size) {
        continue;
      }
      const box = { x: origin.x + center.x, y: origin.y + center.y, ...size };
      boxes.set(k, box);
      if (children.has(k)) {
        const inner = levels.get(k)!;
        place(k, {
          x: box.x - box.width / 2 + (box.width - inner.width) / 2,
          y: box.y - box.height / 2 + CLUSTER_PAD_TOP
        });
      }
    }
  };
  const root = levels.get(ROOT)!;
  place(ROOT, { x: opts.marginx, y: opts.marginy });

  // edges: the level's route, extended into the groups to the real ends
  const edges = new Map<string, IEdgeGeometry>();
  for (const e of input.edges) {
    const where = placement.get(e.id);
    const route = where ? levels.get(where.level)?.routes.get(where.key) : undefined;
    const origin = where ? origins.get(where.level) : undefined;
    const src = boxes.get(e.source);
    const dst = boxes.get(e.target);
    if (!where || !route || !origin || !src || !dst) {
      continue;
    }
    const points = route.points.map(p => ({ x: p.x + origin.x, y: p.y + origin.y }));
    if (!points.length) {
      continue;
    }
    if (!where.direct[0]) {
      points.unshift(anchor(src, points[0]));
    }
    if (!where.direct[1]) {
      points.push(anchor(dst, points[points.length - 1]));
    }
    const geometry: IEdgeGeometry = { points };
    if (route.labelX !== undefined && route.labelY !== undefined) {
      geometry.labelX = route.labelX + origin.x;
      geometry.labelY = route.labelY + origin.y;
    }
    edges.set(e.id, geometry);
  }
  return {
    width: root.width + 2 * opts.marginx,
    height: root.height + 2 * opts.marginy,
    boxes,
    edges
  };
}

function mergeLabel(into: ILevelEdge, e: ILayoutEdge): void {
  if (e.label && (!into.label || (e.width ?? 0) > (into.width ?? 0))) {
    into.label = e.label;
    into.width = e.width;
    into.height = e.height;
  }
}

/** The middle of the side of `box` that faces `toward`. */
function anchor(box: IBox, toward: IPoint): IPoint {
  const dy = toward.y - box.y;
  const dx = toward.x - box.x;
  if (Math.abs(dy) * box.width >= Math.abs(dx) * box.height) {
    return { x: box.x, y: box.y + (dy >= 0 ? box.height / 2 : -box.height / 2) };
  }
  return { x: box.x + (dx >= 0 ? box.width / 2 : -box.width / 2), y: box.y };
}

/** Lay out one level's children: dagre for the connected ones, a grid for many isolated. */
function layoutOneLevel(
  kids: string[],
  sizes: Map<string, ISize>,
  edges: Map<string, ILevelEdge> | undefined,
  opts: ILayoutInput['graph']
): ILevelLayout {
  const levelEdges = edges ? [...edges.values()] : [];
  const connected = new Set<string>();
  for (const e of levelEdges) {
    connected.add(e.v);
    connected.add(e.w);
  }
  const isolated = kids.filter(k => !connected.has(k));
  const grid = isolated.length > GRID_MIN ? isolated : [];
  const ranked = grid.length ? kids.filter(k => connected.has(k)) : kids;

  let out: ILevelLayout = { width: 0, height: 0, centers: new Map(), routes: new Map() };
  if (ranked.length) {
    try {
      out = dagreLevel(ranked, sizes, levelEdges, opts);
    } catch (err) {
      // dagre can fail on odd inputs; a readable grid with straight edges beats nothing
      console.warn('tfjupyter graph: dagre layout failed, using a grid', err);
      out = gridLevel(ranked, sizes, opts);
      for (const e of levelEdges) {
        const a = out.centers.get(e.v);
        const b = out.centers.get(e.w);
        if (a && b) {
          const sa = sizes.get(e.v)!;
          const sb = sizes.get(e.w)!;
          out.routes.set(`${e.v}>${e.w}`, {
            points: [
              anchor({ ...a, ...sa }, b),
              anchor({ ...b, ...sb }, a)
            ]
          });
        }
      }
    }
  }
  if (grid.length) {
    const packed = gridLevel(grid, sizes, opts);
    const gap = ranked.length ? opts.ranksep / 2 : 0;
    const width = Math.max(out.width, packed.width);
    const shiftTop = (width - out.width) / 2;
    const shiftGrid = (width - packed.width) / 2;
    if (shiftTop) {
      for (const c of out.centers.values()) {
        c.x += shiftTop;
      }
      for (const r of out.routes.values()) {
        for (const p of r.points) {
          p.x += shiftTop;
        }
        if (r.labelX !== undefined) {
          r.labelX += shiftTop;
        }
      }
    }
    const top = out.height + gap;
    for (const [id, c] of packed.centers) {
      out.centers.set(id, { x: c.x + shiftGrid, y: c.y + top });
    }
    out.width = width;
    out.height = top + packed.height;
  }
  return out;
}

function dagreLevel(
  kids: string[],
  sizes: Map<string, ISize>,
  edges: ILevelEdge[],
  opts: ILayoutInput['graph']
): ILevelLayout {
  const g = new graphlib.Graph({ directed: true, multigraph: false, compound: false });
  g.setGraph({
    rankdir: opts.rankdir,
    nodesep: opts.nodesep,
    ranksep: opts.ranksep,
    edgesep: opts.edgesep,
    marginx: 0,
    marginy: 0
  });
  g.setDefaultEdgeLabel(() => ({}));
  const present = new Set(kids);
  for (const k of kids) {
    const s = sizes.get(k) ?? { width: 40, height: 20 };
    g.setNode(k, { width: s.width, height: s.height });
  }
  for (const e of edges) {
    if (!present.has(e.v) || !present.has(e.w)) {
      continue;
    }
    const label: { [k: string]: unknown } = { weight: e.weight, minlen: 1 };
    if (e.label) {
      label.width = e.width ?? 0;
      label.height = e.height ?? 0;
      label.labelpos = 'c';
    }
    g.setEdge(e.v, e.w, label);
  }
  layout(g);
  const centers = new Map<string, IPoint>();
  for (const k of kids) {
    const n = g.node(k) as { x?: number; y?: number };
    centers.set(k, { x: n?.x ?? 0, y: n?.y ?? 0 });
  }
  const routes = new Map<string, IEdgeGeometry>();
  for (const e of g.edges()) {
    const label = g.edge(e) as { points?: IPoint[]; x?: number; y?: number };
    if (!label?.points) {
      continue;
    }
    const geometry: IEdgeGeometry = { points: label.points.map(p => ({ x: p.x, y: p.y })) };
    if (typeof label.x === 'number' && typeof label.y === 'number') {
      geometry.labelX = label.x;
      geometry.labelY = label.y;
    }
    routes.set(`${e.v}>${e.w}`, geometry);
  }
  const graph = g.graph() as { width?: number; height?: number };
  return { width: graph.width ?? 0, height: graph.height ?? 0, centers, routes };
}

/** Rows of equal cells, about three times wider than tall overall. */
function gridLevel(kids: string[], sizes: Map<string, ISize>, opts: ILayoutInput['graph']): ILevelLayout {
  let cellW = 0;
  let cellH = 0;
  for (const k of kids) {
    const s = sizes.get(k) ?? { width: 40, height: 20 };
    cellW = Math.max(cellW, s.width);
    cellH = Math.max(cellH, s.height);
  }
  cellW += opts.nodesep;
  cellH += opts.nodesep;
  const cols = Math.max(1, Math.min(kids.length, Math.round(Math.sqrt((kids.length * 3 * cellH) / cellW))));
  const rows = Math.ceil(kids.length / cols);
  const centers = new Map<string, IPoint>();
  kids.forEach((k, i) => {
    centers.set(k, {
      x: (i % cols) * cellW + cellW / 2 - opts.nodesep / 2,
      y: Math.floor(i / cols) * cellH + cellH / 2 - opts.nodesep / 2
    });
  });
  return {
    width: cols * cellW - opts.nodesep,
    height: rows * cellH - opts.nodesep,
    centers,
    routes: new Map()
  };
}
