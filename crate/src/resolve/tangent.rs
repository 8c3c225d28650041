//! The tangent of the plan (MODEL §10.1): d(plan quantity)/d(parameter) for each parameter of a
//! list, in f64, for the tangent kernel (`cpu::tangent`).
//!
//! * Crystal rotations (`rot_x/y/z`), N, scale, fluence and `default_F` act on the plan
//!   directly and their tangents are analytic: a rotation by θ about the lab axis u moves every
//!   vector v of the orientation table (each φ step and mosaic domain) and the static reciprocal
//!   vectors by dv/dθ = u × v.
//! * Every other parameter (cell, mosaic spread, distance, beam centre, detector rotations,
//!   wavelength) is an option of the set-up, and the plan is a smooth closed-form function of
//!   it (no rounding or branch is crossed by a small change: checked, see below). Its tangent
//!   is the central difference of the resolved plan, Richardson-extrapolated from steps h and
//!   h/2 (truncation O(h⁴): about 1e-12 relative with the steps of [`step`]), so the tangent of
//!   each quantity is exactly that of the resolution the renders use, pivots, conventions and
//!   upstream's quirks included, with no second copy of the geometry to drift apart.
//!   A resolution at the unchanged value must reproduce the plan, and the counts, sources'
//!   directions, table and flags must not change with the parameter; otherwise the parameter
//!   is refused with an error naming what moved.

use super::{resolve, Setup};
use crate::args::RTD;
use crate::error::{Error, Result};
use crate::files::FileSource;
use crate::plan::{Orientation, Plan};
use crate::tangent::{Param, PlanDelta, PlanTangent};
use crate::vec3::{cross, rotaxis, V3};

/// The Richardson base step of an option-based parameter, in its public unit.
pub fn step(setup: &Setup, p: Param) -> f64 {
    match p {
        Param::CellA | Param::CellB | Param::CellC => 1e-2,
        Param::CellAlpha | Param::CellBeta | Param::CellGamma => 1e-2,
        Param::Distance | Param::BeamX | Param::BeamY => 1e-2,
        Param::DetRotX | Param::DetRotY | Param::DetRotZ => 1e-2,
        Param::Lambda => 1e-4 * setup.lambda0 * 1e10,
        _ => 1e-6,
    }
}

fn axis(p: Param) -> Option<V3> {
    match p {
        Param::RotX => Some([1.0, 0.0, 0.0]),
        Param::RotY => Some([0.0, 1.0, 0.0]),
        Param::RotZ => Some([0.0, 0.0, 1.0]),
        _ => None,
    }
}

/// Parameters that act on the plan directly (no new resolution).
pub fn analytic(p: Param) -> bool {
    axis(p).is_some()
        || matches!(
            p,
            Param::NA
                | Param::NB
                | Param::NC
                | Param::NCells
                | Param::Scale
                | Param::Fluence
                | Param::DefaultF
        )
}

/// Columns a, b, c of an orientation as a matrix (rows x, y, z).
fn cols(o: &Orientation) -> [[f64; 3]; 3] {
    std::array::from_fn(|r| [o.a[r], o.b[r], o.c[r]])
}

fn inverse(m: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let c = |r: usize, k: usize| {
        let (r1, r2, k1, k2) = ((r + 1) % 3, (r + 2) % 3, (k + 1) % 3, (k + 2) % 3);
        m[r1][k1] * m[r2][k2] - m[r1][k2] * m[r2][k1]
    };
    let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
    std::array::from_fn(|i| std::array::from_fn(|j| c(j, i) / det))
}

