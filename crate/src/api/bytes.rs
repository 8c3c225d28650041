//! Output file bytes from a prepared render and its image (statistics, SMV, float).

use super::*;

pub fn statistics(prep: &Prepared, image: &[f32]) -> Stats {
    stats::compute(prep.plan(), image)
}

/// Noiseless SMV image bytes (`-intfile`).
pub fn int_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    let st = statistics(prep, image);
    let scale = output::int_scale(&prep.setup, &st);
    io::smv::write_smv(
        &output::smv_header(&prep.setup),
        &output::int_pixels(&prep.setup, image, scale),
    )
}

/// Poisson-noise SMV image bytes (`-noisefile`), upstream's generator and seed.
pub fn noise_image_smv(prep: &Prepared, image: &[f32]) -> Result<Vec<u8>> {
    noise_image_smv_seeded(prep, image, prep.setup.noise_seed)
}

/// [`noise_image_smv`] under `noise_seed` (upstream's stored form: `-seed n` stores −n) instead
/// of the one the options resolved.
pub fn noise_image_smv_seeded(prep: &Prepared, image: &[f32], noise_seed: i64) -> Result<Vec<u8>> {
    let p = &prep.setup.plan;
    let (px, _, _) =
        output::noise_pixels_roi(p.fpixels, &p.roi, image, prep.setup.opts.adc, noise_seed);
    io::smv::write_smv(&output::smv_header(&prep.setup), &px)
}

/// Raw little-endian f32 image bytes (`-floatfile`).
pub fn float_image_bytes(image: &[f32]) -> Vec<u8> {
    output::float_bytes(image)
}
