// DOM APIs jsdom lacks that the code under test touches; imported before it (import order
// is evaluation order). Only what is missing is stubbed.

const g = globalThis as unknown as { [k: string]: unknown };

// @lumino/dragdrop (pulled in by @lumino/widgets) subclasses DragEvent when it loads.
if (typeof g.DragEvent === 'undefined') {
  g.DragEvent = class DragEvent extends MouseEvent {};
}

// jest's jsdom environment does not expose structuredClone (browsers and node have it);
// dagre uses it on plain layout data.
if (typeof g.structuredClone === 'undefined') {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const v8 = require('v8') as typeof import('v8');
  g.structuredClone = (value: unknown) => v8.deserialize(v8.serialize(value));
}

// No pointer capture in jsdom; the graph view calls these when a press ends.
const proto = Element.prototype as unknown as { [k: string]: unknown };
for (const name of ['hasPointerCapture', 'setPointerCapture', 'releasePointerCapture']) {
  if (typeof proto[name] !== 'function') {
    proto[name] = name === 'hasPointerCapture' ? () => false : () => undefined;
  }
}

export {};
