//! The tangent kernel (MODEL §10): upstream's per-pixel loop in the order of `pixel.rs`
//! (layers, sub-pixels, sources, orientations; first-value factors, the stale-phi first
//! sequence, the raster-order tricubic switch-off), in f64, giving each pixel's value (bit for
//! bit the f64 kernel's, `pixel64`) and, in the same pass, its derivative with respect to every
//! parameter of a [`PlanTangent`]. Every term and its derivative come from `crate::terms`
//! (`*_f64` and `*_f64_d` side by side). The loop is the image kernels' (`pixel::render`, each
//! pixel on its own panel's plane, distance and normal) carrying the tangents ([`Tangents`], a
//! `pixel::Carry`), on the terms of any kernel with their partials (`pixel::FactorsD`:
//! `pixel64`'s f64 ones here, `pixel32`'s f32 ones in `tangent32.rs`) ([`pixel`]).
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
use super::pixel::{structure_factor, Carry, FactorsD, PixelState};
use super::pixel64::{ExactCtx, PixelTrace};
use super::poll::Poll;
use crate::error::{Error, Result};
use crate::pages::Sample;
use crate::plan::Orientation;
use crate::plan::{Interpolation, Plan};
use crate::tangent::PlanTangent;
use crate::terms::{f_nearest_is_default, f_tricubic_d};
use crate::vec3::{dot, V3};
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

/// Per-render context: the plan, its tangent, which parameters move what, and the f64 terms'
/// context (`pixel64::ExactCtx`: the f64 kernel's, and the f32 kernel's exact-Bragg pixels).
pub(super) struct Ctx<'a> {
    p: &'a Plan,
    t: &'a PlanTangent,
    pub(super) ex: ExactCtx<'a>,
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
            ex: ExactCtx::new(p),
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
        pixel(&self.ex, self, f, s, first, interpolate, sc, out)
    }
}

/// The tangent kernels' pixel: the one per-pixel loop (`pixel::render`) on the terms of `K` (the
/// f64 terms, `c.ex`, or the f32 ones) carrying the tangents ([`Tangents`]): the pixel's value
/// and its tangents (into `out`, one per parameter), `triggered` when a tricubic stencil left the
/// table here. A pixel with a term under the exact-Bragg rule (only the f32 terms defer one) is
/// the f64 terms' ([`pixel64`]), as the f32 image kernel's is `pixel64`'s there. A pixel of no
/// panel is 0.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn pixel<K: FactorsD>(
    terms: &K,
    c: &Ctx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    sc: &mut Scratch,
    out: &mut [f64],
) -> (f64, bool) {
    let mut carry = Tangents::new(c, sc, out);
    let px = super::pixel::render::<K, Tangents, false>(
        terms,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &Poll::none(),
        &mut PixelTrace::default(),
        &mut carry,
    )
    .expect("a render without a cancel flag is never cancelled");
    let value = carry.value;
    if px.exact {
        return pixel64(c, fpixel, spixel, first_sequence, interpolate, sc, out);
    }
    (value, px.triggered)
}

/// [`pixel`] with the f64 terms (a function of its own: the f32 kernel's fallback; the f64 terms
/// defer no pixel).
fn pixel64(
    c: &Ctx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    sc: &mut Scratch,
    out: &mut [f64],
) -> (f64, bool) {
    pixel(
        &c.ex,
        c,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        sc,
        out,
    )
}

/// The tangent carry of the per-pixel loop (`pixel::Carry`, MODEL §10.5): each term evaluated
/// with its partials ([`FactorsD`]), `∂T/∂(h,k,l)` summed along the orientation's axes into G
/// (and into H for the left-hand forms) per (sub-pixel, source) and contracted there with the
/// parameters that move q or the orientations by one form, the per-term forms contracted per
/// term, the partials by N, a*, default_F summed per pixel and contracted at its end.
pub(super) struct Tangents<'a, 'b> {
    c: &'b Ctx<'a>,
    sc: &'b mut Scratch,
    out: &'b mut [f64],
    /// The sub-pixel: its coordinates along fdet and sdet, depth, direction, distance.
    fd: f64,
    sd: f64,
    odet: f64,
    d: V3,
    /// Per (sub-pixel, source): G = Σ ∂T/∂q and H = Σ ∂T/∂(h,k,l) ⊗ (h,k,l).
    g: V3,
    hm: [f64; 9],
    /// The current term's partials: F_latt by (h,k,l), N, a*; F_cell by (h,k,l), default_F;
    /// whether F_cell was interpolated.
    fl_hkl: V3,
    fl_n: V3,
    fl_star: [V3; 3],
    fc_hkl: V3,
    fc_default: f64,
    fc_interp: bool,
    /// Per pixel: the sums of the terms' partials by N, a*, default_F.
    sum_n: V3,
    sum_star: [V3; 3],
    sum_f: f64,
    /// The pixel's value (f64).
    value: f64,
}

