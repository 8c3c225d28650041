//! The tangent kernel (MODEL §10): upstream's per-pixel loop in the order of `pixel.rs`
//! (layers, sub-pixels, sources, orientations; first-value factors, the stale-phi first
//! sequence, the raster-order tricubic switch-off), in f64, giving each pixel's value (bit for
//! bit the f64 kernel's, `pixel64`) and, in the same pass, its derivative with respect to every
//! parameter of a [`PlanTangent`]. Every term and its derivative come from `crate::terms`
//! (`*_f64` and `*_f64_d` side by side). The loop ([`pixel_with`]) is generic over the terms
//! ([`TermsD`]): the f32 tangent kernel (`tangent32.rs`) runs the same loop on the f32 terms.
//! Each pixel takes its own panel's plane, distance and normal, as the image kernel
//! (`pixel.rs`) does.
//!
//! Forward mode, arranged so a term costs little more than its value: per term the kernel takes
//! the term's partial derivatives with respect to its own inputs (h, k, l, N, a*, F), adds
//! `∂T/∂(h,k,l)` along the orientation's axes into a vector `G` (∂I/∂q for this q); the
//! parameters that move q (detector, wavelength) are contracted with `G` once per (sub-pixel,
//! source), and those that move N, a*, default_F or the scale once per pixel. A parameter that
//! moves the orientation table the same way for every orientation ([`OriForm`], MODEL §10.5:
//! the rotations on the right, contracted with `G`; the cell on the left, contracted with
//! H = Σ ∂T/∂(h,k,l) ⊗ (h,k,l)) is also contracted once per (sub-pixel, source); any other
//! (the mosaic spread), and every one on the first φ sequence's table, per term:
//! `∂T/∂h·(δa·q) + …`.

use super::first_rendered_pixel;
use crate::error::{Error, Result};
use crate::pages::Sample;
use crate::plan::{Interpolation, Plan, Shape};
use crate::tangent::PlanTangent;
use crate::terms::{
    capture_fraction_f64_d, f_nearest, f_nearest_is_default, f_tricubic_at, f_tricubic_d, index_ok,
    lattice_round_f64_d, lattice_square_f64_d, lattice_tophat_f64_d, polarization_f64_d,
    shape_r2_f64_d, solid_angle_f64_d, stencil_leaves_table, PolarFrame,
};
use crate::vec3::{dot, mag, unitize, V3};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the tangent kernel cannot follow; an error naming the flag.
pub fn check_supported(p: &Plan) -> Result<()> {
    let bad = if p.curved {
        Some("-curved_det")
    } else if p.oversample_thick {
        Some("-oversample_thick")
    } else if p.oversample_polar {
        Some("-oversample_polar")
    } else if p.oversample_omega {
        Some("-oversample_omega")
    } else {
        None
    };
    match bad {
        Some(f) => Err(Error::usage(format!(
            "{f}: derivatives are not available with {f} (MODEL §10.1)"
        ))
        .with_flag(f)),
        None => Ok(()),
    }
}

type M3 = [[f64; 3]; 3];

/// How a parameter that moves the orientation table enters the term loops (MODEL §10.5): with
/// A_o the matrix of orientation o (rows a, b, c) and t = ∂I/∂(h, k, l) of a term, the
/// parameter adds Σ_o t·(dA_o q) to the pixel's tangent.
pub(super) enum OriForm {
    /// dA_o = A_o·K: Σ_o t·(dA_o q) = g·(K q).
    Right(M3),
    /// dA_o = C·A_o: Σ_o t·(dA_o q) = Σ C_mn H_mn.
    Left(M3),
    /// Per term: the moved table in structure-of-arrays form (a, b, c components).
    Generic([Vec<f64>; 9]),
}

/// The form of one parameter's moved table `dt` against the table `t` (see [`OriForm`],
/// [`crate::tangent::orientation_move`]).
pub(super) fn ori_form(t: &[crate::plan::Orientation], dt: &[crate::plan::Orientation]) -> OriForm {
    let generic = || {
        let mut comp: [Vec<f64>; 9] = Default::default();
        for i in 0..t.len() {
            let o = dt.get(i).copied().unwrap_or(crate::plan::Orientation {
                a: [0.0; 3],
                b: [0.0; 3],
                c: [0.0; 3],
            });
            for c in 0..3 {
                comp[c].push(o.a[c]);
                comp[3 + c].push(o.b[c]);
                comp[6 + c].push(o.c[c]);
            }
        }
        OriForm::Generic(comp)
    };
    if dt.len() != t.len() {
        return generic();
    }
    use crate::tangent::{orientation_move, rows, OrientationMove};
    let pairs: Vec<(M3, M3)> = t.iter().zip(dt).map(|(o, d)| (rows(o), rows(d))).collect();
    match orientation_move(&pairs) {
        Some(OrientationMove::Right(k)) => OriForm::Right(k),
        Some(OrientationMove::Left(c)) => OriForm::Left(c),
        None => generic(),
    }
}

