#!/usr/bin/env node
// Build the static site into www/dist/: one folder any static host serves (relative URLs, so
// under any base path), each file once, no source maps (those go to www/dist-maps/):
//   pkg/           plain wasm module (WebGPU + single-threaded CPU, SIMD)
//   pkg-parallel/  threaded wasm module (rayon over Web Workers, shared memory, SIMD)
//   app.js, nanobragg-view.js (the page and the element: one esbuild build, what they share and
//   the lazily loaded three.js view in chunks/), worker.js, measured-worker.js, index.html,
//   style.css, examples/, samples/, coi.js + sw.js (the service worker that adds COOP/COEP on a
//   host that cannot: threads anywhere; it keeps a copy for offline visits), docs/ (README.md and
//   docs/*.md as pages, scripts/build-docs.mjs)
// and the npm package of the element into www/dist-npm/ (scripts/package-npm.mjs).
//
// Installs what is missing: rustup target / component, the wasm-bindgen CLI at the exact
// version in Cargo.lock, npm packages.
//
// Flags: --ts-only (skip the Rust builds; reuse the wasm already in www/dist),
//        --skip-parallel (build only the plain module), --dev (no wasm-opt, no minify).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, copyFileSync, rmSync, statSync, readdirSync, writeFileSync, renameSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, dirname } from 'node:path';
import { buildDocs } from './build-docs.mjs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { packageNpm } from './package-npm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'www', 'dist');
const argv = new Set(process.argv.slice(2));
const tsOnly = argv.has('--ts-only');
const skipParallel = argv.has('--skip-parallel');
const dev = argv.has('--dev');

function log(msg) { console.log(`[build] ${msg}`); }
function run(cmd, args, opts = {}) {
  log(`$ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} failed with status ${r.status}`);
}
function out(cmd, args) {
  try { return execFileSync(cmd, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); }
  catch { return ''; }
}

// ---- tools -------------------------------------------------------------------------------
function ensureNodeModules() {
  const need = ['esbuild', 'binaryen', 'playwright-core', 'typescript', '@preact/signals-core', 'three'];
  if (need.every((p) => existsSync(join(root, 'node_modules', p)))) return;
  run('npm', ['install', '--no-audit', '--no-fund']);
}

function wasmBindgenVersion() {
  const lock = readFileSync(join(root, 'Cargo.lock'), 'utf8');
  const m = lock.match(/\[\[package\]\]\nname = "wasm-bindgen"\nversion = "([^"]+)"/);
  if (!m) throw new Error('wasm-bindgen not found in Cargo.lock (run cargo generate-lockfile?)');
  return m[1];
}

// The nightly of the threaded build (-Z build-std), pinned so that every machine builds what CI
// built (as wasm-bindgen-rayon pins its nightly); NANOBRAGG_NIGHTLY overrides it.
const NIGHTLY = process.env.NANOBRAGG_NIGHTLY || 'nightly-2026-05-20';

function ensureRust() {
  const targets = out('rustup', ['target', 'list', '--installed']);
  if (!targets.split('\n').includes('wasm32-unknown-unknown')) run('rustup', ['target', 'add', 'wasm32-unknown-unknown']);
  if (!skipParallel) {
    if (!out('rustup', ['toolchain', 'list']).split('\n').some((t) => t.startsWith(NIGHTLY))) {
      run('rustup', ['toolchain', 'install', NIGHTLY, '--profile', 'minimal', '--component', 'rust-src', '--target', 'wasm32-unknown-unknown']);
    }
    const nt = out('rustup', [`+${NIGHTLY}`, 'target', 'list', '--installed']);
    if (!nt.split('\n').includes('wasm32-unknown-unknown')) run('rustup', [`+${NIGHTLY}`, 'target', 'add', 'wasm32-unknown-unknown']);
    const comps = out('rustup', [`+${NIGHTLY}`, 'component', 'list', '--installed']);
    if (!comps.split('\n').some((c) => c.startsWith('rust-src'))) run('rustup', ['component', 'add', 'rust-src', '--toolchain', NIGHTLY]);
  }
  const want = wasmBindgenVersion();
  const have = out('wasm-bindgen', ['--version']).split(' ')[1];
  if (have !== want) {
    log(`wasm-bindgen CLI ${have || 'missing'}, need ${want}: installing`);
    run('cargo', ['install', 'wasm-bindgen-cli', '--version', want, '--force']);
  }
}

// ---- wasm --------------------------------------------------------------------------------
const WASM_TARGET = 'wasm32-unknown-unknown';

