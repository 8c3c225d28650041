// Load a TypeScript module of www/src for node's test runner (node 20 cannot strip types): bundle
// it with esbuild into target/unit-recip/ and import the result.
import { build } from 'esbuild';
import { mkdirSync } from 'node:fs';
import { join, dirname, basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function importTs(rel) {
  const out = join(ROOT, 'target', 'unit-recip');
  mkdirSync(out, { recursive: true });
  const file = join(out, `${basename(rel, '.ts')}-${process.pid}.mjs`);
  await build({
    entryPoints: [join(ROOT, rel)], outfile: file, bundle: true, platform: 'node', format: 'esm',
    target: 'node20', logLevel: 'warning',
  });
  return import(pathToFileURL(file).href);
}
