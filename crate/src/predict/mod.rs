//! Reflection prediction: which reciprocal-lattice points lie near the Ewald sphere and where
//! their spots land on the detector, computed from the same resolved `Setup` and `Plan` as the
//! image (nothing is re-derived elsewhere: the orientation is the plan's, the detector mapping is
//! `Plan::detector_point` inverted, F is the kernels' nearest lookup, the lattice and
//! polarisation factors are the f64 kernel's, and a spot's intensity is the f64 kernel's value
//! of the pixel it lands on).
//!
//! Conventions (see also docs/ARCHITECTURE.md, "Reflection prediction"):
//! * reference orientation: the plan's first phi step (`phi0`), central mosaic domain
//!   (unrotated), central source (the nominal beam `plan.beam` and `lambda0`);
//! * `r = h·a* + k·b* + l·c*` in the lab frame (1/Å), with a*, b*, c* the exact reciprocal
//!   basis of the plan's real-space vectors, so `a·r = h` (the kernels' Miller-index formula);
//! * `s0 = beam/λ0`; the Ewald sphere is `|r + s0| = 1/λ0`; the excitation error is
//!   `ε = |r + s0| − 1/λ0` (1/Å): positive outside the sphere, negative inside;
//! * the diffracted direction is `unit(s0 + r)` (towards the point of the sphere nearest to r);
//! * detector positions are in pixels of the float image: pixel `(f, s)` spans `[f, f+1)` ×
//!   `[s, s+1)`, so its centre is at `f + 0.5`, `s + 0.5` and `floor` gives the pixel index.
//! * intensity (`Reflection::intensity`, photons/pixel): for a reflection in the condition whose
//!   spot lands on a panel pixel, what the image records there: that pixel rendered by the f64
//!   kernel (`pixel_values`: every sub-pixel, source, orientation and layer the render samples,
//!   without the water background), so that a spot smaller than a pixel is ranked by what the
//!   pixel catches of it, not by its peak (issue 30: with a 350 Å cell, N = 40 and 0.1 mm
//!   pixels the peak estimate ranked the image's strongest spot 288th of 437). It costs one
//!   pixel's terms per spot, at most `PIXEL_TERMS` in all (orientations, then sources, thinned
//!   evenly beyond, then the sub-pixels). Other reflections keep the one-term peak estimate (`Geometry::intensity`).
//! * a rotation sweep (more than one phi step): the spot quantities are evaluated at the phi,
//!   within the sampled range `phi0 … phi0 + (phisteps−1)·phistep`, where the point is nearest
//!   the sphere (where it crosses it, if it does); `r` stays the reference orientation's.

use crate::cpu::pixel64::{lattice_f64, render_pixel, ExactCtx};
use crate::error::{Error, Result};
use crate::plan::{Interpolation, Plan, Shape};
use crate::resolve::Setup;
use crate::terms::{f_nearest, polarization_f64, sincg_f64, PolarFrame};
use crate::vec3::{add, cross, dot, mag, rotaxis, scale, sub, unit, V3};
use rayon::prelude::*;
use serde::Serialize;
use std::f64::consts::PI;

/// Metres per Ångström.
const M_PER_A: f64 = 1e-10;
const DEG: f64 = 180.0 / PI;

/// What to list.
#[derive(Clone, Copy, Debug)]
pub struct PredictOptions {
    /// Keep only points with |excitation error| at most this (1/Å); `None`: every point within
    /// the resolution limit.
    pub max_excitation_error: Option<f64>,
    /// Refuse (a clear error suggesting -dmin) when more points than this would be listed.
    pub max_points: usize,
    /// List what is on the image instead of every lattice point (`rotation::predict_on_image`):
    /// the points in the diffraction condition of a still, every sphere crossing of an
    /// oscillation with its φ; only the shell near the sphere is enumerated.
    pub on_image: bool,
}

impl Default for PredictOptions {
    fn default() -> Self {
        PredictOptions {
            max_excitation_error: None,
            max_points: 2_000_000,
            on_image: false,
        }
    }
}

/// One reciprocal-lattice point.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Reflection {
    pub h: i32,
    pub k: i32,
    pub l: i32,
    /// Lab-frame reciprocal vector at the reference orientation (1/Å).
    pub r: V3,
    /// Resolution d = 1/|r| (Å).
    pub d: f64,
    /// Structure factor: the kernels' nearest lookup (default_F outside the table).
    pub f: f64,
    /// Orientation (phi, degrees) of the spot quantities below: phi0 for a still.
    pub phi: f64,
    /// `|r + s0| − 1/λ0` (1/Å) at `phi`: positive outside the Ewald sphere.
    pub excitation_error: f64,
    /// How far from the sphere the point still diffracts (1/Å): lattice-peak half-width plus
    /// mosaic, divergence and dispersion spreads (see `Geometry::tolerance`).
    pub tolerance: f64,
    /// `|excitation_error| <= tolerance`.
    pub in_condition: bool,
    /// Unit diffracted direction `unit(s0 + r)` (lab frame).
    pub direction: V3,
    /// Angle between the beam and `direction` (degrees); `2·asin(λ0/2d)` on the sphere.
    pub two_theta: f64,
    /// Where the diffracted ray meets the detector surface (pixels, centre of pixel f at
    /// f + 0.5); `None` when it does not (ray parallel to or away from a flat detector).
    pub fast: Option<f64>,
    pub slow: Option<f64>,
    /// `0 <= fast < fpixels` and `0 <= slow < spixels`.
    pub on_detector: bool,
    /// What the image records for the spot (photons/pixel): for a reflection in the
    /// diffraction condition whose spot lands on a panel pixel, the value of that pixel as the
    /// f64 kernel renders it (every sub-pixel, source, orientation and sensor layer; the water
    /// background left out; see `pixel_values`), so that the strongest listed are the
    /// strongest on the image; otherwise the one-term peak estimate
    /// `r_e²·fluence · F² · F_latt² · polarisation · Ω · capture` (`Geometry::intensity`).
    pub intensity: f64,
    /// The one-term peak estimate for every reflection (photons/pixel), in or out of the
    /// condition: `r_e²·fluence · F² · F_latt² · polarisation · Ω · capture`
    /// (`Geometry::intensity`). `intensity` replaces it by the pixel's value for the spots the
    /// image records; this one stays one quantity for all (the 3D view colours by it).
    pub peak: f64,
    /// `F_latt²` at the excitation error over its peak value (0..1).
    pub partiality: f64,
}

/// The prediction with what a view of reciprocal space needs around it.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    /// Nominal wavelength (Å) and unit beam direction.
    pub wavelength: f64,
    pub beam: V3,
    /// `beam / λ0` (1/Å); the Ewald sphere is centred on `-s0` with radius `1/λ0`.
    pub s0: V3,
    /// Radii 1/λ of the shortest and longest source wavelengths (1/Å): the shell swept by
    /// dispersion.
    pub ewald_radius_range: [f64; 2],
    /// Largest angle of a source direction from the beam (rad): divergence.
    pub divergence: f64,
    /// Mosaic spread (rad).
    pub mosaic_spread: f64,
    /// Reciprocal basis at the reference orientation (lab frame, 1/Å).
    pub a_star: V3,
    pub b_star: V3,
    pub c_star: V3,
    /// Spindle axis (unit), reference phi and the last sampled phi (degrees).
    pub spindle: V3,
    pub phi0: f64,
    pub phi_end: f64,
    /// Resolution limit of the listing (Å): the detector's reach, or -dmin.
    pub dmin: f64,
    /// The detector outline (lab frame, m), 16 points per edge from pixel corner (0,0) along
    /// the fast edge first; curved detectors give a curved outline.
    pub detector_outline: Vec<V3>,
    pub fpixels: usize,
    pub spixels: usize,
    /// Enumeration order: h, then k, then l ascending.
    pub reflections: Vec<Reflection>,
}

