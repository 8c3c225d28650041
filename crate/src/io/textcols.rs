//! Upstream's multi-column text reader (`-sourcefile`, `-stol`; MODEL.md §7.10).
//!
//! Fields are separated by any run of space, tab, `,` `;` `:` `!`. Each non-blank line is one
//! row of `ncols` values; a value is C `atof` of its field (so `1.5e-3xyz` reads as 1.5e-3), and
//! missing trailing fields are NaN, for the file's last line too (upstream gives 0.0 there when
//! the final newline is missing). Stricter than upstream: lines starting with `#` are comments,
//! and a field (among the first `ncols`) that does not start with a number, or reads as NaN or
//! ±inf, is an error naming the file and line instead of silently reading 0.

use super::{numbered_lines, show_line};
use crate::cfmt::scan_f64;
use crate::error::{Error, Result};

const DELIMITERS: &[u8] = b" \t,;:!";

fn is_delim(b: &u8) -> bool {
    DELIMITERS.contains(b)
}

/// Reads every non-blank, non-comment line as `ncols` numbers (NaN where missing).
pub fn read_columns(name: &str, text: &[u8], ncols: usize) -> Result<Vec<Vec<f64>>> {
    Ok(read_rows(name, text, ncols)?
        .into_iter()
        .map(|(_, row)| row)
        .collect())
}

/// Like [`read_columns`], with each row's 1-based line number.
pub fn read_rows(name: &str, text: &[u8], ncols: usize) -> Result<Vec<(usize, Vec<f64>)>> {
    super::check_not_utf16(name, text)?;
    let mut rows = Vec::new();
    for (n, line) in numbered_lines(text) {
        let start = line.iter().position(|b| !is_delim(b)).unwrap_or(line.len());
        let rest = &line[start..];
        if rest.is_empty() || rest[0] == b'#' {
            continue;
        }
        let mut row = vec![f64::NAN; ncols];
        for (col, (slot, field)) in row
            .iter_mut()
            .zip(rest.split(is_delim).filter(|f| !f.is_empty()))
            .enumerate()
        {
            let (v, used) = scan_f64(field);
            if used > 0 && !v.is_finite() {
                return Err(Error::input(format!(
                    "{name} line {n}: column {} is '{}', not a finite number",
                    col + 1,
                    String::from_utf8_lossy(field)
                ))
                .at_file(name)
                .at_line(n));
            }
            if used == 0 {
                return Err(Error::input(format!(
                    "{name} line {n}: expected up to {ncols} numbers, found \"{}\"",
                    show_line(line)
                ))
                .at_file(name)
                .at_line(n));
            }
            *slot = v;
        }
        rows.push((n, row));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn reads_sources_file() {
        let text = b"-10 0 0 1.0 1.0e-10\n-10 0.0015 0 0.5 1.03e-10\n-10 0 -0.002 2.0 0.97e-10\n";
        let rows = read_columns("sources.txt", text, 5).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1], vec![-10.0, 0.0015, 0.0, 0.5, 1.03e-10]);
        assert_eq!(rows[2], vec![-10.0, 0.0, -0.002, 2.0, 0.97e-10]);
    }

    #[test]
    fn delimiters_blank_lines_comments_and_missing_fields() {
        let nan = f64::NAN;
        let text = b"  \t\n# X Y Z\n1,2;3\n,;:! 4:5!6 7 8 9\n\r\n  10\t \n11 12";
        let rows = read_columns("s.txt", text, 5).unwrap();
        assert_eq!(rows.len(), 4);
        assert!(same(&rows[0], &[1.0, 2.0, 3.0, nan, nan]));
        assert!(same(&rows[1], &[4.0, 5.0, 6.0, 7.0, 8.0]));
        assert!(same(&rows[2], &[10.0, nan, nan, nan, nan]));
        // Last line without newline: NaN too (documented divergence from upstream's 0.0).
        assert!(same(&rows[3], &[11.0, 12.0, nan, nan, nan]));
    }

    #[test]
    fn atof_semantics_within_a_field() {
        let rows = read_columns("stol", b"0.5e1xyz 2.5q\n", 2).unwrap();
        assert_eq!(rows, vec![vec![5.0, 2.5]]);
        let rows = read_columns("stol", b"0 2.56999\n5.0005e-05 2.57\n", 2).unwrap();
        assert_eq!(rows, vec![vec![0.0, 2.56999], vec![5.0005e-05, 2.57]]);
    }

    #[test]
    fn non_numbers_are_errors() {
        let e = read_columns("sources.txt", b"1 2 3\nX Y Z weight lambda\n", 5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert_eq!(
            e.message,
            "sources.txt line 2: expected up to 5 numbers, found \"X Y Z weight lambda\""
        );
        let e = read_columns("sources.txt", b"1 abc 3\n", 5).unwrap_err();
        assert_eq!(
            e.message,
            "sources.txt line 1: expected up to 5 numbers, found \"1 abc 3\""
        );
        // Extra fields beyond ncols are not looked at.
        let rows = read_columns("s", b"1 2 comment\n", 2).unwrap();
        assert_eq!(rows, vec![vec![1.0, 2.0]]);
        assert!(read_columns("s", b"", 2).unwrap().is_empty());
    }
}
