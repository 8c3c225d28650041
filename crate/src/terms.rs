//! The terms of the per-pixel sum, one home for each: lattice factor (all shapes, MODEL §6.3),
//! structure factor (nearest and tricubic, §6.4), polarisation (§5.6), capture fraction (§6.6),
//! solid angle (§3.9), and the rules that guard them (exact Bragg, non-finite indices). Every
//! CPU kernel (`pixel.rs` with `pixel64`/`pixel32`, `row32`) calls only these, and
//! `shaders/shared/terms.wgsl` mirrors this file function for function: same names, same
//! argument order, same operations in the same association. `crate/tests/gpu_selftest.rs` runs
//! each WGSL function through the compiled shader against the function here.
//!
//! Three families live side by side:
//!
//! * **fast** (f32; the forms of MODEL §9.2 and §9.5): `sinpi`, `grating_parts`, `lattice_*`,
//!   `sinc3_pi`, `polarization`, `capture_fraction`, `solid_angle`. Used by the f32 CPU kernels
//!   and, as their WGSL twins, by the GPU kernel. One sinpi polynomial, one sinc3 cut-over, one
//!   absorption form.
//! * **upstream** (f64, suffix `_f64`): upstream's formulas with its operations, association and
//!   the platform libm (MODEL §9.7), used only by the parity kernel `pixel64`, whose images are
//!   bit-identical to upstream's. They cannot be the fast forms: upstream evaluates `sin(π·h·N)`
//!   on the full index (near an exact Bragg position the value it prints is a rounding artefact
//!   of π·h), `atan2`/`cos` for the polarisation angle and a difference of two `exp` for the
//!   capture fraction, and the images carry those roundings to the last bit. The fast forms are
//!   exact identities of the same quantities (MODEL §9.2, §9.5) that stay accurate in f32.
//! * **shared** (the same function for both precisions; the WGSL twin is in f32 on df64
//!   indices): the structure-factor lookups (`f_nearest`, `f_tricubic` with upstream's
//!   4-point Lagrange form, `stencil_leaves_table`), the polarisation frame, the index guard
//!   (`index_ok`) and the exact-Bragg rule (`is_exact_bragg`).
//!
//! The partials (`*_d`, `*_f64_d`, MODEL §10.5) are hand-written beside each term, and held
//! against the term's own value function by forward-mode dual numbers (`num_dual`, a
//! dev-dependency) across the term's domain (`dual_tests`): the value functions that have a
//! hand-written partial are written once, generic over [`Real`] (module [`value`]: f32/f64 in
//! the kernels, monomorphised to the same code, so the same bits and speed; dual numbers in the
//! tests), and the concrete terms call them. The hand-written forms stay where the dual form
//! loses digits (the grating factor's reduced-argument d/dδ near a spot's centre, whose quotient
//! rule cancels: N·ε/|sin πδ|; the sinc3 series near 0) and where the kernels vectorise them
//! over pixels (the row kernels' f32 partials, twinned in WGSL); the tests hold each one.
//!
//! Where the two languages cannot spell an operation the same way, the difference is stated at
//! the function (`round_even`, `index_ok`); the device's own `exp` and division are accurate to
//! a few ulp (WGSL spec), which bounds how far the twins may differ (see the self-test).

use crate::plan::HklGrid;
use crate::vec3::{cross, dot, unit, V3};
use std::f64::consts::PI;
use std::ops::{Add, Div, Mul, Neg, Sub};

// ------------------------------------------------------------------------ value functions

/// The numbers a term's value function is written over: `f32` and `f64` in the kernels (the
/// `value` functions below, monomorphised, are the very code of the concrete terms: the same
/// operations in the same order, so the same bits and speed) and, in the tests, forward-mode
/// dual numbers (`num_dual`), which derive each term's partials from that same code to hold the
/// hand-written `*_d` forms against (`crate::terms::tests::partials_against_dual_numbers`).
/// Comparisons (the terms' branches) are on the real part.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A constant of the fast (f32) family, exact in every implementation.
    fn c32(x: f32) -> Self;
    /// A constant of the upstream (f64) family.
    fn c64(x: f64) -> Self;
    fn exp(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
}

