// What the page says, and where, when something is wrong: files the measured-image input or a
// drop does not recognise, errors on a phone, links naming files the receiver lacks, refused
// models, heavy settings from a link, stale notices, Escape on the panels, the φ player's labels,
// ring labels, video names and the GPU warning of many <nanobragg-view> elements.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, waitRendered, setup, ARTIFACTS, ROOT } from './helpers.mjs';

const env = setup({ webgpu: false });
const dir = mkdtempSync(join(tmpdir(), 'nb-notices-'));
const junk = Buffer.from([0x44, 0x00, 0xff, 0x8b, 0x01, 0x02, 0x6b, 0x30, 0x9c, 0x00, 0x7f, 0xfe]);
const file = (name, bytes) => { const p = join(dir, name); writeFileSync(p, bytes); return p; };

const notice = (page) => page.evaluate(() => (document.getElementById('notice').hidden ? '' : document.getElementById('notice-text').textContent));
const clearNotice = (page) => page.evaluate(() => { document.getElementById('notice').hidden = true; document.getElementById('notice-text').textContent = ''; });
const fieldMsg = (page, key) => page.evaluate((key) => document.getElementById(`f-${key}-msg`)?.textContent ?? '', key);

async function drop(page, name, bytes) {
  await page.evaluate(({ name, bytes }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(bytes)], name));
    document.getElementById('canvas-host').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { name, bytes: [...bytes] });
}

