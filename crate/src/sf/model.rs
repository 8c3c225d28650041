//! The atomic model: unit cell, space group and atoms, read from a PDB or mmCIF file (the
//! format is told by content, not by name).

use super::symmetry::SpaceGroup;
use super::{cif, pdb};
use crate::error::{Error, Result};

/// Unit cell: lengths in Å, angles in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
}

/// cos of an angle in degrees, exactly 0 at 90° (as gemmi does).
fn cosd(deg: f64) -> f64 {
    if deg == 90.0 {
        0.0
    } else {
        deg.to_radians().cos()
    }
}

impl Cell {
    /// A cell from a b c alpha beta gamma, checked ([`Cell::validate`]); the 1 Å placeholder
    /// cell that NMR and EM entries carry is an error too. `what` names the record.
    pub fn checked(v: [f64; 6], what: &str) -> Result<Cell> {
        let cell = Cell {
            a: v[0],
            b: v[1],
            c: v[2],
            alpha: v[3],
            beta: v[4],
            gamma: v[5],
        };
        cell.validate(what)?;
        if [cell.a, cell.b, cell.c] == [1.0, 1.0, 1.0] {
            return Err(Error::input(format!(
                "{what} holds the placeholder 1 Å cell of a non-crystal entry (NMR or EM): there is no unit cell"
            )));
        }
        Ok(cell)
    }

    /// Checks that the six numbers make a cell; `what` names the record for the message.
    pub fn validate(&self, what: &str) -> Result<()> {
        let lengths_ok = [self.a, self.b, self.c]
            .iter()
            .all(|&v| v.is_finite() && v > 0.0);
        let angles_ok = [self.alpha, self.beta, self.gamma]
            .iter()
            .all(|&v| v.is_finite() && v > 0.0 && v < 180.0);
        if !lengths_ok || !angles_ok || !(self.volume() > 0.0) {
            return Err(Error::input(format!(
                "{what}: {} {} {} {} {} {} is not a unit cell (lengths in Å > 0, angles in degrees between 0 and 180 that close a cell)",
                self.a, self.b, self.c, self.alpha, self.beta, self.gamma
            )));
        }
        Ok(())
    }

    pub fn volume(&self) -> f64 {
        let (ca, cb, cg) = (cosd(self.alpha), cosd(self.beta), cosd(self.gamma));
        let t = 1.0 - ca * ca - cb * cb - cg * cg + 2.0 * ca * cb * cg;
        if t > 0.0 {
            self.a * self.b * self.c * t.sqrt()
        } else {
            f64::NAN
        }
    }

    /// Orthogonalisation matrix (fractional -> Cartesian Å), PDB convention: a along x, b in
    /// the xy plane.
    pub fn orth(&self) -> [[f64; 3]; 3] {
        let (ca, cb, cg) = (cosd(self.alpha), cosd(self.beta), cosd(self.gamma));
        let sg = self.gamma.to_radians().sin();
        let v = self.volume();
        [
            [self.a, self.b * cg, self.c * cb],
            [0.0, self.b * sg, self.c * (ca - cb * cg) / sg],
            [0.0, 0.0, v / (self.a * self.b * sg)],
        ]
    }

    /// Fractionalisation matrix (Cartesian Å -> fractional), the inverse of [`Cell::orth`].
    pub fn frac(&self) -> [[f64; 3]; 3] {
        let o = self.orth();
        // upper triangular inverse
        let (a, b, c, d, e, f) = (o[0][0], o[0][1], o[0][2], o[1][1], o[1][2], o[2][2]);
        [
            [1.0 / a, -b / (a * d), (b * e - c * d) / (a * d * f)],
            [0.0, 1.0 / d, -e / (d * f)],
            [0.0, 0.0, 1.0 / f],
        ]
    }
}

/// One atom of the model (first model only), Cartesian Å.
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    /// Index into the form-factor table (`formfactor::table()`).
    pub element: usize,
    pub pos: [f64; 3],
    pub occ: f64,
    /// Isotropic B (Å²).
    pub b_iso: f64,
    /// Anisotropic U (Å², Cartesian): U11 U22 U33 U12 U13 U23; used instead of `b_iso`.
    pub aniso: Option<[f64; 6]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pdb,
    Mmcif,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdb => "PDB",
            Format::Mmcif => "mmCIF",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Model {
    pub format: Format,
    pub cell: Cell,
    pub space_group: SpaceGroup,
    pub atoms: Vec<Atom>,
}