/// The Miller indices and scattering vector at a detector position (the cursor readout).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PixelHkl {
    /// Fractional Miller indices at the reference orientation and nominal beam.
    pub hkl: V3,
    /// The kernels' nearest indices: `ceil(h − 0.5)`.
    pub nearest: [i32; 3],
    /// Scattering vector `(d̂ − beam)/λ0` (1/Å), its resolution (Å) and 2θ (degrees).
    pub q: V3,
    pub d: f64,
    pub two_theta: f64,
    /// Lab-frame position of the point (m).
    pub position: V3,
}

/// Everything the prediction derives once from the setup.
pub struct Geometry<'a> {
    plan: &'a Plan,
    beam: V3,
    /// 1/λ0 (1/Å).
    k: f64,
    s0: V3,
    /// Real-space a, b, c (Å) and reciprocal a*, b*, c* (1/Å) at the reference orientation.
    real: [V3; 3],
    recip: [V3; 3],
    spindle: V3,
    phi0: f64,
    /// Sampled sweep from phi0 (rad): `phistep·(phisteps−1)`, 0 for a still.
    sweep: f64,
    frame: PolarFrame,
    mosaic: f64,
    divergence: f64,
    /// Largest |1/λ − 1/λ0| over the sources (1/Å).
    dk: f64,
    k_range: [f64; 2],
    /// Largest |r| listed (1/Å).
    rmax: f64,
    peak_latt: f64,
}

fn reciprocal(a: V3, b: V3, c: V3) -> [V3; 3] {
    let v = dot(a, cross(b, c));
    [
        scale(cross(b, c), 1.0 / v),
        scale(cross(c, a), 1.0 / v),
        scale(cross(a, b), 1.0 / v),
    ]
}

/// Integer range (with a margin of one) of `l` where `a·l² + 2b·l + c <= 0`, `a > 0`.
fn quad_range(a: f64, b: f64, c: f64) -> Option<(i64, i64)> {
    let disc = b * b - a * c;
    if !(disc >= 0.0) {
        return None;
    }
    let sq = disc.sqrt();
    Some((
        (((-b - sq) / a).floor() as i64) - 1,
        (((-b + sq) / a).ceil() as i64) + 1,
    ))
}

impl<'a> Geometry<'a> {
    pub fn new(setup: &'a Setup) -> Result<Self> {
        let plan = &setup.plan;
        let o = plan
            .orientations_first
            .first()
            .ok_or_else(|| Error::geometry("prediction: the plan has no crystal orientation"))?;
        let real = [
            scale(o.a, 1.0 / M_PER_A),
            scale(o.b, 1.0 / M_PER_A),
            scale(o.c, 1.0 / M_PER_A),
        ];
        let recip = reciprocal(real[0], real[1], real[2]);
        let beam = unit(plan.beam);
        let k = M_PER_A / setup.lambda0;
        let (mut divergence, mut dk, mut kmin, mut kmax, mut spread) =
            (0.0f64, 0.0f64, k, k, 0.0f64);
        for s in &plan.sources {
            let i = unit(s.incident);
            divergence = divergence.max(dot(i, beam).clamp(-1.0, 1.0).acos());
            spread = spread.max(mag(sub(i, beam)));
            let ks = M_PER_A / s.lambda;
            dk = dk.max((ks - k).abs());
            kmin = kmin.min(ks);
            kmax = kmax.max(ks);
        }
        let sweep = if plan.phisteps > 1 {
            setup.phistep * (plan.phisteps - 1) as f64
        } else {
            0.0
        };
        let mut g = Geometry {
            plan,
            beam,
            k,
            s0: scale(beam, k),
            real,
            recip,
            spindle: unit(setup.det.spindle),
            phi0: setup.phi0,
            sweep,
            frame: PolarFrame::new(beam, plan.polar_axis),
            mosaic: setup.mosaic_spread,
            divergence,
            dk,
            k_range: [kmin, kmax],
            rmax: 0.0,
            peak_latt: lattice_f64(plan, [0.0; 3], [0.0; 3]),
        };
        // resolution: the detector's largest |d̂ − beam| (flat: on its outline, where the angle
        // from the beam is largest; the interior grid covers curved mappings), for the
        // shortest wavelength and the most divergent source
        let mut reach = 0.0f64;
        for pan in &plan.panels {
            let mut visit = |f: f64, s: f64| {
                let pos = plan.panel_point(pan, f * plan.pixel, s * plan.pixel, 0.0);
                reach = reach.max(mag(sub(unit(pos), beam)));
            };
            let [f0, s0] = pan.data_origin.map(|x| x as f64);
            let (fp, sp) = (pan.size[0] as f64, pan.size[1] as f64);
            for i in 0..=pan.size[0] {
                visit(f0 + i as f64, s0);
                visit(f0 + i as f64, s0 + sp);
            }
            for j in 0..=pan.size[1] {
                visit(f0, s0 + j as f64);
                visit(f0 + fp, s0 + j as f64);
            }
            for i in 0..=16 {
                for j in 0..=16 {
                    visit(f0 + fp * i as f64 / 16.0, s0 + sp * j as f64 / 16.0);
                }
            }
        }
        let mut rmax = (kmax * (reach + spread)).min(2.0 * kmax);
        if plan.dmin > 0.0 {
            rmax = rmax.min(M_PER_A / plan.dmin);
        }
        g.rmax = rmax;
        Ok(g)
    }

    /// Lab-frame position (m) of a detector point given in pixels of the stored image (pixel
    /// centres at index + 0.5), on the sensor's front face of the panel holding it (the first
    /// panel's plane for a point of none): the kernels' mapping (`Plan::panel_point`).
    pub fn position(&self, fast: f64, slow: f64) -> V3 {
        let p = self.plan;
        let i = self.panel_of(fast, slow).unwrap_or(0);
        p.panel_point(&p.panels[i], fast * p.pixel, slow * p.pixel, 0.0)
    }

    /// The panel holding the stored-image point (fast, slow) (pixels), if any.
    pub fn panel_of(&self, fast: f64, slow: f64) -> Option<usize> {
        if !(fast >= 0.0 && slow >= 0.0 && fast < 1e15 && slow < 1e15) {
            return None;
        }
        self.plan
            .panel_at(fast.floor() as usize, slow.floor() as usize)
    }

