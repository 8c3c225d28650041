// The detector in the reciprocal-space view (view3d.ts): drawn in real space about the crystal at
// C, scaled uniformly by κ so that it sits `detectorScale` sphere radii along the beam (every
// direction and angle exact): outline, translucent fill, the cone of directions from the
// crystal, its footprint on the Ewald sphere, and the fast/slow arrows at pixel (0, 0).
import { BufferGeometry, Float32BufferAttribute, Line, LineLoop, LineSegments, Mesh } from 'three';
import type { SceneObjects } from './objects';
import { label } from './style';
import { Arrow, add, dot, len, mul, sub, unit } from './scene-util';
import type { RecipDetector, V3 } from './types';

export interface DetectorPlacement {
  /** The outline's best-fit plane in real space (m): unit normal n, n·x = d; null without one. */
  plane: { n: V3; d: number } | null;
  /** Scene units per metre (0 without a detector). */
  kappa: number;
  /** Where the undeflected beam meets the detector (scene), or null. */
  beamEnd: V3 | null;
}

/** Fill `o.detectorGroup` (emptied by the caller) for `det`; the sphere has radius R about C. */
export function buildDetector(
  o: SceneObjects, det: RecipDetector | undefined | null, f: { C: V3; R: number; beamDir: V3; detScale: number },
  setLine: (line: Line, pts: V3[]) => void,
): DetectorPlacement {
  const { C, R, beamDir, detScale } = f;
  if (!det || det.outline.length < 3) {
    o.lblDet.visible = false;
    return { plane: null, kappa: 0, beamEnd: null };
  }
  const ol = det.outline;
  // best-fit plane (Newell) and the beam's path length to it
  const n: V3 = [0, 0, 0];
  let cen: V3 = [0, 0, 0];
  for (let i = 0; i < ol.length; i++) {
    const a = ol[i], b = ol[(i + 1) % ol.length];
    n[0] += (a[1] - b[1]) * (a[2] + b[2]);
    n[1] += (a[2] - b[2]) * (a[0] + b[0]);
    n[2] += (a[0] - b[0]) * (a[1] + b[1]);
    cen = add(cen, a);
  }
  cen = mul(cen, 1 / ol.length);
  let nn = unit(n);
  if (dot(nn, cen) < 0) nn = mul(nn, -1);
  const plane = { n: nn, d: dot(nn, cen) };
  const bd = dot(beamDir, nn);
  const dist = bd > 1e-6 ? plane.d / bd : len(cen);
  const kappa = (detScale * R) / dist;
  const toScene = (p: V3): V3 => add(C, mul(p, kappa));
  const loop = ol.map(toScene);
  const outline = new LineLoop(new BufferGeometry(), o.detLineMat);
  setLine(outline, loop);
  const fillGeo = new BufferGeometry();
  const sc = toScene(cen);
  const tri: number[] = [];
  for (let i = 0; i < loop.length; i++) tri.push(...sc, ...loop[i], ...loop[(i + 1) % loop.length]);
  fillGeo.setAttribute('position', new Float32BufferAttribute(tri, 3));
  const fill = new Mesh(fillGeo, o.detFillMat);
  fill.renderOrder = 3;
  // the cone of directions: crystal to the corners (or outline samples), and the footprint
  const step = Math.max(1, Math.floor(loop.length / 4));
  const cone: number[] = [];
  for (let i = 0; i < loop.length; i += step) cone.push(...C, ...loop[i]);
  const coneGeo = new BufferGeometry();
  coneGeo.setAttribute('position', new Float32BufferAttribute(cone, 3));
  const coneLines = new LineSegments(coneGeo, o.coneMat);
  const foot: V3[] = [];
  for (let i = 0; i < ol.length; i++) {
    const a = ol[i], b = ol[(i + 1) % ol.length];
    for (let j = 0; j < 24; j++) {
      const p = add(a, mul(sub(b, a), j / 24));
      foot.push(add(C, mul(unit(p), R)));
    }
  }
  const footprint = new LineLoop(new BufferGeometry(), o.footMat);
  setLine(footprint, foot);
  o.detectorGroup.add(fill, outline, coneLines, footprint);
  // fast/slow arrows at pixel (0,0)
  if (det.fast && det.slow) {
    const o0 = loop[0];
    const size = len(sub(loop[1], loop[0]));
    for (const [ax, name] of [[det.fast, 'fast'], [det.slow, 'slow']] as [V3, string][]) {
      const a = new Arrow(o.detArrowMat, o.shaftGeo, o.headGeo, 1, 9, 0.05);
      o.arrows.push(a);
      a.set(o0, add(o0, mul(ax, size * 0.18)));
      const l = label(name);
      const lp2 = add(o0, mul(ax, size * 0.22));
      l.position.set(lp2[0], lp2[1], lp2[2]);
      o.detectorGroup.add(a, l);
    }
  }
  const corner = loop[Math.floor(loop.length / 2)];
  o.lblDet.position.set(corner[0], corner[1], corner[2]);
  o.lblDet.visible = true;
  // the undeflected beam ends where it meets the detector
  return { plane, kappa, beamEnd: add(C, mul(beamDir, dist * kappa)) };
}
