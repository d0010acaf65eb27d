/**
 * @jest-environment jsdom
 */
// The graph renderer (src/graph/view.ts) in jsdom: a hostile document must draw as text,
// never as markup, and bad colors must not reach attributes or styles. Also the wheel: it
// zooms only with Ctrl/Meta or once the graph was clicked, else the page scrolls.

import './jsdom-stubs';

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { DEVICE_PALETTE, IGraphDoc, MIME_TYPE, shortLabel } from '../graph/model';
import { GraphRenderer } from '../graph/view';

import { doc, edge, node } from './docs';

const IMG_OP = 'x/<img src=x onerror=alert(1)>';
const SCRIPT_OP = '</svg><script>alert(2)</script>';
const QUOTED_TYPE = `Mat"Mul'<b>bold</b>`;
const TITLE = `<script>alert(3)</script> "graph" & 'co'`;
const DEV_A = '/job:worker/replica:0/task:0/device:CPU:0';
const DEV_B = '/job:worker/replica:0/task:1/device:GPU:0';
const DEV_C = '/job:w"><img src=x onerror=alert(4)>/replica:0/task:1/device:GPU:0';

function hostileDoc(): IGraphDoc {
  // edges (from IMG_OP's inputs): SCRIPT_OP -> IMG_OP carries a tensor from task 1 to task 0,
  // ^y<iframe> -> IMG_OP comes from the hostile job's task: both cross tasks
  const d = doc([
    node(IMG_OP, QUOTED_TYPE, DEV_A, {
      soft: true,
      requested: '"><img src=x onerror=alert(5)>',
      reason: 'soft placement: <svg onload=alert(6)>',
      inputs: [`${SCRIPT_OP}:0`, '^y<iframe>'],
      outputs: [{ dtype: '<i>float32</i>', shape: '(?, "<img src=x>")' }],
      attrs: { '<k onclick=alert(7)>': '<v onmouseover=alert(8)>' }
    }),
    node(SCRIPT_OP, 'Const', DEV_B),
    node('y<iframe>', '<object>', DEV_C)
  ]);
  d.title = TITLE;
  d.devices = [
    { name: DEV_A, short: 'cpu', task: '/job:worker/replica:0/task:0', type: 'CPU', color: 'red;background:url(x)', ops: 1 },
    { name: DEV_B, short: 'gpu', task: '/job:worker/replica:0/task:1', type: 'GPU', color: 'javascript:alert(1)', ops: 1 },
    {
      name: DEV_C,
      short: '<img src=x onerror=alert(9)>',
      task: '/job:w"><img src=x onerror=alert(4)>/replica:0/task:1',
      type: 'GPU',
      color: '"><script>alert(10)</script>',
      ops: 1
    }
  ];
  return d;
}

/** Elements the renderer itself makes; anything else came from the document. */
const ALLOWED = new Set(
  (
    'div span button input datalist option table tbody tr th td ul li a code br ' +
    'svg defs marker g path rect circle text title'
  ).split(' ')
);

function render(d: IGraphDoc = hostileDoc()): Promise<GraphRenderer> {
  const r = new GraphRenderer({ mimeType: MIME_TYPE } as IRenderMime.IRendererOptions);
  document.body.appendChild(r.node);
  const model = { data: { [MIME_TYPE]: d }, metadata: {}, trusted: false } as unknown;
  return r.renderModel(model as IRenderMime.IMimeModel).then(() => r);
}

const SAFE_COLOR = /^(#[0-9a-fA-F]{3,8}|none|url\(#tfj\d+-arrow(-control|-task)?\))$/;

/** Only the renderer's own elements and attributes; colors and styles clean. */
function expectClean(root: Element): void {
  const tags = new Set<string>();
  for (const el of Array.from(root.querySelectorAll('*'))) {
    tags.add(el.localName);
    for (const attr of Array.from(el.attributes)) {
      expect(attr.name.startsWith('on') ? attr.name : '').toBe('');
      if (['fill', 'stroke', 'marker-end'].includes(attr.name)) {
        expect(attr.value).toMatch(SAFE_COLOR);
      }
      if (attr.name === 'style') {
        expect(attr.value).toMatch(/^background:#[0-9a-fA-F]{6}$/);
      }
      if (attr.name === 'href') {
        expect(attr.value).toBe('#');
      }
    }
  }
  expect([...tags].filter(t => !ALLOWED.has(t))).toEqual([]);
  expect(root.querySelectorAll('img, script, iframe, object, b, i, k, v, foreignObject')).toHaveLength(
    0
  );
}

function click(el: Element): void {
  el.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true, button: 0 }));
}