/// The tangent of a sub-pixel's position (fast, slow, depth coordinates `fd`, `sd`, `odet`):
/// pos = fd·fdet + sd·sdet + odet·o + pix0 moved by the parameter's detector tangent.
#[inline(always)]
pub(super) fn dpos(dl: &crate::tangent::PlanDelta, fd: f64, sd: f64, odet: f64) -> V3 {
    let c = |x: usize| fd * dl.fdet[x] + sd * dl.sdet[x] + odet * dl.odet[x] + dl.pix0[x];
    [c(0), c(1), c(2)]
}

/// True when some form is on the left (the loops then sum H = Σ t ⊗ (h, k, l)).
pub(super) fn needs_h(forms: &[OriForm]) -> bool {
    forms.iter().any(|f| matches!(f, OriForm::Left(_)))
}

/// H += t ⊗ (h, k, l) (row-major).
#[inline(always)]
pub(super) fn add_h(hm: &mut [f64; 9], t: V3, hkl: V3) {
    for a in 0..3 {
        for b in 0..3 {
            hm[3 * a + b] += t[a] * hkl[b];
        }
    }
}

/// The right- and left-hand forms' contributions of one (sub-pixel, source), once its terms
/// are summed: di[j] += g·(K q) or Σ C_mn H_mn (the per-term ones are added in the loop).
pub(super) fn add_forms(
    ori: &[usize],
    forms: &[OriForm],
    g: V3,
    hm: &[f64; 9],
    q: V3,
    di: &mut [f64],
) {
    for (&j, form) in ori.iter().zip(forms) {
        match form {
            OriForm::Right(k) => {
                for x in 0..3 {
                    di[j] += g[x] * (k[x][0] * q[0] + k[x][1] * q[1] + k[x][2] * q[2]);
                }
            }
            OriForm::Left(c) => {
                for a in 0..3 {
                    for b in 0..3 {
                        di[j] += c[a][b] * hm[3 * a + b];
                    }
                }
            }
            OriForm::Generic(_) => {}
        }
    }
}

/// Per-render context: the plan, its tangent, and which parameters move what.
pub(super) struct Ctx<'a> {
    p: &'a Plan,
    t: &'a PlanTangent,
    frames: Vec<PolarFrame>,
    pixel2: f64,
    /// Parameters moving the pixel positions, the wavelengths, the orientation table, a*.
    det: Vec<usize>,
    q_params: Vec<usize>,
    pub(super) ori: Vec<usize>,
    /// The form of each parameter of `ori` on the table `orientations` (the first φ sequence's
    /// table is contracted per term).
    pub(super) forms: Vec<OriForm>,
    pub(super) need_h: bool,
    recip: Vec<usize>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(p: &'a Plan, t: &'a PlanTangent) -> Self {
        let which = |f: &dyn Fn(&crate::tangent::PlanDelta) -> bool| -> Vec<usize> {
            (0..t.deltas.len()).filter(|&i| f(&t.deltas[i])).collect()
        };
        let forms: Vec<OriForm> = which(&|d| d.moves_orientations())
            .into_iter()
            .map(|j| ori_form(&p.orientations, &t.deltas[j].orientations))
            .collect();
        Ctx {
            p,
            t,
            frames: p
                .sources
                .iter()
                .map(|s| PolarFrame::new(s.incident, p.polar_axis))
                .collect(),
            pixel2: p.pixel * p.pixel,
            det: which(&|d| d.moves_detector()),
            q_params: which(&|d| d.moves_detector() || d.moves_lambda()),
            ori: which(&|d| d.moves_orientations()),
            need_h: needs_h(&forms),
            forms,
            recip: which(&|d| d.moves_reciprocal()),
        }
    }
}

/// Scratch space of one worker.
pub(super) struct Scratch {
    di: Vec<f64>,
    dd: Vec<V3>,
    domega: Vec<f64>,
    dcapture: Vec<f64>,
    dpolar: Vec<f64>,
    /// When set ([`vjp_structure_factors`]): each term's (table entry, ∂T/∂F) for the terms
    /// whose F is a table entry (nearest lookup), and the pixel's ∂value/∂(ΣT) after it.
    f_terms: Option<Vec<(usize, f64)>>,
    factor: f64,
}

impl Scratch {
    pub(super) fn new(np: usize) -> Self {
        Scratch {
            di: vec![0.0; np],
            dd: vec![[0.0; 3]; np],
            domega: vec![0.0; np],
            dcapture: vec![0.0; np],
            dpolar: vec![0.0; np],
            f_terms: None,
            factor: 0.0,
        }
    }
}

