//! Crystal orientations (MODEL §4.8, §4.9): the mosaic domains' rotations (upstream's generator,
//! domain 0 unrotated), the phi values, and the phi-major orientation tables with the stale-phi
//! rule baked in (a phi of exactly 0 reuses the previous phi's rotation: cyclically in the steady
//! state, the unrotated crystal in the run's very first sequence).

use crate::plan::Orientation;
use crate::rng::{mosaic_rotation_umat, RanState};
use crate::vec3::{rotaxis, rotumat, IDENTITY, M3, V3};

/// One rotation per domain; the generator runs for domain 0 too (its draw is discarded).
pub fn mosaic_umats(rng: &mut RanState, spread: f64, domains: i64, seed: i64) -> Vec<M3> {
    let mut seed = seed;
    let mut umats: Vec<M3> = Vec::with_capacity(domains as usize);
    for m in 0..domains {
        let u = mosaic_rotation_umat(rng, spread as f32, &mut seed);
        umats.push(if m == 0 { IDENTITY } else { u });
    }
    umats
}

pub fn phi_values(phi0: f64, phistep: f64, phisteps: i64) -> Vec<f64> {
    (0..phisteps).map(|j| phi0 + phistep * j as f64).collect()
}

/// The steady-state table and the first sequence's table (equal unless some phi is exactly 0).
pub fn tables(
    abc: [V3; 3],
    spindle: V3,
    phis: &[f64],
    umats: &[M3],
    mosaic_spread: f64,
) -> (Vec<Orientation>, Vec<Orientation>) {
    let rotate = |phi: f64| {
        [
            rotaxis(abc[0], spindle, phi),
            rotaxis(abc[1], spindle, phi),
            rotaxis(abc[2], spindle, phi),
        ]
    };
    // steady state: a zero phi reuses the nearest preceding non-zero phi, cyclically
    let last_nonzero = phis.iter().rev().find(|&&p| p != 0.0).copied();
    let table = |first: bool| -> Vec<Orientation> {
        let mut prev = if first {
            abc
        } else {
            last_nonzero.map_or(abc, rotate)
        };
        let mut out = Vec::with_capacity(phis.len() * umats.len());
        for &phi in phis {
            if phi != 0.0 {
                prev = rotate(phi);
            }
            for u in umats {
                let v = if mosaic_spread > 0.0 {
                    [
                        rotumat(prev[0], u),
                        rotumat(prev[1], u),
                        rotumat(prev[2], u),
                    ]
                } else {
                    prev
                };
                out.push(Orientation {
                    a: v[0],
                    b: v[1],
                    c: v[2],
                });
            }
        }
        out
    };
    (table(false), table(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: [V3; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    const Z: V3 = [0.0, 0.0, 1.0];

    #[test]
    fn phi_major_with_domain_zero_unrotated() {
        let umats = mosaic_umats(&mut RanState::new(), 0.01, 3, -12345678);
        assert_eq!(umats.len(), 3);
        assert_eq!(umats[0], IDENTITY);
        assert_ne!(umats[1], IDENTITY);
        let phis = phi_values(0.1, 0.2, 2);
        assert_eq!(phis, vec![0.1, 0.1 + 0.2]);
        let (t, first) = tables(ABC, Z, &phis, &umats, 0.01);
        assert_eq!(t.len(), 6);
        assert_eq!(t, first);
        // index phi * domains + domain; domain 0 is the phi rotation alone
        assert_eq!(t[3].a, rotaxis(ABC[0], Z, phis[1]));
    }

    #[test]
    fn stale_phi_rule() {
        // phi values 0, 0.5: in the steady state the zero reuses 0.5 (cyclically); in the first
        // sequence it is the unrotated crystal
        let phis = [0.0, 0.5];
        let (t, first) = tables(ABC, Z, &phis, &[IDENTITY], 0.0);
        assert_eq!(t[0].a, rotaxis(ABC[0], Z, 0.5));
        assert_eq!(first[0].a, ABC[0]);
        assert_eq!(t[1], first[1]);
    }
}
