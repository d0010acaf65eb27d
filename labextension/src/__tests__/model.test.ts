// Tests of the graph model (src/graph/model.ts): pure TypeScript, no DOM.
// Expectations are worked out by hand from the small documents built below.

import * as fs from 'fs';
import * as path from 'path';

import {
  contrastText,
  crossKind,
  deriveEdges,
  DEVICE_PALETTE,
  deviceTasks,
  GROUP_HEIGHT,
  GraphModel,
  IGraphDoc,
  IGroup,
  INodeDoc,
  IVisibleEdge,
  IVisibleGraph,
  normalizeDoc,
  OP_HEIGHT,
  safeColor,
  UNPLACED_COLOR
} from '../graph/model';

import { CPU, doc, edge, GPU0, GPU1, IEdgeSpec, node, smallDoc } from './docs';

/** Visible leaves by name ("op:name" / "group:path"), sorted. */
function leaves(model: GraphModel, visible: IVisibleGraph): string[] {
  return visible.nodes.map(id => label(model, id)).sort();
}

function label(model: GraphModel, id: string): string {
  const item = model.item(id)!;
  return model.isGroupId(id) ? `group:${(item as { path: string }).path}` : `op:${(item as { name: string }).name}`;
}

/** Visible edges keyed "source -> target" with what the tests compare. */
function edgeTable(model: GraphModel, visible: IVisibleGraph): { [key: string]: Partial<IVisibleEdge> } {
  const out: { [key: string]: Partial<IVisibleEdge> } = {};
  for (const e of visible.edges) {
    out[`${label(model, e.source)} -> ${label(model, e.target)}`] = {
      count: e.count,
      dataCount: e.dataCount,
      controlCount: e.controlCount,
      controlOnly: e.controlOnly,
      cross: e.cross
    };
  }
  return out;
}

function group(model: GraphModel, path: string) {
  const g = model.groupByPath(path);
  if (!g) {
    throw new Error(`no group ${path}`);
  }
  return g;
}

describe('hierarchy', () => {
  it('builds name scopes, with an op named like a scope inside that scope', () => {
    const m = new GraphModel(smallDoc());
    expect(m.ops).toHaveLength(9);
    // root + w + w/Initializer + layer1
    expect(m.groups.map(g => g.path).sort()).toEqual(['', 'layer1', 'w', 'w/Initializer']);

    const w = group(m, 'w');
    const init = group(m, 'w/Initializer');
    const layer1 = group(m, 'layer1');
    expect(init.parent).toBe(w.index);
    expect(w.parent).toBe(0);
    expect(layer1.parent).toBe(0);

    // the variable op "w" sits inside group "w", labelled "w", listed first
    const wOp = m.opByName('w')!;
    expect(wOp.parent).toBe(w.index);
    expect(wOp.label).toBe('w');
    expect(w.children[0]).toBe(wOp.id);
    expect(w.children.map(id => label(m, id))).toEqual([
      'op:w',
      'group:w/Initializer',
      'op:w/read',
      'op:w/Assign'
    ]);
    expect(m.opByName('w/Initializer/zeros')!.parent).toBe(init.index);
    expect(m.opByName('x')!.parent).toBe(0);

    expect(m.root.opCount).toBe(9);
    expect(w.opCount).toBe(4);
    expect(init.opCount).toBe(1);
    expect(layer1.opCount).toBe(3);
    expect(layer1.softCount).toBe(1);
    expect(m.root.softCount).toBe(1);
    expect(m.ancestors(m.opByName('w/Initializer/zeros')!.id).map(g => g.path)).toEqual([
      'w',
      'w/Initializer'
    ]);
  });

  it('works whichever comes first, "w/read" or "w"', () => {
    const m = new GraphModel(
      doc([node('w/read', 'Identity'), node('w', 'VariableV2'), node('w/Assign', 'Assign')])
    );
    expect(m.opByName('w')!.parent).toBe(group(m, 'w').index);
    expect(m.root.children).toHaveLength(1);
  });

  it('reads documents with missing keys and drops inputs from unknown ops', () => {
    const m = new GraphModel({
      nodes: [
        { name: 'a', type: 'Const' },
        { name: 'b', inputs: ['a:0', 'beyond_truncation:0', '^fed'] },
        { name: 'a', type: 'Dup', inputs: ['b:0'] }
      ],
      // not part of the document any more: ignored
      edges: [{ source: 'b', target: 'a', tensor: 'b:0', control: false, cross: 'none' }]
    });
    expect(m.ops.map(o => o.name)).toEqual(['a', 'b']);
    expect(m.opByName('a')!.type).toBe('Const');
    // small: fully expanded, so the one kept edge is drawn as itself
    expect(m.visibleGraph().edges.map(e => [label(m, e.source), label(m, e.target)])).toEqual([
      ['op:a', 'op:b']
    ]);
    expect(m.doc.title).toBe('');
    expect(m.doc.placed).toBe(false);
    expect('edges' in m.doc).toBe(false);
    expect(normalizeDoc(null).nodes).toEqual([]);
  });
});

