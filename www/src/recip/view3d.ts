// The reciprocal-space view: the reciprocal lattice of the current orientation, the Ewald sphere
// (a shell with dispersion or divergence), the incident beam, the detector and the crystal axes
// a*, b*, c*, in three.js (WebGL2; no WebGPU needed). Loaded lazily (index.ts) so three.js stays
// out of the app's main bundle.
//
// The picture is the classic Ewald construction drawn to scale in reciprocal space (1/Å): the
// lattice origin 000 at O, the sphere of radius 1/λ centred on C = −beam/λ, k₀ = CO. The crystal
// sits at C, and the detector is drawn there in real space, scaled uniformly about the crystal
// (so every direction and angle is exact; only its distance is changed, to `detectorScale` sphere
// radii). A spot is then explained by one straight line: the ray from the crystal C through the
// lattice point P (k = CP = k₀ + r) continues to the spot on the detector. Hovering a point draws
// that triangle (k₀, r, k) and the ray; the detector's footprint on the sphere (its outline seen
// from C) shows which part of the sphere the detector can record.
//
// Its parts: objects.ts (the three.js objects), detector3d.ts (the detector drawn about the
// crystal), pointstyle.ts (each point's flag, size and colour weights), picking.ts (screen-space
// picking), turn.ts (Shift/Alt+drag turns the crystal), framing.ts (where the camera looks from),
// palette.ts (colours), shaders.ts (GLSL), style.ts (CSS, labels, keeping them apart),
// scene-util.ts (vectors, arrows, formats, the GL probe). This file holds the view's state: it
// fills the objects from the data (sphere, shell, beam, spindle, points), runs the render loop,
// hover and pick, and is the `ReciprocalView` API with its test hooks (`debug`).
//
// 10^5 points: one THREE.Points draw with per-point size and flag attributes (sphere impostors in
// the fragment shader); picking is a screen-space search over the projected points (one pass,
// ~1 ms for 10^5) that mirrors the shader's point sizes and prefers the front-most point.
import {
  BufferAttribute,
  BufferGeometry,
  Color,
  Float32BufferAttribute,
  Group,
  Line,
  LineDashedMaterial,
  Matrix4,
  Mesh,
  MeshBasicMaterial,
  Object3D,
  PerspectiveCamera,
  Points,
  Scene,
  Vector2,
  Vector3,
  WebGLRenderer,
} from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { CSS2DObject, CSS2DRenderer } from 'three/addons/renderers/CSS2DRenderer.js';
import { installTurning } from './turn';
import { pickPoint } from './picking';
import { createSceneObjects } from './objects';
import { buildDetector } from './detector3d';
import { pointStyle } from './pointstyle';
import type { PointInfo, RecipData, RecipDebug, RecipViewOptions, ReciprocalView, Theme, V3 } from './types';
import { reflectionInfo } from './adapter';
import { PALETTES, hex } from './palette';
import { injectStyle, separateLabels } from './style';
import { defaultDirection, framing, type Frame } from './framing';
import { Arrow, add, cross, dot, fmt, fmtExc, len, mul, nice, probeGl, sub, unit, vec } from './scene-util';

