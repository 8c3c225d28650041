//! The plan: everything the per-pixel kernel needs, resolved on the host in f64 (see
//! `resolve.rs`). The kernels (`cpu/`, `shaders/`) read nothing else. Array records are
//! `#[repr(C)]` and `Pod` with explicit padding; `gpu::layout` packs the same records into
//! double-float (pairs of f32) form for WGSL, which has no f64.

use crate::vec3::{rotaxis, scale, V3};
use bytemuck::{Pod, Zeroable};

/// One incident beam direction (unit vector along propagation, i.e. from source to sample) and
/// its wavelength in metres.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq)]
pub struct Source {
    pub incident: [f64; 3],
    pub lambda: f64,
}

/// Real-space cell vectors (metres) of one crystal orientation: one per (phi step, mosaic
/// domain), phi-major: index `phi * mosaic_domains + domain`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, PartialEq)]
pub struct Orientation {
    pub a: [f64; 3],
    pub b: [f64; 3],
    pub c: [f64; 3],
}

/// Which CPU kernel renders a plan: `F64` is upstream's arithmetic (parity mode, bit-identical
/// images), `F32` the fast forms of `crate::terms` (MODEL §9.2, §9.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    F32,
    F64,
}

#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Square = 0,
    Round = 1,
    Gauss = 2,
    Tophat = 3,
}

/// Structure-factor amplitudes on a box of Miller indices, l fastest. The table carries upstream's
/// zero padding slab on each high side: dimensions are `(h_range+1, k_range+1, l_range+1)` where
/// `h_range = h_max - h_min + 1`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HklGrid {
    pub h_min: i32,
    pub h_max: i32,
    pub k_min: i32,
    pub k_max: i32,
    pub l_min: i32,
    pub l_max: i32,
    /// Number of records read (or `h_range*k_range*l_range` for a dump file); 0 = no table.
    pub hkls: usize,
    pub data: Vec<f64>,
}

impl HklGrid {
    pub fn h_range(&self) -> i32 {
        self.h_max - self.h_min + 1
    }
    pub fn k_range(&self) -> i32 {
        self.k_max - self.k_min + 1
    }
    pub fn l_range(&self) -> i32 {
        self.l_max - self.l_min + 1
    }
    /// A table over the cube `lo..=hi` on every axis with `f(h, k, l)` at each index (synthetic
    /// tables: tests, known-answer checks).
    pub fn from_fn(lo: i32, hi: i32, f: impl Fn(f64, f64, f64) -> f64) -> Self {
        let r = (hi - lo + 1) as usize;
        let mut data = vec![0.0; (r + 1) * (r + 1) * (r + 1)];
        for ih in 0..r {
            for ik in 0..r {
                for il in 0..r {
                    data[(ih * (r + 1) + ik) * (r + 1) + il] = f(
                        (ih as i32 + lo) as f64,
                        (ik as i32 + lo) as f64,
                        (il as i32 + lo) as f64,
                    );
                }
            }
        }
        HklGrid {
            h_min: lo,
            h_max: hi,
            k_min: lo,
            k_max: hi,
            l_min: lo,
            l_max: hi,
            hkls: r * r * r,
            data,
        }
    }

    /// Index into `data` of Miller indices (h, k, l) inside the bounds.
    #[inline]
    pub fn index(&self, h: i32, k: i32, l: i32) -> usize {
        let kd = (self.k_range() + 1) as usize;
        let ld = (self.l_range() + 1) as usize;
        ((h - self.h_min) as usize * kd + (k - self.k_min) as usize) * ld
            + (l - self.l_min) as usize
    }
    /// Value at a padded-table offset (0-based, may reach `range`, the padding slab).
    #[inline]
    pub fn at(&self, ih: i32, ik: i32, il: i32) -> f64 {
        let kd = (self.k_range() + 1) as usize;
        let ld = (self.l_range() + 1) as usize;
        self.data[(ih as usize * kd + ik as usize) * ld + il as usize]
    }
}

/// How structure factors are looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    Nearest,
    Tricubic,
}

/// Pixel window to render, inclusive bounds (upstream `-roi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roi {
    pub xmin: usize,
    pub xmax: usize,
    pub ymin: usize,
    pub ymax: usize,
}

