//! Crystal: unit cell -> reciprocal basis, MOSFLM matrix, misset, real-space vectors, size ->
//! cell counts (MODEL §4.1–§4.6). f64, upstream's association order.

use crate::args::RTD;
use crate::error::{Error, Result};
use crate::rng::{mosaic_rotation_umat, umat2misset, RanState};
use crate::vec3::{cross, dot, mag, rotxyz, scale, V3};

/// `Default`: no crystal (`resolve::detector_and_beam`).
#[derive(Clone, Debug, Default)]
pub struct Crystal {
    /// Real-space vectors at phi = 0 without mosaic (m).
    pub a0: V3,
    pub b0: V3,
    pub c0: V3,
    /// Static reciprocal vectors (1/Å).
    pub a_star: V3,
    pub b_star: V3,
    pub c_star: V3,
    /// Cell as it came out (Å, degrees), for the log.
    pub cell: [f64; 6],
    pub volume: f64,
    /// Random misset angles actually applied (degrees), if any.
    pub random_misset: Option<V3>,
    pub warnings: Vec<String>,
}

/// Reciprocal basis from a cell (MODEL §4.1, with upstream's c* quirk). Returns
/// (a*, b*, c*, V, [a,b,c] lengths). Angles that make no real cell (each must be below the sum
/// of the other two, and the three below 360°), and a volume that is zero or not finite, are
/// errors: upstream takes the absolute value of the volume factor and renders garbage.
pub fn reciprocal_from_cell(cell: [f64; 6]) -> Result<(V3, V3, V3, f64, [f64; 3])> {
    // b, c <= 0 read as a, an angle <= 0 as 90 degrees (`args::cell_entry_as_read`)
    let [a, b, c, alpha, beta, gamma] = crate::args::cell_as_read(cell);
    let (alpha, beta, gamma) = (alpha / RTD, beta / RTD, gamma / RTD);
    let aavg = (alpha + beta + gamma) / 2.0;
    let signed = aavg.sin() * (aavg - alpha).sin() * (aavg - beta).sin() * (aavg - gamma).sin();
    let g = crate::cfmt::fmt_g;
    if !(signed > 1e-15) {
        return Err(Error::geometry(format!(
            "-cell: the angles {} {} {} do not make a cell (each must be less than the sum of \
             the other two, and all three less than 360 degrees)",
            g(alpha * RTD),
            g(beta * RTD),
            g(gamma * RTD)
        ))
        .with_flag("-cell"));
    }
    let skew = signed.abs();
    let v = 2.0 * a * b * c * skew.sqrt();
    if !(v > 0.0) || !v.is_finite() || !(1.0 / v).is_finite() {
        return Err(Error::geometry(format!(
            "-cell: a {} × {} × {} Å cell is too small to compute with (volume {} Å³)",
            g(a),
            g(b),
            g(c),
            g(v)
        ))
        .with_flag("-cell"));
    }
    let vs = 1.0 / v;
    let fix = |x: f64| {
        if x <= 0.0 {
            let y = x.abs();
            if y == 0.0 {
                f64::MIN_POSITIVE
            } else {
                y
            }
        } else {
            x
        }
    };
    let ra = fix(b * c * alpha.sin() * vs);
    let rb = fix(c * a * beta.sin() * vs);
    let rc = fix(a * b * gamma.sin() * vs);
    let clamp_s = |x: f64| x.clamp(-1.0, 1.0);
    let _sin_as = clamp_s(a * vs / rb / rc);
    let _sin_bs = clamp_s(b * vs / ra / rc);
    let sin_gs = clamp_s(c * vs / ra / rb);
    let clamp_c = |x: f64| if x * x > 1.0 { 1.0 } else { x };
    let cos_as = clamp_c((beta.cos() * gamma.cos() - alpha.cos()) / (beta.sin() * gamma.sin()));
    let cos_bs = clamp_c((gamma.cos() * alpha.cos() - beta.cos()) / (gamma.sin() * alpha.sin()));
    let cos_gs = clamp_c((alpha.cos() * beta.cos() - gamma.cos()) / (alpha.sin() * beta.sin()));
    let a_star = [ra, 0.0, 0.0];
    let b_star = [rb * cos_gs, rb * sin_gs, 0.0];
    let c_star = [
        rc * cos_bs,
        rc * (cos_as - cos_bs * cos_gs) / sin_gs,
        rc * v / (a * b * c * sin_gs),
    ];
    Ok((a_star, b_star, c_star, v, [a, b, c]))
}

pub struct CrystalInput<'a> {
    pub cell: Option<[f64; 6]>,
    /// MOSFLM A matrix rows (x, y, z components of a*, b*, c*), lambda-scaled.
    pub mat: Option<[[f64; 3]; 3]>,
    pub lambda0: f64,
    pub misset: Option<V3>,
    pub misset_random: bool,
    pub misset_seed: &'a mut i64,
    pub rng: &'a mut RanState,
}

