// Helpers of the reciprocal-space view (view3d.ts): small vector maths, an arrow of constant
// screen thickness, axis-length rounding, quantiles, number formats and the WebGL probe.
import { ConeGeometry, CylinderGeometry, Group, Mesh, MeshBasicMaterial, Quaternion, Vector3 } from 'three';
import type { V3 } from './types';

// ---- small vector helpers ------------------------------------------------------------------
export const dot = (a: V3, b: V3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
export const add = (a: V3, b: V3): V3 => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
export const sub = (a: V3, b: V3): V3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
export const mul = (a: V3, s: number): V3 => [a[0] * s, a[1] * s, a[2] * s];
export const len = (a: V3) => Math.hypot(a[0], a[1], a[2]);
export const unit = (a: V3): V3 => mul(a, 1 / (len(a) || 1));
export const cross = (a: V3, b: V3): V3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
export const vec = (a: V3) => new Vector3(a[0], a[1], a[2]);


/** An arrow made of a cylinder and a cone (WebGL lines are one pixel wide). Its thickness is
 * set in screen pixels at its tip (`layout`, every frame), so it reads the same at any zoom. */
export class Arrow extends Group {
  private shaft: Mesh;
  private head: Mesh;
  readonly material: MeshBasicMaterial;
  private a: V3 = [0, 0, 0];
  private b: V3 = [0, 0, 0];
  /** Shaft radius and head length in pixels; neither exceeds `maxFrac` of the arrow's length. */
  constructor(material: MeshBasicMaterial, shaftGeo: CylinderGeometry, headGeo: ConeGeometry, public px = 1.3, public headPx = 12, public maxFrac = 0.04) {
    super();
    this.material = material;
    this.shaft = new Mesh(shaftGeo, this.material);
    this.head = new Mesh(headGeo, this.material);
    this.add(this.shaft, this.head);
  }
  set(a: V3, b: V3) {
    this.a = a;
    this.b = b;
    this.visible = len(sub(b, a)) > 0;
    const q = new Quaternion().setFromUnitVectors(new Vector3(0, 1, 0), vec(unit(sub(b, a))));
    this.position.set(a[0], a[1], a[2]);
    this.quaternion.copy(q);
  }
  /** `wpp`: world units per pixel at the tip. */
  layout(wpp: number) {
    const L = len(sub(this.b, this.a));
    if (!(L > 0)) return;
    const w = Math.min(this.px * wpp, L * this.maxFrac);
    const hl = Math.min(this.headPx * wpp, L * 0.45);
    this.shaft.scale.set(w, L - hl, w);
    this.shaft.position.set(0, (L - hl) / 2, 0);
    const hw = Math.min(w * 3.2, hl * 0.45);
    this.head.scale.set(hw, hl, hw);
    this.head.position.set(0, L - hl / 2, 0);
  }
  get tip(): V3 {
    return this.b;
  }
}

export function nice(x: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

export function quantile(a: Float32Array, q: number): number {
  const n = a.length;
  if (!n) return 1;
  const step = Math.max(1, Math.floor(n / 4096));
  const s: number[] = [];
  for (let i = 0; i < n; i += step) if (Number.isFinite(a[i]) && a[i] > 0) s.push(a[i]);
  if (!s.length) return 1;
  s.sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

export const fmt = (x: number, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : '–');
export function fmtExc(e: number) {
  if (!Number.isFinite(e)) return '–';
  const s = Math.abs(e) < 1e-3 ? e.toExponential(1) : e.toFixed(4);
  return e > 0 ? `+${s}` : s;
}

/** The WebGL renderer's name, and whether it is a software rasteriser (SwiftShader, llvmpipe),
 * where multisampling multiplies the cost of every fragment. */
export function probeGl(): { name: string; software: boolean } {
  try {
    const c = document.createElement('canvas');
    const gl = c.getContext('webgl2');
    if (!gl) return { name: 'none', software: false };
    const ext = gl.getExtension('WEBGL_debug_renderer_info');
    const name = String(gl.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    gl.getExtension('WEBGL_lose_context')?.loseContext();
    return { name, software: /swiftshader|llvmpipe|lavapipe|software/i.test(name) };
  } catch {
    return { name: 'unknown', software: false };
  }
}

