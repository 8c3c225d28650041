//! Derivatives of the image (MODEL §10) against central finite differences of the f64 image on
//! the golden cases, the image of the tangent kernel against the f64 kernel's (bit for bit),
//! the non-differentiable choices (nearest F, top-hat, rounding), the vector–Jacobian product
//! against the tangent images, and `-gradients` through the CLI.
//!
//! Finite differences: f'(θ) ≈ (I(θ+h) − I(θ−h))/2h on the f64 image (before its f32
//! rounding), with the step h of each parameter below (in its public unit). A pixel "with
//! signal" has a value ≥ 1e-3 of the image's largest; on those the agreement is
//! |fd − tangent| ≤ 1e-4·(|tangent| + 1e-3·max|tangent|): relative 1e-4, with a floor of 1e-7
//! of the largest tangent where the derivative itself crosses zero (spot centres).

#[macro_use]
mod common;

use common::{
    check_vjp, fd_step, finite_difference, golden_dir, prepare_case as prepare, vjp_weights,
};
use nanobragg::api::{self, Param};
use nanobragg::files::DiskFiles;
use std::sync::atomic::AtomicBool;

/// Relative tolerance on pixels with signal, and the share of the largest tangent below which a
/// pixel's derivative counts as zero.
const TOL: f64 = 1e-4;
const FLOOR: f64 = 1e-3;

struct Agreement {
    worst: f64,
    pixels: usize,
}

/// Every parameter of `params` on `case` (+ `extra` words) against its finite difference.
fn check(case: &str, extra: &str, params: &[Param]) -> Vec<(Param, Agreement)> {
    let prep = prepare(case, extra);
    let cancel = AtomicBool::new(false);
    let g = api::render_gradients(&prep, &DiskFiles, params, &|_| {}, &cancel).unwrap();
    // the image is the f64 kernel's, bit for bit
    let f64_image = api::render_cpu(prep.plan(), api::Precision::F64, &|_| {}, &cancel).unwrap();
    assert!(
        g.image
            .iter()
            .zip(&f64_image)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "{case}: the tangent kernel's image differs from the f64 kernel's"
    );
    let peak = g.image_f64.iter().fold(0f64, |m, v| m.max(v.abs()));
    assert!(peak > 0.0, "{case}: empty image");
    let mut out = Vec::new();
    for (i, &p) in params.iter().enumerate() {
        let h = fd_step(p, &prep);
        let image_at = |x: f64| {
            api::render_f64(
                &api::moved_plan(&prep, &DiskFiles, &[(p, x)]).unwrap(),
                &cancel,
            )
            .unwrap()
        };
        let fd = finite_difference(p, h, image_at);
        let t = g.tangent(i);
        let tmax = t.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(tmax > 0.0, "{case} {}: the tangent image is 0", p.name());
        let mut worst = 0f64;
        let mut pixels = 0;
        for px in 0..t.len() {
            if g.image_f64[px] < 1e-3 * peak {
                continue;
            }
            pixels += 1;
            let fd = fd[px];
            let e = (fd - t[px]).abs() / (t[px].abs() + FLOOR * tmax);
            worst = worst.max(e);
        }
        eprintln!(
            "{case:32} {:11} h={h:<8e} pixels={pixels:6} worst={worst:.2e}",
            p.name()
        );
        out.push((p, Agreement { worst, pixels }));
    }
    out
}

fn assert_all(case: &str, extra: &str, params: &[Param]) {
    for (p, a) in check(case, extra, params) {
        assert!(a.pixels > 0, "{case} {}: no pixel with signal", p.name());
        assert!(
            a.worst <= TOL,
            "{case} {}: finite difference off by {:.2e} (relative), more than {TOL:e}",
            p.name(),
            a.worst
        );
    }
}

use Param::*;

#[test]
fn triclinic_crystal_beam_and_scale() {
    assert_all(
        "triclinic_misset_xybeam",
        "",
        &[
            RotX, RotY, RotZ, CellA, CellB, CellC, CellAlpha, CellBeta, CellGamma, NA, NB, NC,
            NCells, Distance, BeamX, BeamY, Lambda, Scale, Fluence, DefaultF,
        ],
    );
}

#[test]
fn mosaic_spread() {
    assert_all(
        "mosaic_domains_seed_noise",
        "",
        &[Mosaic, RotX, CellA, NCells],
    );
}

#[test]
fn detector_rotations_close_distance() {
    assert_all(
        "mosflm_detrot_xyz_close_distance",
        "",
        &[DetRotX, DetRotY, DetRotZ, Distance, BeamX, BeamY, RotZ],
    );
}

#[test]
fn sensor_layers_and_polarisation() {
    assert_all(
        "detector_thickness_layers",
        "",
        &[Distance, DetRotX, BeamY, CellA],
    );
    assert_all(
        "polar_kahn_wide_angle",
        "",
        &[Distance, BeamX, DetRotY, RotY],
    );
}