/// A tangent kernel as the drivers ([`render_with`], [`vjp_with`]) see it: one pixel's value and
/// tangents (into `out`, one per parameter; `triggered` when a tricubic stencil left the table),
/// with its per-row scratch. The f64 kernel (this file's [`Ctx`]) and the f32 one
/// (`tangent32.rs`) share the drivers, so the two differ only in their terms.
pub(super) trait Kernel: Sync {
    type Scratch;
    fn scratch(&self) -> Self::Scratch;
    fn pixel(
        &self,
        fpixel: usize,
        spixel: usize,
        first_sequence: bool,
        interpolate: bool,
        sc: &mut Self::Scratch,
        out: &mut [f64],
    ) -> (f64, bool);
    /// A whole row `s` at once (values into `row`, tangents into `trow`: parameter j's row
    /// into `trow[j]`, f64 for the VJP's sums or the planes' type; the pixels
    /// it does not render are 0), for
    /// the kernels with a row path (`tangent_row32.rs`); false when the row is left to
    /// [`Kernel::pixel`]. Plans with tricubic interpolation never take it.
    fn row<T: Sample>(
        &self,
        _s: usize,
        _row: &mut [f64],
        _trow: &mut [&mut [T]],
        _first: Option<usize>,
        _sc: &mut Self::Scratch,
    ) -> bool {
        false
    }
}

impl Kernel for Ctx<'_> {
    type Scratch = Scratch;
    fn scratch(&self) -> Scratch {
        Scratch::new(self.t.deltas.len())
    }
    fn pixel(
        &self,
        f: usize,
        s: usize,
        first: bool,
        interpolate: bool,
        sc: &mut Scratch,
        out: &mut [f64],
    ) -> (f64, bool) {
        pixel(self, f, s, first, interpolate, sc, out)
    }
}

/// One pixel with the f64 terms: its value and its tangents (into `out`, one per parameter);
/// `triggered` when a tricubic stencil left the table here.
pub(super) fn pixel(
    c: &Ctx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    sc: &mut Scratch,
    out: &mut [f64],
) -> (f64, bool) {
    pixel_with(c, fpixel, spixel, first_sequence, interpolate, sc, out)
        .expect("the f64 terms defer no pixel")
}

/// A lattice factor and its partials: by (h, k, l), by N, by a*, b*, c*; and whether upstream
/// skips the term (its F_latt is 0).
pub(super) type LatticeTerm = (f64, V3, V3, [V3; 3], bool);

/// What distinguishes the f64 and f32 tangent kernels inside their one loop ([`pixel_with`]):
/// each term and its partial derivatives (this file's [`Ctx`]: upstream's f64 forms, `*_f64_d`;
/// `tangent32.rs`: the f32 forms and their derivatives, the GPU's), returned in f64 (an f32
/// value widened exactly, so the f64 sums are those of either kernel's terms).
pub(super) trait TermsD: Sync {
    /// The plan, its tangent and which parameters move what.
    fn ctx(&self) -> &Ctx<'_>;
    /// Solid angle at distance `r` (m) on a panel at `close_distance` (m): Ω, ∂Ω/∂r,
    /// ∂Ω/∂close_distance.
    fn solid_angle(&self, r: f64, close_distance: f64) -> (f64, f64, f64);
    /// Capture fraction of layer `t` for ρ = d·o, and its derivative by ρ.
    fn capture(&self, t: u32, rho: f64) -> (f64, f64);
    /// Kahn polarisation factor of source `source` for the direction `d`, and its gradient.
    fn polar(&self, source: usize, d: V3) -> (f64, V3);
    /// F_latt at (h, k, l) with upstream's nearest indices (h0, k0, l0) and its partials; sets
    /// `exact` where the kernel cannot reproduce upstream's value (the exact-Bragg rule: the
    /// pixel is then the f64 kernel's).
    fn lattice(&self, hkl: V3, hkl0: V3, exact: &mut bool) -> LatticeTerm;
}

impl TermsD for Ctx<'_> {
    #[inline(always)]
    fn ctx(&self) -> &Ctx<'_> {
        self
    }
    #[inline(always)]
    fn solid_angle(&self, r: f64, close_distance: f64) -> (f64, f64, f64) {
        solid_angle_f64_d(r, self.pixel2, close_distance, self.p.point_pixel)
    }
    #[inline(always)]
    fn capture(&self, t: u32, rho: f64) -> (f64, f64) {
        capture_fraction_f64_d(t, self.p.thickstep, self.p.mu, rho)
    }
    #[inline(always)]
    fn polar(&self, source: usize, d: V3) -> (f64, V3) {
        polarization_f64_d(self.p.polar_k, &self.frames[source], d)
    }
    #[inline(always)]
    fn lattice(&self, hkl: V3, hkl0: V3, _exact: &mut bool) -> LatticeTerm {
        let p = self.p;
        let [h, k, l] = hkl;
        let (dh, dk, dl) = (h - hkl0[0], k - hkl0[1], l - hkl0[2]);
        let mut fl_star = [[0.0; 3]; 3];
        let (f_latt, fl_hkl, fl_n) = match p.shape {
            Shape::Square => lattice_square_f64_d(h, k, l, p.na, p.nb, p.nc),
            Shape::Round => lattice_round_f64_d(dh, dk, dl, p.na, p.nb, p.nc, p.fudge),
            Shape::Gauss | Shape::Tophat => {
                let (r2, r2_d, r2_n, r2_star) =
                    shape_r2_f64_d(dh, dk, dl, p.a_star, p.b_star, p.c_star, p.na, p.nb, p.nc);
                let nabc = (p.na * p.nb) * p.nc;
                let (f, f_r2, f_nabc) = if p.shape == Shape::Gauss {
                    crate::terms::lattice_gauss_f64_d(r2, nabc, p.fudge)
                } else {
                    lattice_tophat_f64_d(r2, nabc, p.fudge)
                };
                let nab = [p.nb * p.nc, p.na * p.nc, p.na * p.nb];
                for (a, s) in fl_star.iter_mut().zip(r2_star) {
                    *a = s.map(|x| f_r2 * x);
                }
                (
                    f,
                    r2_d.map(|x| f_r2 * x),
                    std::array::from_fn(|a| f_r2 * r2_n[a] + f_nabc * nab[a]),
                )
            }
        };
        (f_latt, fl_hkl, fl_n, fl_star, f_latt == 0.0)
    }
}

