//! What is on the image (issue 18 §2): the reflections whose excitation error is within reach of
//! the Ewald sphere, and for an oscillation every reflection that crosses the sphere during it,
//! with the φ at which it does (as DIALS predicts a rotation scan). Only the shell near the sphere
//! is enumerated (`Geometry::row` with a window), so a large cell costs what its spots cost, not
//! what its lattice within the resolution limit costs: a 350 Å cell at 2 Å lists its tens of
//! thousands of spots instead of refusing its 2·10⁷ lattice points.
//!
//! * still (no oscillation: `phistep·phisteps = 0`): every (h, k, l) with `|ε| ≤ tolerance`
//!   (the record's `in_condition`, `Geometry::tolerance`: lattice peak, mosaic, divergence,
//!   dispersion), evaluated at phi0;
//! * oscillation `[phi0, phi0 + phistep·phisteps]` (the exposure, not only the sampled steps):
//!   every crossing of the sphere, `s0·R(Δ)r = −|r|²/2`, solved in closed form (`crossings`),
//!   one record per crossing at its φ (ε = 0 there, up to rounding): a reflection that enters
//!   and leaves the sphere within the oscillation is listed twice, at each φ.
//!
//! The window that bounds the enumeration is the largest tolerance any point can have
//! (`window`): the lattice peak's widest extent (the smallest singular value of the crystal's
//! N-scaled real basis), plus `rmax·mosaic + (1/λ)·divergence + 2·Δ(1/λ)`, widened by
//! `rmax·|oscillation|` for a rotation.

use super::{assemble, Geometry, PredictOptions, Prediction, Reflection};
use crate::error::{Error, Result};
use crate::plan::Shape;
use crate::resolve::Setup;
use crate::vec3::{cross, dot, mag, scale, sub, V3};
use rayon::prelude::*;
use std::f64::consts::PI;

/// Smallest eigenvalue of a symmetric 3×3 matrix (closed form, trigonometric).
fn min_eigenvalue(a: [[f64; 3]; 3]) -> f64 {
    let p1 = a[0][1].powi(2) + a[0][2].powi(2) + a[1][2].powi(2);
    let q = (a[0][0] + a[1][1] + a[2][2]) / 3.0;
    let p2 = (a[0][0] - q).powi(2) + (a[1][1] - q).powi(2) + (a[2][2] - q).powi(2) + 2.0 * p1;
    if p2 <= 0.0 {
        return q;
    }
    let p = (p2 / 6.0).sqrt();
    let b = |i: usize, j: usize| (a[i][j] - if i == j { q } else { 0.0 }) / p;
    let det = b(0, 0) * (b(1, 1) * b(2, 2) - b(1, 2) * b(2, 1))
        - b(0, 1) * (b(1, 0) * b(2, 2) - b(1, 2) * b(2, 0))
        + b(0, 2) * (b(1, 0) * b(2, 1) - b(1, 1) * b(2, 0));
    let phi = (det / 2.0).clamp(-1.0, 1.0).acos() / 3.0;
    q + 2.0 * p * (phi + 2.0 * PI / 3.0).cos()
}

/// The largest lattice-peak width (1/Å) over all directions (`Geometry::shape_width`), or
/// infinity when a square-shape axis has one cell (its factor is constant: no peak).
fn shape_width_max(g: &Geometry) -> f64 {
    let p = g.plan;
    let ns = [p.na, p.nb, p.nc];
    let fudge = p.fudge.max(f64::MIN_POSITIVE);
    let coefficient = match p.shape {
        // constant over directions
        Shape::Gauss | Shape::Tophat => return g.shape_width([1.0, 0.0, 0.0]),
        Shape::Square if ns.iter().any(|&n| n <= 1.0) => return f64::INFINITY,
        Shape::Square => 1.0,
        Shape::Round => 4.493_409_457_909_064 / PI / fudge.sqrt(),
    };
    // width = coefficient / |M n|, M's rows N_i·a_i: at most coefficient / σ_min(M)
    let rows = [0, 1, 2].map(|i| scale(g.real[i], ns[i]));
    let mut gram = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            gram[i][j] = dot(rows[i], rows[j]);
        }
    }
    let smin = min_eigenvalue(gram).max(0.0).sqrt();
    if smin > 0.0 {
        coefficient / smin * (1.0 + 1e-9)
    } else {
        f64::INFINITY
    }
}

/// The largest tolerance of any point within the resolution limit (1/Å).
pub fn window(g: &Geometry) -> f64 {
    shape_width_max(g) + g.rmax * g.mosaic + g.k * g.divergence + 2.0 * g.dk
}

