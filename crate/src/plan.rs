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

/// One flat panel of the detector (MODEL §3.6): its pixels, axes and place in the lab, and its
/// rectangle in the stored image. Today's single-panel detector (every convention, pivot, tilt
/// and two-theta rule) is one panel covering the whole image; a multi-panel detector (a preset's
/// modules, a DIALS `.expt`, a CrystFEL `.geom`) is several, rendered in the same pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub name: String,
    /// First stored-image pixel of the panel (fast, slow) and its pixel counts (fast, slow).
    pub data_origin: [usize; 2],
    pub size: [usize; 2],
    /// Pixel pitch (m): the plan's `pixel` (one pitch for all panels of a render).
    pub pixel: f64,
    /// Lab position (m) of the outer corner of the panel's first pixel.
    pub origin: V3,
    pub fdet: V3,
    pub sdet: V3,
    /// Normal: for panels read from files `±fdet × sdet`, pointing away from the sample;
    /// upstream's `odet` otherwise.
    pub odet: V3,
    /// The kernels' reference point (m): where the corner of stored-image pixel (0, 0) would be
    /// on this panel's plane (`origin − fdet·pixel·data_origin[0] − sdet·pixel·data_origin[1]`).
    /// A pixel's position is computed from it with the stored-image indices, in upstream's
    /// association order, so panels cut from one plane (a preset's modules, a split) keep the
    /// plane's reference and render bit-identical pixels to the whole plane.
    pub pix0: V3,
    /// Sample to the panel's plane along `odet` (m; the solid angle's obliquity).
    pub close_distance: f64,
    /// Sensor thickness (m) and attenuation (1/m): the plan's `thick` and `mu`.
    pub thick: f64,
    pub mu: f64,
    /// Counts at and above which a pixel is saturated (0 = not stated); trusted range of values.
    pub saturation: f64,
    pub trusted: [f64; 2],
}