/// The tangent kernels' one per-pixel loop, for the terms of `K` (f64 or f32): the pixel's value
/// and its tangents (into `out`, one per parameter), `triggered` when a tricubic stencil left the
/// table here; None when a term falls under the exact-Bragg rule (the caller takes the f64
/// kernel's pixel). A pixel of no panel is 0.
#[inline(always)]
pub(super) fn pixel_with<K: TermsD>(
    terms: &K,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    sc: &mut Scratch,
    out: &mut [f64],
) -> Option<(f64, bool)> {
    let c = terms.ctx();
    let p = c.p;
    let np = c.t.deltas.len();
    let n = p.oversample as usize;
    let sub = p.pixel / p.oversample as f64;
    // each pixel on its own panel (its plane, distance and normal), as `pixel::render`
    let Some(panel) = p.panel_at(fpixel, spixel).map(|i| &p.panels[i]) else {
        out.iter_mut().for_each(|x| *x = 0.0);
        return Some((0.0, false));
    };
    let mut first_seq = first_sequence;
    let mut interp = interpolate;
    let mut triggered = false;
    let mut exact = false;
    let mut i_sum = p.i_bg;
    let mut polar = if p.nopolar { 1.0 } else { 0.0 };
    let mut omega = 0.0;
    let mut capture = 1.0;
    sc.di.iter_mut().for_each(|x| *x = 0.0);
    sc.domega.iter_mut().for_each(|x| *x = 0.0);
    sc.dcapture.iter_mut().for_each(|x| *x = 0.0);
    sc.dpolar.iter_mut().for_each(|x| *x = 0.0);
    // per-pixel sums of the terms' partial derivatives
    let mut sum_n = [0.0f64; 3];
    let mut sum_star = [[0.0f64; 3]; 3];
    let mut sum_f = 0.0f64;
    for t in 0..p.thicksteps {
        let odet = t as f64 * p.thickstep;
        capture = if p.thick == 0.0 { 1.0 } else { 0.0 };
        for subs in 0..n {
            for subf in 0..n {
                let (sf, ss) = (fpixel * n + subf, spixel * n + subs);
                let pos = p.panel_subpixel_position(panel, sf, ss, odet);
                let (d, r) = unitize(pos);
                // tangents of the direction: pos = f·fdet + s·sdet + odet·o + pix0
                let fd = sub * (sf as f64) + sub / 2.0;
                let sd = sub * (ss as f64) + sub / 2.0;
                for &j in &c.det {
                    let dl = &c.t.deltas[j];
                    let dp = dpos(dl, fd, sd, odet);
                    let dr = dot(d, dp);
                    sc.dd[j] = std::array::from_fn(|k| (dp[k] - d[k] * dr) / r);
                }
                if omega == 0.0 {
                    let (w, dw_dr, dw_dclose) = terms.solid_angle(r, panel.close_distance);
                    omega = w;
                    for &j in &c.det {
                        let dl = &c.t.deltas[j];
                        let dp = dpos(dl, fd, sd, odet);
                        sc.domega[j] = dw_dr * dot(d, dp) + dw_dclose * dl.close_distance;
                    }
                }
                if capture == 0.0 {
                    let (v, dv) = terms.capture(t, dot(d, panel.odet));
                    capture = v;
                    for j in 0..np {
                        sc.dcapture[j] = 0.0;
                    }
                    for &j in &c.det {
                        let drho = dot(sc.dd[j], panel.odet) + dot(d, c.t.deltas[j].odet);
                        sc.dcapture[j] = dv * drho;
                    }
                }
                for (si, src) in p.sources.iter().enumerate() {
                    let i = src.incident;
                    let lambda = src.lambda;
                    let q = [
                        (d[0] - i[0]) / lambda,
                        (d[1] - i[1]) / lambda,
                        (d[2] - i[2]) / lambda,
                    ];
                    let (table, dtable) = if first_seq {
                        (&p.orientations_first, 1)
                    } else {
                        (&p.orientations, 0)
                    };
                    if p.dmin > 0.0 {
                        let stol = 0.5 * mag(q);
                        if stol > 0.0 && p.dmin > 0.5 / stol {
                            continue;
                        }
                    }
                    if polar == 0.0 {
                        let (v, g) = terms.polar(si, d);
                        polar = v;
                        for &j in &c.det {
                            sc.dpolar[j] = dot(g, sc.dd[j]);
                        }
                    }
                    first_seq = false;
                    let mut g = [0.0f64; 3];
                    let mut hm = [0.0f64; 9];
                    for (oi, o) in table.iter().enumerate() {
                        let h = dot(o.a, q);
                        let k = dot(o.b, q);
                        let l = dot(o.c, q);
                        if !(index_ok(h) & index_ok(k) & index_ok(l)) {
                            continue;
                        }
                        let h0 = (h - 0.5).ceil();
                        let k0 = (k - 0.5).ceil();
                        let l0 = (l - 0.5).ceil();
                        // F_latt and its partials: by (h,k,l), by N, by a*, b*, c*
                        let (f_latt, fl_hkl, fl_n, fl_star, zero) =
                            terms.lattice([h, k, l], [h0, k0, l0], &mut exact);
                        if exact {
                            return None;
                        }
                        if zero && !p.water {
                            continue;
                        }
                        // F_cell (MODEL §6.4 and `pixel::structure_factor`) and its partials
                        if interp && stencil_leaves_table(&p.hkl, h, k, l) {
                            interp = false;
                            triggered = true;
                        }
                        let (f_cell, fc_hkl, fc_default) = if interp {
                            (
                                f_tricubic_at(&p.hkl, h, k, l),
                                f_tricubic_d(&p.hkl, h, k, l),
                                0.0,
                            )
                        } else {
                            let v = f_nearest(&p.hkl, p.default_f, h0, k0, l0);
                            let dflt = f_nearest_is_default(&p.hkl, h0, k0, l0);
                            (v, [0.0; 3], if dflt { 1.0 } else { 0.0 })
                        };
                        i_sum += ((f_cell * f_cell) * f_latt) * f_latt;
                        // T = F_cell²·F_latt²
                        let a_fc = 2.0 * f_cell * f_latt * f_latt;
                        let a_fl = 2.0 * f_cell * f_cell * f_latt;
                        if let Some(ft) = sc.f_terms.as_mut() {
                            if !interp && fc_default == 0.0 {
                                let e = p.hkl.index(h0 as i32, k0 as i32, l0 as i32);
                                // consecutive terms mostly read the same entry
                                match ft.last_mut() {
                                    Some(last) if last.0 == e => last.1 += a_fc,
                                    _ => ft.push((e, a_fc)),
                                }
                            }
                        }
                        let t_hkl: V3 =
                            std::array::from_fn(|x| a_fc * fc_hkl[x] + a_fl * fl_hkl[x]);
                        for x in 0..3 {
                            g[x] += t_hkl[0] * o.a[x] + t_hkl[1] * o.b[x] + t_hkl[2] * o.c[x];
                            sum_n[x] += a_fl * fl_n[x];
                        }
                        if !c.recip.is_empty() {
                            for (s, fs) in sum_star.iter_mut().zip(fl_star) {
                                for x in 0..3 {
                                    s[x] += a_fl * fs[x];
                                }
                            }
                        }
                        sum_f += a_fc * fc_default;
                        // the orientation parameters: per term those of no form (and all on
                        // the first φ sequence's table), the others once below
                        if dtable == 0 && c.need_h {
                            add_h(&mut hm, t_hkl, [h, k, l]);
                        }
                        for (&j, form) in c.ori.iter().zip(&c.forms) {
                            if dtable == 0 && !matches!(form, OriForm::Generic(_)) {
                                continue;
                            }
                            let dl = &c.t.deltas[j];
                            let dt = if dtable == 1 {
                                &dl.orientations_first
                            } else {
                                &dl.orientations
                            };
                            if let Some(dor) = dt.get(oi) {
                                sc.di[j] += t_hkl[0] * dot(dor.a, q)
                                    + t_hkl[1] * dot(dor.b, q)
                                    + t_hkl[2] * dot(dor.c, q);
                            }
                        }
                    }
                    if dtable == 0 {
                        add_forms(&c.ori, &c.forms, g, &hm, q, &mut sc.di);
                    }
                    // parameters moving q: dq = (dd − q·dλ)/λ
                    for &j in &c.q_params {
                        let dlam = c.t.deltas[j].lambda.get(si).copied().unwrap_or(0.0);
                        let dd = sc.dd[j];
                        let dq: V3 = std::array::from_fn(|x| (dd[x] - q[x] * dlam) / lambda);
                        sc.di[j] += dot(g, dq);
                    }
                }
            }
        }
    }
    let mut val = (p.r_e_sqr_fluence * i_sum) / p.steps as f64;
    val *= capture;
    val *= polar;
    val *= omega;
    let base = (p.r_e_sqr_fluence * i_sum) / p.steps as f64;
    sc.factor = p.r_e_sqr_fluence / p.steps as f64 * capture * polar * omega;
    for (j, o) in out.iter_mut().enumerate().take(np) {
        let dl = &c.t.deltas[j];
        let mut di = sc.di[j] + dl.i_bg + dl.default_f * sum_f;
        for x in 0..3 {
            di += sum_n[x] * dl.n[x];
        }
        if !c.recip.is_empty() {
            di += dot(sum_star[0], dl.a_star)
                + dot(sum_star[1], dl.b_star)
                + dot(sum_star[2], dl.c_star);
        }
        let dbase = (dl.r_e_sqr_fluence * i_sum + p.r_e_sqr_fluence * di) / p.steps as f64;
        *o = dbase * capture * polar * omega
            + base
                * (sc.dcapture[j] * polar * omega
                    + capture * sc.dpolar[j] * omega
                    + capture * polar * sc.domega[j]);
    }
    Some((val, triggered))
}

