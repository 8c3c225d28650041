//! Documented limits on what one render may ask for, checked as products (`checked_mul`) before
//! anything is allocated, so that counts which are each reasonable cannot multiply into terabytes
//! or a loop that never ends. The browser build (wasm32, at most a few GiB of memory) has smaller
//! table and image limits.

use crate::error::{Error, ErrorKind, Result};

/// Most phi steps (`-phisteps`, or `-osc`/`-phistep`).
pub const MAX_PHISTEPS: i64 = 100_000;
/// Most mosaic domains.
pub const MAX_MOSAIC_DOMAINS: i64 = 1_000_000;
/// Most wavelengths (`-dispsteps`).
pub const MAX_DISPSTEPS: i64 = 100_000;
/// Most divergence grid points, horizontal × vertical.
pub const MAX_DIVERGENCE_POINTS: i64 = 1_000_000;
/// Most sensor layers.
pub const MAX_THICKSTEPS: i64 = 10_000;
/// Most sub-pixels per axis.
pub const MAX_OVERSAMPLE: i64 = 1000;
/// Most unit cells along one axis (`-N`, or from the crystal size).
pub const MAX_CELLS: f64 = 1e7;
/// Farthest a detector's corner (or any panel's origin) may be from the sample, m: far beyond any
/// the flags place (upstream's un-normalised `-twotheta_axis` puts one 7·10⁷ m away), and near
/// enough that the single-precision kernels' R³ stays finite (10³⁶ m³): a file (`.expt`,
/// `.geom`) placing one 10³⁰⁰ mm away rendered NaN pixels.
pub const MAX_DETECTOR_DISTANCE_M: f64 = 1e12;
/// Most sources (divergence points × wavelengths, or source-file lines): 32 bytes each.
pub const MAX_SOURCES: u64 = 1_000_000;
/// Most crystal orientations (phi steps × mosaic domains): two tables of 72 bytes each.
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_ORIENTATIONS: u64 = 2_000_000;
#[cfg(target_arch = "wasm32")]
pub const MAX_ORIENTATIONS: u64 = 500_000;
/// Most pixels the browser build renders: its memory is at most 1 GiB, and an image is held as
/// the f32 result plus a copy in transit (8192² f32 = 256 MiB each).
pub const BROWSER_MAX_PIXELS: usize = 8192 * 8192;

/// Most detector pixels: 1e9 natively (4 GB float image); the browser's image limit
/// ([`BROWSER_MAX_PIXELS`]) in the wasm build.
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_PIXELS: usize = 1_000_000_000;
#[cfg(target_arch = "wasm32")]
pub const MAX_PIXELS: usize = BROWSER_MAX_PIXELS;

/// Most pixels of a measured image's frame (a file a user opens to compare): the largest
/// detectors made have about 20 M; the browser's image limit in every build, so that a small
/// file cannot ask for gigabytes (an HDF5 chunk that is absent reads as its fill value).
pub const MAX_MEASURED_PIXELS: usize = BROWSER_MAX_PIXELS;

/// An error for a documented limit.
pub fn over(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Limit, message)
}

/// `a × b × …` without wrapping: `None` when the product overflows u64.
pub fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f))
}

/// A detector of `f × s` pixels fits `max` pixels; `what` names where the size came from.
pub fn check_pixels(what: &str, f: f64, s: f64, max: usize) -> Result<()> {
    let n = f * s;
    if n > max as f64 {
        let side = (max as f64).sqrt() as usize;
        let e = over(format!(
            "{what}: a {}x{} detector needs {} MiB for its image, more than this build can hold \
             (at most {max} pixels, e.g. {side}x{side})",
            crate::cfmt::fmt_g(f),
            crate::cfmt::fmt_g(s),
            crate::cfmt::fmt_g((n * 4.0 / 1048576.0).floor()),
        ));
        // one flag (not "-detsize / -pixel" nor a header's keys): the error names it as data,
        // so a face puts it at that flag's field however the value arrived
        let one_flag = what.starts_with('-') && !what.contains([' ', '/']);
        return Err(if one_flag { e.with_flag(what) } else { e });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_do_not_wrap() {
        assert_eq!(product(&[1000, 1000, 100_000]), Some(100_000_000_000));
        assert_eq!(product(&[1 << 32, 1 << 32]), None);
        assert_eq!(product(&[]), Some(1));
    }

    #[test]
    fn pixel_limit_names_its_source() {
        let e = check_pixels("-detpixels", 20000.0, 20000.0, 8192 * 8192).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit);
        assert_eq!(e.flag.as_deref(), Some("-detpixels"));
        let e = check_pixels("-detsize / -pixel", 20000.0, 20000.0, 8192 * 8192).unwrap_err();
        assert_eq!(e.flag, None, "two flags: none named as data");
        let e = check_pixels("-detpixels", 20000.0, 20000.0, 8192 * 8192).unwrap_err();
        assert!(
            e.message
                .starts_with("-detpixels: a 20000x20000 detector needs 1525 MiB for its image"),
            "{}",
            e.message
        );
        assert!(check_pixels("-detpixels", 8192.0, 8192.0, 8192 * 8192).is_ok());
    }
}
