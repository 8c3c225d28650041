//! Per-term physics shared by the CPU kernels: polarisation, lattice factors, structure
//! factors (nearest and tricubic). f64 versions follow upstream's association order (parity
//! mode); f32 versions use the forms the WGSL kernel uses (MODEL §9.2, §9.5).

use crate::plan::{HklGrid, Plan, Shape};
use crate::vec3::{cross, dot, unit, V3};
use std::f64::consts::PI;

/// The per-source part of the Kahn polarisation factor: the unit incident direction and the
/// polarisation-plane axes, which upstream recomputes for every pixel with the same result.
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

/// Kahn polarisation factor (MODEL §5.6), f64, with upstream's operations and order.
pub fn polarization_factor(k: f64, frame: &PolarFrame, d: V3) -> f64 {
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

#[inline]
pub fn sincg(x: f64, n: f64) -> f64 {
    if x == 0.0 {
        n
    } else {
        (x * n).sin() / x.sin()
    }
}

#[inline]
fn sinc3(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        3.0 * (x.sin() / x - x.cos()) / (x * x)
    }
}

/// Lattice factor F_latt (MODEL §6.3), f64, upstream's formulas.
#[inline]
pub fn lattice_f64(p: &Plan, h: f64, k: f64, l: f64, h0: f64, k0: f64, l0: f64) -> f64 {
    match p.shape {
        Shape::Square => {
            let mut f = 1.0;
            if p.na > 1.0 {
                f *= sincg(PI * h, p.na);
            }
            if p.nb > 1.0 {
                f *= sincg(PI * k, p.nb);
            }
            if p.nc > 1.0 {
                f *= sincg(PI * l, p.nc);
            }
            f
        }
        Shape::Round => {
            let (dh, dk, dl) = (h - h0, k - k0, l - l0);
            let hrad2 =
                ((dh * dh) * p.na) * p.na + ((dk * dk) * p.nb) * p.nb + ((dl * dl) * p.nc) * p.nc;
            ((p.na * p.nb) * p.nc) * 0.723601254558268 * sinc3(PI * (hrad2 * p.fudge).sqrt())
        }
        Shape::Gauss | Shape::Tophat => {
            let (dh, dk, dl) = (h - h0, k - k0, l - l0);
            let mut d = [0.0; 3];
            for c in 0..3 {
                d[c] = (dh * p.a_star[c] + dk * p.b_star[c]) + dl * p.c_star[c];
            }
            let r2 = ((d[0] * d[0] + d[1] * d[1]) + d[2] * d[2])
                * p.na
                * p.na
                * p.nb
                * p.nb
                * p.nc
                * p.nc;
            if p.shape == Shape::Gauss {
                ((p.na * p.nb) * p.nc) * (-(r2 / 0.63 * p.fudge)).exp()
            } else if r2 * p.fudge < 0.3969 {
                (p.na * p.nb) * p.nc
            } else {
                0.0
            }
        }
    }
}

/// True when a tricubic stencil around (h,k,l) leaves the table (MODEL §6.4's range rule).
#[inline]
pub fn outside_interpolation_range(g: &HklGrid, h: f64, k: f64, l: f64) -> bool {
    (h - g.h_min as f64 + 3.0) > g.h_range() as f64
        || (h - 2.0) < g.h_min as f64
        || (k - g.k_min as f64 + 3.0) > g.k_range() as f64
        || (k - 2.0) < g.k_min as f64
        || (l - g.l_min as f64 + 3.0) > g.l_range() as f64
        || (l - 2.0) < g.l_min as f64
}

/// Nearest-reflection structure factor, or default_F outside the table.
#[inline]
pub fn f_nearest(p: &Plan, h0: i64, k0: i64, l0: i64) -> f64 {
    let g = &p.hkl;
    if g.hkls != 0
        && (g.h_min as i64..=g.h_max as i64).contains(&h0)
        && (g.k_min as i64..=g.k_max as i64).contains(&k0)
        && (g.l_min as i64..=g.l_max as i64).contains(&l0)
    {
        g.at(
            (h0 - g.h_min as i64) as i32,
            (k0 - g.k_min as i64) as i32,
            (l0 - g.l_min as i64) as i32,
        )
    } else {
        p.default_f
    }
}

/// 4-point Lagrange interpolation with the node coordinates as numbers, upstream's order.
#[inline]
pub(crate) fn polint(xa: [f64; 4], ya: [f64; 4], x: f64) -> f64 {
    let [x0, x1, x2, x3] = xa;
    (((x - x1) * (x - x2)) * (x - x3)) * ya[0] / (((x0 - x1) * (x0 - x2)) * (x0 - x3))
        + (((x - x0) * (x - x2)) * (x - x3)) * ya[1] / (((x1 - x0) * (x1 - x2)) * (x1 - x3))
        + (((x - x0) * (x - x1)) * (x - x3)) * ya[2] / (((x2 - x0) * (x2 - x1)) * (x2 - x3))
        + (((x - x0) * (x - x1)) * (x - x2)) * ya[3] / (((x3 - x0) * (x3 - x1)) * (x3 - x2))
}

