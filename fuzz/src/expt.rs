//! The `expt` target.

use super::*;

/// A DIALS `.expt` (`-expt`): the reader, then through `api::prepare` as the CLI takes it, and a
/// render when it is small.
pub fn expt(data: &[u8]) {
    let _ = io::expt::parse_expt("fuzz.expt", data);
    geometry_file("-expt", "fuzz.expt", data);
}
