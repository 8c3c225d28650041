#!/usr/bin/env node
// Unit tests of the front end's pure modules (no wasm, no browser; a few seconds):
// `npm run test:unit`. tests/unit/*.test.ts are bundled with esbuild (node 20 cannot strip
// types) into target/unit-tests/ and run by node's test runner together with
// tests/unit/*.test.mjs (which load their TypeScript through tests/unit/helpers.mjs).
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'tests', 'unit');
const out = join(root, 'target', 'unit-tests');
rmSync(out, { recursive: true, force: true });
const ts = readdirSync(src).filter((f) => f.endsWith('.test.ts')).map((f) => join(src, f));
await build({ entryPoints: ts, outdir: out, bundle: true, platform: 'node', format: 'esm', target: 'node20', outExtension: { '.js': '.mjs' }, logLevel: 'warning' });
const files = [
  ...readdirSync(out).filter((f) => f.endsWith('.mjs')).map((f) => join(out, f)),
  ...readdirSync(src).filter((f) => f.endsWith('.test.mjs')).map((f) => join(src, f)),
];
const r = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
