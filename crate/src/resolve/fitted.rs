//! A fit's offsets as the values of the user's flags (issue 20 §3): what a form, a URL or a
//! command line takes so that resolving it again gives the fitted set-up.
//!
//! The fit (`refine`) moves the set-up by offsets from its values (`resolve::tangent`): option
//! parameters are added to the options and resolved again, and the rotations `rot_x/y/z` turn
//! the resolved orientation tables about the lab axes, R = R_z·R_y·R_x. Here:
//!
//! * **Orientation** → `-misset`: upstream's misset is a rotation U0 = R_z·R_y·R_x of the
//!   reciprocal basis (`-cell`'s or `-mat`'s), applied before φ (MODEL §4.3). The offset turns
//!   the crystal at the first φ step, R·R_φ0·U0·B; the same crystal from a misset U′ is
//!   R_φ0·U′·B, so U′ = R_φ0⁻¹·R·R_φ0·U0, decomposed by upstream's `umat2misset`. A random
//!   misset counts as the angles it drew. With one φ step and no mosaic spread the re-resolved
//!   orientation table is the offset one (tested); over several φ steps or mosaic domains the
//!   offset turns the whole table about the lab axes while a misset turns the crystal before
//!   φ and the domains' random rotations, so the two agree at the first φ step's central domain
//!   (domain 0 is unrotated) and differ elsewhere by the commutator of the small rotations.
//! * **Cell** → `-cell a b c α β γ` (upstream's defaults filled in: b, c ≤ 0 mean a, angles
//!   ≤ 0 mean 90°), as `resolve::tangent` moves it. For an `-expt` crystal the cell starts from
//!   the file's, and `-cell` with `-expt` keeps the file's orientation (`resolve::expt`); the
//!   misset turns the file's crystal as it turns `-cell`'s.
//! * **Distance** → `-distance` (or `-close_distance` when the set-up gave that), mm.
//! * **Beam centre** → `-Xbeam` and `-Ybeam` (mm, the set-up's convention: the value
//!   `resolve::tangent` moves, given or derived), both when either is fitted.
//! * **Scale and fluence** → `-fluence` (photons/m²): the set-up's fluence × (1 + scale) ×
//!   (1 + Δfluence / fluence).
//! * **Wavelength** → `-lambda` (Å), **mosaic spread** → `-mosaic` (°), **cell counts** →
//!   `-Na`/`-Nb`/`-Nc` (continuous values; the flags take reals), **detector rotations** →
//!   `-detector_rotx/y/z` (°), **default_F** → `-default_F`.

use super::Setup;
use crate::args::RTD;
use crate::error::{Error, Result};
use crate::tangent::Param;
use crate::vec3::{rotaxis, rotxyz, M3, V3};
use serde::Serialize;

/// The fitted set-up as the values of its flags (public units: °, Å, mm, photons/m²). A field
/// is `Some` when a fitted parameter moves it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fitted {
    /// `-misset` x y z (°).
    pub misset: Option<[f64; 3]>,
    /// `-cell` a b c α β γ (Å, °).
    pub cell: Option<[f64; 6]>,
    /// The distance flag (`-distance` or `-close_distance`) and its value (mm).
    pub distance: Option<(String, f64)>,
    /// `-Xbeam` (mm).
    pub xbeam: Option<f64>,
    /// `-Ybeam` (mm).
    pub ybeam: Option<f64>,
    /// `-fluence` (photons/m²).
    pub fluence: Option<f64>,
    /// `-lambda` (Å).
    pub lambda: Option<f64>,
    /// `-mosaic` (°).
    pub mosaic: Option<f64>,
    /// `-Na`, `-Nb`, `-Nc`.
    pub n: Option<[f64; 3]>,
    /// `-detector_rotx/y/z` (°).
    pub detector_rot: Option<[f64; 3]>,
    /// `-default_F`.
    pub default_f: Option<f64>,
}

fn offset_of(offsets: &[(Param, f64)], p: Param) -> Option<f64> {
    let mut any = false;
    let mut sum = 0.0;
    for &(q, v) in offsets {
        if q == p {
            any = true;
            sum += v;
        }
    }
    any.then_some(sum)
}

/// The matrix (rows x, y, z) whose columns are `f` of the basis vectors.
fn matrix_of(f: impl Fn(V3) -> V3) -> M3 {
    let cols = [f([1.0, 0.0, 0.0]), f([0.0, 1.0, 0.0]), f([0.0, 0.0, 1.0])];
    std::array::from_fn(|r| std::array::from_fn(|c| cols[c][r]))
}

fn mul(a: M3, b: M3) -> M3 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

fn transpose(a: M3) -> M3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[j][i]))
}