function buildWasm(kind) {
  const parallel = kind === 'parallel';
  const targetDir = join(root, 'target', parallel ? 'wasm-parallel' : 'wasm-plain');
  const env = { ...process.env };
  delete env.RUSTFLAGS; delete env.CARGO_ENCODED_RUSTFLAGS;
  let args;
  if (parallel) {
    env.RUSTFLAGS = [
      '-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128',
      '-C link-arg=--shared-memory',
      '-C link-arg=--max-memory=1073741824',
      '-C link-arg=--import-memory',
      '-C link-arg=--export=__wasm_init_tls',
      '-C link-arg=--export=__tls_size',
      '-C link-arg=--export=__tls_align',
      '-C link-arg=--export=__tls_base',
    ].join(' ');
    args = [`+${NIGHTLY}`, 'build', '-Z', 'build-std=panic_abort,std', '-p', 'nanobragg', '--lib',
      '--target', WASM_TARGET, '--release', '--features', 'wasm,parallel,gpu', '--target-dir', targetDir];
  } else {
    env.RUSTFLAGS = '-C target-feature=+simd128,+bulk-memory,+mutable-globals';
    args = ['build', '-p', 'nanobragg', '--lib', '--target', WASM_TARGET, '--release',
      '--features', 'wasm,gpu', '--target-dir', targetDir];
  }
  run('cargo', args, { env });
  const wasm = join(targetDir, WASM_TARGET, 'release', 'nanobragg.wasm');
  const outDir = join(dist, parallel ? 'pkg-parallel' : 'pkg');
  rmSync(outDir, { recursive: true, force: true });
  // The generated nanobragg.d.ts types the wasm surface for the worker (www/src/worker.ts).
  run('wasm-bindgen', ['--target', 'web', '--out-dir', outDir, '--out-name', 'nanobragg', wasm]);
  if (parallel) patchRayonHelper(outDir);
  const bg = join(outDir, 'nanobragg_bg.wasm');
  if (!dev) {
    const before = statSync(bg).size;
    run(join(root, 'node_modules', '.bin', 'wasm-opt'), [
      '-O3', '--enable-simd', '--enable-bulk-memory', '--enable-mutable-globals', '--enable-sign-ext',
      '--enable-nontrapping-float-to-int', '--enable-reference-types', '--enable-multivalue',
      ...(parallel ? ['--enable-threads'] : []), bg, '-o', bg,
    ]);
    log(`wasm-opt ${kind}: ${before} -> ${statSync(bg).size} bytes`);
  }
  const size = statSync(bg).size;
  const gz = gzipSync(readFileSync(bg), { level: 9 }).length;
  log(`${kind}: ${(size / 1024).toFixed(0)} KiB, ${(gz / 1024).toFixed(0)} KiB gzipped`);
  return { kind, bytes: size, gzip: gz };
}

/** wasm-bindgen-rayon's pool workers call the module's init with positional arguments, which
 * the wasm-bindgen glue deprecates (it warns on the console once per thread): pass one object. */
function patchRayonHelper(outDir) {
  const snippets = join(outDir, 'snippets');
  const files = existsSync(snippets)
    ? readdirSync(snippets, { recursive: true }).map((f) => join(snippets, String(f))).filter((f) => f.endsWith('workerHelpers.no-bundler.js'))
    : [];
  if (files.length !== 1) throw new Error(`expected one wasm-bindgen-rayon workerHelpers.no-bundler.js, found ${files.length}`);
  const old = 'await pkg.default(data.module, data.memory);';
  const src = readFileSync(files[0], 'utf8');
  if (!src.includes(old)) throw new Error(`wasm-bindgen-rayon helper changed: "${old}" not found in ${files[0]}`);
  writeFileSync(files[0], src.replace(old, 'await pkg.default({ module_or_path: data.module, memory: data.memory });'));
}

// ---- TypeScript / static files ----------------------------------------------------------
// The published folder holds each file once and no source maps: production maps go to
// www/dist-maps/ (same relative paths; load them in the browser's devtools by hand), --dev
// links them beside the bundles.
const maps = join(root, 'www', 'dist-maps');
/** Everything in www/dist but the wasm modules (what --ts-only reuses) is rewritten. */
function cleanDist() {
  for (const f of readdirSync(dist)) {
    if (['pkg', 'pkg-parallel', 'build-info.json'].includes(f)) continue;
    rmSync(join(dist, f), { recursive: true, force: true });
  }
  rmSync(maps, { recursive: true, force: true });
}
/** Move the *.map files under `dir` to `to` (same relative paths). */
function moveMaps(dir, to) {
  for (const f of readdirSync(dir, { recursive: true }).map(String)) {
    if (!f.endsWith('.map') || f.startsWith('pkg')) continue;
    mkdirSync(dirname(join(to, f)), { recursive: true });
    renameSync(join(dir, f), join(to, f));
  }
}
function copyDir(src, to, skip = () => false) {
  for (const f of readdirSync(src, { recursive: true }).map(String)) {
    const p = join(src, f);
    if (skip(f) || statSync(p).isDirectory()) continue;
    mkdirSync(dirname(join(to, f)), { recursive: true });
    copyFileSync(p, join(to, f));
  }
}
function listFiles(dir) {
  return readdirSync(dir, { recursive: true }).map(String).filter((f) => statSync(join(dir, f)).isFile()).sort();
}

