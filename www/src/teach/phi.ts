// The φ player's arithmetic (pure; unit-tested in tests/unit/teach.test.ts): where φ goes after
// some time at a speed within a loop range, steps, and the model fields of one frame as a still
// or as a rotation photograph (an oscillation range integrated by the crate: -osc, -phisteps).
import type { ModelState } from '../params';

export type SweepMode = 'stills' | 'rotation';

export interface Sweep {
  /** Loop range (degrees), from < to. */
  from: number;
  to: number;
  /** Degrees per second (the sign gives the sense). */
  speed: number;
  /** Keep going from the start when the end is passed (else stop at the end). */
  loop: boolean;
}

/** Clean loop bounds: numbers, from < to (swapped if given the other way round), or an error
 * that names the field. */
export function parseRange(from: string, to: string): { from: number; to: number } | { error: string } {
  const a = Number(from.trim()), b = Number(to.trim());
  if (from.trim() === '' || !Number.isFinite(a)) return { error: `loop from: "${from}" is not a number (degrees)` };
  if (to.trim() === '' || !Number.isFinite(b)) return { error: `loop to: "${to}" is not a number (degrees)` };
  if (a === b) return { error: 'loop range: from and to are the same angle' };
  return a < b ? { from: a, to: b } : { from: b, to: a };
}

/** φ after `dt` seconds; `ended` when a sweep without loop reached its end (φ is then the end). */
export function advance(phi: number, dt: number, s: Sweep): { phi: number; ended: boolean } {
  const span = s.to - s.from;
  if (!(span > 0)) return { phi: s.from, ended: true };
  // a φ outside the range starts at its near end
  let p = phi < s.from || phi > s.to ? (s.speed >= 0 ? s.from : s.to) : phi;
  p += s.speed * dt;
  if (p > s.to || p < s.from) {
    if (!s.loop) return { phi: p > s.to ? s.to : s.from, ended: true };
    p = s.from + ((((p - s.from) % span) + span) % span);
  }
  return { phi: p, ended: false };
}

/** One step of `step` degrees (negative: back), wrapping within the range. */
export function stepPhi(phi: number, step: number, s: Pick<Sweep, 'from' | 'to'>): number {
  const span = s.to - s.from;
  let p = phi + step;
  if (span > 0 && (p > s.to + 1e-9 || p < s.from - 1e-9)) p = s.from + ((((p - s.from) % span) + span) % span);
  return p;
}

/** φ as the field holds it: at most 3 decimals. */
export function formatPhi(phi: number): string {
  const r = Math.round(phi * 1000) / 1000;
  return String(r === 0 ? 0 : r);
}

/**
 * The model fields of a frame at φ: a still (no oscillation) or a rotation photograph that
 * integrates `osc` degrees from φ in `phisteps` steps. Returns the whole model (other fields
 * kept as they are).
 */
export function frameModel(model: ModelState, phi: number, mode: SweepMode, osc: number, phisteps: number): ModelState {
  const m: ModelState = { ...model, phi: formatPhi(phi) };
  delete m.phistep;
  if (mode === 'stills') {
    delete m.osc;
    delete m.phisteps;
  } else {
    m.osc = formatPhi(osc);
    m.phisteps = String(Math.max(1, Math.round(phisteps)));
  }
  return m;
}

/** The frames of one recorded sweep: from `from` to `to` in steps of `step` degrees (the end
 * included when it falls on a step). */
export function sweepFrames(from: number, to: number, step: number): number[] {
  if (!(step > 0) || !(to >= from)) return [from];
  const n = Math.floor((to - from) / step + 1e-9);
  return Array.from({ length: Math.min(n, 3600) + 1 }, (_, i) => from + i * step);
}
