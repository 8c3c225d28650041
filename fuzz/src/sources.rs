//! The `sources` target.

use super::*;

/// `-sourcefile`: multi-column text.
pub fn sources(data: &[u8]) {
    if let Ok(rows) = io::textcols::read_columns("sources.txt", data, 5) {
        assert!(rows.iter().all(|r| r.len() == 5));
    }
}
