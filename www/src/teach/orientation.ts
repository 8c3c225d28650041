// The crystal's orientation as the page edits it (pure; unit-tested in
// tests/unit/teach.test.ts): the `misset` field's text ↔ three angles, the image's lab frame
// (beam, fast, slow, spindle, φ) from the resolved geometry, and a drag on the image → new
// misset text. The rotation maths itself is recip/rotate.ts; a random orientation is the one the
// crate drew (`Geometry.randomMisset`); nothing is re-derived here.
import { missetMatrix, rotateMisset, type Drag, type ImageFrame, type V3 } from '../recip/rotate';
import type { ModelState } from '../params';

/** The misset field: three angles (degrees), 'random' (resolved by the crate from the seed), or
 * none (no misset: 0 0 0). Null for text that is not a misset. */
export function parseMisset(text: string | undefined): V3 | 'random' | null {
  const t = (text ?? '').trim();
  if (!t) return [0, 0, 0];
  if (/^random$/i.test(t)) return 'random';
  const w = t.split(/[\s,]+/).map(Number);
  return w.length === 3 && w.every(Number.isFinite) ? (w as V3) : null;
}

/** Angles as the field and the URL hold them: at most 2 decimals, no "-0". */
export function formatMisset(a: V3): string {
  return a.map((x) => {
    const r = Math.round(x * 100) / 100;
    return String(r === 0 ? 0 : r);
  }).join(' ');
}

/** The lab frame of the image from the resolved geometry (the crate's beam, detector axes and
 * spindle), with the φ of the model (the drag turns the crystal as it is seen at the start φ). */
export function imageFrame(g: { beam: V3 | number[]; fdet: V3 | number[]; sdet: V3 | number[]; spindle: V3 | number[] }, model: ModelState): ImageFrame {
  const phi = Number((model.phi ?? '').trim() || 0);
  return {
    beam: [...g.beam] as V3, fast: [...g.fdet] as V3, slow: [...g.sdet] as V3,
    spindle: [...g.spindle] as V3, phi: Number.isFinite(phi) ? phi : 0,
  };
}

/** New misset text after a drag on the image (see recip/rotate.ts for the senses). */
export function dragMisset(misset: V3, drag: Drag, frame: ImageFrame): string {
  return formatMisset(rotateMisset(misset, drag, frame));
}

export { missetMatrix };
export type { Drag, ImageFrame, V3 };