describe('edges derived from inputs', () => {
  const TASK1_CPU = '/job:worker/replica:0/task:1/device:CPU:0';

  it('reads data and control edges in node order, then input order', () => {
    const d = smallDoc();
    expect('edges' in d).toBe(false);
    expect(deriveEdges(d.nodes, deviceTasks(d.devices))).toEqual([
      { source: 'w', target: 'w/read', tensor: 'w:0', control: false, cross: 'none' },
      { source: 'w', target: 'w/Assign', tensor: 'w:0', control: false, cross: 'none' },
      {
        source: 'w/Initializer/zeros',
        target: 'w/Assign',
        tensor: 'w/Initializer/zeros:0',
        control: false,
        cross: 'none'
      },
      { source: 'x', target: 'layer1/MatMul', tensor: 'x:0', control: false, cross: 'device' },
      { source: 'w/read', target: 'layer1/MatMul', tensor: 'w/read:0', control: false, cross: 'none' },
      { source: 'layer1/MatMul', target: 'layer1/add', tensor: 'layer1/MatMul:0', control: false, cross: 'task' },
      { source: 'x', target: 'layer1/add', tensor: '', control: true, cross: 'task' },
      { source: 'layer1/add', target: 'layer1/Relu', tensor: 'layer1/add:0', control: false, cross: 'none' },
      { source: 'w/Assign', target: 'init', tensor: '', control: true, cross: 'device' }
    ]);
  });

  it('takes the output index from the input ("split:1"), and skips ops not in the document', () => {
    const nodes = [
      node('split', 'Split', GPU0, { outputs: [{ dtype: 'float32', shape: '(5,)' }, { dtype: 'float32', shape: '(5,)' }] }),
      node('tail', 'Identity', GPU0, {
        // truncated away / fed: no op of that name in the document
        inputs: ['split:1', 'beyond_max_ops:0', '^fed_placeholder', 'split:0', '^split']
      }),
      node('bare', 'Identity', GPU0, { inputs: ['tail'] })
    ];
    expect(deriveEdges(nodes, new Map())).toEqual([
      { source: 'split', target: 'tail', tensor: 'split:1', control: false, cross: 'none' },
      { source: 'split', target: 'tail', tensor: 'split:0', control: false, cross: 'none' },
      { source: 'split', target: 'tail', tensor: '', control: true, cross: 'none' },
      // a bare name is output 0, as in a TF NodeDef
      { source: 'tail', target: 'bare', tensor: 'tail:0', control: false, cross: 'none' }
    ]);

    // the model draws them: split -> tail aggregates two tensors and a control edge
    const m = new GraphModel(doc(nodes));
    const [e] = m.visibleGraph().edges.filter(v => label(m, v.source) === 'op:split');
    expect(e).toMatchObject({ count: 3, dataCount: 2, controlCount: 1, tensors: ['split:1', 'split:0'] });
  });

  it('builds inputs from an edge list in the test helper', () => {
    const d = doc(
      [node('a', 'Const', GPU0), node('b', 'Add', GPU0, { inputs: ['a:0'] })],
      [edge('a', 'b', false, 1), edge('a', 'b', true)]
    );
    expect(d.nodes[1].inputs).toEqual(['a:0', 'a:1', '^a']);
    expect(deriveEdges(d.nodes, deviceTasks(d.devices)).map(e => e.tensor)).toEqual(['a:0', 'a:1', '']);
  });

  it('cross: "task" across tasks, "device" across devices of one task, else "none"', () => {
    const TASK0 = '/job:worker/replica:0/task:0';
    const TASK1 = '/job:worker/replica:0/task:1';
    const PS = '/job:ps/replica:0/task:0';
    const PS_CPU = PS + '/device:CPU:0';
    // the tasks the document names (tfjupyter/lab/graph.py lists every device with its task)
    const tasks = new Map([
      [CPU, TASK0],
      [GPU0, TASK0],
      [GPU1, TASK1],
      [TASK1_CPU, TASK1],
      [PS_CPU, PS]
    ]);
    const nodes = [
      node('cpu0', 'Const', CPU),
      node('gpu0', 'Const', GPU0),
      node('unplaced', 'Const'),
      node('same', 'Add', CPU, { inputs: ['cpu0:0'] }),
      node('copy', 'Add', CPU, { inputs: ['gpu0:0'] }),
      node('send', 'Add', TASK1_CPU, { inputs: ['cpu0:0', '^gpu0'] }),
      node('from_unplaced', 'Add', GPU1, { inputs: ['unplaced:0'] }),
      node('to_unplaced', 'Add', '', { inputs: ['gpu0:0', '^cpu0'] })
    ];
    const table = deriveEdges(nodes, tasks).map(e => `${e.source} -> ${e.target}${e.control ? ' (control)' : ''}: ${e.cross}`);
    expect(table).toEqual([
      'cpu0 -> same: none',
      'gpu0 -> copy: device',
      'cpu0 -> send: task',
      'gpu0 -> send (control): task',
      'unplaced -> from_unplaced: none',
      'gpu0 -> to_unplaced: none',
      'cpu0 -> to_unplaced (control): none'
    ]);

    expect(crossKind(CPU, GPU0, tasks)).toBe('device');
    expect(crossKind(GPU0, GPU1, tasks)).toBe('task');
    expect(crossKind(GPU0, GPU0, tasks)).toBe('none');
    expect(crossKind('', '', tasks)).toBe('none');
    expect(crossKind(GPU0, '', tasks)).toBe('none');
    // same task index, other job: other task
    expect(crossKind(CPU, PS_CPU, tasks)).toBe('task');
    // a device the document does not list: another device, its task unknown
    expect(crossKind(GPU1, '/job:worker/replica:0/task:0/device:GPU:7', tasks)).toBe('device');
    expect(deviceTasks([
      { name: GPU1, short: 'worker:1/GPU:0', task: TASK1, type: 'GPU', color: '', ops: 1 },
      { name: CPU, short: 'CPU:0', task: '', type: 'CPU', color: '', ops: 1 }
    ])).toEqual(new Map([[GPU1, TASK1]]));
  });
});

