// Predicted spots on the detector image (the crate's prediction, through predictfeed.ts; no
// geometry is derived here): hkl labels on the strongest spots (view setting `labels`), the
// reflection under the cursor (reported to the 3D view, which lights its lattice point) and a
// ring on the spot of the lattice point hovered in the 3D view. Draws through ImageView's
// `overlays` hook, in the image's full-resolution pixel coordinates (pixel i spans [i, i+1),
// the prediction's convention).
import type { ImageView } from './view';
import type { PointInfo, ReflectionTable, V3 } from './recip/types';
import { reflectionInfo } from './recip/adapter';

/** A predicted reflection on the image: the 3D view's record of it (`recip/types.ts`). */
export type SpotInfo = PointInfo;

/** How far from the cursor a spot is still "under" it (CSS pixels). */
const HOVER_PX = 12;

export const spotInfo: (t: ReflectionTable, i: number) => SpotInfo = reflectionInfo;

/** (h k l) with typographic minus signs. */
export const hklText = (hkl: ArrayLike<number>) => Array.from(hkl, (x) => String(x).replace('-', '−')).join(' ');

/** The reflection in one line: hkl, d, 2θ, excitation error. */
export function describeSpot(s: Pick<SpotInfo, 'hkl' | 'd' | 'twoTheta' | 'excitation' | 'inCondition'>): string {
  const eps = s.excitation === 0 ? '0' : s.excitation.toExponential(2).replace('-', '−');
  return `(${hklText(s.hkl)})  d = ${Number.isFinite(s.d) ? s.d.toFixed(3) : '∞'} Å  2θ = ${s.twoTheta.toFixed(2)}°  ε = ${eps} Å⁻¹` +
    (s.inCondition ? '  in the diffraction condition' : '');
}

export class SpotOverlay {
  private table: ReflectionTable | null = null;
  /** Points whose spot is on the detector and that are in or near the diffraction condition
   * (|ε| ≤ 3 tolerances), strongest first. */
  private spots: number[] = [];
  private showLabels = false;
  private hovered = -1;
  private marked = -1;
  /** Labels drawn by the last draw (hkl and CSS position), for tests. */
  lastLabels: { hkl: V3; x: number; y: number; box: [number, number, number, number] }[] = [];
  /** The reflection under the cursor changed (null: none). */
  onHover: (s: SpotInfo | null) => void = () => {};

  constructor(private view: ImageView) {
    view.overlays.push((ctx) => this.draw(ctx));
    const c = view.canvas;
    c.addEventListener('pointermove', (e) => {
      const r = c.getBoundingClientRect();
      this.hoverAt(e.clientX - r.left, e.clientY - r.top);
    });
    c.addEventListener('pointerleave', () => this.setHovered(-1));
  }

  setTable(t: ReflectionTable | null) {
    const hoveredHkl = this.hovered >= 0 && this.table ? spotInfo(this.table, this.hovered).hkl : null;
    this.table = t;
    this.spots = [];
    this.hovered = this.marked = -1;
    if (t) {
      for (let i = 0; i < t.count; i++) {
        if (!Number.isFinite(t.fast?.[i] ?? NaN) || !Number.isFinite(t.slow?.[i] ?? NaN)) continue;
        if (t.hkl[3 * i] === 0 && t.hkl[3 * i + 1] === 0 && t.hkl[3 * i + 2] === 0) continue; // the direct beam
        const tol = t.tolerance?.[i] ?? 0;
        if (t.inCondition?.[i] || Math.abs(t.excitation[i]) <= 3 * tol) this.spots.push(i);
      }
      const cond = (i: number) => (t.inCondition?.[i] ? 1 : 0);
      this.spots.sort((a, b) => cond(b) - cond(a) || t.intensity[b] - t.intensity[a]);
      // the same reflection stays hovered while the crystal turns under a still cursor
      if (hoveredHkl) this.hovered = this.indexOf(hoveredHkl);
    }
    this.view.draw();
  }

  get count() {
    return this.spots.length;
  }

  setLabels(on: boolean) {
    if (on === this.showLabels) return;
    this.showLabels = on;
    this.view.draw();
  }

  /** Ring the spot of a reflection (the lattice point hovered in the 3D view), or none. */
  mark(hkl: V3 | null) {
    const i = hkl ? this.indexOf(hkl) : -1;
    if (i === this.marked) return;
    this.marked = i;
    this.view.draw();
  }

  get markedSpot(): SpotInfo | null {
    return this.table && this.marked >= 0 ? spotInfo(this.table, this.marked) : null;
  }
  get hoveredSpot(): SpotInfo | null {
    return this.table && this.hovered >= 0 ? spotInfo(this.table, this.hovered) : null;
  }

  indexOf(hkl: V3): number {
    const t = this.table;
    if (!t) return -1;
    for (let i = 0; i < t.count; i++) if (t.hkl[3 * i] === hkl[0] && t.hkl[3 * i + 1] === hkl[1] && t.hkl[3 * i + 2] === hkl[2]) return i;
    return -1;
  }

