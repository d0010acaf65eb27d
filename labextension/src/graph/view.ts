// The graph renderer: a Lumino widget drawing the model's visible graph as SVG.
//
// One innerHTML pass per layout; every interaction is delegated from a few listeners on
// the widget's own elements (no per-node listeners), so a redraw costs the string only.

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ILayoutResult, runLayout } from './layout';
import {
  clusterHeader,
  contrastText,
  edgeLabel,
  GraphModel,
  GROUP_HEIGHT,
  groupSubtitle,
  IGroup,
  IOp,
  IVisibleEdge,
  IVisibleGraph,
  OP_HEIGHT,
  safeColor,
  shortLabel,
  UNPLACED_COLOR
} from './model';

const SOFT_COLOR = '#d62728';
const TASK_EDGE_COLOR = '#d62728';
const MIN_ZOOM = 0.02;
const MAX_ZOOM = 4;
const DRAG_THRESHOLD = 4;

let instances = 0;

/** Escape text for HTML/SVG markup (content and attribute values). */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, c =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'
  );
}

function n1(v: number): string {
  return (Math.round(v * 10) / 10).toString();
}

/** A smooth path through dagre's edge points (quadratic pieces through the midpoints). */
export function edgePath(points: { x: number; y: number }[]): string {
  if (points.length < 2) {
    return '';
  }
  let d = `M${n1(points[0].x)},${n1(points[0].y)}`;
  if (points.length === 2) {
    return d + `L${n1(points[1].x)},${n1(points[1].y)}`;
  }
  for (let i = 1; i < points.length - 1; i++) {
    const p = points[i];
    const q = points[i + 1];
    const last = i === points.length - 2;
    const ex = last ? q.x : (p.x + q.x) / 2;
    const ey = last ? q.y : (p.y + q.y) / 2;
    d += `Q${n1(p.x)},${n1(p.y)} ${n1(ex)},${n1(ey)}`;
  }
  return d;
}

interface ITransform {
  x: number;
  y: number;
  k: number;
}

/**
 * Renders application/vnd.tfjupyter.graph+json: name scopes as collapsible groups, nodes
 * colored by device, a legend, a details pane, pan/zoom and search.
 */