describe('expanded state', () => {
  it('starts fully expanded for a small graph (<= 60 ops)', () => {
    const m = new GraphModel(smallDoc());
    const v = m.visibleGraph();
    expect(v.clusters.map(id => label(m, id)).sort()).toEqual([
      'group:layer1',
      'group:w',
      'group:w/Initializer'
    ]);
    expect(v.nodes).toHaveLength(9);
    expect(v.nodes.every(id => !m.isGroupId(id))).toBe(true);
  });

  it('starts collapsed above 60 ops', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 61; i++) {
      nodes.push(node(`scope${i % 3}/op${i}`, 'Add'));
    }
    const m = new GraphModel(doc(nodes));
    const v = m.visibleGraph();
    expect(leaves(m, v)).toEqual(['group:scope0', 'group:scope1', 'group:scope2']);
    expect(v.clusters).toEqual([]);

    const exactly60 = new GraphModel(doc(nodes.slice(0, 60)));
    expect(exactly60.visibleGraph().nodes).toHaveLength(60);
  });

  it('collapsed: edges aggregate between visible ancestors, self-edges dropped', () => {
    const m = new GraphModel(smallDoc(), { smallGraphOps: 0 });
    const v = m.visibleGraph();
    expect(leaves(m, v)).toEqual(['group:layer1', 'group:w', 'op:init', 'op:x']);
    // e3 e4 e5 are inside w, e6 e7 inside layer1; e1 + e9 share x -> layer1
    expect(edgeTable(m, v)).toEqual({
      'op:x -> group:layer1': {
        count: 2,
        dataCount: 1,
        controlCount: 1,
        controlOnly: false,
        cross: 'task'
      },
      'group:w -> group:layer1': {
        count: 1,
        dataCount: 1,
        controlCount: 0,
        controlOnly: false,
        cross: 'none'
      },
      'group:w -> op:init': {
        count: 1,
        dataCount: 0,
        controlCount: 1,
        controlOnly: true,
        cross: 'device'
      }
    });
    // every op is represented by its collapsed group
    expect(v.representative[m.opByName('w')!.index]).toBe(group(m, 'w').id);
    expect(v.representative[m.opByName('w/Initializer/zeros')!.index]).toBe(group(m, 'w').id);
    expect(v.representative[m.opByName('x')!.index]).toBe(m.opByName('x')!.id);
  });

  it('expanding a group shows its children and splits its edges', () => {
    const m = new GraphModel(smallDoc(), { smallGraphOps: 0 });
    m.toggle(group(m, 'layer1').index);
    let v = m.visibleGraph();
    expect(leaves(m, v)).toEqual([
      'group:w',
      'op:init',
      'op:layer1/MatMul',
      'op:layer1/Relu',
      'op:layer1/add',
      'op:x'
    ]);
    expect(v.clusters.map(id => label(m, id))).toEqual(['group:layer1']);
    expect(edgeTable(m, v)).toEqual({
      'op:x -> op:layer1/MatMul': {
        count: 1,
        dataCount: 1,
        controlCount: 0,
        controlOnly: false,
        cross: 'device'
      },
      'group:w -> op:layer1/MatMul': {
        count: 1,
        dataCount: 1,
        controlCount: 0,
        controlOnly: false,
        cross: 'none'
      },
      'op:layer1/MatMul -> op:layer1/add': {
        count: 1,
        dataCount: 1,
        controlCount: 0,
        controlOnly: false,
        cross: 'task'
      },
      'op:layer1/add -> op:layer1/Relu': {
        count: 1,
        dataCount: 1,
        controlCount: 0,
        controlOnly: false,
        cross: 'none'
      },
      'group:w -> op:init': {
        count: 1,
        dataCount: 0,
        controlCount: 1,
        controlOnly: true,
        cross: 'device'
      },
      'op:x -> op:layer1/add': {
        count: 1,
        dataCount: 0,
        controlCount: 1,
        controlOnly: true,
        cross: 'task'
      }
    });

    // expand "w": op "w" and group "w" are different nodes now
    m.toggle(group(m, 'w').index);
    v = m.visibleGraph();
    expect(leaves(m, v)).toEqual([
      'group:w/Initializer',
      'op:init',
      'op:layer1/MatMul',
      'op:layer1/Relu',
      'op:layer1/add',
      'op:w',
      'op:w/Assign',
      'op:w/read',
      'op:x'
    ]);
    const table = edgeTable(m, v);
    expect(Object.keys(table).sort()).toEqual([
      'group:w/Initializer -> op:w/Assign',
      'op:layer1/MatMul -> op:layer1/add',
      'op:layer1/add -> op:layer1/Relu',
      'op:w -> op:w/Assign',
      'op:w -> op:w/read',
      'op:w/Assign -> op:init',
      'op:w/read -> op:layer1/MatMul',
      'op:x -> op:layer1/MatMul',
      'op:x -> op:layer1/add'
    ]);

    // collapsing again restores the first picture
    m.collapseAll();
    expect(leaves(m, m.visibleGraph())).toEqual(['group:layer1', 'group:w', 'op:init', 'op:x']);
    expect(m.isExpanded(0)).toBe(true);
  });

  it('reveal expands every enclosing group; visibleIdOf follows', () => {
    const m = new GraphModel(smallDoc(), { smallGraphOps: 0 });
    const zeros = m.opByName('w/Initializer/zeros')!;
    expect(m.visibleIdOf(zeros.index)).toBe(group(m, 'w').id);
    m.setExpanded(group(m, 'w').index, true);
    expect(m.visibleIdOf(zeros.index)).toBe(group(m, 'w/Initializer').id);
    m.collapseAll();
    m.reveal(zeros.id);
    expect(m.isExpanded(group(m, 'w').index)).toBe(true);
    expect(m.isExpanded(group(m, 'w/Initializer').index)).toBe(true);
    expect(m.isExpanded(group(m, 'layer1').index)).toBe(false);
    expect(m.visibleIdOf(zeros.index)).toBe(zeros.id);
    expect(m.visibleGraph().nodes).toContain(zeros.id);
  });

  it('search finds the exact name first, then substrings', () => {
    const m = new GraphModel(smallDoc());
    expect(m.search('w/read').map(o => o.name)).toEqual(['w/read']);
    expect(m.search('W/').map(o => o.name)).toEqual([
      'w/read',
      'w/Assign',
      'w/Initializer/zeros'
    ]);
    expect(m.search('w').map(o => o.name)[0]).toBe('w');
    expect(m.search('nothing')).toEqual([]);
    expect(m.search('  ')).toEqual([]);
  });
});

