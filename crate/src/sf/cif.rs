//! mmCIF reader: a CIF 1.1 tokenizer (tags, `loop_`, quoted strings, `;` text fields, comments)
//! and the categories structure factors need from the first data block: `_cell`, the space
//! group (`_symmetry` / `_space_group` names, Hall symbol, number, or the explicit
//! `_symmetry_equiv` / `_space_group_symop` operations), `_atom_site` and
//! `_atom_site_anisotrop`. As for PDB files, all atoms of the first model count.

use super::formfactor::atom_element;
use super::model::{number, Atom, Cell, Format, Model};
use super::symmetry;
use crate::error::{Error, Result};
use std::collections::HashMap;

#[derive(Debug, PartialEq)]
enum Tok<'a> {
    Tag(&'a str),
    Value(&'a str),
    Loop,
    Data,
    /// save_, global_, stop_: not used by mmCIF coordinate files
    Other(&'a str),
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
    name: &'a str,
}

impl<'a> Lexer<'a> {
    fn err(&self, line: usize, what: &str) -> Error {
        Error::input(format!("{} line {line}: {what}", self.name))
            .at_file(self.name)
            .at_line(line)
    }

    /// Next token and the line it starts on.
    fn next(&mut self) -> Result<Option<(Tok<'a>, usize)>> {
        let b = self.s.as_bytes();
        // whitespace and comments
        loop {
            while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                if b[self.pos] == b'\n' {
                    self.line += 1;
                }
                self.pos += 1;
            }
            if self.pos < b.len() && b[self.pos] == b'#' {
                while self.pos < b.len() && b[self.pos] != b'\n' {
                    self.pos += 1;
                }
                continue;
            }
            break;
        }
        if self.pos >= b.len() {
            return Ok(None);
        }
        let line = self.line;
        let start = self.pos;
        let at_line_start = start == 0 || b[start - 1] == b'\n' || b[start - 1] == b'\r';
        let c = b[start];
        if c == b';' && at_line_start {
            // text field: up to a line that starts with ';'
            let mut p = start + 1;
            loop {
                match self.s[p..].find('\n') {
                    None => {
                        return Err(self.err(line, "text field (starting with ';') is never closed"))
                    }
                    Some(off) => {
                        p += off + 1;
                        self.line += 1;
                        if b.get(p) == Some(&b';') {
                            let text = &self.s[start + 1..p - 1];
                            self.pos = p + 1;
                            return Ok(Some((Tok::Value(text), line)));
                        }
                    }
                }
            }
        }
        if c == b'\'' || c == b'"' {
            // quoted: closed by the same quote followed by whitespace or the end
            let mut p = start + 1;
            while p < b.len() {
                if b[p] == b'\n' {
                    break;
                }
                if b[p] == c && (p + 1 == b.len() || b[p + 1].is_ascii_whitespace()) {
                    self.pos = p + 1;
                    return Ok(Some((Tok::Value(&self.s[start + 1..p]), line)));
                }
                p += 1;
            }
            return Err(self.err(line, "quoted string is never closed on its line"));
        }
        let mut p = start;
        while p < b.len() && !b[p].is_ascii_whitespace() {
            p += 1;
        }
        self.pos = p;
        let word = &self.s[start..p];
        let lower = |w: &str, k: &str| {
            w.len() >= k.len() && w.as_bytes()[..k.len()].eq_ignore_ascii_case(k.as_bytes())
        };
        let tok = if c == b'_' {
            Tok::Tag(word)
        } else if word.eq_ignore_ascii_case("loop_") {
            Tok::Loop
        } else if lower(word, "data_") {
            Tok::Data
        } else if lower(word, "save_")
            || lower(word, "global_")
            || word.eq_ignore_ascii_case("stop_")
        {
            Tok::Other(word)
        } else {
            Tok::Value(word)
        };
        Ok(Some((tok, line)))
    }
}

/// A table of the first data block: one tag with one value, or a loop.
struct Table<'a> {
    tags: Vec<String>,
    /// row-major values with their lines
    values: Vec<(&'a str, usize)>,
}

impl<'a> Table<'a> {
    fn rows(&self) -> usize {
        self.values.len() / self.tags.len().max(1)
    }
    fn col(&self, tag: &str) -> Option<usize> {
        self.tags.iter().position(|t| t.eq_ignore_ascii_case(tag))
    }
    fn get(&self, row: usize, col: usize) -> (&'a str, usize) {
        self.values[row * self.tags.len() + col]
    }
}

fn tables<'a>(name: &'a str, text: &'a str) -> Result<Vec<Table<'a>>> {
    let mut lx = Lexer {
        s: text,
        pos: 0,
        line: 1,
        name,
    };
    let mut out: Vec<Table> = Vec::new();
    let mut blocks = 0;
    let mut pending: Option<Tok> = None;
    loop {
        let next = match pending.take() {
            Some(t) => Some((t, lx.line)),
            None => lx.next()?,
        };
        let Some((tok, line)) = next else { break };
        match tok {
            Tok::Data => {
                blocks += 1;
                if blocks > 1 {
                    break; // first data block only
                }
            }
            Tok::Tag(tag) => {
                let Some((Tok::Value(v), vline)) = lx.next()? else {
                    return Err(lx.err(line, &format!("tag {tag} has no value")));
                };
                out.push(Table {
                    tags: vec![tag.to_string()],
                    values: vec![(v, vline)],
                });
            }
            Tok::Loop => {
                let mut tags = Vec::new();
                let mut values = Vec::new();
                loop {
                    match lx.next()? {
                        Some((Tok::Tag(t), _)) if values.is_empty() => tags.push(t.to_string()),
                        Some((Tok::Value(v), l)) => {
                            if tags.is_empty() {
                                return Err(lx.err(l, "loop_ without tags"));
                            }
                            values.push((v, l));
                        }
                        other => {
                            pending = other.map(|(t, _)| t);
                            break;
                        }
                    }
                }
                if tags.is_empty() {
                    return Err(lx.err(line, "loop_ without tags"));
                }
                if values.len() % tags.len() != 0 {
                    return Err(lx.err(
                        line,
                        &format!(
                            "the loop of {} has {} values, not a whole number of rows of {} columns (truncated file?)",
                            tags[0].split('.').next().unwrap_or(&tags[0]),
                            values.len(),
                            tags.len()
                        ),
                    ));
                }
                out.push(Table { tags, values });
                if pending.is_none() {
                    break;
                }
            }
            Tok::Value(v) => {
                return Err(lx.err(line, &format!("value \"{v}\" without a tag")));
            }
            Tok::Other(_) => {}
        }
    }
    if blocks == 0 {
        return Err(Error::input(format!("{name}: no data_ block")).at_file(name));
    }
    Ok(out)
}

fn null(v: &str) -> bool {
    v == "?" || v == "."
}

pub fn read(name: &str, bytes: &[u8]) -> Result<Model> {
    let text = String::from_utf8_lossy(bytes);
    let tables = tables(name, &text)?;
    // single items
    let mut items: HashMap<String, (&str, usize)> = HashMap::new();
    for t in tables.iter().filter(|t| t.rows() == 1) {
        for (i, tag) in t.tags.iter().enumerate() {
            items.entry(tag.to_ascii_lowercase()).or_insert(t.get(0, i));
        }
    }
    let item = |tag: &str| {
        items
            .get(&tag.to_ascii_lowercase())
            .copied()
            .filter(|(v, _)| !null(v))
    };
    let find_table = |tag: &str| tables.iter().find(|t| t.col(tag).is_some());

    // cell
    let mut v = [0.0; 6];
    let mut cell_line = 0;
    for (k, tag) in [
        "_cell.length_a",
        "_cell.length_b",
        "_cell.length_c",
        "_cell.angle_alpha",
        "_cell.angle_beta",
        "_cell.angle_gamma",
    ]
    .iter()
    .enumerate()
    {
        let (text, line) = item(tag).ok_or_else(|| {
            Error::input(format!(
                "{name}: no {tag}: the unit cell is needed to compute structure factors"
            ))
            .at_file(name)
        })?;
        v[k] = number(text).ok_or_else(|| {
            Error::input(format!(
                "{name} line {line}: {tag}: \"{text}\" is not a number"
            ))
            .at_file(name)
            .at_line(line)
        })?;
        cell_line = line;
    }
    let cell = Cell::checked(v, &format!("{name} line {cell_line}: _cell"))?;

    // space group: H-M name, Hall symbol, explicit operations, number (the reference setting,
    // only when no name is given)
    let angles = Some((cell.alpha, cell.gamma));
    let names = [
        "_symmetry.space_group_name_H-M",
        "_space_group.name_H-M_alt",
        "_symmetry.space_group_name_Hall",
        "_space_group.name_Hall",
    ];
    let mut tried: Vec<(String, usize)> = Vec::new();
    let by_name = |tags: &[&str], tried: &mut Vec<(String, usize)>| {
        for tag in tags {
            if let Some((text, line)) = item(tag) {
                match symmetry::find(text, angles) {
                    Some(g) => return Some(g),
                    None => tried.push((format!("{tag} \"{text}\""), line)),
                }
            }
        }
        None
    };
    let mut space_group = by_name(&names, &mut tried);
    if space_group.is_none() {
        for tag in [
            "_space_group_symop.operation_xyz",
            "_symmetry_equiv.pos_as_xyz",
        ] {
            if let Some(t) = find_table(tag) {
                let c = t.col(tag).unwrap_or(0);
                let ops: Vec<(String, usize)> = (0..t.rows())
                    .map(|r| {
                        let (v, l) = t.get(r, c);
                        (v.to_string(), l)
                    })
                    .collect();
                space_group = Some(symmetry::from_triplets(&ops, name)?);
                break;
            }
        }
    }
    // a number names the reference setting: not a fallback for a setting that is not known
    if space_group.is_none() && tried.is_empty() {
        space_group = by_name(
            &["_symmetry.Int_Tables_number", "_space_group.IT_number"],
            &mut tried,
        );
    }
    let space_group = match (space_group, tried.first()) {
        (Some(g), _) => g,
        (None, Some((what, line))) => {
            return Err(Error::input(format!(
                "{name} line {line}: unsupported space group or setting: {what}"
            ))
            .at_file(name)
            .at_line(*line))
        }
        (None, None) => {
            return Err(Error::input(format!(
            "{name}: no space group (_symmetry.space_group_name_H-M or _space_group.name_H-M_alt)"
        ))
            .at_file(name))
        }
    };

    // atoms
    let Some(sites) = find_table("_atom_site.cartn_x") else {
        return Err(Error::input(format!("{name}: no _atom_site loop (no atoms)")).at_file(name));
    };
    if sites.rows() == 0 {
        return Err(Error::input(format!(
            "{name}: the _atom_site loop has no rows (no atoms)"
        ))
        .at_file(name));
    }
    let col = |tag: &str| sites.col(&format!("_atom_site.{tag}"));
    let need = |tag: &str| {
        col(tag).ok_or_else(|| {
            Error::input(format!("{name}: the _atom_site loop has no {tag} column")).at_file(name)
        })
    };
    let (cx, cy, cz) = (need("Cartn_x")?, need("Cartn_y")?, need("Cartn_z")?);
    let ctype = need("type_symbol")?;
    let (cocc, cb) = (col("occupancy"), col("B_iso_or_equiv"));
    let cmodel = col("pdbx_PDB_model_num");
    let cid = col("id");
    let cname = col("auth_atom_id").or(col("label_atom_id"));
    let mut atoms = Vec::with_capacity(sites.rows());
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let first_model = cmodel.map(|c| sites.get(0, c).0);
    for r in 0..sites.rows() {
        if let (Some(c), Some(m)) = (cmodel, first_model) {
            if sites.get(r, c).0 != m {
                continue;
            }
        }
        let (_, line) = sites.get(r, cx);
        let atom_name = cname.map(|c| sites.get(r, c).0).unwrap_or("?");
        let bad = |what: &str, text: &str| {
            Error::input(format!(
                "{name} line {line}: atom \"{atom_name}\": {what} \"{text}\" is not a number"
            ))
            .at_file(name)
            .at_line(line)
        };
        let mut pos = [0.0; 3];
        for (k, c) in [cx, cy, cz].into_iter().enumerate() {
            let text = sites.get(r, c).0;
            pos[k] = number(text).ok_or_else(|| bad(["Cartn_x", "Cartn_y", "Cartn_z"][k], text))?;
        }
        let opt = |c: Option<usize>, default: f64, what: &str| -> Result<f64> {
            match c.map(|c| sites.get(r, c).0) {
                None => Ok(default),
                Some(t) if null(t) => Ok(default),
                Some(t) => number(t).ok_or_else(|| bad(what, t)),
            }
        };
        let occ = opt(cocc, 1.0, "occupancy")?;
        let b_iso = opt(cb, 0.0, "B_iso_or_equiv")?;
        let sym = sites.get(r, ctype).0;
        let element = atom_element(sym, atom_name).map_err(|m| {
            Error::input(format!("{name} line {line}: {m}"))
                .at_file(name)
                .at_line(line)
        })?;
        if let Some(c) = cid {
            ids.insert(sites.get(r, c).0, atoms.len());
        }
        atoms.push(Atom {
            element,
            pos,
            occ,
            b_iso,
            aniso: None,
        });
    }

    // anisotropic displacement: U (Å²) or B (= 8π² U)
    if let Some(an) = find_table("_atom_site_anisotrop.id") {
        let c = |t: &str| an.col(&format!("_atom_site_anisotrop.{t}"));
        let cid = c("id").unwrap_or(0);
        let names = ["[1][1]", "[2][2]", "[3][3]", "[1][2]", "[1][3]", "[2][3]"];
        let (cols, scale): (Option<Vec<usize>>, f64) = match names
            .iter()
            .map(|n| c(&format!("U{n}")))
            .collect::<Option<Vec<_>>>()
        {
            Some(u) => (Some(u), 1.0),
            None => (
                names.iter().map(|n| c(&format!("B{n}"))).collect(),
                1.0 / (8.0 * std::f64::consts::PI * std::f64::consts::PI),
            ),
        };
        if let Some(cols) = cols {
            for r in 0..an.rows() {
                let (id, line) = an.get(r, cid);
                let Some(&i) = ids.get(id) else {
                    continue; // an atom of another model
                };
                let mut u = [0.0; 6];
                for (k, &cc) in cols.iter().enumerate() {
                    let t = an.get(r, cc).0;
                    u[k] = number(t).ok_or_else(|| {
                        Error::input(format!(
                            "{name} line {line}: _atom_site_anisotrop of atom id {id}: {} \"{t}\" is not a number",
                            names[k]
                        )).at_file(name).at_line(line)
                    })? * scale;
                }
                atoms[i].aniso = Some(u);
            }
        }
    }
    Ok(Model {
        format: Format::Mmcif,
        cell,
        space_group,
        atoms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "data_TEST\n# comment\n_cell.length_a 36.72\n_cell.length_b 39.42\n\
        _cell.length_c 40.24(2)\n_cell.angle_alpha 90\n_cell.angle_beta 90.0\n_cell.angle_gamma 90\n\
        _symmetry.space_group_name_H-M 'I 2 2 2'\n\
        loop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.type_symbol\n_atom_site.label_atom_id\n\
        _atom_site.Cartn_x\n_atom_site.Cartn_y\n_atom_site.Cartn_z\n_atom_site.occupancy\n\
        _atom_site.B_iso_or_equiv\n_atom_site.pdbx_PDB_model_num\n\
        ATOM 1 N \"N\" -9.009 4.612 6.102 1.00 16.77 1\n\
        HETATM 2 FE FE 1.0 2.0 3.0 0.5 20.0 1\n\
        ATOM 3 O O 1.0 2.0 3.0 ? ? 1\n\
        ATOM 4 N N 1.0 2.0 3.0 1 1 2\n\
        loop_\n_atom_site_anisotrop.id\n_atom_site_anisotrop.U[1][1]\n_atom_site_anisotrop.U[2][2]\n\
        _atom_site_anisotrop.U[3][3]\n_atom_site_anisotrop.U[1][2]\n_atom_site_anisotrop.U[1][3]\n\
        _atom_site_anisotrop.U[2][3]\n1 0.2406 0.1892 0.1614 0.0198 0.0519 -0.0328\n\
        _struct.title\n;\ntext field\n;\n";

    fn rd(s: &str) -> Result<Model> {
        super::super::model::read("m.cif", s.as_bytes())
    }

    #[test]
    fn reads_cell_symmetry_atoms_anisotrop() {
        let m = rd(GOOD).unwrap();
        assert_eq!(m.format, Format::Mmcif);
        assert_eq!(m.cell.c, 40.24);
        assert_eq!(m.space_group.name, "I 2 2 2");
        assert_eq!(m.atoms.len(), 3, "first model only");
        assert_eq!(m.atoms[1].occ, 0.5);
        assert_eq!((m.atoms[2].occ, m.atoms[2].b_iso), (1.0, 0.0));
        assert_eq!(m.atoms[0].aniso.unwrap()[5], -0.0328);
        assert!(m.atoms[1].aniso.is_none());
        // explicit operations when the name is missing
        let ops = GOOD.replace(
            "_symmetry.space_group_name_H-M 'I 2 2 2'\n",
            "loop_\n_space_group_symop.id\n_space_group_symop.operation_xyz\n1 x,y,z\n2 '-x,-y,z'\n",
        );
        let m = rd(&ops).unwrap();
        assert_eq!(m.space_group.ops.len(), 2);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = |s: String| rd(&s).unwrap_err().message;
        let m = e(GOOD.replace("'I 2 2 2'", "'I 2 2 5'"));
        assert_eq!(
            m,
            "m.cif line 9: unsupported space group or setting: _symmetry.space_group_name_H-M \"I 2 2 5\""
        );
        let m = e(GOOD.replace("_symmetry.space_group_name_H-M 'I 2 2 2'\n", ""));
        assert!(m.starts_with("m.cif: no space group"), "{m}");
        let m = e(GOOD.replace("_cell.length_b 39.42\n", ""));
        assert!(m.starts_with("m.cif: no _cell.length_b"), "{m}");
        let m = e(GOOD.replace("HETATM 2 FE FE", "HETATM 2 QQ FE"));
        assert_eq!(
            m,
            "m.cif line 22: atom \"FE\": unknown element \"QQ\" (no X-ray form factor for it)"
        );
        let m = e(GOOD.replace("1.0 2.0 3.0 0.5", "1.0 2.x 3.0 0.5"));
        assert!(
            m.starts_with("m.cif line 22: atom \"FE\": Cartn_y \"2.x\""),
            "{m}"
        );
        let cut = &GOOD[..GOOD.find("HETATM 2 FE FE 1.0").unwrap() + 18];
        let m = e(cut.to_string());
        assert!(m.contains("line 10: the loop of _atom_site has"), "{m}");
        let m = e(GOOD.replace("'I 2 2 2'", "'I 2 2 2"));
        assert_eq!(m, "m.cif line 9: quoted string is never closed on its line");
        let m = e(GOOD.replace(";\ntext field\n;\n", ";\ntext field\n"));
        assert!(
            m.contains("text field (starting with ';') is never closed"),
            "{m}"
        );
        let m = e(GOOD.replace("_cell.angle_beta 90.0", "_cell.angle_beta"));
        assert!(
            m.contains("tag _cell.angle_beta has no value") || m.contains("without a tag"),
            "{m}"
        );
        let m = e(GOOD
            .replace("_atom_site.type_symbol\n", "")
            .replace(" N \"N\"", " \"N\"")
            .replace(" FE FE", " FE")
            .replace(" O O", " O")
            .replace(" N N 1.0", " N 1.0"));
        assert_eq!(m, "m.cif: the _atom_site loop has no type_symbol column");
    }
}