impl Panel {
    /// Whether stored-image pixel `(f, s)` belongs to this panel.
    #[inline(always)]
    pub fn contains(&self, f: usize, s: usize) -> bool {
        f.wrapping_sub(self.data_origin[0]) < self.size[0]
            && s.wrapping_sub(self.data_origin[1]) < self.size[1]
    }
    /// The panel's pixels `f0..f0+nf`, `s0..s0+ns` (stored-image indices) as a panel of their
    /// own, with the same plane and reference point (so its pixels render bit-identically).
    pub fn sub_panel(&self, name: &str, f0: usize, s0: usize, nf: usize, ns: usize) -> Panel {
        let mut p = self.clone();
        p.name = name.to_string();
        p.data_origin = [f0, s0];
        p.size = [nf, ns];
        for c in 0..3 {
            p.origin[c] = self.pix0[c]
                + self.fdet[c] * (self.pixel * f0 as f64)
                + self.sdet[c] * (self.pixel * s0 as f64);
        }
        p
    }
    /// The reference point of a panel whose first pixel's corner is `origin`.
    pub fn reference(origin: V3, fdet: V3, sdet: V3, pixel: f64, data_origin: [usize; 2]) -> V3 {
        let (df, ds) = (pixel * data_origin[0] as f64, pixel * data_origin[1] as f64);
        [0, 1, 2].map(|c| origin[c] - fdet[c] * df - sdet[c] * ds)
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    // ---- detector ----
    /// The panels (at least one; one for every single-panel detector, curved included). The
    /// fields `pix0`, `fdet`, `sdet`, `odet` and `close_distance` below are the first panel's.
    pub panels: Vec<Panel>,
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
    /// upstream's association order, on the panel that holds the pixel (the first panel's plane
    /// for a pixel of none).
    #[inline(always)]
    pub fn subpixel_position(&self, sub_f: usize, sub_s: usize, odet: f64) -> V3 {
        let n = self.oversample.max(1) as usize;
        let panel = self.panel_at(sub_f / n, sub_s / n).unwrap_or(0);
        self.panel_subpixel_position(&self.panels[panel], sub_f, sub_s, odet)
    }

    /// As [`Plan::subpixel_position`], on a given panel (the kernels' form).
    #[inline(always)]
    pub fn panel_subpixel_position(
        &self,
        panel: &Panel,
        sub_f: usize,
        sub_s: usize,
        odet: f64,
    ) -> V3 {
        let sub = self.pixel / self.oversample as f64;
        let fdet = sub * (sub_f as f64) + sub / 2.0;
        let sdet = sub * (sub_s as f64) + sub / 2.0;
        self.panel_point(panel, fdet, sdet, odet)
    }

    /// The panel holding stored-image pixel `(f, s)`, if any (the first listed wins).
    #[inline(always)]
    pub fn panel_at(&self, f: usize, s: usize) -> Option<usize> {
        self.panels.iter().position(|p| p.contains(f, s))
    }

    /// The run of row `s` that starts at pixel `f`: its end (exclusive) and the panel of its
    /// pixels (None: pixels of no panel).
    pub fn row_run(&self, f: usize, s: usize) -> (usize, Option<usize>) {
        match self.panel_at(f, s) {
            Some(i) => {
                let p = &self.panels[i];
                let mut end = p.data_origin[0] + p.size[0];
                // an earlier-listed panel that starts inside the run takes over from there
                for q in &self.panels[..i] {
                    if q.data_origin[0] > f
                        && q.data_origin[0] < end
                        && s.wrapping_sub(q.data_origin[1]) < q.size[1]
                    {
                        end = q.data_origin[0];
                    }
                }
                (end.min(self.fpixels), Some(i))
            }
            None => {
                let next = self
                    .panels
                    .iter()
                    .filter(|q| {
                        q.data_origin[0] > f && s.wrapping_sub(q.data_origin[1]) < q.size[1]
                    })
                    .map(|q| q.data_origin[0])
                    .min()
                    .unwrap_or(self.fpixels);
                (next.min(self.fpixels), None)
            }
        }
    }

    /// Row `s` cut into runs `(a, b, panel)`, in order and covering `0..fpixels`: `Some(i)`
    /// where panel `i` renders every pixel of `a..b` (within its run of the row, [`Plan::row_run`],
    /// inside the ROI and not masked: [`Plan::renders`]), `None` where no pixel of `a..b` is
    /// rendered (no panel's, outside the ROI, masked). The row kernels (`cpu::row32`, the tangent
    /// row path) put their blocks within the `Some` runs; the `None` runs' pixels stay 0 and none
    /// of their terms is computed.
    pub fn row_segments(&self, s: usize) -> Vec<(usize, usize, Option<usize>)> {
        let fp = self.fpixels;
        let mut out: Vec<(usize, usize, Option<usize>)> = Vec::new();
        let mut push = |a: usize, b: usize, panel: Option<usize>| {
            if a >= b {
                return;
            }
            match out.last_mut() {
                // neighbouring runs of nothing rendered are one run
                Some(last) if panel.is_none() && last.2.is_none() && last.1 == a => last.1 = b,
                _ => out.push((a, b, panel)),
            }
        };
        let roi = &self.roi;
        let row_in = s >= roi.ymin && s <= roi.ymax;
        let mask = self.mask.as_ref().map(|m| &m[s * fp..(s + 1) * fp]);
        let mut at = 0;
        while at < fp {
            let (end, panel) = self.row_run(at, s);
            let end = end.max(at + 1);
            match panel {
                Some(i) if row_in => {
                    // the ROI's part of the run, then its unmasked runs
                    let (r0, r1) = (at.max(roi.xmin), end.min(roi.xmax.saturating_add(1)));
                    let mut f = at;
                    if r0 < r1 {
                        push(at, r0, None);
                        f = r0;
                        while f < r1 {
                            let a = f;
                            while f < r1 && mask.is_some_and(|m| m[f] == 0) {
                                f += 1;
                            }
                            push(a, f, None);
                            let a = f;
                            while f < r1 && mask.is_none_or(|m| m[f] != 0) {
                                f += 1;
                            }
                            push(a, f, Some(i));
                        }
                    }
                    push(f, end, None);
                }
                _ => push(at, end, None),
            }
            at = end;
        }
        out
    }

    /// [`Plan::detector_point`] on a given panel's plane.
    #[inline(always)]
    pub fn panel_point(&self, panel: &Panel, fdet: f64, sdet: f64, odet: f64) -> V3 {
        let mut pos = [0.0; 3];
        for c in 0..3 {
            pos[c] = ((fdet * panel.fdet[c] + sdet * panel.sdet[c]) + odet * panel.odet[c])
                + panel.pix0[c];
        }
        if self.curved {
            let a1 = pos[1] / self.distance;
            let a2 = pos[2] / self.distance;
            let w = rotaxis(scale(self.beam, self.distance), panel.sdet, a1);
            pos = rotaxis(w, panel.fdet, a2);
        }
        pos
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

    /// Whether pixels `f0..f0 + len` of row `s` (len ≥ 1) lie inside the ROI with no mask: on
    /// one panel's run, every one of them is rendered (the row kernels' drivers then skip
    /// [`Plan::renders`] per pixel).
    #[inline]
    pub fn unmasked_in_roi(&self, f0: usize, len: usize, s: usize) -> bool {
        self.mask.is_none() && self.roi.contains(f0, s) && self.roi.contains(f0 + len - 1, s)
    }

    #[inline]
    pub fn renders(&self, f: usize, s: usize) -> bool {
        self.roi.contains(f, s)
            && self
                .mask
                .as_ref()
                .is_none_or(|m| m[s * self.fpixels + f] != 0)
            && (self.panels.len() == 1 && self.panels[0].contains(f, s)
                || self.panel_at(f, s).is_some())
    }
}

/// Pixels a fast backend (the CPU's f32 kernels, the GPU) leaves to the f64 kernel: those under the exact-Bragg rule
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