describe('devices', () => {
  it('a group is filled with its majority device; composition lists every device', () => {
    const m = new GraphModel(smallDoc());
    const layer1 = group(m, 'layer1');
    // MatMul on GPU0, add + Relu on GPU1
    expect(m.composition(layer1.index).map(p => [p.device, p.count, p.color])).toEqual([
      [GPU1, 2, '#ff7f0e'],
      [GPU0, 1, '#1f77b4']
    ]);
    expect(m.composition(layer1.index)[0].fraction).toBeCloseTo(2 / 3);
    expect(m.majorityDevice(layer1.index)).toBe(GPU1);
    expect(m.fillOf(layer1.id)).toBe('#ff7f0e');
    expect(m.deviceOf(layer1.id)).toBe(GPU1);
    expect(m.fillOf(group(m, 'w').id)).toBe('#1f77b4');
    expect(m.fillOf(m.opByName('x')!.id)).toBe('#2ca02c');
    // root: CPU 2, GPU0 5, GPU1 2
    expect(m.composition(0).map(p => p.count)).toEqual([5, 2, 2]);
    expect(m.composition(0).map(p => p.device)).toEqual([GPU0, CPU, GPU1]); // tie: device order
    expect(m.deviceList().map(d => [d.short, d.ops])).toEqual([
      ['worker:0/CPU:0', 2],
      ['worker:0/GPU:0', 5],
      ['worker:1/GPU:0', 2]
    ]);
  });

  it('ties go to the earlier device; mostly unplaced groups are grey', () => {
    const m = new GraphModel(
      doc([
        node('tie/a', 'Add', GPU0),
        node('tie/b', 'Add', CPU),
        node('grey/a', 'Add'),
        node('grey/b', 'Add'),
        node('grey/c', 'Add', GPU1)
      ])
    );
    expect(m.majorityDevice(group(m, 'tie').index)).toBe(CPU); // CPU is listed first
    expect(m.fillOf(group(m, 'grey').id)).toBe(UNPLACED_COLOR);
    expect(m.deviceOf(group(m, 'grey').id)).toBe('');
    expect(m.composition(group(m, 'grey').index).map(p => [p.short, p.count])).toEqual([
      ['not placed', 2],
      ['worker:1/GPU:0', 1]
    ]);
    expect(m.unplacedCount).toBe(2);
    expect(m.fillOf(m.opByName('grey/a')!.id)).toBe(UNPLACED_COLOR);
  });

  it('devices missing from the list show their full name and get a palette color; bad colors are replaced', () => {
    const d = doc([node('a', 'Add', GPU0), node('b', 'Add', '/job:ps/replica:0/task:0/device:CPU:0')]);
    d.devices[0].color = 'red;background:url(x)';
    const m = new GraphModel(d);
    expect(m.deviceColor(GPU0)).toMatch(/^#[0-9a-f]{6}$/);
    expect(m.device('/job:ps/replica:0/task:0/device:CPU:0').short).toBe(
      '/job:ps/replica:0/task:0/device:CPU:0'
    );
    // a listed device without a short name shows its full name too
    const noShort = doc([node('a', 'Add', GPU0)]);
    noShort.devices[0].short = '';
    expect(new GraphModel(noShort).device(GPU0).short).toBe(GPU0);
    expect(m.deviceColor('/job:ps/replica:0/task:0/device:CPU:0')).toMatch(/^#[0-9a-f]{6}$/);
    expect(safeColor('#1f77b4')).toBe('#1f77b4');
    expect(safeColor('"><script>')).toBe(UNPLACED_COLOR);
    expect(contrastText('#1f77b4')).toBe('#ffffff');
    expect(contrastText(UNPLACED_COLOR)).toBe('#1a1a1a');
  });

  it('replaces bad colors from the palette, which has no red and no grey', () => {
    const d = doc([node('a', 'Add', CPU), node('b', 'Add', GPU0), node('c', 'Add', GPU1)]);
    d.devices[0].color = 'javascript:alert(1)';
    d.devices[1].color = 'red;background:url(x)';
    const m = new GraphModel(d);
    // a listed device with a bad color gets the palette color of its place in the list
    expect(m.deviceColor(CPU)).toBe(DEVICE_PALETTE[0]);
    expect(m.deviceColor(GPU0)).toBe(DEVICE_PALETTE[1]);
    expect(m.deviceColor(GPU1)).toBe('#ff7f0e');
    // red means soft placement / cross-task, grey means not placed: never a device color
    for (const c of ['#d62728', '#7f7f7f', UNPLACED_COLOR]) {
      expect(DEVICE_PALETTE).not.toContain(c);
    }
    // devices the document does not list cycle through the same palette
    for (let i = 0; i < 40; i++) {
      const color = m.deviceColor(`/job:extra/replica:0/task:${i}/device:CPU:0`);
      expect(DEVICE_PALETTE).toContain(color);
    }
  });

  it("uses the same palette as Python's tfjupyter/lab/graph.py", () => {
    const source = fs.readFileSync(
      path.join(__dirname, '..', '..', '..', 'tfjupyter', 'lab', 'graph.py'),
      'utf8'
    );
    const m = /^PALETTE = \(([^)]*)\)/m.exec(source);
    expect(m).not.toBeNull();
    const python = [...m![1].matchAll(/"(#[0-9a-fA-F]{6})"/g)].map(x => x[1].toLowerCase());
    expect(python.length).toBeGreaterThan(8);
    expect([...DEVICE_PALETTE]).toEqual(python);
  });

  it('op details carry requested vs assigned device, reason, soft flag and tensors', () => {
    const d = smallDoc();
    d.nodes[6].requested = '/device:GPU:1';
    d.nodes[6].reason = 'soft placement: no GPU:1 on task 0';
    const m = new GraphModel(d);
    const details = m.opDetails(m.opByName('layer1/add')!.index);
    expect(details).toMatchObject({
      name: 'layer1/add',
      type: 'Add',
      device: GPU1,
      deviceShort: 'worker:1/GPU:0',
      color: '#ff7f0e',
      requested: '/device:GPU:1',
      reason: 'soft placement: no GPU:1 on task 0',
      soft: true,
      outputs: [{ dtype: 'float32', shape: '(?, 10)' }]
    });
    expect(details.inputs).toEqual([
      { name: 'layer1/MatMul:0', op: 'layer1/MatMul', control: false },
      { name: '^x', op: 'x', control: true }
    ]);
    const g = m.groupDetails(group(m, 'w').index);
    expect(g).toMatchObject({ kind: 'group', path: 'w', opCount: 4, childCount: 4, expanded: true });
    expect(g.composition.map(p => [p.device, p.count])).toEqual([[GPU0, 4]]);
  });
});

/** Names without digits: 0 -> "a", 25 -> "z", 26 -> "ba". */
function letters(i: number): string {
  let s = '';
  do {
    s = String.fromCharCode(97 + (i % 26)) + s;
    i = Math.floor(i / 26);
  } while (i > 0);
  return s;
}

describe('crowded levels', () => {
  it('groups a 500-op flat level by name series, slicing big series', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 300; i++) {
      nodes.push(node(i === 0 ? 'add' : `add_${i}`, 'Add'));
    }
    for (let i = 0; i < 150; i++) {
      nodes.push(node(i === 0 ? 'Const' : `Const_${i}`, 'Const'));
    }
    for (let i = 0; i < 40; i++) {
      nodes.push(node(`layer${i}`, 'Relu'));
    }
    for (let i = 0; i < 10; i++) {
      nodes.push(node(`summary_${letters(i)}`, 'Mean'));
    }
    const m = new GraphModel(doc(nodes));
    // add[0-299], Const[0-149], layer[0-39] and the 10 ops in no series
    expect(m.root.children).toHaveLength(13);
    expect(group(m, 'layer[0-39]').opCount).toBe(40);
    expect(m.opByName('summary_c')!.parent).toBe(0);
    const add = group(m, 'add[0-299]');
    expect(add.kind).toBe('series');
    expect(add.opCount).toBe(300);
    expect(add.children.map(id => label(m, id))).toEqual([
      'group:add[0-299]/add[0-99]',
      'group:add[0-299]/add[100-199]',
      'group:add[0-299]/add[200-299]'
    ]);
    const first = group(m, 'add[0-299]/add[0-99]');
    expect(first.children).toHaveLength(100);
    expect(label(m, first.children[0])).toBe('op:add');
    expect(label(m, first.children[99])).toBe('op:add_99');
    expect(group(m, 'Const[0-149]').children.map(id => label(m, id))).toEqual([
      'group:Const[0-149]/Const[0-74]',
      'group:Const[0-149]/Const[75-149]'
    ]);
    // collapsed by default: 13 visible nodes, no level above 100 children
    const v = m.visibleGraph();
    expect(v.nodes).toHaveLength(13);
    for (const g of m.groups) {
      expect(g.children.length).toBeLessThanOrEqual(100);
    }
    // an op in a series is revealed through the series and its slice
    const op = m.opByName('add_150')!;
    expect(m.ancestors(op.id).map(g => g.path)).toEqual([
      'add[0-299]',
      'add[0-299]/add[100-199]'
    ]);
    m.reveal(op.id);
    expect(m.visibleGraph().nodes).toHaveLength(12 + 2 + 100);
  });

  it('groups by op type when series do not suffice', () => {
    const types = ['MatMul', 'Add', 'Relu', 'Const', 'Identity'];
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 500; i++) {
      nodes.push(node(`n_${letters(i)}`, types[i % 5]));
    }
    const m = new GraphModel(doc(nodes));
    expect(m.root.children.map(id => label(m, id)).sort()).toEqual([
      'group:Add (100)',
      'group:Const (100)',
      'group:Identity (100)',
      'group:MatMul (100)',
      'group:Relu (100)'
    ]);
    expect(group(m, 'MatMul (100)').kind).toBe('type');
    expect(group(m, 'MatMul (100)').children).toHaveLength(100);
  });

  it('slices a level of unrelated ops into ranges as a last resort', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 250; i++) {
      nodes.push(node(`n_${letters(i)}`, `Type${i}`));
    }
    const m = new GraphModel(doc(nodes));
    expect(m.root.children).toHaveLength(3);
    expect(m.root.children.map(id => (m.item(id) as { kind: string }).kind)).toEqual([
      'range',
      'range',
      'range'
    ]);
    // three slices of equal size: 84 + 83 + 83
    expect(m.root.children.map(id => (m.item(id) as IGroup).children.length)).toEqual([84, 83, 83]);
    expect(m.root.children.map(id => m.item(id)!.label)).toEqual([
      `n_a \u2026 n_${letters(83)}`,
      `n_${letters(84)} \u2026 n_${letters(166)}`,
      `n_${letters(167)} \u2026 n_${letters(249)}`
    ]);
  });

  it('slices 101 unrelated ops into two even halves, not 100 + 1', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 101; i++) {
      nodes.push(node(`n_${letters(i)}`, `Type${i}`));
    }
    const m = new GraphModel(doc(nodes));
    const sizes = m.root.children.map(id => (m.item(id) as IGroup).children.length);
    expect(sizes).toEqual([51, 50]);
    expect(m.root.children.map(id => m.item(id)!.label)).toEqual([
      `n_a \u2026 n_${letters(50)}`,
      `n_${letters(51)} \u2026 n_${letters(100)}`
    ]);
    // every op is in exactly one slice, in document order
    const flat = m.root.children.flatMap(id => (m.item(id) as IGroup).children);
    expect(flat.map(id => m.item(id)!.label)).toEqual(nodes.map(n => n.name));
  });

  it('slices evenly at every size: ceil(n / max) slices differing by one op at most', () => {
    for (const n of [11, 12, 19, 20, 21, 99, 100, 101]) {
      const nodes: INodeDoc[] = [];
      for (let i = 0; i < n; i++) {
        nodes.push(node(`n_${letters(i)}`, `Type${i}`));
      }
      const m = new GraphModel(doc(nodes), { maxChildren: 10 });
      const count = (id: string) => (m.item(id) as IGroup).opCount;
      const top = m.root.children;
      // up to 100 ops: ceil(n / 10) slices; above, ceil(n / 100) slices of slices
      expect(top).toHaveLength(n <= 100 ? Math.ceil(n / 10) : Math.ceil(n / 100));
      const sizes = top.map(count);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(n);
      for (const g of m.groups) {
        expect(g.children.length).toBeLessThanOrEqual(10);
        const subs = g.children.filter(id => m.isGroupId(id)).map(count);
        if (subs.length) {
          expect(Math.max(...subs) - Math.min(...subs)).toBeLessThanOrEqual(1);
        }
      }
    }
  });

  it('groups names that differ only in a number ("op0" ... "op149_grad")', () => {
    const nodes: INodeDoc[] = [];
    for (let i = 0; i < 150; i++) {
      nodes.push(node(`op${i}`, 'Add'), node(`op${i}_grad`, 'AddGrad'));
    }
    const m = new GraphModel(doc(nodes));
    expect(m.root.children.map(id => m.item(id)!.label)).toEqual(['op[0-149]', 'op[0-149]_grad']);
    expect(group(m, 'op[0-149]').children.map(id => m.item(id)!.label)).toEqual([
      'op[0-74]',
      'op[75-149]'
    ]);
  });

  it('groups series of scopes too (tower_0 ... tower_199)', () => {
    const nodes: INodeDoc[] = [];
    for (let t = 0; t < 200; t++) {
      nodes.push(node(`tower_${t}/MatMul`, 'MatMul'), node(`tower_${t}/Relu`, 'Relu'));
    }
    const m = new GraphModel(doc(nodes));
    expect(m.root.children.map(id => label(m, id))).toEqual(['group:tower[0-199]']);
    const series = group(m, 'tower[0-199]');
    expect(series.opCount).toBe(400);
    expect(series.children.map(id => m.item(id)!.label)).toEqual(['tower[0-99]', 'tower[100-199]']);
    // the real scope is still found by its path
    expect(group(m, 'tower_150').parent).toBe(group(m, 'tower[0-199]/tower[100-199]').index);
  });
});