fn matmul(a: [[f64; 3]; 3], b: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

/// The tangent of the orientation tables with respect to the mosaic spread (per degree).
/// Domain m is the rotation U_m by the angle spread·c_m about a fixed random axis v_m
/// (MODEL §4.9.2), so d(U_m·w)/d spread = (ω_m/spread) × (U_m·w) with ω_m = θ_m·v_m, U_m's
/// rotation vector. U_m is read back from the table (domain 0 is unrotated: U_m =
/// M_m·M_0⁻¹ at the first φ step) and ω_m from its logarithm. Upstream computes θ_m in f32, so
/// the image is a staircase in the spread at 1e-7 relative; this is the smooth model's
/// derivative (MODEL §10.2).
fn mosaic_tangent(plan: &Plan, spread: f64) -> (Vec<Orientation>, Vec<Orientation>) {
    let nd = plan.mosaic_domains as usize;
    let m0 = inverse(cols(&plan.orientations[0]));
    let omegas: Vec<V3> = (0..nd)
        .map(|m| {
            let u = matmul(cols(&plan.orientations[m]), m0);
            let w = [
                (u[2][1] - u[1][2]) / 2.0,
                (u[0][2] - u[2][0]) / 2.0,
                (u[1][0] - u[0][1]) / 2.0,
            ];
            let s = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
            let c = (u[0][0] + u[1][1] + u[2][2] - 1.0) / 2.0;
            let theta = s.atan2(c);
            let f = if s > 0.0 { theta / s } else { 0.0 };
            // per degree of spread
            w.map(|x| x * f / (spread * RTD))
        })
        .collect();
    let rot = |t: &[Orientation]| -> Vec<Orientation> {
        t.iter()
            .enumerate()
            .map(|(i, o)| {
                let w = omegas[i % nd];
                Orientation {
                    a: cross(w, o.a),
                    b: cross(w, o.b),
                    c: cross(w, o.c),
                }
            })
            .collect()
    };
    (rot(&plan.orientations), rot(&plan.orientations_first))
}

/// The cell the cell parameters move (Å, °; upstream's "≤ 0" defaults not yet filled in):
/// `-cell`'s when it gives the crystal; an `-expt` crystal's (the file's, or the `-cell` given
/// with it: `resolve::expt::with_cell` keeps the file's orientation); none for a `-mat` file,
/// whose cell upstream's `-cell` only rescales.
pub fn fitted_cell(setup: &Setup) -> Option<[f64; 6]> {
    let o = &setup.opts;
    if o.mat.is_some() {
        None
    } else if o.expt.is_some() && o.mat_values.is_some() {
        Some(o.cell.unwrap_or(setup.crystal.cell))
    } else if o.mat_values.is_some() {
        None
    } else {
        o.cell
    }
}

/// The name of `p` for messages.
fn named(p: Param) -> String {
    format!("-gradients {}", p.name())
}

/// Checks that `p` applies to this set-up (before any work).
fn check_applies(setup: &Setup, p: Param) -> Result<()> {
    let refuse =
        |why: &str| Err(Error::usage(format!("{}: {why}", named(p))).with_flag("-gradients"));
    match p {
        Param::CellA
        | Param::CellB
        | Param::CellC
        | Param::CellAlpha
        | Param::CellBeta
        | Param::CellGamma
            if fitted_cell(setup).is_none() =>
        {
            refuse("cell derivatives need the crystal given by -cell or an -expt crystal (not -mat)")
        }
        Param::Mosaic if setup.mosaic_spread == 0.0 => {
            refuse("the mosaic spread is 0 (the domains are not drawn): give -mosaic > 0")
        }
        Param::DefaultF if setup.plan.hkl.hkls != 0 => {
            refuse("default_F enters linearly only without an -hkl table (its blank entries are filled with it)")
        }
        Param::Fluence if setup.fluence == 0.0 => refuse("the fluence is 0"),
        Param::Lambda if setup.opts.expt.is_some() => {
            // the file's beam replaces -lambda: moving the option moves nothing
            refuse(&format!(
                "the wavelength comes from -expt {}, whose beam does not move with -lambda",
                setup.opts.expt.as_deref().unwrap_or_default()
            ))
        }
        Param::Distance
        | Param::BeamX
        | Param::BeamY
        | Param::DetRotX
        | Param::DetRotY
        | Param::DetRotZ
            if setup.opts.geom.is_some() || setup.opts.expt.is_some() =>
        {
            // the file's panels replace the detector options: moving the option moves nothing
            // (the derivative would be an all-zero image, not the detector's)
            let (flag, name) = match (&setup.opts.geom, &setup.opts.expt) {
                (Some(g), _) => ("-geom", g),
                (None, Some(e)) => ("-expt", e),
                _ => unreachable!(),
            };
            refuse(&format!(
                "the detector comes from {flag} {name}, whose panels do not move with the detector options"
            ))
        }
        _ => Ok(()),
    }
}

/// The set-up's options with parameter `p` moved by `delta` (public unit).
fn move_option(setup: &Setup, o: &mut crate::args::Options, p: Param, delta: f64) {
    let det = &setup.det;
    match p {
        Param::CellA
        | Param::CellB
        | Param::CellC
        | Param::CellAlpha
        | Param::CellBeta
        | Param::CellGamma => {
            if delta == 0.0 && o.cell.is_none() {
                // an -expt crystal not moved stays the file's matrix, bit for bit
                return;
            }
            let mut c = o.cell.or_else(|| fitted_cell(setup)).unwrap_or([0.0; 6]);
            // upstream's rules: b, c ≤ 0 mean a; angles ≤ 0 mean 90
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
            let i = Param::CELL.iter().position(|&q| q == p).unwrap_or(5);
            c[i] += delta;
            o.cell = Some(c);
            // a crystal size (-xtalsize, -xtal_thick …) makes the cell counts a step function of
            // the cell (ceil(size / |axis|)): the counts are held at the set-up's (MODEL §10.2),
            // the derivative of the image everywhere but on a step
            if o.sample_x > 0.0 || o.sample_y > 0.0 || o.sample_z > 0.0 {
                let p = &setup.plan;
                (o.na, o.nb, o.nc) = (Some(p.na), Some(p.nb), Some(p.nc));
                (o.sample_x, o.sample_y, o.sample_z) = (0.0, 0.0, 0.0);
            }
        }
        Param::Mosaic => o.mosaic_spread += delta / RTD,
        Param::Distance => {
            if let Some(d) = o.distance {
                o.distance = Some(d + delta * 1e-3);
            } else if let Some(d) = o.close_distance {
                o.close_distance = Some(d + delta * 1e-3);
            } else {
                o.distance = Some(det.distance + delta * 1e-3);
            }
        }
        Param::BeamX => o.xbeam = Some(o.xbeam.unwrap_or(det.xbeam) + delta * 1e-3),
        Param::BeamY => o.ybeam = Some(o.ybeam.unwrap_or(det.ybeam) + delta * 1e-3),
        Param::DetRotX => o.rotx += delta / RTD,
        Param::DetRotY => o.roty += delta / RTD,
        Param::DetRotZ => o.rotz += delta / RTD,
        Param::Lambda => o.lambda = Some(setup.lambda0 + delta * 1e-10),
        _ => {}
    }
}

/// A parameter and its offset from the set-up's value (public unit).
pub type Offset = (Param, f64);

/// The offset of `p` in `offsets` (0 when absent).
fn offset_of(offsets: &[Offset], p: Param) -> f64 {
    offsets
        .iter()
        .filter(|(q, _)| *q == p)
        .map(|(_, v)| v)
        .sum()
}

/// The rotation of the `rot_x/y/z` offsets, R = R_z·R_y·R_x (x first), applied to `v`.
fn rotate_xyz(v: V3, offsets: &[Offset]) -> V3 {
    let mut v = v;
    for p in Param::ROTATIONS {
        let t = offset_of(offsets, p);
        if t != 0.0 {
            v = rotaxis(v, axis(p).unwrap(), t);
        }
    }
    v
}

/// The offsets that act on the plan directly (rotations, N, scale, fluence, default_F), on a
/// plan resolved from `base`'s options (`fluence0`, `rf0`, `bg0`: the base's values).
fn apply_analytic(plan: &mut Plan, base: &Setup, offsets: &[Offset]) {
    let o = |p| offset_of(offsets, p);
    plan.na += o(Param::NA) + o(Param::NCells);
    plan.nb += o(Param::NB) + o(Param::NCells);
    plan.nc += o(Param::NC) + o(Param::NCells);
    let f = (1.0 + o(Param::Scale))
        * if base.fluence != 0.0 {
            1.0 + o(Param::Fluence) / base.fluence
        } else {
            1.0
        };
    if f != 1.0 {
        plan.r_e_sqr_fluence *= f;
        plan.i_bg *= f;
    }
    plan.default_f += o(Param::DefaultF);
    if Param::ROTATIONS.iter().any(|&p| o(p) != 0.0) {
        for t in [&mut plan.orientations, &mut plan.orientations_first] {
            for v in t.iter_mut() {
                v.a = rotate_xyz(v.a, offsets);
                v.b = rotate_xyz(v.b, offsets);
                v.c = rotate_xyz(v.c, offsets);
            }
        }
        plan.a_star = rotate_xyz(plan.a_star, offsets);
        plan.b_star = rotate_xyz(plan.b_star, offsets);
        plan.c_star = rotate_xyz(plan.c_star, offsets);
    }
}

/// The set-up with every parameter of `offsets` moved from `base`'s value (public units): the
/// options moved and resolved again when any option-based parameter is among them (`files` are
/// read again), then the plan-level offsets applied, rotations last (R_z·R_y·R_x).
pub fn moved_setup(base: &Setup, files: &dyn FileSource, offsets: &[Offset]) -> Result<Setup> {
    for &(p, _) in offsets {
        check_applies(base, p)?;
    }
    let mut s = if offsets.iter().any(|&(p, _)| !analytic(p)) {
        let mut o = base.opts.clone();
        for &(p, d) in offsets {
            if !analytic(p) {
                move_option(base, &mut o, p, d);
            }
        }
        resolve(&o, files).map_err(|e| {
            Error::usage(format!(
                "-gradients: the set-up moved by the offsets does not resolve: {}",
                e.message
            ))
            .with_flag("-gradients")
        })?
    } else {
        base.clone()
    };
    keep_installed_table(&mut s, base);
    apply_analytic(&mut s.plan, base, offsets);
    Ok(s)
}

/// A structure-factor table installed into the set-up after its resolution (the realistic
/// chain's model table, `realistic::install_table`: its own description) is not made again by
/// re-resolving the options: it is carried over, as the structure factors do not move with the
/// geometry or the cell.
fn keep_installed_table(s: &mut Setup, base: &Setup) {
    if s.hkl_source != base.hkl_source && base.plan.hkl.hkls != 0 && s.plan.hkl.hkls == 0 {
        s.plan.hkl = base.plan.hkl.clone();
        s.plan.interpolation = base.plan.interpolation;
        s.plan.default_f = base.plan.default_f;
        s.hkl_source = base.hkl_source.clone();
    }
}

/// The plan with parameter `p` moved by `delta` (in its public unit): the same plan the set-up
/// would resolve to with that value. Used for finite-difference checks.
pub fn moved_plan(setup: &Setup, files: &dyn FileSource, p: Param, delta: f64) -> Result<Plan> {
    Ok(moved_setup(setup, files, &[(p, delta)])?.plan)
}

/// What of the plan a parameter may not move (it has no tangent in the kernel), by name.
fn frozen_difference(a: &Plan, b: &Plan) -> Option<&'static str> {
    let same_sources = a.sources.len() == b.sources.len()
        && a.sources
            .iter()
            .zip(&b.sources)
            .all(|(x, y)| x.incident == y.incident);
    let checks: [(&str, bool); 14] = [
        (
            "the pixel counts",
            a.fpixels == b.fpixels && a.spixels == b.spixels,
        ),
        ("the pixel size", a.pixel == b.pixel),
        ("the oversampling", a.oversample == b.oversample),
        (
            "the sensor layers",
            a.thicksteps == b.thicksteps
                && a.thickstep == b.thickstep
                && a.mu == b.mu
                && a.thick == b.thick,
        ),
        (
            "the region of interest or mask",
            a.roi == b.roi && a.mask == b.mask,
        ),
        ("the sources' directions or count", same_sources),
        (
            "the polarisation",
            a.polar_axis == b.polar_axis && a.polar_k == b.polar_k,
        ),
        ("the resolution cut", a.dmin == b.dmin),
        (
            "the phi steps or mosaic domain count",
            a.phisteps == b.phisteps
                && a.mosaic_domains == b.mosaic_domains
                && a.orientations.len() == b.orientations.len(),
        ),
        (
            "the lattice shape",
            a.shape == b.shape && a.fudge == b.fudge,
        ),
        (
            "the structure-factor table",
            a.hkl == b.hkl && a.interpolation == b.interpolation && a.default_f == b.default_f,
        ),
        ("the step count", a.steps == b.steps),
        (
            "the water background",
            a.water == b.water && a.i_bg == b.i_bg && a.r_e_sqr_fluence == b.r_e_sqr_fluence,
        ),
        (
            "the cell counts",
            a.na == b.na && a.nb == b.nb && a.nc == b.nc,
        ),
    ];
    checks.iter().find(|(_, ok)| !ok).map(|(n, _)| *n)
}

