//! The fast kernel (`-precision f32`): the shared per-pixel loop (`pixel.rs`) with the fast
//! terms of `terms.rs` (the forms the WGSL kernel uses); `row32.rs` is its main path, this file
//! serves the other plans. The chain pixel -> position -> direction -> q -> Miller index stays
//! in f64 with upstream's association: on the CPU that is cheaper than double-float pairs, and
//! it keeps h, k, l equal to upstream's to the bit, so the exact-Bragg rule
//! (`terms::EXACT_BRAGG`) sees the same indices as upstream: a pixel with such a term comes back
//! flagged `exact`, the CPU renderer reports it (`plan::ExactFixup`) and `api::Renderer`
//! evaluates it again with `pixel64`, as for the GPU's. With their f32 partial derivatives
//! (`lattice_square_d`, `lattice_round_d`, `shape_r2_d`, `lattice_gauss_d`, `lattice_tophat_d`,
//! `polarization_d`, `capture_fraction_d`, `solid_angle_d`: [`FactorsD`], whose WGSL twins the
//! GPU tangent kernel calls) the same terms are the f32 tangent kernel's (`tangent32.rs`).

use super::pixel::{structure_factor, Factors, FactorsD, Image, LatticeTerm, PixelState};
use super::poll::Poll;
use super::PixelOut;
use crate::plan::{Plan, Shape};
use crate::terms::{
    capture_fraction, capture_fraction_d, gauss_underflows, index_ok, is_exact_bragg,
    lattice_gauss, lattice_gauss_d, lattice_round, lattice_round_d, lattice_square,
    lattice_square_d, lattice_tophat, lattice_tophat_d, polarization, polarization_d,
    round_even_f64, shape_r2, shape_r2_d, solid_angle, solid_angle_d, PolarFrame,
};
use crate::vec3::V3;

/// Per-source constants hoisted out of the pixel loop.
pub struct SourceConst {
    pub incident: V3,
    pub inv_lambda: f64,
    /// The polarisation frame (`terms::PolarFrame`) rounded to f32.
    pub i: [f32; 3],
    pub e_in: [f32; 3],
    pub b_in: [f32; 3],
}

/// Orientation table in structure-of-arrays form (a.x for every orientation, then a.y, ...),
/// so the per-orientation Miller-index loop vectorises.
pub struct OrientationsSoa {
    pub len: usize,
    pub comp: [Vec<f64>; 9],
}

impl OrientationsSoa {
    fn new(t: &[crate::plan::Orientation]) -> Self {
        let mut comp: [Vec<f64>; 9] = Default::default();
        for o in t {
            for c in 0..3 {
                comp[c].push(o.a[c]);
                comp[3 + c].push(o.b[c]);
                comp[6 + c].push(o.c[c]);
            }
        }
        OrientationsSoa { len: t.len(), comp }
    }

    /// Miller index `axis` (0 = h, 1 = k, 2 = l) of orientation `o` for scattering vector `q`,
    /// with upstream's association.
    #[inline(always)]
    pub fn index(&self, axis: usize, o: usize, q: [f64; 3]) -> f64 {
        let c = &self.comp;
        (c[3 * axis][o] * q[0] + c[3 * axis + 1][o] * q[1]) + c[3 * axis + 2][o] * q[2]
    }
}

fn f32x3(v: V3) -> [f32; 3] {
    v.map(|x| x as f32)
}

/// The fast kernel's per-render context: the plan and what is hoisted out of the pixel loop
/// (f32 constants, SoA orientation tables, the vectorised functions chosen for this CPU). Not
/// part of the `Plan` contract; built by the renderer.
pub struct FastCtx<'a> {
    pub plan: &'a Plan,
    pub soa: OrientationsSoa,
    pub soa_first: OrientationsSoa,
    /// Square lattice without the running-sum flags: the vectorised term loop applies.
    pub vector_path: bool,
    phase1: Phase1Fn,
    /// The row-block kernel (`row32`), when it applies to this plan.
    pub row_block: Option<super::row32::BlockFn>,
    /// The row kernel's hybrid Miller indices, when this render's orientations are close
    /// enough ([`super::row32::HybridIndices::new`]: the per-render decision).
    pub hybrid: Option<super::row32::HybridIndices>,
    pub sources: Vec<SourceConst>,
    pub na: f32,
    pub nb: f32,
    pub nc: f32,
    pub nabc: f32,
    pub fudge: f32,
    pub polar_k: f32,
    pub a_star: [f32; 3],
    pub b_star: [f32; 3],
    pub c_star: [f32; 3],
    pub pixel2: f32,
    /// thickstep·μ (dimensionless per unit ρ).
    pub mu_step: f32,
    /// 1/dmin^2 (1/m^2), 0 = off.
    pub inv_dmin2: f64,
}

