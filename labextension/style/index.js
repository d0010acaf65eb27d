// The style module JupyterLab loads for this extension (package.json "styleModule").
import './graph.css';
import './panel.css';
