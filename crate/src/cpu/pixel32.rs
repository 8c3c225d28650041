//! The fast kernel (`-precision f32`): the shared per-pixel loop (`pixel.rs`) with fast factors;
//! `row32.rs` is its main path, this file serves the other plans and re-renders flagged pixels.
//! Differences from `pixel64`: the grating function uses the delta form sin(Nπδ)/sin(πδ) with δ = h − round(h) and an
//! f32 sinpi polynomial (no huge sine arguments), polarisation uses cos 2ψ = (E²−B²)/(E²+B²)
//! with per-source constants (no atan2), and the round shape uses a small-argument series.
//! The chain pixel -> position -> direction -> q -> Miller index stays in f64 with upstream's
//! association: on the CPU that is cheaper than double-float pairs, and it keeps h, k, l equal
//! to upstream's to the bit, which matters at exact Bragg positions (see `grating`).

use super::factors::{
    f_nearest, f_tricubic, lattice_f64, outside_interpolation_range, sinc3_f32, sincg, sincg_delta,
};
use super::pixel::Terms;
use super::PixelOut;
use crate::plan::{Plan, Shape};
use crate::vec3::{cross, dot, unit, V3};

/// Per-source constants hoisted out of the pixel loop.
pub struct SourceConst {
    pub incident: V3,
    pub lambda: f64,
    pub inv_lambda: f64,
    pub e_in: V3,
    pub b_in: V3,
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
}

pub struct FastPlan<'a> {
    pub plan: &'a Plan,
    pub soa: OrientationsSoa,
    pub soa_first: OrientationsSoa,
    /// Square lattice without the running-sum flags: the vectorised term loop applies.
    pub vector_path: bool,
    phase1: Phase1Fn,
    /// The row-block kernel (`row32`), when it applies to this plan.
    pub row_block: Option<super::row32::BlockFn>,
    pub sources: Vec<SourceConst>,
    pub na: f32,
    pub nb: f32,
    pub nc: f32,
    /// 1/dmin^2 (1/m^2), 0 = off.
    pub inv_dmin2: f64,
}

impl<'a> FastPlan<'a> {
    pub fn new(plan: &'a Plan) -> Self {
        let sources = plan
            .sources
            .iter()
            .map(|s| {
                let i = unit(s.incident);
                let b_in = unit(cross(unit(plan.polar_axis), i));
                let e_in = unit(cross(i, b_in));
                SourceConst {
                    incident: s.incident,
                    lambda: s.lambda,
                    inv_lambda: 1.0 / s.lambda,
                    e_in,
                    b_in,
                }
            })
            .collect();
        FastPlan {
            plan,
            soa: OrientationsSoa::new(&plan.orientations),
            soa_first: OrientationsSoa::new(&plan.orientations_first),
            vector_path: plan.shape == Shape::Square
                && !plan.oversample_thick
                && !plan.oversample_polar
                && !plan.oversample_omega,
            phase1: select_phase1(),
            row_block: super::row32::applies(plan).then(super::row32::select),
            sources,
            na: plan.na as f32,
            nb: plan.nb as f32,
            nc: plan.nc as f32,
            inv_dmin2: if plan.dmin > 0.0 {
                1.0 / (plan.dmin * plan.dmin)
            } else {
                0.0
            },
        }
    }
}

#[inline]
fn polar_fast(k: f64, s: &SourceConst, d: V3) -> f64 {
    let c2 = dot(s.incident, d);
    let c2sq = c2 * c2;
    let s2sq = 1.0 - c2sq;
    let mut cos2psi = 1.0;
    if k != 0.0 {
        let e = dot(d, s.e_in);
        let b = dot(d, s.b_in);
        let n = e * e + b * b;
        if n > 0.0 {
            cos2psi = (e * e - b * b) / n;
        }
    }
    0.5 * (1.0 + c2sq - k * cos2psi * s2sq)
}

