//! MOSFLM orientation matrix (`-mat`, MODEL.md §4.2, §7.9): the first nine numbers, three rows of
//! three. Row r holds the x/y/z component of a*, b*, c* (columns), in λ-scaled Å⁻¹. Anything after
//! the ninth number (MOSFLM's U matrix, cell, missets) is ignored.

use super::{numbered_lines, show_line};
use crate::cfmt::parse_f64_strict;
use crate::error::{Error, Result};

/// Parses the 3x3 matrix: `m[r][c]` is component r (x, y, z) of reciprocal vector c (a*, b*, c*).
pub fn parse_mat(name: &str, text: &[u8]) -> Result<[[f64; 3]; 3]> {
    let mut m = [[0.0f64; 3]; 3];
    let mut count = 0usize;
    let mut last_line = 1usize;
    'lines: for (n, line) in numbered_lines(text) {
        if !line.iter().all(|b| b.is_ascii_whitespace()) {
            last_line = n;
        }
        for tok in line
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let v = std::str::from_utf8(tok).ok().and_then(parse_f64_strict).filter(|v| v.is_finite()).ok_or_else(|| {
                Error::input(format!(
                    "{name} line {n}: expected 9 numbers (3x3 orientation matrix), found \"{}\" in \"{}\"",
                    show_line(tok),
                    show_line(line)
                )).at_file(name).at_line(n)
            })?;
            m[count / 3][count % 3] = v;
            count += 1;
            if count == 9 {
                break 'lines;
            }
        }
    }
    if count < 9 {
        return Err(Error::input(format!(
            "{name} line {last_line}: expected 9 numbers (3x3 orientation matrix), found only {count}"
        )).at_file(name).at_line(last_line));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn reads_three_line_matrix() {
        let text = b" -0.0129 0.0023 -0.0081\n  0.0030 -0.0130 0.0001\n -0.0100 -0.0010 0.0100\n";
        let m = parse_mat("A.mat", text).unwrap();
        assert_eq!(
            m,
            [
                [-0.0129, 0.0023, -0.0081],
                [0.0030, -0.0130, 0.0001],
                [-0.0100, -0.0010, 0.0100]
            ]
        );
    }

    #[test]
    fn ignores_mosflm_tail_and_free_layout() {
        let text = b"1 2\n3 4 5 6\r\n7 8 9 10 11 12\n0.0 0.0 0.0\nnot numbers at all\n";
        let m = parse_mat("A.mat", text).unwrap();
        assert_eq!(m, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
        let m = parse_mat("A.mat", b"1e-2 -2E-2 .5 1 2 3 4 5 6").unwrap();
        assert_eq!(m[0], [0.01, -0.02, 0.5]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_mat("A.mat", b"1 2 3\n4 5 6\n7 8\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert_eq!(
            e.message,
            "A.mat line 3: expected 9 numbers (3x3 orientation matrix), found only 8"
        );
        let e = parse_mat("A.mat", b"1 2 3\n4 x 6\n7 8 9\n").unwrap_err();
        assert_eq!(
            e.message,
            "A.mat line 2: expected 9 numbers (3x3 orientation matrix), found \"x\" in \"4 x 6\""
        );
        let e = parse_mat("B.mat", b"").unwrap_err();
        assert_eq!(
            e.message,
            "B.mat line 1: expected 9 numbers (3x3 orientation matrix), found only 0"
        );
    }
}
