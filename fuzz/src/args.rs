//! The `args` target: nanobragg's command line.

use super::*;

/// The argument path, structure-aware: real flags with hostile numbers (see [`decode_words`]),
/// parsed and resolved against small valid input files (and one file of fuzzed bytes); when the
/// work is small the image is rendered in both precisions, checked (no NaN; an infinite pixel
/// refused by `api::check_image`), and turned into the
/// output files' bytes (int image, noise image, PGM) without writing them.
pub fn args(data: &[u8]) {
    let (words, extra) = decode_words(data);
    let mut files = fixture_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    run_words(&words, &files);
}

pub(crate) fn run_words(words: &[String], files: &MemFiles) {
    let Ok(prep) = api::prepare(words, files) else {
        return;
    };
    let plan = prep.plan();
    let terms = (plan.pixel_count() as u64).saturating_mul(plan.terms_per_pixel());
    if plan.pixel_count() > RENDER_PIXELS || terms > RENDER_TERMS {
        return;
    }
    let cancel = AtomicBool::new(false);
    for precision in [api::Precision::F64, api::Precision::F32] {
        // On the global thread pool: `-threads` is the CLI's business (and a count of a million
        // would spend the run starting threads).
        let Ok(image) = api::render_cpu(plan, precision, &|_| {}, &cancel) else {
            continue;
        };
        assert_eq!(image.len(), plan.pixel_count());
        // NaN is a bug. An infinite pixel is an intensity beyond single precision (huge flux,
        // F, or a pixel at the sample): the renderer's check refuses it with an error naming
        // the flags to lower, never an image (`api::check_image`, applied by `api::Renderer`).
        // NaN is a bug, unless the inputs' magnitudes overflow single precision (an infinite
        // term times a factor of 0): then it is refused as an infinite pixel is
        if let Some(i) = image.iter().position(|v| v.is_nan()) {
            assert!(
                api::magnitude_bound(plan) >= f32::MAX as f64,
                "{precision:?} image has a NaN pixel at {i} for: {}",
                words.join(" ")
            );
        }
        if image.iter().any(|v| !v.is_finite()) {
            let e = api::check_image(plan, &image).expect_err("an infinite pixel is refused");
            assert!(
                e.message.contains("beyond single precision"),
                "{}",
                e.message
            );
            continue;
        }
        let _ = api::statistics(&prep, &image);
        let _ = api::int_image_smv(&prep, &image);
        let _ = api::noise_image_smv(&prep, &image);
    }
}
