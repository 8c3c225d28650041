//! PDB format reader (wwPDB format v3.3, fixed columns): CRYST1, ATOM/HETATM, ANISOU, MODEL.
//!
//! Only what structure factors need is read. All atoms of the first model count, with every
//! alternate conformation at its own occupancy, hydrogens and waters included (as gemmi does).
//! The element comes from columns 77-78, or from the atom name when those are blank.

use super::formfactor::atom_element;
use super::model::{number, Atom, Cell, Format, Model};
use super::symmetry;
use crate::error::{Error, Result};

/// Columns `from..=to` (1-based, inclusive) of a line, as text (empty past the end).
fn cols(line: &[u8], from: usize, to: usize) -> String {
    let end = to.min(line.len());
    if from > end {
        return String::new();
    }
    String::from_utf8_lossy(&line[from - 1..end]).into_owned()
}

fn show(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Element from columns 77-78, else from the atom name (columns 13-16): a name that starts in
/// column 14 (column 13 blank or a digit) has a one-letter element; one that starts in column
/// 13 has a two-letter element, except ATOM records of hydrogens and the like written with
/// four-character names ("HG21").
fn element_symbol(line: &[u8], hetatm: bool) -> String {
    let e = cols(line, 77, 78);
    if !e.trim().is_empty() {
        return e.trim().to_string();
    }
    let name = cols(line, 13, 16);
    let b: Vec<char> = name.chars().collect();
    let first = b.first().copied().unwrap_or(' ');
    if first == ' ' || first.is_ascii_digit() {
        return b.get(1).map(|c| c.to_string()).unwrap_or_default();
    }
    let two: String = b.iter().take(2).collect();
    if !hetatm && "HDCNOS".contains(first) {
        return first.to_string();
    }
    two.trim().to_string()
}

pub fn read(name: &str, bytes: &[u8]) -> Result<Model> {
    let mut cell: Option<(Cell, usize)> = None;
    let mut sg_name: Option<(String, usize)> = None;
    let mut atoms: Vec<Atom> = Vec::new();
    // serial and line of the last ATOM/HETATM, for ANISOU records
    let mut last: Option<(String, usize)> = None;
    let mut in_model = false;
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let rec = cols(line, 1, 6);
        let err = |what: String| {
            Error::input(format!("{name} line {n}: {what}: \"{}\"", show(line)))
                .at_file(name)
                .at_line(n)
        };
        match rec.trim_end() {
            "CRYST1" => {
                let mut v = [0.0; 6];
                for (k, (from, to)) in [(7, 15), (16, 24), (25, 33), (34, 40), (41, 47), (48, 54)]
                    .into_iter()
                    .enumerate()
                {
                    v[k] = number(&cols(line, from, to)).ok_or_else(|| {
                        err(format!(
                            "CRYST1: cannot read {} in columns {from}-{to}",
                            ["a", "b", "c", "alpha", "beta", "gamma"][k]
                        ))
                    })?;
                }
                cell = Some((Cell::checked(v, &format!("{name} line {n}: CRYST1"))?, n));
                sg_name = Some((cols(line, 56, 66).trim().to_string(), n));
            }
            "MODEL" => {
                if in_model {
                    return Err(err("MODEL record inside a model (ENDMDL missing)".into()));
                }
                in_model = true;
            }
            "ENDMDL" => break, // first model only
            "END" => break,
            "ATOM" | "HETATM" => {
                let atom_name = cols(line, 13, 16).trim().to_string();
                if line.len() < 54 {
                    return Err(err(format!(
                        "{} record of atom \"{atom_name}\" is cut short: the coordinates need columns 31-54",
                        rec.trim_end()
                    )));
                }
                let mut pos = [0.0; 3];
                for (k, (from, to)) in [(31, 38), (39, 46), (47, 54)].into_iter().enumerate() {
                    pos[k] = number(&cols(line, from, to)).ok_or_else(|| {
                        err(format!(
                            "atom \"{atom_name}\": cannot read the {} coordinate in columns {from}-{to}",
                            ["x", "y", "z"][k]
                        ))
                    })?;
                }
                let occ_field = cols(line, 55, 60);
                let occ = if occ_field.trim().is_empty() {
                    1.0
                } else {
                    number(&occ_field).ok_or_else(|| {
                        err(format!(
                            "atom \"{atom_name}\": cannot read the occupancy in columns 55-60"
                        ))
                    })?
                };
                let b_field = cols(line, 61, 66);
                let b_iso = if b_field.trim().is_empty() {
                    0.0
                } else {
                    number(&b_field).ok_or_else(|| {
                        err(format!(
                            "atom \"{atom_name}\": cannot read the B factor in columns 61-66"
                        ))
                    })?
                };
                let sym = element_symbol(line, rec == "HETATM");
                let element = atom_element(&sym, &atom_name).map_err(err)?;
                atoms.push(Atom {
                    element,
                    pos,
                    occ,
                    b_iso,
                    aniso: None,
                });
                last = Some((cols(line, 7, 11).trim().to_string(), n));
            }
            "ANISOU" => {
                let serial = cols(line, 7, 11).trim().to_string();
                let Some((last_serial, _)) = &last else {
                    return Err(err("ANISOU record before any ATOM/HETATM record".into()));
                };
                if *last_serial != serial {
                    return Err(err(format!(
                        "ANISOU record of atom serial {serial} does not follow its ATOM record (the previous atom is serial {last_serial})"
                    )));
                }
                let mut u = [0.0; 6];
                for (k, (from, to)) in [(29, 35), (36, 42), (43, 49), (50, 56), (57, 63), (64, 70)]
                    .into_iter()
                    .enumerate()
                {
                    u[k] = number(&cols(line, from, to)).ok_or_else(|| {
                        err(format!(
                            "ANISOU: cannot read {} in columns {from}-{to}",
                            ["U11", "U22", "U33", "U12", "U13", "U23"][k]
                        ))
                    })? * 1e-4;
                }
                if let Some(a) = atoms.last_mut() {
                    a.aniso = Some(u);
                }
            }
            _ => {}
        }
    }
    let Some((cell, _)) = cell else {
        return Err(Error::input(format!(
            "{name}: no CRYST1 record: the unit cell and space group are needed to compute structure factors"
        )).at_file(name));
    };
    let (sg_text, sg_line) = sg_name.unwrap_or_default();
    if sg_text.is_empty() {
        return Err(Error::input(format!(
            "{name} line {sg_line}: CRYST1 has no space group (columns 56-66)"
        ))
        .at_file(name)
        .at_line(sg_line));
    }
    let space_group =
        symmetry::find(&sg_text, Some((cell.alpha, cell.gamma))).ok_or_else(|| {
            Error::input(format!(
                "{name} line {sg_line}: unsupported space group or setting \"{sg_text}\" in CRYST1"
            ))
            .at_file(name)
            .at_line(sg_line)
        })?;
    Ok(Model {
        format: Format::Pdb,
        cell,
        space_group,
        atoms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "CRYST1   36.720   39.420   40.240  90.00  90.00  90.00 I 2 2 2      16          \n";
    const ATOM: &str =
        "ATOM      1  N   GLY A   1      -9.009   4.612   6.102  1.00 16.77           N  \n";

    fn read_str(s: &str) -> Result<Model> {
        super::super::model::read("m.pdb", s.as_bytes())
    }

    #[test]
    fn reads_atoms_cell_and_anisou() {
        let text = format!(
            "{HEAD}{ATOM}ANISOU    1  N   GLY A   1     2406   1892   1614    198    519   -328       N  \n\
             HETATM    2 FE   HEM A   2       1.000   2.000   3.000  0.50 20.00          FE  \n\
             ATOM      3 HG21 THR A   3       1.000   2.000   3.000  1.00 20.00\n\
             ATOM      4  CA  THR A   3       1.000   2.000   3.000\n\
             END\nATOM      9  N   GLY A   1      -9.009   4.612   6.102  1.00 16.77           N\n"
        );
        let m = read_str(&text).unwrap();
        assert_eq!(m.space_group.name, "I 2 2 2");
        assert_eq!(m.space_group.ops.len(), 8);
        assert_eq!(m.atoms.len(), 4);
        let u = m.atoms[0].aniso.unwrap();
        assert!((u[0] - 0.2406).abs() < 1e-12 && (u[5] + 0.0328).abs() < 1e-12);
        let sym = |i: usize| super::super::formfactor::table().symbols[m.atoms[i].element];
        assert_eq!((sym(0), sym(1), sym(2), sym(3)), ("N", "Fe", "H", "C"));
        assert_eq!(
            (m.atoms[1].occ, m.atoms[3].occ, m.atoms[3].b_iso),
            (0.5, 1.0, 0.0)
        );
    }

    #[test]
    fn first_model_only() {
        let text = format!("{HEAD}MODEL        1\n{ATOM}ENDMDL\nMODEL        2\n{ATOM}ENDMDL\n");
        assert_eq!(read_str(&text).unwrap().atoms.len(), 1);
    }

    #[test]
    fn errors_name_file_line_and_atom() {
        let e = |s: &str| read_str(s).unwrap_err().message;
        assert_eq!(
            e(ATOM),
            "m.pdb: no CRYST1 record: the unit cell and space group are needed to compute structure factors"
        );
        let m = e(&format!("{HEAD}{}", &ATOM[..40]));
        assert!(
            m.starts_with("m.pdb line 2: ATOM record of atom \"N\" is cut short"),
            "{m}"
        );
        let m = e(&format!("{HEAD}{}", ATOM.replace("-9.009", "-9.0x9")));
        assert!(
            m.starts_with("m.pdb line 2: atom \"N\": cannot read the x coordinate"),
            "{m}"
        );
        let m = e(&format!("{HEAD}{}", ATOM.replace("N  \n", "Q  \n")));
        assert!(
            m.starts_with("m.pdb line 2: atom \"N\": unknown element \"Q\""),
            "{m}"
        );
        let m = e(&format!("{}{ATOM}", HEAD.replace("I 2 2 2  ", "P 5 3 1  ")));
        assert!(
            m.starts_with("m.pdb line 1: unsupported space group or setting \"P 5 3 1\""),
            "{m}"
        );
        let m = e(&format!("{}{ATOM}", HEAD.replace("I 2 2 2  ", "         ")));
        assert_eq!(m, "m.pdb line 1: CRYST1 has no space group (columns 56-66)");
        let m = e(&format!("{}{ATOM}", HEAD.replace("39.420", "-9.420")));
        assert!(m.contains("line 1: CRYST1: 36.72 -9.42"), "{m}");
        let m = e(&format!("{}{ATOM}", HEAD.replace("40.2", "4x.2")));
        assert!(
            m.starts_with("m.pdb line 1: CRYST1: cannot read c in columns 25-33"),
            "{m}"
        );
        let m = e(&format!("{HEAD}{ATOM}ANISOU    7  N   GLY A   1     2406   1892   1614    198    519   -328       N  \n"));
        assert!(
            m.contains("line 3: ANISOU record of atom serial 7 does not follow"),
            "{m}"
        );
        let m = e(&format!(
            "{HEAD}{ATOM}ANISOU    1  N   GLY A   1     2406   1892\n"
        ));
        assert!(m.contains("line 3: ANISOU: cannot read U33"), "{m}");
        let m = e("CRYST1    1.000    1.000    1.000  90.00  90.00  90.00 P 1           1\nATOM      1  N   GLY A   1      -9.009   4.612   6.102  1.00 16.77           N\n");
        assert!(m.contains("placeholder"), "{m}");
        let m = e(HEAD);
        assert!(m.contains("no atoms found"), "{m}");
    }
}
