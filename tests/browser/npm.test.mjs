// The npm package of the element (www/dist-npm, written by the build: scripts/package-npm.mjs):
// `npm pack`, installed offline into a scratch project in a temp folder, its README's snippet
// served there by a plain static server and rendered in chromium; its types compile against a
// use of the element's attributes and events (and reject a wrong one); its version is the crate's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, plainServer, ROOT, ARTIFACTS } from './helpers.mjs';
import { crateVersion } from '../../scripts/package-npm.mjs';

const NPM_DIR = join(ROOT, 'www', 'dist-npm');
let scratch, tarball, host;
before(() => {
  assert.ok(existsSync(join(NPM_DIR, 'package.json')), `${NPM_DIR} missing: run npm run build`);
  scratch = mkdtempSync(join(tmpdir(), 'nb-npm-'));
  const packed = JSON.parse(execFileSync('npm', ['pack', NPM_DIR, '--json', '--pack-destination', scratch], { encoding: 'utf8' }));
  tarball = { name: packed[0].filename, files: packed[0].files.map((f) => f.path), size: packed[0].size };
  const project = join(scratch, 'project');
  execFileSync('mkdir', ['-p', project]);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
  execFileSync('npm', ['install', join(scratch, tarball.name), '--offline', '--no-audit', '--no-fund'], { cwd: project, stdio: 'ignore' });
});
after(async () => {
  await host?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test('the tarball holds the module, its chunks, the worker, both wasm modules, types and README; versioned with the crate', () => {
  const pkg = JSON.parse(readFileSync(join(scratch, 'project', 'node_modules', 'nanobragg-view', 'package.json'), 'utf8'));
  assert.equal(pkg.name, 'nanobragg-view');
  assert.equal(pkg.version, crateVersion());
  assert.equal(pkg.type, 'module');
  assert.equal(tarball.name, `nanobragg-view-${crateVersion()}.tgz`);
  for (const f of ['nanobragg-view.js', 'nanobragg-view.d.ts', 'worker.js', 'README.md', 'pkg/nanobragg.js', 'pkg/nanobragg_bg.wasm', 'pkg-parallel/nanobragg.js', 'pkg-parallel/nanobragg_bg.wasm']) {
    assert.ok(tarball.files.includes(f), `${f} in ${tarball.files.join(' ')}`);
  }
  assert.ok(tarball.files.some((f) => /^chunks\/view3d-.*\.js$/.test(f)));
  assert.ok(!tarball.files.some((f) => /\.map$|^app\.js$|measured-worker/.test(f)), 'only the element');
  console.log(`# npm: ${tarball.name}, ${tarball.files.length} files, ${(tarball.size / 1e6).toFixed(2)} MB packed`);
});

test('the types compile against the attributes and events, and reject a wrong use', () => {
  const project = join(scratch, 'project');
  writeFileSync(join(project, 'use.ts'), `import type { NanoBraggView, NanoBraggViewAttribute } from 'nanobragg-view';
const el: NanoBraggView = document.createElement('nanobragg-view');
const a: NanoBraggViewAttribute = 'lambda';
el.setAttribute(a, '6.2');
el.addEventListener('render', (e) => console.log(e.detail.width * e.detail.height, e.detail.backend, e.detail.renderMs));
el.addEventListener('error', (e) => console.log(e.detail.message.length));
window.addEventListener('nanobragg-frame', (e) => console.log(e.detail.element.result?.data.length));
// @ts-expect-error: not an attribute of the element
const bad: NanoBraggViewAttribute = 'lamda';
// @ts-expect-error: a render's detail has no such field
el.addEventListener('render', (e) => e.detail.pixels);
export { bad };
`);
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: {
    strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], skipLibCheck: false,
  }, files: ['use.ts'] }));
  execFileSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', project], { encoding: 'utf8' });
  // and a wrong attribute without the expectation fails
  writeFileSync(join(project, 'use.ts'), `import type { NanoBraggViewAttribute } from 'nanobragg-view';\nexport const bad: NanoBraggViewAttribute = 'lamda';\n`);
  assert.throws(() => execFileSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', project], { encoding: 'utf8', stdio: 'pipe' }),
    (e) => /'"lamda"' is not assignable to type 'NanoBraggViewAttribute'/.test(String(e.stdout)));
});

test('the README\'s snippet renders in the scratch project, served by a plain static server', { timeout: 180_000 }, async () => {
  const project = join(scratch, 'project');
  const readme = readFileSync(join(project, 'node_modules', 'nanobragg-view', 'README.md'), 'utf8');
  const snippet = readme.match(/```html\n([\s\S]*?)```/)[1];
  assert.match(snippet, /<script type="module" src="node_modules\/nanobragg-view\/nanobragg-view\.js"><\/script>/);
  writeFileSync(join(project, 'index.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>scratch</title>\n${snippet}`);
  host = await plainServer({ root: project });
  const ctx = await launch({ webgpu: false });
  try {
    const { page, errors } = await open(ctx, `${host.url}/index.html`);
    const r = await page.evaluate(() => new Promise((ok, fail) => {
      const el = document.querySelector('nanobragg-view');
      el.addEventListener('render', (e) => ok({ ...e.detail, threads: el.result.threads, n: el.result.data.length }), { once: true });
      el.addEventListener('error', (e) => fail(new Error(e.detail.message)), { once: true });
    }));
    console.log('# npm render:', JSON.stringify({ w: r.width, backend: r.backend, threads: r.threads, ms: r.renderMs }));
    assert.equal(r.width, 256);
    assert.equal(r.n, 256 * 256);
    assert.equal(r.backend, 'cpu');
    const spread = await page.evaluate(() => {
      const c = document.querySelector('nanobragg-view').shadowRoot.querySelector('canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let s = 0, s2 = 0, n = 0;
      for (let i = 0; i < d.length; i += 16) { s += d[i + 1]; s2 += d[i + 1] ** 2; n++; }
      return Math.sqrt(s2 / n - (s / n) ** 2);
    });
    assert.ok(spread > 5, `the element's canvas is not blank (${spread})`);
    // the module and its files came from node_modules/nanobragg-view/
    assert.ok(host.requests.some((p) => p === '/node_modules/nanobragg-view/pkg/nanobragg_bg.wasm'), host.requests.join(' '));
    await page.screenshot({ path: join(ARTIFACTS, 'npm-scratch.png') });
    assert.deepEqual(errors, []);
  } finally {
    await ctx.close();
  }
});