/// Grating factor |sin(Nπh)/sin(πh)| in delta form. Within 1e-9 of a non-zero integer
/// upstream's f64 formula is not the exact limit N: both sines are dominated by the rounding of
/// π·h, and upstream images carry that value (spots on exact Bragg positions can come out
/// brighter than N³). There, and only there, evaluate upstream's formula so images match.
#[inline]
fn grating(h: f64, n: f32) -> f32 {
    let r = h.round();
    let d = h - r;
    if d.abs() < EXACT_BRAGG && r != 0.0 {
        return sincg(std::f64::consts::PI * h, n as f64).abs() as f32;
    }
    sincg_delta(d as f32, n)
}

/// Distance from an integer index below which the grating factor follows upstream's f64 form.
pub const EXACT_BRAGG: f64 = 1e-9;

#[inline]
fn lattice_fast(fp: &FastPlan, h: f64, k: f64, l: f64, h0: f64, k0: f64, l0: f64) -> f32 {
    let p = fp.plan;
    match p.shape {
        Shape::Square => {
            let mut f = 1.0f32;
            if p.na > 1.0 {
                f *= grating(h, fp.na);
            }
            if p.nb > 1.0 {
                f *= grating(k, fp.nb);
            }
            if p.nc > 1.0 {
                f *= grating(l, fp.nc);
            }
            f
        }
        Shape::Round => {
            let (dh, dk, dl) = ((h - h0) as f32, (k - k0) as f32, (l - l0) as f32);
            let hrad2 = dh * dh * fp.na * fp.na + dk * dk * fp.nb * fp.nb + dl * dl * fp.nc * fp.nc;
            fp.na
                * fp.nb
                * fp.nc
                * 0.723_601_254_558_268_f64 as f32
                * sinc3_f32(std::f32::consts::PI * (hrad2 * p.fudge as f32).sqrt())
        }
        Shape::Gauss | Shape::Tophat => lattice_f64(p, h, k, l, h0, k0, l0) as f32,
    }
}

pub fn render_pixel(
    fp: &FastPlan,
    fpixel: usize,
    spixel: usize,
    first_sequence: bool,
    interpolate: bool,
) -> PixelOut {
    let mut unused = super::pixel64::PixelTrace::default();
    super::pixel::render::<FastPlan, false>(
        fp,
        fpixel,
        spixel,
        first_sequence,
        interpolate,
        &mut unused,
    )
}

impl Terms for FastPlan<'_> {
    fn plan(&self) -> &Plan {
        self.plan
    }
    #[inline(always)]
    fn polar(&self, source: usize, d: V3) -> f64 {
        polar_fast(self.plan.polar_k, &self.sources[source], d)
    }
    #[inline(always)]
    fn lattice(&self, h: f64, k: f64, l: f64, h0: f64, k0: f64, l0: f64) -> f64 {
        lattice_fast(self, h, k, l, h0, k0, l0) as f64
    }
    #[inline(always)]
    fn all_orientations(
        &self,
        first: bool,
        q: V3,
        interp: &mut bool,
        triggered: &mut bool,
    ) -> Option<f64> {
        if !self.vector_path {
            return None;
        }
        let soa = if first { &self.soa_first } else { &self.soa };
        Some(square_terms(self, soa, q, interp, triggered))
    }
}

// ------------------------------------------------------------------ vectorised square lattice

/// Orientations per chunk of the two-phase term loop.
const CHUNK: usize = 64;

type Phase1Fn = fn(&FastPlan, &OrientationsSoa, usize, usize, [f64; 3], &mut [f32; CHUNK]) -> bool;

/// Phase 1 over orientations `start..start+len`: squared lattice factor per orientation, in
/// delta form. Branch-free so it vectorises; returns true when some index is within
/// `EXACT_BRAGG` of a non-zero integer (phase 2 then redoes those terms upstream's way).
#[inline(always)]
fn phase1_body(
    fp: &FastPlan,
    soa: &OrientationsSoa,
    start: usize,
    len: usize,
    q: [f64; 3],
    out: &mut [f32; CHUNK],
) -> bool {
    const MAGIC: f64 = 6755399441055744.0; // 1.5 * 2^52: adding and subtracting rounds to an integer
    let c = &soa.comp;
    let ns = [fp.na, fp.nb, fp.nc];
    let use_axis = [fp.plan.na > 1.0, fp.plan.nb > 1.0, fp.plan.nc > 1.0];
    let mut exact = false;
    for j in 0..len {
        let o = start + j;
        // product of numerators and of denominators, one division per orientation
        let (mut num, mut den) = (1.0f32, 1.0f32);
        for axis in 0..3 {
            let h = (c[3 * axis][o] * q[0] + c[3 * axis + 1][o] * q[1]) + c[3 * axis + 2][o] * q[2];
            let r = (h + MAGIC) - MAGIC;
            let d = h - r;
            exact |= use_axis[axis] & (d.abs() < EXACT_BRAGG) & (r != 0.0);
            let (nm, dn) = grating_parts(d as f32, ns[axis]);
            num *= if use_axis[axis] { nm } else { 1.0 };
            den *= if use_axis[axis] { dn } else { 1.0 };
        }
        let g = num / den;
        out[j] = g * g;
    }
    exact
}

