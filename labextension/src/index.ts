// The extension's entry points.
//
// JupyterLab loads two modules of this package (package.json "jupyterlab"):
// - "extension" (this file): the application plugins, i.e. the cluster side panel;
// - "mimeExtension" (./mime): the graph renderer for application/vnd.tfjupyter.graph+json.
// A MIME renderer extension is not an application plugin, so it is exported from its own
// module; it is re-exported here for code that imports the package.

import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { clusterPanelPlugin } from './panel';

export { default as graphMimeExtension, MIME_TYPE, rendererFactory } from './mime';
export { GraphModel } from './graph/model';
export { GraphRenderer } from './graph/view';
export { clusterPanelPlugin };

const plugins: JupyterFrontEndPlugin<any>[] = [clusterPanelPlugin];

export default plugins;