impl<'a, 'b> Tangents<'a, 'b> {
    fn new(c: &'b Ctx<'a>, sc: &'b mut Scratch, out: &'b mut [f64]) -> Self {
        sc.di.iter_mut().for_each(|x| *x = 0.0);
        sc.domega.iter_mut().for_each(|x| *x = 0.0);
        sc.dcapture.iter_mut().for_each(|x| *x = 0.0);
        sc.dpolar.iter_mut().for_each(|x| *x = 0.0);
        Tangents {
            c,
            sc,
            out,
            fd: 0.0,
            sd: 0.0,
            odet: 0.0,
            d: [0.0; 3],
            g: [0.0; 3],
            hm: [0.0; 9],
            fl_hkl: [0.0; 3],
            fl_n: [0.0; 3],
            fl_star: [[0.0; 3]; 3],
            fc_hkl: [0.0; 3],
            fc_default: 0.0,
            fc_interp: false,
            sum_n: [0.0; 3],
            sum_star: [[0.0; 3]; 3],
            sum_f: 0.0,
            value: 0.0,
        }
    }
}

impl<K: FactorsD> Carry<K> for Tangents<'_, '_> {
    const TANGENTS: bool = true;

    #[inline(always)]
    fn no_panel(&mut self) {
        self.out.iter_mut().for_each(|x| *x = 0.0);
        self.value = 0.0;
    }

    #[inline(always)]
    fn subpixel(&mut self, sf: usize, ss: usize, odet: f64, d: V3, r: f64) {
        let c = self.c;
        let p = c.p;
        let sub = p.pixel / p.oversample as f64;
        // tangents of the direction: pos = f·fdet + s·sdet + odet·o + pix0
        self.fd = sub * (sf as f64) + sub / 2.0;
        self.sd = sub * (ss as f64) + sub / 2.0;
        self.odet = odet;
        self.d = d;
        for &j in &c.det {
            let dp = dpos(&c.t.deltas[j], self.fd, self.sd, odet);
            let dr = dot(d, dp);
            self.sc.dd[j] = std::array::from_fn(|k| (dp[k] - d[k] * dr) / r);
        }
    }

    #[inline(always)]
    fn solid_angle(&mut self, k: &K, r: f64, close_distance: f64) -> f64 {
        let c = self.c;
        let (w, dw_dr, dw_dclose) = k.solid_angle_d(r, close_distance);
        for &j in &c.det {
            let dl = &c.t.deltas[j];
            let dp = dpos(dl, self.fd, self.sd, self.odet);
            self.sc.domega[j] = dw_dr * dot(self.d, dp) + dw_dclose * dl.close_distance;
        }
        w
    }

    #[inline(always)]
    fn capture(&mut self, k: &K, t: u32, d: V3, normal: V3) -> f64 {
        let c = self.c;
        let (v, dv) = k.capture_d(t, dot(d, normal));
        self.sc.dcapture.iter_mut().for_each(|x| *x = 0.0);
        for &j in &c.det {
            let drho = dot(self.sc.dd[j], normal) + dot(d, c.t.deltas[j].odet);
            self.sc.dcapture[j] = dv * drho;
        }
        v
    }

    #[inline(always)]
    fn polar(&mut self, k: &K, source: usize, d: V3) -> f64 {
        let (v, g) = k.polar_d(source, d);
        for &j in &self.c.det {
            self.sc.dpolar[j] = dot(g, self.sc.dd[j]);
        }
        v
    }

    #[inline(always)]
    fn source_start(&mut self) {
        self.g = [0.0; 3];
        self.hm = [0.0; 9];
    }

    #[inline(always)]
    fn lattice(&mut self, k: &K, hkl: V3, hkl0: V3, exact: &mut bool) -> (f64, bool) {
        let (f, fl_hkl, fl_n, fl_star, zero) = k.lattice_d(hkl, hkl0, exact);
        self.fl_hkl = fl_hkl;
        self.fl_n = fl_n;
        self.fl_star = fl_star;
        (f, zero)
    }

    #[inline(always)]
    fn structure_factor(&mut self, p: &Plan, hkl: V3, hkl0: V3, st: &mut PixelState) -> f64 {
        // F_cell (MODEL §6.4, `pixel::structure_factor`) and its partials
        let v = structure_factor(p, hkl, hkl0, st);
        let [h, k, l] = hkl;
        self.fc_interp = st.interp;
        if st.interp {
            self.fc_hkl = f_tricubic_d(&p.hkl, h, k, l);
            self.fc_default = 0.0;
        } else {
            self.fc_hkl = [0.0; 3];
            let dflt = f_nearest_is_default(&p.hkl, hkl0[0], hkl0[1], hkl0[2]);
            self.fc_default = if dflt { 1.0 } else { 0.0 };
        }
        v
    }

