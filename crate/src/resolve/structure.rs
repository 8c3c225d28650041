//! Structure factors (MODEL §6.4, §7.7, §7.8): from `-hkl`, or computed from an atomic model
//! (`-pdb`, this port's), else from the cache file upstream reads silently when it exists
//! (`Fdump.bin`), else `-default_F` everywhere; and whether they are interpolated.

use crate::args::Options;
use crate::error::{Error, ErrorKind, Result};
use crate::files::{FileKind, FileSource};
use crate::io;
use crate::plan::{HklGrid, Interpolation, Plan};
use crate::resolve::crystal::Crystal;
use crate::sf::{self, Model};

/// Where the structure factors come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(String),
    /// `-pdb`: computed from an atomic model once the plan is known ([`model_table`]).
    Model(String),
    /// The cache file (`-dump`, default `Fdump.bin`), read because no `-hkl` was given.
    Cache(String),
    Default,
}

/// `-hkl`, else the cache when it exists, else `-default_F`.
pub fn origin(o: &Options, files: &dyn FileSource) -> Origin {
    match (&o.hkl, &o.pdb) {
        (Some(name), _) => Origin::File(name.clone()),
        (None, Some(name)) => Origin::Model(name.clone()),
        (None, None) if files.exists(&o.dump) => Origin::Cache(o.dump.clone()),
        (None, None) => Origin::Default,
    }
}

/// Upstream's usage exit (MODEL §2.5): structure factors and a crystal are required (a `-pdb`
/// model gives both). `-hkl` with `-pdb` is a usage error.
pub fn check_required(o: &Options, origin: &Origin) -> Result<()> {
    if o.hkl.is_some() && o.pdb.is_some() {
        return Err(
            Error::usage("-pdb and -hkl both give structure factors: use one of them")
                .with_flag("-pdb"),
        );
    }
    let model = matches!(origin, Origin::Model(_));
    let mut why = Vec::new();
    if *origin == Origin::Default && o.default_f == 0.0 {
        why.push("no structure factors: give -hkl FILE, -pdb MODEL or -default_F F");
    }
    if o.mat.is_none() && o.mat_values.is_none() && o.cell.map_or(0.0, |c| c[0]) == 0.0 && !model {
        why.push("no crystal: give -cell a b c alpha beta gamma, -mat FILE or -pdb MODEL");
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::MissingInput, why.join("; ")))
    }
}

/// Tricubic interpolation as asked for (`-interpolate`, `-nointerpolate`), else automatic: on
/// when any raw cell count is ≤ 2 (MODEL §6.4, C-QUIRK 18: before the crystal size replaces the
/// counts). Off anyway when there is no table.
pub fn interpolate(interpolate_flag: u8, raw_n: [f64; 3], hkl: &HklGrid) -> bool {
    let wanted = match interpolate_flag {
        0 => false,
        1 => true,
        _ => raw_n.iter().any(|&n| n <= 2.0),
    };
    wanted && hkl.hkls != 0
}

pub struct StructureFactors {
    pub hkl: HklGrid,
    /// For the log.
    pub description: String,
    pub warnings: Vec<String>,
}

pub fn structure_factors(
    o: &Options,
    files: &dyn FileSource,
    origin: &Origin,
) -> Result<StructureFactors> {
    let mut warnings = Vec::new();
    let (hkl, description) = match origin {
        Origin::File(name) => {
            let hkl = files
                .read(name, FileKind::Hkl)
                .and_then(|text| io::hkl::parse_hkl(name, &text, o.default_f))
                .map_err(|e| e.with_flag("-hkl").at_file(name.as_str()))?;
            let d = format!("{} ({} reflections)", name, hkl.hkls);
            (hkl, d)
        }
        Origin::Cache(name) => {
            let hkl = files
                .read(name, FileKind::Fdump)
                .and_then(|bytes| io::hkl::read_fdump(name, &bytes))
                .map_err(|e| e.at_file(name.as_str()))?;
            warnings.push(format!(
                "reading structure factors from {name} because no -hkl was given"
            ));
            (
                hkl,
                format!("{name} (cached structure factors, no -hkl given)"),
            )
        }
        Origin::Default => (HklGrid::default(), format!("default_F = {}", o.default_f)),
        // filled in by `model_table` once the detector's reach is known
        Origin::Model(name) => (HklGrid::default(), name.clone()),
    };
    if let Some(v) = hkl.data.iter().find(|v| !v.is_finite()) {
        let name = match origin {
            Origin::File(n) | Origin::Cache(n) | Origin::Model(n) => n.as_str(),
            Origin::Default => "",
        };
        return Err(Error::input(format!(
            "{name}: a structure factor is not a finite number ({v})"
        ))
        .at_file(name));
    }
    Ok(StructureFactors {
        hkl,
        description,
        warnings,
    })
}

/// The `-pdb` model, read before the crystal (its cell is the crystal's unless -cell/-mat).
pub fn read_model(origin: &Origin, files: &dyn FileSource) -> Result<Option<Model>> {
    match origin {
        Origin::Model(name) => files
            .read(name, FileKind::Model)
            .and_then(|bytes| sf::read_model(name, &bytes))
            .map(Some)
            .map_err(|e| e.with_flag("-pdb").at_file(name.as_str())),
        _ => Ok(None),
    }
}

/// The model's cell as `-cell` values, used for the crystal when neither -cell nor -mat is given.
pub fn model_cell(o: &Options, model: Option<&Model>) -> Option<[f64; 6]> {
    let given = o.mat.is_some() || o.mat_values.is_some() || o.cell.map_or(0.0, |c| c[0]) != 0.0;
    match model {
        Some(m) if !given => {
            let c = &m.cell;
            Some([c.a, c.b, c.c, c.alpha, c.beta, c.gamma])
        }
        _ => o.cell,
    }
}

