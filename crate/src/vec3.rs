//! f64 vector primitives with the exact association order of upstream nanoBragg (MODEL §3.1),
//! so that geometry computed here matches the C to the last bit where it matters.

pub type V3 = [f64; 3];

#[inline]
pub fn dot(x: V3, y: V3) -> f64 {
    (x[0] * y[0] + x[1] * y[1]) + x[2] * y[2]
}

#[inline]
pub fn cross(x: V3, y: V3) -> V3 {
    [
        x[1] * y[2] - x[2] * y[1],
        x[2] * y[0] - x[0] * y[2],
        x[0] * y[1] - x[1] * y[0],
    ]
}

#[inline]
pub fn mag(x: V3) -> f64 {
    ((x[0] * x[0] + x[1] * x[1]) + x[2] * x[2]).sqrt()
}

/// [`mag`] without overflow or underflow of the squares (scaled by the largest component first),
/// for checking lengths a user's file gives: 1e300 stays 1e300, not infinity.
pub fn mag_scaled(x: V3) -> f64 {
    let m = x.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if m > 0.0 && m.is_finite() {
        m * mag(x.map(|v| v / m))
    } else {
        m
    }
}

/// Unit vector and the original length; the zero vector stays zero.
#[inline]
pub fn unitize(x: V3) -> (V3, f64) {
    let m = mag(x);
    if m != 0.0 {
        ([x[0] / m, x[1] / m, x[2] / m], m)
    } else {
        ([0.0; 3], m)
    }
}

#[inline]
pub fn unit(x: V3) -> V3 {
    unitize(x).0
}

/// Largest |cos| between a detector's fast and slow axes (the `.expt` reader's rule, MODEL §3.5):
/// beyond it the two are not perpendicular and the pixels would not tile a plane.
pub const AXES_COS_TOL: f64 = 1e-6;

/// What is wrong with a detector's fast and slow axes, if anything: `None` when both are
/// finite, non-zero and perpendicular within [`AXES_COS_TOL`] (compared as unit vectors).
pub fn axes_fault(fast: V3, slow: V3) -> Option<String> {
    // scaled first: a vector like 1e-300x has a length that squares to 0
    let direction = |v: V3| {
        let m = v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        (m > 0.0 && v.iter().all(|x| x.is_finite())).then(|| unit(v.map(|x| x / m)))
    };
    let Some(f) = direction(fast) else {
        return Some("the fast axis is zero or not finite".into());
    };
    let Some(s) = direction(slow) else {
        return Some("the slow axis is zero or not finite".into());
    };
    let c = dot(f, s);
    (c.abs() > AXES_COS_TOL).then(|| {
        format!(
            "fast axis not perpendicular to slow axis (cos of their angle {}, more than {})",
            crate::cfmt::fmt_g(c),
            crate::check::bound(AXES_COS_TOL)
        )
    })
}

#[inline]
pub fn scale(x: V3, s: f64) -> V3 {
    [x[0] * s, x[1] * s, x[2] * s]
}

#[inline]
pub fn add(x: V3, y: V3) -> V3 {
    [x[0] + y[0], x[1] + y[1], x[2] + y[2]]
}

#[inline]
pub fn sub(x: V3, y: V3) -> V3 {
    [x[0] - y[0], x[1] - y[1], x[2] - y[2]]
}

/// Rotations about lab x, then y, then z; a zero angle is skipped (MODEL §3.1).
pub fn rotxyz(v: V3, rx: f64, ry: f64, rz: f64) -> V3 {
    let mut v = v;
    if rx != 0.0 {
        let (s, c) = rx.sin_cos();
        v = [v[0], v[1] * c + v[2] * (-s), v[1] * s + v[2] * c];
    }
    if ry != 0.0 {
        let (s, c) = ry.sin_cos();
        v = [
            v[0] * c + v[1] * 0.0 + v[2] * s,
            v[1],
            v[0] * (-s) + v[1] * 0.0 + v[2] * c,
        ];
    }
    if rz != 0.0 {
        let (s, c) = rz.sin_cos();
        v = [v[0] * c + v[1] * (-s), v[0] * s + v[1] * c, v[2]];
    }
    v
}

/// Rodrigues rotation of `v` about the (assumed unit) axis `u` by `phi` (MODEL §3.1).
pub fn rotaxis(v: V3, u: V3, phi: f64) -> V3 {
    let cosphi = phi.cos();
    let sinphi = phi.sin();
    let d = ((u[0] * v[0] + u[1] * v[1]) + u[2] * v[2]) * (1.0 - cosphi);
    [
        (u[0] * d + v[0] * cosphi) + (-u[2] * v[1] + u[1] * v[2]) * sinphi,
        (u[1] * d + v[1] * cosphi) + (u[2] * v[0] - u[0] * v[2]) * sinphi,
        (u[2] * d + v[2] * cosphi) + (-u[1] * v[0] + u[0] * v[1]) * sinphi,
    ]
}

pub type M3 = [[f64; 3]; 3];

/// `U·v` with `U` row-major.
pub fn rotumat(v: V3, u: &M3) -> V3 {
    [
        (u[0][0] * v[0] + u[0][1] * v[1]) + u[0][2] * v[2],
        (u[1][0] * v[0] + u[1][1] * v[1]) + u[1][2] * v[2],
        (u[2][0] * v[0] + u[2][1] * v[1]) + u[2][2] * v[2],
    ]
}

pub const IDENTITY: M3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotations_are_right_handed() {
        let v = rotxyz([0.0, 1.0, 0.0], std::f64::consts::FRAC_PI_2, 0.0, 0.0);
        assert!((v[2] - 1.0).abs() < 1e-15 && v[1].abs() < 1e-15);
        let w = rotaxis(
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            std::f64::consts::FRAC_PI_2,
        );
        assert!((w[1] - 1.0).abs() < 1e-15 && w[0].abs() < 1e-15);
        assert_eq!(
            rotaxis([0.3, 0.2, 0.1], [0.0, 0.0, 1.0], 0.0),
            [0.3, 0.2, 0.1]
        );
    }

    #[test]
    fn axes_fault_needs_two_perpendicular_directions() {
        assert_eq!(axes_fault([0.0, 0.0, 1.0], [0.0, -1.0, 0.0]), None);
        assert_eq!(axes_fault([1e-300, -2e-300, 0.0], [0.0, 0.0, 1e-300]), None);
        let parallel = axes_fault([0.0, 0.0, 1.0], [0.0, 0.0, 2.0]).unwrap();
        assert!(parallel.contains("not perpendicular"), "{parallel}");
        assert!(axes_fault([0.0, 0.0, 1.0], [0.0, 1e-5, 1.0]).is_some());
        assert!(axes_fault([0.0; 3], [0.0, 1.0, 0.0])
            .unwrap()
            .contains("fast axis is zero"));
        assert!(axes_fault([0.0, 0.0, 1.0], [f64::NAN, 1.0, 0.0]).is_some());
        assert!(axes_fault([f64::INFINITY, 0.0, 0.0], [0.0, 1.0, 0.0]).is_some());
    }

    #[test]
    fn unitize_keeps_zero() {
        assert_eq!(unitize([0.0; 3]), ([0.0; 3], 0.0));
        let (u, m) = unitize([3.0, 4.0, 0.0]);
        assert_eq!(m, 5.0);
        assert_eq!(u, [0.6, 0.8, 0.0]);
    }
}