/// Numerator and denominator of the delta-form grating factor sin(πNd)/sin(πd), |d| <= 1/2,
/// without branches. Where N·|d| < 1e-5 the factor is N to 2e-10 relative: return (N, 1) so
/// products of three tiny denominators never underflow.
#[inline(always)]
fn grating_parts(d: f32, n: f32) -> (f32, f32) {
    const MAGIC32: f32 = 12582912.0; // 1.5 * 2^23
    let x = n * d;
    let m = (x + MAGIC32) - MAGIC32;
    let r = x - m;
    let num = super::factors::sinpi_reduced(r);
    let den = super::factors::sinpi_reduced(d);
    let small = x.abs() < 1e-5;
    (if small { n } else { num }, if small { 1.0 } else { den })
}

avx2_versions!(
    fn select_phase1 => phase1_body(
        fp: &FastPlan,
        soa: &OrientationsSoa,
        start: usize,
        len: usize,
        q: [f64; 3],
        out: &mut [f32; CHUNK]
    ) -> bool
);

/// Sum of F_cell² · F_latt² over all orientations for one scattering vector (square lattice).
#[inline]
fn square_terms(
    fp: &FastPlan,
    soa: &OrientationsSoa,
    q: [f64; 3],
    interp: &mut bool,
    triggered: &mut bool,
) -> f64 {
    let p = fp.plan;
    let mut fl2 = [0f32; CHUNK];
    let mut sum = 0.0f64;
    let constant_f = p.hkl.hkls == 0;
    let mut start = 0;
    while start < soa.len {
        let len = CHUNK.min(soa.len - start);
        let exact = if len < 4 {
            phase1_body(fp, soa, start, len, q, &mut fl2)
        } else {
            (fp.phase1)(fp, soa, start, len, q, &mut fl2)
        };
        if constant_f && !exact {
            let s: f32 = fl2[..len].iter().sum();
            sum += s as f64 * (p.default_f * p.default_f);
        } else {
            let c = &soa.comp;
            for j in 0..len {
                let o = start + j;
                let hkl = [0, 1, 2].map(|a| {
                    (c[3 * a][o] * q[0] + c[3 * a + 1][o] * q[1]) + c[3 * a + 2][o] * q[2]
                });
                let mut f_latt2 = fl2[j] as f64;
                if exact {
                    // near an exact Bragg position: upstream's formula on upstream's h, k, l
                    let g = [
                        grating(hkl[0], fp.na),
                        grating(hkl[1], fp.nb),
                        grating(hkl[2], fp.nc),
                    ];
                    let mut f = 1.0f64;
                    for (a, n) in [p.na, p.nb, p.nc].iter().enumerate() {
                        if *n > 1.0 {
                            f *= g[a] as f64;
                        }
                    }
                    f_latt2 = f * f;
                }
                if f_latt2 == 0.0 && !p.water {
                    continue;
                }
                let (h, k, l) = (hkl[0], hkl[1], hkl[2]);
                if *interp && outside_interpolation_range(&p.hkl, h, k, l) {
                    *interp = false;
                    *triggered = true;
                }
                let f_cell = if *interp {
                    f_tricubic(&p.hkl, h, k, l)
                } else {
                    f_nearest(
                        p,
                        (h - 0.5).ceil() as i64,
                        (k - 0.5).ceil() as i64,
                        (l - 0.5).ceil() as i64,
                    )
                };
                sum += f_cell * f_cell * f_latt2;
            }
        }
        start += len;
    }
    sum
}