/// A model's table in the plan (`-pdb`, and the realistic chain's cached table: one path): the
/// table, with the interpolation rule applied to it and the options' cell counts.
pub fn install_table(plan: &mut Plan, o: &Options, table: HklGrid) {
    let tricubic = interpolate(o.interpolate, super::lattice::raw_counts(o), &table);
    plan.interpolation = if tricubic {
        Interpolation::Tricubic
    } else {
        Interpolation::Nearest
    };
    plan.hkl = table;
}

/// `-pdb`: the model's structure-factor table for every reflection the detector reaches
/// (`sf::detector_reach` over the plan's pixels and sources, plus `sf::REACH_MARGIN` for
/// interpolation stencils), or to `-dmin`. Reflections are selected in the simulated lattice
/// (`-cell`/`-mat` when given: they win for the geometry, and the log says so); F is computed in
/// the model's own cell. Returns the table and its description for the log.
pub fn model_table(
    name: &str,
    model: &Model,
    plan: &Plan,
    crystal: &Crystal,
    o: &Options,
    log: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(HklGrid, String)> {
    let mc = &model.cell;
    let model_cell = [mc.a, mc.b, mc.c, mc.alpha, mc.beta, mc.gamma];
    let fmt_cell = |c: [f64; 6]| c.map(crate::cfmt::fmt_g).join(" ");
    if o.mat.is_some() || o.mat_values.is_some() || o.cell.is_some() {
        log.push(format!(
            "-pdb {name}: structure factors computed in the model's cell {}; the crystal lattice is the one given by -cell/-mat",
            fmt_cell(model_cell)
        ));
        let differs = model_cell
            .iter()
            .zip(crystal.cell.iter())
            .any(|(m, c)| (m - c).abs() > 0.01 * m.abs().max(1.0));
        if differs {
            warnings.push(format!(
                "WARNING: the -cell/-mat cell {} differs from the model's cell {} by more than 1%",
                fmt_cell(crystal.cell),
                fmt_cell(model_cell)
            ));
        }
    }
    let d_min = if o.dmin > 0.0 {
        o.dmin * 1e10
    } else {
        sf::detector_reach(plan).ok_or_else(|| {
            Error::geometry(
                "-pdb: the detector sees no scattering angle (give -dmin to choose a resolution)",
            )
            .with_flag("-pdb")
        })? / sf::REACH_MARGIN
    };
    let opts = sf::SfOptions {
        d_min,
        select_metric: Some(sf::lattice_metric([
            crystal.a_star,
            crystal.b_star,
            crystal.c_star,
        ])),
        default_f: o.default_f,
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    let (grid, summary) = sf::compute_model(model, &opts, &|_| {}, &never).map_err(|e| {
        e.prefixed(format_args!("-pdb {name}: "))
            .with_flag("-pdb")
            .at_file(name)
    })?;
    log.push(format!("-pdb {name}: {}", summary.describe()));
    let description = format!(
        "{name} ({} model, space group {}, {} reflections to {:.3} Å)",
        summary.format.name(),
        summary.space_group,
        grid.hkls,
        d_min
    );
    Ok((grid, description))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::test_opts as opts;
    use crate::files::MemFiles;

    #[test]
    fn origin_and_required_inputs() {
        let mut files = MemFiles::default();
        assert_eq!(origin(&opts(""), &files), Origin::Default);
        let e = check_required(&opts("-cell 10 10 10"), &Origin::Default).unwrap_err();
        assert_eq!(e.kind, ErrorKind::MissingInput);
        assert!(e.message.starts_with("no structure factors"));
        let e = check_required(&opts("-default_F 1"), &Origin::Default).unwrap_err();
        assert!(e.message.starts_with("no crystal"));
        files.0.insert("Fdump.bin".into(), vec![]);
        let o = opts("-cell 10 10 10");
        assert_eq!(origin(&o, &files), Origin::Cache("Fdump.bin".into()));
        assert!(check_required(&o, &origin(&o, &files)).is_ok());
        assert_eq!(
            origin(&opts("-hkl a.hkl"), &files),
            Origin::File("a.hkl".into())
        );
    }

    #[test]
    fn interpolation_rule() {
        let table = HklGrid {
            hkls: 1,
            ..Default::default()
        };
        assert!(interpolate(2, [2.0, 10.0, 10.0], &table));
        assert!(!interpolate(2, [3.0; 3], &table));
        assert!(interpolate(1, [3.0; 3], &table));
        assert!(!interpolate(0, [1.0; 3], &table));
        assert!(!interpolate(1, [1.0; 3], &HklGrid::default()));
    }

    #[test]
    fn reads_the_file_and_rejects_non_finite_values() {
        let mut files = MemFiles::default();
        files.0.insert("a.hkl".into(), b"1 2 3 100\n".to_vec());
        let o = opts("-hkl a.hkl");
        let sf = structure_factors(&o, &files, &origin(&o, &files)).unwrap();
        assert_eq!(sf.hkl.hkls, 1);
        assert_eq!(sf.description, "a.hkl (1 reflections)");
        let mut grid = sf.hkl.clone();
        grid.data[0] = f64::NAN;
        files
            .0
            .insert("Fdump.bin".into(), io::hkl::write_fdump(&grid));
        let o = opts("");
        let e = structure_factors(&o, &files, &origin(&o, &files))
            .err()
            .unwrap();
        assert_eq!(
            e.message,
            "Fdump.bin: a structure factor is not a finite number (NaN)"
        );
    }
}
