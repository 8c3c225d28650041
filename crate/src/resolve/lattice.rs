//! The crystal lattice: orientation from `-cell`/`-mat` and the misset (`crystal.rs`), the number
//! of unit cells along each axis (MODEL §4.6) and the oversampling that the crystal size calls
//! for (MODEL §4.7).

use crate::args::Options;
use crate::error::{Error, Result};
use crate::files::{FileKind, FileSource};
use crate::io;
use crate::limits::{self, over};
use crate::resolve::crystal::{resolve_crystal, Crystal, CrystalInput};
use crate::resolve::detector::Detector;
use crate::rng::RanState;
use crate::vec3::mag;

/// Cell counts as given (`-N`, `-Na`...; 1 when absent), before the crystal size replaces them.
pub fn raw_counts(o: &Options) -> [f64; 3] {
    [
        o.na.unwrap_or(1.0),
        o.nb.unwrap_or(1.0),
        o.nc.unwrap_or(1.0),
    ]
}

/// Warnings for cell counts below 1 that `cell_counts` reads as 1 (as upstream does, MODEL
/// §4.6), on the axes a crystal size (`sample`, m) does not replace: `-N` when the three are
/// the same, else `-Na`, `-Nb`, `-Nc`.
pub fn count_warnings(o: &Options, sample: [f64; 3]) -> Vec<String> {
    let given = [o.na, o.nb, o.nc];
    let low = |i: usize| sample[i] <= 0.0 && given[i].is_some_and(|v| v < 1.0);
    let say = |flag: &str, v: f64| {
        format!(
            "WARNING: {flag} {}: fewer than 1 unit cell, read as 1 (as upstream does)",
            crate::cfmt::fmt_g(v)
        )
    };
    if (0..3).all(low) && given[0] == given[1] && given[1] == given[2] {
        return vec![say("-N", given[0].unwrap_or(0.0))];
    }
    (0..3)
        .filter(|&i| low(i))
        .map(|i| say(["-Na", "-Nb", "-Nc"][i], given[i].unwrap_or(0.0)))
        .collect()
}

/// The crystal: `-mat` read from `files`, else `cell` (`-cell`, or a `-pdb` model's), the misset (random ones draw from `rng` with
/// `misset_seed`, which the caller has already defaulted from the clock).
pub fn crystal(
    o: &Options,
    cell: Option<[f64; 6]>,
    files: &dyn FileSource,
    lambda0: f64,
    misset_seed: &mut i64,
    rng: &mut RanState,
) -> Result<Crystal> {
    let mat = match &o.mat {
        Some(name) => Some(
            files
                .read(name, FileKind::Matrix)
                .and_then(|text| io::matfile::parse_mat(name, &text))
                .map_err(|e| e.with_flag("-mat").at_file(name.as_str()))?,
        ),
        None => o.mat_values,
    };
    resolve_crystal(CrystalInput {
        cell,
        mat,
        lambda0,
        misset: o.misset,
        misset_random: o.misset_random,
        misset_seed,
        rng,
    })
}

/// Cells along a, b, c: a crystal size given along x, y, z (m, `sample`) replaces the count on
/// that axis (`ceil(size / |axis|)`); counts ≤ 1 become 1. At most [`limits::MAX_CELLS`].
pub fn cell_counts(raw: [f64; 3], sample: [f64; 3], crystal: &Crystal) -> Result<[f64; 3]> {
    let lengths = [mag(crystal.a0), mag(crystal.b0), mag(crystal.c0)];
    let mut n = raw;
    for i in 0..3 {
        if sample[i] > 0.0 {
            n[i] = (sample[i] / lengths[i]).ceil();
        }
    }
    for v in n.iter_mut() {
        if *v <= 1.0 {
            *v = 1.0;
        }
    }
    for i in 0..3 {
        if !(n[i] <= limits::MAX_CELLS) {
            let flags = ["-xtal_thick", "-xtal_width", "-xtal_height"][i];
            return Err(over(format!(
                "a crystal of {} mm along {} ({flags} or -xtalsize) is {} unit cells, more than the \
                 limit of {}",
                crate::cfmt::fmt_g(sample[i] * 1e3),
                ["x", "y", "z"][i],
                crate::cfmt::fmt_g(n[i]),
                crate::cfmt::fmt_g(limits::MAX_CELLS)
            )));
        }
    }
    Ok(n)
}

/// Sub-pixels per axis: as given, or auto-selected so that a sub-pixel resolves the crystal's
/// spots (MODEL §4.7).
#[derive(Clone, Debug, PartialEq)]
pub struct Oversample {
    pub value: i64,
    pub recommended: i64,
    pub log: Option<String>,
    pub warning: Option<String>,
}

