// Input types of the reciprocal-space view (www/src/recip/view3d.ts). Small and independent of
// the crate's records: `adapter.ts` maps the crate's prediction (crate/src/predict.rs, through
// serde-wasm-bindgen) onto these in a few lines, and the demo page fills them synthetically.
//
// Units: reciprocal vectors in 1/Å, lab frame (the crate's: right-handed, origin at the crystal,
// MODEL §3.3); real-space detector positions in metres, lab frame; angles in degrees unless named
// otherwise.

export type V3 = [number, number, number];

/** Reciprocal-lattice points as columns (10^5 points: typed arrays, not objects). */
export interface ReflectionTable {
  count: number;
  /** Miller indices, 3 per point. */
  hkl: Int32Array;
  /** Lab-frame reciprocal vector r = h a* + k b* + l c* (1/Å), 3 per point. */
  r: Float32Array;
  /** Signed distance from the Ewald sphere, |r + s0| − 1/λ (1/Å): positive outside. */
  excitation: Float32Array;
  /** Resolution d = 1/|r| (Å). */
  d: Float32Array;
  /** Angle between the beam and the diffracted direction unit(s0 + r) (degrees). */
  twoTheta: Float32Array;
  /** Predicted intensity at the current orientation (any unit; only ratios are shown). The
   * crate's is the value of the pixel a spot in the condition lands on (what ranks the image's
   * strongest spots) and the peak estimate for the other points. */
  intensity: Float32Array;
  /** One quantity for every point: the one-term peak estimate r_e²·fluence·F²·F_latt²·
   * polarisation·Ω (the crate's `peak` column). Colours the points in the diffraction condition
   * (default: `intensity`), so that two points' colours compare the same quantity whether or not
   * a spot of theirs lands on a pixel. */
  peak?: Float32Array;
  /** Intrinsic strength of the point, |F|² (any unit): sizes every point. Default: intensity. */
  strength?: Float32Array;
  /** How far from the sphere the point still diffracts (1/Å): lattice-peak width, mosaic,
   * divergence, dispersion. Points within 3× of it are drawn as "near". Default: `nearWidth`. */
  tolerance?: Float32Array;
  /** 1 where the point is in the diffraction condition. Default: |excitation| <= tolerance. */
  inCondition?: Uint8Array;
  /** Where the diffracted ray meets the detector (continuous pixel coordinates: pixel i spans
   * [i, i+1)); NaN where it misses. */
  fast?: Float32Array;
  slow?: Float32Array;
}

/** The detector as real-space geometry (metres, lab frame, crystal at the origin). */
export interface RecipDetector {
  /** Closed outline of the sensor surface (curved detectors: a curved outline). */
  outline: V3[];
  /** Lab position (m) of continuous pixel coordinate (fast, slow); used to draw a spot exactly
   * where the page draws it. Without it the ray is met with the outline's best-fit plane. */
  position?: (fast: number, slow: number) => V3;
  /** Fast and slow axes (unit) of a flat detector: drawn as small arrows at pixel (0, 0). */
  fast?: V3;
  slow?: V3;
}

export interface RecipData {
  reflections: ReflectionTable;
  /** Unit direction of propagation of the incident beam. */
  beam: V3;
  /** Nominal wavelength (Å): the Ewald sphere has radius 1/λ and centre −beam/λ. */
  lambda: number;
  /** Radii 1/λ (1/Å) of the shortest and longest wavelength (dispersion): drawn as a shell of
   * spheres that all pass through the origin. */
  ewaldRadiusRange?: [number, number];
  /** Largest angle of an incident direction from the beam (rad, divergence): the sphere tilted
   * by ± this about the origin is drawn too. */
  divergence?: number;
  /** Reciprocal basis of the current orientation, lab frame (1/Å). */
  axes: { a: V3; b: V3; c: V3 };
  /** Spindle (φ) axis, unit; drawn through the origin when given. */
  spindle?: V3;
  detector?: RecipDetector;
}

