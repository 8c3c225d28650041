// Turning the crystal in the reciprocal-space view: Shift+drag tilts it about the axes across the
// line of sight, Alt+drag (or Ctrl+Shift+drag) spins it about the line of sight. The listeners
// are registered before the orbit controls, so that a modified drag turns the crystal instead of
// orbiting the camera; each move reports a rotation matrix (rotate.ts `dragRotation`).
import { Vector3, type PerspectiveCamera } from 'three';
import type { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { dragRotation } from './rotate';
import type { V3 } from './types';

export interface Turning {
  /** A modified drag is in progress. */
  readonly active: boolean;
  /** The orbit controls to pause while turning (set once they exist). */
  controls: OrbitControls | null;
  dispose(): void;
}

export function installTurning(canvas: HTMLCanvasElement, camera: PerspectiveCamera, cbs: Set<(m: [V3, V3, V3]) => void>): Turning {
  let turning: { x: number; y: number; mode: 'tilt' | 'spin'; id: number } | null = null;
  const t: Turning = {
    get active() {
      return turning !== null;
    },
    controls: null,
    dispose() {
      canvas.removeEventListener('pointerdown', onDown);
      canvas.removeEventListener('pointermove', onMove);
      canvas.removeEventListener('pointerup', onUp);
      canvas.removeEventListener('pointercancel', onUp);
      cbs.clear();
    },
  };
  const onDown = (e: PointerEvent) => {
    if (e.button !== 0 || !cbs.size || !(e.shiftKey || e.altKey)) return;
    const b = canvas.getBoundingClientRect();
    turning = { x: e.clientX - b.left, y: e.clientY - b.top, mode: e.altKey || e.ctrlKey ? 'spin' : 'tilt', id: e.pointerId };
    if (t.controls) t.controls.enabled = false;
    canvas.setPointerCapture(e.pointerId);
  };
  const onMove = (e: PointerEvent) => {
    if (!turning || e.pointerId !== turning.id) return;
    const b = canvas.getBoundingClientRect();
    const x = e.clientX - b.left, y = e.clientY - b.top;
    const dx = x - turning.x, dy = y - turning.y;
    if (!dx && !dy) return;
    // the camera's frame: right, down, and towards the camera (the trackball's "beam")
    camera.updateMatrixWorld();
    const m = camera.matrixWorld.elements;
    const right: V3 = [m[0], m[1], m[2]], down: V3 = [-m[4], -m[5], -m[6]], back: V3 = [m[8], m[9], m[10]];
    const o = new Vector3(0, 0, 0).project(camera);
    const ox = ((o.x + 1) / 2) * canvas.clientWidth, oy = ((1 - o.y) / 2) * canvas.clientHeight;
    const rot = dragRotation(
      { mode: turning.mode, dx, dy, sensitivity: 0.3, around: [turning.x - ox, turning.y - oy] },
      { beam: back, fast: right, slow: down },
    );
    turning.x = x;
    turning.y = y;
    for (const cb of cbs) cb(rot);
  };
  const onUp = (e: PointerEvent) => {
    if (!turning || e.pointerId !== turning.id) return;
    turning = null;
    if (t.controls) t.controls.enabled = true;
  };
  canvas.addEventListener('pointerdown', onDown);
  canvas.addEventListener('pointermove', onMove);
  canvas.addEventListener('pointerup', onUp);
  canvas.addEventListener('pointercancel', onUp);
  return t;
}
