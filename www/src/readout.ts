// The status bar's cursor readout: d, 2θ and hkl first (a narrow window cuts the line at its
// end), then the value in the unit of the image shown (photons/pixel, or ADU for a detector's
// image) and the pixel; on a projector (presentation mode) only what the class asks about.
import type { ImageView } from './view';

function fmtNum(v: number) {
  if (!Number.isFinite(v)) return '∞';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-2) ? v.toExponential(2) : +v.toPrecision(4);
}

export function installReadout(view: ImageView, readout: HTMLElement, unit: () => 'ADU' | 'photons') {
  const hint = readout.textContent ?? '';
  view.onReadout = (r) => {
    if (!r) {
      readout.textContent = hint;
      readout.classList.add('idle');
      return;
    }
    readout.classList.remove('idle');
    const i = r.info;
    if (document.body.classList.contains('present')) {
      readout.textContent = i
        ? `d = ${isFinite(i.d) ? i.d.toFixed(2) : '∞'} Å  ·  2θ = ${i.twoTheta.toFixed(2)}°  ·  hkl (${i.nearest.join(' ')})`
        : `I = ${fmtNum(r.value)} ${unit()}`;
      return;
    }
    const px = `I = ${fmtNum(r.value)} ${unit()}  pixel (${r.f}, ${r.s})`;
    readout.textContent = i
      ? `d = ${isFinite(i.d) ? i.d.toFixed(3) : '∞'} Å  2θ = ${i.twoTheta.toFixed(3)}°  hkl ≈ (${i.nearest.join(' ')})  [${i.hkl.map((x) => x.toFixed(2)).join(', ')}]  ${px}`
      : px;
  };
  readout.classList.add('idle');
}
