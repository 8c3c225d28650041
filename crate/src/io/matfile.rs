//! MOSFLM orientation matrix (`-mat`, MODEL.md §4.2, §7.9): the first nine numbers, three rows of
//! three. Row r holds the x/y/z component of a*, b*, c* (columns), in λ-scaled Å⁻¹. Anything after
//! the ninth number (MOSFLM's U matrix, cell, missets) is ignored.

use super::{numbered_lines, show_line};
use crate::cfmt::parse_f64_strict;
use crate::error::{Error, Result};

/// Parses the 3x3 matrix: `m[r][c]` is component r (x, y, z) of reciprocal vector c (a*, b*, c*).
pub fn parse_mat(name: &str, text: &[u8]) -> Result<[[f64; 3]; 3]> {
    super::check_not_utf16(name, text)?;
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
    if let Some(why) = degenerate(&m) {
        return Err(Error::input(format!(
            "{name}: not an orientation matrix: {why} (its columns a*, b*, c* must span a cell)"
        ))
        .at_file(name)
        .at_line(last_line));
    }
    Ok(m)
}

/// Why `m`'s columns (a*, b*, c*) span no cell, if they do not: a zero column, or three columns
/// in one plane (the triple product below 10⁻⁹ of the product of their lengths: a cell of
/// angles within 10⁻⁹ rad of flat, which no crystal has). Such a matrix has no inverse, so no
/// real-space cell; upstream would go on with infinite or NaN axes.
fn degenerate(m: &[[f64; 3]; 3]) -> Option<&'static str> {
    let col = |c: usize| [m[0][c], m[1][c], m[2][c]];
    let len = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let (a, b, c) = (col(0), col(1), col(2));
    if len(a) == 0.0 || len(b) == 0.0 || len(c) == 0.0 {
        return Some("a column is zero");
    }
    let det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
        + a[2] * (b[0] * c[1] - b[1] * c[0]);
    if !(det.abs() > 1e-9 * len(a) * len(b) * len(c)) {
        return Some("its columns lie in one plane (determinant 0)");
    }
    None
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
        let text = b"1 2\n3 4 5 6\r\n7 8 10 10 11 12\n0.0 0.0 0.0\nnot numbers at all\n";
        let m = parse_mat("A.mat", text).unwrap();
        assert_eq!(m, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]);
        let m = parse_mat("A.mat", b"1e-2 -2E-2 .5 1 2 3 4 5 6").unwrap();
        assert_eq!(m[0], [0.01, -0.02, 0.5]);
    }

    #[test]
    fn matrices_that_span_no_cell_are_refused() {
        // zeros (a page user's empty template), a zero column, and coplanar columns
        // (c* = a* + b*; and 1..9, whose rows are in arithmetic progression)
        for (text, why) in [
            (&b"0 0 0\n0 0 0\n0 0 0\n"[..], "a column is zero"),
            (b"0.01 0 0\n0 0.01 0\n0 0 0\n", "a column is zero"),
            (b"0.01 0 0.01\n0 0.02 0.02\n0 0 0\n", "one plane"),
            (b"1 2 3\n4 5 6\n7 8 9\n", "one plane"),
        ] {
            let e = parse_mat("Z.mat", text).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Input);
            assert!(
                e.message.starts_with("Z.mat: not an orientation matrix: ")
                    && e.message.contains(why),
                "{}",
                e.message
            );
        }
        // a thin but real cell (a* and b* 0.1° apart) is kept
        let t = 0.1f64.to_radians();
        let text = format!(
            "0.01 {} 0\n0 {} 0\n0 0 0.01\n",
            0.01 * t.cos(),
            0.01 * t.sin()
        );
        assert!(parse_mat("T.mat", text.as_bytes()).is_ok());
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
