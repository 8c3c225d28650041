// The reciprocal-space view's CSS (injected once per document or shadow root) and its text labels.
import { CSS2DObject } from 'three/addons/renderers/CSS2DRenderer.js';

export const STYLE_ID = 'nbr-recip-style';
export const CSS = `
.nbr-recip { position: relative; overflow: hidden; }
.nbr-recip canvas { display: block; width: 100%; height: 100%; touch-action: none; outline: none; }
.nbr-recip .nbr-labels { position: absolute; inset: 0; pointer-events: none; }
.nbr-recip .nbr-label { font: 12px/1.2 system-ui, sans-serif; padding: 1px 4px; border-radius: 3px; white-space: nowrap; }
.nbr-recip .nbr-label.axis { font-weight: 700; font-size: 13px; }
.nbr-recip .nbr-label.info { font: 12px/1.35 ui-monospace, monospace; padding: 3px 6px; }
.nbr-recip.light .nbr-label { color: #1f2933; background: rgba(255,255,255,0.72); }
.nbr-recip.dark .nbr-label { color: #e9ecef; background: rgba(17,20,24,0.7); }
.nbr-recip .nbr-label.info { z-index: 100000 !important; }
.nbr-recip.light .nbr-label.info { background: rgba(255,255,255,0.95); }
.nbr-recip.dark .nbr-label.info { background: rgba(17,20,24,0.95); }
.nbr-recip .nbr-legend { position: absolute; left: 8px; bottom: 8px; font: 12px/1.45 system-ui, sans-serif; padding: 6px 8px; border-radius: 4px; pointer-events: none; max-width: 60%; }
.nbr-recip.light .nbr-legend { color: #1f2933; background: rgba(255,255,255,0.8); }
.nbr-recip.dark .nbr-legend { color: #e9ecef; background: rgba(17,20,24,0.75); }
.nbr-recip .nbr-legend i { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 5px; vertical-align: -1px; }
.nbr-recip .nbr-legend .hint { opacity: 0.7; }
.nbr-recip .nbr-error { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; padding: 1em; text-align: center; font: 14px system-ui, sans-serif; }
`;

export function injectStyle() {
  if (document.getElementById(STYLE_ID)) return;
  const s = document.createElement('style');
  s.id = STYLE_ID;
  s.textContent = CSS;
  document.head.appendChild(s);
}

export function label(text: string, cls = ''): CSS2DObject {
  const el = document.createElement('div');
  el.className = `nbr-label ${cls}`;
  el.textContent = text;
  return new CSS2DObject(el);
}

/** Keep the fixed labels apart: in the order given (most important first), each label that
 * would cover one already placed (or an obstacle: the legend) moves down below it, at most two
 * lines; one that still covers another is not shown (the φ axis, 000, a*, b*, c* and k₀ all
 * start near the origin, and a small view crowds them: a pile of labels reads as none).
 * Run after each label render; returns the labels left out. */
export function separateLabels(order: CSS2DObject[], bounds?: DOMRect, obstacles: DOMRect[] = []): CSS2DObject[] {
  const placed: { l: number; r: number; t: number; b: number }[] = obstacles
    .filter((o) => o.width > 0 && o.height > 0)
    .map((o) => ({ l: o.left, r: o.right, t: o.top, b: o.bottom }));
  const skipped: CSS2DObject[] = [];
  for (const o of order) {
    const el = o.element;
    el.style.visibility = '';
    if (!o.visible || el.style.display === 'none' || !el.textContent) continue;
    const r0 = el.getBoundingClientRect();
    if (!r0.width) continue;
    // a label that runs off the view's side moves in (the sphere's label in a narrow view)
    let dx = 0;
    if (bounds && r0.width < bounds.width - 8) {
      if (r0.left < bounds.left + 4) dx = bounds.left + 4 - r0.left;
      else if (r0.right > bounds.right - 4) dx = bounds.right - 4 - r0.right;
    }
    const r = { left: r0.left + dx, right: r0.right + dx, top: r0.top, bottom: r0.bottom, height: r0.height };
    const hits = (d: number) => placed.some((p) => r.left < p.r && r.right > p.l && r.top + d < p.b && r.bottom + d > p.t);
    let dy = 0;
    for (let i = 0; i < 2 && hits(dy); i++) dy += r.height * 0.9;
    if (hits(dy)) {
      el.style.visibility = 'hidden';
      skipped.push(o);
      continue;
    }
    if (dx || dy) el.style.transform += ` translate(${dx.toFixed(1)}px, ${dy.toFixed(1)}px)`;
    placed.push({ l: r.left, r: r.right, t: r.top + dy, b: r.bottom + dy });
  }
  return skipped;
}