fn vdiff(a: V3, b: V3, s: f64) -> V3 {
    std::array::from_fn(|i| (a[i] - b[i]) * s)
}

fn odiff(a: &[Orientation], b: &[Orientation], s: f64) -> Vec<Orientation> {
    a.iter()
        .zip(b)
        .map(|(x, y)| Orientation {
            a: vdiff(x.a, y.a, s),
            b: vdiff(x.b, y.b, s),
            c: vdiff(x.c, y.c, s),
        })
        .collect()
}

/// (plus − minus)·s for every quantity of `PlanDelta`.
fn central(plus: &Plan, minus: &Plan, s: f64) -> PlanDelta {
    PlanDelta {
        pix0: vdiff(plus.pix0, minus.pix0, s),
        fdet: vdiff(plus.fdet, minus.fdet, s),
        sdet: vdiff(plus.sdet, minus.sdet, s),
        odet: vdiff(plus.odet, minus.odet, s),
        close_distance: (plus.close_distance - minus.close_distance) * s,
        lambda: plus
            .sources
            .iter()
            .zip(&minus.sources)
            .map(|(a, b)| (a.lambda - b.lambda) * s)
            .collect(),
        orientations: odiff(&plus.orientations, &minus.orientations, s),
        orientations_first: odiff(&plus.orientations_first, &minus.orientations_first, s),
        n: [
            (plus.na - minus.na) * s,
            (plus.nb - minus.nb) * s,
            (plus.nc - minus.nc) * s,
        ],
        a_star: vdiff(plus.a_star, minus.a_star, s),
        b_star: vdiff(plus.b_star, minus.b_star, s),
        c_star: vdiff(plus.c_star, minus.c_star, s),
        default_f: (plus.default_f - minus.default_f) * s,
        r_e_sqr_fluence: (plus.r_e_sqr_fluence - minus.r_e_sqr_fluence) * s,
        i_bg: (plus.i_bg - minus.i_bg) * s,
    }
}