/// Rotations Δ (rad, from phi0, within `[min(0, sweep), max(0, sweep)]`) at which the point
/// `r` (reference orientation) is on the Ewald sphere: `s0·R(Δ)r = −|r|²/2`, with
/// `R(Δ)r = r∥ + cos Δ·r⊥ + sin Δ·(u × r⊥)` (Rodrigues, spindle `u`).
pub fn crossings(g: &Geometry, r: V3, sweep: f64) -> Vec<f64> {
    let u = g.spindle;
    let r_par = scale(u, dot(u, r));
    let r_perp = sub(r, r_par);
    let a = dot(g.s0, r_par);
    let b = dot(g.s0, r_perp);
    let c = dot(g.s0, cross(u, r_perp));
    let rr = b.hypot(c);
    let mut out = Vec::new();
    if rr == 0.0 {
        return out;
    }
    let x = (-dot(r, r) / 2.0 - a) / rr;
    if !(x.abs() <= 1.0) {
        return out;
    }
    let alpha = c.atan2(b);
    let (lo, hi) = (sweep.min(0.0), sweep.max(0.0));
    let t = x.acos();
    for base in [alpha + t, alpha - t] {
        // every turn of the solution within [lo, hi]
        let m0 = ((lo - base) / (2.0 * PI)).ceil() as i64;
        let m1 = ((hi - base) / (2.0 * PI)).floor() as i64;
        for m in m0..=m1 {
            let d = base + 2.0 * PI * m as f64;
            if (lo..=hi).contains(&d) && !out.iter().any(|&o: &f64| (o - d).abs() < 1e-12) {
                out.push(d);
            }
        }
        if t == 0.0 {
            break; // tangent: one solution
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// The reflections on the image (see the module documentation), enumerated from the shell near
/// the Ewald sphere. `opts.max_points` bounds the listing; `opts.max_excitation_error`, when
/// given, narrows the window further.
pub fn predict_on_image(setup: &Setup, opts: &PredictOptions) -> Result<Prediction> {
    let mut g = Geometry::new(setup)?;
    let sweep = setup.phistep * setup.plan.phisteps as f64;
    g.sweep = if sweep.is_finite() { sweep } else { 0.0 };
    let mut w = window(&g);
    if let Some(m) = opts.max_excitation_error {
        w = w.min(m);
    }
    let win = w.is_finite().then_some(w);
    let hm = g.h_max();
    let g = &g;
    let rows: Vec<Vec<Reflection>> = (-hm..=hm)
        .into_par_iter()
        .map(|h| {
            let mut out = Vec::new();
            g.row(h, win, |k, lo, hi| {
                for l in lo..=hi {
                    if h == 0 && k == 0 && l == 0 {
                        continue; // the direct beam
                    }
                    let [a_s, b_s, c_s] = g.recip;
                    let r: V3 = std::array::from_fn(|c| {
                        h as f64 * a_s[c] + k as f64 * b_s[c] + l as f64 * c_s[c]
                    });
                    if mag(r) > g.rmax {
                        continue;
                    }
                    if g.sweep == 0.0 {
                        let eps = mag(super::add(r, g.s0)) - g.k;
                        if !(eps.abs() <= w) {
                            continue;
                        }
                        let rec = g.record(h, k, l, r, 0.0);
                        if rec.in_condition {
                            out.push(rec);
                        }
                    } else {
                        for d in crossings(g, r, g.sweep) {
                            out.push(g.record(h, k, l, r, d));
                        }
                    }
                }
            });
            out
        })
        .collect();
    let n: usize = rows.iter().map(Vec::len).sum();
    if n > opts.max_points {
        return Err(Error::geometry(format!(
            "-predict: {n} reflections are on the image, more than the {} it lists; give a larger -dmin",
            opts.max_points
        ))
        .with_flag("-predict"));
    }
    let mut reflections = Vec::with_capacity(n);
    for r in rows {
        reflections.extend(r);
    }
    Ok(assemble(setup, g, reflections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{prepare, split_args};
    use crate::files::MemFiles;

    fn setup(words: &str) -> Setup {
        prepare(&split_args(words), &MemFiles::default())
            .unwrap()
            .setup
    }

    #[test]
    fn min_eigenvalue_of_a_diagonal_and_a_rotated_matrix() {
        assert!(
            (min_eigenvalue([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]) - 1.0).abs()
                < 1e-12
        );
        // [[2,1,0],[1,2,0],[0,0,5]]: eigenvalues 1, 3, 5
        assert!(
            (min_eigenvalue([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]]) - 1.0).abs()
                < 1e-12
        );
    }

    /// Each crossing φ against a brute-force scan of ε(φ) in steps of 10⁻³ °: every sign change
    /// of ε is found, within a step, and nothing else.
    #[test]
    fn crossing_phi_against_brute_force() {
        let st = setup(
            "-cell 40 50 60 85 95 100 -misset 10 20 30 -default_F 1 -lambda 1.1 -distance 80 \
             -detpixels 128 -phi 5 -osc 20 -phisteps 4",
        );
        let pred = predict_on_image(&st, &PredictOptions::default()).unwrap();
        let g = Geometry::new(&st).unwrap();
        let sweep = st.phistep * st.plan.phisteps as f64;
        assert!((sweep.to_degrees() - 20.0).abs() < 1e-9);
        assert!((pred.phi_end - 25.0).abs() < 1e-9 && (pred.phi0 - 5.0).abs() < 1e-9);
        let eps_at = |r: V3, d: f64| {
            mag(super::super::add(
                crate::vec3::rotaxis(r, g.spindle, d),
                g.s0,
            )) - g.k
        };
        let step = 1e-3f64.to_radians();
        let n = (sweep / step).round() as usize;
        let mut checked = 0;
        // every (h, k, l) in a box
        for h in -6i64..=6 {
            for k in -6i64..=6 {
                for l in -6i64..=6 {
                    if (h, k, l) == (0, 0, 0) {
                        continue;
                    }
                    let r: V3 = std::array::from_fn(|c| {
                        h as f64 * g.recip[0][c]
                            + k as f64 * g.recip[1][c]
                            + l as f64 * g.recip[2][c]
                    });
                    let mut brute = Vec::new();
                    let mut prev = eps_at(r, 0.0);
                    for i in 1..=n {
                        let e = eps_at(r, i as f64 * step);
                        if (e > 0.0) != (prev > 0.0) {
                            brute.push((i as f64 - 0.5) * step);
                        }
                        prev = e;
                    }
                    let found = crossings(&g, r, sweep);
                    assert_eq!(
                        found.len(),
                        brute.len(),
                        "({h} {k} {l}): {found:?} vs {brute:?}"
                    );
                    for (a, b) in found.iter().zip(&brute) {
                        assert!((a - b).abs() <= step, "({h} {k} {l}): {a} vs {b}");
                        assert!(eps_at(r, *a).abs() < 1e-12);
                    }
                    // the listing has each crossing inside the resolution limit, at its φ
                    if mag(r) <= g.rmax {
                        for d in &found {
                            let phi = (st.phi0 + d).to_degrees();
                            assert!(
                                pred.reflections.iter().any(|x| (x.h, x.k, x.l)
                                    == (h as i32, k as i32, l as i32)
                                    && (x.phi - phi).abs() < 1e-9
                                    && x.excitation_error.abs() < 1e-12
                                    && x.in_condition),
                                "({h} {k} {l}) at φ {phi} not listed"
                            );
                        }
                    }
                    checked += brute.len();
                }
            }
        }
        assert!(checked > 300, "only {checked} crossings checked");
    }

    /// A still: the shell listing is exactly the full listing's in-condition points.
    #[test]
    fn still_lists_the_in_condition_points_of_the_full_listing() {
        for words in [
            "-cell 70 80 90 75 85 95 -misset 15 25 35 -default_F 1 -N 5 -mosaic 0.5 -detpixels 256",
            "-cell 30 40 50 80 95 105 -misset 10 20 30 -default_F 1 -lambda 1.3 -distance 80 -round_xtal -N 8 -detpixels 200",
            "-cell 50 50 50 90 90 90 -misset 3 4 5 -default_F 1 -gauss_xtal -N 10 -dispersion 2 -divergence 1 -detpixels 128",
        ] {
            let st = setup(words);
            let all = super::super::predict(&st, &PredictOptions::default()).unwrap();
            let mut want: Vec<_> = all
                .reflections
                .iter()
                .filter(|r| r.in_condition && (r.h, r.k, r.l) != (0, 0, 0))
                .map(|r| (r.h, r.k, r.l))
                .collect();
            let on = predict_on_image(&st, &PredictOptions::default()).unwrap();
            let mut got: Vec<_> = on.reflections.iter().map(|r| (r.h, r.k, r.l)).collect();
            want.sort();
            got.sort();
            assert!(!want.is_empty(), "{words}");
            assert_eq!(got, want, "{words}");
        }
    }
}