async function buildTs() {
  const esbuild = await import('esbuild');
  cleanDist();
  const common = {
    bundle: true, format: 'esm', target: 'es2022', sourcemap: dev ? 'linked' : 'external', minify: !dev,
    logLevel: 'warning', absWorkingDir: root,
    // The wasm-bindgen glue is loaded at run time from pkg*/ beside the bundle (no-bundler).
    external: ['./pkg/*', './pkg-parallel/*'],
  };
  await esbuild.build({ ...common, entryPoints: { worker: 'www/src/worker.ts' }, outdir: dist });
  // the measured-image worker (www/src/measured/worker.ts): decodes dropped images with the plain module
  await esbuild.build({ ...common, entryPoints: { 'measured-worker': 'www/src/measured/worker.ts' }, outdir: dist });
  // The page and the element in one build: code splitting puts what they share (the client, the
  // image view, the state) in chunks/, and the reciprocal-space view (three.js, loaded when the 3D
  // view first opens) in one chunk both import. Each entry names its worker itself
  // (new URL('./worker.js', import.meta.url) in main.ts / embed.ts: a chunk's URL is chunks/…).
  await esbuild.build({
    ...common, entryPoints: { app: 'www/src/main.ts', 'nanobragg-view': 'www/src/embed.ts' }, outdir: dist,
    splitting: true, chunkNames: 'chunks/[name]-[hash]',
  });
  for (const f of ['index.html', 'style.css']) copyFileSync(join(root, 'www', f), join(dist, f));
  for (const dir of ['examples', 'samples']) {
    const src = join(root, 'www', dir);
    if (existsSync(src)) copyDir(src, join(dist, dir));
  }
  // the documentation pages (README.md and docs/, scripts/build-docs.mjs) in docs/
  const docs = await buildDocs(root, join(dist, 'docs'));
  log(`documentation: ${docs.length} pages in www/dist/docs`);
  if (!dev) moveMaps(dist, maps);
  // the service worker and its registration (www/site/): the site's version is a hash of its
  // files, the file list is what the worker fetches ahead for offline visits
  copyFileSync(join(root, 'www', 'site', 'coi.js'), join(dist, 'coi.js'));
  const files = listFiles(dist).filter((f) => !f.endsWith('.map') && !f.endsWith('.d.ts'));
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update(readFileSync(join(dist, f)));
  const sw = readFileSync(join(root, 'www', 'site', 'sw.js'), 'utf8')
    .replace("'__NB_VERSION__'", JSON.stringify(hash.digest('hex').slice(0, 12)))
    .replace("'__NB_PRECACHE__'", JSON.stringify(['./', ...files.filter((f) => f !== 'index.html')]));
  writeFileSync(join(dist, 'sw.js'), sw);
}

/** Bytes and file count of a folder (what a static host would publish). */
function folderSize(dir) {
  const files = listFiles(dir);
  return { files: files.length, bytes: files.reduce((s, f) => s + statSync(join(dir, f)).size, 0) };
}

async function main() {
  const t0 = Date.now();
  ensureNodeModules();
  mkdirSync(dist, { recursive: true });
  const sizes = [];
  if (!tsOnly) {
    ensureRust();
    sizes.push(buildWasm('plain'));
    if (!skipParallel) sizes.push(buildWasm('parallel'));
    writeFileSync(join(dist, 'build-info.json'), JSON.stringify({ built: new Date().toISOString(), wasm: sizes }, null, 2));
  } else if (!existsSync(join(dist, 'pkg', 'nanobragg.js'))) {
    throw new Error('--ts-only needs an earlier full build (www/dist/pkg missing)');
  }
  await buildTs();
  const size = folderSize(dist);
  const npm = await packageNpm({ dev });
  log(`npm package nanobragg-view ${npm.version} -> www/dist-npm (npm pack www/dist-npm)`);
  log(`site: ${size.files} files, ${(size.bytes / 1e6).toFixed(2)} MB in www/dist (source maps in www/dist-maps)`);
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s -> ${dist}`);
}

main().catch((e) => { console.error(`[build] ${e.message}`); process.exit(1); });