pub fn resolve_crystal(inp: CrystalInput) -> Result<Crystal> {
    let warnings = Vec::new();
    let (mut a_star, mut b_star, mut c_star) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    let mut user_cell = None;
    if let Some(cell) = inp.cell {
        if !(cell[0] > 0.0) {
            return Err(Error::geometry("-cell: the a axis must be positive").with_flag("-cell"));
        }
        let (ast, bst, cst, v, abc) = reciprocal_from_cell(cell)?;
        a_star = ast;
        b_star = bst;
        c_star = cst;
        user_cell = Some((abc, v));
    }
    if let Some(m) = inp.mat {
        let s = 1e-10 / inp.lambda0;
        a_star = [m[0][0] * s, m[1][0] * s, m[2][0] * s];
        b_star = [m[0][1] * s, m[1][1] * s, m[2][1] * s];
        c_star = [m[0][2] * s, m[1][2] * s, m[2][2] * s];
    }
    // misset
    let mut random_misset = None;
    let mut misset = inp.misset.map(|m| [m[0] / RTD, m[1] / RTD, m[2] / RTD]);
    if inp.misset_random {
        let u = mosaic_rotation_umat(inp.rng, 90.0f32, inp.misset_seed);
        let ang = umat2misset(u);
        random_misset = Some([ang[0] * RTD, ang[1] * RTD, ang[2] * RTD]);
        misset = Some(ang);
    }
    if let Some(m) = misset {
        a_star = rotxyz(a_star, m[0], m[1], m[2]);
        b_star = rotxyz(b_star, m[0], m[1], m[2]);
        c_star = rotxyz(c_star, m[0], m[1], m[2]);
    }
    // real space (MODEL §4.4)
    let mut ab = cross(a_star, b_star);
    let mut bc = cross(b_star, c_star);
    let mut ca = cross(c_star, a_star);
    let mut vstar = dot(a_star, bc);
    if let Some((abc, v)) = user_cell {
        let resize = |x: V3, target: f64| {
            let m = mag(x);
            let m = if m == 0.0 { 1.0 } else { m };
            scale(x, target / m)
        };
        bc = resize(bc, abc[0] / v);
        ca = resize(ca, abc[1] / v);
        ab = resize(ab, abc[2] / v);
        vstar = 1.0 / v;
    }
    if vstar == 0.0 || !vstar.is_finite() {
        return Err(Error::geometry(
            "the reciprocal cell is degenerate (zero volume): check -cell / -mat",
        ));
    }
    let vcell = 1.0 / vstar;
    let a = scale(bc, vcell);
    let b = scale(ca, vcell);
    let c = scale(ab, vcell);
    let a_star = scale(cross(b, c), vstar);
    let b_star = scale(cross(c, a), vstar);
    let c_star = scale(cross(a, b), vstar);
    let (la, lb, lc) = (mag(a), mag(b), mag(c));
    let angle = |x: V3, y: V3, lx: f64, ly: f64| (dot(x, y) / (lx * ly)).acos() * RTD;
    let cell = [
        la,
        lb,
        lc,
        angle(b, c, lb, lc),
        angle(c, a, lc, la),
        angle(a, b, la, lb),
    ];
    Ok(Crystal {
        a0: scale(a, 1e-10),
        b0: scale(b, 1e-10),
        c0: scale(c, 1e-10),
        a_star,
        b_star,
        c_star,
        cell,
        volume: vcell,
        random_misset,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triclinic_cell_keeps_lengths_and_distorts_angles() {
        // MODEL §4.1: -cell 70 80 90 75 85 95 -> 70 80 90 75.0391 85.0136 95.0081
        let mut seed = 0;
        let mut rng = RanState::new();
        let c = resolve_crystal(CrystalInput {
            cell: Some([70.0, 80.0, 90.0, 75.0, 85.0, 95.0]),
            mat: None,
            lambda0: 1e-10,
            misset: None,
            misset_random: false,
            misset_seed: &mut seed,
            rng: &mut rng,
        })
        .unwrap();
        let want = [70.0, 80.0, 90.0, 75.0391, 85.0136, 95.0081];
        for i in 0..6 {
            assert!((c.cell[i] - want[i]).abs() < 1e-4, "{:?}", c.cell);
        }
    }

    #[test]
    fn random_misset_matches_upstream() {
        let mut seed = -1;
        let mut rng = RanState::new();
        let c = resolve_crystal(CrystalInput {
            cell: Some([100.0, 100.0, 100.0, 90.0, 90.0, 90.0]),
            mat: None,
            lambda0: 1e-10,
            misset: None,
            misset_random: true,
            misset_seed: &mut seed,
            rng: &mut rng,
        })
        .unwrap();
        let m = c.random_misset.unwrap();
        let want = [4.6629571628, -11.8449788458, 17.6225480239];
        for i in 0..3 {
            assert!((m[i] - want[i]).abs() < 1e-8, "{m:?}");
        }
    }

    #[test]
    fn angles_and_lengths_must_make_a_cell() {
        let e = reciprocal_from_cell([100.0, 100.0, 100.0, 10.0, 10.0, 170.0]).unwrap_err();
        assert!(
            e.message
                .starts_with("-cell: the angles 10 10 170 do not make a cell"),
            "{}",
            e.message
        );
        let e = reciprocal_from_cell([100.0, 100.0, 100.0, 90.0, 90.0, 180.0]).unwrap_err();
        assert!(e.message.contains("do not make a cell"));
        let e = reciprocal_from_cell([1e-300, 1e-300, 1e-300, 90.0, 90.0, 90.0]).unwrap_err();
        assert!(e.message.contains("volume"), "{}", e.message);
        // ≤ 0 means "same as a" and "90 degrees" (upstream's rules)
        let (_, _, _, v, abc) = reciprocal_from_cell([10.0, 0.0, -1.0, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!(abc, [10.0; 3]);
        assert!((v - 1000.0).abs() < 1e-9);
    }
}
