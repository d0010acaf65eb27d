// The MIME renderer extension (package.json "jupyterlab.mimeExtension"): draws
// application/vnd.tfjupyter.graph+json outputs with GraphRenderer.

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { MIME_TYPE } from './graph/model';
import { GraphRenderer } from './graph/view';

export { MIME_TYPE };

/**
 * Safe: the renderer only draws SVG from escaped text and never runs the document's content,
 * so graphs show in untrusted notebooks too. Rank 0 puts it ahead of the bundle's text/html
 * fallback (rank 50).
 */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 0,
  createRenderer: options => new GraphRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tfjupyter-labextension:graph',
  description: 'Renders tfjupyter graphs (name scopes, devices, placement).',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
