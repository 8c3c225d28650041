//! The `fdump` target.

use super::*;

/// `Fdump.bin`: the binary structure-factor cache.
pub fn fdump(data: &[u8]) {
    if let Ok(g) = io::hkl::read_fdump_limited("Fdump.bin", data, FUZZ_TABLE) {
        let want =
            (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
        assert_eq!(g.data.len(), want, "table size");
    }
}