afterEach(() => {
  document.body.innerHTML = '';
});

describe('graph view escaping', () => {
  it('draws a hostile document as text (expanded: ops, clusters, edges, legend)', async () => {
    const r = await render();
    const root = r.node;
    expectClean(root);

    // the header shows the title literally
    expect(root.querySelector('.tfj-title')!.textContent).toBe(TITLE);
    expect(root.querySelector('.tfj-title')!.getAttribute('title')).toBe(TITLE);

    // ops: data attributes and labels hold the names as they are
    const ops = Array.from(root.querySelectorAll('g.tfj-node[data-kind="op"]'));
    const byName = new Map(ops.map(g => [g.getAttribute('data-name')!, g]));
    expect([...byName.keys()].sort()).toEqual([SCRIPT_OP, IMG_OP, 'y<iframe>'].sort());
    const img = byName.get(IMG_OP)!;
    expect(img.getAttribute('data-type')).toBe(QUOTED_TYPE);
    expect(img.getAttribute('data-device')).toBe(DEV_A);
    expect(img.querySelector('.tfj-label')!.textContent).toBe(
      shortLabel('<img src=x onerror=alert(1)>')
    );
    expect(img.querySelector('title')!.textContent).toContain(`${IMG_OP} (${QUOTED_TYPE})`);
    expect(byName.get('y<iframe>')!.getAttribute('data-device')).toBe(DEV_C);

    // bad colors were replaced by the palette color of the device's place in the list
    const fill = (name: string) => byName.get(name)!.querySelector('.tfj-shape')!.getAttribute('fill');
    expect(fill(IMG_OP)).toBe(DEVICE_PALETTE[0]);
    expect(fill(SCRIPT_OP)).toBe(DEVICE_PALETTE[1]);
    expect(fill('y<iframe>')).toBe(DEVICE_PALETTE[2]);

    // the scopes made of hostile names are clusters with literal paths
    const clusters = Array.from(root.querySelectorAll('g.tfj-cluster')).map(g =>
      g.getAttribute('data-name')
    );
    expect(clusters).toEqual(expect.arrayContaining(['x', '</svg><script>alert(2)<']));

    // the cross-task edge carries the names literally
    const task = root.querySelector('path.tfj-cross-task[data-control="false"]')!;
    expect(task.getAttribute('data-source')).toBe(SCRIPT_OP);
    expect(task.getAttribute('data-target')).toBe(IMG_OP);
    expect(task.querySelector('title')!.textContent).toContain(`${SCRIPT_OP}:0`);

    // legend: hostile short name as text, swatches with clean colors
    const legend = root.querySelector('.tfj-legend')!;
    expect(legend.textContent).toContain('<img src=x onerror=alert(9)>');
    const swatches = Array.from(legend.querySelectorAll('.tfj-swatch')).map(s =>
      s.getAttribute('style')
    );
    expect(swatches.slice(0, 3)).toEqual(DEVICE_PALETTE.slice(0, 3).map(c => `background:${c}`));
    r.dispose();
  });

  it('shows op details literally', async () => {
    const r = await render();
    expect(r.focusOp(IMG_OP)).toBe(true);
    const details = r.node.querySelector('.tfj-details')!;
    expectClean(r.node);
    expect(details.getAttribute('data-name')).toBe(IMG_OP);
    expect(details.querySelector('.tfj-details-title')!.textContent).toBe(IMG_OP);
    const text = details.textContent!;
    for (const literal of [
      QUOTED_TYPE,
      '"><img src=x onerror=alert(5)>',
      'soft placement: <svg onload=alert(6)>',
      '<i>float32</i>',
      '(?, "<img src=x>")',
      '<k onclick=alert(7)>',
      '<v onmouseover=alert(8)>',
      DEV_A
    ]) {
      expect(text).toContain(literal);
    }
    const links = Array.from(details.querySelectorAll('a.tfj-op-link'));
    expect(links.map(a => a.getAttribute('data-op'))).toEqual([SCRIPT_OP, 'y<iframe>']);
    expect(links.map(a => a.textContent)).toEqual([`${SCRIPT_OP}:0`, '^y<iframe>']);
    // the device swatch: a palette color, not the document's
    expect(details.querySelector('.tfj-swatch')!.getAttribute('style')).toBe(
      `background:${DEVICE_PALETTE[0]}`
    );

    // following an input link selects that op
    click(links[0]);
    expect(details.querySelector('.tfj-details-title')!.textContent).toBe(SCRIPT_OP);
    expectClean(r.node);
    r.dispose();
  });

  it('draws collapsed groups and their details literally', async () => {
    const r = await render();
    click(r.node.querySelector('.tfj-collapse-all')!);
    expectClean(r.node);
    const groups = Array.from(r.node.querySelectorAll('g.tfj-node[data-kind="group"]'));
    // SCRIPT_OP's scopes: "<" and inside it "</svg><script>alert(2)<"
    expect(groups.map(g => g.getAttribute('data-name')).sort()).toEqual(['<', 'x']);
    const lt = groups.find(g => g.getAttribute('data-name') === '<')!;
    expect(lt.getAttribute('data-expanded')).toBe('false');
    expect(lt.getAttribute('data-device')).toBe(DEV_B);
    expect(lt.querySelector('.tfj-group-label')!.textContent).toBe('<');
    expect(lt.querySelector('.tfj-shape')!.getAttribute('fill')).toBe(DEVICE_PALETTE[1]);
    expect(lt.querySelector('title')!.textContent).toContain('<\n1 op');

    // expanding it shows the inner scope, collapsed, with its literal label
    click(lt.querySelector('.tfj-expand')!);
    expectClean(r.node);
    const inner = r.node.querySelector(
      'g.tfj-node[data-kind="group"][data-expanded="false"][data-name^="</svg>"]'
    )!;
    expect(inner.getAttribute('data-name')).toBe('</svg><script>alert(2)<');
    expect(inner.querySelector('.tfj-group-label')!.textContent).toBe('svg><script>alert(2)<');

    click(inner.querySelector('.tfj-shape')!);
    const details = r.node.querySelector('.tfj-details')!;
    expect(details.querySelector('.tfj-details-title')!.textContent).toBe('</svg><script>alert(2)<');
    expect(details.textContent).toContain('gpu');
    expectClean(r.node);

    // the search list holds the names as option values
    r.node
      .querySelector('.tfj-search')!
      .dispatchEvent(new FocusEvent('focusin', { bubbles: true }));
    const options = Array.from(r.node.querySelectorAll('datalist option')).map(o =>
      o.getAttribute('value')
    );
    expect(options).toEqual([IMG_OP, SCRIPT_OP, 'y<iframe>']);
    expectClean(r.node);
    r.dispose();
  });
});

