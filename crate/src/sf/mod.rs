//! Structure factors from an atomic model (PDB or mmCIF): the model's atoms are expanded by the
//! space group's operations to the P1 unit cell and F(hkl) is summed directly for every
//! reflection to a resolution, into the same padded table an `-hkl` file fills (`HklGrid`), so
//! the rest of the pipeline is unchanged.
//!
//! F(h) = |Σⱼ fⱼ(s)·occⱼ·exp(−Bⱼs²/4)·exp(2πi h·xⱼ)| (s = 1/d; anisotropic U replaces B when
//! present) with the IT92 form factors of neutral atoms, all atoms of the first model (every
//! alternate conformation at its occupancy, hydrogens, waters), no anomalous scattering; the
//! table is P1 and complete (F000 and Friedel mates included). These are gemmi's conventions
//! (`StructureFactorCalculatorX`), against which `crate/tests/sf_gemmi.rs` checks the result.
//!
//! Readers: PDB (`pdb.rs`) and mmCIF (`cif.rs`) are this crate's own, not pdbtbx: pdbtbx 0.12
//! panics on truncated or malformed lines and on space-group names outside its 230 reference
//! settings, and rejects some valid entries; here bad input must be an error naming the file and
//! line. Space groups (`symmetry.rs`) and form factors (`formfactor.rs`) are data tables
//! transcribed from gemmi by `scripts/sf_tables.py`.

pub mod cif;
pub mod compute;
pub mod formfactor;
pub mod model;
pub mod pdb;
pub mod symmetry;

pub use compute::Sphere;
pub use model::{Atom, Cell, Format, Model};

use crate::error::{Error, ErrorKind, Result};
use crate::plan::{HklGrid, Plan};
use std::sync::atomic::AtomicBool;

/// What to compute.
#[derive(Clone, Copy, Debug)]
pub struct SfOptions {
    /// Resolution limit (Å): every reflection with d ≥ d_min is computed.
    pub d_min: f64,
    /// Reciprocal metric tensor (Å⁻², G = B Bᵀ of the simulated lattice's reciprocal vectors)
    /// that selects the reflections, when the simulated cell is not the model's (`-cell`,
    /// `-mat`); `None`: the model's cell.
    pub select_metric: Option<[[f64; 3]; 3]>,
    /// Value of the table's entries inside its h,k,l box but outside the resolution sphere
    /// (upstream's `-default_F` prefill of an `-hkl` table).
    pub default_f: f64,
}

impl SfOptions {
    pub fn to_resolution(d_min: f64) -> SfOptions {
        SfOptions {
            d_min,
            select_metric: None,
            default_f: 0.0,
        }
    }
}

/// What was read and computed, for logs and the browser.
#[derive(Clone, Debug)]
pub struct Summary {
    pub format: Format,
    /// Atoms read (first model).
    pub atoms: usize,
    /// Atoms in the P1 unit cell (atoms × symmetry operations).
    pub cell_atoms: usize,
    pub cell: Cell,
    pub space_group: String,
    pub symops: usize,
    /// Reflections computed (the whole sphere, Friedel mates and F000 included).
    pub reflections: usize,
    pub d_min: f64,
}

impl Summary {
    /// One line for logs.
    pub fn describe(&self) -> String {
        let c = &self.cell;
        format!(
            "{} model: {} atoms, space group {} ({} operations, {} atoms in the unit cell), cell {} {} {} {} {} {}; {} reflections to {:.3} Å",
            self.format.name(),
            self.atoms,
            self.space_group,
            self.symops,
            self.cell_atoms,
            c.a,
            c.b,
            c.c,
            c.alpha,
            c.beta,
            c.gamma,
            self.reflections,
            self.d_min
        )
    }
}

/// Reads a PDB or mmCIF file (format told by content). Errors name `name` and the line.
pub fn read_model(name: &str, bytes: &[u8]) -> Result<Model> {
    model::read(name, bytes)
}

/// Reciprocal metric tensor of a cell (Å⁻²): s² = 1/d² = hᵀ G h.
pub fn reciprocal_metric(cell: &Cell) -> [[f64; 3]; 3] {
    // the rows of the fractionalisation matrix are a*, b*, c* in Cartesian coordinates
    lattice_metric(cell.frac())
}

/// Margin on the detector's reach for `-pdb` tables: interpolation stencils at the edge of the
/// detector reach a little beyond it.
pub const REACH_MARGIN: f64 = 1.03;

