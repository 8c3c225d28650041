//! Amorphous structure-factor tables for nonBragg (`-stol`, `-4stol`, `-Q`): text lines
//! `x F`, x = sin(θ)/λ, 4·sin(θ)/λ or Q = 4π·sin(θ)/λ (1/Å), F the structure factor of one
//! molecule in electrons. Read with the crate's multi-column reader (fields split on space, tab
//! and `,;:!`, extra columns ignored).
//!
//! Interpolation is upstream's: the table in 1/m, padded with two points far below (the first
//! F) and two far above (the last F), and F(x) the cubic through the four points around x.
//!
//! Stricter than upstream, which reads any line: a `#` line is a comment (upstream reads it as
//! a (0, 0) point, which for `nanoice.stol` puts three points at 0 and makes every pixel below the
//! table's second point NaN), a line needs both numbers (upstream takes a missing F as 0), and
//! the first column must increase (upstream's nearest-point search then depends on the order
//! in which pixels are visited, and equal points divide by zero).

use super::textcols::read_rows;
use crate::error::{Error, Result};

/// The first column's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StolUnit {
    /// sin(θ)/λ (`-stol`).
    Stol,
    /// 4·sin(θ)/λ (`-4stol`).
    FourStol,
    /// Q = 4π·sin(θ)/λ (`-Q`).
    Q,
}

impl StolUnit {
    /// Factor from the file's column to sin(θ)/λ in 1/m, as upstream computes it.
    pub fn to_per_metre(self) -> f64 {
        match self {
            StolUnit::Stol => 1e10,
            StolUnit::FourStol => 1e10 / 4.0,
            StolUnit::Q => 1e10 / std::f64::consts::PI / 4.0,
        }
    }
}

/// A padded table: `stol` in 1/m, increasing; `f` in electrons.
#[derive(Clone, Debug, PartialEq)]
pub struct StolTable {
    pub stol: Vec<f64>,
    pub f: Vec<f64>,
}

/// Reads a table. Errors name the file and the line.
pub fn read_stol(name: &str, text: &[u8], unit: StolUnit) -> Result<StolTable> {
    let rows = read_rows(name, text, 2)?;
    if rows.is_empty() {
        return Err(
            Error::input(format!("{name}: no data (expected lines of 'stol F')")).at_file(name),
        );
    }
    let mult = unit.to_per_metre();
    let mut stol = Vec::with_capacity(rows.len() + 4);
    let mut f = Vec::with_capacity(rows.len() + 4);
    let mut prev: Option<(usize, f64)> = None;
    for (line, row) in &rows {
        let (x, y) = (row[0], row[1]);
        if y.is_nan() {
            return Err(Error::input(format!(
                "{name} line {line}: expected two numbers 'stol F', found only one"
            ))
            .at_file(name)
            .at_line(*line));
        }
        if !x.is_finite() || !y.is_finite() {
            return Err(Error::input(format!(
                "{name} line {line}: {x} {y} is not a pair of finite numbers"
            ))
            .at_file(name)
            .at_line(*line));
        }
        if let Some((pl, px)) = prev {
            if !(x > px) {
                return Err(Error::input(format!(
                    "{name} line {line}: {x} does not increase from {px} on line {pl} (the first column must increase)"
                )).at_file(name).at_line(*line));
            }
        }
        prev = Some((*line, x));
        // inside the padding points (-1e98, 1e98 in 1/m), far beyond any real table
        if !((x * mult).abs() < 1e90) {
            return Err(Error::input(format!(
                "{name} line {line}: {} is out of range for the first column",
                crate::cfmt::fmt_g(x)
            ))
            .at_file(name)
            .at_line(*line));
        }
        // electrons per molecule: far beyond any real table, and F² stays finite
        if !(y.abs() <= 1e30) {
            return Err(Error::input(format!(
                "{name} line {line}: F = {} is out of range (|F| ≤ 1e30)",
                crate::cfmt::fmt_g(y)
            ))
            .at_file(name)
            .at_line(*line));
        }
        stol.push(x * mult);
        f.push(y);
    }
    let (f_low, f_high) = (f[0], f[f.len() - 1]);
    stol.splice(0..0, [-1e99, -1e98]);
    f.splice(0..0, [f_low, f_low]);
    stol.extend([1e98, 1e99]);
    f.extend([f_high, f_high]);
    Ok(StolTable { stol, f })
}

