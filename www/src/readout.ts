// The status bar's cursor readout: d, 2θ and hkl first (a narrow window cuts the line at its
// end), then the value in the unit of the image shown (photons/pixel, or ADU for a detector's
// image) and the pixel; on a projector (presentation mode) only what the class asks about. The
// geometry is the crate's, asked at the centre of the pixel under the pointer (pixelquery.ts);
// until it answers the previous pixel's geometry stays.
import type { ImageView, Readout } from './view';
import type { PixelGeometry } from './protocol';
import type { PixelQuery } from './pixelquery';

function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

/** Calls `show(r, g)` for each pointer position with the crate's geometry at that pixel (`g`
 * null until it answers; `r` null when the pointer leaves). */
export function followReadout(view: ImageView, query: PixelQuery, show: (r: Readout | null, g: PixelGeometry | null) => void) {
  let current: Readout | null = null;
  let geo: { f: number; s: number; g: PixelGeometry } | null = null;
  view.onReadout = (r) => {
    current = r;
    if (!r) return show(null, null);
    const same = geo && geo.f === r.f && geo.s === r.s;
    show(r, geo?.g ?? null);
    if (same) return;
    void query(r.f + 0.5, r.s + 0.5).then((g) => {
      if (!g || current !== r) return;
      geo = { f: r.f, s: r.s, g };
      show(r, g);
    });
  };
}

export function installReadout(view: ImageView, readout: HTMLElement, unit: () => 'ADU' | 'photons', query: PixelQuery) {
  const hint = readout.textContent ?? '';
  let shown: [Readout | null, PixelGeometry | null] = [null, null];
  // presentation mode changes the line's form: write it again
  new MutationObserver(() => render(...shown)).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  followReadout(view, query, (r, i) => render(r, i));
  function render(r: Readout | null, i: PixelGeometry | null) {
    shown = [r, i];
    if (!r) {
      readout.textContent = hint;
      readout.classList.add('idle');
      return;
    }
    readout.classList.remove('idle');
    const d = i && (Number.isFinite(i.d) ? i.d : Infinity);
    if (document.body.classList.contains('present')) {
      readout.textContent = i
        ? `d = ${Number.isFinite(d) ? d!.toFixed(2) : '∞'} Å  ·  2θ = ${i.two_theta.toFixed(2)}°  ·  hkl (${i.nearest.join(' ')})`
        : `I = ${fmtNum(r.value)} ${unit()}`;
      return;
    }
    const px = `I = ${fmtNum(r.value)} ${unit()}  pixel (${r.f}, ${r.s})`;
    readout.textContent = i
      ? `d = ${Number.isFinite(d) ? d!.toFixed(3) : '∞'} Å  2θ = ${i.two_theta.toFixed(3)}°  hkl ≈ (${i.nearest.join(' ')})  [${i.hkl.map((x) => x.toFixed(2)).join(', ')}]  ${px}`
      : px;
  }
  readout.classList.add('idle');
}