impl Roi {
    #[inline]
    pub fn contains(&self, f: usize, s: usize) -> bool {
        f >= self.xmin && f <= self.xmax && s >= self.ymin && s <= self.ymax
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    // ---- detector ----
    pub fpixels: usize,
    pub spixels: usize,
    /// Pixel pitch (m).
    pub pixel: f64,
    /// Sub-pixels per axis.
    pub oversample: u32,
    /// Crystal to the outer corner of pixel (0,0) (m).
    pub pix0: V3,
    pub fdet: V3,
    pub sdet: V3,
    pub odet: V3,
    pub beam: V3,
    /// Sample to detector plane along the normal (m); used by the solid angle.
    pub close_distance: f64,
    /// Sample to beam spot along the beam (m); used by the curved detector.
    pub distance: f64,
    pub curved: bool,
    pub point_pixel: bool,
    pub thicksteps: u32,
    /// Layer step (m) and total thickness (m; 0 = no sensor model).
    pub thickstep: f64,
    pub thick: f64,
    /// Attenuation coefficient (1/m).
    pub mu: f64,
    pub roi: Roi,
    /// Pixels with mask value 0 are skipped; `fpixels*spixels` entries when present.
    pub mask: Option<Vec<u8>>,
    // ---- beam ----
    pub sources: Vec<Source>,
    /// Kahn polarisation factor and E-vector axis.
    pub polar_k: f64,
    pub polar_axis: V3,
    pub nopolar: bool,
    /// Resolution cut (m), 0 = off.
    pub dmin: f64,
    // ---- crystal ----
    pub phisteps: u32,
    pub mosaic_domains: u32,
    /// Steady-state orientation table (stale-phi rule of MODEL §4.8 baked in).
    pub orientations: Vec<Orientation>,
    /// The table for the very first sequence of a run (phi = 0 entries unrotated); equal to
    /// `orientations` unless some phi value is exactly 0.
    pub orientations_first: Vec<Orientation>,
    pub na: f64,
    pub nb: f64,
    pub nc: f64,
    pub shape: Shape,
    pub fudge: f64,
    /// Static reciprocal vectors (1/Å) used by the Gauss and top-hat shapes.
    pub a_star: V3,
    pub b_star: V3,
    pub c_star: V3,
    // ---- structure factors ----
    pub hkl: HklGrid,
    pub default_f: f64,
    pub interpolation: Interpolation,
    // ---- sums and factors ----
    pub oversample_thick: bool,
    pub oversample_polar: bool,
    pub oversample_omega: bool,
    /// `sources * domains * phisteps * oversample^2`.
    pub steps: u64,
    /// `r_e^2 * fluence` (1.0 with the default fluence).
    pub r_e_sqr_fluence: f64,
    /// Water background that starts every pixel's sum.
    pub i_bg: f64,
    /// True when `i_bg != 0`: terms with a zero lattice factor are then not skipped.
    pub water: bool,
}

impl Plan {
    pub fn pixel_count(&self) -> usize {
        self.fpixels * self.spixels
    }
    /// Number of inner-loop terms per pixel (for progress and throughput figures).
    pub fn terms_per_pixel(&self) -> u64 {
        self.steps * self.thicksteps as u64
    }
    /// Lab-frame position (m) of sub-pixel (`sub_f`, `sub_s`) (indices over the whole detector
    /// in sub-pixel units) in the sensor layer at depth `odet` (MODEL §3.6, §3.8), with
    /// upstream's association order.
    #[inline(always)]
    pub fn subpixel_position(&self, sub_f: usize, sub_s: usize, odet: f64) -> V3 {
        let sub = self.pixel / self.oversample as f64;
        let fdet = sub * (sub_f as f64) + sub / 2.0;
        let sdet = sub * (sub_s as f64) + sub / 2.0;
        self.detector_point(fdet, sdet, odet)
    }

    /// Lab-frame position (m) of the point `fdet` m along the fast axis and `sdet` m along the
    /// slow axis from `pix0` (pixel `(f, s)` spans `[f, f+1) × [s, s+1)` pixel pitches, its
    /// centre is at `f + 0.5`), at depth `odet`, flat or curved: the mapping every kernel and
    /// the prediction (`predict.rs`) use.
    #[inline(always)]
    pub fn detector_point(&self, fdet: f64, sdet: f64, odet: f64) -> V3 {
        let mut pos = [0.0; 3];
        for c in 0..3 {
            pos[c] =
                ((fdet * self.fdet[c] + sdet * self.sdet[c]) + odet * self.odet[c]) + self.pix0[c];
        }
        if self.curved {
            // upstream rotates by the lab y and z components over the distance (C-QUIRK 13)
            let a1 = pos[1] / self.distance;
            let a2 = pos[2] / self.distance;
            let w = rotaxis(scale(self.beam, self.distance), self.sdet, a1);
            pos = rotaxis(w, self.fdet, a2);
        }
        pos
    }

    #[inline]
    pub fn renders(&self, f: usize, s: usize) -> bool {
        self.roi.contains(f, s)
            && self
                .mask
                .as_ref()
                .is_none_or(|m| m[s * self.fpixels + f] != 0)
    }
}

/// Pixels a fast backend (the GPU) leaves to the f64 kernel: those under the exact-Bragg rule
/// (`terms::EXACT_BRAGG`), where upstream's value is an f64 rounding artefact that only the f64
/// kernel reproduces. The backend reports them; `api::Renderer` renders them once with
/// `cpu::apply_exact_fixup`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExactFixup {
    /// Raster indices, ascending.
    pub pixels: Vec<usize>,
    /// The render used tricubic interpolation …
    pub tricubic: bool,
    /// … up to and including this raster index, where it was switched off (MODEL §6.4).
    pub interp_switch: Option<usize>,
    /// The pixel that reads the first-pixel orientation table (upstream's stale-phi quirk).
    pub first_pixel: Option<usize>,
}