/// (4·fine − coarse)/3, field by field (Richardson).
fn richardson(fine: &PlanDelta, coarse: &PlanDelta) -> PlanDelta {
    let r = |f: f64, c: f64| (4.0 * f - c) / 3.0;
    let rv = |f: V3, c: V3| -> V3 { std::array::from_fn(|i| r(f[i], c[i])) };
    let ro = |f: &[Orientation], c: &[Orientation]| -> Vec<Orientation> {
        f.iter()
            .zip(c)
            .map(|(x, y)| Orientation {
                a: rv(x.a, y.a),
                b: rv(x.b, y.b),
                c: rv(x.c, y.c),
            })
            .collect()
    };
    PlanDelta {
        pix0: rv(fine.pix0, coarse.pix0),
        fdet: rv(fine.fdet, coarse.fdet),
        sdet: rv(fine.sdet, coarse.sdet),
        odet: rv(fine.odet, coarse.odet),
        close_distance: r(fine.close_distance, coarse.close_distance),
        lambda: fine
            .lambda
            .iter()
            .zip(&coarse.lambda)
            .map(|(f, c)| r(*f, *c))
            .collect(),
        orientations: ro(&fine.orientations, &coarse.orientations),
        orientations_first: ro(&fine.orientations_first, &coarse.orientations_first),
        n: rv(fine.n, coarse.n),
        a_star: rv(fine.a_star, coarse.a_star),
        b_star: rv(fine.b_star, coarse.b_star),
        c_star: rv(fine.c_star, coarse.c_star),
        default_f: r(fine.default_f, coarse.default_f),
        r_e_sqr_fluence: r(fine.r_e_sqr_fluence, coarse.r_e_sqr_fluence),
        i_bg: r(fine.i_bg, coarse.i_bg),
    }
}