    #[inline(always)]
    fn term(
        &mut self,
        o: &Orientation,
        oi: usize,
        first_table: bool,
        q: V3,
        hkl: V3,
        hkl0: V3,
        f_cell: f64,
        f_latt: f64,
    ) {
        let c = self.c;
        let p = c.p;
        // T = F_cell²·F_latt²
        let a_fc = 2.0 * f_cell * f_latt * f_latt;
        let a_fl = 2.0 * f_cell * f_cell * f_latt;
        if let Some(ft) = self.sc.f_terms.as_mut() {
            if !self.fc_interp && self.fc_default == 0.0 {
                let e = p.hkl.index(hkl0[0] as i32, hkl0[1] as i32, hkl0[2] as i32);
                // consecutive terms mostly read the same entry
                match ft.last_mut() {
                    Some(last) if last.0 == e => last.1 += a_fc,
                    _ => ft.push((e, a_fc)),
                }
            }
        }
        let t_hkl: V3 = std::array::from_fn(|x| a_fc * self.fc_hkl[x] + a_fl * self.fl_hkl[x]);
        for x in 0..3 {
            self.g[x] += t_hkl[0] * o.a[x] + t_hkl[1] * o.b[x] + t_hkl[2] * o.c[x];
            self.sum_n[x] += a_fl * self.fl_n[x];
        }
        if !c.recip.is_empty() {
            for (s, fs) in self.sum_star.iter_mut().zip(self.fl_star) {
                for x in 0..3 {
                    s[x] += a_fl * fs[x];
                }
            }
        }
        self.sum_f += a_fc * self.fc_default;
        // the orientation parameters: per term those of no form (and all on the first φ
        // sequence's table), the others once per (sub-pixel, source)
        if !first_table && c.need_h {
            add_h(&mut self.hm, t_hkl, hkl);
        }
        for (&j, form) in c.ori.iter().zip(&c.forms) {
            if !first_table && !matches!(form, OriForm::Generic(_)) {
                continue;
            }
            let dl = &c.t.deltas[j];
            let dt = if first_table {
                &dl.orientations_first
            } else {
                &dl.orientations
            };
            if let Some(dor) = dt.get(oi) {
                self.sc.di[j] +=
                    t_hkl[0] * dot(dor.a, q) + t_hkl[1] * dot(dor.b, q) + t_hkl[2] * dot(dor.c, q);
            }
        }
    }

    #[inline(always)]
    fn source_end(&mut self, source: usize, q: V3, lambda: f64, first_table: bool) {
        let c = self.c;
        if !first_table {
            add_forms(&c.ori, &c.forms, self.g, &self.hm, q, &mut self.sc.di);
        }
        // parameters moving q: dq = (dd − q·dλ)/λ
        for &j in &c.q_params {
            let dlam = c.t.deltas[j].lambda.get(source).copied().unwrap_or(0.0);
            let dd = self.sc.dd[j];
            let dq: V3 = std::array::from_fn(|x| (dd[x] - q[x] * dlam) / lambda);
            self.sc.di[j] += dot(self.g, dq);
        }
    }

    #[inline(always)]
    fn finish(&mut self, i_sum: f64, capture: f64, polar: f64, omega: f64, value: f64) {
        let c = self.c;
        let p = c.p;
        let sc = &mut *self.sc;
        self.value = value;
        let base = (p.r_e_sqr_fluence * i_sum) / p.steps as f64;
        sc.factor = p.r_e_sqr_fluence / p.steps as f64 * capture * polar * omega;
        for (j, o) in self.out.iter_mut().enumerate().take(c.t.deltas.len()) {
            let dl = &c.t.deltas[j];
            let mut di = sc.di[j] + dl.i_bg + dl.default_f * self.sum_f;
            for x in 0..3 {
                di += self.sum_n[x] * dl.n[x];
            }
            if !c.recip.is_empty() {
                di += dot(self.sum_star[0], dl.a_star)
                    + dot(self.sum_star[1], dl.b_star)
                    + dot(self.sum_star[2], dl.c_star);
            }
            let dbase = (dl.r_e_sqr_fluence * i_sum + p.r_e_sqr_fluence * di) / p.steps as f64;
            *o = dbase * capture * polar * omega
                + base
                    * (sc.dcapture[j] * polar * omega
                        + capture * sc.dpolar[j] * omega
                        + capture * polar * sc.domega[j]);
        }
    }
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
        let (v, _) = pixel64(&c, f, s, first, interp, &mut sc, &mut out);
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
                vals[k] = pixel64(&c, f, s, Some(i) == first, false, &mut sc, out).0;
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
                    row[f] = pixel64(&c, f, s, Some(idx) == first, false, sc, &mut []).0;
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