/** What hover and pick report. */
export interface PointInfo {
  index: number;
  hkl: V3;
  /** Å */
  d: number;
  /** degrees */
  twoTheta: number;
  /** 1/Å, positive outside the sphere */
  excitation: number;
  intensity: number;
  inCondition: boolean;
  /** Spot on the detector (continuous pixel coordinates) or null. */
  fast: number | null;
  slow: number | null;
}

export type Theme = 'light' | 'dark';

export interface RecipViewOptions {
  theme?: Theme;
  /** Tolerance (1/Å) on |excitation| when the table has no `tolerance` column. Default: 1% of
   * the lattice's shortest basis vector. */
  nearWidth?: number;
  /** 'all' points, or only those 'near' the sphere (within 3 × their tolerance). */
  show?: 'all' | 'near';
  /** Distance of the drawn detector from the crystal, in Ewald-sphere radii (default 2). */
  detectorScale?: number;
  /** Multisampling; default: on, except on a software rasteriser (SwiftShader, llvmpipe). */
  antialias?: boolean;
  /** Device-pixel-ratio cap (default 2). */
  maxPixelRatio?: number;
}

export interface ReciprocalView {
  update(data: RecipData): void;
  highlight(hkl: V3 | null): void;
  onHover(cb: (info: PointInfo | null) => void): () => void;
  onPick(cb: (info: PointInfo) => void): () => void;
  /** Shift+drag on the view turns the crystal like a trackball (the side facing the camera
   * follows the cursor), Alt+drag (or Ctrl+Shift+drag) spins it about the line of sight; each
   * move reports the lab-frame rotation (row-major 3×3) for the page to apply to the misset
   * (rotate.ts `applyRotation`). Without a listener, modified drags orbit as usual. */
  onRotate(cb: (rotation: [V3, V3, V3]) => void): () => void;
  setTheme(theme: Theme): void;
  /** Extra: 'all' or 'near' points; reset the camera. */
  setOptions(opts: Pick<RecipViewOptions, 'show' | 'nearWidth'>): void;
  resetCamera(view?: 'overview' | 'lattice'): void;
  /** While held (a slider being dragged), updates keep the camera where it is, so that a
   * change of λ or of the cell shows as the sphere or the lattice growing or shrinking; on
   * release the camera fits them again when they changed. */
  holdFrame(held: boolean): void;
  dispose(): void;
  /** Test and measurement hooks. */
  readonly debug: RecipDebug;
}

export interface RecipDebug {
  counts(): { points: number; inCondition: number; visible: number; spheres: number; detector: boolean; labels: string[] };
  /** Screen position (CSS px, relative to the canvas) of point `index`, or null if behind. */
  project(index: number): { x: number; y: number } | null;
  /** Screen position (CSS px) of a scene point (1/Å), or null if behind the camera. */
  projectPoint(p: V3): { x: number; y: number } | null;
  /** The sphere's centre C, radius 1/λ, the view's up and beam directions. */
  scene(): { center: V3; radius: number; up: V3; beam: V3 };
  /** Renders, then reads back a rectangle of the canvas (CSS px; rows bottom-up, RGBA). */
  pixels(x: number, y: number, w: number, h: number): { width: number; height: number; data: Uint8Array };
  /** Background colour of the current theme (0..255). */
  background(): V3;
  indexOf(hkl: V3): number;
  camera(): { position: V3; target: V3 };
  /** Render continuously for `ms` while orbiting; frames per second. */
  measureFps(ms: number): Promise<{ fps: number; frames: number; msPerFrame: number }>;
  /** Show or hide one part (for measurements): points, haze, sphere, shell, meridians, detector,
   * overlay, axes, beam. */
  toggle(part: string, on: boolean): void;
  /** Time one screen-space pick over every point (ms). */
  timePick(): number;
  renders(): number;
  /** The WebGL renderer's name, whether it is software, whether multisampling is on. */
  gl(): { name: string; software: boolean; antialias: boolean };
  memory(): { geometries: number; textures: number };
  canvas: HTMLCanvasElement;
}
