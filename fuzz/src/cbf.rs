//! The `cbf` target.

use super::*;

/// miniCBF (a measured image, Python's `read_cbf`): the byte-offset reader, then the measured-image
/// reader's header geometry; every image it returns holds exactly its width × height pixels.
pub fn cbf(data: &[u8]) {
    if let Ok(img) = io::cbf_read::read_minicbf("fuzz.cbf", data) {
        assert_eq!(img.pixels.len(), img.width * img.height, "image size");
    }
    measured_file("fuzz.cbf", data, &[]);
}