export class GraphRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this._uid = `tfj${++instances}`;
    this.addClass('tfj-graph');
    this.node.innerHTML =
      '<div class="tfj-header"></div>' +
      '<div class="tfj-body">' +
      '<div class="tfj-canvas">' +
      '<svg class="tfj-svg" xmlns="http://www.w3.org/2000/svg">' +
      this._defs() +
      '<g class="tfj-viewport"></g></svg>' +
      '<div class="tfj-empty" hidden>This graph has no ops.</div>' +
      '</div>' +
      '<div class="tfj-side"><div class="tfj-legend"></div><div class="tfj-details"></div></div>' +
      '</div>';
    this._header = this.node.querySelector('.tfj-header') as HTMLDivElement;
    this._canvas = this.node.querySelector('.tfj-canvas') as HTMLDivElement;
    this._svg = this.node.querySelector('svg') as SVGSVGElement;
    this._viewport = this.node.querySelector('.tfj-viewport') as SVGGElement;
    this._legend = this.node.querySelector('.tfj-legend') as HTMLDivElement;
    this._details = this.node.querySelector('.tfj-details') as HTMLDivElement;
    this._empty = this.node.querySelector('.tfj-empty') as HTMLDivElement;

    this._header.addEventListener('click', this._onHeaderClick);
    this._header.addEventListener('keydown', this._onHeaderKey);
    this._header.addEventListener('focusin', this._fillSearchList);
    this._svg.addEventListener('click', this._onSvgClick);
    this._svg.addEventListener('dblclick', this._onSvgDblClick);
    this._canvas.addEventListener('pointerdown', this._onPointerDown);
    this._canvas.addEventListener('pointermove', this._onPointerMove);
    this._canvas.addEventListener('pointerup', this._onPointerUp);
    this._canvas.addEventListener('pointercancel', this._onPointerUp);
    this._canvas.addEventListener('pointerleave', this._onPointerLeave);
    this._canvas.addEventListener('wheel', this._onWheel, { passive: false });
    this._details.addEventListener('click', this._onDetailsClick);
    if (typeof ResizeObserver !== 'undefined') {
      this._resizeObserver = new ResizeObserver(() => this._onCanvasResize());
      this._resizeObserver.observe(this._canvas);
    }
  }

  /** The model of the last rendered document (for tests and the console). */
  get model(): GraphModel | null {
    return this._model;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resizeObserver?.disconnect();
    this._resizeObserver = null;
    super.dispose();
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const t0 = performance.now();
    const data = model.data[this._mimeType];
    const previous = this._model;
    this._model = new GraphModel(data);
    if (previous) {
      // an updated display keeps what the user opened
      for (const g of previous.groups) {
        if (g.index > 0 && previous.isExpanded(g.index)) {
          const same = this._model.groupByPath(g.path);
          if (same) {
            this._model.setExpanded(same.index, true);
          }
        }
      }
    }
    this._selected = '';
    this._searchFilled = false;
    this._renderHeader();
    this._renderLegend();
    this._renderDetails();
    this._relayout(t0);
    this.fit();
  }

  /** Fit the whole graph in the canvas (at most 1:1). */
  fit(): void {
    const w = this._canvas.clientWidth;
    const h = this._canvas.clientHeight;
    if (!this._graphLayout || w <= 0 || h <= 0) {
      this._pendingFit = true;
      return;
    }
    this._pendingFit = false;
    const pad = 12;
    const gw = Math.max(1, this._graphLayout.width);
    const gh = Math.max(1, this._graphLayout.height);
    const k = Math.max(MIN_ZOOM, Math.min(1, (w - 2 * pad) / gw, (h - 2 * pad) / gh));
    this._transform = { k, x: (w - gw * k) / 2, y: Math.max(pad, (h - gh * k) / 2) };
    this._applyTransform();
  }

  /** Reveal an op (expanding its groups), center it and show its details. */
  focusOp(name: string): boolean {
    const model = this._model;
    const op = model?.opByName(name);
    if (!model || !op) {
      return false;
    }
    const hidden = model.visibleIdOf(op.index) !== op.id;
    model.reveal(op.id);
    if (hidden) {
      this._relayout();
    }
    this._select(op.id);
    this._center(op.id);
    return true;
  }

  /** Expand or collapse a group, keeping it where it was on screen. */
  toggleGroup(id: string): void {
    const model = this._model;
    const group = model?.item(id);
    if (!model || !group || !model.isGroupId(id)) {
      return;
    }
    const before = this._graphLayout?.boxes.get(id);
    model.toggle(group.index);
    this._relayout();
    const after = this._graphLayout?.boxes.get(id);
    if (before && after) {
      const t = this._transform;
      t.x += (before.x - after.x) * t.k;
      t.y += (before.y - before.height / 2 - (after.y - after.height / 2)) * t.k;
      this._keepInView(after);
      this._applyTransform();
    }
    if (this._selected === id) {
      this._renderDetails();
    }
  }

  /**
   * An expanded group can be much larger than it was: zoom out (never in) and shift so all of
   * it is on screen, else the user sees a corner of it and has to hunt for the rest.
   */
  private _keepInView(box: { x: number; y: number; width: number; height: number }): void {
    const w = this._canvas.clientWidth;
    const h = this._canvas.clientHeight;
    if (w <= 0 || h <= 0) {
      return;
    }
    const pad = 12;
    const t = this._transform;
    t.k = Math.max(
      MIN_ZOOM,
      Math.min(t.k, (w - 2 * pad) / box.width, (h - 2 * pad) / box.height)
    );
    const left = (box.x - box.width / 2) * t.k + t.x;
    const top = (box.y - box.height / 2) * t.k + t.y;
    const right = left + box.width * t.k;
    const bottom = top + box.height * t.k;
    if (left < pad || right > w - pad) {
      t.x += w / 2 - (left + right) / 2;
    }
    if (top < pad || bottom > h - pad) {
      t.y += h / 2 - (top + bottom) / 2;
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this._pendingFit) {
      requestAnimationFrame(() => this._pendingFit && this.fit());
    }
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    this._onCanvasResize();
  }

  /**
   * Before the first fit: fit. After it, keep what was at the canvas's center there (a
   * notebook split beside another tab would otherwise leave the graph off to one side).
   */
  private _onCanvasResize(): void {
    const w = this._canvas.clientWidth;
    const h = this._canvas.clientHeight;
    if (this._pendingFit) {
      this.fit();
    } else if (this._canvasSize.w > 0 && w > 0 && h > 0) {
      this._transform.x += (w - this._canvasSize.w) / 2;
      this._transform.y += (h - this._canvasSize.h) / 2;
      this._applyTransform();
    }
    this._canvasSize = { w, h };
  }

  // ---- drawing

  private _relayout(t0 = performance.now()): void {
    const model = this._model;
    if (!model) {
      return;
    }
    const visible = model.visibleGraph();
    const layout = runLayout(model.layoutInput(visible));
    this._graphLayout = layout;
    this._viewport.innerHTML = this._drawGraph(model, visible, layout);
    this._empty.hidden = model.ops.length > 0;
    this._markSelected();
    const ms = performance.now() - t0;
    this.node.setAttribute('data-render-ms', ms.toFixed(1));
    this.node.setAttribute('data-visible-nodes', String(visible.nodes.length));
  }

  private _defs(): string {
    const marker = (id: string, cls: string) =>
      `<marker id="${this._uid}-${id}" viewBox="0 0 10 10" refX="9" refY="5" ` +
      'markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse">' +
      `<path class="${cls}" d="M0,0L10,5L0,10z"/></marker>`;
    return (
      '<defs>' +
      marker('arrow', 'tfj-arrow') +
      marker('arrow-control', 'tfj-arrow tfj-arrow-control') +
      marker('arrow-task', 'tfj-arrow tfj-arrow-task') +
      '</defs>'
    );
  }

  private _drawGraph(model: GraphModel, visible: IVisibleGraph, layout: ILayoutResult): string {
    const out: string[] = [];
    // clusters (expanded groups) first, outer ones below inner ones
    out.push('<g class="tfj-clusters">');
    for (const id of visible.clusters) {
      const box = layout.boxes.get(id);
      if (box) {
        out.push(this._drawCluster(model, model.item(id) as IGroup, box));
      }
    }
    out.push('</g><g class="tfj-edges">');
    for (const e of visible.edges) {
      const geometry = layout.edges.get(e.id);
      if (geometry) {
        out.push(this._drawEdge(model, e, geometry.points, geometry.labelX, geometry.labelY));
      }
    }
    out.push('</g><g class="tfj-nodes">');
    for (const id of visible.nodes) {
      const box = layout.boxes.get(id);
      if (!box) {
        continue;
      }
      const item = model.item(id)!;
      out.push(
        id[0] === 'o'
          ? this._drawOp(model, item as IOp, box)
          : this._drawGroup(model, item as IGroup, box)
      );
    }
    out.push('</g>');
    return out.join('');
  }

  private _drawOp(
    model: GraphModel,
    op: IOp,
    box: { x: number; y: number; width: number; height: number }
  ): string {
    const w = box.width;
    const h = OP_HEIGHT;
    const fill = model.fillOf(op.id);
    const soft = op.soft
      ? ` stroke="${SOFT_COLOR}" stroke-width="2" stroke-dasharray="4 3"`
      : '';
    const device = op.device ? model.device(op.device).short : 'not placed';
    let s =
      `<g class="tfj-node tfj-op${op.soft ? ' tfj-soft' : ''}" data-id="${op.id}" ` +
      `data-kind="op" data-name="${esc(op.name)}" data-device="${esc(model.deviceOf(op.id))}" ` +
      `data-type="${esc(op.type)}" transform="translate(${n1(box.x - w / 2)},${n1(box.y - h / 2)})">` +
      `<rect class="tfj-shape" width="${n1(w)}" height="${h}" rx="6" ry="6" fill="${fill}"${soft}/>` +
      `<text class="tfj-label" x="${n1(w / 2)}" y="${h / 2}" fill="${contrastText(fill)}">` +
      `${esc(shortLabel(op.label))}</text>` +
      `<title>${esc(op.name)} (${esc(op.type)})\n${esc(device)}${op.soft ? ' \u00b7 soft placement' : ''}</title>`;
    if (op.soft) {
      s += this._softBadge(w, 'soft');
    }
    return s + '</g>';
  }

  private _softBadge(w: number, text: string): string {
    const bw = Math.max(28, text.length * 6 + 8);
    return (
      `<g class="tfj-soft-badge" transform="translate(${n1(w - bw + 6)},-8)">` +
      `<rect width="${bw}" height="13" rx="6.5" fill="${SOFT_COLOR}"/>` +
      `<text x="${bw / 2}" y="6.5" fill="#ffffff">${esc(text)}</text></g>`
    );
  }

  private _expandButton(id: string, x: number, y: number, expanded: boolean): string {
    const glyph = expanded ? 'M-3.5,0H3.5' : 'M-3.5,0H3.5M0,-3.5V3.5';
    return (
      `<g class="tfj-expand" data-id="${id}" transform="translate(${n1(x)},${n1(y)})">` +
      `<title>${expanded ? 'Collapse' : 'Expand'}</title>` +
      `<circle r="7"/><path d="${glyph}"/></g>`
    );
  }

  private _drawGroup(
    model: GraphModel,
    g: IGroup,
    box: { x: number; y: number; width: number; height: number }
  ): string {
    const w = box.width;
    const h = GROUP_HEIGHT;
    const device = model.deviceOf(g.id);
    const fill = model.fillOf(g.id);
    const ink = contrastText(fill);
    let s =
      `<g class="tfj-node tfj-group tfj-group-${g.kind}" data-id="${g.id}" data-kind="group" ` +
      `data-expanded="false" data-name="${esc(g.path)}" data-device="${esc(device)}" ` +
      `data-ops="${g.opCount}" transform="translate(${n1(box.x - w / 2)},${n1(box.y - h / 2)})">` +
      `<rect class="tfj-shape" width="${n1(w)}" height="${h}" rx="12" ry="12" fill="${fill}"/>` +
      `<rect class="tfj-group-stack" x="3" y="${h}" width="${n1(w - 6)}" height="3" rx="1.5" fill="${fill}"/>` +
      `<text class="tfj-label tfj-group-label" x="12" y="14" fill="${ink}">${esc(shortLabel(g.label))}</text>` +
      `<text class="tfj-sublabel" x="12" y="29" fill="${ink}">${esc(groupSubtitle(g))}</text>` +
      `<title>${esc(g.path)}\n${esc(groupSubtitle(g))} \u2014 double-click to expand</title>`;
    const parts = model.composition(g.index);
    if (parts.length > 1) {
      // device composition: a stacked bar across the bottom, as TensorBoard stripes groups
      const bx = 10;
      const bw = w - 20;
      let x = bx;
      s += `<g class="tfj-composition"><rect x="${bx - 1}" y="${h - 9}" width="${n1(bw + 2)}" height="6" rx="2" fill="#ffffff" fill-opacity="0.85"/>`;
      for (const p of parts) {
        const pw = bw * p.fraction;
        s += `<rect x="${n1(x)}" y="${h - 8}" width="${n1(pw)}" height="4" fill="${p.color}"/>`;
        x += pw;
      }
      s += '</g>';
    }
    if (g.softCount > 0) {
      s += this._softBadge(w - 22, `soft ${g.softCount}`);
    }
    s += this._expandButton(g.id, w - 15, 15, false);
    return s + '</g>';
  }

  private _drawCluster(
    model: GraphModel,
    g: IGroup,
    box: { x: number; y: number; width: number; height: number }
  ): string {
    const device = model.deviceOf(g.id);
    const color = model.fillOf(g.id);
    const x = box.x - box.width / 2;
    const y = box.y - box.height / 2;
    const chars = Math.max(4, Math.floor((box.width - 40) / 6.5));
    const full = clusterHeader(g.label, g.opCount);
    const text = shortLabel(full.length <= chars ? full : g.label, chars);
    return (
      `<g class="tfj-node tfj-group tfj-cluster tfj-group-${g.kind}" data-id="${g.id}" ` +
      `data-kind="group" data-expanded="true" data-name="${esc(g.path)}" ` +
      `data-device="${esc(device)}" data-ops="${g.opCount}" transform="translate(${n1(x)},${n1(y)})">` +
      `<rect class="tfj-shape" width="${n1(box.width)}" height="${n1(box.height)}" rx="8" ry="8" ` +
      `fill="${color}" fill-opacity="0.1" stroke="${color}"/>` +
      `<text class="tfj-cluster-label" x="8" y="11">${esc(text)}</text>` +
      `<title>${esc(g.path)} \u2014 double-click to collapse</title>` +
      this._expandButton(g.id, box.width - 11, 11, true) +
      '</g>'
    );
  }

  private _drawEdge(
    model: GraphModel,
    e: IVisibleEdge,
    points: { x: number; y: number }[],
    lx?: number,
    ly?: number
  ): string {
    const classes = ['tfj-edge'];
    let marker = 'arrow';
    let attrs = '';
    if (e.controlOnly) {
      classes.push('tfj-edge-control');
      marker = 'arrow-control';
      attrs += ' stroke-dasharray="4 3"';
    }
    if (e.cross === 'task') {
      classes.push('tfj-cross-task');
      marker = 'arrow-task';
      attrs = ` stroke="${TASK_EDGE_COLOR}" stroke-dasharray="7 4"`;
    } else if (e.cross === 'device') {
      classes.push('tfj-cross-device');
      attrs = ' stroke-dasharray="1.5 3" stroke-linecap="round"';
    }
    const width = Math.min(4.5, 1.2 + Math.log2(e.count) * 0.8);
    const src = model.item(e.source);
    const dst = model.item(e.target);
    const srcName = src ? ('path' in src ? src.path : src.name) : '';
    const dstName = dst ? ('path' in dst ? dst.path : dst.name) : '';
    const what = e.controlOnly
      ? `${e.count} control edge${e.count > 1 ? 's' : ''}`
      : `${e.dataCount} tensor${e.dataCount > 1 ? 's' : ''}` +
        (e.controlCount ? ` + ${e.controlCount} control` : '') +
        (e.tensors.length ? `: ${e.tensors.join(', ')}${e.dataCount > e.tensors.length ? ', \u2026' : ''}` : '');
    const crossText =
      e.cross === 'task' ? '\n_Send/_Recv across tasks' : e.cross === 'device' ? '\ncopy across devices' : '';
    let s =
      `<path class="${classes.join(' ')}" d="${edgePath(points)}" stroke-width="${n1(width)}"${attrs} ` +
      `marker-end="url(#${this._uid}-${marker})" data-source="${esc(srcName)}" ` +
      `data-target="${esc(dstName)}" data-count="${e.count}" data-cross="${e.cross}" ` +
      `data-control="${e.controlOnly}"><title>${esc(srcName)} \u2192 ${esc(dstName)}\n${esc(
        what
      )}${crossText}</title></path>`;
    if (e.cross === 'task' && lx !== undefined && ly !== undefined) {
      s += `<text class="tfj-edge-label" x="${n1(lx)}" y="${n1(ly)}" fill="${TASK_EDGE_COLOR}">${esc(
        edgeLabel(e)
      )}</text>`;
    }
    return s;
  }

  // ---- header, legend, details

  private _renderHeader(): void {
    const model = this._model!;
    const doc = model.doc;
    const count = doc.truncated
      ? `${model.ops.length} of ${doc.total_ops} ops (truncated)`
      : `${model.ops.length} op${model.ops.length === 1 ? '' : 's'}`;
    const expandTitle = model.canExpandAll
      ? 'Expand every group'
      : `Not offered above 1,500 ops (this graph has ${model.ops.length})`;
    this._header.innerHTML =
      `<span class="tfj-title" title="${esc(doc.title)}">${esc(doc.title || 'Graph')}</span>` +
      `<span class="tfj-count">${esc(count)}</span>` +
      `<span class="tfj-placed ${doc.placed ? 'tfj-placed-yes' : 'tfj-placed-no'}">${
        doc.placed ? 'placed' : 'not placed'
      }</span>` +
      '<span class="tfj-spacer"></span>' +
      `<input class="tfj-search" type="search" placeholder="Find op\u2026" ` +
      `list="${this._uid}-names" aria-label="Find an op by name" spellcheck="false"/>` +
      `<datalist id="${this._uid}-names"></datalist>` +
      '<span class="tfj-search-status"></span>' +
      '<button class="tfj-button tfj-fit" type="button" title="Fit the graph in view">Fit</button>' +
      `<button class="tfj-button tfj-expand-all" type="button" title="${esc(expandTitle)}"${
        model.canExpandAll ? '' : ' disabled'
      }>Expand all</button>` +
      '<button class="tfj-button tfj-collapse-all" type="button" title="Collapse every group">Collapse all</button>';
  }

  private _renderLegend(): void {
    const model = this._model!;
    const rows: string[] = ['<div class="tfj-legend-title">Devices</div>'];
    for (const d of model.deviceList()) {
      rows.push(
        `<div class="tfj-legend-item" data-device="${esc(d.name)}" title="${esc(d.name)}">` +
          `<span class="tfj-swatch" style="background:${safeColor(d.color)}"></span>` +
          `<span class="tfj-legend-name">${esc(d.short)}</span>` +
          `<span class="tfj-legend-count">${d.ops}</span></div>`
      );
    }
    const unplaced = model.unplacedCount;
    if (unplaced > 0 || model.deviceList().length === 0) {
      rows.push(
        '<div class="tfj-legend-item" data-device="">' +
          `<span class="tfj-swatch" style="background:${UNPLACED_COLOR}"></span>` +
          '<span class="tfj-legend-name">not placed</span>' +
          `<span class="tfj-legend-count">${unplaced}</span></div>`
      );
    }
    const line = (cls: string, attrs: string, marker: string) =>
      `<svg class="tfj-legend-edge" width="36" height="10"><path class="tfj-edge ${cls}" d="M1,5H28" ` +
      `stroke-width="1.5"${attrs} marker-end="url(#${this._uid}-${marker})"/></svg>`;
    rows.push(
      '<div class="tfj-legend-title">Marks</div>' +
        '<div class="tfj-legend-item tfj-legend-soft">' +
        `<svg class="tfj-legend-mark" width="36" height="16"><rect x="2" y="2" width="30" height="12" rx="4" ` +
        `fill="${UNPLACED_COLOR}" stroke="${SOFT_COLOR}" stroke-width="2" stroke-dasharray="4 3"/></svg>` +
        `<span class="tfj-legend-name">soft placement</span>` +
        `<span class="tfj-legend-count">${model.softCount}</span></div>` +
        '<div class="tfj-legend-item tfj-legend-sendrecv">' +
        line('tfj-cross-task', ` stroke="${TASK_EDGE_COLOR}" stroke-dasharray="7 4"`, 'arrow-task') +
        '<span class="tfj-legend-name">_Send/_Recv (across tasks)</span></div>' +
        '<div class="tfj-legend-item tfj-legend-copy">' +
        line('tfj-cross-device', ' stroke-dasharray="1.5 3" stroke-linecap="round"', 'arrow') +
        '<span class="tfj-legend-name">copy across devices</span></div>' +
        '<div class="tfj-legend-item tfj-legend-controledge">' +
        line('tfj-edge-control', ' stroke-dasharray="4 3"', 'arrow-control') +
        '<span class="tfj-legend-name">control dependency</span></div>'
    );
    this._legend.innerHTML = rows.join('');
  }

  private _renderDetails(): void {
    const model = this._model;
    const id = this._selected;
    const item = model && id ? model.item(id) : undefined;
    if (!model || !item) {
      this._details.innerHTML =
        '<div class="tfj-details-hint">Click a node for its details; double-click a group ' +
        '(or its +) to expand it. Drag to pan; Ctrl+wheel or click, then wheel, to zoom.</div>';
      this._details.removeAttribute('data-name');
      return;
    }
    const row = (k: string, v: string) => `<tr><th>${k}</th><td>${v}</td></tr>`;
    const swatch = (color: string) =>
      `<span class="tfj-swatch" style="background:${safeColor(color)}"></span>`;
    if (id[0] === 'o') {
      const d = model.opDetails(item.index);
      const inputs = d.inputs.length
        ? '<ul class="tfj-inputs">' +
          d.inputs
            .map(
              i =>
                `<li><a class="tfj-op-link" data-op="${esc(i.op)}" href="#">${esc(i.name)}</a>` +
                (i.control ? ' <span class="tfj-muted">(control)</span>' : '') +
                '</li>'
            )
            .join('') +
          '</ul>'
        : '<span class="tfj-muted">none</span>';
      const outputs = d.outputs.length
        ? '<ul class="tfj-outputs">' +
          d.outputs
            .map((o, i) => `<li>${i}: ${esc(o.dtype)} <code>${esc(o.shape)}</code></li>`)
            .join('') +
          '</ul>'
        : '<span class="tfj-muted">none</span>';
      const attrs = d.attrs.length
        ? d.attrs.map(([k, v]) => `${esc(k)}=<code>${esc(v)}</code>`).join('<br/>')
        : '';
      this._details.innerHTML =
        `<div class="tfj-details-title">${esc(d.name)}</div>` +
        '<table class="tfj-details-table">' +
        row('Type', esc(d.type)) +
        row(
          'Device',
          d.device
            ? `${swatch(d.color)}${esc(d.deviceShort)}<div class="tfj-muted tfj-wrap">${esc(d.device)}</div>`
            : `${swatch(UNPLACED_COLOR)}<span class="tfj-muted">not placed</span>`
        ) +
        row('Requested', d.requested ? esc(d.requested) : '<span class="tfj-muted">none</span>') +
        row('Reason', d.reason ? esc(d.reason) : '<span class="tfj-muted">\u2014</span>') +
        row('Soft', d.soft ? '<span class="tfj-soft-text">yes, soft placement</span>' : 'no') +
        row('Inputs', inputs) +
        row('Outputs', outputs) +
        (attrs ? row('Attrs', attrs) : '') +
        '</table>';
      this._details.setAttribute('data-name', d.name);
      return;
    }
    const d = model.groupDetails(item.index);
    const kind =
      d.groupKind === 'scope'
        ? 'name scope'
        : d.groupKind === 'series'
          ? 'series of like-named nodes'
          : d.groupKind === 'type'
            ? 'ops of one type'
            : 'slice of a crowded level';
    const comp =
      '<table class="tfj-composition-table">' +
      d.composition
        .map(
          p =>
            `<tr><td>${swatch(p.color)}${esc(p.short)}</td><td class="tfj-num">${p.count}</td>` +
            `<td class="tfj-num">${(p.fraction * 100).toFixed(p.fraction < 0.1 ? 1 : 0)}%</td></tr>`
        )
        .join('') +
      '</table>';
    this._details.innerHTML =
      `<div class="tfj-details-title">${esc(d.path)}</div>` +
      '<table class="tfj-details-table">' +
      row('Group', esc(kind)) +
      row('Ops', String(d.opCount)) +
      row('Children', String(d.childCount)) +
      (d.softCount ? row('Soft', `<span class="tfj-soft-text">${d.softCount} soft-placed</span>`) : '') +
      row('Devices', comp) +
      '</table>' +
      `<button class="tfj-button tfj-details-toggle" type="button" data-id="${item.id}">${
        d.expanded ? 'Collapse' : 'Expand'
      }</button>`;
    this._details.setAttribute('data-name', d.path);
  }

  private _select(id: string): void {
    this._selected = id;
    this._markSelected();
    this._renderDetails();
  }

  private _markSelected(): void {
    this._viewport.querySelector('.tfj-selected')?.classList.remove('tfj-selected');
    if (this._selected) {
      this._viewport
        .querySelector(`g.tfj-node[data-id="${this._selected}"]`)
        ?.classList.add('tfj-selected');
    }
  }

  private _center(id: string): void {
    const box = this._graphLayout?.boxes.get(id);
    const w = this._canvas.clientWidth;
    const h = this._canvas.clientHeight;
    if (!box || w <= 0 || h <= 0) {
      return;
    }
    const t = this._transform;
    t.k = Math.max(t.k, 0.8);
    t.x = w / 2 - box.x * t.k;
    t.y = h / 2 - box.y * t.k;
    this._pendingFit = false;
    this._applyTransform();
  }

  private _applyTransform(): void {
    const t = this._transform;
    this._viewport.setAttribute(
      'transform',
      `translate(${n1(t.x)},${n1(t.y)}) scale(${Math.round(t.k * 10000) / 10000})`
    );
  }

  // ---- events (all delegated)

  private _onHeaderClick = (event: MouseEvent): void => {
    const button = (event.target as Element).closest('button');
    if (!button || !this._model || button.disabled) {
      return;
    }
    if (button.classList.contains('tfj-fit')) {
      this.fit();
    } else if (button.classList.contains('tfj-expand-all')) {
      this._model.expandAll();
      this._relayout();
      this.fit();
    } else if (button.classList.contains('tfj-collapse-all')) {
      this._model.collapseAll();
      this._relayout();
      this.fit();
    }
  };

  private _onHeaderKey = (event: KeyboardEvent): void => {
    const input = event.target as HTMLInputElement;
    if (!input.classList.contains('tfj-search')) {
      return;
    }
    // keep notebook shortcuts away from the search box
    event.stopPropagation();
    if (event.key === 'Enter') {
      event.preventDefault();
      this._search(input.value);
    } else if (event.key === 'Escape') {
      input.value = '';
      this._setSearchStatus('');
    }
  };

  private _fillSearchList = (event: FocusEvent): void => {
    const target = event.target as Element;
    if (this._searchFilled || !this._model || !target.classList.contains('tfj-search')) {
      return;
    }
    this._searchFilled = true;
    const list = this._header.querySelector('datalist');
    if (list) {
      list.innerHTML = this._model.ops
        .slice(0, 5000)
        .map(op => `<option value="${esc(op.name)}"></option>`)
        .join('');
    }
  };

  private _search(query: string): void {
    const model = this._model;
    const q = query.trim();
    if (!model || !q) {
      this._setSearchStatus('');
      return;
    }
    const matches = model.search(q, 1000);
    if (matches.length) {
      // Enter again goes to the next match
      this._searchHit = q === this._searchQuery ? (this._searchHit + 1) % matches.length : 0;
      this._searchQuery = q;
      const op = matches[this._searchHit];
      this.focusOp(op.name);
      this._setSearchStatus(
        matches.length > 1 ? `${this._searchHit + 1} of ${matches.length}` : ''
      );
      return;
    }
    const group = model.groupByPath(q.replace(/\/+$/, ''));
    if (group && group.index > 0) {
      model.reveal(group.id);
      this._relayout();
      this._select(group.id);
      this._center(group.id);
      this._setSearchStatus('');
      return;
    }
    this._setSearchStatus('no match');
  }

  private _setSearchStatus(text: string): void {
    const status = this._header.querySelector('.tfj-search-status');
    if (status) {
      status.textContent = text;
    }
  }

  private _nodeIdAt(target: EventTarget | null): string {
    const el = target instanceof Element ? target.closest('g.tfj-node') : null;
    return el?.getAttribute('data-id') ?? '';
  }

  private _onSvgClick = (event: MouseEvent): void => {
    if (this._dragged) {
      return;
    }
    const target = event.target as Element;
    const expand = target.closest('.tfj-expand');
    if (expand) {
      const id = expand.getAttribute('data-id') ?? '';
      this._select(id);
      this.toggleGroup(id);
      return;
    }
    const id = this._nodeIdAt(target);
    if (id) {
      this._select(id);
    }
  };

  private _onSvgDblClick = (event: MouseEvent): void => {
    const target = event.target as Element;
    if (target.closest('.tfj-expand')) {
      return; // its clicks already toggled it
    }
    const id = this._nodeIdAt(target);
    if (id && this._model?.isGroupId(id)) {
      event.preventDefault();
      this.toggleGroup(id);
    }
  };

  private _onDetailsClick = (event: MouseEvent): void => {
    const target = event.target as Element;
    const link = target.closest('.tfj-op-link');
    if (link) {
      event.preventDefault();
      this.focusOp(link.getAttribute('data-op') ?? '');
      return;
    }
    const toggle = target.closest('.tfj-details-toggle');
    if (toggle) {
      this.toggleGroup(toggle.getAttribute('data-id') ?? '');
      this._renderDetails();
    }
  };

  private _onPointerDown = (event: PointerEvent): void => {
    if (event.button !== 0) {
      return;
    }
    // a click or drag inside makes the graph take the wheel until the pointer leaves it
    this._setWheelActive(true);
    this._drag = { x: event.clientX, y: event.clientY, tx: this._transform.x, ty: this._transform.y };
    this._dragged = false;
  };

  private _onPointerMove = (event: PointerEvent): void => {
    const drag = this._drag;
    if (!drag) {
      return;
    }
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!this._dragged) {
      if (Math.abs(dx) + Math.abs(dy) < DRAG_THRESHOLD) {
        return;
      }
      // capture only once it is a drag, so plain clicks keep their target
      this._dragged = true;
      this._canvas.setPointerCapture(event.pointerId);
      this._canvas.classList.add('tfj-panning');
    }
    this._transform.x = drag.tx + dx;
    this._transform.y = drag.ty + dy;
    this._pendingFit = false;
    this._applyTransform();
  };

  private _onPointerUp = (event: PointerEvent): void => {
    if (!this._drag) {
      return;
    }
    this._drag = null;
    this._canvas.classList.remove('tfj-panning');
    if (this._canvas.hasPointerCapture(event.pointerId)) {
      this._canvas.releasePointerCapture(event.pointerId);
    }
    // the click that ends a drag is swallowed by _onSvgClick, then clicks work again
    if (this._dragged) {
      setTimeout(() => (this._dragged = false), 0);
    }
  };

  private _onPointerLeave = (): void => {
    if (!this._drag) {
      this._setWheelActive(false);
    }
  };

  private _setWheelActive(active: boolean): void {
    this._wheelActive = active;
    this._canvas.classList.toggle('tfj-active', active);
  }

  /**
   * Zoom only when asked: with Ctrl/Meta held (trackpad pinch-zoom arrives as ctrlKey wheel
   * events) or once the user clicked/dragged in the graph. Otherwise the wheel is left to
   * the page, so scrolling a notebook past a graph output scrolls the notebook.
   */
  private _onWheel = (event: WheelEvent): void => {
    if (!(event.ctrlKey || event.metaKey || this._wheelActive)) {
      return;
    }
    event.preventDefault();
    const rect = this._canvas.getBoundingClientRect();
    const px = event.clientX - rect.left;
    const py = event.clientY - rect.top;
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? 400 : 1;
    const factor = Math.exp(-event.deltaY * unit * 0.0015);
    const t = this._transform;
    const k = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, t.k * factor));
    // keep the graph point under the pointer where it is
    t.x = px - ((px - t.x) * k) / t.k;
    t.y = py - ((py - t.y) * k) / t.k;
    t.k = k;
    this._pendingFit = false;
    this._applyTransform();
  };

  private _mimeType: string;
  private _uid: string;
  private _model: GraphModel | null = null;
  private _graphLayout: ILayoutResult | null = null;
  private _transform: ITransform = { x: 0, y: 0, k: 1 };
  private _pendingFit = true;
  private _selected = '';
  private _searchQuery = '';
  private _searchHit = 0;
  private _searchFilled = false;
  private _drag: { x: number; y: number; tx: number; ty: number } | null = null;
  private _dragged = false;
  private _wheelActive = false;
  private _resizeObserver: ResizeObserver | null = null;
  private _canvasSize = { w: 0, h: 0 };
  private _header: HTMLDivElement;
  private _canvas: HTMLDivElement;
  private _svg: SVGSVGElement;
  private _viewport: SVGGElement;
  private _legend: HTMLDivElement;
  private _details: HTMLDivElement;
  private _empty: HTMLDivElement;
}
