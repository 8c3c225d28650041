// Canvas image view: colour maps, linear/sqrt/log scaling with contrast, zoom/pan (mouse,
// wheel, keyboard), resolution rings, beam centre and a cursor readout. Shared by the app and
// the <nanobragg-view> element.
import type { Geometry } from './protocol';
import { blockOf, fitZoom, poolOf, type BlockMaxima, type ViewBox } from './blocks';
import { DetectorMap } from './geometry';
import type { ColourMap, Scaling, ViewSettings } from './state';
export { COLOUR_MAPS } from './state';

/** The view settings the image view uses. */
export type ImageSettings = Pick<ViewSettings, 'cmap' | 'scaling' | 'contrast' | 'min' | 'max' | 'rings' | 'beamc'>;

/** The pixel under the pointer (full-resolution indices) and its value in the image shown; d,
 * 2θ and hkl come from the crate (readout.ts asks `NanoBraggClient.pixelGeometry`). */
export interface Readout {
  f: number;
  s: number;
  value: number;
}

// Polynomial fits of matplotlib's viridis and inferno (Matt Zucker, CC0).
const POLY: Record<'viridis' | 'inferno', number[][]> = {
  viridis: [
    [0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
    [0.1050930431085774, 1.404613529898575, 1.384590162594685],
    [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
    [-4.634230498983486, -5.799100973351585, -19.33244095627987],
    [6.228269936347081, 14.17993336680509, 56.69055260068105],
    [4.776384997670288, -13.74514537774601, -65.35303263337234],
    [-5.435455855934631, 4.645852612178535, 26.3124352495832],
  ],
  inferno: [
    [0.0002189403691192265, 0.001651004631001012, -0.01948089843709184],
    [0.1065134194856116, 0.5639564367884091, 3.932712388889277],
    [11.60249308247187, -3.972853965665698, -15.9423941062914],
    [-41.70399613139459, 17.43639888205313, 44.35414519872813],
    [77.162935699427, -33.40235894210092, -81.80730925738993],
    [-71.31942824499214, 32.62606426397723, 73.20951985803202],
    [25.13112622477341, -12.24266895238567, -23.07032500287172],
  ],
};

// ColorBrewer's RdBu (Cynthia Brewer, Apache-2.0), blue to red: 0 maps to the white middle.
const DIVERGING = ['053061', '2166ac', '4393c3', '92c5de', 'd1e5f0', 'f7f7f7', 'fddbc7', 'f4a582', 'd6604d', 'b2182b', '67001f']
  .map((h) => [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16) / 255));

export function colourLut(map: ColourMap): Uint32Array {
  const lut = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let r: number, g: number, b: number;
    if (map === 'grey') r = g = b = t;
    else if (map === 'inverted-grey') r = g = b = 1 - t;
    else if (map === 'diverging') {
      const x = t * (DIVERGING.length - 1), k = Math.min(DIVERGING.length - 2, Math.floor(x)), u = x - k;
      [r, g, b] = [0, 1, 2].map((c) => DIVERGING[k][c] * (1 - u) + DIVERGING[k + 1][c] * u);
    } else {
      const c = POLY[map];
      const ch = (k: number) => {
        let v = 0;
        for (let j = c.length - 1; j >= 0; j--) v = v * t + c[j][k];
        return Math.min(1, Math.max(0, v));
      };
      r = ch(0); g = ch(1); b = ch(2);
    }
    lut[i] = (255 << 24) | (Math.round(b * 255) << 16) | (Math.round(g * 255) << 8) | Math.round(r * 255);
  }
  return lut;
}

/** Black and white levels (photons/pixel): explicit ones, else `black` (0, or a detector
 * image's background: its median) and black + (max − black) / 10^(contrast/20), but never
 * below `floor` (the image's 99th percentile: at most 1 % of the pixels saturate, so an image
 * of broad spots shows its pattern instead of a flat white-level square). A detector image over
 * a background also gives `top`, the background's top (its 99.9th percentile: noise, water
 * ring): its automatic white level is black + 10 (top − black) at contrast 30 (each 20 more
 * divides the range by ten), so the noise stays within the lightest part of the scale and the
 * spots, sparse and a few times above it, come out dark at any zoom (a range from the maximum
 * would put the brightest spot at the top and every other spot in the noise). */