/// The rotation of the offsets `rot_x`, `rot_y`, `rot_z` (rad), x first: R_z·R_y·R_x, as
/// `resolve::tangent` applies it.
fn offset_rotation(rx: f64, ry: f64, rz: f64) -> M3 {
    matrix_of(|v| {
        let v = rotaxis(v, [1.0, 0.0, 0.0], rx);
        let v = rotaxis(v, [0.0, 1.0, 0.0], ry);
        rotaxis(v, [0.0, 0.0, 1.0], rz)
    })
}

/// The set-up's misset rotation U0 (identity without a misset; a random one as drawn).
fn misset_rotation(setup: &Setup) -> M3 {
    let m = setup.crystal.random_misset.or(setup.opts.misset);
    match m {
        Some(m) => matrix_of(|v| rotxyz(v, m[0] / RTD, m[1] / RTD, m[2] / RTD)),
        None => matrix_of(|v| v),
    }
}

/// The values of the user's flags for `setup` moved by `offsets` (parameter, offset from the
/// set-up's value in the parameter's public unit: a fit's result, `refine::Fit::values` with
/// its `params`). Parameters that act on nothing the set-up's flags hold are an error naming
/// the parameter.
pub fn fitted_values(setup: &Setup, offsets: &[(Param, f64)]) -> Result<Fitted> {
    let o = &setup.opts;
    let det = &setup.det;
    let mut out = Fitted::default();
    let get = |p| offset_of(offsets, p);
    if let Some(&(p, v)) = offsets.iter().find(|(_, v)| !v.is_finite()) {
        return Err(Error::usage(format!(
            "fit: the offset of {} is not finite ({v})",
            p.name()
        )));
    }

    // orientation
    let [rx, ry, rz] = Param::ROTATIONS.map(get);
    if rx.is_some() || ry.is_some() || rz.is_some() {
        let r = offset_rotation(rx.unwrap_or(0.0), ry.unwrap_or(0.0), rz.unwrap_or(0.0));
        let phi = matrix_of(|v| rotaxis(v, det.spindle, setup.phi0));
        let u = mul(transpose(phi), mul(r, mul(phi, misset_rotation(setup))));
        out.misset = Some(crate::rng::umat2misset(u).map(|a| a * RTD));
    }

    // cell
    let cell_params = Param::CELL;
    if cell_params.iter().any(|&p| get(p).is_some()) {
        let Some(mut c) = super::tangent::fitted_cell(setup) else {
            return Err(Error::usage(
                "fit: the cell was fitted but the crystal is given by -mat (not -cell or -expt)",
            ));
        };
        for i in 1..3 {
            if c[i] <= 0.0 {
                c[i] = c[0];
            }
        }
        for a in c.iter_mut().skip(3) {
            if *a <= 0.0 {
                *a = 90.0;
            }
        }
        for (i, &p) in cell_params.iter().enumerate() {
            c[i] += get(p).unwrap_or(0.0);
        }
        out.cell = Some(c);
    }

    // detector
    if let Some(d) = get(Param::Distance) {
        out.distance = Some(match (o.distance, o.close_distance) {
            (None, Some(cd)) => ("-close_distance".to_string(), cd * 1e3 + d),
            (Some(dd), _) => ("-distance".to_string(), dd * 1e3 + d),
            (None, None) => ("-distance".to_string(), det.distance * 1e3 + d),
        });
    }
    // the beam centre as a pair (a form or a keyword may hold both): the one not fitted as it is
    if get(Param::BeamX).is_some() || get(Param::BeamY).is_some() {
        out.xbeam = Some(o.xbeam.unwrap_or(det.xbeam) * 1e3 + get(Param::BeamX).unwrap_or(0.0));
        out.ybeam = Some(o.ybeam.unwrap_or(det.ybeam) * 1e3 + get(Param::BeamY).unwrap_or(0.0));
    }
    let rots = Param::DETECTOR_ROTATIONS;
    if rots.iter().any(|&p| get(p).is_some()) {
        let base = [o.rotx, o.roty, o.rotz];
        out.detector_rot = Some(std::array::from_fn(|i| {
            base[i] * RTD + get(rots[i]).unwrap_or(0.0)
        }));
    }

    // beam and crystal scalars
    let (scale, fl) = (get(Param::Scale), get(Param::Fluence));
    if scale.is_some() || fl.is_some() {
        if setup.fluence == 0.0 {
            return Err(Error::usage(
                "fit: the scale was fitted but the set-up's fluence is 0",
            ));
        }
        out.fluence = Some(
            setup.fluence
                * (1.0 + scale.unwrap_or(0.0))
                * (1.0 + fl.unwrap_or(0.0) / setup.fluence),
        );
    }
    if let Some(d) = get(Param::Lambda) {
        out.lambda = Some(setup.lambda0 * 1e10 + d);
    }
    if let Some(d) = get(Param::Mosaic) {
        out.mosaic = Some(o.mosaic_spread * RTD + d);
    }
    let ns = Param::CELL_COUNTS;
    if ns.iter().any(|&p| get(p).is_some()) || get(Param::NCells).is_some() {
        let all = get(Param::NCells).unwrap_or(0.0);
        let base = [setup.plan.na, setup.plan.nb, setup.plan.nc];
        out.n = Some(std::array::from_fn(|i| {
            base[i] + all + get(ns[i]).unwrap_or(0.0)
        }));
    }
    if let Some(d) = get(Param::DefaultF) {
        out.default_f = Some(setup.plan.default_f + d);
    }
    Ok(out)
}