    /// Where the ray along `dir` meets a flat panel's plane, in stored-image pixels.
    fn flat_pixel(&self, pan: &crate::plan::Panel, dir: V3) -> Option<[f64; 2]> {
        let p = self.plan;
        let (f, s) = (pan.fdet, pan.sdet);
        // t·dir = pix0 + F·f + S·s: the plane spanned by f and s (not necessarily ⟂ odet)
        let n = cross(f, s);
        let den = dot(dir, n);
        let t = dot(pan.pix0, n) / den;
        if !(t > 0.0) || !t.is_finite() {
            return None;
        }
        let rel = sub(scale(dir, t), pan.pix0);
        let (ff, fs, ss) = (dot(f, f), dot(f, s), dot(s, s));
        let (rf, rs) = (dot(rel, f), dot(rel, s));
        let det = ff * ss - fs * fs;
        let fm = (rf * ss - rs * fs) / det;
        let sm = (rs * ff - rf * fs) / det;
        Some([fm / p.pixel, sm / p.pixel])
    }

    /// Where the ray from the sample along the unit vector `dir` meets the detector surface,
    /// in pixels (fast, slow): `position` inverted. `None` when it does not (flat: the ray is
    /// parallel to the plane or points away; curved: upstream's mapping is degenerate or
    /// does not reach that direction).
    /// Several panels: the first panel whose pixels the ray meets, else `None`.
    pub fn pixel_of_direction(&self, dir: V3) -> Option<[f64; 2]> {
        let p = self.plan;
        if p.curved {
            return self.curved_pixel(dir);
        }
        if p.panels.len() == 1 {
            return self.flat_pixel(&p.panels[0], dir);
        }
        p.panels.iter().find_map(|pan| {
            self.flat_pixel(pan, dir).filter(|&[f, s]| {
                let (df, ds) = (f - pan.data_origin[0] as f64, s - pan.data_origin[1] as f64);
                (0.0..pan.size[0] as f64).contains(&df) && (0.0..pan.size[1] as f64).contains(&ds)
            })
        })
    }

    /// Inverse of the curved mapping (MODEL §3.8, C-QUIRK 13): the point is
    /// `R_f(a2)·R_s(a1)·(distance·beam)` with `a1 = pos.y/distance`, `a2 = pos.z/distance` of
    /// the flat position `pix0 + F·f + S·s`. Solve for a2 (the s-component of `R_f(−a2)·dir`
    /// must equal `s·beam`), then a1, then F and S from the lab y and z components.
    fn curved_pixel(&self, dir: V3) -> Option<[f64; 2]> {
        let p = self.plan;
        let (f, s, b, dist) = (p.fdet, p.sdet, p.beam, p.distance);
        let t = unit(dir);
        let tf = dot(f, t);
        let ca = dot(s, sub(t, scale(f, tf)));
        let cb = -dot(s, cross(f, t));
        let cc = dot(s, b) - tf * dot(s, f);
        let r = ca.hypot(cb);
        let det = f[1] * s[2] - s[1] * f[2];
        if r < 1e-12 || det.abs() < 1e-12 || (cc / r).abs() > 1.0 + 1e-9 {
            return None;
        }
        let base = cb.atan2(ca);
        let off = (cc / r).clamp(-1.0, 1.0).acos();
        let b_perp = sub(b, scale(s, dot(s, b)));
        if mag(b_perp) < 1e-12 {
            return None;
        }
        let (fp, sp) = (p.fpixels as f64, p.spixels as f64);
        let mut best: Option<([f64; 2], f64)> = None;
        for a2 in [base + off, base - off] {
            let w = rotaxis(t, f, -a2);
            let w_perp = sub(w, scale(s, dot(s, w)));
            let a1 = dot(s, cross(b_perp, w_perp)).atan2(dot(b_perp, w_perp));
            for m in -1..=1 {
                for n in -1..=1 {
                    let y = (a1 + 2.0 * PI * m as f64) * dist - p.pix0[1];
                    let z = (a2 + 2.0 * PI * n as f64) * dist - p.pix0[2];
                    let fm = (y * s[2] - s[1] * z) / det;
                    let sm = (f[1] * z - y * f[2]) / det;
                    let px = [fm / p.pixel, sm / p.pixel];
                    let back = p.detector_point(fm, sm, 0.0);
                    if mag(sub(back, scale(t, dist))) > 1e-9 * dist.abs() {
                        continue;
                    }
                    // prefer a point on the detector, then the one nearest its centre
                    let off_det = if (0.0..fp).contains(&px[0]) && (0.0..sp).contains(&px[1]) {
                        0.0
                    } else {
                        1e300
                    };
                    let score = off_det + (px[0] - fp / 2.0).hypot(px[1] - sp / 2.0);
                    if best.is_none_or(|(_, s)| score < s) {
                        best = Some((px, score));
                    }
                }
            }
        }
        best.map(|(px, _)| px)
    }

    /// Fractional and nearest Miller indices at a detector point (pixels, centres at
    /// index + 0.5) for the reference orientation and the nominal beam.
    pub fn hkl_at(&self, fast: f64, slow: f64) -> PixelHkl {
        let pos = self.position(fast, slow);
        let d = unit(pos);
        let q = scale(sub(d, self.beam), self.k);
        let hkl = [
            dot(self.real[0], q),
            dot(self.real[1], q),
            dot(self.real[2], q),
        ];
        let nearest = hkl.map(|x| (x - 0.5).ceil() as i32);
        PixelHkl {
            hkl,
            nearest,
            q,
            d: 1.0 / mag(q),
            two_theta: dot(d, self.beam).clamp(-1.0, 1.0).acos() * DEG,
            position: pos,
        }
    }