/// The tangent of one parameter at `base` moved by `offsets` (`moved`: that set-up).
pub fn plan_delta(
    base: &Setup,
    moved: &Setup,
    files: &dyn FileSource,
    offsets: &[Offset],
    p: Param,
) -> Result<PlanDelta> {
    check_applies(base, p)?;
    let plan = &moved.plan;
    let mut d = PlanDelta::zero(plan);
    if axis(p).is_some() {
        // d/dθ of R_z·R_y·R_x·v0 is a rotation of the current vectors about the rotated axis:
        // x → R_z·R_y·x, y → R_z·y, z → z
        let mut later: Vec<Offset> = offsets.to_vec();
        later.retain(|(q, _)| match p {
            Param::RotX => matches!(q, Param::RotY | Param::RotZ),
            Param::RotY => matches!(q, Param::RotZ),
            _ => false,
        });
        let u = rotate_xyz(axis(p).unwrap(), &later);
        let rot = |t: &[Orientation]| -> Vec<Orientation> {
            t.iter()
                .map(|o| Orientation {
                    a: cross(u, o.a),
                    b: cross(u, o.b),
                    c: cross(u, o.c),
                })
                .collect()
        };
        d.orientations = rot(&plan.orientations);
        d.orientations_first = rot(&plan.orientations_first);
        d.a_star = cross(u, plan.a_star);
        d.b_star = cross(u, plan.b_star);
        d.c_star = cross(u, plan.c_star);
        return Ok(d);
    }
    let o = |q| offset_of(offsets, q);
    match p {
        Param::NA => d.n = [1.0, 0.0, 0.0],
        Param::NB => d.n = [0.0, 1.0, 0.0],
        Param::NC => d.n = [0.0, 0.0, 1.0],
        Param::NCells => d.n = [1.0, 1.0, 1.0],
        Param::Scale | Param::Fluence => {
            // rf = rf0·(1 + s)·(1 + φ/F0), the background likewise
            let f0 = base.fluence;
            let k = if p == Param::Scale {
                1.0 + if f0 != 0.0 {
                    o(Param::Fluence) / f0
                } else {
                    0.0
                }
            } else {
                (1.0 + o(Param::Scale)) / f0
            };
            let (rf0, bg0) = unscaled(base, moved, files, offsets)?;
            d.r_e_sqr_fluence = rf0 * k;
            d.i_bg = bg0 * k;
        }
        Param::DefaultF => d.default_f = 1.0,
        Param::Mosaic => {
            let (t, tf) = mosaic_tangent(plan, moved.mosaic_spread);
            d.orientations = t;
            d.orientations_first = tf;
        }
        _ => {
            debug_assert!(!analytic(p));
            let at0 = moved_plan(base, files, p, 0.0)?;
            let b = &base.plan;
            let same = at0.pix0 == b.pix0
                && at0.fdet == b.fdet
                && at0.sdet == b.sdet
                && at0.orientations == b.orientations
                && at0.sources == b.sources
                && frozen_difference(&at0, b).is_none();
            if !same {
                return Err(Error::usage(format!(
                    "{}: this set-up cannot be re-resolved with the parameter as an explicit value (MODEL §10.1)",
                    named(p)
                ))
                .with_flag("-gradients"));
            }
            let h = step(base, p);
            let at = |x: f64| -> Result<Plan> {
                let mut off: Vec<Offset> = offsets.to_vec();
                off.push((p, x));
                let m = moved_setup(base, files, &off)?.plan;
                if let Some(what) = frozen_difference(&m, plan) {
                    return Err(Error::usage(format!(
                        "{}: a change of {x:e} {} changes {what} of the set-up, which has no derivative; give it explicitly",
                        named(p),
                        p.unit()
                    ))
                    .with_flag("-gradients"));
                }
                Ok(m)
            };
            let coarse = central(&at(h)?, &at(-h)?, 1.0 / (2.0 * h));
            let fine = central(&at(h / 2.0)?, &at(-h / 2.0)?, 1.0 / h);
            d = richardson(&fine, &coarse);
            if p == Param::Lambda && d.lambda.iter().all(|&x| x == 0.0) {
                // a file's wavelength (-geom's photon_energy, wavelength or electron_voltage;
                // a -sourcefile's wavelengths) replaces -lambda: the derivative would be an
                // all-zero image
                return Err(Error::usage(format!(
                    "{}: the wavelength comes from a file (-geom, -sourcefile), which does not \
                     move with -lambda",
                    named(p)
                ))
                .with_flag("-gradients"));
            }
        }
    }
    Ok(d)
}

