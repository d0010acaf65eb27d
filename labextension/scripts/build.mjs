// Builds the federated extension into ../tfjupyter/lab/labextension (package.json
// "jupyterlab.outputDir") with @jupyterlab/builder.
//
// The builder needs JupyterLab's core package metadata (--core-path): without it, it tries to
// fetch @jupyterlab/core-meta from the registry. The core path is the `staging` directory of
// the installed jupyterlab Python package, taken from $JUPYTERLAB_CORE_PATH or, when that is
// not set, asked of `python3 -c "import jupyterlab"` ($PYTHON overrides the interpreter).
//
//   node scripts/build.mjs                  production build
//   node scripts/build.mjs --development    development build (source maps)

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = resolve(here, '..');
const development = process.argv.includes('--development');

function fail(message) {
  console.error(`build: ${message}`);
  process.exit(1);
}

function corePath() {
  const fromEnv = process.env.JUPYTERLAB_CORE_PATH;
  if (fromEnv) {
    return resolve(fromEnv);
  }
  const python = process.env.PYTHON || 'python3';
  const probe = spawnSync(
    python,
    ['-c', 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))'],
    { encoding: 'utf8' }
  );
  if (probe.status !== 0 || !probe.stdout.trim()) {
    fail(
      'JUPYTERLAB_CORE_PATH is not set and `' +
        python +
        ' -c "import jupyterlab"` failed' +
        (probe.stderr ? `:\n${probe.stderr.trim()}` : (probe.error ? `: ${probe.error.message}` : '')) +
        '\nSet JUPYTERLAB_CORE_PATH to the `staging` directory of the installed jupyterlab, e.g.\n' +
        '  JUPYTERLAB_CORE_PATH=$(python3 -c "import jupyterlab,os;print(os.path.dirname(jupyterlab.__file__))")/staging npm run build'
    );
  }
  const path = probe.stdout.trim();
  console.log(`build: JUPYTERLAB_CORE_PATH not set; using ${path} (from ${python})`);
  return path;
}

const core = corePath();
if (!existsSync(join(core, 'package.json'))) {
  fail(`${core} has no package.json; JUPYTERLAB_CORE_PATH must be jupyterlab's staging directory`);
}
if (!existsSync(join(pkgDir, 'lib', 'index.js')) || !existsSync(join(pkgDir, 'lib', 'mime.js'))) {
  fail('lib/ is missing; run `tsc -b` first (npm run build does)');
}

const require = createRequire(import.meta.url);
let builder;
try {
  builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js', { paths: [pkgDir] });
} catch {
  fail('@jupyterlab/builder is not installed; run `npm ci` first');
}

const args = [builder, '--core-path', core];
if (development) {
  args.push('--development');
}
args.push(pkgDir);
const run = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: pkgDir });
if (run.status !== 0) {
  fail(`build-labextension exited with ${run.status ?? run.signal}`);
}