    /// Distance (1/Å) along the unit direction `n` over which the lattice factor falls from its
    /// peak to the edge of its central peak: the first zero for the square (`‖N_i·(a_i·n)‖ = 1`)
    /// and round shapes, the edge of the top hat, and `F_latt² = e⁻⁴·peak` for the Gaussian
    /// (MODEL §6.3's formulas). `n_cell = (a·n, b·n, c·n)` in Å.
    pub fn shape_width(&self, n_cell: V3) -> f64 {
        let p = self.plan;
        let ns = [p.na, p.nb, p.nc];
        let cells = p.na * p.nb * p.nc;
        let fudge = p.fudge.max(f64::MIN_POSITIVE);
        match p.shape {
            Shape::Square => {
                // a factor with N = 1 is constant (upstream skips it)
                let m = (0..3)
                    .map(|i| if ns[i] > 1.0 { ns[i] * n_cell[i] } else { 0.0 })
                    .map(|x| x * x)
                    .sum::<f64>()
                    .sqrt();
                1.0 / m
            }
            Shape::Round => {
                let m = (0..3)
                    .map(|i| (ns[i] * n_cell[i]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                // sinc3's first zero: π·sqrt(hrad²·fudge) = 4.4934
                4.493_409_457_909_064 / PI / (m * fudge.sqrt())
            }
            Shape::Gauss => (1.26 / fudge).sqrt() / cells,
            Shape::Tophat => 0.63 / (cells * fudge.sqrt()),
        }
    }

    /// Tolerance on the excitation error (1/Å) for a point at `r` diffracting along `n`:
    /// `shape_width + |r|·mosaic + (1/λ0)·divergence·sin 2θ + Δ(1/λ)·(1 − cos 2θ)`, the
    /// lattice peak's half-width plus the largest change of ε that a mosaic rotation, a
    /// divergent source or a dispersed wavelength makes.
    pub fn tolerance(&self, r: V3, n: V3, n_cell: V3) -> f64 {
        let cos2t = dot(n, self.beam).clamp(-1.0, 1.0);
        let sin2t = (1.0 - cos2t * cos2t).sqrt();
        self.shape_width(n_cell)
            + mag(r) * self.mosaic
            + self.k * self.divergence * sin2t
            + self.dk * (1.0 - cos2t)
    }

    /// Within a sweep, the rotation from phi0 (rad) where `r` is nearest the sphere.
    fn sweep_offset(&self, r: V3) -> f64 {
        if self.sweep == 0.0 {
            return 0.0;
        }
        // s0·r(Δ) = A + B cos Δ + C sin Δ = A + R cos(Δ − α); on the sphere it is −|r|²/2
        let u = self.spindle;
        let r_par = scale(u, dot(u, r));
        let r_perp = sub(r, r_par);
        let (a, b, c) = (
            dot(self.s0, r_par),
            dot(self.s0, r_perp),
            dot(self.s0, cross(u, r_perp)),
        );
        let rr = b.hypot(c);
        let alpha = c.atan2(b);
        let (lo, hi) = (self.sweep.min(0.0), self.sweep.max(0.0));
        let mut bases = vec![lo, hi, alpha, alpha + PI];
        if rr > 0.0 {
            let x = (-dot(r, r) / 2.0 - a) / rr;
            if x.abs() <= 1.0 {
                bases.push(alpha + x.acos());
                bases.push(alpha - x.acos());
            }
        }
        let eps = |d: f64| (mag(add(rotaxis(r, u, d), self.s0)) - self.k).abs();
        let mut best = (0.0f64, eps(0.0));
        for t in bases {
            let m0 = ((lo - t) / (2.0 * PI)).floor() as i64;
            let m1 = ((hi - t) / (2.0 * PI)).ceil() as i64;
            for m in m0..=m1 {
                let d = t + 2.0 * PI * m as f64;
                if d < lo || d > hi {
                    continue;
                }
                let e = eps(d);
                if e < best.1 || (e == best.1 && d.abs() < best.0.abs()) {
                    best = (d, e);
                }
            }
        }
        best.0
    }

    /// Where (h, k, l) is and how far from the sphere, or `None` outside the resolution limit
    /// or the window: (r, rotation from phi0 to the spot, s0 + r at the spot, ε).
    fn locate(&self, h: i64, k: i64, l: i64, window: Option<f64>) -> Option<(V3, f64, V3, f64)> {
        let [a_s, b_s, c_s] = self.recip;
        let (hf, kf, lf) = (h as f64, k as f64, l as f64);
        let mut r = [0.0; 3];
        for c in 0..3 {
            r[c] = hf * a_s[c] + kf * b_s[c] + lf * c_s[c];
        }
        if mag(r) > self.rmax {
            return None;
        }
        let delta = self.sweep_offset(r);
        let r_spot = if delta == 0.0 {
            r
        } else {
            rotaxis(r, self.spindle, delta)
        };
        let v = add(r_spot, self.s0);
        let eps = mag(v) - self.k;
        if window.is_some_and(|w| !(eps.abs() <= w)) {
            return None;
        }
        Some((r, delta, v, eps))
    }

    /// The record for (h, k, l), or `None` outside the resolution limit or the window.
    pub fn reflection(&self, h: i64, k: i64, l: i64, window: Option<f64>) -> Option<Reflection> {
        let (r, delta, _, _) = self.locate(h, k, l, window)?;
        Some(self.record(h, k, l, r, delta))
    }

    /// The record of (h, k, l) at reference vector `r`, turned by `delta` (rad) about the
    /// spindle from phi0: where its spot lands, ε, tolerance, intensity at that orientation.
    fn record(&self, h: i64, k: i64, l: i64, r: V3, delta: f64) -> Reflection {
        let p = self.plan;
        let r_spot = if delta == 0.0 {
            r
        } else {
            rotaxis(r, self.spindle, delta)
        };
        let v = add(r_spot, self.s0);
        let eps = mag(v) - self.k;
        let (hf, kf, lf) = (h as f64, k as f64, l as f64);
        let rl = mag(r);
        let vl = mag(v);
        let n = if vl > 0.0 {
            scale(v, 1.0 / vl)
        } else {
            self.beam
        };
        // the direction in the crystal frame of the reference orientation
        let n_ref = if delta == 0.0 {
            n
        } else {
            rotaxis(n, self.spindle, -delta)
        };
        let n_cell = [
            dot(self.real[0], n_ref),
            dot(self.real[1], n_ref),
            dot(self.real[2], n_ref),
        ];
        let tolerance = self.tolerance(r, n, n_cell);
        let px = self.pixel_of_direction(n);
        let on_detector = px.is_some_and(|[f, s]| {
            (0.0..p.fpixels as f64).contains(&f) && (0.0..p.spixels as f64).contains(&s)
        });
        // lattice factor at the sphere point nearest to r: indices shifted by δ = −ε·(a·n, …)
        let delta_hkl = n_cell.map(|x| -eps * x);
        let latt = match p.shape {
            // |sin(Nπ(h+δ))/sin(π(h+δ))| in its delta form: at an integer h upstream's form
            // is dominated by the rounding of π·h
            Shape::Square => [p.na, p.nb, p.nc]
                .iter()
                .zip(delta_hkl)
                .filter(|(n, _)| **n > 1.0)
                .map(|(n, d)| sincg_f64(PI * d, *n))
                .product(),
            _ => lattice_f64(
                p,
                [hf + delta_hkl[0], kf + delta_hkl[1], lf + delta_hkl[2]],
                [hf, kf, lf],
            ),
        };
        let f = f_nearest(&p.hkl, p.default_f, hf, kf, lf);
        let pos = px.map(|[fx, sx]| self.position(fx, sx));
        let intensity = self.intensity(f, latt, n, pos);
        Reflection {
            h: h as i32,
            k: k as i32,
            l: l as i32,
            r,
            d: 1.0 / rl,
            f,
            phi: (self.phi0 + delta) * DEG,
            excitation_error: eps,
            tolerance,
            in_condition: eps.abs() <= tolerance,
            direction: n,
            two_theta: dot(n, self.beam).clamp(-1.0, 1.0).acos() * DEG,
            fast: px.map(|x| x[0]),
            slow: px.map(|x| x[1]),
            on_detector,
            intensity,
            peak: intensity,
            partiality: if self.peak_latt != 0.0 {
                (latt / self.peak_latt).powi(2)
            } else {
                0.0
            },
        }
    }

    /// Peak pixel value estimate (photons/pixel) for one source, domain and phi step (the
    /// intensity of a reflection that `pixel_values` does not render), as the kernels compute
    /// one term (MODEL §6.2, §3.9, §5.6, §6.6):
    /// `r_e²·fluence · F² · F_latt² · polarisation · Ω · capture`, with F_latt at the sphere
    /// point nearest to the reciprocal-lattice point, Ω and the capture fraction at the landing
    /// position (a pixel facing the sample at the detector distance when the ray misses the
    /// detector surface). The image divides each term by `steps` and sums over the sources,
    /// domains, phi steps and sub-pixels in condition: for a still with one source and no
    /// mosaic spread this is the spot's peak value up to the sub-pixel average.
    pub fn intensity(&self, f: f64, latt: f64, n: V3, pos: Option<V3>) -> f64 {
        let p = self.plan;
        let polar = if p.nopolar {
            1.0
        } else {
            polarization_f64(p.polar_k, &self.frame, n)
        };
        let omega = match pos {
            Some(pos) => {
                let r = mag(pos);
                if p.point_pixel {
                    1.0 / (r * r)
                } else {
                    p.pixel * p.pixel / (r * r) * p.close_distance / r
                }
            }
            None if p.point_pixel => 1.0 / (p.distance * p.distance),
            None => p.pixel * p.pixel / (p.distance * p.distance),
        };
        let capture = if p.thick > 0.0 {
            let rho = dot(n, p.odet);
            let c = 1.0 - (-(p.thicksteps as f64 * p.thickstep) * p.mu / rho).exp();
            if c.is_finite() {
                c.clamp(0.0, 1.0)
            } else {
                0.0
            }
        } else {
            1.0
        };
        p.r_e_sqr_fluence * (f * f) * (latt * latt) * polar * omega * capture
    }

    /// Visit the (k, l_min, l_max) columns of row h that may hold points within the resolution
    /// sphere and the window (bounds have a margin; `reflection` checks each point exactly).
    fn row(&self, h: i64, window: Option<f64>, mut visit: impl FnMut(i64, i64, i64)) {
        let [a, b, _] = self.real;
        let [a_s, b_s, c_s] = self.recip;
        let rr = self.rmax;
        let alen = mag(a);
        let ahat = scale(a, 1.0 / alen);
        // points with a·r = h lie in a plane at distance h/|a| from the origin
        let r_par = h as f64 / alen;
        let rem2 = rr * rr - r_par * r_par;
        if rem2 < 0.0 {
            return;
        }
        let b_par = dot(b, ahat);
        let b_perp = mag(sub(b, scale(ahat, b_par)));
        let kc = b_par * r_par;
        let kh = b_perp * rem2.sqrt();
        let cc = dot(c_s, c_s);
        // the window around the sphere, widened by how far a sweep moves a point
        let w = window.map(|w| w + rr * self.sweep.abs());
        for k in ((kc - kh).floor() as i64 - 1)..=((kc + kh).ceil() as i64 + 1) {
            let mut r0 = [0.0; 3];
            for c in 0..3 {
                r0[c] = h as f64 * a_s[c] + k as f64 * b_s[c];
            }
            let Some((lo, hi)) = quad_range(cc, dot(r0, c_s), dot(r0, r0) - rr * rr) else {
                continue;
            };
            let Some(w) = w else {
                visit(k, lo, hi);
                continue;
            };
            let v0 = add(r0, self.s0);
            let (bq, cq) = (dot(v0, c_s), dot(v0, v0));
            let outer = self.k + w;
            let Some((olo, ohi)) = quad_range(cc, bq, cq - outer * outer) else {
                continue;
            };
            let (lo, hi) = (lo.max(olo), hi.min(ohi));
            let inner = self.k - w;
            match (inner > 0.0)
                .then(|| quad_range(cc, bq, cq - inner * inner))
                .flatten()
            {
                // strictly inside the inner sphere: (ilo+1 .. ihi-1) has the margin already
                Some((ilo, ihi)) if ihi - ilo > 4 => {
                    visit(k, lo, hi.min(ilo + 2));
                    visit(k, lo.max(ihi - 2), hi);
                }
                _ => visit(k, lo, hi),
            }
        }
    }

    /// Largest |h| within the resolution sphere.
    fn h_max(&self) -> i64 {
        (self.rmax * mag(self.real[0])).ceil() as i64
    }
}

/// Predict the reflections of a resolved setup (see the module documentation).
pub fn predict(setup: &Setup, opts: &PredictOptions) -> Result<Prediction> {
    if opts.on_image {
        return rotation::predict_on_image(setup, opts);
    }
    let g = Geometry::new(setup)?;
    let window = opts.max_excitation_error;
    let volume = dot(g.real[0], cross(g.real[1], g.real[2])).abs();
    let ball = 4.0 / 3.0 * PI * g.rmax.powi(3);
    let region = match window {
        Some(w) => ball.min(4.0 * PI * g.k * g.k * 2.0 * (w + g.rmax * g.sweep.abs())),
        None => ball,
    };
    let estimate = region * volume;
    let too_many = |n: f64| {
        Error::geometry(format!(
            "-predict: about {:.0} reciprocal-lattice points lie within the resolution limit \
             of {:.3} Å, more than the {} it lists; give a larger -dmin",
            n,
            1.0 / g.rmax,
            opts.max_points
        ))
        .with_flag("-predict")
    };
    if !(estimate <= 2.0 * opts.max_points as f64 + 1000.0) {
        return Err(too_many(estimate));
    }
    let hm = g.h_max();
    // exact count per row first (position and excitation error only), so that the records are
    // written once, in parallel, into one buffer: at ~10⁵ points their memory, not the
    // arithmetic, is the cost
    let counts: Vec<usize> = (-hm..=hm)
        .into_par_iter()
        .map(|h| {
            let mut n = 0;
            g.row(h, window, |k, lo, hi| {
                n += (lo..=hi)
                    .filter(|&l| g.locate(h, k, l, window).is_some())
                    .count()
            });
            n
        })
        .collect();
    let n: usize = counts.iter().sum();
    if n > opts.max_points {
        return Err(too_many(n as f64));
    }
    let mut reflections: Vec<Reflection> = Vec::with_capacity(n);
    let mut chunks = Vec::with_capacity(counts.len());
    let mut rest = &mut reflections.spare_capacity_mut()[..n];
    for &c in &counts {
        let (chunk, tail) = rest.split_at_mut(c);
        chunks.push(chunk);
        rest = tail;
    }
    chunks.into_par_iter().enumerate().for_each(|(i, chunk)| {
        let h = i as i64 - hm;
        let mut j = 0;
        g.row(h, window, |k, lo, hi| {
            for l in lo..=hi {
                if let Some(r) = g.reflection(h, k, l, window) {
                    // panics (bounds check) rather than overrun if the passes disagreed
                    chunk[j].write(r);
                    j += 1;
                }
            }
        });
        assert_eq!(
            j,
            chunk.len(),
            "prediction: the two passes over row {h} disagree"
        );
    });
    // SAFETY: the chunks tile the first `n` slots and every slot of every chunk was written
    // (each row wrote exactly its count, asserted above; a panic never reaches this line)
    unsafe { reflections.set_len(n) };
    Ok(assemble(setup, &g, reflections))
}

/// Kernel terms (sub-pixels × sources × orientations × sensor layers, summed over the spots)
/// that [`pixel_values`] spends at most: beyond it the orientations, then the sources, are
/// thinned evenly (each kept one standing for the ones left out), then the sub-pixel grid made
/// coarser, so that a prediction stays cheap on every drag of the page (2·10⁶ terms of the f64
/// kernel: about 0.1-0.3 s on one core).
pub const PIXEL_TERMS: u64 = 2_000_000;

/// The record's `intensity` of every reflection in the condition whose spot lands on a panel
/// pixel: the value of that pixel as the f64 kernel renders it (`cpu::pixel64::render_pixel`,
/// the image's own loop and terms: no physics here), without the water background (the spot's
/// own photons). The same pixel of the f64 image holds this value, bit for bit, except where the
/// pixel is masked or out of the ROI (the image records 0 there), where a tricubic table was
/// switched off by an earlier pixel (the image's raster-order rule; here each pixel starts from
/// the plan's interpolation), and where the terms exceed [`PIXEL_TERMS`] (orientations and
/// sources thinned). A spot smaller than a pixel is ranked by what the pixel's sub-pixels catch
/// of it, as the image shows it, not by its peak.
fn pixel_values(plan: &Plan, reflections: &mut [Reflection]) {
    let mut spots: Vec<(&mut Reflection, usize, usize)> = reflections
        .iter_mut()
        .filter(|r| r.in_condition && r.on_detector)
        .filter_map(|r| {
            let (f, s) = (r.fast?.floor() as usize, r.slow?.floor() as usize);
            plan.panel_at(f, s)?;
            Some((r, f, s))
        })
        .collect();
    if spots.is_empty() {
        return;
    }
    let thin = thinned(plan, spots.len() as u64);
    let plan: &Plan = thin.as_ref().unwrap_or(plan);
    let ctx = ExactCtx::new(plan);
    let first = crate::cpu::first_rendered_pixel(plan);
    let interpolate = plan.interpolation == Interpolation::Tricubic;
    spots.par_iter_mut().for_each(|(r, f, s)| {
        let first_sequence = Some(*s * plan.fpixels + *f) == first;
        r.intensity = render_pixel(&ctx, *f, *s, first_sequence, interpolate).value as f64;
    });
}

/// The plan [`pixel_values`] renders with when it differs from the image's: without the water
/// background, and with its orientations, sources and sub-pixels thinned when `spots` pixels
/// would take more than [`PIXEL_TERMS`] terms (`steps` follows, so each pixel stays an average).
fn thinned(plan: &Plan, spots: u64) -> Option<Plan> {
    let per_pixel = plan.terms_per_pixel().max(1);
    let over = (spots.saturating_mul(per_pixel)).div_ceil(PIXEL_TERMS);
    if over <= 1 && plan.i_bg == 0.0 {
        return None;
    }
    let mut p = plan.clone();
    p.i_bg = 0.0;
    if over > 1 {
        // an even selection of `keep` of a list's n entries (each standing for n/keep)
        fn every<T: Copy>(v: &[T], fewer: u64) -> Vec<T> {
            let n = v.len();
            let keep = (n as u64).div_ceil(fewer).max(1) as usize;
            (0..keep).map(|i| v[i * n / keep]).collect()
        }
        p.orientations = every(&plan.orientations, over);
        p.orientations_first = every(&plan.orientations_first, over);
        // what thinning the orientations did not make up, from the sources
        let done = (plan.orientations.len() / p.orientations.len().max(1)).max(1) as u64;
        let left = over.div_ceil(done);
        if left > 1 {
            p.sources = every(&plan.sources, left);
        }
        // then a coarser sub-pixel grid over the same pixel
        let done = (plan.sources.len() / p.sources.len().max(1)).max(1) as u64;
        let left = left.div_ceil(done);
        if left > 1 {
            let n = plan.oversample.max(1) as f64;
            p.oversample = ((n / (left as f64).sqrt()).floor() as u32).max(1);
        }
        // the image's steps in the proportion of the terms kept
        let sub = (p.oversample as f64 / plan.oversample.max(1) as f64).powi(2);
        let kept = sub * (p.sources.len() * p.orientations.len()) as f64
            / (plan.sources.len() * plan.orientations.len()).max(1) as f64;
        p.steps = (plan.steps as f64 * kept).round().max(1.0) as u64;
    }
    Some(p)
}

/// The prediction around its reflections: beam, basis, spindle, detector outline, and the
/// pixel values of the spots in the condition (`pixel_values`).
fn assemble(setup: &Setup, g: &Geometry, mut reflections: Vec<Reflection>) -> Prediction {
    let p = &setup.plan;
    pixel_values(p, &mut reflections);
    let (fp, sp) = (p.fpixels as f64, p.spixels as f64);
    let mut detector_outline = Vec::with_capacity(64);
    for (f0, s0, df, ds) in [
        (0.0, 0.0, fp, 0.0),
        (fp, 0.0, 0.0, sp),
        (fp, sp, -fp, 0.0),
        (0.0, sp, 0.0, -sp),
    ] {
        for i in 0..16 {
            let t = i as f64 / 16.0;
            detector_outline.push(g.position(f0 + df * t, s0 + ds * t));
        }
    }
    Prediction {
        wavelength: setup.lambda0 / M_PER_A,
        beam: g.beam,
        s0: g.s0,
        ewald_radius_range: g.k_range,
        divergence: g.divergence,
        mosaic_spread: g.mosaic,
        a_star: g.recip[0],
        b_star: g.recip[1],
        c_star: g.recip[2],
        spindle: g.spindle,
        phi0: g.phi0 * DEG,
        phi_end: (g.phi0 + g.sweep) * DEG,
        dmin: 1.0 / g.rmax,
        detector_outline,
        fpixels: p.fpixels,
        spixels: p.spixels,
        reflections,
    }
}

/// Which panel a stored-image point is on, with its lab position, d and 2θ.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PixelPanel {
    /// The panel holding the point (index into `Plan::panels`) and its name; None in a gap.
    pub panel: Option<usize>,
    pub panel_name: Option<String>,
    /// The point in the panel's own pixels (fast, slow from its first pixel's outer corner).
    pub panel_pixel: Option<[f64; 2]>,
    /// Lab-frame position (m), on the panel's front face (the first panel's plane in a gap).
    pub position: V3,
    /// Resolution (Å) and 2θ (degrees) at the nominal wavelength and beam.
    pub d: f64,
    pub two_theta: f64,
}

/// The panel at a stored-image point (pixels, centres at index + 0.5): its index and name, the
/// point in the panel's own pixels, the lab position, d and 2θ, from the kernels' mapping
/// (`pixel_geometry` gives the same position, d and 2θ with the Miller indices).
pub fn pixel_panel(setup: &Setup, fast: f64, slow: f64) -> PixelPanel {
    let p = &setup.plan;
    let panel = if fast >= 0.0 && slow >= 0.0 && fast < 1e15 && slow < 1e15 {
        p.panel_at(fast.floor() as usize, slow.floor() as usize)
    } else {
        None
    };
    let pan = &p.panels[panel.unwrap_or(0)];
    let pos = p.panel_point(pan, fast * p.pixel, slow * p.pixel, 0.0);
    let d = unit(pos);
    let k = M_PER_A / setup.lambda0;
    let q = scale(sub(d, unit(p.beam)), k);
    PixelPanel {
        panel,
        panel_name: panel.map(|i| p.panels[i].name.clone()),
        panel_pixel: panel.map(|_| {
            [
                fast - pan.data_origin[0] as f64,
                slow - pan.data_origin[1] as f64,
            ]
        }),
        position: pos,
        d: 1.0 / mag(q),
        two_theta: dot(d, unit(p.beam)).clamp(-1.0, 1.0).acos() * DEG,
    }
}

/// Fractional and nearest Miller indices at a detector point (pixels, centres at index + 0.5):
/// the cursor readout, from the same geometry as `predict`.
pub fn hkl_at_pixel(setup: &Setup, fast: f64, slow: f64) -> Result<PixelHkl> {
    Ok(Geometry::new(setup)?.hkl_at(fast, slow))
}

/// The detector's geometry at points given in pixels (centres at index + 0.5): lab position,
/// d, 2θ and the fractional and nearest Miller indices (`Geometry::hkl_at`), and where the direct
/// beam meets the detector (pixels; `None` when it misses). The one query behind the page's
/// cursor readout, resolution rings and beam centre (wasm `pixel_geometry`, `Geometry`).
pub fn pixel_geometry(
    setup: &Setup,
    points: &[[f64; 2]],
) -> Result<(Vec<PixelHkl>, Option<[f64; 2]>)> {
    let g = Geometry::new(setup)?;
    let at = points.iter().map(|&[f, s]| g.hkl_at(f, s)).collect();
    Ok((at, g.pixel_of_direction(g.beam)))
}

pub mod columns;
pub mod rotation;
pub mod table;
pub use columns::{Column, ColumnarPrediction, Columns};
pub use table::{table, TABLE_HEADER};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{prepare, split_args};
    use crate::files::MemFiles;