/// r_e²·fluence and the water background of the moved set-up before the scale and fluence
/// offsets.
fn unscaled(
    base: &Setup,
    moved: &Setup,
    _files: &dyn FileSource,
    offsets: &[Offset],
) -> Result<(f64, f64)> {
    let o = |q| offset_of(offsets, q);
    let f0 = base.fluence;
    let f = (1.0 + o(Param::Scale))
        * if f0 != 0.0 {
            1.0 + o(Param::Fluence) / f0
        } else {
            1.0
        };
    Ok((moved.plan.r_e_sqr_fluence / f, moved.plan.i_bg / f))
}

/// The tangent of the plan for `params` (in order) at `base` moved by `offsets`, and the
/// moved set-up.
pub fn plan_tangent_at(
    base: &Setup,
    files: &dyn FileSource,
    params: &[Param],
    offsets: &[Offset],
) -> Result<(Setup, PlanTangent)> {
    let moved = moved_setup(base, files, offsets)?;
    let deltas = params
        .iter()
        .map(|&p| plan_delta(base, &moved, files, offsets, p))
        .collect::<Result<Vec<_>>>()?;
    Ok((
        moved,
        PlanTangent {
            params: params.to_vec(),
            deltas,
        },
    ))
}

/// The tangent of the plan for `params` (in order) at the set-up itself.
pub fn plan_tangent(
    setup: &Setup,
    files: &dyn FileSource,
    params: &[Param],
) -> Result<PlanTangent> {
    Ok(plan_tangent_at(setup, files, params, &[])?.1)
}
