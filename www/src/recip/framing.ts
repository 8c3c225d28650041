// How the reciprocal-space view's camera frames the picture (view3d.ts): the overview spans the
// beam's path from upstream of the Ewald sphere (−2R) to the detector (`detectorScale` − 1 radii
// past O), and the whole lattice when it reaches farther; the lattice view looks at O. A narrow
// view backs off so that the width fits too.
import { add, cross, mul, unit } from './scene-util';
import type { V3 } from './types';

export interface Frame {
  /** Sphere radius 1/λ, the lattice's largest |r| (1/Å), the beam and "up" directions (unit). */
  R: number;
  latticeRadius: number;
  beamDir: V3;
  upDir: V3;
  hasDetector: boolean;
  detScale: number;
  /** The view's width / height. */
  aspect: number;
}

const widthFit = (aspect: number) => {
  const a = Math.max(0.4, aspect || 1);
  return a < 1.2 ? 1.2 / a : 1;
};

/** Where the camera looks and from how far, for the overview or the lattice alone. */
export function framing(f: Frame, view: 'overview' | 'lattice'): { target: V3; dist: number } {
  if (view === 'lattice') return { target: [0, 0, 0], dist: f.latticeRadius * 3.4 * widthFit(f.aspect) };
  const lo = Math.min(-2 * f.R, -f.latticeRadius), hi = Math.max(f.hasDetector ? (f.detScale - 1) * f.R : 0, f.latticeRadius);
  return { target: mul(f.beamDir, (lo + hi) / 2), dist: (hi - lo) * 1.75 * widthFit(f.aspect) };
}

/** The opening view direction: from the side, a little above and upstream. */
export function defaultDirection(f: Frame): V3 {
  const side = cross(f.beamDir, f.upDir);
  return unit(add(add(side, mul(f.upDir, 0.35)), mul(f.beamDir, -0.25)));
}