    fn setup(args: &str) -> Setup {
        prepare(&split_args(args), &MemFiles::default())
            .unwrap()
            .setup
    }

    /// Beyond `PIXEL_TERMS` the spots' pixels are rendered from evenly thinned orientations and
    /// sources (`steps` in proportion, so a pixel stays an average): the terms fit the budget,
    /// and a spot's thinned value stays near its full value (1000 mosaic domains × 9 sources,
    /// about 1 in 5 kept). Within the budget the image's own plan is used.
    #[test]
    fn thinned_pixels_fit_the_budget_and_keep_the_average() {
        let st = setup(
            "-cell 60 60 60 90 90 90 -misset 10 20 30 -default_F 1 -N 8 -mosaic 0.3 \
             -mosaic_domains 1000 -divergence 0.1 -divsteps 3 -lambda 1 -distance 100 \
             -detpixels 128 -oversample 2",
        );
        let p = &st.plan;
        assert!(thinned(p, 1).is_none());
        let spots = 4 * PIXEL_TERMS / p.terms_per_pixel() + 1;
        let t = thinned(p, spots).unwrap();
        assert!(
            spots * t.terms_per_pixel() <= PIXEL_TERMS,
            "{}",
            t.terms_per_pixel()
        );
        assert!(t.orientations.len() < p.orientations.len());
        let kept = (t.sources.len() * t.orientations.len()) as f64
            / (p.sources.len() * p.orientations.len()) as f64;
        assert!(((t.steps as f64 / p.steps as f64) - kept).abs() < 1e-9);
        // a thousand times the budget: down to one orientation and source, coarser sub-pixels
        let many = thinned(p, 1000 * PIXEL_TERMS / p.terms_per_pixel()).unwrap();
        assert!(many.oversample < p.oversample || many.orientations.len() == 1);
        assert!(1000 * PIXEL_TERMS / p.terms_per_pixel() * many.terms_per_pixel() <= PIXEL_TERMS);
        // the strongest spot's pixel, full and thinned
        let pred = predict(&st, &PredictOptions::default()).unwrap();
        let r = pred
            .reflections
            .iter()
            .filter(|r| r.in_condition && r.on_detector)
            .max_by(|a, b| a.intensity.total_cmp(&b.intensity))
            .unwrap();
        let (f, s) = (r.fast.unwrap() as usize, r.slow.unwrap() as usize);
        let full = render_pixel(&ExactCtx::new(p), f, s, false, false).value as f64;
        let thin = render_pixel(&ExactCtx::new(&t), f, s, false, false).value as f64;
        assert_eq!(full, r.intensity);
        assert!((thin / full - 1.0).abs() < 0.25, "thinned {thin} vs {full}");
    }