/// The smallest d-spacing (Å) that the detector of `plan` records: 1/max |q| with
/// q = (d − i)/λ over the detector's edges and a coarse grid of its (sub-)pixels, both faces of
/// the sensor and every source. `None` when no pixel sees a scattering angle.
pub fn detector_reach(plan: &Plan) -> Option<f64> {
    let os = plan.oversample.max(1) as usize;
    let (nf, ns) = (plan.fpixels * os, plan.spixels * os);
    if nf == 0 || ns == 0 {
        return None;
    }
    let mut subs: Vec<(usize, usize)> = Vec::new();
    for f in 0..nf {
        subs.push((f, 0));
        subs.push((f, ns - 1));
    }
    for s in 0..ns {
        subs.push((0, s));
        subs.push((nf - 1, s));
    }
    let stride = 16 * os;
    for f in (0..nf).step_by(stride) {
        for s in (0..ns).step_by(stride) {
            subs.push((f, s));
        }
    }
    let depth = plan.thickstep * plan.thicksteps as f64;
    let mut q2max = 0.0f64;
    for &(f, s) in &subs {
        for odet in [0.0, depth] {
            let d = crate::vec3::unit(plan.subpixel_position(f, s, odet));
            for src in &plan.sources {
                let q = [0, 1, 2].map(|i| (d[i] - src.incident[i]) / src.lambda);
                q2max = q2max.max(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
            }
        }
    }
    // metres -> Å
    (q2max > 0.0 && q2max.is_finite()).then(|| 1e10 / q2max.sqrt())
}

/// Reciprocal metric tensor (Å⁻²) of a lattice given by its reciprocal vectors a*, b*, c*
/// (Å⁻¹), for [`SfOptions::select_metric`].
pub fn lattice_metric(r: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut g = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            g[i][j] = r[i][0] * r[j][0] + r[i][1] * r[j][1] + r[i][2] * r[j][2];
        }
    }
    g
}

/// Structure factors of a model already read.
pub fn compute_model(
    model: &Model,
    opts: &SfOptions,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(HklGrid, Summary)> {
    if !(opts.d_min > 0.0) || !opts.d_min.is_finite() {
        return Err(Error::input(format!(
            "structure factors: resolution limit d_min = {} Å must be a positive number",
            opts.d_min
        )));
    }
    let sphere = Sphere {
        metric: opts
            .select_metric
            .unwrap_or_else(|| reciprocal_metric(&model.cell)),
        smax2: 1.0 / (opts.d_min * opts.d_min),
    };
    let (grid, cell_atoms) = compute::compute(model, &sphere, opts.default_f, progress, cancel)?;
    progress(1.0);
    let summary = Summary {
        format: model.format,
        atoms: model.atoms.len(),
        cell_atoms,
        cell: model.cell,
        space_group: model.space_group.name.clone(),
        symops: model.space_group.ops.len(),
        reflections: grid.hkls,
        d_min: opts.d_min,
    };
    Ok((grid, summary))
}

/// Reads a model from bytes and computes its structure factors: the entry point for the CLI
/// and the browser (wasm) bindings. `progress` gets 0..1; setting `cancel` stops the
/// computation with an error of kind `Cancelled`.
pub fn structure_factors(
    model_bytes: &[u8],
    name: &str,
    opts: &SfOptions,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(HklGrid, Summary)> {
    let model = read_model(name, model_bytes)?;
    compute_model(&model, opts, progress, cancel).map_err(|e| match e.kind {
        ErrorKind::Cancelled => e,
        _ => e.prefixed(format_args!("{name}: ")).at_file(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    const MODEL: &str = "CRYST1   20.000   25.000   30.000  90.00  90.00  90.00 P 21 21 21    4\n\
        ATOM      1  N   GLY A   1       1.000   2.000   3.000  1.00 10.00           N\n\
        ATOM      2  CA  GLY A   1       2.000   2.500   3.500  1.00 12.00           C\n\
        HETATM    3  O   HOH A   2       5.000   6.000   7.000  0.50 30.00           O\n";

    #[test]
    fn progress_reaches_one_and_cancel_stops() {
        let seen = Mutex::new(Vec::new());
        let progress = |p: f32| seen.lock().unwrap().push(p);
        let opts = SfOptions::to_resolution(2.0);
        let (grid, s) = structure_factors(
            MODEL.as_bytes(),
            "m.pdb",
            &opts,
            &progress,
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!((s.atoms, s.cell_atoms, s.symops), (3, 12, 4));
        assert!(grid.hkls > 1000);
        let seen = seen.into_inner().unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&1.0));

        let cancel = AtomicBool::new(false);
        cancel.store(true, Ordering::Relaxed);
        let e = structure_factors(MODEL.as_bytes(), "m.pdb", &opts, &|_| {}, &cancel).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Cancelled);
    }

    #[test]
    fn f000_is_the_electron_count_and_friedel_mates_agree() {
        let opts = SfOptions::to_resolution(3.0);
        let (g, _) = structure_factors(
            MODEL.as_bytes(),
            "m.pdb",
            &opts,
            &|_| {},
            &AtomicBool::new(false),
        )
        .unwrap();
        let at = |h: i32, k: i32, l: i32| g.data[g.index(h, k, l)];
        // 4 × (N + C + 0.5 O) electrons, to the IT92 fit's precision
        assert!(
            (at(0, 0, 0) - 4.0 * (7.0 + 6.0 + 4.0)).abs() < 0.1,
            "{}",
            at(0, 0, 0)
        );
        assert_eq!(at(1, 2, 3), at(-1, -2, -3));
        assert!(at(1, 2, 3) > 0.0);
        // systematic absence of P 21 21 21: h00 with h odd
        assert!(at(3, 0, 0) < 1e-9 * at(0, 0, 0));
    }
}
