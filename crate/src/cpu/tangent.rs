//! The tangent kernel (MODEL §10): upstream's per-pixel loop in the order of `pixel.rs`
//! (layers, sub-pixels, sources, orientations; first-value factors, the stale-phi first
//! sequence, the raster-order tricubic switch-off), in f64, giving each pixel's value (bit for
//! bit the f64 kernel's, `pixel64`) and, in the same pass, its derivative with respect to every
//! parameter of a [`PlanTangent`]. Every term and its derivative come from `crate::terms`
//! (`*_f64` and `*_f64_d` side by side).
//!
//! Forward mode, arranged so a term costs little more than its value: per term the kernel takes
//! the term's partial derivatives with respect to its own inputs (h, k, l, N, a*, F), adds
//! `∂T/∂(h,k,l)` along the orientation's axes into a vector `G` (∂I/∂q for this q) and, for the
//! parameters that move the orientation table, `∂T/∂h·(δa·q) + …`; the parameters that move q
//! (detector, wavelength) are contracted with `G` once per (sub-pixel, source), and those that
//! move N, a*, default_F or the scale once per pixel.

use super::first_rendered_pixel;
use crate::error::{Error, Result};
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

/// Per-render context: the plan, its tangent, and which parameters move what.
pub(super) struct Ctx<'a> {
    p: &'a Plan,
    t: &'a PlanTangent,
    frames: Vec<PolarFrame>,
    pixel2: f64,
    /// Parameters moving the pixel positions, the wavelengths, the orientation table, N, a*.
    det: Vec<usize>,
    q_params: Vec<usize>,
    ori: Vec<usize>,
    n: Vec<usize>,
    recip: Vec<usize>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(p: &'a Plan, t: &'a PlanTangent) -> Self {
        let which = |f: &dyn Fn(&crate::tangent::PlanDelta) -> bool| -> Vec<usize> {
            (0..t.deltas.len()).filter(|&i| f(&t.deltas[i])).collect()
        };
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
            n: which(&|d| d.moves_n()),
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
}

