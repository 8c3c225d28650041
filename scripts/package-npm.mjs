#!/usr/bin/env node
// The <nanobragg-view> element as the npm package `nanobragg-view`, in www/dist-npm/ (run by
// scripts/build.mjs after the site; needs www/dist built):
//   nanobragg-view.js (the element alone; the three.js view in chunks/), worker.js, pkg/ and
//   pkg-parallel/ (the two wasm modules), nanobragg-view.d.ts (attributes and events, the attribute
//   names from the element's own list), README.md (www/npm/), package.json versioned with the
//   crate (crate/Cargo.toml).  `npm pack www/dist-npm` makes the tarball; tests/browser/npm.test.mjs
//   installs it into a scratch project and renders it.
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export function crateVersion() {
  const m = readFileSync(join(root, 'crate', 'Cargo.toml'), 'utf8').match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error('no version in crate/Cargo.toml');
  return m[1];
}

/** The element's attribute names, from its own module (www/src/state.ts). */
async function attributeNames(esbuild) {
  const r = await esbuild.build({
    absWorkingDir: root, entryPoints: ['www/src/state.ts'], bundle: true, write: false, format: 'esm',
    platform: 'neutral', logLevel: 'warning', outfile: 'state.mjs',
  });
  const mod = await import(`data:text/javascript;base64,${Buffer.from(r.outputFiles[0].text).toString('base64')}`);
  return mod.ELEMENT_ATTRIBUTES;
}

export async function packageNpm({ dev = false, dist = join(root, 'www', 'dist'), out = join(root, 'www', 'dist-npm') } = {}) {
  const esbuild = await import('esbuild');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  await esbuild.build({
    absWorkingDir: root, entryPoints: { 'nanobragg-view': 'www/src/embed.ts' }, outdir: out,
    bundle: true, splitting: true, format: 'esm', target: 'es2022', minify: !dev, logLevel: 'warning',
    chunkNames: 'chunks/[name]-[hash]', external: ['./pkg/*', './pkg-parallel/*'],
  });
  copyFileSync(join(dist, 'worker.js'), join(out, 'worker.js'));
  for (const pkg of ['pkg', 'pkg-parallel']) {
    for (const f of readdirSync(join(dist, pkg), { recursive: true }).map(String)) {
      const p = join(dist, pkg, f);
      if (f.endsWith('.d.ts') || statSync(p).isDirectory()) continue;
      mkdirSync(dirname(join(out, pkg, f)), { recursive: true });
      copyFileSync(p, join(out, pkg, f));
    }
  }
  const names = await attributeNames(esbuild);
  const template = readFileSync(join(root, 'www', 'npm', 'nanobragg-view.d.ts'), 'utf8');
  const slot = '/* __ATTRIBUTES__ */ string';
  if (!template.includes(slot)) throw new Error(`www/npm/nanobragg-view.d.ts: no ${slot} for the attribute names`);
  const dts = template.replace(slot, names.map((n) => JSON.stringify(n)).join('\n  | '));
  writeFileSync(join(out, 'nanobragg-view.d.ts'), dts);
  copyFileSync(join(root, 'www', 'npm', 'README.md'), join(out, 'README.md'));
  const version = crateVersion();
  const pkgJson = {
    name: 'nanobragg-view',
    version,
    description: '<nanobragg-view>: a live X-ray diffraction pattern as an HTML element (nanoBragg in Rust, WebAssembly: WebGPU or threaded CPU)',
    license: 'MIT',
    type: 'module',
    main: './nanobragg-view.js',
    module: './nanobragg-view.js',
    types: './nanobragg-view.d.ts',
    exports: {
      '.': { types: './nanobragg-view.d.ts', default: './nanobragg-view.js' },
      './worker.js': './worker.js',
      './package.json': './package.json',
    },
    files: ['nanobragg-view.js', 'nanobragg-view.d.ts', 'chunks/', 'worker.js', 'pkg/', 'pkg-parallel/', 'README.md'],
    sideEffects: true,
    keywords: ['x-ray', 'diffraction', 'crystallography', 'web-component', 'custom-element', 'webassembly', 'webgpu'],
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkgJson, null, 2)}\n`);
  return { out, version, attributes: names.length };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  packageNpm({ dev: process.argv.includes('--dev') })
    .then((r) => console.log(`[package-npm] nanobragg-view ${r.version} (${r.attributes} attributes) -> ${r.out}`))
    .catch((e) => { console.error(`[package-npm] ${e.message}`); process.exit(1); });
}