/// The image (f64 values: `as f32` they are the f64 kernel's image to the bit) and its tangents
/// (f64 from the f64 kernel, f32 from the f32 one).
pub struct TangentImages<T = f64> {
    pub image: Vec<f64>,
    /// `params × pixels`, parameter-major.
    pub tangents: Vec<T>,
}

/// Render the image and one tangent image per parameter of `t` (rayon over rows). `progress`
/// gets the fraction of rows done; `cancel` is read before each row.
pub fn render(
    p: &Plan,
    t: &PlanTangent,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<TangentImages> {
    check_supported(p)?;
    render_with(p, t, &Ctx::new(p, t), progress, cancel)
}

/// [`render`]'s driver for any [`Kernel`] (rayon over rows; the raster-order tricubic
/// switch-off: a second pass after the first pixel that triggered it), the planes in `T` (f64,
/// or f32 for the f32 kernel: what it computes, at half the memory).
pub(super) fn render_with<K: Kernel, T: Sample>(
    p: &Plan,
    t: &PlanTangent,
    c: &K,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<TangentImages<T>> {
    let np = t.deltas.len();
    let (fp, sp) = (p.fpixels, p.spixels);
    let npx = fp * sp;
    let first = first_rendered_pixel(p);
    let interp = p.interpolation == Interpolation::Tricubic;
    let mut image = vec![0f64; npx];
    // parameter-major planes, written row by row: a row path writes its planes' rows itself,
    // the per-pixel kernel's tangents are scattered into them
    let mut tangents = crate::pages::zeroed::<T>(npx * np);
    let mut flags = vec![false; npx];
    let rows_done = AtomicUsize::new(0);
    let total_rows = if interp { 2 * sp } else { sp };
    let pass = |image: &mut [f64],
                tangents: &mut [T],
                flags: &mut [bool],
                after: Option<usize>,
                on: bool| {
        let mut planes: Vec<Vec<&mut [T]>> = (0..sp).map(|_| Vec::with_capacity(np)).collect();
        for plane in tangents.chunks_mut(npx.max(1)) {
            for (s, r) in plane.chunks_mut(fp).enumerate() {
                planes[s].push(r);
            }
        }
        image
            .par_chunks_mut(fp)
            .zip(planes.par_iter_mut())
            .zip(flags.par_chunks_mut(fp))
            .enumerate()
            .try_for_each_init(
                || (c.scratch(), vec![0f64; np]),
                |(sc, out), (s, ((row, prow), frow))| -> Result<()> {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(Error::cancelled());
                    }
                    // a row path writes the planes' rows itself
                    if !(after.is_none() && !on && c.row(s, row, prow, first, sc)) {
                        for f in 0..fp {
                            let idx = s * fp + f;
                            // a second pass leaves the pixels before `after` as they are
                            if after.is_some_and(|a| idx <= a) || !p.renders(f, s) {
                                continue;
                            }
                            let (v, trig) = c.pixel(f, s, Some(idx) == first, on, sc, out);
                            row[f] = v;
                            frow[f] = trig;
                            for (pl, &o) in prow.iter_mut().zip(out.iter()) {
                                pl[f] = T::from_f64(o);
                            }
                        }
                    }
                    let done = rows_done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(done as f32 / total_rows as f32);
                    Ok(())
                },
            )
    };
    pass(&mut image, &mut tangents, &mut flags, None, interp)?;
    if interp {
        if let Some(star) = flags.iter().position(|&x| x) {
            let mut none = vec![false; npx];
            pass(&mut image, &mut tangents, &mut none, Some(star), false)?;
        }
    }
    progress(1.0);
    Ok(TangentImages { image, tangents })
}

/// The pixels of a GPU render under the exact-Bragg rule (`plan::ExactFixup`, as
/// `cpu::apply_exact_fixup` for images): their values and tangents from this kernel (f64),
/// written into the GPU's `image` and parameter-major `tangents`.
pub fn apply_exact_fixup<T: Sample>(
    p: &Plan,
    t: &PlanTangent,
    image: &mut [f32],
    tangents: &mut [T],
    fixup: &crate::plan::ExactFixup,
) {
    if fixup.pixels.is_empty() {
        return;
    }
    let c = Ctx::new(p, t);
    let np = t.deltas.len();
    let npx = p.pixel_count();
    let mut sc = Scratch::new(np);
    let mut out = vec![0f64; np];
    for &i in &fixup.pixels {
        let (f, s) = (i % p.fpixels, i / p.fpixels);
        let interp = fixup.tricubic && fixup.interp_switch.is_none_or(|q| i <= q);
        let first = Some(i) == fixup.first_pixel;
        let (v, _) = pixel(&c, f, s, first, interp, &mut sc, &mut out);
        image[i] = v as f32;
        for (j, &o) in out.iter().enumerate() {
            tangents[j * npx + i] = T::from_f64(o);
        }
    }
}

/// [`render`] on a list of pixels only (stored indices `slow·fpixels + fast`, any order): their
/// values and tangents (`params × pixels.len()`, parameter-major, in the list's order), each
/// pixel computed as `render` computes it (bit for bit), so that a fit on a few thousand spot
/// pixels of a large detector costs what those pixels cost. Pixels outside the detector are an
/// error, pixels it does not render (mask, ROI, gaps) are 0. Plans with tricubic interpolation
/// take the full render (its raster-order switch-off needs every pixel before).
pub fn render_pixels(
    p: &Plan,
    t: &PlanTangent,
    pixels: &[usize],
    cancel: &AtomicBool,
) -> Result<TangentImages> {
    check_supported(p)?;
    let np = t.deltas.len();
    let npx = p.pixel_count();
    if let Some(&bad) = pixels.iter().find(|&&i| i >= npx) {
        return Err(Error::usage(format!(
            "pixels: index {bad} is outside the {}×{} detector",
            p.fpixels, p.spixels
        )));
    }
    let n = pixels.len();
    if p.interpolation == Interpolation::Tricubic {
        let r = render(p, t, &|_| {}, cancel)?;
        let image = pixels.iter().map(|&i| r.image[i]).collect();
        let mut tangents = vec![0f64; np * n];
        for j in 0..np {
            for (k, &i) in pixels.iter().enumerate() {
                tangents[j * n + k] = r.tangents[j * npx + i];
            }
        }
        return Ok(TangentImages { image, tangents });
    }
    let c = Ctx::new(p, t);
    let fp = p.fpixels;
    let first = first_rendered_pixel(p);
    let stride = np.max(1);
    let mut image = vec![0f64; n];
    let mut tan = vec![0f64; n * stride];
    const CHUNK: usize = 64;
    image
        .par_chunks_mut(CHUNK)
        .zip(tan.par_chunks_mut(CHUNK * stride))
        .zip(pixels.par_chunks(CHUNK))
        .try_for_each(|((vals, tans), idx)| -> Result<()> {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let mut sc = Scratch::new(np);
            for (k, &i) in idx.iter().enumerate() {
                let (f, s) = (i % fp, i / fp);
                if !p.renders(f, s) {
                    continue;
                }
                let out = &mut tans[k * stride..k * stride + np];
                vals[k] = pixel(&c, f, s, Some(i) == first, false, &mut sc, out).0;
            }
            Ok(())
        })?;
    let mut tangents = vec![0f64; np * n];
    for k in 0..n {
        for j in 0..np {
            tangents[j * n + k] = tan[k * stride + j];
        }
    }
    Ok(TangentImages { image, tangents })
}

/// The vector–Jacobian product: Σ_pixels weight·∂value/∂parameter for each parameter of `t`,
/// without keeping a tangent image (rows reduced in order, so the result does not depend on the
/// thread count). Also returns the image. Plans with tricubic interpolation take the full
/// render (the raster-order switch-off needs every pixel first).
pub fn vjp(
    p: &Plan,
    t: &PlanTangent,
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    check_supported(p)?;
    check_weights(p, weights)?;
    vjp_with(p, t, &Ctx::new(p, t), weights, cancel)
}

/// The gradient of a weighted image sum with respect to the structure-factor table (MODEL
/// §10.1): for each entry of `p.hkl.data`, Σ_pixels weight·∂pixel/∂F, where a term whose
/// nearest reflection is that entry contributes ∂T/∂F = 2F·F_latt² times the pixel's factor
/// (r_e²Φ/steps · capture · polarisation · solid angle). Entries no term reads have 0; the
/// terms outside the table take `default_F` (its derivative is the `default_F` parameter's).
/// Rows reduced in order (independent of the thread count). Also returns the image (f64).
/// Nearest lookup only: with tricubic interpolation every term reads 64 entries, not done.
pub fn vjp_structure_factors(
    p: &Plan,
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    check_supported(p)?;
    check_weights(p, weights)?;
    if p.hkl.hkls == 0 {
        return Err(Error::usage(
            "structure-factor gradients: the set-up has no structure-factor table (-hkl, or a \
             model's computed factors): every term takes default_F, whose derivative is the \
             default_F parameter's"
                .to_string(),
        ));
    }
    if p.interpolation == Interpolation::Tricubic {
        return Err(Error::usage(
            "-interpolate: structure-factor gradients are available with the nearest lookup \
             only (-nointerpolate)"
                .to_string(),
        )
        .with_flag("-interpolate"));
    }
    let t = PlanTangent::default();
    let c = Ctx::new(p, &t);
    let fp = p.fpixels;
    let first = first_rendered_pixel(p);
    let mut image = vec![0f64; p.pixel_count()];
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); p.spixels];
    image
        .par_chunks_mut(fp)
        .zip(rows.par_iter_mut())
        .enumerate()
        .try_for_each_init(
            || {
                let mut sc = Scratch::new(0);
                sc.f_terms = Some(Vec::new());
                sc
            },
            |sc, (s, (row, out))| -> Result<()> {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::cancelled());
                }
                for f in 0..fp {
                    let idx = s * fp + f;
                    if !p.renders(f, s) {
                        continue;
                    }
                    if let Some(ft) = sc.f_terms.as_mut() {
                        ft.clear();
                    }
                    row[f] = pixel(&c, f, s, Some(idx) == first, false, sc, &mut []).0;
                    let k = weights[idx] * sc.factor;
                    if k != 0.0 {
                        out.extend(sc.f_terms.iter().flatten().map(|&(e, d)| (e, k * d)));
                    }
                }
                // one sum per entry and row (a row's pixels share their reflections)
                out.sort_by_key(|x| x.0);
                out.dedup_by(|b, a| {
                    let same = a.0 == b.0;
                    if same {
                        a.1 += b.1;
                    }
                    same
                });
                Ok(())
            },
        )?;
    let mut grad = vec![0f64; p.hkl.data.len()];
    for (e, v) in rows.into_iter().flatten() {
        grad[e] += v;
    }
    Ok((image, grad))
}

