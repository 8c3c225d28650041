//! Scale factors of the per-pixel sum (MODEL §6.1, §6.7): the number of steps the sum is divided
//! by, r_e² × fluence, and the water background every pixel's sum starts from.

use crate::error::Result;
use crate::limits::{over, product};

pub const R_E_SQR: f64 = 7.94079248018965e-30;
pub const AVOGADRO: f64 = 6.02214179e23;

/// `sources × mosaic domains × phi steps × oversample²`, checked; and the same times the sensor
/// layers (terms per pixel) must fit a u64 too.
pub fn steps(
    sources: usize,
    mosaic_domains: i64,
    phisteps: i64,
    oversample: i64,
    thicksteps: i64,
) -> Result<u64> {
    let o = oversample as u64;
    let steps = product(&[sources as u64, mosaic_domains as u64, phisteps as u64, o, o]);
    match steps.and_then(|s| s.checked_mul(thicksteps as u64).map(|_| s)) {
        Some(s) => Ok(s),
        None => Err(over(format!(
            "{sources} sources × {mosaic_domains} mosaic domains × {phisteps} phi steps × \
             {oversample}² sub-pixels × {thicksteps} layers: too many terms per pixel"
        ))),
    }
}

/// Water background (photons per pixel before solid angle and polarisation, MODEL §6.7).
pub fn water_background(fluence: f64, water: f64) -> f64 {
    let f_bg = 2.57;
    f_bg * f_bg * R_E_SQR * fluence * water * water * water * 1e6 * AVOGADRO / 18.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_checked_products() {
        assert_eq!(steps(15, 10, 1, 2, 1).unwrap(), 600);
        let e = steps(1_000_000, 1_000_000, 100_000, 1000, 1).unwrap_err();
        assert!(
            e.message.ends_with("too many terms per pixel"),
            "{}",
            e.message
        );
        assert!(steps(1000, 1000, 1000, 1000, 1_000_000).is_err());
    }

    #[test]
    fn no_water_no_background() {
        assert_eq!(water_background(1e24, 0.0), 0.0);
        assert!(water_background(1e24, 1e-4) > 0.0);
    }
}
