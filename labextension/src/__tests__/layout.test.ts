// Tests of the level-by-level dagre layout (src/graph/layout.ts) on the model's input.

import { CLUSTER_PAD_TOP, IBox, runLayout } from '../graph/layout';
import { GraphModel, INodeDoc } from '../graph/model';

import { CPU, doc, edge, GPU0, IEdgeSpec, node, smallDoc } from './docs';

function inside(inner: IBox, outer: IBox): boolean {
  return (
    inner.x - inner.width / 2 >= outer.x - outer.width / 2 &&
    inner.x + inner.width / 2 <= outer.x + outer.width / 2 &&
    inner.y - inner.height / 2 >= outer.y - outer.height / 2 + CLUSTER_PAD_TOP - 0.01 &&
    inner.y + inner.height / 2 <= outer.y + outer.height / 2
  );
}

function overlap(a: IBox, b: IBox): boolean {
  return (
    Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height
  );
}

describe('layout', () => {
  it('puts every child inside its expanded group, siblings apart, every edge routed', () => {
    const m = new GraphModel(smallDoc()); // small: fully expanded
    const input = m.layoutInput();
    const result = runLayout(input);
    const parentOf = new Map<string, string | undefined>();
    for (const n of input.nodes) {
      parentOf.set(n.id, n.parent);
      expect(result.boxes.get(n.id)).toMatchObject({ width: n.width, height: n.height });
    }
    for (const c of input.clusters) {
      parentOf.set(c.id, c.parent);
      expect(result.boxes.get(c.id)!.width).toBeGreaterThanOrEqual(c.minWidth);
    }
    for (const [id, p] of parentOf) {
      const box = result.boxes.get(id)!;
      expect(box.x - box.width / 2).toBeGreaterThanOrEqual(0);
      expect(box.y - box.height / 2).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width / 2).toBeLessThanOrEqual(result.width);
      expect(box.y + box.height / 2).toBeLessThanOrEqual(result.height);
      if (p !== undefined) {
        expect(inside(box, result.boxes.get(p)!)).toBe(true);
      }
      for (const [other, q] of parentOf) {
        if (other !== id && q === p) {
          expect(overlap(box, result.boxes.get(other)!)).toBe(false);
        }
      }
    }
    expect(result.edges.size).toBe(input.edges.length);
    for (const e of input.edges) {
      const g = result.edges.get(e.id)!;
      expect(g.points.length).toBeGreaterThanOrEqual(2);
      // an edge leaves its source's box and ends on its target's box
      const src = result.boxes.get(e.source)!;
      const dst = result.boxes.get(e.target)!;
      const first = g.points[0];
      const last = g.points[g.points.length - 1];
      expect(Math.abs(first.x - src.x) <= src.width / 2 + 0.5).toBe(true);
      expect(Math.abs(first.y - src.y) <= src.height / 2 + 0.5).toBe(true);
      expect(Math.abs(last.x - dst.x) <= dst.width / 2 + 0.5).toBe(true);
      expect(Math.abs(last.y - dst.y) <= dst.height / 2 + 0.5).toBe(true);
      if (e.label) {
        expect(g.labelX).toBeDefined();
      }
    }
  });

  it('packs many unconnected nodes in a grid instead of one wide row', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 100; i++) {
      nodes.push(node(`c${i}x`, 'Const', CPU));
    }
    const m = new GraphModel(doc(nodes));
    const result = runLayout(m.layoutInput());
    expect(result.boxes.size).toBe(100);
    // a single row would be about 100 x 72 px wide
    expect(result.width).toBeLessThan(2000);
    expect(result.height).toBeGreaterThan(100);
  });

  // no wall-clock limit (CI is a loaded 2-core machine); a generous jest timeout instead
  it('lays out "Expand all" on a 1,000-op graph of interleaved series', () => {
    // add, mul, const, ... add_1, mul_1, ...: a chain that hops between 8 series groups
    const types = ['Add', 'Mul', 'Const', 'Identity', 'MatMul', 'Relu', 'Sub', 'Square'];
    const nodes: INodeDoc[] = [];
    const edges: IEdgeSpec[] = [];
    for (let i = 0; i < 1000; i++) {
      const k = Math.floor(i / 8);
      const base = types[i % 8].toLowerCase();
      nodes.push(node(k ? `${base}_${k}` : base, types[i % 8], i % 3 ? CPU : GPU0));
      if (i) {
        edges.push(edge(nodes[i - 1].name, nodes[i].name));
      }
    }
    const m = new GraphModel(doc(nodes, edges));
    expect(m.visibleGraph().nodes).toHaveLength(8);
    m.expandAll();
    const input = m.layoutInput();
    const result = runLayout(input);
    expect(input.nodes).toHaveLength(1000);
    expect(result.boxes.size).toBe(1000 + input.clusters.length);
    expect(result.edges.size).toBe(999);
  }, 120000);
});
