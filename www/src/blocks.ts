// The block maxima a large image is drawn from when several of its pixels fall on one screen
// pixel (view.ts, `pooledImage`): the rule that picks the block size, shared by the view and
// the realistic chain's worker, which has the crate reduce its image for the view's fitted size
// (`realistic_block_maxima`) and sends the maxima with the image, so that the page's main
// thread draws them instead of reducing millions of pixels.

/** The largest value of each `block` × `block` square of an image (from its top-left corner;
 * ⌈w/block⌉ × ⌈h/block⌉ values, NaN passed over: a block of NaN only is −∞). */
export interface BlockMaxima {
  block: number;
  data: Float32Array;
}

/** The view's drawing box: CSS pixels and device pixels per CSS pixel. */
export interface ViewBox {
  width: number;
  height: number;
  dpr: number;
}

/** Blocks for a reduction of at least k (k ≥ 2): `kEff` = b × p, p the power of two ≤ k/2 (the
 * pyramid level they are reduced from), so `kEff` ≤ 1.5 k. */
export function blockOf(k: number): { p: number; b: number; kEff: number } {
  let p = 1;
  while (p * 4 <= k) p *= 2;
  const b = Math.ceil(k / p);
  return { p, b, kEff: b * p };
}

/** The reduction drawn for `per` image pixels per device pixel: beyond 1.5 the block maxima,
 * with blocks large enough that the reduced image is drawn at least 1:1 (no further
 * averaging); a detector image's spots are a pixel or two on a noisy background
 * (`backgroundBlack`), so its block maxima start as soon as it is drawn below 1:1. 1: none. */
export function poolOf(per: number, backgroundBlack: boolean): number {
  return per > (backgroundBlack ? 1.02 : 1.5) ? Math.ceil(per) : 1;
}

/** The zoom (CSS pixels per detector pixel) that fits a W × H detector in the box. */
export function fitZoom(box: { width: number; height: number }, W: number, H: number): number {
  return Math.min(box.width / W, box.height / H);
}

/** The block size the view draws a `w` × `h` image (`scale` detector pixels each) from when
 * it is fitted in `box` (1: drawn without block maxima). */
export function fittedBlock(box: ViewBox, w: number, h: number, scale: number, backgroundBlack: boolean): number {
  const W = w * scale, H = h * scale;
  if (!W || !H || !box.width || !box.height) return 1;
  const zoom = fitZoom(box, W, H);
  const pool = poolOf(1 / (zoom * scale * box.dpr), backgroundBlack);
  return pool >= 2 ? blockOf(pool).kEff : 1;
}