impl<'a> FastCtx<'a> {
    pub fn new(plan: &'a Plan) -> Self {
        Self::build(plan, true)
    }

    /// [`FastCtx::new`] for the tangent kernels, whose carry keeps the f64 indices (MODEL
    /// §9.1): no hybrid indices are built.
    pub fn for_tangents(plan: &'a Plan) -> Self {
        Self::build(plan, false)
    }

    fn build(plan: &'a Plan, hybrid: bool) -> Self {
        let sources = plan
            .sources
            .iter()
            .map(|s| {
                let f = PolarFrame::new(s.incident, plan.polar_axis);
                SourceConst {
                    incident: s.incident,
                    inv_lambda: 1.0 / s.lambda,
                    i: f32x3(f.i),
                    e_in: f32x3(f.e_in),
                    b_in: f32x3(f.b_in),
                }
            })
            .collect();
        FastCtx {
            plan,
            soa: OrientationsSoa::new(&plan.orientations),
            soa_first: OrientationsSoa::new(&plan.orientations_first),
            vector_path: plan.shape == Shape::Square
                && !plan.oversample_thick
                && !plan.oversample_polar
                && !plan.oversample_omega,
            phase1: select_phase1(),
            row_block: super::row32::applies(plan).then(super::row32::select),
            hybrid: if hybrid && super::row32::applies(plan) {
                super::row32::HybridIndices::new(plan)
            } else {
                None
            },
            sources,
            na: plan.na as f32,
            nb: plan.nb as f32,
            nc: plan.nc as f32,
            nabc: ((plan.na * plan.nb) * plan.nc) as f32,
            fudge: plan.fudge as f32,
            polar_k: plan.polar_k as f32,
            a_star: f32x3(plan.a_star),
            b_star: f32x3(plan.b_star),
            c_star: f32x3(plan.c_star),
            pixel2: (plan.pixel * plan.pixel) as f32,
            mu_step: (plan.thickstep * plan.mu) as f32,
            inv_dmin2: if plan.dmin > 0.0 {
                1.0 / (plan.dmin * plan.dmin)
            } else {
                0.0
            },
        }
    }

    /// Axes whose grating factor applies (N > 1).
    #[inline(always)]
    pub fn use_axis(&self) -> [bool; 3] {
        [self.plan.na > 1.0, self.plan.nb > 1.0, self.plan.nc > 1.0]
    }
}

/// Fast F_latt (up to sign) and whether upstream skips the term, for the plan's shape.
#[inline]
fn lattice_fast(fc: &FastCtx, hkl: [f64; 3], hkl0: [f64; 3], exact: &mut bool) -> (f32, bool) {
    let p = fc.plan;
    match p.shape {
        Shape::Square => {
            let mut d = [0f32; 3];
            for a in 0..3 {
                let r = round_even_f64(hkl[a]);
                let delta = hkl[a] - r;
                *exact |= fc.use_axis()[a] & is_exact_bragg(delta, r);
                d[a] = delta as f32;
            }
            let f = lattice_square(d[0], d[1], d[2], fc.na, fc.nb, fc.nc);
            (f, f == 0.0)
        }
        _ => {
            let d: [f32; 3] = std::array::from_fn(|a| (hkl[a] - hkl0[a]) as f32);
            match p.shape {
                Shape::Round => {
                    let f = lattice_round(d[0], d[1], d[2], fc.na, fc.nb, fc.nc, fc.fudge);
                    (f, f == 0.0)
                }
                _ => {
                    let r2 = shape_r2(
                        d[0], d[1], d[2], fc.a_star, fc.b_star, fc.c_star, fc.na, fc.nb, fc.nc,
                    );
                    if p.shape == Shape::Gauss {
                        let f = lattice_gauss(r2, fc.nabc, fc.fudge);
                        (f, gauss_underflows(r2, fc.fudge))
                    } else {
                        let f = lattice_tophat(r2, fc.nabc, fc.fudge);
                        (f, f == 0.0)
                    }
                }
            }
        }
    }
}

/// Render one pixel (None when cancelled). A pixel flagged `exact` must be evaluated again with
/// `pixel64` (its value here is not upstream's): the renderer reports it (`plan::ExactFixup`).
pub fn render_pixel(
    fc: &FastCtx,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
    poll: &Poll,
) -> Option<PixelOut> {
    let mut unused = super::pixel64::PixelTrace::default();
    super::pixel::render::<FastCtx, Image, false>(
        fc,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        poll,
        &mut unused,
        &mut Image,
    )
}