test('"Open measured image…" names a file it does not recognise and what it expected', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  for (const [name, bytes, expect] of [
    ['junk.cbf', junk, /junk\.cbf: not a readable CBF, HDF5 or SMV image/],
    ['empty.cbf', Buffer.alloc(0), /empty\.cbf: not a readable CBF, HDF5 or SMV image/],
    ['junk.h5', junk, /junk\.h5: not a readable CBF, HDF5 or SMV image/],
    ['text.img', Buffer.from('1 2 3\n'), /text\.img: not a readable CBF, HDF5 or SMV image/],
    ['model.pdb', Buffer.from('CRYST1\n'), /model\.pdb: not a measured image .*\.expt.*\.geom/],
  ]) {
    await clearNotice(page);
    await page.setInputFiles('.mbar .mfile', file(name, bytes));
    await page.waitForFunction(() => !document.getElementById('notice').hidden, null, { timeout: 10_000 });
    assert.match(await notice(page), expect, name);
  }
  // a damaged .expt chosen there goes to its field, where the crate's reader says what is wrong
  await page.setInputFiles('.mbar .mfile', file('empty.expt', Buffer.alloc(0)));
  await page.waitForFunction(() => /empty\.expt: not a DIALS experiment list/.test(document.getElementById('f-expt-msg')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.deepEqual(errors, []);
});

test('a damaged measured file dropped on the page is said to be one; a damaged .expt or .geom errs at its field', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  for (const name of ['junk.cbf', 'junk.h5']) {
    await clearNotice(page);
    await drop(page, name, junk);
    await page.waitForFunction(() => !document.getElementById('notice').hidden, null, { timeout: 10_000 });
    const n = await notice(page);
    assert.match(n, new RegExp(`${name.replace('.', '\\.')}: not a readable CBF, HDF5 or SMV image`));
    assert.doesNotMatch(n, /by hand/);
  }
  await drop(page, 'junk.geom', junk);
  await page.waitForFunction(() => /junk\.geom: not a CrystFEL geometry file/.test(document.getElementById('f-geom-msg')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.match(await fieldMsg(page, 'geom'), /junk\.geom/);
  assert.deepEqual(errors, []);
});

test('on a phone the error of a failed edit is on the screen, between the image and its status line', { timeout: 120_000 }, async () => {
  for (const [width, height] of [[390, 844], [844, 390]]) {
    const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
    await page.setViewportSize({ width, height });
    await waitRendered(page, 1);
    await page.evaluate(() => scrollTo(0, 0));
    await page.setInputFiles('#f-hkl-file', file('junk.hkl', junk));
    await page.waitForFunction(() => !document.getElementById('error').hidden && /junk\.hkl/.test(document.getElementById('error').textContent));
    // the form scrolls to the field that erred; back at the image, its error is on the screen
    await page.evaluate(() => scrollTo(0, 0));
    const r = await page.evaluate(() => {
      const box = (id) => document.getElementById(id).getBoundingClientRect();
      return { error: box('error'), status: box('status'), stage: box('stage'), h: innerHeight, text: document.getElementById('status').textContent };
    });
    assert.ok(r.error.top >= 0 && r.error.bottom <= r.h, `${width}×${height}: the error (${r.error.top}–${r.error.bottom}) is on the screen (${r.h})`);
    // in portrait between the image and the status line; in landscape the image fills the
    // screen's height, and the error is above it
    if (height > width) assert.ok(r.error.top >= r.stage.bottom - 1 && r.error.bottom <= r.status.top + 1, `${width}×${height}: between the image and the status line`);
    else assert.ok(r.error.bottom <= r.stage.top + 1, `${width}×${height}: above the image`);
    assert.match(r.text, /see the message above/);
    if (width > height) {
      // a new error while the image is on the screen scrolls the page to it
      await page.evaluate(() => { const f = document.getElementById('f-distance'); f.value = 'far'; f.dispatchEvent(new Event('input', { bubbles: true })); f.dispatchEvent(new Event('change', { bubbles: true })); });
      await page.waitForFunction(() => /highlighted/.test(document.getElementById('error').textContent));
      await page.waitForTimeout(300);
      const e = await page.evaluate(() => document.getElementById('error').getBoundingClientRect().toJSON());
      assert.ok(e.top >= 0 && e.bottom <= height + 0.5, `${width}×${height}: the new error (${e.top}–${e.bottom}) is scrolled to`);
    }
    await page.screenshot({ path: join(ARTIFACTS, `notices-error-${width}x${height}.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test("a realistic image's warnings on its settings are said too (the realistic chain's), and go with the value", { timeout: 180_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&air=1&distance=-60`);
  await page.waitForFunction(() => Number(document.body.dataset.realistic ?? 0) >= 1, null, { timeout: 120_000 });
  assert.match(await notice(page), /^-distance -60: a negative distance is used as 60 mm \(as upstream does\)$/);
  assert.match(await fieldMsg(page, 'distance'), /^-distance -60: a negative distance/);
  await page.fill('#f-distance', '60');
  await page.press('#f-distance', 'Enter');
  await page.waitForFunction(() => Number(document.body.dataset.realistic ?? 0) >= 2, null, { timeout: 120_000 });
  assert.equal(await notice(page), '');
  assert.equal(await fieldMsg(page, 'distance'), '');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a phone in landscape (844×390) at the top of the page: a new error and a notice are on the screen where they appear, the page not scrolled', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`, { viewport: { width: 844, height: 390 } });
  await waitRendered(page, 1);
  await page.evaluate(() => scrollTo(0, 0));
  const set = (key, v) => page.evaluate(({ key, v }) => { const f = document.getElementById(`f-${key}`); f.value = v; f.dispatchEvent(new Event('change', { bubbles: true })); }, { key, v });
  const seen = (id) => page.evaluate((id) => ({ ...document.getElementById(id).getBoundingClientRect().toJSON(), h: innerHeight, y: scrollY }), id);
  // a warning on the distance (the notice) and an input error on N: both on the screen
  await set('distance', '-50');
  await page.waitForFunction(() => !document.getElementById('notice').hidden && /-distance -50/.test(document.getElementById('notice-text').textContent));
  await set('N', 'many');
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  await page.waitForTimeout(300);
  for (const id of ['notice', 'error']) {
    const b = await seen(id);
    assert.ok(b.top >= 0 && b.bottom <= b.h, `the ${id} (${b.top}–${b.bottom}) is within the 390 px screen`);
    assert.equal(b.y, 0, `the page stayed at its top (${id})`);
  }
  await page.screenshot({ path: join(ARTIFACTS, 'notices-landscape-error.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test("the crate's warnings on the settings: a negative distance is said in the notice and at its field, and goes when the distance is fixed; upstream's advice to oversample more only at its field", { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  assert.equal(await notice(page), '', 'no notice on the page\'s own settings');
  let n = 1;
  const type = async (key, v) => { await page.fill(`#f-${key}`, v); await page.press(`#f-${key}`, 'Enter'); };
  const warnedRow = (key) => page.evaluate((key) => { const r = document.querySelector(`.field[data-key="${key}"]`); return { warned: r.classList.contains('warned'), bad: r.classList.contains('bad') }; }, key);
  await type('distance', '-80');
  await waitRendered(page, ++n);
  assert.match(await notice(page), /^-distance -80: a negative distance is used as 80 mm \(as upstream does\)$/);
  assert.equal(await page.evaluate(() => document.getElementById('notice').dataset.kind), 'warn');
  assert.match(await fieldMsg(page, 'distance'), /-distance -80: a negative distance is used as 80 mm/);
  assert.deepEqual(await warnedRow('distance'), { warned: true, bad: false }, 'a warning at the field, not an error');
  // a second one (cells below 1) is a line of its own, at its own field
  await type('N', '0');
  await waitRendered(page, ++n);
  assert.deepEqual((await notice(page)).split('\n'), [
    '-distance -80: a negative distance is used as 80 mm (as upstream does)',
    '-N 0: fewer than 1 unit cell, read as 1 (as upstream does)',
  ]);
  assert.match(await fieldMsg(page, 'N'), /^-N 0: fewer than 1 unit cell/);
  await page.screenshot({ path: join(ARTIFACTS, 'notices-warnings.png') });
  // the distance fixed: its warning goes, from the notice and the field
  await type('distance', '80');
  await waitRendered(page, ++n);
  assert.equal(await notice(page), '-N 0: fewer than 1 unit cell, read as 1 (as upstream does)');
  assert.equal(await fieldMsg(page, 'distance'), '');
  assert.deepEqual(await warnedRow('distance'), { warned: false, bad: false });
  // N typed wrong: its error replaces its warning at once (no render), and the notice drops it
  await type('N', 'few');
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  assert.equal(await notice(page), '');
  assert.match(await fieldMsg(page, 'N'), /"few" is not a whole number/);
  await type('N', '5');
  await waitRendered(page, ++n);
  assert.equal(await notice(page), '');
  assert.equal(await fieldMsg(page, 'N'), '');
  // one sub-pixel where upstream recommends more: said at the sub-pixel field, not in the notice
  await type('oversample', '1');
  await type('N', '40');
  await waitRendered(page, ++n);
  assert.match(await fieldMsg(page, 'oversample'), /^oversampling of 1 is less than the recommended \d+$/);
  assert.equal(await notice(page), '');
  assert.deepEqual(errors, []);
  await page.close();
});

test("a link naming files the receiver lacks names them and their fields; a click on the line goes to the field", { timeout: 60_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64&hkl=mine.hkl&mat=theirs.mat`);
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  const line = await page.evaluate(() => document.getElementById('error').textContent);
  assert.match(line, /mine\.hkl as its HKL file \(h k l F\)/);
  assert.match(line, /theirs\.mat as its orientation matrix file/);
  assert.match(line, /choose or drop them/);
  assert.doesNotMatch(line, /highlighted/);
  await page.click('#error');
  const where = await page.evaluate(() => {
    const a = document.activeElement;
    const row = a?.closest('.field');
    const r = row?.getBoundingClientRect();
    return { key: row?.dataset.key ?? null, top: r?.top, bottom: r?.bottom, h: innerHeight };
  });
  assert.equal(where.key, 'mat', 'the first file field named (the form order) has the focus');
  assert.ok(where.top >= 0 && where.bottom <= where.h, 'and is on the screen');
  assert.deepEqual(errors, []);
  await page.close();
});

test("a model the realistic section's Open… refuses is said at the section and not kept as the model; one from the form errs at its field too", { timeout: 120_000 }, async () => {
  const noatoms = Buffer.from('CRYST1  100.000  100.000  100.000  90.00  90.00  90.00 P 1           1\nEND\n');
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.setInputFiles('#rl-file', file('noatoms.pdb', noatoms));
  await page.waitForFunction(() => /was not used/.test(document.getElementById('rl-status').textContent), null, { timeout: 60_000 });
  const s = await page.evaluate(() => ({
    status: document.getElementById('rl-status').textContent,
    err: document.getElementById('rl-status').classList.contains('err'),
    options: [...document.getElementById('rl-model').options].map((o) => o.value),
    chosen: document.getElementById('rl-model').value,
    pdb: window.nanobragg.store?.model.peek().pdb ?? document.getElementById('f-pdb-name')?.textContent,
  }));
  assert.match(s.status, /^noatoms\.pdb was not used: no atoms found/);
  assert.ok(s.err, 'said as an error');
  assert.ok(!s.options.includes('noatoms.pdb'), 'not listed as a model');
  assert.equal(s.chosen, '', 'the model before it is chosen again');
  // the same file dropped on the page goes to the form's field: its error is there and at the section
  await drop(page, 'other.pdb', noatoms);
  await page.waitForFunction(() => /other\.pdb: no atoms found/.test(document.getElementById('f-pdb-msg').textContent), null, { timeout: 60_000 });
  assert.match(await page.evaluate(() => document.getElementById('rl-status').textContent), /^other\.pdb: no atoms found/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a heavy state opened from a link is announced as typed, and Cancel takes the announcement away', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&mosaic=1&mosaic_domains=20000`);
  await page.waitForFunction(() => /This render will take about .* s on the CPU: Cancel stops it/.test(document.getElementById('notice').hidden ? '' : document.getElementById('notice-text').textContent), null, { timeout: 30_000 });
  await page.click('#cancel');
  await page.waitForFunction(() => document.getElementById('timing').textContent === 'cancelled', null, { timeout: 20_000 });
  assert.equal(await notice(page), '', 'no announcement of a render that was cancelled');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a detector too large for the page, from a link, errs at its field as typed', { timeout: 60_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=9000`);
  await page.waitForFunction(() => !document.getElementById('error').hidden);
  await page.waitForFunction(() => /9000x9000 detector/.test(document.getElementById('f-detpixels-msg').textContent), null, { timeout: 10_000 });
  assert.equal(await page.evaluate(() => document.getElementById('error').dataset.key), 'detpixels');
  assert.deepEqual(errors, []);
  await page.close();
});

test('"Link copied" goes after a few seconds', { timeout: 60_000 }, async () => {
  await env.ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.click('#copylink');
  await page.waitForFunction(() => /Link copied/.test(document.getElementById('notice-text').textContent) && !document.getElementById('notice').hidden);
  await page.waitForFunction(() => document.getElementById('notice').hidden, null, { timeout: 8_000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('"Link copied" twice: the line stays its few seconds from the second copy (the first copy\'s timer does not take it)', { timeout: 60_000 }, async () => {
  await env.ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.click('#copylink');
  await page.waitForFunction(() => /Link copied/.test(document.getElementById('notice-text').textContent) && !document.getElementById('notice').hidden);
  await page.waitForTimeout(2500);
  await page.click('#copylink');
  await page.waitForTimeout(2000); // 4.5 s after the first copy, 2 s after the second
  assert.match(await notice(page), /^Link copied$/, 'still there 2 s after the second copy');
  await page.waitForFunction(() => document.getElementById('notice').hidden, null, { timeout: 8_000 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('a damaged measured image dropped with an HKL file: the image is said to be damaged, the HKL file goes to its field', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.evaluate(({ junk, hkl }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(junk)], 'junk.cbf'));
    dt.items.add(new File([hkl], 'mine.hkl'));
    document.getElementById('canvas-host').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { junk: [...junk], hkl: '0 0 1 100\n1 0 0 50\n0 1 0 70\n1 1 1 30\n' });
  await page.waitForFunction(() => document.getElementById('f-hkl-name').textContent === 'mine.hkl', null, { timeout: 20_000 });
  const n = await notice(page);
  assert.match(n, /junk\.cbf: not a readable CBF, HDF5 or SMV image/);
  assert.match(n, /mine\.hkl → HKL file \(h k l F\): "h k l F" rows \(structure factors\)/);
  assert.doesNotMatch(n, /\)\)/, 'no brackets inside brackets');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a good measured image, a damaged one and an HKL file dropped together: the image opens, the damaged one is said, the HKL file goes to its field', { timeout: 120_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  // a good miniCBF (fabio's, a fuzz seed)
  const cbf = [...readFileSync(join(ROOT, 'fuzz', 'corpus', 'cbf', 'seed-fabio.cbf'))];
  await page.evaluate(({ cbf, junk, hkl }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(cbf)], 'good.cbf'));
    dt.items.add(new File([Uint8Array.from(junk)], 'junk.cbf'));
    dt.items.add(new File([hkl], 'mine.hkl'));
    document.getElementById('canvas-host').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { cbf, junk: [...junk], hkl: '0 0 1 100\n1 0 0 50\n0 1 0 70\n1 1 1 30\n' });
  await page.waitForFunction(() => document.getElementById('f-hkl-name').textContent === 'mine.hkl', null, { timeout: 30_000 });
  await page.waitForFunction(() => window.nanobragg.measured?.info?.name === 'good.cbf', null, { timeout: 30_000 });
  const n = await notice(page);
  assert.match(n, /junk\.cbf: not a readable CBF, HDF5 or SMV image/, 'the damaged image is said (it was overwritten)');
  assert.match(n, /mine\.hkl → HKL file/);
  assert.equal(await page.evaluate(() => document.getElementById('notice').dataset.kind), 'warn');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a .geom dropped with an HKL file: the panels go to -geom, the HKL file to its field (it was lost)', { timeout: 120_000 }, async () => {
  const geom = readFileSync(join(ROOT, 'tests', 'fixtures', 'panels', 'two_tilted.geom'));
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.evaluate(({ geom, hkl }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(geom)], 'two.geom'));
    dt.items.add(new File([hkl], 'mine.hkl'));
    document.getElementById('canvas-host').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, { geom: [...geom], hkl: '0 0 1 100\n1 0 0 50\n0 1 0 70\n1 1 1 30\n' });
  await page.waitForFunction(() => document.getElementById('f-hkl-name').textContent === 'mine.hkl', null, { timeout: 20_000 });
  assert.equal(await page.evaluate(() => document.getElementById('f-geom-name').textContent), 'two.geom');
  assert.match(await notice(page), /mine\.hkl → HKL file/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a model the realistic section refused: its line goes once another model is chosen in the form", { timeout: 180_000 }, async () => {
  const noatoms = Buffer.from('CRYST1  100.000  100.000  100.000  90.00  90.00  90.00 P 1           1\nEND\n');
  const oneAtom = Buffer.from('CRYST1   30.000   30.000   30.000  90.00  90.00  90.00 P 1           1\n' +
    'ATOM      1  C   ALA A   1       1.000   2.000   3.000  1.00 20.00           C\nEND\n');
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.setInputFiles('#rl-file', file('noatoms.pdb', noatoms));
  await page.waitForFunction(() => /was not used/.test(document.getElementById('rl-status').textContent), null, { timeout: 60_000 });
  await page.setInputFiles('#f-pdb-file', file('one.pdb', oneAtom));
  await page.waitForFunction(() => /one\.pdb/.test(document.getElementById('rl-model-info').textContent), null, { timeout: 120_000 });
  const st = await page.evaluate(() => ({ text: document.getElementById('rl-status').textContent, err: document.getElementById('rl-status').classList.contains('err') }));
  assert.doesNotMatch(st.text, /noatoms\.pdb was not used/, 'the refusal is not said over the model in use');
  assert.equal(st.err, false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('Escape closes the Download menu, the Fit and Derivative panels and gives the focus back to their button; the φ player\'s inputs have labels of their own', { timeout: 60_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=64`);
  await waitRendered(page, 1);
  await page.focus('.downloads > summary');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.querySelector('.downloads').open), true);
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => document.querySelector('.downloads').open), false, 'Escape closes the Download menu');
  assert.equal(await page.evaluate(() => document.activeElement?.matches('.downloads > summary')), true);
  for (const [button, bar] of [['.fitopen', '.fitbar'], ['.dopen', '.dbar']]) {
    await page.click(button);
    const sel = await page.evaluate((b) => { const open = document.querySelector(b); return open.getAttribute('aria-expanded'); }, button);
    assert.equal(sel, 'true', `${button} opened its panel`);
    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate((b) => document.querySelector(b).getAttribute('aria-expanded'), button), 'false', `Escape closes ${bar}`);
    assert.equal(await page.evaluate((b) => document.activeElement?.matches(b), button), true, `the focus is back on ${button}`);
  }
  for (const [id, name] of [['phi-from', /loop from/], ['phi-to', /loop to/], ['phi-osc', /osc/], ['phi-steps', /steps/]]) {
    const inputs = await page.evaluate((id) => [...document.getElementById(id).labels].map((l) => l.querySelectorAll('input, select').length), id);
    assert.ok(inputs.length >= 1 && inputs.every((n) => n === 0), `#${id}: a label of its own`);
    assert.equal(await page.getByRole('spinbutton', { name, includeHidden: true }).evaluate((e) => e.id), id);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('ring labels are not printed over each other (rings close together at a panel edge)', { timeout: 60_000 }, async () => {
  const { page, errors } = await open(env.ctx, `${env.base}/?backend=cpu&detpixels=256`);
  await waitRendered(page, 1);
  await page.uncheck('#beamc');
  const n = await page.evaluate(() => Number(document.body.dataset.rendered));
  await page.setInputFiles('#f-geom-file', join(ROOT, 'tests', 'fixtures', 'panels', 'two_tilted.geom'));
  await waitRendered(page, n + 1);
  await page.waitForTimeout(300);
  const boxes = await page.evaluate(() => { window.nanobragg.view.draw(); return window.nanobragg.view.drawnBoxes; });
  assert.ok(boxes.length >= 1, 'some ring is labelled');
  for (let i = 0; i < boxes.length; i++) for (let j = 0; j < i; j++) {
    const [a, b] = [boxes[i], boxes[j]];
    assert.ok(!(a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]), `labels ${j} and ${i} overlap: ${JSON.stringify([b, a])}`);
  }
  await page.screenshot({ path: join(ARTIFACTS, 'notices-ring-labels.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test('many <nanobragg-view> elements: the GPU fallback is warned once per page', { timeout: 120_000 }, async () => {
  const { page, errors, warnings } = await open(env.ctx, `${env.base}/examples/embed.html`);
  await page.evaluate(async () => {
    const els = [];
    for (let i = 0; i < 6; i++) {
      const el = document.createElement('nanobragg-view');
      el.setAttribute('detpixels', '64');
      el.setAttribute('backend', 'auto');
      el.setAttribute('misset', `${i * 5} 0 0`);
      document.body.appendChild(el);
      els.push(new Promise((ok) => { el.addEventListener('render', ok, { once: true }); el.addEventListener('error', ok, { once: true }); }));
    }
    await Promise.all(els);
  });
  const gpu = warnings.filter((w) => /GPU backend unavailable|software renderer/.test(w));
  console.log(`# ${gpu.length} GPU warnings: ${gpu[0] ?? ''}`);
  assert.ok(gpu.length <= 1, `once: ${gpu.length}`);
  assert.deepEqual(errors, []);
  await page.close();
});
