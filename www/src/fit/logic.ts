// The pure parts of "Fit to image" (fit/index.ts): the parameter groups, the crate's fitted
// values (`Fitted`, flags' values) into the form's fields, the teacher's perturbation as offsets,
// and the residual plot's scale. No physics here: the values (and the target's spots) come from
// the crate.
import type { Fitted } from '../protocol';
import type { ModelState } from '../state';

export interface ParamGroup {
  id: 'orientation' | 'cell' | 'angles' | 'detector' | 'scale';
  label: string;
  title: string;
  /** The crate's parameter names (`tangent::Param`). */
  params: string[];
  /** On by default. */
  on: boolean;
}

export const GROUPS: ParamGroup[] = [
  { id: 'orientation', label: 'orientation', title: 'Three small rotations of the crystal about the lab axes (the misset)', params: ['rot_x', 'rot_y', 'rot_z'], on: true },
  { id: 'cell', label: 'cell a b c', title: 'The unit cell edges', params: ['cell_a', 'cell_b', 'cell_c'], on: true },
  { id: 'angles', label: 'cell α β γ', title: 'The unit cell angles', params: ['cell_alpha', 'cell_beta', 'cell_gamma'], on: false },
  { id: 'detector', label: 'distance + beam', title: 'The detector distance and the beam centre', params: ['distance', 'beam_x', 'beam_y'], on: false },
  { id: 'scale', label: 'scale', title: 'The overall scale (lands in the fluence)', params: ['scale'], on: false },
];

/** The parameter list of the groups chosen (in the groups' order). */
export function paramsOf(chosen: Iterable<string>): string[] {
  const on = new Set(chosen);
  return GROUPS.filter((g) => on.has(g.id)).flatMap((g) => g.params);
}

/** A number for a form field: `digits` decimals (1e-4° of a misset, 1e-4 Å of a cell edge:
 * far below what a fit resolves), trailing zeros dropped. */
export function fmtField(v: number, digits = 4): string {
  if (!Number.isFinite(v)) return String(v);
  // large values in exponent form; small ones to `digits` decimals (a misset of 1e-15° is 0)
  if (Math.abs(v) >= 1e7) return v.toExponential(6).replace(/\.?0+e/, 'e');
  const s = v.toFixed(digits).replace(/\.?0+$/, '');
  return s === '-0' ? '0' : s;
}

/** The form's state with the crate's fitted values of its flags put in their fields. */
export function withFitted(model: ModelState, f: Fitted): ModelState {
  const m = { ...model };
  if (f.misset) m.misset = f.misset.map((v) => fmtField(v)).join(' ');
  if (f.cell) m.cell = f.cell.map((v) => fmtField(v)).join(' ');
  if (f.distance) {
    const [flag, mm] = f.distance;
    m[flag === '-close_distance' ? 'close_distance' : 'distance'] = fmtField(mm);
  }
  if (f.xbeam !== null) m.Xbeam = fmtField(f.xbeam);
  if (f.ybeam !== null) m.Ybeam = fmtField(f.ybeam);
  if (f.fluence !== null) m.fluence = f.fluence.toPrecision(6);
  return m;
}

/** The teacher's perturbation as offsets per parameter: each rotation by ±`deg` (alternating
 * signs, so the three do not add up to one turn about the diagonal), each cell edge by ±`pct` %
 * of its value (`cell`: the crate's resolved a, b, c). Other parameters are not moved. */
export function perturbation(params: string[], deg: number, pct: number, cell: number[] | null): number[] {
  const rad = (deg * Math.PI) / 180;
  return params.map((p) => {
    switch (p) {
      case 'rot_x': return rad;
      case 'rot_y': return -rad;
      case 'rot_z': return rad;
      case 'cell_a': return cell ? (cell[0] * pct) / 100 : 0;
      case 'cell_b': return cell ? (-cell[1] * pct) / 100 : 0;
      case 'cell_c': return cell ? (cell[2] * pct) / 100 : 0;
      default: return 0;
    }
  });
}

/** The residual plot's points: (step, log10 cost) scaled into a w × h box with a margin. */
export function plotPoints(costs: number[], w: number, h: number, pad = 4): { x: number; y: number }[] {
  const pts = costs.map((c, i) => ({ i, c })).filter((p) => Number.isFinite(p.c) && p.c > 0);
  if (!pts.length) return [];
  const ys = pts.map((p) => Math.log10(p.c));
  let lo = Math.min(...ys);
  let hi = Math.max(...ys);
  if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
  const n = Math.max(1, costs.length - 1);
  return pts.map((p, k) => ({
    x: pad + ((w - 2 * pad) * p.i) / n,
    y: pad + ((h - 2 * pad) * (hi - ys[k])) / (hi - lo),
  }));
}
