// Removes what `npm run build` writes: lib/ (with tsc's build info) and the built
// extension in ../tfjupyter/lab/labextension.
import { rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
for (const path of ['lib', 'tsconfig.tsbuildinfo', '../tfjupyter/lab/labextension']) {
  rmSync(resolve(pkgDir, path), { recursive: true, force: true });
}
