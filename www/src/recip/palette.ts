// Colours of the reciprocal-space view (view3d.ts) per theme.
import type { Theme } from './types';

// ---- themes --------------------------------------------------------------------------------
export interface Palette {
  background: number;
  haze: number;
  far: [number, number];
  near: number;
  hot: [number, number];
  sphere: number;
  sphereAlpha: number;
  shell: number;
  line: number;
  beam: number;
  k: number;
  r: number;
  axes: [number, number, number];
  detector: number;
  footprint: number;
  marker: number;
  spindle: number;
}
export const PALETTES: Record<Theme, Palette> = {
  light: {
    background: 0xf7f8fa, haze: 0.25, far: [0xc3cad4, 0x6c7a8c], near: 0x1c7ed6, hot: [0xfd7e14, 0xe03131],
    sphere: 0x2b6cb0, sphereAlpha: 0.1, shell: 0x4c9be8, line: 0x2b6cb0, beam: 0x1f2933, k: 0x7048e8, r: 0x0ca678,
    axes: [0xe03131, 0x2f9e44, 0x1971c2], detector: 0x495057, footprint: 0xf08c00, marker: 0x000000, spindle: 0x868e96,
  },
  dark: {
    background: 0x111418, haze: 0.4, far: [0x3c4654, 0x8a97aa], near: 0x4dabf7, hot: [0xffd43b, 0xff6b6b],
    sphere: 0x74c0fc, sphereAlpha: 0.13, shell: 0x4dabf7, line: 0x74c0fc, beam: 0xe9ecef, k: 0xb197fc, r: 0x63e6be,
    axes: [0xff8787, 0x8ce99a, 0x74c0fc], detector: 0xced4da, footprint: 0xffd43b, marker: 0xffffff, spindle: 0xadb5bd,
  },
};
export const hex = (c: number) => `#${c.toString(16).padStart(6, '0')}`;