export function levels(settings: ImageSettings, max: number, floor = 0, black = 0, top = 0): [number, number] {
  const lo = settings.min ?? black;
  const b = settings.min === null && black < max ? black : 0;
  const auto = max <= 0 ? 1
    : settings.min === null && top > b
      ? Math.min(max, b + 10 * (top - b) * Math.pow(10, (30 - settings.contrast) / 20))
      : Math.max(b + (max - b) / Math.pow(10, settings.contrast / 20), Math.min(floor, max));
  let hi = settings.max ?? auto;
  if (!(hi > lo)) hi = lo + (Math.abs(lo) || 1) * 1e-6;
  return [lo, hi];
}

/** Map an image to RGBA with the settings (also used for PNG export). The scaling curve and
 * the colour map are folded into one table over the normalised value, so the per-pixel work
 * is a multiply, a clamp and a lookup. */
export function colourise(data: Float32Array, settings: ImageSettings, max: number, out: Uint32Array, floor = 0, black = 0, top = 0) {
  const lut = colourLut(settings.cmap);
  const [lo, hi] = levels(settings, max, floor, black, top);
  const N = 4096;
  const table = new Uint32Array(N + 1);
  const logK = 999, logN = 1 / Math.log(1 + logK);
  for (let i = 0; i <= N; i++) {
    let x = i / N;
    if (settings.scaling === 'sqrt') x = Math.sqrt(x);
    else if (settings.scaling === 'log') x = Math.log(1 + logK * x) * logN;
    table[i] = lut[(x * 255 + 0.5) | 0];
  }
  const k = N / (hi - lo);
  for (let i = 0; i < data.length; i++) {
    const x = (data[i] - lo) * k;
    out[i] = table[x >= N ? N : x > 0 ? x | 0 : 0];
  }
}

/** An image halved by the maximum of each 2×2 block (of the largest magnitude, its sign kept,
 * when `signed`): ⌈w/2⌉ × ⌈h/2⌉ pixels, an odd last row or column a block of its own; NaN is
 * passed over (a block of NaN only: −∞, or 0 when signed). */
export function halve(d: Float32Array, pw: number, ph: number, signed: boolean): Float32Array {
  const w = Math.ceil(pw / 2), h = Math.ceil(ph / 2);
  const out = new Float32Array(w * h).fill(signed ? 0 : -Infinity);
  if (signed) {
    for (let y = 0; y < ph; y++) {
      const row = y * pw, orow = (y >> 1) * w;
      for (let x = 0; x < pw; x++) {
        const v = d[row + x], i = orow + (x >> 1);
        if (Math.abs(v) > Math.abs(out[i])) out[i] = v;
      }
    }
    return out;
  }
  // each output pixel from its block at once, in the order of the rows (an odd last row or
  // column is read twice: the maximum is the same)
  for (let y = 0; y < h; y++) {
    const r0 = 2 * y * pw, r1 = 2 * y + 1 < ph ? r0 + pw : r0, orow = y * w;
    for (let x = 0; x < w; x++) {
      const c0 = 2 * x, c1 = c0 + 1 < pw ? c0 + 1 : c0;
      let m = -Infinity, v = d[r0 + c0];
      if (v > m) m = v;
      v = d[r0 + c1];
      if (v > m) m = v;
      v = d[r1 + c0];
      if (v > m) m = v;
      v = d[r1 + c1];
      if (v > m) m = v;
      out[orow + x] = m;
    }
  }
  return out;
}

/** The q-quantile of an image, from a sample of at most 2^16 of its pixels. */
export function percentile(data: Float32Array, q: number): number {
  return percentiles(data, [q])[0];
}