/// A weight map has one value per pixel of the detector.
pub fn check_weights(p: &Plan, weights: &[f64]) -> Result<()> {
    let npx = p.pixel_count();
    if weights.len() != npx {
        return Err(Error::usage(format!(
            "weights: expected {npx} values (the {}×{} image), got {}",
            p.fpixels,
            p.spixels,
            weights.len()
        )));
    }
    Ok(())
}

/// [`vjp`]'s driver for any [`Kernel`] (`weights` checked by the caller).
pub(super) fn vjp_with<K: Kernel>(
    p: &Plan,
    t: &PlanTangent,
    c: &K,
    weights: &[f64],
    cancel: &AtomicBool,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let np = t.deltas.len();
    let npx = p.pixel_count();
    if p.interpolation == Interpolation::Tricubic {
        let r = render_with::<K, f64>(p, t, c, &|_| {}, cancel)?;
        let g = (0..np)
            .map(|j| {
                r.tangents[j * npx..(j + 1) * npx]
                    .iter()
                    .zip(weights)
                    .map(|(a, w)| a * w)
                    .sum()
            })
            .collect();
        return Ok((r.image, g));
    }
    let fp = p.fpixels;
    let first = first_rendered_pixel(p);
    let mut image = vec![0f64; npx];
    let stride = np.max(1);
    let mut rows = vec![0f64; p.spixels * stride];
    image
        .par_chunks_mut(fp)
        .zip(rows.par_chunks_mut(stride))
        .enumerate()
        .try_for_each_init(
            || (c.scratch(), vec![0f64; fp * np], vec![0f64; np]),
            |(sc, trow, out), (s, (row, acc))| -> Result<()> {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::cancelled());
                }
                let mut trows: Vec<&mut [f64]> = trow.chunks_mut(fp).collect();
                if c.row(s, row, &mut trows, first, sc) {
                    // each parameter's sum in pixel order, as the per-pixel loop below adds
                    let w = &weights[s * fp..(s + 1) * fp];
                    for (j, a) in acc.iter_mut().enumerate().take(np) {
                        for (t, w) in trow[j * fp..(j + 1) * fp].iter().zip(w) {
                            *a += w * t;
                        }
                    }
                    return Ok(());
                }
                for f in 0..fp {
                    let idx = s * fp + f;
                    if !p.renders(f, s) {
                        continue;
                    }
                    let (v, _) = c.pixel(f, s, Some(idx) == first, false, sc, out);
                    row[f] = v;
                    let w = weights[idx];
                    for j in 0..np {
                        acc[j] += w * out[j];
                    }
                }
                Ok(())
            },
        )?;
    let mut g = vec![0f64; np];
    for r in rows.chunks(stride) {
        for j in 0..np {
            g[j] += r[j];
        }
    }
    Ok((image, g))
}
