//! The `matrix` target.

use super::*;

/// `-mat`: MOSFLM orientation matrix.
pub fn matrix(data: &[u8]) {
    let _ = io::matfile::parse_mat("A.mat", data);
}
