//! PGM output (`-pgmfile`, MODEL.md §7.6).

use crate::cfmt::fmt_g;

/// Binary PGM: `P5\n<f> <s>\n# pixels scaled by <pgm_scale %g>\n255\n` followed by the bytes
/// (row-major, fast index fastest).
pub fn write_pgm(fpixels: usize, spixels: usize, pgm_scale: f64, bytes: &[u8]) -> Vec<u8> {
    let head = format!(
        "P5\n{fpixels} {spixels}\n# pixels scaled by {}\n255\n",
        fmt_g(pgm_scale)
    );
    let mut out = Vec::with_capacity(head.len() + bytes.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_body() {
        let out = write_pgm(3, 2, 250.0 / (5.0 * 1.23456789), &[0, 1, 2, 253, 254, 255]);
        let head = b"P5\n3 2\n# pixels scaled by 40.5\n255\n";
        assert_eq!(&out[..head.len()], head);
        assert_eq!(&out[head.len()..], &[0, 1, 2, 253, 254, 255]);
        let out = write_pgm(1, 1, 1.0e-7, &[9]);
        assert_eq!(out, b"P5\n1 1\n# pixels scaled by 1e-07\n255\n\x09");
    }

    #[test]
    fn matches_golden_header() {
        // the golden cubic_basic_mosflm/image.pgm starts like this (rmsd-derived scale).
        let out = write_pgm(128, 128, 5.0230001, &[]);
        assert_eq!(out, b"P5\n128 128\n# pixels scaled by 5.023\n255\n");
    }
}
