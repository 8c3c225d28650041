//! The `hkl` target.

use super::*;

/// `-hkl` text: parse with and without a default F; a table that parses must have the size its
/// bounds promise and survive the `Fdump.bin` round trip bit for bit.
pub fn hkl(data: &[u8]) {
    for default_f in [0.0, 100.0] {
        let Ok(g) = io::hkl::parse_hkl_limited("fuzz.hkl", data, default_f, FUZZ_TABLE) else {
            continue;
        };
        let want =
            (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
        assert_eq!(g.data.len(), want, "table size");
        let dump = io::hkl::write_fdump(&g);
        let back = io::hkl::read_fdump_limited("Fdump.bin", &dump, FUZZ_TABLE)
            .expect("a dump we wrote reads back");
        assert_eq!(
            (back.h_min, back.h_max, back.k_min, back.k_max, back.l_min, back.l_max),
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max)
        );
        assert!(back
            .data
            .iter()
            .zip(&g.data)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