describe('layout input', () => {
  it('gives compound parents only for expanded groups, and sizes from labels', () => {
    const d = smallDoc();
    d.nodes.push(node('a_rather_long_scope_name/op', 'NoOp'));
    const m = new GraphModel(d, { smallGraphOps: 0 });
    m.setExpanded(group(m, 'layer1').index, true);
    const input = m.layoutInput();
    const byId = new Map(input.nodes.map(n => [label(m, n.id), n]));

    // room for the header "layer1 · 3 ops" (14 characters) and the button
    expect(input.clusters).toEqual([{ id: group(m, 'layer1').id, minWidth: 14 * 6.5 + 40 }]);
    expect(byId.get('op:layer1/MatMul')).toEqual({
      id: m.opByName('layer1/MatMul')!.id,
      width: 6 * 7 + 24,
      height: OP_HEIGHT,
      parent: group(m, 'layer1').id
    });
    expect(byId.get('op:x')).toEqual({ id: m.opByName('x')!.id, width: 50, height: OP_HEIGHT });
    // collapsed groups: no parent at the top level; label width + room for the button
    expect(byId.get('group:w')).toEqual({ id: group(m, 'w').id, width: 96, height: GROUP_HEIGHT });
    expect(byId.get('group:a_rather_long_scope_name')!.width).toBe(24 * 7 + 48);
    // nothing inside a collapsed group is laid out
    expect(byId.has('op:w/read')).toBe(false);

    // edges: task edges carry the _Send/_Recv label box; control-only edges weigh less
    const edges = new Map(input.edges.map(e => [`${label(m, e.source)} -> ${label(m, e.target)}`, e]));
    expect(edges.get('op:layer1/MatMul -> op:layer1/add')).toMatchObject({
      label: '_Send/_Recv',
      width: 11 * 6 + 10,
      height: 14,
      weight: 2
    });
    expect(edges.get('group:w -> op:init')).toMatchObject({ weight: 1 });
    expect(edges.get('group:w -> op:init')!.label).toBeUndefined();

    // nested expansion: clusters name their parent cluster
    m.setExpanded(group(m, 'w').index, true);
    m.setExpanded(group(m, 'w/Initializer').index, true);
    const nested = m.layoutInput();
    expect(nested.clusters).toContainEqual({
      id: group(m, 'w/Initializer').id,
      parent: group(m, 'w').id,
      minWidth: 18 * 6.5 + 40 // "Initializer · 1 op"
    });
    expect(nested.nodes.find(n => n.id === m.opByName('w/Initializer/zeros')!.id)!.parent).toBe(
      group(m, 'w/Initializer').id
    );
    expect(nested.nodes.find(n => n.id === m.opByName('w')!.id)!.parent).toBe(group(m, 'w').id);
  });
});