/// Tells PDB from mmCIF by content: a CIF file's first word (after blank and `#` comment
/// lines) is `data_…`; a PDB file has fixed-column records (`ATOM  `, `CRYST1`, `HEADER`, …).
pub fn detect(name: &str, bytes: &[u8]) -> Result<Format> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(Error::input(format!(
            "{name}: the file is gzip-compressed: decompress it first (gunzip)"
        ))
        .at_file(name));
    }
    for line in bytes.split(|&b| b == b'\n') {
        let t = line.trim_ascii();
        if t.is_empty() || t.starts_with(b"#") {
            continue;
        }
        if t.len() >= 5 && t[..5].eq_ignore_ascii_case(b"data_") {
            return Ok(Format::Mmcif);
        }
        break;
    }
    const RECORDS: [&[u8]; 12] = [
        b"ATOM  ", b"HETATM", b"CRYST1", b"HEADER", b"REMARK", b"TITLE ", b"COMPND", b"MODEL ",
        b"SCALE1", b"EXPDTA", b"AUTHOR", b"SOURCE",
    ];
    let is_pdb = bytes
        .split(|&b| b == b'\n')
        .take(10_000)
        .any(|l| RECORDS.iter().any(|r| l.starts_with(r)) || l == b"ATOM" || l == b"END");
    if is_pdb {
        return Ok(Format::Pdb);
    }
    Err(Error::input(format!(
        "{name}: not a coordinate file: expected a PDB file (records such as CRYST1 and ATOM) or an mmCIF file (starting with data_)"
    )).at_file(name))
}

/// Reads a PDB or mmCIF model. Errors name the file and, where there is one, the line.
pub fn read(name: &str, bytes: &[u8]) -> Result<Model> {
    let bytes = crate::io::without_bom(bytes);
    let format = detect(name, bytes)?;
    let model = match format {
        Format::Pdb => pdb::read(name, bytes)?,
        Format::Mmcif => cif::read(name, bytes)?,
    };
    if model.atoms.is_empty() {
        return Err(Error::input(format!(
            "{name}: no atoms found ({} file without ATOM/HETATM records)",
            format.name()
        ))
        .at_file(name));
    }
    Ok(model)
}

/// Parses a number field, trimming blanks and a trailing standard uncertainty "(12)".
pub(crate) fn number(field: &str) -> Option<f64> {
    let t = field.trim();
    let t = match t.find('(') {
        Some(i) if t.ends_with(')') => &t[..i],
        _ => t,
    };
    if t.is_empty() {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_matrices() {
        let c = Cell {
            a: 10.0,
            b: 12.0,
            c: 15.0,
            alpha: 80.0,
            beta: 95.0,
            gamma: 105.0,
        };
        let (o, f) = (c.orth(), c.frac());
        for i in 0..3 {
            for j in 0..3 {
                let p: f64 = (0..3).map(|k| o[i][k] * f[k][j]).sum();
                assert!((p - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        // |b| and |c| columns have the cell lengths
        let col = |m: [[f64; 3]; 3], j: usize| (0..3).map(|i| m[i][j] * m[i][j]).sum::<f64>();
        assert!((col(o, 1).sqrt() - 12.0).abs() < 1e-12);
        assert!((col(o, 2).sqrt() - 15.0).abs() < 1e-12);
        assert!(c.validate("x").is_ok());
        let bad = Cell {
            alpha: 10.0,
            beta: 10.0,
            gamma: 150.0,
            ..c
        };
        assert!(bad
            .validate("CRYST1")
            .unwrap_err()
            .message
            .contains("not a unit cell"));
    }

    #[test]
    fn numbers_and_detection() {
        assert_eq!(number(" 12.5(3) "), Some(12.5));
        assert_eq!(number("?"), None);
        assert_eq!(number(""), None);
        assert_eq!(number("nan"), None);
        assert_eq!(detect("a", b"\n# c\ndata_x\n").unwrap(), Format::Mmcif);
        assert_eq!(detect("a", b"HEADER x\nATOM  1\n").unwrap(), Format::Pdb);
        let e = read("b.cif", b"\xef\xbb\xbfdata_x\n").unwrap_err().message;
        assert!(e.starts_with("b.cif: no _cell.length_a"), "{e}");
        assert!(detect("a.pdb", b"hello\n")
            .unwrap_err()
            .message
            .contains("not a coordinate file"));
        assert!(detect("a.gz", &[0x1f, 0x8b, 8, 0])
            .unwrap_err()
            .message
            .contains("gzip"));
    }
}
