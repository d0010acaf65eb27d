// Documents the tests build (application/vnd.tfjupyter.graph+json, as tfjupyter/lab/graph.py builds them).

import { IGraphDoc, INodeDoc } from '../graph/model';

export const CPU = '/job:worker/replica:0/task:0/device:CPU:0';
export const GPU0 = '/job:worker/replica:0/task:0/device:GPU:0';
export const GPU1 = '/job:worker/replica:0/task:1/device:GPU:0';
const COLORS: { [device: string]: string } = {
  [CPU]: '#2ca02c',
  [GPU0]: '#1f77b4',
  [GPU1]: '#ff7f0e'
};

export function node(name: string, type: string, device = '', extra: Partial<INodeDoc> = {}): INodeDoc {
  return {
    name,
    type,
    device,
    requested: '',
    reason: device ? 'requested' : '',
    soft: false,
    inputs: [],
    outputs: [{ dtype: 'float32', shape: '(?, 10)' }],
    attrs: {},
    ...extra
  };
}

/** An edge for doc(): it becomes an input of its target ("source:output", or "^source"). */
export interface IEdgeSpec {
  source: string;
  target: string;
  control: boolean;
  output: number;
}

export function edge(source: string, target: string, control = false, output = 0): IEdgeSpec {
  return { source, target, control, output };
}

/** The input string an edge adds to its target. */
function inputOf(e: IEdgeSpec): string {
  return e.control ? `^${e.source}` : `${e.source}:${e.output}`;
}

/**
 * A document of these nodes (the documents carry no edges). `edges` are appended
 * to their targets' `inputs` (on copies of the nodes), in order; a target must be in `nodes`.
 */
export function doc(nodes: INodeDoc[], edges: IEdgeSpec[] = []): IGraphDoc {
  if (edges.length) {
    const byName = new Map<string, INodeDoc>();
    nodes = nodes.map(n => {
      const copy = { ...n, inputs: [...n.inputs] };
      byName.set(n.name, copy);
      return copy;
    });
    for (const e of edges) {
      const target = byName.get(e.target);
      if (!target) {
        throw new Error(`edge to ${e.target}: no such node`);
      }
      target.inputs.push(inputOf(e));
    }
  }
  const used = [CPU, GPU0, GPU1].filter(d => nodes.some(n => n.device === d));
  return {
    version: 1,
    title: 'test',
    placed: used.length > 0,
    truncated: false,
    total_ops: nodes.length,
    devices: used.map(name => ({
      name,
      short: name === CPU ? 'worker:0/CPU:0' : name === GPU0 ? 'worker:0/GPU:0' : 'worker:1/GPU:0',
      task: name.replace(/\/device:.*/, ''),
      type: name.includes('GPU') ? 'GPU' : 'CPU',
      color: COLORS[name],
      ops: nodes.filter(n => n.device === name).length
    })),
    nodes
  };
}

/**
 * The small placed graph most tests use: 9 ops, 9 edges (e1...e9, derived from the inputs).
 * Crosses: e1 x -> MatMul and e8 w/Assign -> init change device within task 0; e6 MatMul ->
 * add and e9 ^x -> add go to task 1; the others stay on one device.
 */
export function smallDoc(): IGraphDoc {
  return doc([
    node('x', 'Placeholder', CPU),
    node('w', 'VariableV2', GPU0),
    node('w/read', 'Identity', GPU0, { inputs: ['w:0'] }), // e3
    node('w/Assign', 'Assign', GPU0, { inputs: ['w:0', 'w/Initializer/zeros:0'] }), // e5 e4
    node('w/Initializer/zeros', 'Const', GPU0),
    node('layer1/MatMul', 'MatMul', GPU0, { inputs: ['x:0', 'w/read:0'] }), // e1 e2
    node('layer1/add', 'Add', GPU1, { inputs: ['layer1/MatMul:0', '^x'], soft: true }), // e6 e9
    node('layer1/Relu', 'Relu', GPU1, { inputs: ['layer1/add:0'] }), // e7
    node('init', 'NoOp', CPU, { inputs: ['^w/Assign'], outputs: [] }) // e8
  ]);
}
