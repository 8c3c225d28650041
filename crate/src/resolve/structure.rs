//! Structure factors (MODEL §6.4, §7.7, §7.8): from `-hkl`, else from the cache file upstream
//! reads silently when it exists (`Fdump.bin`), else `-default_F` everywhere; and whether they are
//! interpolated.

use crate::args::Options;
use crate::error::{Error, ErrorKind, Result};
use crate::files::{FileKind, FileSource};
use crate::io;
use crate::plan::HklGrid;

/// Where the structure factors come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File(String),
    /// The cache file (`-dump`, default `Fdump.bin`), read because no `-hkl` was given.
    Cache(String),
    Default,
}

/// `-hkl`, else the cache when it exists, else `-default_F`.
pub fn origin(o: &Options, files: &dyn FileSource) -> Origin {
    match &o.hkl {
        Some(name) => Origin::File(name.clone()),
        None if files.exists(&o.dump) => Origin::Cache(o.dump.clone()),
        None => Origin::Default,
    }
}

/// Upstream's usage exit (MODEL §2.5): structure factors and a crystal are required.
pub fn check_required(o: &Options, origin: &Origin) -> Result<()> {
    let mut why = Vec::new();
    if *origin == Origin::Default && o.default_f == 0.0 {
        why.push("no structure factors: give -hkl FILE or -default_F F");
    }
    if o.mat.is_none() && o.cell.map_or(0.0, |c| c[0]) == 0.0 {
        why.push("no crystal: give -cell a b c alpha beta gamma or -mat FILE");
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
            let hkl = io::hkl::parse_hkl(name, &files.read(name, FileKind::Hkl)?, o.default_f)?;
            let d = format!("{} ({} reflections)", name, hkl.hkls);
            (hkl, d)
        }
        Origin::Cache(name) => {
            let hkl = io::hkl::read_fdump(name, &files.read(name, FileKind::Fdump)?)?;
            warnings.push(format!(
                "reading structure factors from {name} because no -hkl was given"
            ));
            (
                hkl,
                format!("{name} (cached structure factors, no -hkl given)"),
            )
        }
        Origin::Default => (HklGrid::default(), format!("default_F = {}", o.default_f)),
    };
    if let Some(v) = hkl.data.iter().find(|v| !v.is_finite()) {
        let name = match origin {
            Origin::File(n) | Origin::Cache(n) => n.as_str(),
            Origin::Default => "",
        };
        return Err(Error::input(format!(
            "{name}: a structure factor is not a finite number ({v})"
        )));
    }
    Ok(StructureFactors {
        hkl,
        description,
        warnings,
    })
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