#[test]
fn lattice_shapes() {
    assert_all("round_xtal_fudge", "", &[RotX, CellA, NA, NCells, Distance]);
    // N from -samplesize is exactly 15 cells of 80 Å (ceil(size/|b|) steps there): the cell
    // derivatives hold the counts (MODEL §10.2), and so does the finite difference
    assert_all(
        "gauss_xtal_fudge",
        "",
        &[RotX, NCells, Distance, Lambda, CellB],
    );
}

#[test]
fn sources_phi_and_oversampling() {
    assert_all("dispersion_divergence", "", &[Lambda, RotX, Distance]);
    assert_all("phi_osc_phisteps_triclinic", "", &[RotZ, CellC, CellBeta]);
    assert_all("oversample_explicit", "", &[RotY, Distance, BeamX]);
    assert_all("water_background", "", &[Scale, RotX, Distance]);
}

#[test]
fn structure_factor_tables() {
    // tricubic: the interpolant is differentiated
    assert_all(
        "hkl_interpolate_explicit",
        "",
        &[RotX, CellA, Distance, NCells],
    );
    // nearest lookup: F is held constant
    assert_all("mat_mosflm9_hkl_nearest", "", &[RotX, Distance, NA]);
}

/// Top-hat spots: flat inside, the edge not differentiated, so the tangents of everything that
/// moves a spot (crystal orientation, cell) are 0 and the scale's is the image; N moves the height inside (N_a·N_b·N_c).
#[test]
fn tophat_derivative_is_zero_inside_and_at_the_edge() {
    let prep = prepare("tophat_spots_fudge", "");
    let cancel = AtomicBool::new(false);
    let g = api::render_gradients(
        &prep,
        &DiskFiles,
        &[RotX, CellA, RotZ, NA, Scale],
        &|_| {},
        &cancel,
    )
    .unwrap();
    for i in 0..3 {
        assert!(
            g.tangent(i).iter().all(|&v| v == 0.0),
            "{}",
            g.params[i].name()
        );
    }
    let p = prep.plan();
    let (na, nb, nc) = (p.na, p.nb, p.nc);
    let lit = g.image_f64.iter().filter(|&&v| v > 0.0).count();
    assert!(lit > 10);
    for (px, &v) in g.image_f64.iter().enumerate() {
        // I ∝ (Na·Nb·Nc)²: dI/dNa = 2I/Na
        let dn = g.tangent(3)[px];
        assert!(
            (dn - 2.0 * v / na).abs() <= 1e-12 * v.abs().max(1e-300),
            "{px}: {dn} vs {}",
            2.0 * v / na
        );
        assert_eq!(g.tangent(4)[px], v);
    }
    let _ = (nb, nc);
}

/// The vector–Jacobian product equals the weighted sums of the tangent images, with and
/// without tricubic interpolation.
#[test]
fn vjp_matches_tangent_images() {
    for case in ["triclinic_misset_xybeam", "hkl_interpolate_explicit"] {
        let prep = prepare(case, "");
        let cancel = AtomicBool::new(false);
        let params = [RotX, CellA, Distance, NCells];
        let g = api::render_gradients(&prep, &DiskFiles, &params, &|_| {}, &cancel).unwrap();
        let w = vjp_weights(g.image.len());
        let (image, v) = api::vjp(&prep, &DiskFiles, &params, &w, &cancel).unwrap();
        assert_eq!(image, g.image_f64, "{case}");
        check_vjp(case, &g, &w, &v, 1e-12);
        let e = api::vjp(&prep, &DiskFiles, &params, &w[1..], &cancel).unwrap_err();
        assert!(e.message.starts_with("weights: expected"), "{}", e.message);
    }
}

/// Refusals name the flag and say why.
#[test]
fn errors_name_the_parameter() {
    let e = api::parse_params("rot_x,cell_aa", "-gradients").unwrap_err();
    assert!(
        e.message
            .starts_with("-gradients: unknown parameter 'cell_aa' (did you mean cell_a?)"),
        "{}",
        e.message
    );
    assert_eq!(e.flag.as_deref(), Some("-gradients"));
    let e = api::parse_params("rot_x,rot_x", "-gradients").unwrap_err();
    assert!(e.message.contains("given twice"), "{}", e.message);
    let cancel = AtomicBool::new(false);
    let prep = prepare("mat_mosflm9_hkl_nearest", "");
    let e = api::render_gradients(&prep, &DiskFiles, &[CellA], &|_| {}, &cancel).unwrap_err();
    assert!(
        e.message
            .contains("cell derivatives need the crystal given by -cell"),
        "{}",
        e.message
    );
    let e = api::render_gradients(&prep, &DiskFiles, &[DefaultF], &|_| {}, &cancel).unwrap_err();
    assert!(
        e.message
            .contains("default_F enters linearly only without an -hkl table"),
        "{}",
        e.message
    );
    let prep = prepare("curved_det_nopolar", "");
    let e = api::render_gradients(&prep, &DiskFiles, &[RotX], &|_| {}, &cancel).unwrap_err();
    assert!(
        e.message
            .starts_with("-curved_det: derivatives are not available"),
        "{}",
        e.message
    );
    let prep = prepare("cubic_basic_mosflm", "");
    let e = api::render_gradients(&prep, &DiskFiles, &[Mosaic], &|_| {}, &cancel).unwrap_err();
    assert!(e.message.contains("mosaic spread is 0"), "{}", e.message);
}