/** Several quantiles of an image (`percentile`'s, each the same), from one sorted sample. */
export function percentiles(data: Float32Array, qs: number[]): number[] {
  if (!data.length) return qs.map(() => 0);
  const step = Math.max(1, Math.floor(data.length / 65536));
  const s = new Float32Array(Math.ceil(data.length / step));
  for (let i = 0, j = 0; i < data.length; i += step, j++) s[j] = data[i];
  s.sort();
  return qs.map((q) => s[Math.min(s.length - 1, Math.floor(q * s.length))]);
}

export class ImageView {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  private img = document.createElement('canvas');
  /** The image reduced by the largest value of each k×k block, for views that show several
   * image pixels per screen pixel: a spot of one pixel stays visible instead of being averaged
   * away (detector viewers do the same). Rebuilt when the data, the colours or k change. */
  private pooled: { k: number; canvas: HTMLCanvasElement; kEff: number; given: boolean } | null = null;
  private data: Float32Array | null = null;
  private w = 0;
  private h = 0;
  /** Detector pixels per image pixel (>1 for a reduced-resolution preview). */
  private scale = 1;
  private max = 0;
  /** The image's 99th percentile (of a sample of its pixels): the floor of the automatic white level. */
  private p99 = 0;
  /** The automatic black level: 0, or with `backgroundBlack` the image's median. */
  private black = 0;
  /** With `backgroundBlack`, the background's top (99.9th percentile), else 0 (see `levels`). */
  private top = 0;
  /** A detector's image over a background (ADU: water, air, noise): the automatic black level
   * is its median, so that spots stand out from the background instead of mid-grey on grey. */
  backgroundBlack = false;
  /** A signed image (a derivative): a view of several image pixels per screen pixel shows each
   * block's value of the largest magnitude, sign kept (the block maximum would drop the
   * negative half). */
  signed = false;
  /** What the mouse wheel does over the image: zoom ('always': the app), zoom only with
   * Ctrl/⌘ (a trackpad pinch) or once the image has the focus ('focus': embedded, so that the
   * wheel scrolls the page it sits in), or nothing ('off'). */
  wheel: 'always' | 'focus' | 'off' = 'always';
  /** Geometry of the image shown (in its own pixels: multiply by `scale` for the detector's). */
  private map: DetectorMap | null = null;
  private geom: Geometry | null = null;
  private ringList: { d: number; segments: number[] }[] = [];
  private beamXY: [number, number] | null = null;
  settings: ImageSettings = { cmap: 'inverted-grey', scaling: 'log', contrast: 30, min: null, max: null, rings: true, beamc: true };
  /** Presentation mode: larger labels and lines. */
  large = false;
  private zoom = 1;
  private cx = 0;
  private cy = 0;
  /** Keep the image fitted to the view (on every resize) until the user zooms or pans. */
  private autoFit = true;
  private drag: { x: number; y: number; cx: number; cy: number; moved: boolean } | null = null;
  private pointer: { x: number; y: number } | null = null;
  /** The canvas's CSS size (kept from the last resize: no layout query per overlay point). */
  private cssW = 0;
  private cssH = 0;
  onReadout: (r: Readout | null) => void = () => {};
  /** Extra drawing over the image (spot markers, hkl labels: spots.ts), called at the end of
   * each draw with the context in CSS pixels; use `fromDetector` for positions. */
  overlays: ((ctx: CanvasRenderingContext2D) => void)[] = [];
  /** Called after each draw and after each new image (the measured-image comparison keeps its
   * view's zoom and pan equal to this one's: measured/compare.ts). */
  onDraw: (() => void) | null = null;
  onImage: (() => void) | null = null;
  /** Boxes (CSS px: x0, y0, x1, y1) of the ring labels and the beam centre drawn by the last
   * draw, for overlays that place their own labels beside them. */
  drawnBoxes: [number, number, number, number][] = [];