    /// `peak` is one quantity for every reflection: the one-term peak estimate, which
    /// `intensity` keeps only outside the condition. Divided by F² · partiality what is left is
    /// polarisation · Ω · capture (within a factor 2 on this small flat detector) for points in
    /// and out of the condition alike, while the pixels' values of the spots in the condition
    /// are far from their peaks (N = 8, 0.1 mm pixels: a peak is not what a pixel records).
    #[test]
    fn peak_is_the_one_term_estimate_for_every_reflection() {
        let st = setup(
            "-cell 60 60 60 90 90 90 -misset 10 20 30 -default_F 1 -N 8 -lambda 1 \
             -distance 100 -detpixels 256",
        );
        let pred = predict(&st, &PredictOptions::default()).unwrap();
        let on = |r: &&Reflection| r.fast.is_some() && r.partiality > 1e-3;
        let norm = |r: &Reflection| r.peak / (r.f * r.f * r.partiality);
        let (mut inside, mut outside, mut differs) = (Vec::new(), Vec::new(), 0);
        for r in pred.reflections.iter().filter(on) {
            if r.in_condition && r.on_detector {
                inside.push(norm(r));
                if (r.intensity / r.peak - 1.0).abs() > 0.1 {
                    differs += 1;
                }
            } else {
                assert_eq!(r.peak, r.intensity, "({} {} {})", r.h, r.k, r.l);
                outside.push(norm(r));
            }
        }
        assert!(
            inside.len() >= 5 && outside.len() >= 5,
            "{} {}",
            inside.len(),
            outside.len()
        );
        assert!(differs * 2 > inside.len(), "{differs} of {}", inside.len());
        let all: Vec<f64> = inside.iter().chain(&outside).copied().collect();
        let (lo, hi) = all
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
        assert!(
            lo > 0.0 && hi / lo < 2.0,
            "peak / (F² partiality) from {lo} to {hi}"
        );
    }