/// The tangent kernel's image is the f64 kernel's on every golden case it supports.
#[test]
fn image_is_the_f64_kernels_on_every_golden_case() {
    let cancel = AtomicBool::new(false);
    let mut checked = 0;
    macro_rules! each {
        ($($case:ident),* $(,)?) => {$(
            let prep = prepare(stringify!($case), "");
            if nanobragg::cpu::tangent::check_supported(prep.plan()).is_ok() {
                let want = api::render_cpu(prep.plan(), api::Precision::F64, &|_| {}, &cancel).unwrap();
                let got = api::render_f64(prep.plan(), &cancel).unwrap();
                assert!(
                    got.iter().zip(&want).all(|(a, b)| (*a as f32).to_bits() == b.to_bits()),
                    "{}", stringify!($case)
                );
                checked += 1;
            }
        )*};
    }
    golden_cases!(each);
    assert!(checked >= 40, "{checked}");
}

/// `-gradients LIST -gradfile PREFIX`: one f32 image per parameter, the library's tangents; the
/// float image stays the golden one; errors name the flag.
#[test]
fn cli_writes_one_image_per_parameter() {
    let case = "triclinic_misset_xybeam";
    let dir = common::scratch("gradients_cli");
    common::copy_dir(&golden_dir(case), &dir);
    let mut words = common::case_words(&dir);
    words.extend(api::split_args(
        "-gradients rot_x,distance,n_cells -gradfile g",
    ));
    let run = common::run_cli(&dir, &words);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("writing g_rot_x.bin as ∂image/∂rot_x (photons/pixel per rad)"),
        "{}",
        run.stdout
    );
    let golden = common::read_f32(&dir.join("float.bin"));
    let ours = common::read_f32(&dir.join("ours_float.bin"));
    assert!(golden
        .iter()
        .zip(&ours)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let prep = prepare(case, "");
    let g = api::render_gradients(
        &prep,
        &DiskFiles,
        &[RotX, Distance, NCells],
        &|_| {},
        &AtomicBool::new(false),
    )
    .unwrap();
    for (i, name) in ["rot_x", "distance", "n_cells"].iter().enumerate() {
        let file = common::read_f32(&dir.join(format!("g_{name}.bin")));
        let want: Vec<f32> = g.tangent(i).iter().map(|&v| v as f32).collect();
        assert_eq!(file, want, "{name}");
    }
    let mut bad = common::case_words(&dir);
    bad.extend(api::split_args("-gradients rot_x,distanse -gradfile g"));
    let run = common::run_cli(&dir, &bad);
    assert_ne!(run.status, 0);
    assert!(
        run.stderr
            .contains("-gradients: unknown parameter 'distanse' (did you mean distance?)"),
        "{}",
        run.stderr
    );
    let mut alone = common::case_words(&dir);
    alone.extend(api::split_args("-gradients rot_x"));
    let run = common::run_cli(&dir, &alone);
    assert!(
        run.stderr.contains("-gradients: give -gradfile PREFIX"),
        "{}",
        run.stderr
    );
}