  constructor(private host: HTMLElement) {
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'Simulated detector image. Arrow keys pan, + and - zoom, 0 fits.');
    this.canvas.className = 'nb-canvas';
    host.appendChild(this.canvas);
    this.ctx = this.canvas.getContext('2d')!;
    new ResizeObserver(() => this.resize()).observe(host);
    this.bindInput();
    this.resize();
  }

  get hasImage() {
    return this.data !== null;
  }
  get imageSize() {
    return { width: this.w, height: this.h, scale: this.scale, max: this.max, levels: levels(this.settings, this.max, this.p99, this.black, this.top) };
  }
  /** The drawing box (CSS pixels, device pixels per CSS pixel): with `blocks.ts`
   * `fittedBlock`, the block maxima a new image fitted in the view is drawn from. */
  get box(): ViewBox {
    return { width: this.cssW, height: this.cssH, dpr: window.devicePixelRatio || 1 };
  }
  /** Whether the view follows the container (no user zoom or pan since the last fit). */
  get fitted() {
    return this.autoFit;
  }

  /** A new image; `maxima`: its block maxima as computed beside it (the realistic chain's
   * worker, for the fitted view: `blocks.ts`), drawn instead of reducing the image here. */
  setImage(data: Float32Array, w: number, h: number, geometry: Geometry | null, scale = 1, maxima: BlockMaxima | null = null) {
    const sameDetector = this.data !== null && this.w * this.scale === w * scale && this.h * this.scale === h * scale;
    this.data = data;
    this.w = w;
    this.h = h;
    this.scale = scale;
    this.geom = geometry;
    this.pyramid = [];
    this.given = maxima;
    // no geometry (a measured image before its detector is simulated): no rings, beam or d
    this.map = geometry ? new DetectorMap(geometry) : null;
    this.ringList = this.map ? this.map.ringResolutions().map((d) => this.map!.ring(d)) : [];
    this.beamXY = this.map ? this.map.beamCentre() : null;
    // the largest value: of the block maxima when given (each block's largest: the same)
    const all = maxima ? maxima.data : data;
    let max = 0;
    for (let i = 0; i < all.length; i++) if (all[i] > max) max = all[i];
    this.max = max;
    const [p99, p50, p999] = percentiles(data, [0.99, 0.5, 0.999]);
    this.p99 = p99;
    this.black = this.backgroundBlack ? p50 : 0;
    this.top = this.backgroundBlack ? p999 : 0;
    if (!sameDetector) this.autoFit = true;
    // new colours, drawn once at the zoom the image will have (fitted: at the new size)
    this.imgStale = true;
    this.pooled = null;
    if (this.autoFit) this.fit();
    else this.draw();
    this.emitReadout();
    this.onImage?.();
  }

  /** The crate's geometry of the image shown (null: none given). */
  get geometry(): Geometry | null {
    return this.geom;
  }

  /** The image shown (its own pixels; `scale` detector pixels each), for comparisons. */
  get image(): { data: Float32Array; w: number; h: number; scale: number } | null {
    return this.data && { data: this.data, w: this.w, h: this.h, scale: this.scale };
  }

  /** Zoom (CSS px per detector pixel), the detector point at the view's centre, and whether the
   * view follows its container (fitted). */
  get viewport() {
    return { zoom: this.zoom, cx: this.cx, cy: this.cy, autoFit: this.autoFit };
  }

  setViewport(v: { zoom: number; cx: number; cy: number; autoFit: boolean }) {
    if (v.zoom === this.zoom && v.cx === this.cx && v.cy === this.cy && v.autoFit === this.autoFit) return;
    this.zoom = v.zoom;
    this.cx = v.cx;
    this.cy = v.cy;
    this.autoFit = v.autoFit;
    this.draw();
  }

  update(settings: Partial<ImageSettings>) {
    const recolour = (['cmap', 'scaling', 'contrast', 'min', 'max'] as const).some((k) => k in settings && settings[k] !== this.settings[k]);
    Object.assign(this.settings, settings);
    if (recolour) this.recolour();
    else this.draw();
  }

  private recolour() {
    if (!this.data) return;
    this.imgStale = true;
    this.pooled = null;
    this.draw();
  }

  /** `img` is coloured when first needed after a new image or colours: a large image fitted in
   * the view is drawn from its block maxima (`pooledImage`), and colouring its every pixel
   * (4.5 M for an EIGER2 4M: ~0.1 s of the main thread, with `putImageData`) waits until a
   * zoom shows it 1:1 or a PNG is saved. */
  private imgStale = true;

  private fullImage(): HTMLCanvasElement {
    if (this.imgStale && this.data) {
      this.img.width = this.w;
      this.img.height = this.h;
      const ictx = this.img.getContext('2d')!;
      const id = ictx.createImageData(this.w, this.h);
      colourise(this.data, this.settings, this.max, new Uint32Array(id.data.buffer), this.p99, this.black, this.top);
      ictx.putImageData(id, 0, 0);
      this.imgStale = false;
    }
    return this.img;
  }

  /** Block maxima over 2×2, 4×4, 8×8, … (each level from the one before), kept while the data
   * holds: a zoom step then reduces a level already four or more times smaller than the image
   * instead of the whole image (a 16-megapixel detector stays responsive). */
  private pyramid: { k: number; w: number; h: number; data: Float32Array }[] = [];
  /** The block maxima that came with the image (null: none). */
  private given: BlockMaxima | null = null;
  /** What the last drawing showed the image from (for tests): its block size (1: every pixel)
   * and whether the block maxima were those that came with the image. */
  drawnFrom = { block: 1, given: false };

  private level(p: number): { k: number; w: number; h: number; data: Float32Array } {
    if (p <= 1) return { k: 1, w: this.w, h: this.h, data: this.data! };
    const hit = this.pyramid.find((l) => l.k === p);
    if (hit) return hit;
    const prev = this.level(p / 2);
    const w = Math.ceil(prev.w / 2), h = Math.ceil(prev.h / 2);
    const out = halve(prev.data, prev.w, prev.h, this.signed);
    const l = { k: p, w, h, data: out };
    this.pyramid.push(l);
    return l;
  }

  /** The block-maximum image for a reduction of at least k (k ≥ 2), cached: blocks of
   * `kEff` = a multiple of a power of two p ≤ k/2 (at most 1.5 k), reduced from level p. */
  private pooledImage(k: number): { canvas: HTMLCanvasElement; kEff: number; given: boolean } {
    if (this.pooled?.k === k) return this.pooled;
    const { p, b, kEff } = blockOf(k);
    const signed = this.signed;
    const pw = Math.ceil(this.w / kEff), ph = Math.ceil(this.h / kEff);
    let maxes: Float32Array;
    const given = !signed && this.given?.block === kEff && this.given.data.length === pw * ph;
    if (given) {
      maxes = this.given!.data; // computed beside the image: the same values
    } else {
      const src = this.level(p);
      maxes = new Float32Array(pw * ph).fill(signed ? 0 : -Infinity);
      for (let y = 0; y < src.h; y++) {
        const row = y * src.w, prow = ((y / b) | 0) * pw;
        for (let x = 0; x < src.w; x++) {
          const v = src.data[row + x], i = prow + ((x / b) | 0);
          if (signed ? Math.abs(v) > Math.abs(maxes[i]) : v > maxes[i]) maxes[i] = v;
        }
      }
    }
    const canvas = document.createElement('canvas');
    canvas.width = pw;
    canvas.height = ph;
    const ctx = canvas.getContext('2d')!;
    const id = ctx.createImageData(pw, ph);
    colourise(maxes, this.settings, this.max, new Uint32Array(id.data.buffer), this.p99, this.black, this.top);
    ctx.putImageData(id, 0, 0);
    this.pooled = { k, canvas, kEff, given };
    return this.pooled;
  }

  /** PNG of the image at its own resolution with the current colours. */
  toPng(): Promise<Blob> {
    return new Promise((ok, fail) => this.fullImage().toBlob((b) => (b ? ok(b) : fail(new Error('PNG encoding failed'))), 'image/png'));
  }

  /** Fit the whole detector in the view and follow the container's size from now on. */
  fit() {
    this.autoFit = true;
    const r = { width: this.cssW, height: this.cssH };
    const W = this.w * this.scale, H = this.h * this.scale;
    if (!W || !r.width || !r.height) return this.draw();
    this.zoom = fitZoom(r, W, H);
    this.cx = W / 2;
    this.cy = H / 2;
    this.draw();
  }

  zoomBy(k: number, at?: { x: number; y: number }) {
    const r = { width: this.cssW, height: this.cssH };
    const ax = at?.x ?? r.width / 2, ay = at?.y ?? r.height / 2;
    const [fx, fy] = this.toDetector(ax, ay);
    this.zoom = Math.min(64, Math.max(0.05, this.zoom * k));
    // keep the point under the cursor fixed
    this.cx = fx - (ax - r.width / 2) / this.zoom;
    this.cy = fy - (ay - r.height / 2) / this.zoom;
    this.autoFit = false;
    this.draw();
  }

  panBy(dx: number, dy: number) {
    this.cx -= dx / this.zoom;
    this.cy -= dy / this.zoom;
    this.autoFit = false;
    this.draw();
  }

  /** Canvas CSS pixel -> detector pixel coordinates (full resolution). */
  toDetector(x: number, y: number): [number, number] {
    return [this.cx + (x - this.cssW / 2) / this.zoom, this.cy + (y - this.cssH / 2) / this.zoom];
  }

  /** Detector pixel coordinates (full resolution) -> canvas CSS pixels. */
  fromDetector(f: number, s: number): [number, number] {
    return [(f - this.cx) * this.zoom + this.cssW / 2, (s - this.cy) * this.zoom + this.cssH / 2];
  }

  /** The displayed image's rectangle in CSS pixels of the canvas (for tests: is it cropped?). */
  imageRect() {
    const [x0, y0] = this.fromDetector(0, 0);
    const [x1, y1] = this.fromDetector(this.w * this.scale, this.h * this.scale);
    return { x0, y0, x1, y1, width: this.cssW, height: this.cssH };
  }

  private resize() {
    const r = this.host.getBoundingClientRect();
    this.cssW = r.width;
    this.cssH = r.height;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.round(r.width * dpr));
    this.canvas.height = Math.max(1, Math.round(r.height * dpr));
    if (this.autoFit) this.fit();
    else this.draw();
  }

  /** The colour around the image: for inverted grey (a white image) the page's theme-dependent
   * `--canvas-bg` (light grey, or near-black in the dark theme), else dark grey. */
  private surround(): string {
    if (this.settings.cmap !== 'inverted-grey' && this.settings.cmap !== 'diverging') return '#202020';
    return getComputedStyle(this.host).getPropertyValue('--canvas-bg').trim() || '#d8d8d8';
  }

  draw() {
    this.paint();
    this.onDraw?.();
  }

  private paint() {
    this.drawnBoxes = [];
    const ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const r = { width: this.cssW, height: this.cssH };
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = this.surround();
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    if (!this.data) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = this.zoom * this.scale < 1;
    const [x0, y0] = this.fromDetector(0, 0);
    const dw = this.w * this.scale * this.zoom, dh = this.h * this.scale * this.zoom;
    // image pixels per device pixel: beyond a limit, draw the block maxima (see `pooled` and
    // blocks.ts `poolOf`)
    const per = 1 / (this.zoom * this.scale * dpr);
    const pool = poolOf(per, this.backgroundBlack);
    if (pool >= 2) {
      // drawn at least 1:1: nearest sampling keeps each block's maximum whole
      ctx.imageSmoothingEnabled = false;
      const { canvas, kEff, given } = this.pooledImage(pool);
      ctx.drawImage(canvas, 0, 0, this.w / kEff, this.h / kEff, x0, y0, dw, dh);
      this.drawnFrom = { block: kEff, given };
    } else {
      ctx.drawImage(this.fullImage(), 0, 0, this.w, this.h, x0, y0, dw, dh);
      this.drawnFrom = { block: 1, given: false };
    }
    // overlays (spot markers) need no geometry of their own
    if (!this.map) {
      for (const o of this.overlays) o(ctx);
      return;
    }
    const k = this.scale; // overlay coordinates are in the shown image's pixels
    const accent = this.settings.cmap === 'diverging' ? '#2a2a2a'
      : this.settings.cmap === 'inverted-grey' || this.settings.cmap === 'grey' ? '#d0342c' : '#38d9f5';
    const big = this.large ? 2 : 1;
    // the beam centre's cross: its box is known before the rings' labels are placed, which keep
    // clear of it as of each other (zoomed out, or in presentation mode, the innermost ring's
    // label fell on the cross)
    const beam = this.settings.beamc && this.beamXY ? this.fromDetector(this.beamXY[0] * k, this.beamXY[1] * k) : null;
    const arm = 8 * big;
    const beamBox: [number, number, number, number][] = beam ? [[beam[0] - arm, beam[1] - arm, beam[0] + arm, beam[1] + arm]] : [];
    if (this.settings.rings) {
      ctx.strokeStyle = accent;
      ctx.fillStyle = accent;
      ctx.lineWidth = 1 * big;
      const fontPx = 12 * (this.large ? 2.2 : 1);
      ctx.font = `${this.large ? 600 : 400} ${fontPx}px system-ui, sans-serif`;
      // labels stay on the image where it is shown (a ring runs on over the surround; its label
      // out there read as part of the page)
      const left = Math.max(4, x0 + 4), top = Math.max(fontPx + 2, y0 + fontPx + 2);
      const right = Math.min(r.width - 4, x0 + dw - 4), bottom = Math.min(r.height - 4, y0 + dh - 4);
      for (const ring of this.ringList) {
        const seg = ring.segments;
        const label = `${+ring.d.toPrecision(3)} Å`;
        const lw = ctx.measureText(label).width + 5;
        ctx.beginPath();
        let best: [number, number] | null = null, bestScore = -Infinity;
        for (let i = 0; i < seg.length; i += 4) {
          const [xa, ya] = this.fromDetector(seg[i] * k, seg[i + 1] * k);
          const [xb, yb] = this.fromDetector(seg[i + 2] * k, seg[i + 3] * k);
          ctx.moveTo(xa, ya);
          ctx.lineTo(xb, yb);
          // label at the point of the ring nearest the top-right of the view, inside the image,
          // clear of the labels drawn before it (rings that run close together, as at a
          // panel's edge, would print their labels over each other) and of the beam centre's
          // cross: else none
          if (xa > left && ya > top && xa + lw < right && ya < bottom && xa - ya > bestScore
            && !overlapsAny([xa + 1, ya - 3 - fontPx, xa + lw, ya - 1], this.drawnBoxes)
            && !overlapsAny([xa + 1, ya - 3 - fontPx, xa + lw, ya - 1], beamBox)) {
            bestScore = xa - ya;
            best = [xa, ya];
          }
        }
        ctx.stroke();
        if (best) {
          this.drawnBoxes.push([best[0] + 1, best[1] - 3 - fontPx, best[0] + lw, best[1] - 1]);
          // a halo: the accent alone is lost on a colour map's middle (cyan on viridis's
          // yellow-green), in presentation mode as at the desk
          ctx.lineWidth = this.large ? 4 : 3;
          ctx.lineJoin = 'round';
          ctx.strokeStyle = this.settings.cmap === 'inverted-grey' || this.settings.cmap === 'diverging' ? 'rgba(255,255,255,.85)' : 'rgba(0,0,0,.7)';
          ctx.strokeText(label, best[0] + 3, best[1] - 3);
          ctx.strokeStyle = accent;
          ctx.lineWidth = big;
          ctx.fillText(label, best[0] + 3, best[1] - 3);
        }
      }
    }
    if (beam) {
      const [x, y] = beam;
      this.drawnBoxes.push(...beamBox);
      ctx.strokeStyle = accent;
      ctx.lineWidth = 1.5 * big;
      ctx.beginPath();
      ctx.moveTo(x - arm, y); ctx.lineTo(x + arm, y);
      ctx.moveTo(x, y - arm); ctx.lineTo(x, y + arm);
      ctx.stroke();
    }
    for (const o of this.overlays) o(ctx);
  }

  /** Lab position (m) of full-resolution detector coordinates (f, s) on the shown image's
   * detector (null before the first image). */
  positionAt(f: number, s: number): [number, number, number] | null {
    return this.map ? this.map.position(f / this.scale, s / this.scale) : null;
  }

  /** The rings drawn (segments in the shown image's pixels) — for tests. */
  get rings() {
    return this.ringList;
  }

  /** Beam centre in full-resolution detector pixel coordinates (null if the beam misses). */
  get beamCentre(): [number, number] | null {
    return this.beamXY && [this.beamXY[0] * this.scale, this.beamXY[1] * this.scale];
  }

  readoutAt(x: number, y: number): Readout | null {
    if (!this.data) return null;
    const [fd, sd] = this.toDetector(x, y);
    const W = this.w * this.scale, H = this.h * this.scale;
    if (fd < 0 || sd < 0 || fd >= W || sd >= H) return null;
    const f = Math.floor(fd), s = Math.floor(sd);
    const value = this.data[Math.floor(sd / this.scale) * this.w + Math.floor(fd / this.scale)];
    return { f, s, value };
  }

  /** Forget the pointer (the readout clears). */
  clearReadout() {
    this.pointer = null;
    this.onReadout(null);
  }

  private emitReadout() {
    this.onReadout(this.pointer ? this.readoutAt(this.pointer.x, this.pointer.y) : null);
  }

  private bindInput() {
    const c = this.canvas;
    c.addEventListener('wheel', (e) => {
      if (this.wheel === 'off') return;
      const focused = (c.getRootNode() as Document | ShadowRoot).activeElement === c;
      if (this.wheel === 'focus' && !focused && !e.ctrlKey && !e.metaKey) return; // the page scrolls
      e.preventDefault();
      const r = c.getBoundingClientRect();
      this.zoomBy(Math.pow(1.0015, -e.deltaY), { x: e.clientX - r.left, y: e.clientY - r.top });
    }, { passive: false });
    c.addEventListener('pointerdown', (e) => {
      c.setPointerCapture(e.pointerId);
      this.drag = { x: e.clientX, y: e.clientY, cx: this.cx, cy: this.cy, moved: false };
    });
    c.addEventListener('pointerup', () => (this.drag = null));
    c.addEventListener('pointermove', (e) => {
      const r = c.getBoundingClientRect();
      if (this.drag) {
        const dx = e.clientX - this.drag.x, dy = e.clientY - this.drag.y;
        if (this.drag.moved || Math.abs(dx) + Math.abs(dy) > 2) {
          this.drag.moved = true;
          this.autoFit = false;
          this.cx = this.drag.cx - dx / this.zoom;
          this.cy = this.drag.cy - dy / this.zoom;
          this.draw();
        }
      }
      this.pointer = { x: e.clientX - r.left, y: e.clientY - r.top };
      this.emitReadout();
    });
    c.addEventListener('pointerleave', () => this.clearReadout());
    c.addEventListener('dblclick', () => this.fit());
    c.addEventListener('keydown', (e) => {
      const step = 40;
      const keys: Record<string, () => void> = {
        '+': () => this.zoomBy(1.25), '=': () => this.zoomBy(1.25), '-': () => this.zoomBy(0.8), '0': () => this.fit(),
        ArrowLeft: () => this.panBy(step, 0), ArrowRight: () => this.panBy(-step, 0),
        ArrowUp: () => this.panBy(0, step), ArrowDown: () => this.panBy(0, -step),
      };
      const k = keys[e.key];
      if (k) { e.preventDefault(); k(); }
    });
  }
}

/** Whether a box [x0, y0, x1, y1] overlaps any of `boxes`. */
export function overlapsAny(b: [number, number, number, number], boxes: readonly [number, number, number, number][]): boolean {
  return boxes.some((o) => b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]);
}
