#!/usr/bin/env node
// Unit tests of the front end's pure modules (state, URL codec, argument building, geometry,
// file routing): www/test/*.test.ts bundled with esbuild and run by node's test runner. Fast
// (no wasm, no browser): `npm run test:unit`.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'www', 'test');
const out = join(root, 'target', 'unit-tests');
rmSync(out, { recursive: true, force: true });
const entries = readdirSync(src).filter((f) => f.endsWith('.test.ts')).map((f) => join(src, f));
await build({ entryPoints: entries, outdir: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', outExtension: { '.js': '.mjs' }, logLevel: 'warning' });
const files = readdirSync(out).filter((f) => f.endsWith('.mjs')).map((f) => join(out, f));
const r = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
