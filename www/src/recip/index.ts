// The reciprocal-space view's entry point for the app: types, the adapter from the crate's
// prediction, the drag-rotation maths, and a lazy loader. three.js is only in the chunk that
// `loadReciprocalView()` imports (build with esbuild `splitting: true`), so the app's main bundle
// does not carry it until the view is opened.
export type * from './types';
export { fromPrediction, tableFromRecords, tableFromColumns, flatDetector, reciprocalBasis } from './adapter';
export type { CratePrediction, CrateReflection, CrateColumns } from './adapter';
export { rotateMisset, applyRotation, dragRotation, missetMatrix, matrixToMisset, MOSFLM_FRAME } from './rotate';
export type { Drag, ImageFrame, M3 } from './rotate';
import type { RecipViewOptions, ReciprocalView } from './types';

type ViewModule = typeof import('./view3d');
let loading: Promise<ViewModule> | null = null;

/** Loads the three.js chunk once. */
export function loadReciprocalView(): Promise<ViewModule> {
  return (loading ??= import('./view3d'));
}

/** Loads the view if needed and opens it in `container`. */
export async function openReciprocalView(container: HTMLElement, opts?: RecipViewOptions): Promise<ReciprocalView> {
  const m = await loadReciprocalView();
  return m.createReciprocalView(container, opts);
}