impl Scratch {
    pub(super) fn new(np: usize) -> Self {
        Scratch {
            di: vec![0.0; np],
            dd: vec![[0.0; 3]; np],
            domega: vec![0.0; np],
            dcapture: vec![0.0; np],
            dpolar: vec![0.0; np],
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
    /// A whole row `s` at once (values into `row`, tangents pixel-major into `trow`, `stride`
    /// per pixel; the pixels it does not render are 0), for the kernels with a row path
    /// (`tangent_row32.rs`); false when the row is left to [`Kernel::pixel`]. Plans with
    /// tricubic interpolation never take it.
    fn row(
        &self,
        _s: usize,
        _row: &mut [f64],
        _trow: &mut [f64],
        _stride: usize,
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

/// One pixel: its value and its tangents (into `out`, one per parameter); `triggered` when a
/// tricubic stencil left the table here.
pub(super) fn pixel(
    c: &Ctx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    sc: &mut Scratch,
    out: &mut [f64],
) -> (f64, bool) {
    let p = c.p;
    let np = c.t.deltas.len();
    let n = p.oversample as usize;
    let sub = p.pixel / p.oversample as f64;
    let mut first_seq = first_sequence;
    let mut interp = interpolate;
    let mut triggered = false;
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
                let pos = p.subpixel_position(sf, ss, odet);
                let (d, r) = unitize(pos);
                // tangents of the direction: pos = f·fdet + s·sdet + odet·o + pix0
                let fd = sub * (sf as f64) + sub / 2.0;
                let sd = sub * (ss as f64) + sub / 2.0;
                for &j in &c.det {
                    let dl = &c.t.deltas[j];
                    let dpos: V3 = std::array::from_fn(|k| {
                        fd * dl.fdet[k] + sd * dl.sdet[k] + odet * dl.odet[k] + dl.pix0[k]
                    });
                    let dr = dot(d, dpos);
                    sc.dd[j] = std::array::from_fn(|k| (dpos[k] - d[k] * dr) / r);
                }
                if omega == 0.0 {
                    let (w, dw_dr, dw_dclose) =
                        solid_angle_f64_d(r, c.pixel2, p.close_distance, p.point_pixel);
                    omega = w;
                    for &j in &c.det {
                        let dl = &c.t.deltas[j];
                        let dpos: V3 = std::array::from_fn(|k| {
                            fd * dl.fdet[k] + sd * dl.sdet[k] + odet * dl.odet[k] + dl.pix0[k]
                        });
                        sc.domega[j] = dw_dr * dot(d, dpos) + dw_dclose * dl.close_distance;
                    }
                }
                if capture == 0.0 {
                    let (v, dv) = capture_fraction_f64_d(t, p.thickstep, p.mu, dot(d, p.odet));
                    capture = v;
                    for j in 0..np {
                        sc.dcapture[j] = 0.0;
                    }
                    for &j in &c.det {
                        let drho = dot(sc.dd[j], p.odet) + dot(d, c.t.deltas[j].odet);
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
                        let (v, g) = polarization_f64_d(p.polar_k, &c.frames[si], d);
                        polar = v;
                        for &j in &c.det {
                            sc.dpolar[j] = dot(g, sc.dd[j]);
                        }
                    }
                    first_seq = false;
                    let mut g = [0.0f64; 3];
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
                        let (dh, dk, dl) = (h - h0, k - k0, l - l0);
                        // F_latt and its partials: by (h,k,l), by N, by a*, b*, c*
                        let mut fl_star = [[0.0; 3]; 3];
                        let (f_latt, fl_hkl, fl_n) = match p.shape {
                            Shape::Square => lattice_square_f64_d(h, k, l, p.na, p.nb, p.nc),
                            Shape::Round => {
                                lattice_round_f64_d(dh, dk, dl, p.na, p.nb, p.nc, p.fudge)
                            }
                            Shape::Gauss | Shape::Tophat => {
                                let (r2, r2_d, r2_n, r2_star) = shape_r2_f64_d(
                                    dh, dk, dl, p.a_star, p.b_star, p.c_star, p.na, p.nb, p.nc,
                                );
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
                        if f_latt == 0.0 && !p.water {
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
                        for &j in &c.ori {
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
    let _ = &c.n;
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
    (val, triggered)
}

/// The image (f64 values: `as f32` they are the f64 kernel's image to the bit) and its tangents.
pub struct TangentImages {
    pub image: Vec<f64>,
    /// `params × pixels`, parameter-major.
    pub tangents: Vec<f64>,
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
/// switch-off: a second pass after the first pixel that triggered it).
pub(super) fn render_with<K: Kernel>(
    p: &Plan,
    t: &PlanTangent,
    c: &K,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<TangentImages> {
    let np = t.deltas.len();
    let (fp, sp) = (p.fpixels, p.spixels);
    let npx = fp * sp;
    let first = first_rendered_pixel(p);
    let interp = p.interpolation == Interpolation::Tricubic;
    let mut image = vec![0f64; npx];
    // parameter-major planes, written row by row: each row's tangents are made pixel-major in
    // a worker's scratch and scattered into the planes' rows there (no whole-image transpose)
    let stride = np.max(1);
    let mut tangents = vec![0f64; npx * np];
    let mut flags = vec![false; npx];
    let rows_done = AtomicUsize::new(0);
    let total_rows = if interp { 2 * sp } else { sp };
    let pass = |image: &mut [f64],
                tangents: &mut [f64],
                flags: &mut [bool],
                after: Option<usize>,
                on: bool| {
        let mut planes: Vec<Vec<&mut [f64]>> = (0..sp).map(|_| Vec::with_capacity(np)).collect();
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
                || (c.scratch(), vec![0f64; fp * stride]),
                |(sc, trow), (s, ((row, prow), frow))| -> Result<()> {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(Error::cancelled());
                    }
                    trow.fill(0.0);
                    // the row's first pixel this pass writes
                    let mut from = 0;
                    if !(after.is_none() && !on && c.row(s, row, trow, stride, first, sc)) {
                        for f in 0..fp {
                            let idx = s * fp + f;
                            if after.is_some_and(|a| idx <= a) {
                                from = f + 1;
                                continue;
                            }
                            if !p.renders(f, s) {
                                continue;
                            }
                            let out = &mut trow[f * stride..f * stride + np];
                            let (v, trig) = c.pixel(f, s, Some(idx) == first, on, sc, out);
                            row[f] = v;
                            frow[f] = trig;
                        }
                    }
                    for (j, pl) in prow.iter_mut().enumerate() {
                        for f in from..fp {
                            pl[f] = trow[f * stride + j];
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
pub fn apply_exact_fixup(
    p: &Plan,
    t: &PlanTangent,
    image: &mut [f32],
    tangents: &mut [f64],
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
            tangents[j * npx + i] = o;
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
        let r = render_with(p, t, c, &|_| {}, cancel)?;
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
            || (c.scratch(), vec![0f64; fp * stride], vec![0f64; np]),
            |(sc, trow, out), (s, (row, acc))| -> Result<()> {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::cancelled());
                }
                if c.row(s, row, trow, stride, first, sc) {
                    for f in 0..fp {
                        let w = weights[s * fp + f];
                        for j in 0..np {
                            acc[j] += w * trow[f * stride + j];
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