describe('5,000 ops', () => {
  function towers(): IGraphDoc {
    // 50 scopes x 100 ops: a chain in each tower, every tower reads the previous one
    const nodes: INodeDoc[] = [];
    const edges: IEdgeSpec[] = [];
    for (let t = 0; t < 50; t++) {
      const device = t % 2 ? GPU1 : GPU0;
      for (let i = 0; i < 100; i++) {
        nodes.push(node(`tower_${t}/layer_${Math.floor(i / 10)}/op_${i}`, 'MatMul', device));
        if (i > 0) {
          edges.push(edge(`tower_${t}/layer_${Math.floor((i - 1) / 10)}/op_${i - 1}`, nodes[nodes.length - 1].name));
        }
      }
      if (t > 0) {
        // the towers alternate between tasks 0 and 1: a _Send/_Recv edge
        edges.push(edge(`tower_${t - 1}/layer_9/op_99`, `tower_${t}/layer_0/op_0`));
      }
    }
    return doc(nodes, edges);
  }

  // No wall-clock limits (CI is a loaded 2-core machine): structure only, with a generous
  // jest timeout per test.
  it('builds the model and the visible graph', () => {
    const m = new GraphModel(towers());
    const v = m.visibleGraph();
    const input = m.layoutInput(v);
    expect(m.ops).toHaveLength(5000);
    expect(v.nodes).toHaveLength(50);
    expect(input.edges).toHaveLength(49);
    expect(input.edges.every(e => e.label === '_Send/_Recv')).toBe(true);

    m.toggle(group(m, 'tower_7').index);
    const v2 = m.visibleGraph();
    m.layoutInput(v2);
    // 49 towers + tower_7's 10 layers
    expect(v2.nodes).toHaveLength(59);
    expect(m.canExpandAll).toBe(false);
  }, 60000);

  it('keeps a flat 5,000-op level readable', () => {
    const nodes: INodeDoc[] = [];
    const edges: IEdgeSpec[] = [];
    const types = ['Add', 'Mul', 'Const', 'Identity', 'MatMul'];
    for (let i = 0; i < 5000; i++) {
      const type = types[i % 5];
      const k = Math.floor(i / 5);
      nodes.push(node(k === 0 ? type.toLowerCase() : `${type.toLowerCase()}_${k}`, type));
      if (i > 0) {
        edges.push(edge(nodes[i - 1].name, nodes[i].name));
      }
    }
    const m = new GraphModel(doc(nodes, edges));
    const v = m.visibleGraph();
    m.layoutInput(v);
    // five series of 1,000: add[0-999] ...; each sliced into 10 of 100
    expect(v.nodes.map(id => m.item(id)!.label).sort()).toEqual([
      'add[0-999]',
      'const[0-999]',
      'identity[0-999]',
      'matmul[0-999]',
      'mul[0-999]'
    ]);
    expect(group(m, 'add[0-999]').children).toHaveLength(10);
    for (const g of m.groups) {
      expect(g.children.length).toBeLessThanOrEqual(100);
    }
  }, 60000);
});
