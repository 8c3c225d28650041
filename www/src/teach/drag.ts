// Rotating the crystal by dragging on the detector image: Shift+drag tilts it about the axes
// perpendicular to the beam, Alt+drag (or Ctrl+Shift+drag: some desktops take Alt+drag) spins it
// about the beam, a plain drag still pans. The drag mode chosen on the page ('tilt', 'spin': for
// touch screens) applies to plain drags too. Listens on the image's host in the capture phase, so
// a rotating drag never reaches the view's pan handler; the view itself is not changed.
import type { ImageView } from '../view';
import type { Drag, ImageFrame, V3 } from './orientation';
import { rotateMisset } from '../recip/rotate';

export type DragMode = 'pan' | 'tilt' | 'spin';

export interface RotateDragOptions {
  /** The mode chosen on the page (for plain drags and touch). */
  mode: () => DragMode;
  /** Current misset angles, or null while they are not known (a random misset being resolved). */
  angles: () => V3 | null;
  /** Called when a drag starts on a misset that is not yet known (resolve it). */
  needAngles?: () => void;
  frame: () => ImageFrame | null;
  /** New angles: `live` while the drag goes on (previews), final on release. */
  set: (angles: V3, live: boolean) => void;
  /** Degrees per CSS pixel of drag (default 0.2). */
  sensitivity?: number;
}

/** Which rotation a pointer event asks for (null = pan). */
export function dragKind(e: { shiftKey: boolean; altKey: boolean; ctrlKey: boolean }, mode: DragMode): 'tilt' | 'spin' | null {
  if (e.altKey || (e.ctrlKey && e.shiftKey)) return 'spin';
  if (e.shiftKey) return 'tilt';
  return mode === 'pan' ? null : mode;
}

export function attachRotateDrag(view: ImageView, o: RotateDragOptions): () => void {
  const canvas = view.canvas;
  const host = canvas.parentElement ?? canvas;
  let drag: { id: number; x: number; y: number; kind: 'tilt' | 'spin'; angles: V3 | null; moved: boolean } | null = null;

  const local = (e: PointerEvent) => {
    const r = canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top] as const;
  };
  const down = (e: PointerEvent) => {
    if (e.target !== canvas || e.button !== 0) return;
    const kind = dragKind(e, o.mode());
    if (!kind || !view.hasImage) return;
    e.stopPropagation(); // the view does not pan
    e.preventDefault();
    try {
      canvas.setPointerCapture(e.pointerId);
    } catch {
      // a synthetic event (scripts, benchmarks) has no active pointer to capture
    }
    const [x, y] = local(e);
    const angles = o.angles();
    if (!angles) o.needAngles?.();
    drag = { id: e.pointerId, x, y, kind, angles, moved: false };
    canvas.classList.add('rotating');
  };
  const move = (e: PointerEvent) => {
    if (!drag || e.pointerId !== drag.id) return;
    const [x, y] = local(e);
    const dx = x - drag.x, dy = y - drag.y;
    if (!dx && !dy) return;
    drag.angles ??= o.angles();
    const frame = o.frame();
    if (!drag.angles || !frame) {
      drag.x = x; drag.y = y;
      return;
    }
    const d: Drag = { mode: drag.kind, dx, dy, sensitivity: o.sensitivity };
    if (drag.kind === 'spin') {
      const bc = view.beamCentre;
      if (bc) {
        const [bx, by] = view.fromDetector(bc[0], bc[1]);
        // near the beam spot the swept angle is ill-defined: use the horizontal motion
        if (Math.hypot(drag.x - bx, drag.y - by) > 20) d.around = [drag.x - bx, drag.y - by];
      }
    }
    drag.angles = rotateMisset(drag.angles, d, frame);
    drag.x = x; drag.y = y;
    drag.moved = true;
    o.set(drag.angles, true);
  };
  const up = (e: PointerEvent) => {
    if (!drag || e.pointerId !== drag.id) return;
    const d = drag;
    drag = null;
    canvas.classList.remove('rotating');
    if (d.moved && d.angles) o.set(d.angles, false);
  };
  host.addEventListener('pointerdown', down, true);
  host.addEventListener('pointermove', move, true);
  host.addEventListener('pointerup', up, true);
  host.addEventListener('pointercancel', up, true);
  return () => {
    host.removeEventListener('pointerdown', down, true);
    host.removeEventListener('pointermove', move, true);
    host.removeEventListener('pointerup', up, true);
    host.removeEventListener('pointercancel', up, true);
  };
}
