// Usage: node --import /abs/path/shim/register.mjs <script> ...
//   or:  NODE_OPTIONS="--import /abs/path/shim/register.mjs" npx conformance ...
// On Node < 22 (no fs.globSync), redirect `import ... from 'fs' | 'node:fs'`
// to fs-glob.mjs, which re-exports node:fs plus a small globSync.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./hooks.mjs', import.meta.url);
}