impl Real for f32 {
    #[inline(always)]
    fn c32(x: f32) -> Self {
        x
    }
    #[inline(always)]
    fn c64(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn exp(self) -> Self {
        f32::exp(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        f32::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f32::cos(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
}

impl Real for f64 {
    #[inline(always)]
    fn c32(x: f32) -> Self {
        x as f64
    }
    #[inline(always)]
    fn c64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn exp(self) -> Self {
        f64::exp(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f64::cos(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
}

/// The value functions of the terms whose partials have a hand-written form, generic over
/// [`Real`]; the concrete terms of this file (same names, fixed precision) call them. Each is
/// the term's formula once: for f32/f64 the kernels' code, for dual numbers its derivatives.
pub mod value {
    use super::Real;

    /// [`super::lattice_gauss`].
    #[inline(always)]
    pub fn lattice_gauss<T: Real>(r2: T, nabc: T, fudge: T) -> T {
        nabc * (-(r2 / T::c32(0.63) * fudge)).exp()
    }

    /// [`super::shape_r2`] (`star` = [a*, b*, c*]).
    #[inline(always)]
    pub fn shape_r2<T: Real>(d: [T; 3], star: [[T; 3]; 3], n: [T; 3]) -> T {
        let v: [T; 3] =
            std::array::from_fn(|c| d[0] * star[0][c] + d[1] * star[1][c] + d[2] * star[2][c]);
        (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * n[0] * n[0] * n[1] * n[1] * n[2] * n[2]
    }

    /// [`super::polarization`].
    #[inline(always)]
    pub fn polarization<T: Real>(k: T, i: [T; 3], d: [T; 3], e_in: [T; 3], b_in: [T; 3]) -> T {
        let dot3 = |x: [T; 3], y: [T; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
        let zero = T::c32(0.0);
        let one = T::c32(1.0);
        let c2 = dot3(i, d);
        let c2sq = c2 * c2;
        let s2sq = one - c2sq;
        let mut cos2psi = one;
        if k != zero {
            let e = dot3(d, e_in);
            let b = dot3(d, b_in);
            let den = e * e + b * b;
            if den > zero {
                cos2psi = (e * e - b * b) / den;
            }
        }
        T::c32(0.5) * (one + c2sq - k * cos2psi * s2sq)
    }

    /// [`super::one_minus_exp_neg`].
    #[inline(always)]
    pub fn one_minus_exp_neg<T: Real>(x: T) -> T {
        let c = T::c32;
        if x.abs() < c(0.1) {
            let mut p = c(1.0 / 5040.0);
            p = c(1.0 / 720.0) - x * p;
            p = c(1.0 / 120.0) - x * p;
            p = c(1.0 / 24.0) - x * p;
            p = c(1.0 / 6.0) - x * p;
            p = c(0.5) - x * p;
            return x * (c(1.0) - x * p);
        }
        c(1.0) - (-x).exp()
    }

    /// [`super::capture_fraction`].
    #[inline(always)]
    pub fn capture_fraction<T: Real>(t: T, mu_step: T, rho: T) -> T {
        let x = mu_step / rho;
        (-t * x).exp() * one_minus_exp_neg(x)
    }

    /// [`super::solid_angle`].
    #[inline(always)]
    pub fn solid_angle<T: Real>(inv_r: T, pixel2: T, close_distance: T, point_pixel: bool) -> T {
        if point_pixel {
            inv_r * inv_r
        } else {
            pixel2 * close_distance * (inv_r * inv_r * inv_r)
        }
    }

    /// [`super::sincg_f64`].
    #[inline(always)]
    pub fn sincg_f64<T: Real>(x: T, n: T) -> T {
        if x == T::c64(0.0) {
            n
        } else {
            (x * n).sin() / x.sin()
        }
    }

    /// [`super::sinc3_f64`].
    #[inline(always)]
    pub fn sinc3_f64<T: Real>(x: T) -> T {
        if x == T::c64(0.0) {
            T::c64(1.0)
        } else {
            T::c64(3.0) * (x.sin() / x - x.cos()) / (x * x)
        }
    }

    /// [`super::lattice_round_f64`].
    #[inline(always)]
    pub fn lattice_round_f64<T: Real>(d: [T; 3], n: [T; 3], fudge: T) -> T {
        let [dh, dk, dl] = d;
        let [na, nb, nc] = n;
        let hrad2 = ((dh * dh) * na) * na + ((dk * dk) * nb) * nb + ((dl * dl) * nc) * nc;
        ((na * nb) * nc)
            * T::c64(0.723601254558268)
            * sinc3_f64(T::c64(std::f64::consts::PI) * (hrad2 * fudge).sqrt())
    }

    /// [`super::shape_r2_f64`] (`star` = [a*, b*, c*]).
    #[inline(always)]
    pub fn shape_r2_f64<T: Real>(d: [T; 3], star: [[T; 3]; 3], n: [T; 3]) -> T {
        let [dh, dk, dl] = d;
        let [na, nb, nc] = n;
        let v: [T; 3] =
            std::array::from_fn(|c| (dh * star[0][c] + dk * star[1][c]) + dl * star[2][c]);
        ((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2]) * na * na * nb * nb * nc * nc
    }

    /// [`super::lattice_gauss_f64`].
    #[inline(always)]
    pub fn lattice_gauss_f64<T: Real>(r2: T, nabc: T, fudge: T) -> T {
        nabc * (-(r2 / T::c64(0.63) * fudge)).exp()
    }

    /// [`super::capture_fraction_f64`] (the layer index `t` as a number).
    #[inline(always)]
    pub fn capture_fraction_f64<T: Real>(t: T, thickstep: T, mu: T, rho: T) -> T {
        ((((-t) * thickstep) * mu) / rho).exp()
            - ((((-(t + T::c64(1.0))) * thickstep) * mu) / rho).exp()
    }

    /// [`super::solid_angle_f64`].
    #[inline(always)]
    pub fn solid_angle_f64<T: Real>(r: T, pixel2: T, close_distance: T, point_pixel: bool) -> T {
        let one = T::c64(1.0);
        if point_pixel {
            (one / r) / r
        } else {
            ((pixel2 / r) / r) * close_distance / r
        }
    }

    /// [`super::polint4`].
    #[inline(always)]
    pub fn polint4<T: Real>(dx: [T; 4], y: [T; 4]) -> T {
        let c = T::c64;
        ((dx[1] * dx[2]) * dx[3]) * y[0] / c(-6.0)
            + ((dx[0] * dx[2]) * dx[3]) * y[1] / c(2.0)
            + ((dx[0] * dx[1]) * dx[3]) * y[2] / c(-2.0)
            + ((dx[0] * dx[1]) * dx[2]) * y[3] / c(6.0)
    }
}

// ------------------------------------------------------------------------------------ guards

/// Largest |Miller index| a kernel evaluates. An index that is NaN, infinite or not below this
/// (no table reaches it, no i32 holds it) makes its term contribute nothing: the term is dropped
/// as a skipped term is (no structure-factor lookup, no tricubic switch-off, no running-sum
/// multiply). Upstream would index its table with an undefined integer there.
pub const INDEX_LIMIT: f64 = 2147483648.0;

/// True when `h` is a usable Miller index (finite, |h| < [`INDEX_LIMIT`]); false for NaN.
/// WGSL: the same comparison on the bits of |h| (a shader compiler may assume NaN away).
#[inline(always)]
pub fn index_ok(h: f64) -> bool {
    h.abs() < INDEX_LIMIT
}

/// Distance from a non-zero integer index within which the fast grating factor does not
/// reproduce upstream's (MODEL §9.2): there upstream's f64 `sin(N·π·h)/sin(π·h)` is dominated
/// by the rounding of π·h rather than by the true limit N (spots exactly on Bragg positions come
/// out brighter than N³ in upstream images), and only upstream's own f64 arithmetic on upstream's
/// own bits of h gives that value. The one rule, in every fast kernel (f32 per-pixel, row path,
/// GPU): a pixel with such a term on an axis with N > 1 is rendered again by the f64 kernel
/// (`pixel64`). This happens only in symmetric set-ups, for a handful of pixels.
pub const EXACT_BRAGG: f64 = 1e-9;

/// The exact-Bragg rule: `delta = h − nearest` with `nearest` the integer closest to h.
#[inline(always)]
pub fn is_exact_bragg(delta: f64, nearest: f64) -> bool {
    (delta.abs() < EXACT_BRAGG) & (nearest != 0.0)
}

// ------------------------------------------------------------------------------- fast: sinpi

/// Round to the nearest integer, ties to even, for |x| < 2^22 (adding and subtracting
/// 1.5·2^23 rounds in the f32 adder; vectorises without SSE4.1). WGSL: `round(x)` (ties to even
/// by the spec); a shader compiler may fold the add/subtract pair away, so it is not spelled
/// this way there.
#[inline(always)]
pub fn round_even(x: f32) -> f32 {
    const MAGIC32: f32 = 12582912.0; // 1.5 * 2^23
    (x + MAGIC32) - MAGIC32
}

/// f64 twin of [`round_even`] for |x| < 2^51 (used on f64 Miller indices by the CPU kernels).
#[inline(always)]
pub fn round_even_f64(x: f64) -> f64 {
    const MAGIC: f64 = 6755399441055744.0; // 1.5 * 2^52
    (x + MAGIC) - MAGIC
}

/// sin(π r) for |r| ≤ 1/2: r·P(r²), P the Taylor series of sin(πr)/r to r¹² (truncation below
/// 1e-9 at r = 1/2). Evaluated in f32: within 3.7 ulp of sin(πr) on [−1/2, 1/2], and relative
/// accuracy is kept for tiny r (the grating denominators).
#[inline(always)]
pub fn sinpi_poly(r: f32) -> f32 {
    let z = r * r;
    let mut p = 0.000_466_302_8 * z - 0.007_370_431;
    p = p * z + 0.082_145_89;
    p = p * z - 0.599_264_5;
    p = p * z + 2.550_164;
    p = p * z - 5.167_712_7;
    p = p * z + std::f32::consts::PI;
    r * p
}

/// cos(π r) for |r| ≤ 1/2: 1 + r²·Q(r²), Q the Taylor series to r¹⁴.
#[inline(always)]
pub fn cospi_poly(r: f32) -> f32 {
    let z = r * r;
    let mut q = -0.000_104_638_11 * z + 0.001_929_574_3;
    q = q * z - 0.025_806_89;
    q = q * z + 0.235_330_63;
    q = q * z - 1.335_262_8;
    q = q * z + 4.058_712;
    q = q * z - 4.934_802;
    1.0 + z * q
}

/// Whether the integer `m` (an f32 holding an integer) is odd.
#[inline(always)]
fn is_odd(m: f32) -> bool {
    m - 2.0 * (0.5 * m).floor() != 0.0
}

/// sin(π x) for |x| < 2^22: x = m + r with m = round_even(x), r exact, sin(πx) = (−1)^m sin(πr).
#[inline(always)]
pub fn sinpi(x: f32) -> f32 {
    let m = round_even(x);
    let s = sinpi_poly(x - m);
    if is_odd(m) {
        -s
    } else {
        s
    }
}

/// cos(π x) for |x| < 2^22, reduced like [`sinpi`].
#[inline(always)]
pub fn cospi(x: f32) -> f32 {
    let m = round_even(x);
    let c = cospi_poly(x - m);
    if is_odd(m) {
        -c
    } else {
        c
    }
}

// --------------------------------------------------------------------- fast: lattice factors

/// Below this |N·δ| the grating factor is N to 2e-10 relative.
pub const GRATING_SMALL: f32 = 1e-5;

/// Numerator and denominator of the delta-form grating factor |sin(πNδ)/sin(πδ)| (MODEL §9.2),
/// δ = h − (an integer nearest h), |δ| ≤ 1/2, N an integer: sin(πNh)/sin(πh) equals
/// ±sin(πNδ)/sin(πδ) exactly, and only the square is used, so the sign (−1)^m of the reduced
/// numerator is dropped. Where N·|δ| < [`GRATING_SMALL`] (δ = 0 included) the pair is (N, 1):
/// the factor is N there to 2e-10, and products of three tiny denominators never underflow.
/// Branch-free, so that loops over it vectorise.
#[inline(always)]
pub fn grating_parts(d: f32, n: f32) -> [f32; 2] {
    let x = n * d;
    let r = x - round_even(x);
    let small = x.abs() < GRATING_SMALL;
    let num = sinpi_poly(r);
    let den = sinpi_poly(d);
    [if small { n } else { num }, if small { 1.0 } else { den }]
}

/// The grating factor |sin(πNδ)/sin(πδ)| itself (up to sign).
#[inline(always)]
pub fn sincg_delta(d: f32, n: f32) -> f32 {
    let p = grating_parts(d, n);
    p[0] / p[1]
}

/// The polynomial P of [`sinpi_poly`] (sin(πr) = r·P(r²), the same Horner steps): one
/// evaluation gives both sin(πr) (`r * P`, bit for bit [`sinpi_poly`]) and sin(πr)/(πr) (`P/π`).
#[inline(always)]
fn sinpi_p(r: f32) -> f32 {
    let z = r * r;
    let mut p = 0.000_466_302_8 * z - 0.007_370_431;
    p = p * z + 0.082_145_89;
    p = p * z - 0.599_264_5;
    p = p * z + 2.550_164;
    p = p * z - 5.167_712_7;
    p * z + std::f32::consts::PI
}

/// sin(πr)/(πr) for |r| ≤ 1/2: the polynomial of [`sinpi_poly`] without its factor r, times
/// 1/π (1 at r = 0, no division).
#[inline(always)]
pub fn sinc_pi_poly(r: f32) -> f32 {
    sinpi_p(r) * std::f32::consts::FRAC_1_PI
}

/// [`grating_parts`] and [`sincg_delta_d`] from one set of polynomials (the parts bit for bit
/// [`grating_parts`]'s): each sine and cosine of the reduced arguments once. `DN` false leaves
/// d/dN out (0), for the kernels' plans where no parameter moves N.
#[inline(always)]
fn grating_d<const DN: bool>(d: f32, n: f32, m: f32) -> ([f32; 2], [f32; 3]) {
    use std::f32::consts::{FRAC_1_PI, PI};
    let x = n * d;
    let r = x - round_even(x);
    let small = x.abs() < GRATING_SMALL;
    let pn = sinpi_p(r);
    let p1 = sinpi_p(d);
    // (−1)^j sin(πNδ) with j = round(Nδ), and sin(πδ): grating_parts' numerator and denominator
    let num = r * pn;
    let den = d * p1;
    let parts = [if small { n } else { num }, if small { 1.0 } else { den }];
    let v = parts[0] / parts[1];
    // (−1)^j cos(πNδ)
    let c = cospi_poly(r);
    let u = PI * x;
    // (−1)^j S(πNδ), (−1)^j T(πNδ) (the series of `sinc3_pi` below |u| = 1, where j = 0), S(πδ),
    // T(πδ)
    let s_n = if x.abs() < 0.5 {
        pn * FRAC_1_PI
    } else {
        num / u
    };
    // below |u| = 1 `sinc3_pi(x)` is its series (its closed form is not evaluated here)
    let t_n = if u.abs() < 1.0 {
        sinc3_series(u)
    } else {
        3.0 * (num / u - c) / (u * u)
    };
    let s_1 = p1 * FRAC_1_PI;
    // T(πδ) from the series alone: |πδ| ≤ π/2, where the first term left out is below 1e-8 of
    // the value (no sine, cosine or division of its closed form)
    let t_1 = sinc3_series(PI * d);
    let dd = PI * (n * (PI * d) * (1.0 / 3.0)) * (s_n * t_1 - (n * n) * t_n * s_1) / (s_1 * s_1);
    let dn = if !DN {
        0.0
    } else if m == 0.0 {
        c / s_1
    } else if den == 0.0 {
        0.0
    } else {
        PI * (m + d) * c / den
    };
    (parts, [v, dd, dn])
}

/// [`sincg_delta`] with its derivatives: `[value, d/dδ, d/dN]` (MODEL §10.5), the value bit for
/// bit [`sincg_delta`]'s and the derivatives in its sign convention (the sign (−1)^j of the
/// reduced numerator, j = round(Nδ), is kept, so value·derivative is sign-free). `m` is the
/// integer nearest the index (h = m + δ), needed only by d/dN.
///
/// * d/dδ without the quotient rule's cancellation at small δ: with y = πδ, S(u) = sin u/u and
///   T(u) = sinc3(u) = 3(sin u − u cos u)/u³ (so S′(u) = −u·T(u)/3),
///   d/dδ = π·(N·y/3)·[S(Ny)·T(y) − N²·T(Ny)·S(y)]/S(y)², all factors bounded (0 at δ = 0).
/// * d/dN is that of upstream's full-index formula sin(πNh)/sin(πh) (as `sincg_f64_d`, MODEL
///   §10.2): π·h·cos(πNδ)/sin(πδ) in this sign convention; cos(πN δ)/S(πδ) where m = 0 (the
///   value N at δ = 0 has d/dN = 1); 0 at an exact-Bragg point (δ = 0, m ≠ 0, where the kernels
///   take the f64 path).
///
/// Every sine and cosine is of a reduced argument (|r| ≤ 1/2), each evaluated once.
#[inline(always)]
pub fn sincg_delta_d(d: f32, n: f32, m: f32) -> [f32; 3] {
    grating_d::<true>(d, n, m).1
}

/// Square (parallelepiped) lattice factor from the index offsets δh, δk, δl (up to sign): the
/// product of the grating factors of the axes with N > 1 (upstream applies none where N ≤ 1),
/// one division for the three axes.
#[inline(always)]
pub fn lattice_square(dh: f32, dk: f32, dl: f32, na: f32, nb: f32, nc: f32) -> f32 {
    let a = grating_parts(dh, na);
    let b = grating_parts(dk, nb);
    let c = grating_parts(dl, nc);
    let (ua, ub, uc) = (na > 1.0, nb > 1.0, nc > 1.0);
    let num = (if ua { a[0] } else { 1.0 })
        * (if ub { b[0] } else { 1.0 })
        * (if uc { c[0] } else { 1.0 });
    let den = (if ua { a[1] } else { 1.0 })
        * (if ub { b[1] } else { 1.0 })
        * (if uc { c[1] } else { 1.0 });
    num / den
}

/// Partial derivatives of a lattice factor with respect to its own inputs: (F, dF/d(δh,δk,δl),
/// dF/d(Na,Nb,Nc)) (the f64 family returns the same triple).
pub type LatticeD = (f32, [f32; 3], [f32; 3]);

/// [`lattice_square`] with its derivatives (F, dF/dδ, dF/dN) from [`sincg_delta_d`] per axis
/// (`m` the nearest integers, for d/dN), in [`lattice_square`]'s sign convention (the value is
/// its to the bit). An axis with N ≤ 1 contributes the constant 1 (MODEL §10.2).
#[inline(always)]
pub fn lattice_square_d(d: [f32; 3], m: [f32; 3], n: [f32; 3]) -> LatticeD {
    lattice_square_d_with::<true>(d, m, n)
}

/// [`lattice_square_d`], with dF/dN left out (0) when `DN` is false: the row kernel's plans
/// where no parameter moves N skip its two divisions per axis.
#[inline(always)]
pub fn lattice_square_d_with<const DN: bool>(d: [f32; 3], m: [f32; 3], n: [f32; 3]) -> LatticeD {
    // each axis written out (no closure: the row kernels vectorise this over pixels)
    #[inline(always)]
    fn axis<const DN: bool>(d: f32, n: f32, m: f32) -> ([f32; 2], [f32; 3]) {
        if n > 1.0 {
            grating_d::<DN>(d, n, m)
        } else {
            ([1.0, 1.0], [1.0, 0.0, 0.0])
        }
    }
    let parts = [
        axis::<DN>(d[0], n[0], m[0]),
        axis::<DN>(d[1], n[1], m[1]),
        axis::<DN>(d[2], n[2], m[2]),
    ];
    // the value as `lattice_square` forms it (one division for the three axes)
    let f = (parts[0].0[0] * parts[1].0[0] * parts[2].0[0])
        / (parts[0].0[1] * parts[1].0[1] * parts[2].0[1]);
    let g = parts.map(|p| p.1);
    let others = [g[1][0] * g[2][0], g[0][0] * g[2][0], g[0][0] * g[1][0]];
    (
        f,
        [
            g[0][1] * others[0],
            g[1][1] * others[1],
            g[2][1] * others[2],
        ],
        [
            g[0][2] * others[0],
            g[1][2] * others[1],
            g[2][2] * others[2],
        ],
    )
}

/// sinc3(πy) = 3(sin x − x cos x)/x³ at x = πy. Below |x| = 1 the series to x¹⁰ (the closed
/// form cancels there); above it the closed form with the reduced [`sinpi`]/[`cospi`].
#[inline(always)]
pub fn sinc3_pi(y: f32) -> f32 {
    let x = std::f32::consts::PI * y;
    if x.abs() < 1.0 {
        return sinc3_series(x);
    }
    3.0 * (sinpi(y) / x - cospi(y)) / (x * x)
}

/// The series of [`sinc3_pi`] (|x| < 1; to 1e-8 relative up to |x| = π/2, where the first term
/// left out, 3·14·x¹²/15!, is 7e-9), x = πy.
#[inline(always)]
fn sinc3_series(x: f32) -> f32 {
    let x2 = x * x;
    let mut p = -1.0 / 172972800.0;
    p = p * x2 + 1.0 / 1330560.0;
    p = p * x2 - 1.0 / 15120.0;
    p = p * x2 + 1.0 / 280.0;
    p = p * x2 - 0.1;
    1.0 + x2 * p
}

/// sinc3′(x)/x at x = πy (finite at 0: −1/5), for the derivative of [`lattice_round`]: below
/// |x| = 2 its series to x¹² (truncation below 1e-9 relative; the closed form cancels there),
/// above it 3·(sin x/x − sinc3(x))/x² with the reduced [`sinpi`] and [`sinc3_pi`].
#[inline(always)]
pub fn sinc3_pi_d_over_x(y: f32) -> f32 {
    let x = std::f32::consts::PI * y;
    if x.abs() < 2.0 {
        let x2 = x * x;
        let mut p = -1.0 / 529296768000.0;
        p = p * x2 + 1.0 / 2594592000.0;
        p = p * x2 - 1.0 / 17297280.0;
        p = p * x2 + 1.0 / 166320.0;
        p = p * x2 - 1.0 / 2520.0;
        p = p * x2 + 1.0 / 70.0;
        p = p * x2 - 0.2;
        return p;
    }
    3.0 * (sinpi(y) / x - sinc3_pi(y)) / (x * x)
}

/// Round (spherical) lattice factor from δh, δk, δl = index − upstream's nearest index.
#[inline(always)]
pub fn lattice_round(dh: f32, dk: f32, dl: f32, na: f32, nb: f32, nc: f32, fudge: f32) -> f32 {
    let hrad2 = ((dh * dh) * na) * na + ((dk * dk) * nb) * nb + ((dl * dl) * nc) * nc;
    ((na * nb) * nc) * 0.723_601_3 * sinc3_pi((hrad2 * fudge).sqrt())
}

/// [`lattice_round`] with its derivatives (F, dF/dδ, dF/dN) (the value is its to the bit):
/// dF/d(hrad2) = N_aN_bN_c·0.7236·π²·fudge/2·sinc3′(x)/x, x = π√(hrad2·fudge).
#[inline(always)]
pub fn lattice_round_d(d: [f32; 3], n: [f32; 3], fudge: f32) -> LatticeD {
    use std::f32::consts::PI;
    let f = lattice_round(d[0], d[1], d[2], n[0], n[1], n[2], fudge);
    let hrad2 = ((d[0] * d[0]) * n[0]) * n[0]
        + ((d[1] * d[1]) * n[1]) * n[1]
        + ((d[2] * d[2]) * n[2]) * n[2];
    let y = (hrad2 * fudge).sqrt();
    let c = 0.723_601_3;
    let nabc = (n[0] * n[1]) * n[2];
    let df_dr = nabc * c * sinc3_pi_d_over_x(y) * (0.5 * PI * PI) * fudge;
    let s3 = sinc3_pi(y);
    let others = [n[1] * n[2], n[0] * n[2], n[0] * n[1]];
    (
        f,
        std::array::from_fn(|a| df_dr * 2.0 * d[a] * n[a] * n[a]),
        std::array::from_fn(|a| others[a] * c * s3 + df_dr * 2.0 * d[a] * d[a] * n[a]),
    )
}

/// The squared reciprocal-space distance times N⁶ of the Gaussian and top-hat shapes (MODEL
/// §6.3, C-QUIRK 16), from δh, δk, δl and the static reciprocal vectors (1/Å).
#[inline(always)]
pub fn shape_r2(
    dh: f32,
    dk: f32,
    dl: f32,
    a_star: [f32; 3],
    b_star: [f32; 3],
    c_star: [f32; 3],
    na: f32,
    nb: f32,
    nc: f32,
) -> f32 {
    value::shape_r2([dh, dk, dl], [a_star, b_star, c_star], [na, nb, nc])
}

/// [`shape_r2`] with its derivatives: (r2, dr2/dδ, dr2/dN, dr2/d(a*, b*, c*)) (the value is its
/// to the bit; `star` = [a*, b*, c*]).
#[allow(clippy::type_complexity)]
#[inline(always)]
pub fn shape_r2_d(
    d: [f32; 3],
    star: [[f32; 3]; 3],
    n: [f32; 3],
) -> (f32, [f32; 3], [f32; 3], [[f32; 3]; 3]) {
    let r2 = shape_r2(
        d[0], d[1], d[2], star[0], star[1], star[2], n[0], n[1], n[2],
    );
    let v: [f32; 3] =
        std::array::from_fn(|c| d[0] * star[0][c] + d[1] * star[1][c] + d[2] * star[2][c]);
    let n6 = n[0] * n[0] * n[1] * n[1] * n[2] * n[2];
    let dot3 = |x: [f32; 3], y: [f32; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    (
        r2,
        std::array::from_fn(|a| 2.0 * n6 * dot3(v, star[a])),
        std::array::from_fn(|a| if n[a] != 0.0 { 2.0 * r2 / n[a] } else { 0.0 }),
        std::array::from_fn(|a| v.map(|x| 2.0 * n6 * d[a] * x)),
    )
}

/// Below this exponent f64 `exp` is exactly 0 (upstream then skips the term); f32 `exp`
/// underflows from about −104 on, so the fast Gaussian decides its skip with this bound.
pub const GAUSS_F64_UNDERFLOW: f32 = -745.1332;

/// Gaussian lattice factor from [`shape_r2`] and N_a·N_b·N_c.
#[inline(always)]
pub fn lattice_gauss(r2: f32, nabc: f32, fudge: f32) -> f32 {
    value::lattice_gauss(r2, nabc, fudge)
}

/// [`lattice_gauss`] with its derivatives: `[F, dF/dr2, dF/dnabc]` (F bit for bit).
#[inline(always)]
pub fn lattice_gauss_d(r2: f32, nabc: f32, fudge: f32) -> [f32; 3] {
    let e = (-(r2 / 0.63 * fudge)).exp();
    [nabc * e, -(nabc * e) * fudge / 0.63, e]
}

/// Whether upstream's f64 Gaussian lattice factor is exactly 0 (the term is skipped).
#[inline(always)]
pub fn gauss_underflows(r2: f32, fudge: f32) -> bool {
    -(r2 / 0.63 * fudge) < GAUSS_F64_UNDERFLOW
}

/// Top-hat lattice factor from [`shape_r2`] and N_a·N_b·N_c (0 outside: the term is skipped).
#[inline(always)]
pub fn lattice_tophat(r2: f32, nabc: f32, fudge: f32) -> f32 {
    if r2 * fudge < 0.3969 {
        nabc
    } else {
        0.0
    }
}

/// [`lattice_tophat`] with its derivatives `[F, dF/dr2, dF/dnabc]`: flat inside, the edge not
/// differentiated (MODEL §10.2), so dF/dr2 = 0; inside F = nabc.
#[inline(always)]
pub fn lattice_tophat_d(r2: f32, nabc: f32, fudge: f32) -> [f32; 3] {
    let f = lattice_tophat(r2, nabc, fudge);
    [f, 0.0, if f != 0.0 { 1.0 } else { 0.0 }]
}

// ------------------------------------------------------------ fast: polarisation, geometry

/// Kahn polarisation factor (MODEL §5.6) without atan2 (§9.5): with E = d·E_in, B = d·B_in,
/// cos 2ψ = (E² − B²)/(E² + B²) (1 where E² + B² = 0: then sin² 2θ = 0 anyway). `i`, `d` unit.
#[inline(always)]
pub fn polarization(k: f32, i: [f32; 3], d: [f32; 3], e_in: [f32; 3], b_in: [f32; 3]) -> f32 {
    value::polarization(k, i, d, e_in, b_in)
}

/// [`polarization`] with its gradient with respect to the unit direction `d` (a tangent of `d`
/// is perpendicular to it): (P, dP/dd); P bit for bit. With E, B as there,
/// d cos 2ψ/dd = 4EB·(B·E_in − E·B_in)/(E² + B²)².
#[inline(always)]
pub fn polarization_d(
    k: f32,
    i: [f32; 3],
    d: [f32; 3],
    e_in: [f32; 3],
    b_in: [f32; 3],
) -> (f32, [f32; 3]) {
    let v = polarization(k, i, d, e_in, b_in);
    let dot3 = |x: [f32; 3], y: [f32; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    let c2 = dot3(i, d);
    let s2sq = 1.0 - c2 * c2;
    let mut cos2psi = 1.0;
    let mut dcos = [0.0f32; 3];
    if k != 0.0 {
        let e = dot3(d, e_in);
        let b = dot3(d, b_in);
        let den = e * e + b * b;
        if den > 0.0 {
            cos2psi = (e * e - b * b) / den;
            let w = (4.0 * (e / den)) * (b / den);
            let dc = |c: usize| w * (b * e_in[c] - e * b_in[c]);
            dcos = [dc(0), dc(1), dc(2)];
        }
    }
    // (no array::from_fn: the row kernels vectorise this over pixels)
    let g = |c: usize| 0.5 * (2.0 * c2 * i[c] - k * (dcos[c] * s2sq - cos2psi * 2.0 * c2 * i[c]));
    (v, [g(0), g(1), g(2)])
}

/// 1 − exp(−x) without cancellation for small x: below |x| = 0.1 the series to x⁷ (truncation
/// below 3e-12 relative), above it the difference (relative error at most ~6e-7 there).
#[inline(always)]
pub fn one_minus_exp_neg(x: f32) -> f32 {
    value::one_minus_exp_neg(x)
}

/// Fraction of the photons entering the sensor that are absorbed in layer `t` (MODEL §6.6,
/// §9.5): exp(−t·x)·(1 − exp(−x)) with x = thickstep·μ/ρ, ρ = d·o.
#[inline(always)]
pub fn capture_fraction(t: f32, mu_step: f32, rho: f32) -> f32 {
    value::capture_fraction(t, mu_step, rho)
}

/// [`capture_fraction`] with its derivative: `[value, d/dρ]` (value bit for bit), with
/// x = μ·step/ρ: d/dρ = −(x/ρ)·exp(−t·x)·(exp(−x) − t·(1 − exp(−x))).
#[inline(always)]
pub fn capture_fraction_d(t: f32, mu_step: f32, rho: f32) -> [f32; 2] {
    let v = capture_fraction(t, mu_step, rho);
    let x = mu_step / rho;
    let dv = -(x / rho) * (-t * x).exp() * ((-x).exp() - t * one_minus_exp_neg(x));
    [v, dv]
}

/// Solid angle of a pixel (MODEL §3.9) from 1/R: pixel²·close_distance/R³, or 1/R² for
/// `-point_pixel`.
#[inline(always)]
pub fn solid_angle(inv_r: f32, pixel2: f32, close_distance: f32, point_pixel: bool) -> f32 {
    value::solid_angle(inv_r, pixel2, close_distance, point_pixel)
}

/// [`solid_angle`] with its derivatives: `[Ω, dΩ/dR, dΩ/d close_distance]` (Ω bit for bit).
#[inline(always)]
pub fn solid_angle_d(inv_r: f32, pixel2: f32, close_distance: f32, point_pixel: bool) -> [f32; 3] {
    let v = solid_angle(inv_r, pixel2, close_distance, point_pixel);
    if point_pixel {
        [v, -2.0 * v * inv_r, 0.0]
    } else {
        [v, -3.0 * v * inv_r, pixel2 * (inv_r * inv_r * inv_r)]
    }
}

// ------------------------------------------------------------------- upstream (f64, parity)

/// Upstream's grating function sin(x·N)/sin(x) on the full argument x = π·h.
#[inline(always)]
pub fn sincg_f64(x: f64, n: f64) -> f64 {
    value::sincg_f64(x, n)
}

/// [`sincg_f64`] with its derivatives: (value, d/dx, d/dN) of sin(x·N)/sin(x) on the full
/// argument (MODEL §10.2); the value from the same sines as [`sincg_f64`] (bit for bit). At
/// x = 0 (the value N) the derivatives are (0, 1). With an integer N, d/dx is that of
/// sin(Ny)/sin(y) in the reduced y = x − mπ (sign (−1)^{m(N−1)}), in the form
/// (N·y/3)·(S(Ny)·T(y) − N²·T(Ny)·S(y))/S(y)² (S(u) = sin u/u, T = [`sinc3_f64`]'s function by
/// [`sinc3_reduced`]), which does not cancel near the zero of sin y: the quotient rule on the
/// full argument loses the digits of sin(Nx) there (its absolute error grows with the index).
/// Otherwise the quotient rule. d/dN is the full-index form's (it grows like m/y near a zero of
/// sin y, as the formula's does).
#[inline(always)]
pub fn sincg_f64_d(x: f64, n: f64) -> (f64, f64, f64) {
    if x == 0.0 {
        return (n, 0.0, 1.0);
    }
    let (sx, cx) = (x.sin(), x.cos());
    let (snx, cnx) = ((x * n).sin(), (x * n).cos());
    let dx = if n.fract() == 0.0 {
        let m = (x / PI).round();
        let y = x - m * PI;
        let odd = ((m as i64).rem_euclid(2) == 1) && ((n as i64 - 1).rem_euclid(2) == 1);
        let sign = if odd { -1.0 } else { 1.0 };
        let s = |u: f64| if u == 0.0 { 1.0 } else { u.sin() / u };
        let (s1, sn) = (s(y), s(n * y));
        let (t1, tn) = (sinc3_reduced(y), sinc3_reduced(n * y));
        sign * (n * y / 3.0) * (sn * t1 - n * n * tn * s1) / (s1 * s1)
    } else {
        (n * cnx * sx - snx * cx) / (sx * sx)
    };
    (snx / sx, dx, x * cnx / sx)
}

/// 3(sin u − u cos u)/u³ without cancellation: its series below |u| = 1/2 (to u¹², truncation
/// below 1e-17 relative), the closed form above.
#[inline(always)]
pub fn sinc3_reduced(u: f64) -> f64 {
    if u.abs() < 0.5 {
        let z = u * u;
        let mut p = 1.0 / 31135104000.0;
        p = p * z - 1.0 / 172972800.0;
        p = p * z + 1.0 / 1330560.0;
        p = p * z - 1.0 / 15120.0;
        p = p * z + 1.0 / 280.0;
        p = p * z - 0.1;
        p * z + 1.0
    } else {
        3.0 * (u.sin() / u - u.cos()) / (u * u)
    }
}

/// Upstream's sinc3 (libm sin, cos).
#[inline(always)]
pub fn sinc3_f64(x: f64) -> f64 {
    value::sinc3_f64(x)
}

/// sinc3′(x)/x for [`sinc3_f64`] (finite at 0: −1/5; the series below |x| = 1e-2, where the
/// closed form cancels).
#[inline(always)]
pub fn sinc3_f64_d_over_x(x: f64) -> f64 {
    if x.abs() < 1e-2 {
        let x2 = x * x;
        -0.2 + x2 / 70.0 - x2 * x2 / 2520.0
    } else {
        let (s, c) = x.sin_cos();
        let u = s / x - c;
        let du = (x * c - s) / (x * x) + s;
        3.0 * (du / (x * x) - 2.0 * u / (x * x * x)) / x
    }
}

/// Upstream's square lattice factor on the full indices.
#[inline(always)]
pub fn lattice_square_f64(h: f64, k: f64, l: f64, na: f64, nb: f64, nc: f64) -> f64 {
    let mut f = 1.0;
    if na > 1.0 {
        f *= sincg_f64(PI * h, na);
    }
    if nb > 1.0 {
        f *= sincg_f64(PI * k, nb);
    }
    if nc > 1.0 {
        f *= sincg_f64(PI * l, nc);
    }
    f
}

/// [`lattice_square_f64`] with its derivatives: (F, dF/d(h,k,l), dF/d(Na,Nb,Nc)). An axis with
/// N ≤ 1 contributes the constant 1 (the switch at N = 1 is not differentiated).
#[inline(always)]
pub fn lattice_square_f64_d(
    h: f64,
    k: f64,
    l: f64,
    na: f64,
    nb: f64,
    nc: f64,
) -> (f64, [f64; 3], [f64; 3]) {
    // the value as `lattice_square_f64` forms it: 1, times each factor with N > 1 in turn
    let mut f = 1.0;
    let mut g = [1.0; 3];
    let mut dx = [0.0; 3];
    let mut dn = [0.0; 3];
    for (i, (x, n)) in [(h, na), (k, nb), (l, nc)].into_iter().enumerate() {
        if n > 1.0 {
            let (v, d, e) = sincg_f64_d(PI * x, n);
            f *= v;
            g[i] = v;
            dx[i] = PI * d;
            dn[i] = e;
        }
    }
    let others = [g[1] * g[2], g[0] * g[2], g[0] * g[1]];
    (
        f,
        std::array::from_fn(|i| dx[i] * others[i]),
        std::array::from_fn(|i| dn[i] * others[i]),
    )
}

/// Upstream's round lattice factor (δ = index − nearest index).
#[inline(always)]
pub fn lattice_round_f64(dh: f64, dk: f64, dl: f64, na: f64, nb: f64, nc: f64, fudge: f64) -> f64 {
    value::lattice_round_f64([dh, dk, dl], [na, nb, nc], fudge)
}

/// [`lattice_round_f64`] with its derivatives: (F, dF/d(δh,δk,δl), dF/d(Na,Nb,Nc)).
#[inline(always)]
pub fn lattice_round_f64_d(
    dh: f64,
    dk: f64,
    dl: f64,
    na: f64,
    nb: f64,
    nc: f64,
    fudge: f64,
) -> (f64, [f64; 3], [f64; 3]) {
    let f = lattice_round_f64(dh, dk, dl, na, nb, nc, fudge);
    let hrad2 = ((dh * dh) * na) * na + ((dk * dk) * nb) * nb + ((dl * dl) * nc) * nc;
    let x = PI * (hrad2 * fudge).sqrt();
    let nabc = (na * nb) * nc;
    let c = 0.723601254558268;
    // dF/dhrad2 = nabc·c·sinc3′(x)·dx/dhrad2, dx/dhrad2 = π²·fudge/(2x)
    let df_dr = nabc * c * sinc3_f64_d_over_x(x) * PI * PI * fudge / 2.0;
    let s3 = sinc3_f64(x);
    let d = [dh, dk, dl];
    let n = [na, nb, nc];
    let others = [nb * nc, na * nc, na * nb];
    (
        f,
        std::array::from_fn(|i| df_dr * 2.0 * d[i] * n[i] * n[i]),
        std::array::from_fn(|i| others[i] * c * s3 + df_dr * 2.0 * d[i] * d[i] * n[i]),
    )
}

/// Upstream's [`shape_r2`]: per component `(δh·a* + δk·b*) + δl·c*`, then left to right.
#[inline(always)]
pub fn shape_r2_f64(
    dh: f64,
    dk: f64,
    dl: f64,
    a_star: V3,
    b_star: V3,
    c_star: V3,
    na: f64,
    nb: f64,
    nc: f64,
) -> f64 {
    value::shape_r2_f64([dh, dk, dl], [a_star, b_star, c_star], [na, nb, nc])
}

/// [`shape_r2_f64`] with its derivatives: (r2, dr2/d(δh,δk,δl), dr2/d(Na,Nb,Nc),
/// dr2/d(a*, b*, c*)).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
#[inline(always)]
pub fn shape_r2_f64_d(
    dh: f64,
    dk: f64,
    dl: f64,
    a_star: V3,
    b_star: V3,
    c_star: V3,
    na: f64,
    nb: f64,
    nc: f64,
) -> (f64, [f64; 3], [f64; 3], [V3; 3]) {
    let r2 = shape_r2_f64(dh, dk, dl, a_star, b_star, c_star, na, nb, nc);
    let d: V3 = std::array::from_fn(|c| (dh * a_star[c] + dk * b_star[c]) + dl * c_star[c]);
    let n6 = na * na * nb * nb * nc * nc;
    let n = [na, nb, nc];
    let idx = [dh, dk, dl];
    (
        r2,
        [
            2.0 * n6 * dot(d, a_star),
            2.0 * n6 * dot(d, b_star),
            2.0 * n6 * dot(d, c_star),
        ],
        std::array::from_fn(|i| if n[i] != 0.0 { 2.0 * r2 / n[i] } else { 0.0 }),
        std::array::from_fn(|i| d.map(|x| 2.0 * n6 * idx[i] * x)),
    )
}

/// Upstream's Gaussian lattice factor.
#[inline(always)]
pub fn lattice_gauss_f64(r2: f64, nabc: f64, fudge: f64) -> f64 {
    value::lattice_gauss_f64(r2, nabc, fudge)
}

/// [`lattice_gauss_f64`] with (dF/dr2, dF/dnabc).
#[inline(always)]
pub fn lattice_gauss_f64_d(r2: f64, nabc: f64, fudge: f64) -> (f64, f64, f64) {
    let f = lattice_gauss_f64(r2, nabc, fudge);
    (f, -f * fudge / 0.63, (-(r2 / 0.63 * fudge)).exp())
}

/// Upstream's top-hat lattice factor.
#[inline(always)]
pub fn lattice_tophat_f64(r2: f64, nabc: f64, fudge: f64) -> f64 {
    if r2 * fudge < 0.3969 {
        nabc
    } else {
        0.0
    }
}

/// [`lattice_tophat_f64`] with (dF/dr2, dF/dnabc): the top hat is flat inside and its edge is
/// not differentiated (MODEL §10.2), so dF/dr2 = 0; inside, F = nabc.
#[inline(always)]
pub fn lattice_tophat_f64_d(r2: f64, nabc: f64, fudge: f64) -> (f64, f64, f64) {
    let f = lattice_tophat_f64(r2, nabc, fudge);
    (f, 0.0, if f != 0.0 { 1.0 } else { 0.0 })
}

/// Upstream's Kahn factor: ψ from atan2, then cos 2ψ.
#[inline(always)]
pub fn polarization_f64(k: f64, frame: &PolarFrame, d: V3) -> f64 {
    let d = unit(d);
    let c2 = dot(frame.i, d);
    let c2sq = c2 * c2;
    let s2sq = 1.0 - c2sq;
    let mut psi = 0.0;
    if k != 0.0 {
        let e_out = dot(d, frame.e_in);
        let b_out = dot(d, frame.b_in);
        psi = -b_out.atan2(e_out);
    }
    0.5 * (1.0 + c2sq - k * (2.0 * psi).cos() * s2sq)
}

/// [`polarization_f64`] with its gradient with respect to the unit direction `d` (a tangent of
/// `d` is perpendicular to it, so the re-normalisation inside adds nothing).
#[inline(always)]
pub fn polarization_f64_d(k: f64, frame: &PolarFrame, d: V3) -> (f64, V3) {
    let v = polarization_f64(k, frame, d);
    let d = unit(d);
    let c2 = dot(frame.i, d);
    let s2sq = 1.0 - c2 * c2;
    let (mut cos2psi, mut dcos) = (1.0, [0.0; 3]);
    if k != 0.0 {
        let e = dot(d, frame.e_in);
        let b = dot(d, frame.b_in);
        let psi = -b.atan2(e);
        cos2psi = (2.0 * psi).cos();
        let den = e * e + b * b;
        if den > 0.0 {
            let s2 = (2.0 * psi).sin();
            // dψ/dd = −(E·b_in − B·e_in)/(E² + B²); d cos 2ψ = −2 sin 2ψ dψ
            dcos =
                std::array::from_fn(|c| 2.0 * s2 * (e * frame.b_in[c] - b * frame.e_in[c]) / den);
        }
    }
    let g = std::array::from_fn(|c| {
        0.5 * (2.0 * c2 * frame.i[c] - k * (dcos[c] * s2sq - cos2psi * 2.0 * c2 * frame.i[c]))
    });
    (v, g)
}

/// Upstream's capture fraction: the difference of two exponentials (layer `t`, step and μ in
/// metres, ρ = d·o).
#[inline(always)]
pub fn capture_fraction_f64(t: u32, thickstep: f64, mu: f64, rho: f64) -> f64 {
    value::capture_fraction_f64(t as f64, thickstep, mu, rho)
}

/// [`capture_fraction_f64`] with d/dρ.
#[inline(always)]
pub fn capture_fraction_f64_d(t: u32, thickstep: f64, mu: f64, rho: f64) -> (f64, f64) {
    let v = capture_fraction_f64(t, thickstep, mu, rho);
    let c0 = t as f64 * thickstep * mu;
    let c1 = (t as f64 + 1.0) * thickstep * mu;
    let r2 = rho * rho;
    (v, (-c0 / rho).exp() * c0 / r2 - (-c1 / rho).exp() * c1 / r2)
}

/// Upstream's solid angle from R.
#[inline(always)]
pub fn solid_angle_f64(r: f64, pixel2: f64, close_distance: f64, point_pixel: bool) -> f64 {
    value::solid_angle_f64(r, pixel2, close_distance, point_pixel)
}

/// [`solid_angle_f64`] with (dΩ/dR, dΩ/d close_distance).
#[inline(always)]
pub fn solid_angle_f64_d(
    r: f64,
    pixel2: f64,
    close_distance: f64,
    point_pixel: bool,
) -> (f64, f64, f64) {
    let v = solid_angle_f64(r, pixel2, close_distance, point_pixel);
    if point_pixel {
        (v, -2.0 * v / r, 0.0)
    } else {
        (v, -3.0 * v / r, pixel2 / (r * r * r))
    }
}

// ------------------------------------------------------------------------------------ shared

/// The per-source part of the Kahn factor: unit incident direction and the polarisation-plane
/// axes B_in = unit(p × i), E_in = unit(i × B_in), with upstream's operations (which recompute
/// them for every pixel with the same result). The only place they are computed: the f64
/// kernel uses them as they are, the fast kernels and the GPU (`gpu::layout`) round them.
#[derive(Clone, Copy, Debug)]
pub struct PolarFrame {
    pub i: V3,
    pub b_in: V3,
    pub e_in: V3,
}

impl PolarFrame {
    pub fn new(incident: V3, polar_axis: V3) -> Self {
        let i = unit(incident);
        let p = unit(polar_axis);
        let b_in = unit(cross(p, i));
        let e_in = unit(cross(i, b_in));
        PolarFrame { i, b_in, e_in }
    }
}

/// True when a tricubic stencil around (h,k,l) leaves the table (MODEL §6.4's range rule: one
/// index of margin beyond the stencil), and for any index that is NaN (written as "not inside",
/// so no NaN can pass).
#[inline]
pub fn stencil_leaves_table(g: &HklGrid, h: f64, k: f64, l: f64) -> bool {
    let inside = |x: f64, min: i32, range: i32| {
        (x - min as f64 + 3.0) <= range as f64 && (x - 2.0) >= min as f64
    };
    !(inside(h, g.h_min, g.h_range())
        && inside(k, g.k_min, g.k_range())
        && inside(l, g.l_min, g.l_range()))
}

/// Nearest-reflection structure factor at upstream's nearest indices (h0, k0, l0) (integers
/// held in floats), or `default_f` outside the table or without one. The range test is on the
/// floats, so a NaN index gets `default_f`.
#[inline]
pub fn f_nearest(g: &HklGrid, default_f: f64, h0: f64, k0: f64, l0: f64) -> f64 {
    let within = |x: f64, lo: i32, hi: i32| x >= lo as f64 && x <= hi as f64;
    if g.hkls != 0
        && within(h0, g.h_min, g.h_max)
        && within(k0, g.k_min, g.k_max)
        && within(l0, g.l_min, g.l_max)
    {
        g.at(
            (h0 as i64 - g.h_min as i64) as i32,
            (k0 as i64 - g.k_min as i64) as i32,
            (l0 as i64 - g.l_min as i64) as i32,
        )
    } else {
        default_f
    }
}

/// Whether [`f_nearest`] returns `default_f` at (h0, k0, l0) (no table, or outside it): there F
/// is `default_F` itself and its derivative with respect to `default_F` is 1 (MODEL §10.2).
#[inline]
pub fn f_nearest_is_default(g: &HklGrid, h0: f64, k0: f64, l0: f64) -> bool {
    let within = |x: f64, lo: i32, hi: i32| x >= lo as f64 && x <= hi as f64;
    !(g.hkls != 0
        && within(h0, g.h_min, g.h_max)
        && within(k0, g.k_min, g.k_max)
        && within(l0, g.l_min, g.l_max))
}

/// x minus each node of the 4-point stencil floor(x) − 1 … floor(x) + 2 (`xf` = floor(x)):
/// with the nodes as f64 integers these are upstream's differences to the bit. WGSL: from a
/// df64 x, `(x.hi − node) + x.lo`.
#[inline(always)]
pub fn node_diffs(x: f64, xf: f64) -> [f64; 4] {
    [x - (xf - 1.0), x - xf, x - (xf + 1.0), x - (xf + 2.0)]
}

/// Upstream's 4-point Lagrange interpolation with the node coordinates as numbers (any
/// spacing: the `.stol` tables of nonBragg). On unit-spaced nodes [`polint4`] gives the same
/// value to the bit (tested) with fewer operations.
#[inline]
pub fn polint(xa: [f64; 4], ya: [f64; 4], x: f64) -> f64 {
    let [x0, x1, x2, x3] = xa;
    (((x - x1) * (x - x2)) * (x - x3)) * ya[0] / (((x0 - x1) * (x0 - x2)) * (x0 - x3))
        + (((x - x0) * (x - x2)) * (x - x3)) * ya[1] / (((x1 - x0) * (x1 - x2)) * (x1 - x3))
        + (((x - x0) * (x - x1)) * (x - x3)) * ya[2] / (((x2 - x0) * (x2 - x1)) * (x2 - x3))
        + (((x - x0) * (x - x1)) * (x - x2)) * ya[3] / (((x3 - x0) * (x3 - x1)) * (x3 - x2))
}

/// Upstream's 4-point Lagrange interpolation (MODEL §6.4) on unit-spaced nodes, from the
/// differences `dx[j] = x − node_j`: each basis numerator is the product of the other three
/// differences in upstream's order, times the value, over the node denominators −6, 2, −2, 6
/// (which upstream computes from the nodes, exactly these numbers); summed left to right.
#[inline(always)]
pub fn polint4(dx: [f64; 4], y: [f64; 4]) -> f64 {
    value::polint4(dx, y)
}

/// d/dx of [`polint4`] (each difference moves with x).
#[inline(always)]
pub fn polint4_d(dx: [f64; 4], y: [f64; 4]) -> f64 {
    let p = |a: f64, b: f64, c: f64| a * b + a * c + b * c;
    p(dx[1], dx[2], dx[3]) * y[0] / -6.0
        + p(dx[0], dx[2], dx[3]) * y[1] / 2.0
        + p(dx[0], dx[1], dx[3]) * y[2] / -2.0
        + p(dx[0], dx[1], dx[2]) * y[3] / 6.0
}

/// Tricubic structure factor: [`polint4`] along l for each (h, k) node pair, then along k, then
/// along h (upstream's order). `hf, kf, lf` = floor of the indices, `dh, dk, dl` their
/// [`node_diffs`]. The caller has checked [`stencil_leaves_table`].
pub fn f_tricubic(
    g: &HklGrid,
    hf: f64,
    kf: f64,
    lf: f64,
    dh: [f64; 4],
    dk: [f64; 4],
    dl: [f64; 4],
) -> f64 {
    let ih = hf as i32 - 1 - g.h_min;
    let ik = kf as i32 - 1 - g.k_min;
    let il = lf as i32 - 1 - g.l_min;
    let mut tmp_h = [0.0; 4];
    for a in 0..4 {
        let mut tmp_k = [0.0; 4];
        for b in 0..4 {
            let ys: [f64; 4] =
                std::array::from_fn(|c| g.at(ih + a as i32, ik + b as i32, il + c as i32));
            tmp_k[b] = polint4(dl, ys);
        }
        tmp_h[a] = polint4(dk, tmp_k);
    }
    polint4(dh, tmp_h)
}

/// [`f_tricubic`] at fractional indices (floors and node differences computed here).
#[inline]
pub fn f_tricubic_at(g: &HklGrid, h: f64, k: f64, l: f64) -> f64 {
    let (hf, kf, lf) = (h.floor(), k.floor(), l.floor());
    f_tricubic(
        g,
        hf,
        kf,
        lf,
        node_diffs(h, hf),
        node_diffs(k, kf),
        node_diffs(l, lf),
    )
}

/// Gradient of [`f_tricubic_at`] with respect to (h, k, l): the interpolant differentiated
/// (MODEL §10.2). The caller has checked [`stencil_leaves_table`].
pub fn f_tricubic_d(g: &HklGrid, h: f64, k: f64, l: f64) -> [f64; 3] {
    let (hf, kf, lf) = (h.floor(), k.floor(), l.floor());
    let (dh, dk, dl) = (node_diffs(h, hf), node_diffs(k, kf), node_diffs(l, lf));
    let ih = hf as i32 - 1 - g.h_min;
    let ik = kf as i32 - 1 - g.k_min;
    let il = lf as i32 - 1 - g.l_min;
    let (mut th, mut th_k, mut th_l) = ([0.0; 4], [0.0; 4], [0.0; 4]);
    for a in 0..4 {
        let (mut tk, mut tk_l) = ([0.0; 4], [0.0; 4]);
        for b in 0..4 {
            let ys: [f64; 4] =
                std::array::from_fn(|c| g.at(ih + a as i32, ik + b as i32, il + c as i32));
            tk[b] = polint4(dl, ys);
            tk_l[b] = polint4_d(dl, ys);
        }
        th[a] = polint4(dk, tk);
        th_k[a] = polint4_d(dk, tk);
        th_l[a] = polint4(dk, tk_l);
    }
    [polint4_d(dh, th), polint4(dh, th_k), polint4(dh, th_l)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_form_is_upstreams_polint_to_the_bit() {
        let mut s = 0x9e3779b97f4a7c15u64;
        for i in 0..20000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            // fractions near 0 and 1, negative indices in (-1, 0), large indices
            let x = match i % 4 {
                0 => (u - 0.5) * 2.0,
                1 => (u - 0.5) * 200.0,
                2 => (u - 0.5) * 1e-6,
                _ => ((u - 0.5) * 2e4).round() + u * 1e-9,
            };
            let y = [u * 3.0 - 1.0, 7.0 * u, -2.5, 1.0 + u];
            let f = x.floor();
            let nodes = [f - 1.0, f, f + 1.0, f + 2.0];
            let want = polint(nodes, y, x);
            let got = polint4(node_diffs(x, f), y);
            assert_eq!(got.to_bits(), want.to_bits(), "x = {x:e}");
        }
    }

    /// Tensor-product cubic Lagrange interpolation is exact for a cubic in each index, and the
    /// range rule keeps one index of margin beyond the stencil.
    #[test]
    fn tricubic_reproduces_cubics_and_range_rule() {
        let f = |h: f64, k: f64, l: f64| 5.0 + 0.5 * h * h * h - k * k + 2.0 * l + 0.1 * h * k * l;
        let g = HklGrid::from_fn(-5, 5, f);
        for &(h, k, l) in &[(0.3, -1.7, 2.2), (-2.9, 2.99, -3.0), (1.5, 0.0, 0.25)] {
            assert!(!stencil_leaves_table(&g, h, k, l));
            let got = f_tricubic_at(&g, h, k, l);
            assert!(
                (got - f(h, k, l)).abs() < 1e-9,
                "({h},{k},{l}): {got} vs {}",
                f(h, k, l)
            );
        }
        // h_min + 2 <= h <= h_max - 2
        assert!(!stencil_leaves_table(&g, 3.0, 0.0, 0.0));
        assert!(stencil_leaves_table(&g, 3.01, 0.0, 0.0));
        assert!(stencil_leaves_table(&g, 0.0, -3.01, 0.0));
        // a NaN index is never inside
        assert!(stencil_leaves_table(&g, f64::NAN, 0.0, 0.0));
        assert!(stencil_leaves_table(&g, 0.0, 0.0, f64::INFINITY));
    }

    #[test]
    fn nearest_lookup_refuses_nan_and_out_of_range() {
        let g = HklGrid::from_fn(5, 8, |h, _, _| h * 10.0);
        assert_eq!(f_nearest(&g, 7.0, 6.0, 5.0, 8.0), 60.0);
        assert_eq!(f_nearest(&g, 7.0, 0.0, 5.0, 5.0), 7.0);
        assert_eq!(f_nearest(&g, 7.0, f64::NAN, 5.0, 5.0), 7.0);
        assert_eq!(f_nearest(&g, 7.0, 9.0, 5.0, 5.0), 7.0);
        assert_eq!(f_nearest(&g, 7.0, 6.0, 5.0, -1e300), 7.0);
        assert!(!index_ok(f64::NAN) && !index_ok(f64::INFINITY) && !index_ok(-INDEX_LIMIT));
        assert!(index_ok(0.0) && index_ok(-2147483647.0));
    }

    #[test]
    fn sinpi_is_accurate() {
        let mut worst = 0f64;
        let mut b = 1u32;
        while b <= 0.5f32.to_bits() {
            let x = f32::from_bits(b);
            let want = (PI * x as f64).sin();
            let ulp = f32::EPSILON as f64 * (want as f32).abs().max(f32::MIN_POSITIVE) as f64;
            worst = worst.max((sinpi_poly(x) as f64 - want).abs() / ulp);
            b += 97;
        }
        assert!(worst < 3.8, "sinpi_poly worst {worst} ulp");
        for i in -3000..=3000 {
            let x = i as f32 * 0.37;
            let xd = x as f64;
            let (m, r) = (xd.round_ties_even(), xd - xd.round_ties_even());
            let sign = if (m as i64) % 2 == 0 { 1.0 } else { -1.0 };
            assert!(
                (sinpi(x) as f64 - sign * (PI * r).sin()).abs() < 3e-7,
                "sinpi({x})"
            );
            assert!(
                (cospi(x) as f64 - sign * (PI * r).cos()).abs() < 3e-7,
                "cospi({x})"
            );
        }
    }

    #[test]
    fn delta_form_matches_grating_function() {
        for &n in &[2.0f64, 5.0, 10.0, 50.0] {
            for i in 0..200 {
                let h = 37.0 + (i as f64) * 0.0049 - 0.5;
                let want = sincg_f64(PI * h, n).abs();
                let d = h - round_even_f64(h);
                let got = sincg_delta(d as f32, n as f32).abs() as f64;
                assert!(
                    (got - want).abs() <= 2e-5 * n,
                    "n={n} h={h} got={got} want={want}"
                );
            }
        }
        // exact Bragg: the limit N
        assert_eq!(sincg_delta(0.0, 7.0), 7.0);
        assert_eq!(lattice_square(0.0, 0.0, 0.0, 3.0, 4.0, 5.0), 60.0);
        // an axis with N <= 1 contributes nothing
        assert_eq!(lattice_square(0.3, 0.0, 0.0, 1.0, 4.0, 5.0), 20.0);
    }

    #[test]
    fn sinc3_series_joins_formula() {
        for &y in &[0.0f32, 0.001, 0.05, 0.3, 0.317, 0.3185, 0.32, 0.5, 0.7, 2.3] {
            let want = sinc3_f64(PI * y as f64);
            let got = sinc3_pi(y) as f64;
            assert!((got - want).abs() < 1e-6, "y={y}: {got} vs {want}");
        }
    }

    #[test]
    fn fast_forms_match_upstream_forms() {
        // polarisation: cos 2ψ identity
        let frame = PolarFrame::new([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        let f32v = |v: V3| v.map(|x| x as f32);
        for d in [
            [0.9, 0.3, 0.1],
            [0.5, -0.5, 0.7],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
        ] {
            let d = unit(d);
            for k in [0.0, 0.5, 0.99] {
                let want = polarization_f64(k, &frame, d);
                let got = polarization(
                    k as f32,
                    f32v(frame.i),
                    f32v(d),
                    f32v(frame.e_in),
                    f32v(frame.b_in),
                );
                assert!(
                    (got as f64 - want).abs() < 1e-6,
                    "{d:?} {k}: {got} vs {want}"
                );
            }
        }
        // capture fraction: thin and thick layers
        for (t, step, mu, rho) in [
            (0u32, 1e-6, 300.0, 0.9),
            (3, 5e-5, 2000.0, 0.7),
            (1, 1e-4, 1e5, 1.0),
        ] {
            let want = capture_fraction_f64(t, step, mu, rho);
            let got = capture_fraction(t as f32, (step * mu) as f32, rho as f32) as f64;
            assert!(
                ((got - want) / want).abs() < 2e-6,
                "{t} {step} {mu}: {got} vs {want}"
            );
        }
        // solid angle
        let r: f64 = 0.123;
        let want = solid_angle_f64(r, 1e-8, 0.1, false);
        let got = solid_angle((1.0 / r) as f32, 1e-8, 0.1, false) as f64;
        assert!(((got - want) / want).abs() < 1e-6);
        // Gaussian: f32 underflows long before upstream's f64 does; the skip follows f64
        assert_eq!(lattice_gauss(200.0 * 0.63, 100.0, 1.0), 0.0);
        assert!(!gauss_underflows(200.0 * 0.63, 1.0));
        assert!(lattice_gauss_f64(200.0 * 0.63, 100.0, 1.0) > 0.0);
        assert!(gauss_underflows(746.0 * 0.63, 1.0));
        assert_eq!(lattice_gauss_f64(746.0 * 0.63, 100.0, 1.0), 0.0);
        // the bound is where f64 exp reaches 0
        let u = GAUSS_F64_UNDERFLOW as f64;
        assert!((u + 1e-4).exp() > 0.0 && (u - 1e-4).exp() == 0.0);
        // and the shape guards: a huge index is as unusable as NaN
        assert!(!index_ok(3e9) && index_ok(2e9));
    }

    /// |got − want| ≤ tol·scale, with the worst ratio kept for the report.
    fn near(worst: &mut f64, got: f32, want: f64, scale: f64, tol: f64, what: &str) {
        let e = (got as f64 - want).abs() / scale;
        *worst = worst.max(e);
        assert!(
            e <= tol,
            "{what}: f32 {got:e} vs f64 {want:e} ({e:e} of {scale:e} > {tol:e})"
        );
    }

    /// The sign of the delta form against upstream's full-index grating factor at integer N:
    /// (−1)^(j + m(N+1)), j = round(Nδ) (see [`sincg_delta_d`]).
    fn conv_sign(d: f32, n: f32, m: f32) -> f64 {
        let j = round_even(n * d) as i64;
        if (j + m as i64 * (n as i64 + 1)).rem_euclid(2) == 1 {
            -1.0
        } else {
            1.0
        }
    }

    /// Scale of d/dN of the grating factor at (δ, N, m) against which its f32 error is judged:
    /// (|h| + 1)/|sin πδ| times the size of its f32 argument N·δ (whose rounding it carries).
    fn dn_scale(d: f32, n: f64, m: f64) -> f64 {
        let d = d as f64;
        (m.abs() + d.abs() + 1.0) / (PI * d).sin().abs().max(1e-30) * (n * d.abs()).max(1.0)
    }

    fn xorshift(s: &mut u64) -> f64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// d/dx of the grating factor near a spot's centre at a high index: the reduced form
    /// against a central difference of sin(Ny)/sin(y) in the small y itself (no large
    /// argument). The quotient rule on the full argument was 16 % off at h = 500 − 3e-6, N = 50.
    #[test]
    fn grating_derivative_near_a_high_index_spot() {
        for &(h0, dh, n) in &[
            (500.0f64, -3e-6f64, 50.0f64),
            (500.0, 2e-5, 50.0),
            (37.0, 1e-7, 10.0),
            (1200.0, 4e-5, 7.0),
            (3.0, 0.3, 20.0),
        ] {
            let (_, dx, _) = sincg_f64_d(PI * (h0 + dh), n);
            let g = |y: f64| (n * y).sin() / y.sin();
            let sign = if (h0 as i64 * (n as i64 - 1)).rem_euclid(2) == 1 {
                -1.0
            } else {
                1.0
            };
            let y = PI * dh;
            let e = 1e-6 / n;
            let fd = sign * (g(y + e) - g(y - e)) / (2.0 * e);
            let scale = n * n;
            assert!(
                (dx - fd).abs() <= 1e-6 * scale,
                "h {h0}+{dh:e} N {n}: {dx} vs {fd}"
            );
        }
    }

    /// Each f32 derivative term against its f64 counterpart (`*_f64_d`, itself checked against
    /// finite differences through the images in `crate/tests/gradients.rs`), and its value
    /// against the f32 term's to the bit.
    #[test]
    fn f32_derivatives_match_f64_derivatives() {
        let mut s = 0x2545f4914f6cdd1du64;
        // grating factor: h = m + δ (δ an f32), the f64 formula on the full index
        let (mut wv, mut wd, mut wn) = (0f64, 0f64, 0f64);
        for &n in &[2.0f64, 3.0, 5.0, 10.0, 50.0, 1000.0] {
            for &m in &[0.0f64, 1.0, -3.0, 37.0, 500.0] {
                let mut ds: Vec<f32> = vec![1e-7, -3e-6, 1e-5 / n as f32, 0.5, -0.5, 0.25, 0.01];
                ds.extend((0..300).map(|_| (xorshift(&mut s) - 0.5) as f32));
                ds.extend((0..100).map(|_| ((xorshift(&mut s) - 0.5) * (4.0 / n).min(1.0)) as f32));
                for d in ds {
                    let h = m + d as f64;
                    let (v64, dx64, dn64) = sincg_f64_d(PI * h, n);
                    let [v, dd, dn] = sincg_delta_d(d, n as f32, m as f32);
                    assert_eq!(v.to_bits(), sincg_delta(d, n as f32).to_bits());
                    let sign = conv_sign(d, n as f32, m as f32);
                    let what = format!("N={n} m={m} d={d:e}");
                    // value: against the f64 formula at πδ (on the full index upstream's value
                    // carries the rounding of π·h, the reason for the exact-Bragg rule)
                    let _ = v64;
                    let shift = if (m as i64 * (n as i64 - 1)).rem_euclid(2) == 1 {
                        -1.0
                    } else {
                        1.0
                    };
                    near(
                        &mut wv,
                        v,
                        sign * shift * sincg_f64(PI * d as f64, n),
                        n,
                        2e-6,
                        &what,
                    );
                    // d/dh peaks near N²·π/4; the f64 form on the full index π·h (reduced
                    // there: no cancellation near the spot's centre)
                    let dx_ref = dx64;
                    near(&mut wd, dd, sign * PI * dx_ref, n * n * PI, 2e-6, &what);
                    // d/dN grows like h/δ and carries the rounding of the f32 argument Nδ
                    let sc = dn_scale(d, n, m);
                    // plus the f64 formula's own rounding of π·h (relative |h|·ε/|δ|)
                    let f64_err = dn64.abs() * h.abs() * 2e-10 / (d as f64).abs().max(1e-30);
                    near(
                        &mut wn,
                        dn,
                        sign * dn64,
                        dn64.abs() + sc + f64_err,
                        2e-6,
                        &what,
                    );
                }
            }
        }
        eprintln!("sincg_delta_d worst: value {wv:.1e}, d/dh {wd:.1e}, d/dN {wn:.1e}");
        // lattice factors from three axes, N <= 1 included
        let mut w = [0f64; 8];
        for &(na, nb, nc) in &[
            (5.0f64, 5.0, 5.0),
            (1.0, 10.0, 3.0),
            (50.0, 2.0, 1.0),
            (20.0, 30.0, 40.0),
        ] {
            for _ in 0..300 {
                let d = [0; 3].map(|_| (xorshift(&mut s) - 0.5) as f32);
                let m = [2.0f32, -1.0, 7.0];
                let n = [na as f32, nb as f32, nc as f32];
                let hk: [f64; 3] = std::array::from_fn(|a| m[a] as f64 + d[a] as f64);
                let fudge = 0.5 + xorshift(&mut s);
                let what = format!("N=({na},{nb},{nc}) d={d:?}");
                let nabc = na * nb * nc;
                // square
                let (v64, dx64, dn64) = lattice_square_f64_d(hk[0], hk[1], hk[2], na, nb, nc);
                let (v, dx, dn) = lattice_square_d(d, m, n);
                assert_eq!(
                    v.to_bits(),
                    lattice_square(d[0], d[1], d[2], n[0], n[1], n[2]).to_bits()
                );
                let sign: f64 = (0..3)
                    .filter(|&a| n[a] > 1.0)
                    .map(|a| conv_sign(d[a], n[a], m[a]))
                    .product();
                near(&mut w[0], v, sign * v64, nabc, 4e-6, &what);
                for a in 0..3 {
                    let nn = [na, nb, nc][a];
                    near(
                        &mut w[1],
                        dx[a],
                        sign * dx64[a],
                        nabc * nn * PI,
                        4e-6,
                        &what,
                    );
                    let sc = dn_scale(d[a], nn, m[a] as f64) * nabc / nn;
                    near(
                        &mut w[2],
                        dn[a],
                        sign * dn64[a],
                        dn64[a].abs() + sc,
                        4e-6,
                        &what,
                    );
                }
                // round
                let (v64, dx64, dn64) =
                    lattice_round_f64_d(d[0] as f64, d[1] as f64, d[2] as f64, na, nb, nc, fudge);
                let (v, dx, dn) = lattice_round_d(d, n, fudge as f32);
                assert_eq!(
                    v.to_bits(),
                    lattice_round(d[0], d[1], d[2], n[0], n[1], n[2], fudge as f32).to_bits()
                );
                near(&mut w[3], v, v64, nabc, 4e-6, &what);
                for a in 0..3 {
                    let nn = [na, nb, nc][a];
                    near(&mut w[4], dx[a], dx64[a], nabc * nn, 8e-6, &what);
                    near(&mut w[5], dn[a], dn64[a], nabc / nn, 8e-6, &what);
                }
                // Gaussian and top hat through r2
                let star64 = [
                    [0.012, 0.001, 0.0],
                    [0.0, 0.0125, 0.002],
                    [0.001, 0.0, 0.0111],
                ];
                let star = star64.map(|v| v.map(|x| x as f32));
                let d64 = d.map(|x| x as f64);
                let (r64, rd64, rn64, rs64) = shape_r2_f64_d(
                    d64[0], d64[1], d64[2], star64[0], star64[1], star64[2], na, nb, nc,
                );
                let (r2, rd, rn, rs) = shape_r2_d(d, star, n);
                assert_eq!(
                    r2.to_bits(),
                    shape_r2(d[0], d[1], d[2], star[0], star[1], star[2], n[0], n[1], n[2])
                        .to_bits()
                );
                let n6 = nabc * nabc;
                let scale = n6 * 0.0125 * 0.0125;
                near(&mut w[6], r2, r64, scale, 4e-6, &what);
                for a in 0..3 {
                    near(
                        &mut w[6],
                        rd[a],
                        rd64[a],
                        scale * 4.0 / 0.0125 * 0.0125,
                        8e-6,
                        &what,
                    );
                    near(
                        &mut w[6],
                        rn[a],
                        rn64[a],
                        scale / [na, nb, nc][a],
                        8e-6,
                        &what,
                    );
                    for c in 0..3 {
                        near(&mut w[6], rs[a][c], rs64[a][c], scale / 0.0125, 8e-6, &what);
                    }
                }
                let [g, g_r2, g_n] = lattice_gauss_d(r2, nabc as f32, fudge as f32);
                assert_eq!(
                    g.to_bits(),
                    lattice_gauss(r2, nabc as f32, fudge as f32).to_bits()
                );
                let (g64, g_r264, g_n64) = lattice_gauss_f64_d(r2 as f64, nabc, fudge);
                near(&mut w[7], g, g64, nabc, 4e-6, &what);
                near(&mut w[7], g_r2, g_r264, nabc * fudge / 0.63, 4e-6, &what);
                near(&mut w[7], g_n, g_n64, 1.0, 4e-6, &what);
                let t = lattice_tophat_d(r2, nabc as f32, fudge as f32);
                let t64 = lattice_tophat_f64_d(r2 as f64, nabc, fudge);
                assert_eq!(t.map(|x| x as f64), [t64.0, t64.1, t64.2], "{what}");
            }
        }
        eprintln!("lattice worst: {w:?}");
        // polarisation: gradient along directions perpendicular to d
        let frame = PolarFrame::new([1.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
        let f32v = |v: V3| v.map(|x| x as f32);
        let mut wp = 0f64;
        for _ in 0..500 {
            let d = unit([0; 3].map(|_| xorshift(&mut s) - 0.5));
            let k = [0.0, 0.5, 0.99, 1.0][(xorshift(&mut s) * 4.0) as usize % 4];
            let d32 = f32v(d);
            let (v, g) = polarization_d(
                k as f32,
                f32v(frame.i),
                d32,
                f32v(frame.e_in),
                f32v(frame.b_in),
            );
            // the f64 term on the f32-rounded direction (the inputs' own rounding aside)
            let dd = unit(d32.map(|x| x as f64));
            let (v64, g64) = polarization_f64_d(k, &frame, dd);
            let what = format!("d={d:?} k={k}");
            near(&mut wp, v, v64, 1.0, 4e-7, &what);
            // only the component perpendicular to d matters (the kernel's dd ⟂ d)
            let t = unit(cross(dd, [0.3, -0.7, 0.2]));
            let (a, b) = (
                g.iter().zip(t).map(|(x, y)| *x as f64 * y).sum::<f64>(),
                dot(g64, t),
            );
            near(&mut wp, a as f32, b, 1.0, 2e-6, &what);
        }
        eprintln!("polarization_d worst {wp:.1e}");
        // capture fraction and solid angle
        let mut wc = 0f64;
        for &(t, step, mu, rho) in &[
            (0u32, 1e-6, 300.0, 0.9),
            (3, 5e-5, 2000.0, 0.7),
            (1, 1e-4, 1e5, 1.0),
            (0, 2e-4, 3e4, 0.3),
            (2, 1e-5, 1e3, 0.99),
        ] {
            let [v, dv] = capture_fraction_d(t as f32, (step * mu) as f32, rho as f32);
            assert_eq!(
                v.to_bits(),
                capture_fraction(t as f32, (step * mu) as f32, rho as f32).to_bits()
            );
            let (v64, dv64) = capture_fraction_f64_d(t, step, mu, rho);
            let what = format!("t={t} step={step} mu={mu} rho={rho}");
            near(&mut wc, v, v64, v64, 4e-6, &what);
            near(&mut wc, dv, dv64, dv64.abs() + v64 / rho, 4e-6, &what);
        }
        for &(r, point) in &[(0.1f64, false), (0.234, false), (0.1, true), (0.5, true)] {
            let [w0, w_r, w_c] = solid_angle_d((1.0 / r) as f32, 1e-8, 0.1, point);
            assert_eq!(
                w0.to_bits(),
                solid_angle((1.0 / r) as f32, 1e-8, 0.1, point).to_bits()
            );
            let (w64, w_r64, w_c64) = solid_angle_f64_d(r, 1e-8, 0.1, point);
            near(&mut wc, w0, w64, w64, 4e-7, "solid angle");
            near(&mut wc, w_r, w_r64, w_r64.abs(), 4e-7, "dΩ/dR");
            near(
                &mut wc,
                w_c,
                w_c64,
                w_c64.abs().max(1e-30),
                4e-7,
                "dΩ/dclose",
            );
        }
        eprintln!("capture/solid angle worst {wc:.1e}");
    }

    #[test]
    fn sinc3_derivative_series_joins_formula() {
        for &y in &[
            0.0f32,
            1e-4,
            0.1,
            0.3,
            0.3175,
            0.3185,
            0.5,
            0.6355,
            0.6372,
            0.64,
            1.3,
            7.7,
            std::f32::consts::FRAC_2_PI,
            std::f32::consts::FRAC_2_PI * (1.0 + f32::EPSILON),
        ] {
            let want = sinc3_f64_d_over_x(PI * y as f64);
            let got = sinc3_pi_d_over_x(y) as f64;
            assert!((got - want).abs() < 2e-7, "y={y}: {got} vs {want}");
        }
        for &r in &[0.0f32, 1e-6, 0.1, 0.49, -0.5] {
            let want = if r == 0.0 {
                1.0
            } else {
                (PI * r as f64).sin() / (PI * r as f64)
            };
            assert!(
                (sinc_pi_poly(r) as f64 - want).abs() < 2e-7,
                "sinc_pi_poly({r})"
            );
        }
    }
}

/// The hand-written partials (`*_d`, `*_f64_d`) held against forward-mode dual numbers
/// (`num_dual::Dual64`, one input seeded at a time) through the value functions of
/// [`value`] — the very code of the terms — across each term's domain. The f32 terms' value
/// functions are evaluated in f64 dual arithmetic (their f32 constants exactly), so the
/// reference carries no f32 rounding; where a hand-written form stays because the plain
/// formula loses digits (the grating factor's reduced argument near its poles and zeros, the
/// sinc3 series near 0), the reference is the dual number on the reduced argument, or the
/// domain stops where the formula's own f64 rounding would exceed the tolerance (stated at
/// each term).
#[cfg(test)]
mod dual_tests {
    use super::value;
    use super::*;
    use num_dual::{Dual64, DualNum};

    impl Real for Dual64 {
        fn c32(x: f32) -> Self {
            Dual64::from(x as f64)
        }
        fn c64(x: f64) -> Self {
            Dual64::from(x)
        }
        fn exp(self) -> Self {
            DualNum::exp(&self)
        }
        fn sin(self) -> Self {
            DualNum::sin(&self)
        }
        fn cos(self) -> Self {
            DualNum::cos(&self)
        }
        fn sqrt(self) -> Self {
            DualNum::sqrt(&self)
        }
        fn abs(self) -> Self {
            if self.re < 0.0 {
                -self
            } else {
                self
            }
        }
    }

    /// Value and gradient of `f` at `x`, one dual evaluation per input.
    fn grad<const K: usize>(f: impl Fn([Dual64; K]) -> Dual64, x: [f64; K]) -> (f64, [f64; K]) {
        let mut g = [0.0; K];
        let mut v = 0.0;
        for (i, gi) in g.iter_mut().enumerate() {
            let y: [Dual64; K] =
                std::array::from_fn(|j| Dual64::new(x[j], if i == j { 1.0 } else { 0.0 }));
            let r = f(y);
            v = r.re;
            *gi = r.eps;
        }
        (v, g)
    }

    fn c(x: f64) -> Dual64 {
        Dual64::from(x)
    }

    /// |got − want| ≤ tol·scale, the worst ratio kept.
    fn near(worst: &mut f64, got: f64, want: f64, scale: f64, tol: f64, what: &str) {
        let e = (got - want).abs() / scale;
        *worst = worst.max(e);
        assert!(
            e <= tol,
            "{what}: {got:e} vs dual {want:e} ({e:e} of {scale:e} > {tol:e})"
        );
    }

    fn rng(s: &mut u64) -> f64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The grating factor: `sincg_delta_d` (f32, reduced argument) and `sincg_f64_d` (f64)
    /// against the dual number of upstream's value function sin(Nx)/sin(x). d/dδ: on the
    /// reduced argument x = πδ (the sign (−1)^{m(N−1)} and the f32 convention's (−1)^j apart),
    /// where the dual's quotient rule is exact to f64 rounding; judged against the peak slope
    /// N²π (f32: 2e-6, f64: 1e-12). d/dN: upstream's full index x = π(m + δ), judged against
    /// its size plus the f64 reference's own rounding of π·h (relative |h|·ε/|δ|) and, for f32,
    /// the rounding of its argument Nδ. Domain: N from 2 to 1000, m from 0 to 500, δ at the
    /// centre (1e-7), inside the small-argument cut (1e-5/N), at the zeros of the numerator
    /// (Nδ = 1, 2), at the edges ±1/2 and random.
    #[test]
    fn grating_partials_against_dual_numbers() {
        let mut s = 0x853c49e6748fea9bu64;
        let (mut w32, mut w64) = ([0f64; 2], [0f64; 2]);
        for &n in &[2.0f64, 3.0, 7.0, 40.0, 50.0, 1000.0] {
            for &m in &[0.0f64, 1.0, -3.0, 37.0, 500.0] {
                let mut ds: Vec<f64> =
                    vec![1e-7, -3e-6, 1e-5 / n, 0.5, -0.5, 1.0 / n, 2.0 / n, -1.0 / n];
                ds.extend((0..200).map(|_| rng(&mut s) - 0.5));
                ds.extend((0..100).map(|_| (rng(&mut s) - 0.5) * (4.0 / n).min(1.0)));
                for d in ds.into_iter().filter(|d| d.abs() <= 0.5) {
                    let d32 = d as f32;
                    let dd = d32 as f64;
                    let y = PI * dd;
                    // sin(Ny)/sin(y) in the reduced argument; × (−1)^{m(N−1)} is upstream's
                    let shift = if (m as i64 * (n as i64 - 1)).rem_euclid(2) == 1 {
                        -1.0
                    } else {
                        1.0
                    };
                    let (v_ref, [dx_ref]) = grad(|[x]| value::sincg_f64(x, c(n)), [y]);
                    let (_, [dn_ref]) = grad(|[nn]| value::sincg_f64(c(PI * (m + dd)), nn), [n]);
                    let h = m + dd;
                    let what = format!("N={n} m={m} δ={dd:e}");
                    // f32: the sign of its delta form is (−1)^j·(−1)^{m(N+1)} of upstream's
                    let j = (n as f32 * d32).round_ties_even() as i64;
                    let sign32 = if (j + m as i64 * (n as i64 + 1)).rem_euclid(2) == 1 {
                        -1.0
                    } else {
                        1.0
                    };
                    let [v, ddl, ddn] = sincg_delta_d(d32, n as f32, m as f32);
                    near(
                        &mut w32[0],
                        v as f64,
                        sign32 * shift * v_ref,
                        n,
                        2e-6,
                        &what,
                    );
                    near(
                        &mut w32[0],
                        ddl as f64,
                        sign32 * shift * PI * dx_ref,
                        n * n * PI,
                        2e-6,
                        &what,
                    );
                    let f64_err = dn_ref.abs() * h.abs() * 2e-10 / dd.abs().max(1e-30);
                    let arg = (m.abs() + dd.abs() + 1.0) / y.sin().abs().max(1e-30)
                        * (n * dd.abs()).max(1.0);
                    near(
                        &mut w32[1],
                        ddn as f64,
                        sign32 * dn_ref,
                        dn_ref.abs() + arg + f64_err,
                        2e-6,
                        &what,
                    );
                    // f64 on the full index
                    let (v64, dx64, dn64) = sincg_f64_d(PI * h, n);
                    assert_eq!(v64.to_bits(), sincg_f64(PI * h, n).to_bits());
                    // the dual's quotient rule cancels near the centre (the reason for the
                    // hand-written form): its own rounding, about N·ε/|sin y|, is allowed
                    let quotient_err = 8.0 * n * f64::EPSILON / y.sin().abs().max(1e-300);
                    // and the f64 form's own rounding of π·h on the full index (slope N³)
                    let index_err = n * n * n * (h.abs() + 1.0) * 4.0 * f64::EPSILON;
                    near(
                        &mut w64[0],
                        dx64,
                        shift * dx_ref,
                        n * n * 1e-12 + quotient_err + index_err,
                        1.0,
                        &what,
                    );
                    near(
                        &mut w64[1],
                        dn64,
                        dn_ref,
                        dn_ref.abs() * 1e-3 + f64_err + 1e-12,
                        1e-9,
                        &what,
                    );
                }
            }
        }
        eprintln!(
            "grating vs dual: f32 d/dδ {:.1e} d/dN {:.1e}; f64 d/dx {:.1e} d/dN {:.1e}",
            w32[0], w32[1], w64[0], w64[1]
        );
    }

    /// The other lattice shapes and the per-pixel factors, f32 and f64, against the dual
    /// numbers of their value functions; tolerances relative to the scale of each partial
    /// (f32 forms 4e-6, f64 forms 1e-12, the round shape's closed form 1e-9 and only where
    /// π·√(hrad²·fudge) ≥ 0.05, below which the dual of sinc3's closed form loses digits that
    /// the hand-written series keeps: `sinc3_derivative_series_joins_formula`).
    #[test]
    fn term_partials_against_dual_numbers() {
        let mut s = 0x2545f4914f6cdd1du64;
        let mut w = [0f64; 10];
        let star64 = [
            [0.012, 0.001, 0.0],
            [0.0, 0.0125, 0.002],
            [0.001, 0.0, 0.0111],
        ];
        for &n in &[
            [5.0f64, 5.0, 5.0],
            [1.0, 10.0, 3.0],
            [50.0, 2.0, 1.0],
            [20.0, 30.0, 40.0],
        ] {
            for _ in 0..300 {
                let d: [f64; 3] = [0; 3].map(|_| ((rng(&mut s) - 0.5) as f32) as f64);
                let fudge = 0.5 + rng(&mut s);
                let nabc = n[0] * n[1] * n[2];
                let what = format!("N={n:?} δ={d:?} fudge={fudge}");
                // shape_r2 (f32 and f64): inputs δ (3), N (3), a*, b*, c* (9)
                let f15 = |x: [Dual64; 15], f64form: bool| {
                    let dd = [x[0], x[1], x[2]];
                    let nn = [x[3], x[4], x[5]];
                    let st = [
                        [x[6], x[7], x[8]],
                        [x[9], x[10], x[11]],
                        [x[12], x[13], x[14]],
                    ];
                    if f64form {
                        value::shape_r2_f64(dd, st, nn)
                    } else {
                        value::shape_r2(dd, st, nn)
                    }
                };
                let mut x15 = [0.0; 15];
                x15[..3].copy_from_slice(&d);
                x15[3..6].copy_from_slice(&n);
                for a in 0..3 {
                    x15[6 + 3 * a..9 + 3 * a]
                        .copy_from_slice(&star64[a].map(|v| (v as f32) as f64));
                }
                let n6 = nabc * nabc;
                let scale = n6 * 0.0125 * 0.0125;
                for f64form in [false, true] {
                    let (r2, g) = grad(|x| f15(x, f64form), x15);
                    let star: [[f64; 3]; 3] =
                        std::array::from_fn(|a| std::array::from_fn(|c| x15[6 + 3 * a + c]));
                    let (v, rd, rn, rs, tol, k) = if f64form {
                        let (v, rd, rn, rs) = shape_r2_f64_d(
                            d[0], d[1], d[2], star[0], star[1], star[2], n[0], n[1], n[2],
                        );
                        (v, rd, rn, rs, 1e-12, 0)
                    } else {
                        let f = |v: [f64; 3]| v.map(|x| x as f32);
                        let (v, rd, rn, rs) = shape_r2_d(f(d), star.map(f), f(n));
                        (
                            v as f64,
                            rd.map(|x| x as f64),
                            rn.map(|x| x as f64),
                            rs.map(|r| r.map(|x| x as f64)),
                            4e-6,
                            1,
                        )
                    };
                    near(&mut w[k], v, r2, scale, tol, &what);
                    for a in 0..3 {
                        near(&mut w[k], rd[a], g[a], scale / 0.0125 * 4.0, tol, &what);
                        near(&mut w[k], rn[a], g[3 + a], scale / n[a], tol, &what);
                        for cc in 0..3 {
                            near(
                                &mut w[k],
                                rs[a][cc],
                                g[6 + 3 * a + cc],
                                scale / 0.0125,
                                tol,
                                &what,
                            );
                        }
                    }
                }
                // Gaussian (f32, f64): inputs r2, nabc
                let r2 = value::shape_r2_f64(d, star64, n);
                let (gv, [g_r2, g_n]) = grad(
                    |[r, nn]| value::lattice_gauss(r, nn, c(fudge as f32 as f64)),
                    [r2 as f32 as f64, nabc],
                );
                let [v, d_r2, d_n] = lattice_gauss_d(r2 as f32, nabc as f32, fudge as f32);
                near(&mut w[2], v as f64, gv, nabc, 4e-6, &what);
                near(
                    &mut w[2],
                    d_r2 as f64,
                    g_r2,
                    nabc * fudge / 0.63,
                    4e-6,
                    &what,
                );
                near(&mut w[2], d_n as f64, g_n, 1.0, 4e-6, &what);
                let (gv, [g_r2, g_n]) = grad(
                    |[r, nn]| value::lattice_gauss_f64(r, nn, c(fudge)),
                    [r2, nabc],
                );
                let (v, d_r2, d_n) = lattice_gauss_f64_d(r2, nabc, fudge);
                near(&mut w[3], v, gv, nabc, 1e-12, &what);
                near(&mut w[3], d_r2, g_r2, nabc * fudge / 0.63, 1e-12, &what);
                near(&mut w[3], d_n, g_n, 1.0, 1e-12, &what);
                // round (f32 and f64 against the f64 value function): inputs δ, N
                let hrad2: f64 = (0..3).map(|a| (d[a] * n[a]).powi(2)).sum();
                if PI * (hrad2 * fudge).sqrt() >= 0.05 {
                    let (rv, g) = grad(
                        |x| {
                            value::lattice_round_f64(
                                [x[0], x[1], x[2]],
                                [x[3], x[4], x[5]],
                                c(fudge),
                            )
                        },
                        [d[0], d[1], d[2], n[0], n[1], n[2]],
                    );
                    let (v, dd, dn) =
                        lattice_round_f64_d(d[0], d[1], d[2], n[0], n[1], n[2], fudge);
                    near(&mut w[4], v, rv, nabc, 1e-12, &what);
                    let f = |v: [f64; 3]| v.map(|x| x as f32);
                    let (v32, dd32, dn32) = lattice_round_d(f(d), f(n), fudge as f32);
                    let rv32 = value::lattice_round_f64(d, n, fudge as f32 as f64);
                    near(&mut w[5], v32 as f64, rv32, nabc, 4e-6, &what);
                    let (_, g32) = grad(
                        |x| {
                            value::lattice_round_f64(
                                [x[0], x[1], x[2]],
                                [x[3], x[4], x[5]],
                                c(fudge as f32 as f64),
                            )
                        },
                        [d[0], d[1], d[2], n[0], n[1], n[2]],
                    );
                    for a in 0..3 {
                        near(&mut w[4], dd[a], g[a], nabc * n[a], 1e-9, &what);
                        near(&mut w[4], dn[a], g[3 + a], nabc / n[a], 1e-9, &what);
                        near(&mut w[5], dd32[a] as f64, g32[a], nabc * n[a], 8e-6, &what);
                        near(
                            &mut w[5],
                            dn32[a] as f64,
                            g32[3 + a],
                            nabc / n[a],
                            8e-6,
                            &what,
                        );
                    }
                }
            }
        }
        // polarisation (f32 and f64) against the dual of the fast form in f64: the gradient
        // along directions perpendicular to d (f64's normalises d); near E² + B² = 0 (d along
        // the beam) too, k from 0 to 1
        let frame = PolarFrame::new([1.0, 0.0, 0.0], [0.0, 0.3, 1.0]);
        let f32v = |v: V3| v.map(|x| x as f32);
        let r32 = |v: V3| v.map(|x| x as f32 as f64);
        let mut dirs: Vec<V3> = (0..400)
            .map(|_| unit([0; 3].map(|_| rng(&mut s) - 0.5)))
            .collect();
        dirs.extend(
            [
                [1.0, 1e-3, 2e-3],
                [1.0, -1e-2, 0.0],
                [0.6, 0.8, 0.0],
                [0.0, 0.0, 1.0],
            ]
            .map(unit),
        );
        for d in dirs {
            for k in [0.0, 0.5, 0.99, 1.0] {
                let d32 = r32(d);
                let (i, e, b) = (r32(frame.i), r32(frame.e_in), r32(frame.b_in));
                let (pv, g) = grad(
                    |x| value::polarization(c(k), i.map(c), x, e.map(c), b.map(c)),
                    d32,
                );
                let (v, g32) = polarization_d(
                    k as f32,
                    f32v(frame.i),
                    f32v(d32),
                    f32v(frame.e_in),
                    f32v(frame.b_in),
                );
                let what = format!("d={d:?} k={k}");
                near(&mut w[6], v as f64, pv, 1.0, 4e-7, &what);
                let t = unit(cross(d32, [0.3, -0.7, 0.2]));
                let along = |g: [f64; 3]| g[0] * t[0] + g[1] * t[1] + g[2] * t[2];
                let gs = g.iter().map(|x| x.abs()).fold(1.0, f64::max);
                near(
                    &mut w[6],
                    along(g32.map(|x| x as f64)),
                    along(g),
                    gs,
                    4e-6,
                    &what,
                );
                let (pv, g) = grad(
                    |x| {
                        value::polarization(
                            c(k),
                            frame.i.map(c),
                            x,
                            frame.e_in.map(c),
                            frame.b_in.map(c),
                        )
                    },
                    d,
                );
                let (v64, g64) = polarization_f64_d(k, &frame, d);
                near(&mut w[7], v64, pv, 1.0, 1e-12, &what);
                near(&mut w[7], along(g64), along(g), gs, 1e-10, &what);
            }
        }
        // capture fraction: d/dρ, thin layers (the series of 1 − e^−x) to thick ones
        for &(t, step, mu, rho) in &[
            (0u32, 1e-6, 300.0, 0.9),
            (3, 5e-5, 2000.0, 0.7),
            (1, 1e-4, 1e5, 1.0),
            (0, 2e-4, 3e4, 0.3),
            (2, 1e-5, 1e3, 0.99),
            (5, 3e-5, 1e4, 0.05),
        ] {
            let what = format!("t={t} step={step} mu={mu} rho={rho}");
            let ms = (step * mu) as f32 as f64;
            let (cv, [g]) = grad(
                |[r]| value::capture_fraction(c(t as f64), c(ms), r),
                [rho as f32 as f64],
            );
            let [v, dv] = capture_fraction_d(t as f32, ms as f32, rho as f32);
            near(&mut w[8], v as f64, cv, cv, 4e-6, &what);
            near(&mut w[8], dv as f64, g, g.abs() + cv / rho, 4e-6, &what);
            let (cv, [g]) = grad(
                |[r]| value::capture_fraction_f64(c(t as f64), c(step), c(mu), r),
                [rho],
            );
            let (v, dv) = capture_fraction_f64_d(t, step, mu, rho);
            near(&mut w[8], v, cv, cv, 1e-12, &what);
            near(&mut w[8], dv, g, g.abs() + cv / rho, 1e-9, &what);
        }
        // solid angle: dΩ/dR (through 1/R for the fast form) and dΩ/d close_distance
        for &(r, close, point) in &[
            (0.1f64, 0.1, false),
            (0.234, 0.2, false),
            (0.1, 0.1, true),
            (2.5, 1.0, true),
            (0.05, 0.01, false),
        ] {
            let what = format!("R={r} close={close} point={point}");
            let px2 = 1e-8;
            let inv = (1.0 / r) as f32 as f64;
            let (ov, [g_inv, g_c]) = grad(
                |[ir, cd]| value::solid_angle(ir, c(px2 as f32 as f64), cd, point),
                [inv, close as f32 as f64],
            );
            let [v, d_r, d_c] = solid_angle_d(inv as f32, px2 as f32, close as f32, point);
            near(&mut w[9], v as f64, ov, ov, 4e-7, &what);
            // dΩ/dR = dΩ/d(1/R)·(−1/R²)
            near(
                &mut w[9],
                d_r as f64,
                -g_inv * inv * inv,
                (g_inv * inv * inv).abs(),
                4e-7,
                &what,
            );
            near(
                &mut w[9],
                d_c as f64,
                g_c,
                g_c.abs().max(1e-30),
                4e-7,
                &what,
            );
            let (ov, [g_r, g_c]) = grad(
                |[rr, cd]| value::solid_angle_f64(rr, c(px2), cd, point),
                [r, close],
            );
            let (v, d_r, d_c) = solid_angle_f64_d(r, px2, close, point);
            near(&mut w[9], v, ov, ov, 1e-14, &what);
            near(&mut w[9], d_r, g_r, g_r.abs(), 1e-14, &what);
            near(&mut w[9], d_c, g_c, g_c.abs().max(1e-300), 1e-14, &what);
        }
        // tricubic's building block: d/dx of the 4-point Lagrange form, all four differences
        // moving with x, at fractions near 0 and 1 and in between
        for i in 0..500 {
            let x = (i as f64 - 250.0) * 0.0173 + rng(&mut s) * 1e-3;
            let xf = x.floor();
            let y = [
                rng(&mut s) * 3.0 - 1.0,
                7.0 * rng(&mut s),
                -2.5,
                1.0 + rng(&mut s),
            ];
            let (pv, [g]) = grad(
                |[xx]| {
                    value::polint4(
                        [
                            xx - c(xf - 1.0),
                            xx - c(xf),
                            xx - c(xf + 1.0),
                            xx - c(xf + 2.0),
                        ],
                        y.map(c),
                    )
                },
                [x],
            );
            let dx = node_diffs(x, xf);
            near(
                &mut w[9],
                polint4(dx, y),
                pv,
                10.0,
                1e-14,
                &format!("polint4 x={x}"),
            );
            near(
                &mut w[9],
                polint4_d(dx, y),
                g,
                10.0,
                1e-13,
                &format!("polint4 x={x}"),
            );
        }
        eprintln!("terms vs dual numbers, worst: {w:?}");
    }
}
