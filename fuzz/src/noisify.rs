//! The `noisify` target.

use super::*;

/// noisify's command line (structure-aware, as [`args`]), against a valid 8×8 float image, an
/// SMV header and a fuzzed file: parse, prepare, and when small apply every effect; the counts
/// and the header must come out.
pub fn noisify(data: &[u8]) {
    let (words, extra) = decode_with(data, &NOISIFY);
    let mut files = program_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    let Ok(o) = nanobragg::noisify::options::parse(&words) else {
        return;
    };
    let Ok(p) = nanobragg::noisify::options::prepare(&o, &files, 12345) else {
        return;
    };
    assert_eq!(p.input.len(), p.width * p.height, "image size");
    if p.width * p.height > PROGRAM_PIXELS {
        return;
    }
    let cancel = AtomicBool::new(false);
    let Ok(d) = nanobragg::noisify::detect(
        &p.input,
        p.width,
        p.height,
        &p.effects,
        o.bits32,
        &|_| {},
        &cancel,
    ) else {
        return;
    };
    assert_eq!(d.adu.len(), p.input.len());
    if let Some(n) = &d.noise {
        assert_eq!(n.adu.len(), p.input.len());
    }
    let _ = nanobragg::noisify::options::own_header(&p);
}