impl Factors for FastCtx<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }
    #[inline(always)]
    fn solid_angle(&self, r: f64, close_distance: f64) -> f64 {
        solid_angle(
            (1.0 / r) as f32,
            self.pixel2,
            close_distance as f32,
            self.plan.point_pixel,
        ) as f64
    }
    #[inline(always)]
    fn capture(&self, t: u32, rho: f64) -> f64 {
        capture_fraction(t as f32, self.mu_step, rho as f32) as f64
    }
    #[inline(always)]
    fn polar(&self, source: usize, d: V3) -> f64 {
        let s = &self.sources[source];
        polarization(self.polar_k, s.i, f32x3(d), s.e_in, s.b_in) as f64
    }
    #[inline(always)]
    fn lattice(&self, hkl: [f64; 3], hkl0: [f64; 3], exact: &mut bool) -> (f64, bool) {
        let (f, zero) = lattice_fast(self, hkl, hkl0, exact);
        (f as f64, zero)
    }
    #[inline(always)]
    fn all_orientations(
        &self,
        first: bool,
        q: V3,
        st: &mut PixelState,
        poll: &Poll,
    ) -> Option<f64> {
        if !self.vector_path {
            return None;
        }
        let soa = if first { &self.soa_first } else { &self.soa };
        Some(square_terms(self, soa, q, st, poll))
    }
}

/// A lattice factor and its partials (by δh, δk, δl; by N; by a*, b*, c*) from the f32 terms,
/// and whether the term is skipped (upstream's F_latt is 0); `exact` set by the exact-Bragg
/// rule (square lattice, axes with N > 1).
#[inline(always)]
fn lattice_fast_d(
    fc: &FastCtx,
    d: [f32; 3],
    hkl0: [f64; 3],
    exact: &mut bool,
) -> (f32, [f32; 3], [f32; 3], [[f32; 3]; 3], bool) {
    let n = [fc.na, fc.nb, fc.nc];
    let mut star = [[0.0f32; 3]; 3];
    match fc.plan.shape {
        Shape::Square => {
            for a in 0..3 {
                *exact |= (n[a] > 1.0) & is_exact_bragg(d[a] as f64, hkl0[a]);
            }
            let (f, fd, fnn) = lattice_square_d(d, hkl0.map(|x| x as f32), n);
            (f, fd, fnn, star, f == 0.0)
        }
        Shape::Round => {
            let (f, fd, fnn) = lattice_round_d(d, n, fc.fudge);
            (f, fd, fnn, star, f == 0.0)
        }
        Shape::Gauss | Shape::Tophat => {
            let (r2, r2_d, r2_n, r2_star) = shape_r2_d(d, [fc.a_star, fc.b_star, fc.c_star], n);
            let ([f, f_r2, f_nabc], zero) = if fc.plan.shape == Shape::Gauss {
                (
                    lattice_gauss_d(r2, fc.nabc, fc.fudge),
                    gauss_underflows(r2, fc.fudge),
                )
            } else {
                let v = lattice_tophat_d(r2, fc.nabc, fc.fudge);
                (v, v[0] == 0.0)
            };
            let nab = [n[1] * n[2], n[0] * n[2], n[0] * n[1]];
            for (s, r) in star.iter_mut().zip(r2_star) {
                *s = r.map(|x| f_r2 * x);
            }
            (
                f,
                r2_d.map(|x| f_r2 * x),
                std::array::from_fn(|a| f_r2 * r2_n[a] + f_nabc * nab[a]),
                star,
                zero,
            )
        }
    }
}

