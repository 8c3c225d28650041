// Orientation maths for direct manipulation of the crystal (pure; unit-tested in
// tests/unit/recip-rotate.test.mjs).
//
// Upstream's misset (`-misset rx ry rz`, degrees; MODEL §4.3, crate/src/crystal.rs `rotxyz`)
// rotates the reciprocal vectors about lab x, then y, then z: U = Rz(rz)·Ry(ry)·Rx(rx), with the
// right-handed matrices Rx(a) = [[1,0,0],[0,c,−s],[0,s,c]] etc. The spindle rotation (φ, MODEL
// §4.8) is applied after the misset: the lab orientation is Rφ·U.
//
// A drag on the detector image turns the crystal in the lab frame: U' = Rφᵀ·D·Rφ·U, where D is
// - Shift+drag ('tilt'): a rotation about the axis perpendicular to both the beam and the drag,
//   by `sensitivity` degrees per pixel of drag. Its sense makes the pattern follow the cursor: the
//   crystal direction along the beam (the zone axis whose Laue circles are centred on the beam
//   spot) moves towards the drag direction as seen on the image.
// - Alt+drag ('spin'): a rotation about the beam. With `around` (the cursor's position relative
//   to the beam spot on the image, in pixels) the angle is the one swept about that spot, so the
//   pattern turns with the cursor; without it, `sensitivity` degrees per pixel of horizontal drag,
//   clockwise on the image for a drag to the right.
// The image's axes in the lab are the detector's fast (to the right) and slow (down) vectors.
// U' is converted back to three angles robustly (`matrixToMisset`), so the result is again a
// plain `-misset rx ry rz` that reproduces the orientation.

export type V3 = [number, number, number];
/** Row-major 3×3 matrix. */
export type M3 = [V3, V3, V3];

const RAD = Math.PI / 180;
const DEG = 180 / Math.PI;

const dot = (a: V3, b: V3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a: V3, b: V3): V3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const scale = (a: V3, s: number): V3 => [a[0] * s, a[1] * s, a[2] * s];
const sub = (a: V3, b: V3): V3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const norm = (a: V3) => Math.hypot(a[0], a[1], a[2]);
function unit(a: V3): V3 {
  const n = norm(a);
  if (!(n > 0)) throw new Error('rotate: zero-length axis');
  return scale(a, 1 / n);
}

export const IDENTITY: M3 = [
  [1, 0, 0],
  [0, 1, 0],
  [0, 0, 1],
];

export function matMul(a: M3, b: M3): M3 {
  const out: M3 = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) out[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  return out;
}

export function transpose(a: M3): M3 {
  return [
    [a[0][0], a[1][0], a[2][0]],
    [a[0][1], a[1][1], a[2][1]],
    [a[0][2], a[1][2], a[2][2]],
  ];
}

export function apply(m: M3, v: V3): V3 {
  return [dot(m[0], v), dot(m[1], v), dot(m[2], v)];
}

/** Right-handed rotations about lab x, y, z (radians), as upstream's `rotxyz` applies them. */
export function rotX(a: number): M3 {
  const c = Math.cos(a), s = Math.sin(a);
  return [
    [1, 0, 0],
    [0, c, -s],
    [0, s, c],
  ];
}
export function rotY(a: number): M3 {
  const c = Math.cos(a), s = Math.sin(a);
  return [
    [c, 0, s],
    [0, 1, 0],
    [-s, 0, c],
  ];
}
export function rotZ(a: number): M3 {
  const c = Math.cos(a), s = Math.sin(a);
  return [
    [c, -s, 0],
    [s, c, 0],
    [0, 0, 1],
  ];
}

/** Rotation by `angle` (radians) about `axis` (normalised here), right-handed: the sense of
 * upstream's `rotaxis` (the φ rotation). */
