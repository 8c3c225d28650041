// The crystal's orientation as the page edits it (pure; unit-tested in
// tests/unit/teach.test.ts): the `misset` field's text ↔ three angles, the image's lab frame
// (beam, fast, slow, spindle, φ) from the resolved geometry, and a drag on the image → new
// misset text. The rotation maths itself is recip/rotate.ts; nothing is re-derived here.
import { missetMatrix, matrixToMisset, matMul, transpose, axisAngle, rotateMisset, type Drag, type ImageFrame, type M3, type V3 } from '../recip/rotate';
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

/** The spindle axis for this model when no resolved geometry is at hand (the crate's
 * `convention_frame`: `-spindle_axis` if given, else the convention's, MOSFLM/DENZO +z, XDS/ADXV
 * +x, DIALS +y). [`imageFrame`] takes the crate's own (`Geometry.spindle`) when it has it. */
export function spindleOf(model: ModelState): V3 {
  const given = (model.spindle_axis ?? '').trim().split(/[\s,]+/).map(Number);
  if (given.length === 3 && given.every(Number.isFinite) && given.some((x) => x !== 0)) return given as V3;
  switch ((model.convention ?? '').trim()) {
    case 'xds':
    case 'adxv':
      return [1, 0, 0];
    case 'dials':
      return [0, 1, 0];
    default:
      return [0, 0, 1];
  }
}

/** The lab frame of the image from the resolved geometry's beam and detector axes, with the
 * spindle and φ of the model (the drag turns the crystal as it is seen at the start φ). */
export function imageFrame(g: { beam: V3 | number[]; fdet: V3 | number[]; sdet: V3 | number[]; spindle?: V3 | number[] }, model: ModelState): ImageFrame {
  const phi = Number((model.phi ?? '').trim() || 0);
  return {
    beam: [...g.beam] as V3, fast: [...g.fdet] as V3, slow: [...g.sdet] as V3,
    spindle: g.spindle ? ([...g.spindle] as V3) : spindleOf(model), phi: Number.isFinite(phi) ? phi : 0,
  };
}

/** New misset text after a drag on the image (see recip/rotate.ts for the senses). */
export function dragMisset(misset: V3, drag: Drag, frame: ImageFrame): string {
  return formatMisset(rotateMisset(misset, drag, frame));
}

/**
 * The misset angles of a crystal whose real-space axes (lab frame, at the start φ) are `axes`
 * when the same crystal with no misset has `axes0`: U = Rφᵀ·(A·A₀⁻¹)·Rφ, with A the matrix of
 * the axes as columns. Used to take over a `-misset random` orientation the crate resolved (the
 * two sets of axes come from the geometry of two renders).
 */
export function missetFromAxes(axes: [V3, V3, V3], axes0: [V3, V3, V3], frame?: Pick<ImageFrame, 'spindle' | 'phi'>): V3 {
  const cols = (v: [V3, V3, V3]): M3 => [0, 1, 2].map((i) => [v[0][i], v[1][i], v[2][i]]) as M3;
  const A = cols(axes), A0 = cols(axes0);
  let u = matMul(A, invert(A0));
  // orthonormalise (rounding in the crate's f32/f64 axes): polar decomposition by iteration
  for (let it = 0; it < 4; it++) {
    const inv = transpose(invert(u));
    u = u.map((row, i) => row.map((x, j) => 0.5 * (x + inv[i][j]))) as M3;
  }
  if (frame?.spindle && frame.phi) {
    const r = axisAngle(frame.spindle, (frame.phi * Math.PI) / 180);
    u = matMul(transpose(r), matMul(u, r));
  }
  return matrixToMisset(u);
}

function invert(m: M3): M3 {
  const [[a, b, c], [d, e, f], [g, h, i]] = m;
  const A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
  const det = a * A + b * B + c * C;
  if (!(Math.abs(det) > 0)) throw new Error('orientation: degenerate axes');
  return [
    [A / det, -(b * i - c * h) / det, (b * f - c * e) / det],
    [B / det, (a * i - c * g) / det, -(a * f - c * d) / det],
    [C / det, -(a * h - b * g) / det, (a * e - b * d) / det],
  ];
}

export { missetMatrix };
export type { Drag, ImageFrame, V3 };
