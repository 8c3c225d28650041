//! The `smv` target.

use super::args::run_words;
use super::*;

/// SMV (`-img`, `-mask`): the reader, then the header's values through the whole resolution as
/// `-img` and as `-mask`, and a render when it is small.
pub fn smv(data: &[u8]) {
    if let Ok(f) = io::smv::read_smv("fuzz.img", data) {
        for key in [
            "SIZE1",
            "SIZE2",
            "PIXEL_SIZE",
            "DISTANCE",
            "WAVELENGTH",
            "PHI",
        ] {
            let _ = io::smv::value_of(&f.header_text, key);
        }
    }
    let mut files = fixture_files();
    files.0.insert("fuzz.img".into(), data.to_vec());
    for flag in ["-img", "-mask"] {
        let words = format!("-cell 100 100 100 90 90 90 -default_F 100 -N 2 {flag} fuzz.img");
        run_words(&api::split_args(&words), &files);
    }
}
