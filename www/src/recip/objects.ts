// The reciprocal-space view's three.js objects (view3d.ts fills them from the data): shared
// geometries, the lattice points and their haze (one geometry, two draws), the Ewald sphere,
// shell and meridians, the beam, crystal, axes and spindle, the detector's materials, the hover
// overlay (marker, spot, k, r, ray, info box) and the fixed labels. Everything it makes is
// added to `scene` or listed in `disposables`.
import {
  BufferGeometry,
  Color,
  ConeGeometry,
  CylinderGeometry,
  DoubleSide,
  Float32BufferAttribute,
  Group,
  Line,
  LineBasicMaterial,
  LineDashedMaterial,
  Mesh,
  MeshBasicMaterial,
  Points,
  Scene,
  ShaderMaterial,
  SphereGeometry,
} from 'three';
import { POINT_FS, POINT_VS, RING_FS, RING_VS, SPHERE_FS, SPHERE_VS } from './shaders';
import { label } from './style';
import { Arrow } from './scene-util';

export type SceneObjects = ReturnType<typeof createSceneObjects>;

/** The objects of the view, added to `scene`; the haze (the lattice away from the sphere) is
 * shown when `showAll`. */
export function createSceneObjects(scene: Scene, showAll: boolean) {
  // shared geometries
  const shaftGeo = new CylinderGeometry(1, 1, 1, 12, 1);
  const headGeo = new ConeGeometry(1, 1, 16, 1);
  const sphereGeo = new SphereGeometry(1, 96, 64);
  const disposables: { dispose(): void }[] = [shaftGeo, headGeo, sphereGeo];
  const own = <T extends { dispose(): void }>(x: T): T => {
    disposables.push(x);
    return x;
  };

  // ---- lattice points ----
  // one geometry, two draws sharing the uniforms: the points in or near the diffraction
  // condition opaque, the rest of the lattice as a translucent haze that does not hide them
  const pointUniforms = {
    uScale: { value: 1 }, uMinPx: { value: 1.5 }, uMaxPx: { value: 40 },
    uAlpha: { value: 1 }, uFarLo: { value: new Color() }, uFarHi: { value: new Color() }, uNear: { value: new Color() },
    uHotLo: { value: new Color() }, uHotHi: { value: new Color() },
  };
  // (`transparent` only to be drawn after the translucent sphere, on top of its tint)
  const pointMat = own(new ShaderMaterial({ vertexShader: POINT_VS, fragmentShader: POINT_FS, uniforms: pointUniforms, transparent: true }));
  const hazeMat = own(
    new ShaderMaterial({
      vertexShader: POINT_VS, fragmentShader: POINT_FS, transparent: true, depthWrite: false,
      uniforms: { ...pointUniforms, uAlpha: { value: 0.35 } },
    }),
  );
  // the GPU copy is ordered with the points near the sphere first: `points` draws that range,
  // `haze` the rest (two geometries sharing the same attributes; each vertex is processed once)
  const pointGeo = new BufferGeometry();
  const hazeGeo = new BufferGeometry();
  const points = new Points(pointGeo, pointMat);
  const haze = new Points(hazeGeo, hazeMat);
  points.frustumCulled = false;
  haze.frustumCulled = false;
  points.renderOrder = 5;
  haze.renderOrder = 6;
  haze.visible = showAll;
  scene.add(points, haze);

  // ---- Ewald sphere(s) ----
  const sphereGroup = new Group();
  scene.add(sphereGroup);
  const sphereMat = own(
    new ShaderMaterial({
      vertexShader: SPHERE_VS, fragmentShader: SPHERE_FS, transparent: true, depthWrite: false, side: DoubleSide,
      uniforms: { uColor: { value: new Color() }, uAlpha: { value: 0.1 } },
    }),
  );
  const shellMat = own(
    new ShaderMaterial({
      vertexShader: SPHERE_VS, fragmentShader: SPHERE_FS, transparent: true, depthWrite: false, side: DoubleSide,
      uniforms: { uColor: { value: new Color() }, uAlpha: { value: 0.03 } },
    }),
  );
  const sphere = new Mesh(sphereGeo, sphereMat);
  sphere.renderOrder = 2;
  sphereGroup.add(sphere);
  const shellGroup = new Group();
  sphereGroup.add(shellGroup);
  const circleMat = own(new LineBasicMaterial({ color: 0, transparent: true, opacity: 0.55 }));
  const meridians = new Group();
  sphereGroup.add(meridians);

  // ---- beam, crystal, axes, detector ----
  const arrows: Arrow[] = [];
  const mkArrow = (px = 1.3, headPx = 12, maxFrac = 0.04) => {
    const a = new Arrow(new MeshBasicMaterial({ color: 0 }), shaftGeo, headGeo, px, headPx, maxFrac);
    arrows.push(a);
    own(a.material);
    return a;
  };
  const beamArrow = mkArrow(1.6, 16, 0.01);
  const beamLineMat = own(new LineDashedMaterial({ color: 0, dashSize: 1, gapSize: 1, transparent: true, opacity: 0.7 }));
  const beamLine = new Line(own(new BufferGeometry()), beamLineMat);
  scene.add(beamArrow, beamLine);
  const crystal = new Mesh(own(new SphereGeometry(1, 20, 14)), own(new MeshBasicMaterial({ color: 0 })));
  scene.add(crystal);
  const axesGroup = new Group();
  const axisArrows = [mkArrow(1.5, 11, 0.05), mkArrow(1.5, 11, 0.05), mkArrow(1.5, 11, 0.05)];
  axesGroup.add(...axisArrows);
  scene.add(axesGroup);
  const spindleLine = new Line(own(new BufferGeometry()), own(new LineDashedMaterial({ color: 0, dashSize: 1, gapSize: 1 })));
  scene.add(spindleLine);

  const detectorGroup = new Group();
  scene.add(detectorGroup);
  const detFillMat = own(new MeshBasicMaterial({ color: 0, transparent: true, opacity: 0.1, side: DoubleSide, depthWrite: false }));
  const detLineMat = own(new LineBasicMaterial({ color: 0 }));
  const coneMat = own(new LineBasicMaterial({ color: 0, transparent: true, opacity: 0.35 }));
  const footMat = own(new LineBasicMaterial({ color: 0 }));
  const detArrowMat = own(new MeshBasicMaterial({ color: 0 }));

  // ---- hover / highlight overlay ----
  const overlay = new Group();
  scene.add(overlay);
  const ringMat = own(
    new ShaderMaterial({
      vertexShader: RING_VS, fragmentShader: RING_FS, transparent: true, depthTest: false,
      uniforms: { uPx: { value: 26 }, uColor: { value: new Color() }, uFill: { value: 0 } },
    }),
  );
  const spotMat = own(
    new ShaderMaterial({
      vertexShader: RING_VS, fragmentShader: RING_FS, transparent: true, depthTest: false,
      uniforms: { uPx: { value: 18 }, uColor: { value: new Color() }, uFill: { value: 1 } },
    }),
  );
  const markerGeo = own(new BufferGeometry());
  markerGeo.setAttribute('position', new Float32BufferAttribute([0, 0, 0], 3));
  const marker = new Points(markerGeo, ringMat);
  marker.renderOrder = 10;
  marker.frustumCulled = false;
  const spotGeo = own(new BufferGeometry());
  spotGeo.setAttribute('position', new Float32BufferAttribute([0, 0, 0], 3));
  const spot = new Points(spotGeo, spotMat);
  spot.renderOrder = 10;
  spot.frustumCulled = false;
  const kArrow = mkArrow(1.3, 13, 0.03), rArrow = mkArrow(1.3, 13, 0.08);
  const rayMat = own(new LineDashedMaterial({ color: 0, dashSize: 1, gapSize: 1 }));
  const ray = new Line(own(new BufferGeometry()), rayMat);
  const infoLabel = label('', 'info');
  infoLabel.center.set(-0.06, 0.5); // to the right of the point, not over it
  overlay.add(marker, spot, kArrow, rArrow, ray, infoLabel);
  overlay.visible = false;

  // ---- labels ----
  const lblSphere = label('Ewald sphere', ''), lblCrystal = label('crystal'), lblOrigin = label('000');
  const lblBeam = label('beam'), lblK0 = label('k₀'), lblDet = label('detector'), lblSpindle = label('φ axis');
  const lblAxes = [label('a*', 'axis'), label('b*', 'axis'), label('c*', 'axis')];
  const lblK = label('k'), lblR = label('r = k − k₀');
  scene.add(lblSphere, lblCrystal, lblOrigin, lblBeam, lblK0, lblDet, lblSpindle, ...lblAxes);
  overlay.add(lblK, lblR);
  lblCrystal.center.set(0.5, -0.4);
  lblOrigin.center.set(-0.15, 1.2);

  return {
    shaftGeo,
    headGeo,
    sphereGeo,
    disposables,
    own,
    pointUniforms,
    pointMat,
    hazeMat,
    pointGeo,
    hazeGeo,
    points,
    haze,
    sphereGroup,
    sphereMat,
    shellMat,
    sphere,
    shellGroup,
    circleMat,
    meridians,
    arrows,
    mkArrow,
    beamArrow,
    beamLineMat,
    beamLine,
    crystal,
    axesGroup,
    axisArrows,
    spindleLine,
    detectorGroup,
    detFillMat,
    detLineMat,
    coneMat,
    footMat,
    detArrowMat,
    overlay,
    ringMat,
    spotMat,
    markerGeo,
    marker,
    spotGeo,
    spot,
    kArrow,
    rArrow,
    rayMat,
    ray,
    infoLabel,
    lblSphere,
    lblCrystal,
    lblOrigin,
    lblBeam,
    lblK0,
    lblDet,
    lblSpindle,
    lblAxes,
    lblK,
    lblR,
  };
}
