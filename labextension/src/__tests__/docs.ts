// Documents the tests build (application/vnd.tfjupyter.graph+json, contract §1).

import { CrossKind, IEdgeDoc, IGraphDoc, INodeDoc } from '../graph/model';

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

export function edge(source: string, target: string, control = false, cross: CrossKind = 'none'): IEdgeDoc {
  return { source, target, tensor: control ? '' : `${source}:0`, control, cross };
}

export function doc(nodes: INodeDoc[], edges: IEdgeDoc[] = []): IGraphDoc {
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
    nodes,
    edges
  };
}

/** The small placed graph most tests use (9 ops, 9 edges). */
export function smallDoc(): IGraphDoc {
  return doc(
    [
      node('x', 'Placeholder', CPU),
      node('w', 'VariableV2', GPU0),
      node('w/read', 'Identity', GPU0, { inputs: ['w:0'] }),
      node('w/Assign', 'Assign', GPU0, { inputs: ['w:0', 'w/Initializer/zeros:0'] }),
      node('w/Initializer/zeros', 'Const', GPU0),
      node('layer1/MatMul', 'MatMul', GPU0, { inputs: ['x:0', 'w/read:0'] }),
      node('layer1/add', 'Add', GPU1, { inputs: ['layer1/MatMul:0', '^x'], soft: true }),
      node('layer1/Relu', 'Relu', GPU1, { inputs: ['layer1/add:0'] }),
      node('init', 'NoOp', CPU, { inputs: ['^w/Assign'], outputs: [] })
    ],
    [
      edge('x', 'layer1/MatMul', false, 'device'), // e1
      edge('w/read', 'layer1/MatMul'), // e2
      edge('w', 'w/read'), // e3
      edge('w/Initializer/zeros', 'w/Assign'), // e4
      edge('w', 'w/Assign'), // e5
      edge('layer1/MatMul', 'layer1/add', false, 'task'), // e6
      edge('layer1/add', 'layer1/Relu'), // e7
      edge('w/Assign', 'init', true, 'device'), // e8
      edge('x', 'layer1/add', true, 'task') // e9
    ]
  );
}