  /** The strongest spots, strongest first (for tests and measurements). */
  strongest(n: number): SpotInfo[] {
    const t = this.table;
    return t ? this.spots.filter((i) => t.inCondition?.[i]).slice(0, n).map((i) => spotInfo(t, i)) : [];
  }

  /** The spot nearest the canvas position (CSS px) within a few pixels: in the diffraction
   * condition first, else near it; -1 if none. */
  spotAt(x: number, y: number): number {
    const t = this.table;
    if (!t || !this.view.hasImage) return -1;
    let best = -1, bestD = HOVER_PX * HOVER_PX, bestCond = false;
    for (const i of this.spots) {
      const [sx, sy] = this.view.fromDetector(t.fast![i], t.slow![i]);
      const d = (sx - x) ** 2 + (sy - y) ** 2;
      const cond = !!t.inCondition?.[i];
      if (d > HOVER_PX * HOVER_PX) continue;
      if ((cond && !bestCond) || (cond === bestCond && d < bestD)) {
        best = i; bestD = d; bestCond = cond;
      }
    }
    return best;
  }

  private hoverAt(x: number, y: number) {
    this.setHovered(this.spotAt(x, y));
  }

  private setHovered(i: number) {
    if (i === this.hovered) return;
    this.hovered = i;
    this.view.draw();
    this.onHover(this.hoveredSpot);
  }

  private draw(ctx: CanvasRenderingContext2D) {
    const t = this.table;
    this.lastLabels = [];
    if (!t) return;
    const large = this.view.large;
    const light = this.view.settings.cmap === 'inverted-grey';
    const ink = light ? '#1546a8' : '#ffd43b';
    const halo = light ? 'rgba(255,255,255,.9)' : 'rgba(0,0,0,.8)';
    const fontPx = large ? 22 : 12;
    ctx.font = `600 ${fontPx}px system-ui, sans-serif`;
    ctx.textBaseline = 'alphabetic';
    const W = this.view.canvas.clientWidth, H = this.view.canvas.clientHeight;
    // the ring labels and the beam centre, then each label and its spot's ring: nothing drawn
    // over another (small elements crowd them)
    const boxes: [number, number, number, number][] = [...this.view.drawnBoxes];
    // a gap of a few pixels between labels, so that two side by side do not read as one
    const gap = large ? 10 : 6;
    const free = (b: [number, number, number, number]) => boxes.every((o) => b[0] > o[2] + gap || b[2] < o[0] - gap || b[1] > o[3] + 2 || b[3] < o[1] - 2);
    const ringR = large ? 9 : 6;
    const label = (i: number, colour: string, force: boolean) => {
      const [x, y] = this.view.fromDetector(t.fast![i], t.slow![i]);
      if (x < -ringR || y < -ringR || x > W + ringR || y > H + ringR) return false;
      const text = hklText([t.hkl[3 * i], t.hkl[3 * i + 1], t.hkl[3 * i + 2]]);
      const w = ctx.measureText(text).width;
      // beside the spot, up and to the right; to the left near the right edge
      const lx = x + ringR + 2 + w > W ? x - ringR - 2 - w : x + ringR + 2;
      const ly = y - ringR * 0.4;
      const box: [number, number, number, number] = [lx - 2, ly - fontPx, lx + w + 2, ly + 3];
      const spot: [number, number, number, number] = [x - ringR, y - ringR, x + ringR, y + ringR];
      if (!force && !(free(box) && free(spot))) return false;
      boxes.push(box, spot);
      ctx.strokeStyle = halo;
      ctx.lineWidth = large ? 5 : 3.5;
      ctx.lineJoin = 'round';
      ctx.strokeText(text, lx, ly);
      ctx.fillStyle = colour;
      ctx.fillText(text, lx, ly);
      this.lastLabels.push({ hkl: [t.hkl[3 * i], t.hkl[3 * i + 1], t.hkl[3 * i + 2]], x, y, box });
      return true;
    };
    const ring = (i: number, colour: string, width: number, r: number) => {
      const [x, y] = this.view.fromDetector(t.fast![i], t.slow![i]);
      ctx.strokeStyle = halo;
      ctx.lineWidth = width + 2.5;
      ctx.beginPath();
      ctx.arc(x, y, r, 0, 2 * Math.PI);
      ctx.stroke();
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.stroke();
    };
    // the hovered and marked spots first: their labels always show
    const hot = light ? '#d9480f' : '#ff922b';
    for (const i of [this.marked, this.hovered]) {
      if (i < 0) continue;
      ring(i, hot, large ? 3.5 : 2.5, large ? 16 : 11);
      label(i, hot, true);
    }
    if (!this.showLabels) return;
    const max = large ? 12 : 24;
    let n = 0;
    for (const i of this.spots) {
      if (n >= max || !t.inCondition?.[i]) break;
      if (i === this.marked || i === this.hovered) continue;
      if (label(i, ink, false)) {
        n++;
        ring(i, ink, large ? 2 : 1.2, ringR);
      }
    }
  }
}