/// Away from the set-up's own values (the PyTorch bridge's case): the derivatives at the set-up
/// moved by offsets (rotations composed R_z·R_y·R_x, cell, scale, fluence) against finite
/// differences there.
#[test]
fn derivatives_at_offsets() {
    let prep = prepare("triclinic_misset_xybeam", "");
    let cancel = AtomicBool::new(false);
    let offsets = [
        (RotX, 0.01),
        (RotY, -0.02),
        (RotZ, 0.015),
        (CellA, 0.3),
        (Scale, 0.1),
        (Fluence, 1e24),
        (Distance, -2.0),
    ];
    let params = [RotX, RotY, RotZ, CellA, Scale, Fluence, Distance, BeamX];
    let g =
        api::render_gradients_at(&prep, &DiskFiles, &params, &offsets, &|_| {}, &cancel).unwrap();
    let base = api::render_f64(
        &api::moved_plan(&prep, &DiskFiles, &offsets).unwrap(),
        &cancel,
    )
    .unwrap();
    assert_eq!(base, g.image_f64);
    let peak = base.iter().fold(0f64, |m, v| m.max(*v));
    for (i, &p) in params.iter().enumerate() {
        let h = fd_step(p, &prep);
        let at = |x: f64| {
            let mut off = offsets.to_vec();
            off.push((p, x));
            api::render_f64(&api::moved_plan(&prep, &DiskFiles, &off).unwrap(), &cancel).unwrap()
        };
        let (plus, minus) = (at(h), at(-h));
        let t = g.tangent(i);
        let tmax = t.iter().fold(0f64, |m, v| m.max(v.abs()));
        let mut worst = 0f64;
        for px in 0..t.len() {
            if base[px] >= 1e-3 * peak {
                let fd = (plus[px] - minus[px]) / (2.0 * h);
                worst = worst.max((fd - t[px]).abs() / (t[px].abs() + FLOOR * tmax));
            }
        }
        eprintln!("offsets {:11} worst={worst:.2e}", p.name());
        assert!(worst <= TOL, "{} at offsets: {worst:e}", p.name());
    }
}

/// The structure factors' gradient of a weighted image sum (`api::vjp_structure_factors`)
/// against central differences of single table entries: the image is quadratic in each F, so
/// the difference is exact up to rounding (relative 1e-7 on the entries with the largest
/// gradients); an entry no term reads has no gradient and its difference is 0; the image is
/// the f64 kernel's; tricubic interpolation and a set-up without a table are refused.
#[test]
fn structure_factor_gradients() {
    let case = "mat_mosflm9_hkl_nearest";
    let prep = prepare(case, "-detpixels 48 -roi 0 47 0 47");
    let n = prep.plan().pixel_count();
    let w: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
        .collect();
    let cancel = AtomicBool::new(false);
    let g = api::vjp_structure_factors(&prep, &DiskFiles, &[], &w, &cancel).unwrap();
    let image = api::render_f64(prep.plan(), &cancel).unwrap();
    assert_eq!(g.image, image);
    assert!(g.hkl.len() >= 3, "{} reflections", g.hkl.len());
    let wsum = |plan: &nanobragg::plan::Plan| -> f64 {
        let img = api::render_f64(plan, &cancel).unwrap();
        img.iter().zip(&w).map(|(a, b)| a * b).sum()
    };
    let mut order: Vec<usize> = (0..g.hkl.len()).collect();
    order.sort_by(|&a, &b| g.grad[b].abs().total_cmp(&g.grad[a].abs()));
    for &i in order.iter().take(3) {
        let [h, k, l] = g.hkl[i];
        let e = prep.plan().hkl.index(h, k, l);
        assert_eq!(prep.plan().hkl.data[e], g.f[i]);
        let step = 1e-3 * g.f[i].abs().max(1.0);
        let mut up = prep.plan().clone();
        up.hkl.data[e] += step;
        let mut down = prep.plan().clone();
        down.hkl.data[e] -= step;
        let fd = (wsum(&up) - wsum(&down)) / (2.0 * step);
        eprintln!(
            "F({h},{k},{l}) = {}: gradient {:e}, central difference {fd:e}",
            g.f[i], g.grad[i]
        );
        assert!(
            (fd - g.grad[i]).abs() <= 1e-7 * g.grad[i].abs(),
            "F({h},{k},{l}): {} vs {fd}",
            g.grad[i]
        );
    }
    // an entry of the table no term reads
    let read: std::collections::HashSet<[i32; 3]> = g.hkl.iter().copied().collect();
    let t = &prep.plan().hkl;
    let unread = (t.h_min..=t.h_max)
        .flat_map(|h| {
            (t.k_min..=t.k_max).flat_map(move |k| (t.l_min..=t.l_max).map(move |l| [h, k, l]))
        })
        .find(|x| !read.contains(x))
        .expect("an entry no term reads");
    let e = t.index(unread[0], unread[1], unread[2]);
    let mut up = prep.plan().clone();
    up.hkl.data[e] += 1.0;
    assert_eq!(wsum(&up), wsum(prep.plan()));
    // refusals
    let tri = prepare("hkl_interpolate_explicit", "");
    let w1 = vec![1.0; tri.plan().pixel_count()];
    let err = api::vjp_structure_factors(&tri, &DiskFiles, &[], &w1, &cancel).unwrap_err();
    assert_eq!(err.flag.as_deref(), Some("-interpolate"), "{}", err.message);
    let none = prepare("cubic_basic_mosflm", "");
    let w2 = vec![1.0; none.plan().pixel_count()];
    let err = api::vjp_structure_factors(&none, &DiskFiles, &[], &w2, &cancel).unwrap_err();
    assert!(
        err.message.contains("no structure-factor table"),
        "{}",
        err.message
    );
}
