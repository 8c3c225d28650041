#!/usr/bin/env node
// Build the reciprocal-space view's standalone demo into target/recip-demo/ (no wasm needed; not
// part of the published site, whose app and element share the same three.js chunk):
//   recip-demo.html, recip-demo.js (small entry), recip/view3d-*.js (the lazily loaded three.js
//   chunk) and its sourcemaps. Prints the gzipped sizes.
//   node scripts/build-recip.mjs [--dev]      (--dev: no minification)
// Importable: `buildRecip({dev, quiet})` resolves to {dir, entry, chunks: [{file, bytes, gzip}]}.
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'target', 'recip-demo');

export async function buildRecip({ dev = false, quiet = false } = {}) {
  const esbuild = await import('esbuild');
  mkdirSync(dist, { recursive: true });
  rmSync(join(dist, 'recip'), { recursive: true, force: true });
  const r = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { 'recip-demo': 'www/src/recip/demo.ts' },
    outdir: dist,
    bundle: true, splitting: true, format: 'esm', target: 'es2022', sourcemap: true, minify: !dev,
    chunkNames: 'recip/[name]-[hash]', metafile: true, logLevel: 'warning',
  });
  copyFileSync(join(root, 'www', 'recip-demo.html'), join(dist, 'recip-demo.html'));
  const files = Object.keys(r.metafile.outputs).filter((f) => f.endsWith('.js')).map((f) => {
    const buf = readFileSync(join(root, f));
    return { file: relative(dist, join(root, f)), bytes: buf.length, gzip: gzipSync(buf, { level: 9 }).length };
  });
  if (!quiet) for (const f of files) console.log(`[build-recip] ${f.file}: ${(f.bytes / 1024).toFixed(1)} KiB, ${(f.gzip / 1024).toFixed(1)} KiB gzipped`);
  return { dir: dist, entry: files.find((f) => f.file === 'recip-demo.js'), chunks: files.filter((f) => f.file !== 'recip-demo.js') };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  buildRecip({ dev: process.argv.includes('--dev') }).catch((e) => {
    console.error(`[build-recip] ${e.message}`);
    process.exit(1);
  });
}
