//! The `stol` target.

/// A `.stol` table (nonBragg's `-stol`, `-4stol`, `-Q`): read in each unit; a table read must
/// interpolate to finite values everywhere.
pub fn stol(data: &[u8]) {
    use nanobragg::io::stol::{read_stol, StolUnit};
    for unit in [StolUnit::Stol, StolUnit::FourStol, StolUnit::Q] {
        let Ok(t) = read_stol("fuzz.stol", data, unit) else {
            continue;
        };
        assert_eq!(t.stol.len(), t.f.len());
        assert!(
            t.stol.windows(2).all(|w| w[0] < w[1]),
            "table not increasing"
        );
        for x in [0.0, 1e8, 1e9, 5e9, 1e10, 1e11, -1.0, 1e300] {
            let f = t.interpolate(x);
            assert!(f.is_finite(), "F({x}) = {f} for a table read ({unit:?})");
        }
        for &x in t.stol.iter().skip(2).take(64) {
            let f = t.interpolate(x);
            assert!(f.is_finite(), "F({x}) = {f} at a table point ({unit:?})");
        }
    }
}
