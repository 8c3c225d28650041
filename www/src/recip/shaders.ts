// GLSL of the reciprocal-space view (view3d.ts): lattice points as sphere impostors, the hover
// rings and the Ewald sphere's shading.
// ---- shaders ---------------------------------------------------------------------------------
// Per point: world diameter (aSize) and aInfo = (strength 0..1, intensity 0..1, flag) with flag
// 0 = far from the sphere, 1 = near it (within 3 tolerances), 2 = in the diffraction condition.
export const POINT_VS = /* glsl */ `
attribute float aSize;
attribute vec3 aInfo;
uniform float uScale;
uniform float uMinPx;
uniform float uMaxPx;
uniform vec3 uFarLo;
uniform vec3 uFarHi;
uniform vec3 uNear;
uniform vec3 uHotLo;
uniform vec3 uHotHi;
varying vec3 vColor;
void main() {
  vec4 mv = modelViewMatrix * vec4(position, 1.0);
  float flag = aInfo.z;
  gl_Position = projectionMatrix * mv;
  float minPx = flag > 1.5 ? uMinPx * 2.0 : (flag > 0.5 ? uMinPx * 1.4 : uMinPx * 0.75);
  gl_PointSize = clamp(aSize * uScale / max(-mv.z, 1e-9), minPx, uMaxPx);
  if (flag > 1.5) vColor = mix(uHotLo, uHotHi, aInfo.y);
  else if (flag > 0.5) vColor = uNear;
  else vColor = mix(uFarLo, uFarHi, aInfo.x);
}`;
export const POINT_FS = /* glsl */ `
uniform float uAlpha;
varying vec3 vColor;
void main() {
  vec2 p = gl_PointCoord * 2.0 - 1.0;
  float r2 = dot(p, p);
  if (r2 > 1.0) discard;
  float z = sqrt(1.0 - r2);
  float light = 0.55 + 0.45 * z + 0.25 * pow(max(0.0, dot(normalize(vec3(-p.x, p.y, z)), normalize(vec3(-0.4, 0.5, 0.77)))), 12.0);
  gl_FragColor = vec4(vColor * light, uAlpha);
  #include <colorspace_fragment>
}`;
// Rings (hover/highlight marker, spot on the detector): constant screen size.
export const RING_VS = /* glsl */ `
uniform float uPx;
void main() {
  gl_Position = projectionMatrix * modelViewMatrix * vec4(position, 1.0);
  gl_PointSize = uPx;
}`;
export const RING_FS = /* glsl */ `
uniform vec3 uColor;
uniform float uFill;
void main() {
  vec2 p = gl_PointCoord * 2.0 - 1.0;
  float r = length(p);
  if (r > 1.0) discard;
  float ring = smoothstep(0.62, 0.7, r) * (1.0 - smoothstep(0.9, 1.0, r));
  float a = max(ring, uFill * (1.0 - smoothstep(0.25, 0.35, r)));
  if (a < 0.05) discard;
  gl_FragColor = vec4(uColor, a);
  #include <colorspace_fragment>
}`;
// Translucent sphere that is clear in the middle and visible at its rim (a readable ball).
export const SPHERE_VS = /* glsl */ `
varying vec3 vN;
varying vec3 vV;
void main() {
  vec4 mv = modelViewMatrix * vec4(position, 1.0);
  vN = normalize(normalMatrix * normal);
  vV = normalize(-mv.xyz);
  gl_Position = projectionMatrix * mv;
}`;
export const SPHERE_FS = /* glsl */ `
uniform vec3 uColor;
uniform float uAlpha;
varying vec3 vN;
varying vec3 vV;
void main() {
  float f = 1.0 - abs(dot(normalize(vN), normalize(vV)));
  gl_FragColor = vec4(uColor, uAlpha * (0.35 + 2.2 * f * f * f));
  #include <colorspace_fragment>
}`;