/// Tricubic structure factor; the caller has checked the range.
pub fn f_tricubic(g: &HklGrid, h: f64, k: f64, l: f64) -> f64 {
    let (hf, kf, lf) = (h.floor() as i32, k.floor() as i32, l.floor() as i32);
    let nodes = |f: i32| [(f - 1) as f64, f as f64, (f + 1) as f64, (f + 2) as f64];
    let (xh, xk, xl) = (nodes(hf), nodes(kf), nodes(lf));
    let mut tmp_h = [0.0; 4];
    for i1 in 0..4 {
        let mut tmp_k = [0.0; 4];
        for i2 in 0..4 {
            let mut ys = [0.0; 4];
            for (i3, y) in ys.iter_mut().enumerate() {
                *y = g.at(
                    hf - 1 + i1 as i32 - g.h_min,
                    kf - 1 + i2 as i32 - g.k_min,
                    lf - 1 + i3 as i32 - g.l_min,
                );
            }
            tmp_k[i2] = polint(xl, ys, l);
        }
        tmp_h[i1] = polint(xk, tmp_k, k);
    }
    polint(xh, tmp_h, h)
}

// ---------------------------------------------------------------- f32 forms (fast mode)

/// sin(pi x) for |x| <= 1/2 (odd minimax-style Taylor polynomial, ~1 ulp in f32).
#[inline]
pub fn sinpi_reduced(x: f32) -> f32 {
    let z = x * x;
    // coefficients of sin(pi x) = x * sum c_k z^k
    let p = 0.000_466_302_8 * z - 0.007_370_431;
    let p = p * z + 0.082_145_89;
    let p = p * z - 0.599_264_5;
    let p = p * z + 2.550_164;
    let p = p * z - 5.167_712_8;
    let p = p * z + std::f32::consts::PI;
    x * p
}

/// |sin(pi N d) / sin(pi d)| with |d| <= 1/2 (delta form of the grating function).
#[inline]
pub fn sincg_delta(d: f32, n: f32) -> f32 {
    if d == 0.0 {
        return n;
    }
    let x = n * d;
    let m = x.round();
    let r = x - m;
    let num = sinpi_reduced(r);
    let den = sinpi_reduced(d);
    (num / den).abs()
}

/// sinc3 with a series for small arguments (f32).
#[inline]
pub fn sinc3_f32(x: f32) -> f32 {
    if x.abs() < 0.1 {
        let z = x * x;
        1.0 - z / 10.0 + z * z / 280.0 - z * z * z / 15120.0
    } else {
        3.0 * (x.sin() / x - x.cos()) / (x * x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tensor-product cubic Lagrange interpolation is exact for a cubic in each index, and the
    /// range rule keeps one index of margin beyond the stencil.
    #[test]
    fn tricubic_reproduces_cubics_and_range_rule() {
        let f = |h: f64, k: f64, l: f64| 5.0 + 0.5 * h * h * h - k * k + 2.0 * l + 0.1 * h * k * l;
        let (lo, hi) = (-5i32, 5i32);
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
        let g = HklGrid {
            h_min: lo,
            h_max: hi,
            k_min: lo,
            k_max: hi,
            l_min: lo,
            l_max: hi,
            hkls: r * r * r,
            data,
        };
        for &(h, k, l) in &[(0.3, -1.7, 2.2), (-2.9, 2.99, -3.0), (1.5, 0.0, 0.25)] {
            assert!(!outside_interpolation_range(&g, h, k, l));
            let got = f_tricubic(&g, h, k, l);
            assert!(
                (got - f(h, k, l)).abs() < 1e-9,
                "({h},{k},{l}): {got} vs {}",
                f(h, k, l)
            );
        }
        // h_min + 2 <= h <= h_max - 2
        assert!(!outside_interpolation_range(&g, 3.0, 0.0, 0.0));
        assert!(outside_interpolation_range(&g, 3.01, 0.0, 0.0));
        assert!(outside_interpolation_range(&g, 0.0, -3.01, 0.0));
    }

    #[test]
    fn sinpi_is_accurate() {
        for i in -500..=500 {
            let x = i as f64 / 1000.0;
            let want = (PI * x).sin();
            let got = sinpi_reduced(x as f32) as f64;
            assert!((got - want).abs() < 3e-7, "x={x} got={got} want={want}");
        }
    }

    #[test]
    fn delta_form_matches_grating_function() {
        for &n in &[2.0f64, 5.0, 10.0, 50.0] {
            for i in 0..200 {
                let h = 37.0 + (i as f64) * 0.0049 - 0.5;
                let want = sincg(PI * h, n).abs();
                let d = h - h.round();
                let got = sincg_delta(d as f32, n as f32) as f64;
                assert!(
                    (got - want).abs() <= 2e-5 * n,
                    "n={n} h={h} got={got} want={want}"
                );
            }
        }
    }

    #[test]
    fn sinc3_series_joins_formula() {
        for &x in &[0.0f32, 0.01, 0.05, 0.0999, 0.1001, 0.5, 2.0] {
            let want = sinc3(x as f64);
            assert!((sinc3_f32(x) as f64 - want).abs() < 2e-5, "x={x}");
        }
    }
}