describe('graph view wheel', () => {
  function wheel(target: Element, init: WheelEventInit = {}): WheelEvent {
    const event = new WheelEvent('wheel', { bubbles: true, cancelable: true, deltaY: -100, ...init });
    target.dispatchEvent(event);
    return event;
  }

  function pointer(target: Element, type: string): void {
    // jsdom has no PointerEvent; the view reads only button and the coordinates
    target.dispatchEvent(new MouseEvent(type, { bubbles: type !== 'pointerleave', button: 0 }));
  }

  it('leaves the wheel to the page unless Ctrl/Meta is held or the graph was clicked', async () => {
    const r = await render(doc([node('a', 'Const'), node('b', 'Add')], [edge('a', 'b')]));
    const canvas = r.node.querySelector('.tfj-canvas')!;
    const viewport = r.node.querySelector('.tfj-viewport')!;
    expect(r.node.querySelector('.tfj-details-hint')!.textContent).toContain(
      'Ctrl+wheel or click, then wheel, to zoom'
    );
    const before = viewport.getAttribute('transform');

    // scrolling past the graph: the page scrolls, the graph does not zoom
    expect(wheel(canvas).defaultPrevented).toBe(false);
    expect(viewport.getAttribute('transform')).toBe(before);

    // Ctrl+wheel (and trackpad pinch, which arrives as ctrlKey wheel events) zooms
    expect(wheel(canvas, { ctrlKey: true }).defaultPrevented).toBe(true);
    const zoomed = viewport.getAttribute('transform');
    expect(zoomed).not.toBe(before);
    expect(wheel(canvas, { metaKey: true }).defaultPrevented).toBe(true);

    // a click inside makes the graph take the wheel, until the pointer leaves the canvas
    pointer(canvas, 'pointerdown');
    pointer(canvas, 'pointerup');
    expect(canvas.classList.contains('tfj-active')).toBe(true);
    const active = viewport.getAttribute('transform');
    expect(wheel(canvas).defaultPrevented).toBe(true);
    expect(viewport.getAttribute('transform')).not.toBe(active);
    pointer(canvas, 'pointerleave');
    expect(canvas.classList.contains('tfj-active')).toBe(false);
    const left = viewport.getAttribute('transform');
    expect(wheel(canvas).defaultPrevented).toBe(false);
    expect(viewport.getAttribute('transform')).toBe(left);
    r.dispose();
  });
});