impl Fitted {
    /// The values as command-line words (`-misset x y z -cell …`), each number in full
    /// precision (Rust's shortest round-trip form).
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        let mut push = |flag: &str, vals: &[f64]| {
            w.push(flag.to_string());
            w.extend(vals.iter().map(|v| format!("{v}")));
        };
        if let Some(m) = self.misset {
            push("-misset", &m);
        }
        if let Some(c) = self.cell {
            push("-cell", &c);
        }
        if let Some((flag, d)) = &self.distance {
            push(flag, &[*d]);
        }
        if let Some(x) = self.xbeam {
            push("-Xbeam", &[x]);
        }
        if let Some(y) = self.ybeam {
            push("-Ybeam", &[y]);
        }
        if let Some(r) = self.detector_rot {
            push("-detector_rotx", &[r[0]]);
            push("-detector_roty", &[r[1]]);
            push("-detector_rotz", &[r[2]]);
        }
        if let Some(f) = self.fluence {
            push("-fluence", &[f]);
        }
        if let Some(l) = self.lambda {
            push("-lambda", &[l]);
        }
        if let Some(m) = self.mosaic {
            push("-mosaic", &[m]);
        }
        if let Some(n) = self.n {
            push("-Na", &[n[0]]);
            push("-Nb", &[n[1]]);
            push("-Nc", &[n[2]]);
        }
        if let Some(f) = self.default_f {
            push("-default_F", &[f]);
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;
    use crate::resolve::resolve;
    use crate::resolve::tangent::moved_setup;

    fn setup(s: &str) -> Setup {
        let words = crate::args::split_args(s);
        let o = crate::args::parse(&words).unwrap();
        resolve(&o, &MemFiles::default()).unwrap()
    }

    /// The set-up of `base` with the fitted flags' words appended, resolved again.
    fn again(base: &str, f: &Fitted) -> Setup {
        setup(&format!("{base} {}", f.words().join(" ")))
    }

    fn max_diff(a: &crate::plan::Plan, b: &crate::plan::Plan) -> f64 {
        let mut m: f64 = 0.0;
        for (x, y) in a.orientations.iter().zip(&b.orientations) {
            for (u, v) in [(x.a, y.a), (x.b, y.b), (x.c, y.c)] {
                for i in 0..3 {
                    m = m.max((u[i] - v[i]).abs() / 1e-10);
                }
            }
        }
        for (u, v) in [
            (a.a_star, b.a_star),
            (a.b_star, b.b_star),
            (a.c_star, b.c_star),
        ] {
            for i in 0..3 {
                m = m.max((u[i] - v[i]).abs() * 1e-10);
            }
        }
        m
    }

    const BASE: &str = "-cell 70 80 90 85 95 100 -default_F 100 -N 5 -lambda 1 -distance 100 \
                        -detpixels 32 -pixel 0.3";

    #[test]
    fn misset_reproduces_the_offset_orientation() {
        for misset in [
            "",
            "-misset 10 -20 30",
            "-misset 0 0 170",
            "-misset 5 89 -3",
        ] {
            let base = format!("{BASE} {misset}");
            let s = setup(&base);
            let off = [
                (Param::RotX, 0.3_f64.to_radians()),
                (Param::RotY, -1.7_f64.to_radians()),
                (Param::RotZ, 0.05),
            ];
            let f = fitted_values(&s, &off).unwrap();
            assert!(f.cell.is_none() && f.distance.is_none());
            let moved = moved_setup(&s, &MemFiles::default(), &off).unwrap();
            let fresh = again(&base, &f);
            let d = max_diff(&moved.plan, &fresh.plan);
            // Å for real-space vectors, Å⁻¹ for reciprocal: round-off of one resolution
            assert!(d < 1e-12, "{misset}: orientation differs by {d}");
        }
    }

    #[test]
    fn misset_with_cell_and_a_phi_start() {
        // the first φ step (no mosaic): R_φ0⁻¹·R·R_φ0·U0, and the cell moved at the same time
        let base = format!("{BASE} -misset 20 30 40 -phi 25 -spindle_axis 0.6 0.8 0");
        let s = setup(&base);
        let off = [
            (Param::RotX, 0.01),
            (Param::RotZ, -0.02),
            (Param::CellB, 0.4),
            (Param::CellGamma, -0.3),
        ];
        let f = fitted_values(&s, &off).unwrap();
        let c = f.cell.unwrap();
        assert_eq!(c, [70.0, 80.4, 90.0, 85.0, 95.0, 99.7]);
        let moved = moved_setup(&s, &MemFiles::default(), &off).unwrap();
        let fresh = again(&base, &f);
        let d = max_diff(&moved.plan, &fresh.plan);
        assert!(d < 1e-12, "orientation differs by {d}");
    }

    #[test]
    fn random_misset_counts_as_the_angles_drawn() {
        let base = format!("{BASE} -misset random -misset_seed 7");
        let s = setup(&base);
        let off = [(Param::RotY, 0.004)];
        let f = fitted_values(&s, &off).unwrap();
        let moved = moved_setup(&s, &MemFiles::default(), &off).unwrap();
        // the words' -misset comes after "random" and replaces it
        let fresh = setup(&format!("{BASE} {}", f.words().join(" ")));
        assert!(max_diff(&moved.plan, &fresh.plan) < 1e-12);
    }

    #[test]
    fn detector_and_scale_values() {
        let base = format!("{BASE} -Xbeam 4.5 -fluence 1e24");
        let s = setup(&base);
        let off = [
            (Param::Distance, 1.5),
            (Param::BeamX, -0.25),
            (Param::BeamY, 0.125),
            (Param::Scale, 0.5),
        ];
        let f = fitted_values(&s, &off).unwrap();
        assert_eq!(f.distance, Some(("-distance".to_string(), 101.5)));
        assert!((f.xbeam.unwrap() - 4.25).abs() < 1e-12);
        // one of the pair fitted: both given, the other as it is
        let g = fitted_values(&s, &[(Param::BeamX, 0.5)]).unwrap();
        assert!((g.xbeam.unwrap() - 5.0).abs() < 1e-12);
        assert_eq!(g.ybeam, Some(s.det.ybeam * 1e3));
        // -Ybeam not given: the derived centre (32 × 0.3 mm / 2 = 4.8 mm in MOSFLM) + 0.125
        assert!((f.ybeam.unwrap() - (s.det.ybeam * 1e3 + 0.125)).abs() < 1e-12);
        assert!((f.fluence.unwrap() / 1.5e24 - 1.0).abs() < 1e-12);
        // resolving the words gives the moved detector and fluence
        let moved = moved_setup(&s, &MemFiles::default(), &off).unwrap();
        let fresh = again(&base, &f);
        for i in 0..3 {
            assert!((moved.plan.pix0[i] - fresh.plan.pix0[i]).abs() < 1e-15);
        }
        assert!(
            (moved.plan.r_e_sqr_fluence / fresh.plan.r_e_sqr_fluence - 1.0).abs() < 1e-12,
            "fluence"
        );
    }

    #[test]
    fn close_distance_stays_close_distance() {
        let base = BASE.replace("-distance 100", "-close_distance 120");
        let s = setup(&base);
        let f = fitted_values(&s, &[(Param::Distance, -2.0)]).unwrap();
        assert_eq!(f.distance, Some(("-close_distance".to_string(), 118.0)));
    }

    /// Each parameter's row names the flag its fitted value is given back in
    /// (`tangent::ROWS`, which the page's generated fields read).
    #[test]
    fn each_parameter_comes_back_in_its_rows_flag() {
        let s = setup(&format!(
            "{BASE} -fluence 1e24 -mosaic 0.1 -mosaic_domains 2"
        ));
        for r in crate::tangent::ROWS {
            let f = fitted_values(&s, &[(r.param, 0.01)]).unwrap();
            let words = f.words();
            assert!(
                words.iter().any(|w| w == r.flag),
                "{}: {words:?} has no {}",
                r.name,
                r.flag
            );
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let s = setup(BASE);
        let e = fitted_values(&s, &[(Param::RotX, f64::NAN)]).unwrap_err();
        assert!(e.message.contains("rot_x"), "{}", e.message);
        let s = setup(&format!("{BASE} -fluence 0"));
        let e = fitted_values(&s, &[(Param::Scale, 0.1)]).unwrap_err();
        assert!(e.message.contains("fluence is 0"), "{}", e.message);
    }
}
