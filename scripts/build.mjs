#!/usr/bin/env node
// Build the static site into www/dist/:
//   pkg/           plain wasm module (WebGPU + single-threaded CPU, SIMD)
//   pkg-parallel/  threaded wasm module (rayon over Web Workers, shared memory, SIMD)
//   app.js, worker.js, nanobragg-view.js (esbuild bundles), chunks/ (the lazily loaded three.js
//   view and what it shares with its entry), index.html, style.css
//
// Installs what is missing: rustup target / component, the wasm-bindgen CLI at the exact
// version in Cargo.lock, npm packages.
//
// Flags: --ts-only (skip the Rust builds; reuse the wasm already in www/dist),
//        --skip-parallel (build only the plain module), --dev (no wasm-opt, no minify).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, copyFileSync, rmSync, statSync, readdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

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
async function buildTs() {
  const esbuild = await import('esbuild');
  const common = {
    bundle: true, format: 'esm', target: 'es2022', sourcemap: true, minify: !dev,
    logLevel: 'warning', absWorkingDir: root,
    // The wasm-bindgen glue is loaded at run time from pkg*/ beside the bundle (no-bundler).
    external: ['./pkg/*', './pkg-parallel/*'],
  };
  await esbuild.build({ ...common, entryPoints: { worker: 'www/src/worker.ts' }, outdir: dist });
  // the measured-image worker (www/src/measured/worker.ts): decodes dropped images with the plain module
  await esbuild.build({ ...common, entryPoints: { 'measured-worker': 'www/src/measured/worker.ts' }, outdir: dist });
  // The page and the element load the reciprocal-space view (three.js) lazily: code splitting
  // puts it in its own chunk (chunks/view3d-*.js), fetched when the 3D view is first opened.
  // One build per entry, so that each entry stays one file apart from that chunk.
  rmSync(join(dist, 'chunks'), { recursive: true, force: true });
  for (const [name, entry] of [['app', 'www/src/main.ts'], ['nanobragg-view', 'www/src/embed.ts']]) {
    await esbuild.build({
      ...common, entryPoints: { [name]: entry }, outdir: dist, splitting: true, chunkNames: 'chunks/[name]-[hash]',
    });
  }
  for (const f of ['index.html', 'style.css']) copyFileSync(join(root, 'www', f), join(dist, f));
  for (const dir of ['examples', 'samples']) {
    const src = join(root, 'www', dir);
    if (!existsSync(src)) continue;
    mkdirSync(join(dist, dir), { recursive: true });
    for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dist, dir, f));
  }
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
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s -> ${dist}`);
}

main().catch((e) => { console.error(`[build] ${e.message}`); process.exit(1); });