/// The f32 terms and their partials, evaluated in f32 on f32 arguments (δ = index − nearest
/// index as in the WGSL kernel, N, a*, the direction, 1/R, ρ) and widened to f64 (the f32
/// tangent kernel's terms).
impl FactorsD for FastCtx<'_> {
    #[inline(always)]
    fn solid_angle_d(&self, r: f64, close_distance: f64) -> (f64, f64, f64) {
        let [w, dw_dr, dw_dclose] = solid_angle_d(
            (1.0 / r) as f32,
            self.pixel2,
            close_distance as f32,
            self.plan.point_pixel,
        );
        (w as f64, dw_dr as f64, dw_dclose as f64)
    }
    #[inline(always)]
    fn capture_d(&self, t: u32, rho: f64) -> (f64, f64) {
        let [v, dv] = capture_fraction_d(t as f32, self.mu_step, rho as f32);
        (v as f64, dv as f64)
    }
    #[inline(always)]
    fn polar_d(&self, source: usize, d: V3) -> (f64, V3) {
        let s = &self.sources[source];
        let (v, g) = polarization_d(self.polar_k, s.i, f32x3(d), s.e_in, s.b_in);
        (v as f64, g.map(|x| x as f64))
    }
    #[inline(always)]
    fn lattice_d(&self, hkl: V3, hkl0: V3, exact: &mut bool) -> LatticeTerm {
        let dlt: [f32; 3] = std::array::from_fn(|a| (hkl[a] - hkl0[a]) as f32);
        let (f, fl_hkl, fl_n, fl_star, zero) = lattice_fast_d(self, dlt, hkl0, exact);
        let w = |v: [f32; 3]| v.map(|x| x as f64);
        (f as f64, w(fl_hkl), w(fl_n), fl_star.map(w), zero)
    }
}

// ------------------------------------------------------------------ vectorised square lattice

/// Orientations per chunk of the two-phase term loop.
const CHUNK: usize = 64;

type Phase1Fn = fn(&FastCtx, &OrientationsSoa, usize, usize, [f64; 3], &mut [f32; CHUNK]) -> bool;

/// Phase 1 over orientations `start..start+len`: squared lattice factor per orientation
/// (`terms::lattice_square`, 0 for an index that fails `terms::index_ok`). Branch-free so it
/// vectorises; returns true when some term falls under the exact-Bragg rule.
#[inline(always)]
fn phase1_body(
    fc: &FastCtx,
    soa: &OrientationsSoa,
    start: usize,
    len: usize,
    q: [f64; 3],
    out: &mut [f32; CHUNK],
) -> bool {
    let use_axis = fc.use_axis();
    let mut exact = false;
    for j in 0..len {
        let o = start + j;
        let mut d = [0f32; 3];
        let mut ok = true;
        let mut ex = false;
        for a in 0..3 {
            let h = soa.index(a, o, q);
            let r = round_even_f64(h);
            let delta = h - r;
            ok &= index_ok(h);
            ex |= use_axis[a] & is_exact_bragg(delta, r);
            d[a] = delta as f32;
        }
        let g = lattice_square(d[0], d[1], d[2], fc.na, fc.nb, fc.nc);
        out[j] = if ok { g * g } else { 0.0 };
        exact |= ex & ok;
    }
    exact
}

simd_versions!(
    fn select_phase1 => phase1_body(
        fc: &FastCtx,
        soa: &OrientationsSoa,
        start: usize,
        len: usize,
        q: [f64; 3],
        out: &mut [f32; CHUNK]
    ) -> bool
);

/// Sum of F_cell² · F_latt² over all orientations for one scattering vector (square lattice).
/// A term under the exact-Bragg rule sets `st.exact` (the value is then not upstream's) and the
/// loop goes on, so that the pixel's tricubic switch-off trigger covers every term. Stops early
/// when the render is cancelled.
#[inline]
fn square_terms(
    fc: &FastCtx,
    soa: &OrientationsSoa,
    q: [f64; 3],
    st: &mut PixelState,
    poll: &Poll,
) -> f64 {
    let p = fc.plan;
    let mut fl2 = [0f32; CHUNK];
    let mut sum = 0.0f64;
    let constant_f = p.hkl.hkls == 0;
    let mut start = 0;
    while start < soa.len {
        let len = CHUNK.min(soa.len - start);
        let exact = if len < 4 {
            phase1_body(fc, soa, start, len, q, &mut fl2)
        } else {
            (fc.phase1)(fc, soa, start, len, q, &mut fl2)
        };
        st.exact |= exact;
        if constant_f {
            let s: f32 = fl2[..len].iter().sum();
            sum += s as f64 * (p.default_f * p.default_f);
        } else {
            for j in 0..len {
                let o = start + j;
                let f_latt2 = fl2[j] as f64;
                if f_latt2 == 0.0 && !p.water {
                    continue;
                }
                let [h, k, l] = [0, 1, 2].map(|a| soa.index(a, o, q));
                if !(index_ok(h) & index_ok(k) & index_ok(l)) {
                    continue;
                }
                let hkl0 = [h, k, l].map(|x| (x - 0.5).ceil());
                let f_cell = structure_factor(p, [h, k, l], hkl0, st);
                sum += f_cell * f_cell * f_latt2;
            }
        }
        start += len;
        if poll.tick(len as u64) {
            break;
        }
    }
    sum
}
