//! The `nonbragg` target.

use super::*;

/// nonBragg's command line (structure-aware), against upstream's water table, a source file
/// and a fuzzed file: parse, prepare, and when small render; the image must be finite, its
/// statistics and SMV header must come out.
pub fn nonbragg(data: &[u8]) {
    use nanobragg::nonbragg;
    let (words, extra) = decode_with(data, &NONBRAGG);
    let mut files = program_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    let Ok(o) = nonbragg::options::parse(&words) else {
        return;
    };
    let Ok(setup) = nonbragg::prepare(&o, &files, 12345) else {
        return;
    };
    let plan = setup.plan();
    let work = (plan.pixel_count() as u64)
        .saturating_mul(setup.sources.len() as u64)
        .saturating_mul((plan.oversample as u64).saturating_mul(plan.oversample as u64));
    if plan.pixel_count() > PROGRAM_PIXELS || work > RENDER_TERMS {
        return;
    }
    let cancel = AtomicBool::new(false);
    let Ok((image, _omega)) = nonbragg::render(&setup, &|_| {}, &cancel) else {
        return;
    };
    assert_eq!(image.len(), plan.pixel_count());
    if let Some(i) = image.iter().position(|v| !v.is_finite()) {
        panic!(
            "nonBragg image has a non-finite pixel ({}) at {i} for: {}",
            image[i],
            words.join(" ")
        );
    }
    let _ = nonbragg::statistics(&setup, &image);
    let _ = nonbragg::smv_header(&setup);
}
