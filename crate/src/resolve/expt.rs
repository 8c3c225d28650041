//! `-expt FILE`: a DIALS experiment list's first experiment (read by `io::expt`) as the
//! simulation's options: a CUSTOM detector with the SAMPLE pivot, beam, spindle, scan start and
//! width (unless `-phi`/`-osc` are given) and the crystal as a MOSFLM matrix. See `io::expt` for
//! the frames and what replaces which flags. The file's crystal is turned by `-misset` (as
//! `-cell`'s is) and given `-cell`'s cell in its own orientation (`with_cell`): the values a fit
//! of the orientation and cell writes (`resolve::fitted`).

use crate::args::{Options, RTD};
use crate::error::{Error, Result};
use crate::io::expt::{to_nanobragg, Expt};

type V3 = [f64; 3];

fn err(name: &str, key: &str, what: impl std::fmt::Display) -> Error {
    Error::input(format!("{name}: {key}: {what}"))
        .at_file(name)
        .with_flag("-expt")
}

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The options with the experiment's geometry and crystal (see the module comment), and the
/// MOSFLM matrix (rows: x, y, z of a*, b*, c*, λ-scaled) when the list holds a crystal.
pub fn apply(o: &Options, e: &Expt, name: &str) -> Result<(Options, Option<[[f64; 3]; 3]>)> {
    let mut o = o.clone();
    let f = to_nanobragg(e.fast);
    let s = to_nanobragg(e.slow);
    if dot(f, s).abs() > 1e-6 {
        return Err(err(name, "fast_axis", "not perpendicular to slow_axis"));
    }
    let n = cross(f, s);
    let pix0 = to_nanobragg(e.origin).map(|x| x * 1e-3);
    super::panels::custom_plane(
        &mut o,
        [f, s, n],
        pix0,
        e.pixel * 1e-3,
        [e.image_size.0, e.image_size.1],
    );
    o.beam_vector = Some(to_nanobragg(e.beam_to_source).map(|x| -x));
    if let Some(a) = e.axis {
        o.spindle_axis = Some(to_nanobragg(a));
    }
    o.lambda = Some(e.wavelength * 1e-10);
    if let Some((start, width)) = e.scan {
        if o.phi0.is_none() {
            o.phi0 = Some(start / RTD);
        }
        if o.osc.is_none() {
            o.osc = Some(width / RTD);
        }
    }
    let mat = e.crystal.map(|[a, b, c]| {
        let (a, b, c) = (to_nanobragg(a), to_nanobragg(b), to_nanobragg(c));
        let v = dot(a, cross(b, c));
        let (ast, bst, cst) = (cross(b, c), cross(c, a), cross(a, b));
        let l = e.wavelength;
        let mut m = [[0.0; 3]; 3];
        for i in 0..3 {
            m[i] = [ast[i] / v * l, bst[i] / v * l, cst[i] / v * l];
        }
        m
    });
    let mat = match (mat, o.cell) {
        // -cell: the file's orientation with this cell (what a fit of the cell moves)
        (Some(m), Some(cell)) => Some(with_cell(m, e.wavelength, cell).map_err(|e| {
            Error::geometry(format!("-cell with -expt {name}: {}", e.message)).with_flag("-cell")
        })?),
        (m, _) => m,
    };
    if mat.is_some() {
        // the lattice is the file's (in the orientation -misset turns it to; no random one)
        o.misset_random = false;
    }
    Ok((o, mat))
}

type M3 = [[f64; 3]; 3];

fn inverse(m: M3) -> Option<M3> {
    let cols = |j: usize| [m[0][j], m[1][j], m[2][j]];
    let (c0, c1, c2) = (cols(0), cols(1), cols(2));
    let det = dot(c0, cross(c1, c2));
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    // rows of the inverse: the reciprocal vectors of the columns
    let rows = [cross(c1, c2), cross(c2, c0), cross(c0, c1)];
    Some(std::array::from_fn(|i| rows[i].map(|x| x / det)))
}

fn mul(a: M3, b: M3) -> M3 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

/// The cell (Å, °) of the reciprocal basis `m` (columns a*, b*, c* in 1/Å).
fn cell_of(m: M3) -> Option<[f64; 6]> {
    // the real axes: the rows of the inverse of the reciprocal basis
    let inv = inverse(m)?;
    let (a, b, c) = (inv[0], inv[1], inv[2]);
    let len = |x: V3| dot(x, x).sqrt();
    let ang = |x: V3, y: V3| (dot(x, y) / (len(x) * len(y))).clamp(-1.0, 1.0).acos() * RTD;
    Some([len(a), len(b), len(c), ang(b, c), ang(c, a), ang(a, b)])
}

/// The MOSFLM matrix `m` (columns λ·a*, λ·b*, λ·c*, `lambda` in Å) with its cell replaced by
/// `cell` and its orientation kept: A*·B(cell_m)⁻¹·B(cell), B the reciprocal basis `-cell`
/// makes (`crystal::reciprocal_from_cell`: upstream's frame and c* rule), cell_m the matrix's
/// own cell. At the matrix's own cell this is `m` (to rounding).
pub fn with_cell(m: M3, lambda: f64, cell: [f64; 6]) -> Result<M3> {
    let basis = |cell: [f64; 6]| -> Result<M3> {
        let (a, b, c, _, _) = super::crystal::reciprocal_from_cell(cell)?;
        Ok(std::array::from_fn(|i| [a[i], b[i], c[i]]))
    };
    let degenerate = || Error::geometry("the file's crystal matrix is degenerate");
    let a_star = m.map(|row| row.map(|x| x / lambda));
    let own = cell_of(a_star).ok_or_else(degenerate)?;
    let u = mul(a_star, inverse(basis(own)?).ok_or_else(degenerate)?);
    Ok(mul(u, basis(cell)?).map(|row| row.map(|x| x * lambda)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::expt::{parse_expt, tests::ONE};

    #[test]
    fn one_panel_maps_to_custom_vectors() {
        let e = parse_expt("x.expt", ONE.as_bytes()).unwrap();
        assert_eq!(e.image_size, (512, 400));
        assert_eq!(e.scan, Some((5.0, 0.5)));
        let (o, mat) = apply(&Options::default(), &e, "x.expt").unwrap();
        assert_eq!(o.fdet_vector, Some([0.0, 0.0, 1.0]));
        assert_eq!(o.sdet_vector, Some([0.0, -1.0, 0.0]));
        assert_eq!(o.odet_vector, Some([1.0, 0.0, 0.0]));
        assert_eq!(o.beam_vector, Some([1.0, 0.0, 0.0]));
        assert_eq!(o.spindle_axis, Some([0.0, 0.0, 1.0]));
        // pix0 = (0.08, 0.0257, -0.0257) m: Fclose = 25.7 mm, Sclose = 25.7 mm, distance 80 mm
        assert!((o.xclose.unwrap() - 0.0257).abs() < 1e-15);
        assert!((o.yclose.unwrap() - 0.0257).abs() < 1e-15);
        assert!((o.close_distance.unwrap() - 0.08).abs() < 1e-15);
        assert_eq!((o.phi0.unwrap() * RTD, o.osc.unwrap() * RTD), (5.0, 0.5));
        let m = mat.unwrap();
        // a along dxtbx x -> nanoBragg z: a* = (0, 0, 1/40) * 0.9
        assert!((m[2][0] - 0.9 / 40.0).abs() < 1e-15 && m[0][0].abs() < 1e-15);
        assert!((m[1][1] - 0.9 / 50.0).abs() < 1e-15);
        assert!((m[0][2] + 0.9 / 60.0).abs() < 1e-15);
    }
}