export function createReciprocalView(container: HTMLElement, opts: RecipViewOptions = {}): ReciprocalView {
  injectStyle();
  let theme: Theme = opts.theme ?? 'light';
  let showAll = (opts.show ?? 'all') === 'all';
  // (the haze object's visibility follows showAll; set after it is created)
  let nearWidthOpt = opts.nearWidth;
  const detScale = opts.detectorScale ?? 2;
  container.classList.add('nbr-recip', theme);

  const glInfo = probeGl();
  let renderer: WebGLRenderer;
  try {
    renderer = new WebGLRenderer({ antialias: opts.antialias ?? !glInfo.software, powerPreference: 'high-performance' });
  } catch (e) {
    const msg = document.createElement('div');
    msg.className = 'nbr-error';
    msg.textContent = 'The reciprocal-space view needs WebGL2, which this browser does not provide.';
    container.appendChild(msg);
    throw new Error(`reciprocal view: WebGL2 is not available (${(e as Error).message})`);
  }
  const dpr = () => Math.min(window.devicePixelRatio || 1, opts.maxPixelRatio ?? 2);
  renderer.setPixelRatio(dpr());
  const canvas = renderer.domElement;
  canvas.tabIndex = 0;
  canvas.setAttribute('aria-label', 'Reciprocal-space view: drag to orbit, wheel to zoom, right-drag to pan');
  container.appendChild(canvas);
  const labels = new CSS2DRenderer();
  labels.domElement.className = 'nbr-labels';
  container.appendChild(labels.domElement);
  const legend = document.createElement('div');
  legend.className = 'nbr-legend';
  container.appendChild(legend);

  const scene = new Scene();
  const camera = new PerspectiveCamera(40, 1, 1e-4, 100);
  // crystal rotation by modified drags (turn.ts): registered before the orbit controls so that
  // it decides first whether this drag orbits the camera or turns the crystal
  const rotateCbs = new Set<(m: [V3, V3, V3]) => void>();
  const turning = installTurning(canvas, camera, rotateCbs);
  const controls = new OrbitControls(camera, canvas);
  controls.enableDamping = true;
  controls.dampingFactor = 0.12;
  controls.zoomToCursor = true;
  controls.screenSpacePanning = true;
  controls.listenToKeyEvents(canvas); // arrow keys pan when the canvas has focus
  turning.controls = controls;

  // the objects (objects.ts)
  const obj = createSceneObjects(scene, showAll);

  // ---- state ----
  let data: RecipData | null = null;
  let R = 1; // sphere radius 1/λ
  let C: V3 = [-1, 0, 0];
  let beamDir: V3 = [1, 0, 0];
  let upDir: V3 = [0, 1, 0];
  let latticeRadius = 0.3;
  // per point, in the table's order: world diameter, and (strength, intensity, flag)
  let sizes: Float32Array = new Float32Array(0);
  let info: Float32Array = new Float32Array(0);
  let gpuPos = new Float32Array(0), gpuSize = new Float32Array(0), gpuInfo = new Float32Array(0);
  let hklIndex: Map<number, number> | null = null;
  let detKappa = 0; // scene units per metre
  let detPlane: { n: V3; d: number } | null = null; // real space (m)
  let axisScale = 1;
  let hoverIndex = -1, highlightIndex = -1;
  let highlightHkl: V3 | null = null;
  const hoverCbs = new Set<(i: PointInfo | null) => void>();
  const pickCbs = new Set<(i: PointInfo) => void>();
  let renders = 0, disposed = false, frame = 0;
  let pointer: { x: number; y: number } | null = null;
  let pointerDirty = false;
  let down: { x: number; y: number; buttons: number } | null = null;

  const key = (h: number, k: number, l: number) => ((h + 1024) * 2048 + (k + 1024)) * 2048 + (l + 1024);

  function applyTheme() {
    const p = PALETTES[theme];
    container.classList.remove('light', 'dark');
    container.classList.add(theme);
    renderer.setClearColor(p.background, 1);
    const u = obj.pointMat.uniforms;
    (u.uFarLo.value as Color).setHex(p.far[0]);
    (u.uFarHi.value as Color).setHex(p.far[1]);
    (u.uNear.value as Color).setHex(p.near);
    (u.uHotLo.value as Color).setHex(p.hot[0]);
    (u.uHotHi.value as Color).setHex(p.hot[1]);
    obj.hazeMat.uniforms.uAlpha.value = p.haze;
    (obj.sphereMat.uniforms.uColor.value as Color).setHex(p.sphere);
    obj.sphereMat.uniforms.uAlpha.value = p.sphereAlpha;
    (obj.shellMat.uniforms.uColor.value as Color).setHex(p.shell);
    obj.circleMat.color.setHex(p.line);
    obj.beamArrow.material.color.setHex(p.beam);
    obj.beamLineMat.color.setHex(p.beam);
    (obj.crystal.material as MeshBasicMaterial).color.setHex(p.beam);
    obj.axisArrows.forEach((a, i) => a.material.color.setHex(p.axes[i]));
    obj.lblAxes.forEach((l, i) => (l.element.style.color = hex(p.axes[i])));
    (obj.spindleLine.material as LineDashedMaterial).color.setHex(p.spindle);
    obj.detFillMat.color.setHex(p.detector);
    obj.detLineMat.color.setHex(p.detector);
    obj.detArrowMat.color.setHex(p.detector);
    obj.coneMat.color.setHex(p.detector);
    obj.footMat.color.setHex(p.footprint);
    (obj.ringMat.uniforms.uColor.value as Color).setHex(p.marker);
    (obj.spotMat.uniforms.uColor.value as Color).setHex(p.hot[1]);
    obj.kArrow.material.color.setHex(p.k);
    obj.rArrow.material.color.setHex(p.r);
    obj.rayMat.color.setHex(p.k);
    obj.lblK.element.style.color = hex(p.k);
    obj.lblR.element.style.color = hex(p.r);
    updateLegend();
    requestRender();
  }

  function updateLegend() {
    const p = PALETTES[theme];
    const t = data?.reflections;
    let nIn = 0;
    if (t) for (let i = 0; i < t.count; i++) if (info[3 * i + 2] > 1.5) nIn++;
    const shell = data?.ewaldRadiusRange || data?.divergence ? ' (shell: dispersion/divergence)' : '';
    legend.innerHTML =
      `<div><i style="background:${hex(p.hot[0])}"></i>in the diffraction condition${t ? ` (${nIn})` : ''}</div>` +
      `<div><i style="background:${hex(p.near)}"></i>near the sphere</div>` +
      `<div><i style="background:${hex(p.far[1])}"></i>lattice point, size ∝ |F|²${t ? ` (${t.count.toLocaleString('en')})` : ''}</div>` +
      `<div>Ewald sphere radius 1/λ = ${fmt(R, 4)} Å⁻¹${shell}</div>` +
      (axisScale > 1 ? `<div>a*, b*, c* drawn ×${axisScale}</div>` : '') +
      `<div class="hint">drag: orbit · wheel: zoom · right-drag: pan · hover a point</div>`;
  }

  // ---- building the scene from data ----
  function setLine(line: Line, pts: V3[], dashed = false) {
    const g = line.geometry as BufferGeometry;
    g.setAttribute('position', new Float32BufferAttribute(pts.flat(), 3));
    g.computeBoundingSphere();
    if (dashed) line.computeLineDistances();
  }

  function clearGroup(g: Group) {
    for (const c of [...g.children]) {
      g.remove(c);
      if ((c as Mesh).geometry && (c as Mesh).geometry !== obj.sphereGeo) (c as Mesh).geometry.dispose();
    }
  }

  let staticKey = '';
  /** Everything but the points: rebuilt only when its inputs change (not on every rotation). */
  function buildStatic(d: RecipData) {
    const keyNow = JSON.stringify([d.lambda, d.beam, d.ewaldRadiusRange, d.divergence, d.spindle, d.detector?.outline, d.detector?.fast, d.detector?.slow, latticeRadius]);
    if (keyNow === staticKey) return;
    staticKey = keyNow;
    R = 1 / d.lambda;
    beamDir = unit(d.beam);
    C = mul(beamDir, -R);
    // "up": opposite the detector's slow axis when there is one (image up), else lab y or z
    let up: V3 | null = null;
    if (d.detector?.slow) up = mul(d.detector.slow, -1);
    if (!up) up = Math.abs(beamDir[1]) < 0.9 ? [0, 1, 0] : [0, 0, 1];
    up = unit(sub(up, mul(beamDir, dot(up, beamDir))));
    upDir = up;
    const side = cross(beamDir, upDir);

    obj.sphere.scale.setScalar(R);
    obj.sphere.position.set(C[0], C[1], C[2]);
    // meridians through the beam axis (vertical and horizontal) and the circle through O
    // perpendicular to nothing: two great circles show the sphere's shape in any view
    clearGroup(obj.meridians);
    for (const axis of [upDir, side]) {
      const pts: V3[] = [];
      const e1 = beamDir, e2 = cross(axis, beamDir);
      for (let i = 0; i <= 192; i++) {
        const t = (2 * Math.PI * i) / 192;
        pts.push(add(C, add(mul(e1, R * Math.cos(t)), mul(e2, R * Math.sin(t)))));
      }
      const l = new Line(new BufferGeometry(), obj.circleMat);
      setLine(l, pts);
      obj.meridians.add(l);
    }
    // shell: the extreme spheres of dispersion (all through O) and divergence (tilted about O)
    clearGroup(obj.shellGroup);
    const shellSpheres: { c: V3; r: number }[] = [];
    if (d.ewaldRadiusRange) for (const r of d.ewaldRadiusRange) if (Math.abs(r - R) > 1e-9 * R) shellSpheres.push({ c: mul(beamDir, -r), r });
    if (d.divergence && d.divergence > 0) {
      for (const ax of [upDir, side]) {
        for (const sgn of [-1, 1]) {
          const a = sgn * d.divergence;
          const dir = add(mul(beamDir, Math.cos(a)), mul(cross(ax, beamDir), Math.sin(a)));
          shellSpheres.push({ c: mul(dir, -R), r: R });
        }
      }
    }
    for (const s of shellSpheres) {
      const m = new Mesh(obj.sphereGeo, obj.shellMat);
      m.scale.setScalar(s.r);
      m.position.set(s.c[0], s.c[1], s.c[2]);
      m.renderOrder = 1;
      obj.shellGroup.add(m);
    }
    const lp = add(C, mul(add(mul(upDir, 0.8), mul(beamDir, -0.6)), R));
    obj.lblSphere.position.set(lp[0], lp[1], lp[2]);
    (obj.lblSphere.element as HTMLElement).textContent = `Ewald sphere, radius 1/λ = ${fmt(R, 3)} Å⁻¹`;

    // beam: from upstream through the crystal C to O (k₀), then on to the detector
    obj.beamArrow.set(C, [0, 0, 0]);
    const upstream = mul(beamDir, -R * 1.7);
    obj.lblBeam.position.set(upstream[0], upstream[1], upstream[2]);
    obj.lblBeam.center.set(0.5, 1.4);
    const mid = mul(C, 0.5);
    obj.lblK0.position.set(mid[0] + upDir[0] * R * 0.04, mid[1] + upDir[1] * R * 0.04, mid[2] + upDir[2] * R * 0.04);
    obj.crystal.scale.setScalar(R * 0.025);
    obj.crystal.position.set(C[0], C[1], C[2]);
    obj.lblCrystal.position.set(C[0], C[1], C[2]);

    // spindle through O
    if (d.spindle && len(d.spindle) > 0) {
      const u = unit(d.spindle);
      const L = Math.max(latticeRadius * 1.3, R * 0.25);
      setLine(obj.spindleLine, [mul(u, -L), mul(u, L)], true);
      (obj.spindleLine.material as LineDashedMaterial).dashSize = L * 0.04;
      (obj.spindleLine.material as LineDashedMaterial).gapSize = L * 0.03;
      obj.spindleLine.visible = true;
      obj.lblSpindle.visible = true;
      // at the far end from +u, where a* b* c* of an unrotated cell (c* on the spindle) are not
      obj.lblSpindle.position.set(-u[0] * L, -u[1] * L, -u[2] * L);
    } else {
      obj.spindleLine.visible = false;
      obj.lblSpindle.visible = false;
    }

    // detector, in real space about the crystal at C, scaled by detKappa (detector3d.ts)
    for (const c of obj.detectorGroup.children) if (c instanceof Arrow) obj.arrows.splice(obj.arrows.indexOf(c), 1);
    clearGroup(obj.detectorGroup);
    const placed = buildDetector(obj, d.detector, { C, R, beamDir, detScale }, setLine);
    detPlane = placed.plane;
    detKappa = placed.kappa;
    const beamEnd = placed.beamEnd ?? mul(beamDir, R * (detScale - 1));
    setLine(obj.beamLine, [upstream, C, beamEnd], true);
    obj.beamLineMat.dashSize = R * 0.03;
    obj.beamLineMat.gapSize = R * 0.02;
  }

  function buildPoints(d: RecipData) {
    const t = d.reflections;
    const n = t.count;
    // sizes, flags and colour weights (pointstyle.ts)
    const st = pointStyle(d, nearWidthOpt, { sizes, info });
    sizes = st.sizes;
    info = st.info;
    latticeRadius = st.rMax || R * 0.3;
    const nNear = st.nNear;
    const same = obj.pointGeo.getAttribute('position')?.count === n;
    if (!same) {
      obj.pointGeo.dispose();
      obj.hazeGeo.dispose();
      obj.pointGeo = new BufferGeometry();
      obj.hazeGeo = new BufferGeometry();
      obj.points.geometry = obj.pointGeo;
      obj.haze.geometry = obj.hazeGeo;
      gpuPos = new Float32Array(3 * n);
      gpuSize = new Float32Array(n);
      gpuInfo = new Float32Array(3 * n);
      for (const g of [obj.pointGeo, obj.hazeGeo]) {
        g.setAttribute('position', new BufferAttribute(gpuPos, 3));
        g.setAttribute('aSize', new BufferAttribute(gpuSize, 1));
        g.setAttribute('aInfo', new BufferAttribute(gpuInfo, 3));
      }
    }
    let a0 = 0, b0 = nNear;
    for (let i = 0; i < n; i++) {
      const j = info[3 * i + 2] > 0.5 ? a0++ : b0++;
      gpuPos[3 * j] = t.r[3 * i];
      gpuPos[3 * j + 1] = t.r[3 * i + 1];
      gpuPos[3 * j + 2] = t.r[3 * i + 2];
      gpuSize[j] = sizes[i];
      gpuInfo[3 * j] = info[3 * i];
      gpuInfo[3 * j + 1] = info[3 * i + 1];
      gpuInfo[3 * j + 2] = info[3 * i + 2];
    }
    for (const name of ['position', 'aSize', 'aInfo']) (obj.pointGeo.getAttribute(name) as BufferAttribute).needsUpdate = true;
    obj.pointGeo.setDrawRange(0, nNear);
    obj.hazeGeo.setDrawRange(nNear, n - nNear);
    hklIndex = null;
  }

  function updateAxes() {
    if (!data) return;
    const a = data.axes;
    const L = Math.max(len(a.a), len(a.b), len(a.c)) || 1;
    // true length unless that is under ~40 px on screen (then ×1, 2, 5, 10 … with the factor shown)
    const dist = camera.position.distanceTo(controls.target);
    const px = L / ((dist * 2 * Math.tan((camera.fov * Math.PI) / 360)) / Math.max(1, canvas.clientHeight));
    const k = px < 40 ? nice(40 / px) : 1;
    if (k !== axisScale) {
      axisScale = k;
      updateLegend();
    }
    [a.a, a.b, a.c].forEach((v, i) => {
      const tip = mul(v, k);
      obj.axisArrows[i].set([0, 0, 0], tip);
      const lp = mul(v, k * 1.12);
      obj.lblAxes[i].position.set(lp[0], lp[1], lp[2]);
      obj.lblAxes[i].element.textContent = ['a*', 'b*', 'c*'][i] + (k > 1 ? ` ×${k}` : '');
    });
  }

  function resolveIndex(hkl: V3): number {
    if (!data) return -1;
    if (!hklIndex) {
      const t = data.reflections;
      hklIndex = new Map();
      for (let i = 0; i < t.count; i++) hklIndex.set(key(t.hkl[3 * i], t.hkl[3 * i + 1], t.hkl[3 * i + 2]), i);
    }
    return hklIndex.get(key(hkl[0], hkl[1], hkl[2])) ?? -1;
  }

  function pointInfo(i: number): PointInfo {
    // in the condition by the view's own tolerance (the table's flag is the crate's)
    return { ...reflectionInfo(data!.reflections, i), inCondition: info[3 * i + 2] > 1.5 };
  }

  /** Where the ray from the crystal through point i meets the detector (scene units). */
  function spotOf(i: number): V3 | null {
    if (!data?.detector || !detPlane) return null;
    const t = data.reflections;
    const f = t.fast?.[i], s = t.slow?.[i];
    if (data.detector.position && f !== undefined && s !== undefined && Number.isFinite(f) && Number.isFinite(s)) {
      return add(C, mul(data.detector.position(f, s), detKappa));
    }
    const P: V3 = [t.r[3 * i], t.r[3 * i + 1], t.r[3 * i + 2]];
    const dir = unit(sub(P, C));
    const den = dot(dir, detPlane.n);
    if (!(den > 1e-9)) return null;
    const tt = detPlane.d / den;
    return add(C, mul(dir, tt * detKappa));
  }

  function showOverlay() {
    const i = hoverIndex >= 0 ? hoverIndex : highlightIndex;
    if (!data || i < 0 || i >= data.reflections.count) {
      obj.overlay.visible = false;
      return;
    }
    const t = data.reflections;
    const P: V3 = [t.r[3 * i], t.r[3 * i + 1], t.r[3 * i + 2]];
    obj.overlay.visible = true;
    (obj.markerGeo.getAttribute('position') as BufferAttribute).setXYZ(0, P[0], P[1], P[2]);
    obj.markerGeo.getAttribute('position').needsUpdate = true;
    obj.kArrow.set(C, P);
    obj.rArrow.set([0, 0, 0], P);
    const sp = spotOf(i);
    const end = sp ?? add(C, mul(unit(sub(P, C)), R * (detScale + 0.3)));
    setLine(obj.ray, [P, end], true);
    obj.rayMat.dashSize = R * 0.02;
    obj.rayMat.gapSize = R * 0.012;
    obj.spot.visible = !!sp;
    if (sp) {
      (obj.spotGeo.getAttribute('position') as BufferAttribute).setXYZ(0, sp[0], sp[1], sp[2]);
      obj.spotGeo.getAttribute('position').needsUpdate = true;
    }
    const km = mul(add(C, P), 0.5);
    obj.lblK.position.set(km[0], km[1], km[2]);
    const rm = mul(P, 0.5);
    obj.lblR.position.set(rm[0], rm[1], rm[2]);
    const pi = pointInfo(i);
    obj.infoLabel.position.set(P[0], P[1], P[2]);
    obj.infoLabel.element.innerHTML =
      `<b>(${pi.hkl.join(' ')})</b>${pi.inCondition ? ' diffracts' : ''}<br>` +
      `d = ${fmt(pi.d, 2)} Å · 2θ = ${fmt(pi.twoTheta, 2)}°<br>` +
      `ε = ${fmtExc(pi.excitation)} Å⁻¹` +
      (pi.fast !== null && pi.slow !== null ? `<br>spot (${pi.fast.toFixed(1)}, ${pi.slow.toFixed(1)}) px` : '');
  }

  // ---- camera (framing.ts) ----
  const frameNow = (): Frame => ({ R, latticeRadius, beamDir, upDir, hasDetector: !!data?.detector, detScale, aspect: camera.aspect });
  function cameraFor(view: 'overview' | 'lattice') {
    camera.up.set(upDir[0], upDir[1], upDir[2]);
    resize();
    const f = frameNow();
    const { target, dist } = framing(f, view);
    controls.target.set(target[0], target[1], target[2]);
    const p = add(target, mul(defaultDirection(f), dist));
    camera.position.set(p[0], p[1], p[2]);
    controls.minDistance = Math.min(R, latticeRadius) * 1e-3;
    controls.maxDistance = R * 30;
    controls.update();
    requestRender();
  }

  let fitted: { R: number; lattice: number } | null = null;
  let frameHeld = false;
  function fitIfChanged() {
    const grown = !fitted || Math.abs(R / fitted.R - 1) > 0.02 || Math.abs(latticeRadius / fitted.lattice - 1) > 0.05;
    if (grown) refit();
    fitted = { R, lattice: latticeRadius };
  }
  /** The overview distance for the current sphere and lattice, along the current direction. */
  function refit() {
    const { target, dist } = framing(frameNow(), 'overview');
    const from = camera.position.clone().sub(controls.target);
    const dir = from.lengthSq() > 0 ? from.normalize() : vec(unit(cross(beamDir, upDir)));
    controls.target.set(target[0], target[1], target[2]);
    camera.position.set(target[0] + dir.x * dist, target[1] + dir.y * dist, target[2] + dir.z * dist);
    controls.maxDistance = Math.max(controls.maxDistance, R * 30, dist * 2);
    controls.update();
    requestRender();
  }

  function updateClip() {
    const dist = camera.position.distanceTo(controls.target);
    const far = dist + R * (detScale + 4);
    camera.near = Math.max(dist * 0.002, far * 2e-6);
    camera.far = far;
    camera.updateProjectionMatrix();
  }

  // ---- rendering ----
  function resize() {
    const w = container.clientWidth, h = container.clientHeight;
    if (!w || !h) return false;
    if (renderer.getPixelRatio() !== dpr()) renderer.setPixelRatio(dpr());
    const size = renderer.getSize(new Vector2());
    if (size.x !== w || size.y !== h) {
      renderer.setSize(w, h, false);
      labels.setSize(w, h);
      camera.aspect = w / h;
      camera.updateProjectionMatrix();
    }
    return true;
  }

  function render() {
    if (disposed || !resize()) return;
    updateClip();
    updateAxes();
    const hPx = renderer.getDrawingBufferSize(new Vector2()).y;
    obj.pointMat.uniforms.uScale.value = hPx / (2 * Math.tan((camera.fov * Math.PI) / 360));
    const r = renderer.getPixelRatio();
    obj.pointMat.uniforms.uMinPx.value = 1.6 * r;
    obj.pointMat.uniforms.uMaxPx.value = 44 * r;
    obj.ringMat.uniforms.uPx.value = 26 * r;
    obj.spotMat.uniforms.uPx.value = 16 * r;
    const perPx = (2 * Math.tan((camera.fov * Math.PI) / 360)) / Math.max(1, canvas.clientHeight);
    const tmp = new Vector3();
    for (const a of obj.arrows) {
      if (!a.visible) continue;
      const t = a.tip;
      a.layout(camera.position.distanceTo(tmp.set(t[0], t[1], t[2])) * perPx);
    }
    renderer.render(scene, camera);
    placeInfo();
    labels.render(scene, camera);
    separateLabels(labelOrder, canvas.getBoundingClientRect(), [legend.getBoundingClientRect()]);
    renders++;
  }

  // the fixed labels, most important first (style.ts separateLabels keeps them apart)
  const labelOrder = [obj.lblOrigin, ...obj.lblAxes, obj.lblSpindle, obj.lblK0, obj.lblCrystal, obj.lblBeam, obj.lblSphere, obj.lblDet, obj.lblK, obj.lblR];

  /** The hover box goes left of its point when it would run off the view's right edge. */
  const infoAt = new Vector3();
  function placeInfo() {
    if (!obj.overlay.visible) return;
    obj.infoLabel.getWorldPosition(infoAt).project(camera);
    const x = ((infoAt.x + 1) / 2) * canvas.clientWidth;
    const w = obj.infoLabel.element.offsetWidth || 200;
    obj.infoLabel.center.x = x + 1.06 * w > canvas.clientWidth - 4 && x - 1.06 * w >= 0 ? 1.06 : -0.06;
  }

  function tick() {
    frame = 0;
    if (disposed) return;
    const moving = controls.enabled ? controls.update() : false; // no damping drift while turning the crystal
    if (pointerDirty) {
      pointerDirty = false;
      doHover();
    }
    render();
    if (moving) requestRender();
  }

  function requestRender() {
    if (!frame && !disposed) frame = requestAnimationFrame(tick);
  }

  // ---- picking (screen space, picking.ts) ----
  const projView = new Matrix4();
  function pickAt(x: number, y: number): number {
    if (!data) return -1;
    camera.updateMatrixWorld();
    projView.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
    const r = renderer.getPixelRatio();
    return pickPoint(x, y, {
      r: data.reflections.r, count: data.reflections.count, info, sizes, showAll, projView: projView.elements,
      near: camera.near, far: camera.far, width: canvas.clientWidth, height: canvas.clientHeight,
      scale: obj.pointMat.uniforms.uScale.value / r, // CSS px per world unit at distance 1
      minPx: obj.pointMat.uniforms.uMinPx.value / r, maxPx: obj.pointMat.uniforms.uMaxPx.value / r,
    });
  }

  function doHover() {
    const prev = hoverIndex;
    hoverIndex = pointer ? pickAt(pointer.x, pointer.y) : -1;
    if (hoverIndex !== prev) {
      showOverlay();
      const pi = hoverIndex >= 0 ? pointInfo(hoverIndex) : null;
      for (const cb of hoverCbs) cb(pi);
    }
  }

  function local(e: PointerEvent) {
    const b = canvas.getBoundingClientRect();
    return { x: e.clientX - b.left, y: e.clientY - b.top };
  }
  const onMove = (e: PointerEvent) => {
    if (e.buttons || turning.active) {
      // orbiting: no hover
      return;
    }
    pointer = local(e);
    pointerDirty = true;
    requestRender();
  };
  const onLeave = () => {
    pointer = null;
    pointerDirty = true;
    requestRender();
  };
  const onDown = (e: PointerEvent) => {
    if (turning.active) return;
    const p = local(e);
    down = { ...p, buttons: e.button };
  };
  const onUp = (e: PointerEvent) => {
    if (!down) return;
    const p = local(e);
    const moved = Math.hypot(p.x - down.x, p.y - down.y);
    const btn = down.buttons;
    down = null;
    if (moved > 4 || btn !== 0) return;
    const i = pickAt(p.x, p.y);
    if (i >= 0) {
      const pi = pointInfo(i);
      for (const cb of pickCbs) cb(pi);
    }
  };
  canvas.addEventListener('pointermove', onMove);
  canvas.addEventListener('pointerleave', onLeave);
  canvas.addEventListener('pointerdown', onDown);
  canvas.addEventListener('pointerup', onUp);
  controls.addEventListener('change', requestRender);
  const ro = new ResizeObserver(() => requestRender());
  ro.observe(container);

  applyTheme();

  let firstData = true;
  const view: ReciprocalView = {
    update(d: RecipData) {
      if (disposed) throw new Error('reciprocal view: update() after dispose()');
      const t = d.reflections;
      if (t.r.length < 3 * t.count || t.excitation.length < t.count) throw new Error('reciprocal view: reflection columns shorter than count');
      if (!(d.lambda > 0)) throw new Error('reciprocal view: lambda must be positive');
      data = d;
      buildPoints(d);
      buildStatic(d);
      if (highlightHkl) highlightIndex = resolveIndex(highlightHkl);
      if (hoverIndex >= t.count) hoverIndex = -1;
      // fit the camera to the sphere and the lattice when the view opens and when λ or the
      // cell changes them (keeping the direction the user looks from)
      // (not while a slider is held: the frame stays so that the change is seen)
      if (firstData) {
        firstData = false;
        cameraFor('overview');
        fitted = { R, lattice: latticeRadius };
      } else if (!frameHeld) fitIfChanged();
      showOverlay();
      updateLegend();
      if (pointer) pointerDirty = true;
      requestRender();
    },
    highlight(hkl: V3 | null) {
      highlightHkl = hkl ? [hkl[0], hkl[1], hkl[2]] : null;
      highlightIndex = hkl ? resolveIndex(hkl) : -1;
      showOverlay();
      requestRender();
    },
    onHover(cb) {
      hoverCbs.add(cb);
      return () => hoverCbs.delete(cb);
    },
    onPick(cb) {
      pickCbs.add(cb);
      return () => pickCbs.delete(cb);
    },
    onRotate(cb) {
      rotateCbs.add(cb);
      return () => rotateCbs.delete(cb);
    },
    setTheme(t: Theme) {
      theme = t;
      applyTheme();
    },
    setOptions(o) {
      if (o.show) {
        showAll = o.show === 'all';
        obj.haze.visible = showAll;
      }
      if (o.nearWidth !== undefined) {
        nearWidthOpt = o.nearWidth;
        if (data) buildPoints(data);
        updateLegend();
      }
      requestRender();
    },
    resetCamera(v = 'overview') {
      cameraFor(v);
    },
    holdFrame(held: boolean) {
      if (held === frameHeld) return;
      frameHeld = held;
      if (!held && data && !firstData) fitIfChanged();
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      if (frame) cancelAnimationFrame(frame);
      ro.disconnect();
      canvas.removeEventListener('pointermove', onMove);
      canvas.removeEventListener('pointerleave', onLeave);
      canvas.removeEventListener('pointerdown', onDown);
      canvas.removeEventListener('pointerup', onUp);
      turning.dispose();
      controls.removeEventListener('change', requestRender);
      controls.dispose();
      hoverCbs.clear();
      pickCbs.clear();
      scene.traverse((o: Object3D) => {
        const g = (o as Mesh).geometry;
        if (g) g.dispose();
      });
      obj.pointGeo.dispose();
      obj.hazeGeo.dispose();
      for (const d of obj.disposables) d.dispose();
      lastMemory = { geometries: renderer.info.memory.geometries, textures: renderer.info.memory.textures };
      renderer.dispose();
      renderer.forceContextLoss();
      canvas.remove();
      labels.domElement.remove();
      legend.remove();
      container.classList.remove('nbr-recip', 'light', 'dark');
      data = null;
    },
    debug: null as unknown as RecipDebug,
  };

  let lastMemory: { geometries: number; textures: number } | null = null;
  const isShown = (o: Object3D) => {
    for (let p: Object3D | null = o; p; p = p.parent) if (!p.visible) return false;
    return true;
  };
  const debug: RecipDebug = {
    counts() {
      const t = data?.reflections;
      let inC = 0, visible = 0;
      if (t) {
        for (let i = 0; i < t.count; i++) {
          const f = info[3 * i + 2];
          if (f > 1.5) inC++;
          if (showAll || f > 0.5) visible++;
        }
      }
      const lbls: string[] = [];
      scene.traverse((o: Object3D) => {
        if (o instanceof CSS2DObject && isShown(o) && o.element.textContent && o.element.style.visibility !== 'hidden') lbls.push(o.element.textContent);
      });
      return {
        points: (obj.pointGeo.getAttribute('position')?.count as number) ?? 0,
        inCondition: inC,
        visible,
        spheres: 1 + obj.shellGroup.children.length,
        detector: obj.detectorGroup.children.length > 0,
        labels: lbls,
      };
    },
    project(i: number) {
      if (!data || i < 0 || i >= data.reflections.count) return null;
      const t = data.reflections;
      camera.updateMatrixWorld();
      const v = new Vector3(t.r[3 * i], t.r[3 * i + 1], t.r[3 * i + 2]).project(camera);
      if (v.z > 1) return null;
      return { x: ((v.x + 1) / 2) * canvas.clientWidth, y: ((1 - v.y) / 2) * canvas.clientHeight };
    },
    projectPoint(p: V3) {
      camera.updateMatrixWorld();
      const v = vec(p).project(camera);
      if (v.z > 1) return null;
      return { x: ((v.x + 1) / 2) * canvas.clientWidth, y: ((1 - v.y) / 2) * canvas.clientHeight };
    },
    scene: () => ({ center: C, radius: R, up: upDir, beam: beamDir }),
    pixels(x: number, y: number, w: number, h: number) {
      render();
      const gl = renderer.getContext();
      const r = renderer.getPixelRatio();
      const H = gl.drawingBufferHeight;
      const x0 = Math.max(0, Math.floor(x * r)), w0 = Math.max(1, Math.round(w * r));
      const h0 = Math.max(1, Math.round(h * r)), y0 = Math.max(0, H - Math.floor(y * r) - h0);
      const out = new Uint8Array(4 * w0 * h0);
      gl.readPixels(x0, y0, w0, h0, gl.RGBA, gl.UNSIGNED_BYTE, out);
      return { width: w0, height: h0, data: out };
    },
    background: () => {
      const h = PALETTES[theme].background;
      return [(h >> 16) & 255, (h >> 8) & 255, h & 255];
    },
    indexOf: (hkl: V3) => resolveIndex(hkl),
    camera: () => ({ position: camera.position.toArray() as V3, target: controls.target.toArray() as V3 }),
    measureFps(ms: number) {
      return new Promise((resolve) => {
        let frames = 0, busy = 0;
        const t0 = performance.now();
        const step = () => {
          if (disposed) return resolve({ fps: 0, frames, msPerFrame: 0 });
          const now = performance.now();
          if (now - t0 >= ms) return resolve({ fps: (frames * 1000) / (now - t0), frames, msPerFrame: busy / Math.max(1, frames) });
          // orbit about the target by a small angle per frame
          const off = camera.position.clone().sub(controls.target);
          off.applyAxisAngle(camera.up, 0.01);
          camera.position.copy(controls.target).add(off);
          camera.lookAt(controls.target);
          const a = performance.now();
          render();
          busy += performance.now() - a;
          frames++;
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
      });
    },
    toggle(name: string, on: boolean) {
      const m: Record<string, Object3D> = { points: obj.points, haze: obj.haze, sphere: obj.sphere, shell: obj.shellGroup, meridians: obj.meridians, detector: obj.detectorGroup, overlay: obj.overlay, axes: obj.axesGroup, beam: obj.beamArrow };
      if (!m[name]) throw new Error(`reciprocal view: no part named ${name}`);
      m[name].visible = on;
      requestRender();
    },
    timePick() {
      const a = performance.now();
      pickAt(canvas.clientWidth / 2, canvas.clientHeight / 2);
      return performance.now() - a;
    },
    renders: () => renders,
    gl: () => ({ ...glInfo, antialias: renderer.getContextAttributes()?.antialias ?? false }),
    memory: () => lastMemory ?? { geometries: renderer.info.memory.geometries, textures: renderer.info.memory.textures },
    canvas,
  };
  (view as { debug: RecipDebug }).debug = debug;
  return view;
}