impl StolTable {
    /// Points including the four padding points (upstream prints this count).
    pub fn len(&self) -> usize {
        self.stol.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stol.is_empty()
    }

    /// F at `x` (sin(θ)/λ in 1/m): the cubic through points n-1 .. n+2, n the last point with
    /// stol[n] <= x.
    ///
    /// Beyond the padding points (|x| ≥ 1e98 1/m, which no pixel reaches for a wavelength the
    /// flags accept) the end value: upstream's cubic through the far padding points would
    /// overflow there.
    pub fn interpolate(&self, x: f64) -> f64 {
        let x = x.clamp(self.stol[1], self.stol[self.stol.len() - 2]);
        let n = self.stol.partition_point(|&t| t <= x);
        let n = n.saturating_sub(1).clamp(1, self.stol.len() - 3);
        let xa = [
            self.stol[n - 1],
            self.stol[n],
            self.stol[n + 1],
            self.stol[n + 2],
        ];
        let ya = [self.f[n - 1], self.f[n], self.f[n + 1], self.f[n + 2]];
        let cubic = crate::terms::polint(xa, ya, x);
        if cubic.is_finite() {
            return cubic;
        }
        // points so close that the cubic overflows: the straight line between the two around x
        let t = ((x - xa[1]) / (xa[2] - xa[1])).clamp(0.0, 1.0);
        ya[1] + (ya[2] - ya[1]) * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_units_and_interpolation() {
        let t = read_stol(
            "w.stol",
            b"0 2\n0.1 3\n0.2 5 extra\n0.3 9\n",
            StolUnit::Stol,
        )
        .unwrap();
        assert_eq!(t.len(), 8);
        assert_eq!(t.stol[..2], [-1e99, -1e98]);
        assert_eq!(t.f[..2], [2.0, 2.0]);
        assert_eq!(t.f[6..], [9.0, 9.0]);
        assert_eq!(t.stol[3], 0.1 * 1e10);
        // on a node: that node's F; a cubic through (0,2) (0.1,3) (0.2,5) (0.3,9) between
        assert!((t.interpolate(0.1e10) - 3.0).abs() < 1e-12);
        let x = 0.15e10;
        let want = 3.8125; // Lagrange weights -1/16, 9/16, 9/16, -1/16
        assert!(
            (t.interpolate(x) - want).abs() < 1e-9,
            "{} {want}",
            t.interpolate(x)
        );
        let q = read_stol("q", b"0 2\n1 3\n", StolUnit::Q).unwrap();
        assert_eq!(q.stol[3], 1e10 / std::f64::consts::PI / 4.0);
        let four = read_stol("f", b"0 2\n1 3\n", StolUnit::FourStol).unwrap();
        assert_eq!(four.stol[3], 2.5e9);
        // comments and blank lines are skipped
        let c = read_stol("c", b"#x y\n\n0 1 i\n0.002 0.5 i\n", StolUnit::Stol).unwrap();
        assert_eq!(c.len(), 6);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = |text: &[u8]| {
            read_stol("bad.stol", text, StolUnit::Stol)
                .unwrap_err()
                .message
        };
        assert_eq!(e(b""), "bad.stol: no data (expected lines of 'stol F')");
        assert_eq!(
            e(b"0 1\n0.1\n"),
            "bad.stol line 2: expected two numbers 'stol F', found only one"
        );
        assert_eq!(
            e(b"0 1\n0.2 2\n0.18 3\n"),
            "bad.stol line 3: 0.18 does not increase from 0.2 on line 2 (the first column must increase)"
        );
        assert_eq!(
            e(b"0 1\nstol F\n"),
            "bad.stol line 2: expected up to 2 numbers, found \"stol F\""
        );
        assert!(e(b"0 1\n0.1 inf\n").starts_with("bad.stol line 2:"));
    }
}