    /// `pixel_of_direction` inverts the kernels' mapping, flat and curved, in every convention.
    #[test]
    fn detector_mapping_round_trips() {
        for extra in [
            "-mosflm",
            "-xds -detector_rotx 5 -twotheta 10",
            "-dials -detector_roty 4",
            "-adxv",
            "-denzo",
            "-fdet_vector 0 0.5 0.8660254 -sdet_vector 0 -0.8660254 0.5 -beam_vector 1 0 0",
            "-mosflm -curved_det -distance 60",
            "-mosflm -curved_det -detector_rotz 3 -twotheta 5",
        ] {
            let st = setup(&format!(
                "-cell 50 60 70 90 90 90 -default_F 1 -detpixels 100 {extra}"
            ));
            let g = Geometry::new(&st).unwrap();
            for &(f, s) in &[(0.5, 0.5), (13.25, 77.5), (99.9, 0.1), (50.0, 50.0)] {
                let d = unit(g.position(f, s));
                let px = g
                    .pixel_of_direction(d)
                    .unwrap_or_else(|| panic!("{extra}: ({f},{s}) not found"));
                assert!(
                    (px[0] - f).abs() < 1e-6 && (px[1] - s).abs() < 1e-6,
                    "{extra}: ({f},{s}) -> {px:?}"
                );
            }
        }
    }

    #[test]
    fn flat_detector_rejects_backward_rays() {
        let st = setup("-cell 50 50 50 90 90 90 -default_F 1 -detpixels 64");
        let g = Geometry::new(&st).unwrap();
        assert_eq!(g.pixel_of_direction([-1.0, 0.0, 0.0]), None);
        assert_eq!(g.pixel_of_direction([0.0, 1.0, 0.0]), None);
    }

