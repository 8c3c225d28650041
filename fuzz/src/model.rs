//! The `model` target: structure factors from an atomic model.

use super::*;

/// Most atoms (after reading) and reflections a model input is computed for; larger models
/// are only read (the direct sum is atoms × symmetry × reflections, linear, and fast).
const MODEL_ATOMS: usize = 200;

const MODEL_REFLECTIONS: f64 = 3000.0;

/// A PDB or mmCIF model (`-pdb`): read (format by content), then, when small, the structure
/// factors to a resolution chosen so that about [`MODEL_REFLECTIONS`] reflections are computed
/// at most: every |F| finite and non-negative, the table's size what its bounds promise.
pub fn model(data: &[u8]) {
    let Ok(m) = nanobragg::sf::read_model("fuzz.pdb", data) else {
        return;
    };
    let v = m.cell.volume();
    assert!(v.is_finite() && v > 0.0, "cell volume {v} of a model read");
    if m.atoms.len() > MODEL_ATOMS {
        return;
    }
    // reflections within 1/d: (4/3)π/d³ · V; at least 2 Å (smaller cells: fewer reflections)
    let d_min = ((4.0 / 3.0) * std::f64::consts::PI * v / MODEL_REFLECTIONS)
        .cbrt()
        .max(2.0);
    let opts = nanobragg::sf::SfOptions::to_resolution(d_min);
    let Ok((g, summary)) =
        nanobragg::sf::compute_model(&m, &opts, &|_| {}, &AtomicBool::new(false))
    else {
        return;
    };
    let want = (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
    assert_eq!(g.data.len(), want, "table size");
    if let Some(i) = g.data.iter().position(|f| !f.is_finite() || *f < 0.0) {
        panic!(
            "|F| = {} at table index {i} ({})",
            g.data[i],
            summary.describe()
        );
    }
}