export function axisAngle(axis: V3, angle: number): M3 {
  const [x, y, z] = unit(axis);
  const c = Math.cos(angle), s = Math.sin(angle), t = 1 - c;
  return [
    [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
    [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
    [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
  ];
}

/** U = Rz(rz)·Ry(ry)·Rx(rx) for misset angles in degrees. */
export function missetMatrix(deg: V3): M3 {
  return matMul(rotZ(deg[2] * RAD), matMul(rotY(deg[1] * RAD), rotX(deg[0] * RAD)));
}

/** Angle in (−180, 180]. */
export function wrapDeg(a: number): number {
  let w = a % 360;
  if (w <= -180) w += 360;
  else if (w > 180) w -= 360;
  return w;
}

function angleDistance(a: V3, b: V3): number {
  let s = 0;
  for (let i = 0; i < 3; i++) s += wrapDeg(a[i] - b[i]) ** 2;
  return s;
}

/** Below this cos(ry) the x and z rotations are treated as one (gimbal lock). */
const GIMBAL = 1e-9;

/**
 * Misset angles (degrees, each in (−180, 180]) with Rz·Ry·Rx = U, for a rotation matrix U.
 * Robust everywhere: ry from atan2 (not asin); rx from the last row, except at gimbal lock
 * (|cos ry| < 1e-9) where only rx ∓ rz is defined and rx is kept at `near`'s (or 0); rz is then
 * solved from U·(Ry·Rx)ᵀ, so the three angles always reproduce U to rounding. Of the two angle
 * triples that give U, (rx, ry, rz) and (rx+180, 180−ry, rz+180), the one closer to `near` is
 * returned (so sliders do not jump when a drag passes ry = ±90°); without `near`, |ry| <= 90°,
 * the branch upstream's `umat2misset` picks.
 */
export function matrixToMisset(u: M3, near?: V3): V3 {
  const ry = Math.atan2(-u[2][0], Math.hypot(u[2][1], u[2][2]));
  const locked = Math.abs(Math.cos(ry)) < GIMBAL;
  const rx = locked ? (near ? near[0] * RAD : 0) : Math.atan2(u[2][1], u[2][2]);
  // Rz = U·(Ry·Rx)ᵀ
  const m = matMul(u, transpose(matMul(rotY(ry), rotX(rx))));
  const rz = Math.atan2(m[1][0], m[0][0]);
  const a: V3 = [wrapDeg(rx * DEG), wrapDeg(ry * DEG), wrapDeg(rz * DEG)];
  if (!near) return a;
  const b: V3 = [wrapDeg(a[0] + 180), wrapDeg(180 - a[1]), wrapDeg(a[2] + 180)];
  if (locked) {
    // every (rx, rz) pair with the right combination is a solution: keep rx, solve rz
    return a;
  }
  return angleDistance(b, near) < angleDistance(a, near) ? b : a;
}

/** The lab frame of the detector image: beam, and the image's right (fast) and down (slow). */
export interface ImageFrame {
  /** Beam direction of propagation (unit or not). */
  beam: V3;
  /** Lab direction of the image's +x (the detector fast axis). */
  fast: V3;
  /** Lab direction of the image's +y, downwards on screen (the detector slow axis). */
  slow: V3;
  /** Spindle axis and the current φ (degrees): the drag turns the crystal as seen now. */
  spindle?: V3;
  phi?: number;
}

/** MOSFLM (upstream's default convention, MODEL §3.3): beam +x, fast +z, slow −y, spindle +z. */
export const MOSFLM_FRAME: ImageFrame = { beam: [1, 0, 0], fast: [0, 0, 1], slow: [0, -1, 0], spindle: [0, 0, 1], phi: 0 };

export interface Drag {
  mode: 'tilt' | 'spin';
  /** Cursor motion on the image (CSS pixels; +y down). */
  dx: number;
  dy: number;
  /** Degrees per pixel (default 0.2). */
  sensitivity?: number;
  /** Spin only: cursor position relative to the beam spot before the move (pixels, +y down). */
  around?: [number, number];
}

/** Component of v perpendicular to the unit vector b, normalised (null if v ∥ b). */
function perpendicular(v: V3, b: V3): V3 | null {
  const p = sub(v, scale(b, dot(v, b)));
  const n = norm(p);
  return n > 1e-9 ? scale(p, 1 / n) : null;
}

/** The lab-frame rotation D of a drag (see the file's header). */
export function dragRotation(drag: Drag, frame: ImageFrame): M3 {
  const b = unit(frame.beam);
  const sens = (drag.sensitivity ?? 0.2) * RAD;
  if (drag.mode === 'spin') {
    // sense of a clockwise turn on the image: +angle about b is clockwise when fast × slow ∥ +b
    const handed = Math.sign(dot(cross(frame.fast, frame.slow), b)) || 1;
    let cw: number;
    if (drag.around) {
      const [x, y] = drag.around;
      // atan2 with +y down grows clockwise on screen
      cw = Math.atan2(y + drag.dy, x + drag.dx) - Math.atan2(y, x);
      if (cw > Math.PI) cw -= 2 * Math.PI;
      else if (cw < -Math.PI) cw += 2 * Math.PI;
      if (Math.hypot(x, y) < 1e-9 || Math.hypot(x + drag.dx, y + drag.dy) < 1e-9) cw = 0;
    } else cw = drag.dx * sens;
    return cw === 0 ? IDENTITY : axisAngle(b, handed * cw);
  }
  const uf = perpendicular(frame.fast, b);
  const us = perpendicular(frame.slow, b);
  if (!uf || !us) throw new Error('rotate: the detector axes must not be parallel to the beam');
  const d: V3 = [0, 1, 2].map((i) => drag.dx * uf[i] + drag.dy * us[i]) as V3;
  const len = Math.hypot(drag.dx, drag.dy);
  if (len === 0 || norm(d) < 1e-12) return IDENTITY;
  // about b × d: a vector along b turns towards d (the pattern follows the cursor)
  return axisAngle(cross(b, d), len * sens);
}

/**
 * New misset angles (degrees) after a lab-frame rotation D of the crystal as it is seen now:
 * U' = Rφᵀ·D·Rφ·U with U = missetMatrix(misset) (φ and the spindle from `frame`, if given). The
 * result is the angle triple nearest the current one (see `matrixToMisset`).
 */
export function applyRotation(misset: V3, d: M3, frame?: Pick<ImageFrame, 'spindle' | 'phi'>): V3 {
  if (frame?.spindle && frame.phi) {
    const rphi = axisAngle(frame.spindle, frame.phi * RAD);
    d = matMul(transpose(rphi), matMul(d, rphi));
  }
  return matrixToMisset(matMul(d, missetMatrix(misset)), misset);
}

/** New misset angles (degrees) after a drag on the detector image (see the file's header). */
export function rotateMisset(misset: V3, drag: Drag, frame: ImageFrame = MOSFLM_FRAME): V3 {
  return applyRotation(misset, dragRotation(drag, frame), frame);
}