    /// The lattice-peak widths match the kernel's lattice factor (MODEL §6.3) along an axis.
    #[test]
    fn shape_widths_match_the_lattice_factor() {
        for (shape, check) in [
            ("-square_xtal", 0),
            ("-round_xtal -fudge 0.8", 0),
            ("-gauss_xtal -fudge 1.5", 1),
            ("-tophat_spots -fudge 1.2", 2),
        ] {
            let st = setup(&format!(
                "-cell 40 40 40 90 90 90 -default_F 1 -N 6 -detpixels 32 {shape}"
            ));
            let g = Geometry::new(&st).unwrap();
            let p = &st.plan;
            // along a*: n_cell = (|a|, 0, 0); the lattice point (3, 0, 0)
            let n = unit(g.recip[0]);
            let n_cell = [dot(g.real[0], n), dot(g.real[1], n), dot(g.real[2], n)];
            let w = g.shape_width(n_cell);
            let at = |t: f64| {
                let x = lattice_f64(
                    p,
                    [3.0 + t * n_cell[0], t * n_cell[1], t * n_cell[2]],
                    [3.0, 0.0, 0.0],
                );
                (x / g.peak_latt).powi(2)
            };
            match check {
                0 => assert!(at(w) < 1e-12 && at(0.9 * w) > 1e-4, "{shape}: {}", at(w)),
                1 => assert!((at(w) - (-4.0f64).exp()).abs() < 1e-9, "{shape}: {}", at(w)),
                _ => assert!(at(0.999 * w) == 1.0 && at(1.001 * w) == 0.0, "{shape}"),
            }
        }
    }

    /// A hand calculation: simple cubic 100 Å, λ = 1 Å, MOSFLM beam along +x, no misset.
    /// (0,0,1): r = (0, 0, 0.01) 1/Å; |r + s0| = sqrt(1 + 1e-4); ε = sqrt(1.0001) − 1;
    /// direction ∝ (1, 0, 0.01): meets the plane x = 0.1 m at z = 1 mm = 10 pixels from the
    /// beam centre, along the fast axis (+z).
    #[test]
    fn simple_cubic_by_hand() {
        let st = setup(
            "-cell 100 100 100 90 90 90 -default_F 7 -N 5 -lambda 1 -distance 100 \
             -pixel 0.1 -detpixels 128 -mosflm",
        );
        let pred = predict(&st, &PredictOptions::default()).unwrap();
        let r = pred
            .reflections
            .iter()
            .find(|r| (r.h, r.k, r.l) == (0, 0, 1))
            .unwrap();
        assert!((r.r[2] - 0.01).abs() < 1e-15 && r.r[0].abs() < 1e-15);
        assert!((r.excitation_error - (1.0001f64.sqrt() - 1.0)).abs() < 1e-13);
        assert!((r.d - 100.0).abs() < 1e-9 && r.f == 7.0);
        // the beam centre: MOSFLM default Xbeam = Ybeam = (12.8 + 0.1)/2 mm, +0.5 px
        let centre = (12.8 + 0.1) / 2.0 / 0.1 + 0.5;
        assert!(
            (r.fast.unwrap() - (centre + 10.0)).abs() < 1e-9,
            "{:?}",
            r.fast
        );
        assert!((r.slow.unwrap() - centre).abs() < 1e-9, "{:?}", r.slow);
        assert!((r.two_theta - 0.01f64.atan() * DEG).abs() < 1e-12);
        assert!(
            r.in_condition,
            "ε = {} tol {}",
            r.excitation_error, r.tolerance
        );
        assert!(pred
            .reflections
            .iter()
            .all(|r| r.d >= pred.dmin * (1.0 - 1e-12)));
    }

    /// Every lattice point within the resolution sphere is listed once, in h, k, l order,
    /// and a window lists exactly the points near the sphere.
    #[test]
    fn enumeration_is_complete() {
        let st = setup(
            "-cell 30 40 50 80 95 105 -misset 10 20 30 -default_F 1 -lambda 1.3 -distance 80 \
             -detpixels 200",
        );
        let g = Geometry::new(&st).unwrap();
        let all = predict(&st, &PredictOptions::default()).unwrap();
        let mut brute = Vec::new();
        let m = 40;
        assert!(
            g.h_max() < m && g.rmax * 50.0 < m as f64,
            "the brute force covers the sphere"
        );
        for h in -m..=m {
            for k in -m..=m {
                for l in -m..=m {
                    if let Some(r) = g.reflection(h, k, l, None) {
                        brute.push((r.h, r.k, r.l));
                    }
                }
            }
        }
        let got: Vec<_> = all.reflections.iter().map(|r| (r.h, r.k, r.l)).collect();
        assert!(got.len() > 500, "{}", got.len());
        assert_eq!(got, brute);
        let w = 2e-3;
        let near = predict(
            &st,
            &PredictOptions {
                max_excitation_error: Some(w),
                ..Default::default()
            },
        )
        .unwrap();
        let want: Vec<_> = all
            .reflections
            .iter()
            .filter(|r| r.excitation_error.abs() <= w)
            .cloned()
            .collect();
        assert!(!want.is_empty());
        assert_eq!(near.reflections, want);
    }

    /// The columns decode to the records' values (rounded to f32).
    #[test]
    fn columns_hold_the_records() {
        let st = setup("-cell 50 60 70 80 90 100 -misset 1 2 3 -default_F 3 -detpixels 64");
        let pred = predict(&st, &PredictOptions::default()).unwrap();
        let c = pred.columns();
        assert_eq!(c.count, pred.reflections.len());
        let f32s = |col: &Column| -> Vec<f32> {
            col.0
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        let (hkl, r, fast, eps) = (
            c.hkl
                .0
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            f32s(&c.r),
            f32s(&c.fast),
            f32s(&c.excitation_error),
        );
        let hkl: Vec<i32> = hkl.collect();
        for (i, x) in pred.reflections.iter().enumerate() {
            assert_eq!(&hkl[3 * i..3 * i + 3], &[x.h, x.k, x.l]);
            assert_eq!(r[3 * i + 2], x.r[2] as f32);
            assert_eq!(eps[i], x.excitation_error as f32);
            match x.fast {
                Some(f) => assert_eq!(fast[i], f as f32),
                None => assert!(fast[i].is_nan()),
            }
            assert_eq!(c.flags.0[i], x.in_condition as u8 + 2 * x.on_detector as u8);
        }
        let col = pred.clone().into_columnar();
        assert!(col.prediction.reflections.is_empty() && col.columns == c);
    }

    #[test]
    fn too_many_points_is_an_error_naming_dmin() {
        let st = setup("-cell 400 400 400 90 90 90 -default_F 1 -lambda 1 -distance 50");
        let e = predict(
            &st,
            &PredictOptions {
                max_points: 1000,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("-dmin"), "{}", e.message);
    }

    /// In a sweep the spot is where the point crosses the sphere.
    #[test]
    fn sweep_spots_are_on_the_sphere() {
        let st = setup(
            "-cell 70 80 90 75 85 95 -misset 15 25 35 -default_F 1 -N 5 -phi 10 -osc 3 \
             -phisteps 6 -detpixels 128",
        );
        let pred = predict(&st, &PredictOptions::default()).unwrap();
        let crossing: Vec<_> = pred
            .reflections
            .iter()
            .filter(|r| r.phi > 10.0 + 1e-9 && r.phi < 12.5 - 1e-9)
            .collect();
        assert!(crossing.len() > 10, "{}", crossing.len());
        for r in crossing {
            assert!(r.excitation_error.abs() < 1e-12, "{r:?}");
            assert!(r.in_condition);
        }
    }
}