pub fn oversample(
    requested: i64,
    n: [f64; 3],
    crystal: &Crystal,
    lambda0: f64,
    det: &Detector,
) -> Result<Oversample> {
    let (la, lb, lc) = (mag(crystal.a0), mag(crystal.b0), mag(crystal.c0));
    let xtalsize_max = (la * n[0]).max(lb * n[1]).max(lc * n[2]);
    let reciprocal_pixel = lambda0 * det.distance / det.pixel;
    let exact = (3.0 * xtalsize_max / reciprocal_pixel).ceil();
    let mut recommended = exact as i64;
    if recommended <= 0 {
        recommended = 1;
    }
    let mut log = None;
    let value = if requested <= 0 {
        if !(exact <= limits::MAX_OVERSAMPLE as f64) {
            let g = crate::cfmt::fmt_g;
            return Err(over(format!(
                "the auto-selected oversampling would be {} sub-pixels per axis (limit {}): a \
                 {} µm crystal against λ·distance/pixel = {} µm (λ {} Å, distance {} mm, pixel \
                 {} mm); check -distance, -pixel, -lambda and the crystal size (-N, -xtalsize), \
                 or give -oversample",
                g(exact),
                limits::MAX_OVERSAMPLE,
                g(xtalsize_max * 1e6),
                g(reciprocal_pixel * 1e6),
                g(lambda0 * 1e10),
                g(det.distance * 1e3),
                g(det.pixel * 1e3)
            )));
        }
        log = Some(format!("auto-selected {recommended}-fold oversampling"));
        recommended
    } else {
        requested
    };
    let warning = (value < recommended).then(|| {
        format!("WARNING: oversampling of {value} is less than the recommended {recommended}")
    });
    if value > limits::MAX_OVERSAMPLE {
        return Err(
            Error::geometry(format!("-oversample {value} is unreasonably large"))
                .with_flag("-oversample"),
        );
    }
    Ok(Oversample {
        value,
        recommended,
        log,
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::detector::{resolve_detector, HeaderDefaults};

    fn setup(s: &str) -> (Options, Crystal, Detector) {
        let o = crate::args::test_opts(s);
        let c = crystal(
            &o,
            o.cell,
            &crate::files::MemFiles::default(),
            1e-10,
            &mut 0,
            &mut RanState::new(),
        )
        .unwrap();
        let d = resolve_detector(&o, &HeaderDefaults::default()).unwrap();
        (o, c, d)
    }

    #[test]
    fn crystal_size_replaces_counts() {
        let (o, c, _) = setup("-cell 100 200 50 90 90 90 -N 3");
        assert_eq!(cell_counts(raw_counts(&o), [0.0; 3], &c).unwrap(), [3.0; 3]);
        // 1 µm along x over 100 Å cells: 100 cells; y unchanged; tiny z size: at least 1
        let n = cell_counts(raw_counts(&o), [1e-6, 0.0, 1e-12], &c).unwrap();
        assert_eq!(n, [100.0, 3.0, 1.0]);
        let e = cell_counts([1.0; 3], [1e305, 0.0, 0.0], &c).unwrap_err();
        assert!(
            e.message.starts_with("a crystal of 1e+308 mm along x"),
            "{}",
            e.message
        );
    }

    #[test]
    fn oversample_auto_selection() {
        // MODEL §4.7: 3 × crystal size / (λ d / pixel)
        let (_, c, d) = setup("-cell 100 100 100 90 90 90 -distance 100 -pixel 0.1");
        // 10 cells of 100 Å: 3 × 1e-7 m / (1e-10 m × 0.1 m / 1e-4 m) = 3
        let o = oversample(-1, [10.0; 3], &c, 1e-10, &d).unwrap();
        assert_eq!(o.value, 3);
        assert_eq!(o.log.as_deref(), Some("auto-selected 3-fold oversampling"));
        let o = oversample(2, [10.0; 3], &c, 1e-10, &d).unwrap();
        assert_eq!((o.value, o.recommended), (2, 3));
        assert!(o.warning.is_some());
        // a tiny distance makes the auto-selected value unbounded: named, not a huge number
        let (_, c, d) = setup("-cell 100 100 100 90 90 90 -distance 1e-3");
        let e = oversample(-1, [5.0; 3], &c, 1e-10, &d).unwrap_err();
        assert!(e.message.contains("distance 0.001 mm"), "{}", e.message);
        assert!(oversample(1, [5.0; 3], &c, 1e-10, &d).is_ok());
    }
}
