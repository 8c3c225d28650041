//! The f32 tangent kernel (`cpu::tangent32`, MODEL §10.5) against the f64 one on golden cases,
//! for every parameter: on the pixels with signal (value ≥ 1e-3 of the image's largest),
//! |t32 − t64| ≤ TOL32 · max|t64| per parameter (measured at most 7e-7 on these cases: the
//! f32 terms carry ~1e-7 relative rounding; the sums are f64). Its image against the
//! f32 kernel's and the f64 kernel's; its VJP against its tangent images; refusals as the f64
//! path's; `-precision f32 -gradients` through the CLI. Each test renders small golden cases
//! once per precision (the f64 tangents are the reference, checked against finite differences
//! in `gradients.rs`).

#[macro_use]
mod common;

use common::{check_vjp, golden_dir, prepare_case as prepare, vjp_weights};
use nanobragg::api::{self, Param, Precision, Prepared};
use nanobragg::files::DiskFiles;
use std::sync::atomic::AtomicBool;
use Param::*;

/// Agreement of the f32 tangents with the f64 ones, relative to the largest f64 tangent.
const TOL32: f64 = 5e-6;
/// The f32 image against the f32 kernel's and the f64 one's, relative to the largest value.
const TOL_IMAGE: f64 = 2e-6;

fn gradients(prep: &Prepared, params: &[Param], precision: Precision) -> api::Gradients {
    let cancel = AtomicBool::new(false);
    api::render_gradients_with(prep, &DiskFiles, params, &[], precision, &|_| {}, &cancel).unwrap()
}

/// Every parameter of `params` on `case`: f32 tangents against f64, the f32 image against the
/// f32 kernel's and the f64 image. Prints the worst agreement per parameter.
fn check(case: &str, params: &[Param]) {
    let prep = prepare(case, "");
    let g64 = gradients(&prep, params, Precision::F64);
    let g32 = gradients(&prep, params, Precision::F32);
    let cancel = AtomicBool::new(false);
    let f32_kernel = api::render_cpu(prep.plan(), Precision::F32, &|_| {}, &cancel).unwrap();
    let peak = g64.image_f64.iter().fold(0f64, |m, v| m.max(v.abs()));
    assert!(peak > 0.0, "{case}: empty image");
    let (mut e_kernel, mut e_f64) = (0f64, 0f64);
    for px in 0..g64.image.len() {
        e_kernel = e_kernel.max((g32.image[px] as f64 - f32_kernel[px] as f64).abs() / peak);
        e_f64 = e_f64.max((g32.image_f64[px] - g64.image_f64[px]).abs() / peak);
    }
    eprintln!("{case:32} image: vs f32 kernel {e_kernel:.1e}, vs f64 {e_f64:.1e} of the peak");
    assert!(
        e_kernel <= TOL_IMAGE && e_f64 <= TOL_IMAGE,
        "{case}: f32 tangent kernel image off by {e_kernel:e} (f32 kernel), {e_f64:e} (f64)"
    );
    for (i, &p) in params.iter().enumerate() {
        let (t64, t32) = (g64.tangent(i), g32.tangent(i));
        let tmax = t64.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(tmax > 0.0, "{case} {}: the f64 tangent is 0", p.name());
        let mut worst = 0f64;
        let mut pixels = 0;
        for px in 0..t64.len() {
            if g64.image_f64[px] < 1e-3 * peak {
                continue;
            }
            pixels += 1;
            worst = worst.max((t32[px] - t64[px]).abs() / tmax);
        }
        eprintln!(
            "{case:32} {:11} pixels={pixels:6} worst={worst:.2e} of max|t64|",
            p.name()
        );
        assert!(pixels > 0, "{case} {}: no pixel with signal", p.name());
        assert!(
            worst <= TOL32,
            "{case} {}: f32 tangent off by {worst:.2e} of the largest, more than {TOL32:e}",
            p.name()
        );
    }
}

#[test]
fn every_parameter_against_f64_triclinic() {
    check(
        "triclinic_misset_xybeam",
        &[
            RotX, RotY, RotZ, CellA, CellB, CellC, CellAlpha, CellBeta, CellGamma, NA, NB, NC,
            NCells, Distance, BeamX, BeamY, Lambda, Scale, Fluence, DefaultF,
        ],
    );
}

#[test]
fn mosaic_detector_rotations_layers_polarisation_against_f64() {
    check("mosaic_domains_seed_noise", &[Mosaic, RotX, CellA, NCells]);
    check(
        "mosflm_detrot_xyz_close_distance",
        &[DetRotX, DetRotY, DetRotZ, Distance, BeamX, BeamY, RotZ],
    );
    check(
        "detector_thickness_layers",
        &[Distance, DetRotX, BeamY, CellA],
    );
    check("polar_kahn_wide_angle", &[Distance, BeamX, DetRotY, RotY]);
}

#[test]
fn shapes_sources_and_tables_against_f64() {
    check("round_xtal_fudge", &[RotX, CellA, NA, NCells, Distance]);
    check("gauss_xtal_fudge", &[RotX, NCells, Distance, Lambda]);
    check("dispersion_divergence", &[Lambda, RotX, Distance]);
    check("hkl_interpolate_explicit", &[RotX, CellA, Distance, NCells]);
    check("water_background", &[Scale, RotX, Distance]);
}

/// Top hat in f32 as in f64: the position derivatives are exactly 0, dI/dN_a = 2I/N_a (to the
/// f32 planes' rounding, 2⁻²⁴).
#[test]
fn tophat_in_f32() {
    let prep = prepare("tophat_spots_fudge", "");
    let g = gradients(&prep, &[RotX, CellA, NA, Scale], Precision::F32);
    assert!(g.tangent(0).iter().all(|&v| v == 0.0));
    assert!(g.tangent(1).iter().all(|&v| v == 0.0));
    let na = prep.plan().na;
    let lit = g.image_f64.iter().filter(|&&v| v > 0.0).count();
    assert!(lit > 10);
    for (px, &v) in g.image_f64.iter().enumerate() {
        let dn = g.tangent(2)[px];
        assert!(
            (dn - 2.0 * v / na).abs() <= 6e-8 * (2.0 * v / na).abs(),
            "{px}"
        );
        assert_eq!(g.tangent(3)[px], v as f32 as f64);
    }
}

/// The f32 VJP is the weighted sum of the f32 tangent images (and its image theirs), with and
/// without tricubic interpolation: to the planes' f32 rounding (the VJP sums the f64 values the
/// planes round, each within 2⁻²⁴ of its magnitude: ≤ 6e-8 of Σ|w·t|).
#[test]
fn f32_vjp_matches_f32_tangent_images() {
    let cancel = AtomicBool::new(false);
    for case in ["triclinic_misset_xybeam", "hkl_interpolate_explicit"] {
        let prep = prepare(case, "");
        let params = [RotX, CellA, Distance, NCells];
        let g = gradients(&prep, &params, Precision::F32);
        let w = vjp_weights(g.image.len());
        let (image, v) =
            api::vjp_with(&prep, &DiskFiles, &params, &[], &w, Precision::F32, &cancel).unwrap();
        assert_eq!(image, g.image_f64, "{case}");
        check_vjp(case, &g, &w, &v, 6e-8);
        let e = api::vjp_with(
            &prep,
            &DiskFiles,
            &params,
            &[],
            &w[1..],
            Precision::F32,
            &cancel,
        )
        .unwrap_err();
        assert!(e.message.starts_with("weights: expected"), "{}", e.message);
    }
}

/// The f32 path refuses what the f64 path refuses, with the same message naming the flag or
/// parameter.
#[test]
fn f32_refusals_are_the_f64_ones() {
    let cancel = AtomicBool::new(false);
    for (case, p, says) in [
        (
            "mat_mosflm9_hkl_nearest",
            CellA,
            "cell derivatives need the crystal given by -cell",
        ),
        (
            "mat_mosflm9_hkl_nearest",
            DefaultF,
            "default_F enters linearly only without an -hkl table",
        ),
        (
            "curved_det_nopolar",
            RotX,
            "-curved_det: derivatives are not available",
        ),
        ("cubic_basic_mosflm", Mosaic, "mosaic spread is 0"),
    ] {
        let prep = prepare(case, "");
        let e32 = api::render_gradients_with(
            &prep,
            &DiskFiles,
            &[p],
            &[],
            Precision::F32,
            &|_| {},
            &cancel,
        )
        .unwrap_err();
        let e64 = api::render_gradients(&prep, &DiskFiles, &[p], &|_| {}, &cancel).unwrap_err();
        assert!(
            e32.message.contains(says),
            "{case} {}: {}",
            p.name(),
            e32.message
        );
        assert_eq!(e32.message, e64.message);
        assert_eq!(e32.flag, e64.flag);
        let w = vec![1.0; prep.plan().pixel_count()];
        let e =
            api::vjp_with(&prep, &DiskFiles, &[p], &[], &w, Precision::F32, &cancel).unwrap_err();
        assert_eq!(e.message, e64.message);
    }
    let prep = prepare("triclinic_misset_xybeam", "-oversample_omega");
    let e = api::render_gradients_with(
        &prep,
        &DiskFiles,
        &[RotX],
        &[],
        Precision::F32,
        &|_| {},
        &cancel,
    )
    .unwrap_err();
    assert!(e.message.starts_with("-oversample_omega:"), "{}", e.message);
    assert_eq!(e.flag.as_deref(), Some("-oversample_omega"));
}

/// `-precision f32 -gradients LIST -gradfile PREFIX`: the files are the library's f32 tangents;
/// the float image is the f32 kernel's.
#[test]
fn cli_gradients_in_f32() {
    let case = "triclinic_misset_xybeam";
    let dir = common::scratch("gradients32_cli");
    common::copy_dir(&golden_dir(case), &dir);
    let mut words = common::case_words(&dir);
    words.extend(api::split_args(
        "-precision f32 -backend cpu -gradients rot_x,distance -gradfile g",
    ));
    let run = common::run_cli(&dir, &words);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let prep = prepare(case, "-precision f32");
    let cancel = AtomicBool::new(false);
    let f32_image = api::render_cpu(prep.plan(), Precision::F32, &|_| {}, &cancel).unwrap();
    let ours = common::read_f32(&dir.join("ours_float.bin"));
    assert!(ours
        .iter()
        .zip(&f32_image)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let g = gradients(&prep, &[RotX, Distance], Precision::F32);
    let g64 = gradients(&prep, &[RotX, Distance], Precision::F64);
    for (i, name) in ["rot_x", "distance"].iter().enumerate() {
        let file = common::read_f32(&dir.join(format!("g_{name}.bin")));
        let want: Vec<f32> = g.tangent(i).iter().map(|&v| v as f32).collect();
        assert_eq!(file, want, "{name}");
        let other: Vec<f32> = g64.tangent(i).iter().map(|&v| v as f32).collect();
        assert_ne!(file, other, "{name}: the f32 path was not taken");
    }
}

/// The f32 tangent kernel's row path (`cpu::tangent_row32`: pixels vectorised, orientation
/// tangents contracted once per pixel and source) against its per-pixel path on every golden
/// case the row path takes, with parameters of each kind: rotations (contracted on the right),
/// cell edges and angles (on the left), the mosaic spread where the case has domains (per
/// term), detector, wavelength, N and scale. Same f32 terms, different summation order:
/// |row − pixel| ≤ 1e-6 of the largest value per image and tangent. The exact-Bragg pixels and
/// the first φ sequence's pixel are the per-pixel path's in both.
#[test]
fn row_path_matches_the_per_pixel_path() {
    use nanobragg::cpu::{tangent32, tangent_row32};
    let cancel = AtomicBool::new(false);
    let mut taken = 0;
    let dir = common::repo_root().join("tests/fixtures/golden");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    for case in &cases {
        let prep = prepare(case, "-detpixels 40 -roi 0 39 0 39");
        if !tangent_row32::applies(prep.plan()) {
            continue;
        }
        let mut params = vec![RotX, RotZ, Scale];
        // the others where the set-up lets them move (not the cell of a -mat file, the
        // detector of -geom/-expt panels, the mosaic spread without domains, …)
        for p in [
            CellA, CellGamma, NCells, Distance, BeamY, DetRotX, Lambda, Mosaic,
        ] {
            let mut with = params.clone();
            with.push(p);
            if nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &with, &[])
                .is_ok()
            {
                params = with;
            }
        }
        // all of them, and all but N (the row kernel that leaves d/dN out)
        let without_n: Vec<_> = params.iter().copied().filter(|p| *p != NCells).collect();
        for params in [&params, &without_n] {
            let (moved, t) =
                nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, params, &[])
                    .unwrap();
            let plan = &moved.plan;
            let rows = tangent32::render_with_rows(plan, &t, true, &|_| {}, &cancel).unwrap();
            let px = tangent32::render_with_rows(plan, &t, false, &|_| {}, &cancel).unwrap();
            let npx = plan.pixel_count();
            fn worst<T: Copy + Into<f64>>(a: &[T], b: &[T]) -> (f64, f64) {
                let m = b.iter().fold(0f64, |m, &v| m.max(v.into().abs()));
                let d = a
                    .iter()
                    .zip(b)
                    .fold(0f64, |w, (&x, &y)| w.max((x.into() - y.into()).abs()));
                (d, m)
            }
            let (d, peak) = worst(&rows.image, &px.image);
            assert!(
                peak > 0.0 && d <= 1e-6 * peak,
                "{case}: image {d:e} of {peak:e}"
            );
            for (j, p) in params.iter().enumerate() {
                let r = &rows.tangents[j * npx..(j + 1) * npx];
                let q = &px.tangents[j * npx..(j + 1) * npx];
                let (d, m) = worst(r, q);
                // a tangent that cancels to almost nothing (λ with a -mat orientation, whose
                // indices do not depend on λ: 1e-10 of the image per Å) is f32 rounding of its
                // parts on both paths: compared at 1e-6 of the image's peak per unit there
                let scale = m.max(peak);
                assert!(d <= 1e-6 * scale, "{case} {}: {d:e} of {m:e}", p.name());
            }
        }
        let names: Vec<&str> = params.iter().map(|p| p.name()).collect();
        eprintln!("{case:36} row path = per-pixel path: {}", names.join(","));
        taken += 1;
    }
    assert!(taken >= 20, "the row path took only {taken} golden cases");
}

/// The row path on part of the detector: a region of interest that cuts blocks (x 3–36 of 40,
/// y 5–30), and one with whole rows of blocks (x 0–39) and a mask (set on the plan) that drops
/// one pixel of a block inside it. Row path = per-pixel path (1e-6 of the peak) and every plane
/// is 0 off the rendered pixels.
#[test]
fn row_path_on_a_region_and_a_mask() {
    use nanobragg::cpu::{tangent32, tangent_row32};
    let cancel = AtomicBool::new(false);
    let params = [RotX, CellA, Distance, NCells, Scale];
    for (roi, masked) in [("3 36 5 30", false), ("0 39 5 30", true)] {
        let prep = prepare(
            "triclinic_misset_xybeam",
            &format!("-detpixels 40 -roi {roi}"),
        );
        let (mut moved, t) =
            nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &[])
                .unwrap();
        let plan = &mut moved.plan;
        let (fp, npx) = (plan.fpixels, plan.pixel_count());
        if masked {
            let mut mask = vec![1u8; npx];
            mask[12 * fp + 20] = 0;
            plan.mask = Some(mask);
        }
        assert!(tangent_row32::applies(plan));
        let rows = tangent32::render_with_rows(plan, &t, true, &|_| {}, &cancel).unwrap();
        let px = tangent32::render_with_rows(plan, &t, false, &|_| {}, &cancel).unwrap();
        let peak = px.image.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(peak > 0.0);
        let mut off = 0;
        for i in 0..npx {
            let (f, s) = (i % fp, i / fp);
            let here = format!("roi {roi}: pixel {f},{s}");
            assert!((rows.image[i] - px.image[i]).abs() <= 1e-6 * peak, "{here}");
            if !plan.renders(f, s) {
                off += 1;
                assert_eq!(rows.image[i], 0.0, "{here} not rendered");
            }
            for j in 0..params.len() {
                let (a, b) = (rows.tangents[j * npx + i], px.tangents[j * npx + i]);
                let m = px.tangents[j * npx..(j + 1) * npx]
                    .iter()
                    .fold(0f32, |m, v| m.max(v.abs()));
                assert!((a - b).abs() <= 1e-6 * m.max(peak as f32), "{here} {j}");
                if !plan.renders(f, s) {
                    assert_eq!(a, 0.0, "{here} {j} not rendered");
                }
            }
        }
        // the masked pixel has signal where it is rendered
        if masked {
            assert!(!plan.renders(20, 12));
            plan.mask = None;
            let whole = tangent32::render_with_rows(plan, &t, true, &|_| {}, &cancel).unwrap();
            assert!(whole.image[12 * fp + 20] > 0.0);
            assert!(whole.tangents[12 * fp + 20] != 0.0);
        }
        assert!(off > 0, "roi {roi}");
    }
}

/// The row path's image is the f32 image kernel's row path to the bit (`cpu::row32::block`,
/// the one row block, with the tangent carry and without): the same nearest index, exact-Bragg
/// test, resolution test (q² against 1/dmin²) and sums, so the row tangents are derivatives of
/// the image the f32 kernel renders with the f64 indices (the tangent carry keeps them; the
/// image's hybrid indices on mosaic domains, `row32::HybridIndices`, move δ by ≤ 4.2e-7). On every golden case the row path takes (40², as above)
/// and on `dmin_roi` whole, whose resolution limit crosses its region. Pixels either path hands
/// to a per-pixel kernel (exact-Bragg rule, the first φ sequence's pixel) are left out.
#[test]
fn row_path_image_is_the_f32_kernels_to_the_bit() {
    use nanobragg::cpu::{self, tangent32, tangent_row32};
    let cancel = AtomicBool::new(false);
    let dir = common::repo_root().join("tests/fixtures/golden");
    let mut cases: Vec<(String, &str)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                "-detpixels 40 -roi 0 39 0 39",
            )
        })
        .collect();
    cases.sort();
    cases.push(("dmin_roi".into(), ""));
    let mut taken = 0;
    for (case, extra) in &cases {
        let prep = prepare(case, extra);
        if !tangent_row32::applies(prep.plan()) {
            continue;
        }
        let (moved, t) = nanobragg::resolve::tangent::plan_tangent_at(
            &prep.setup,
            &DiskFiles,
            &[RotX, Scale],
            &[],
        )
        .unwrap();
        let plan = &moved.plan;
        let rows = tangent32::render_with_rows(plan, &t, true, &|_| {}, &cancel).unwrap();
        let (image, fix) =
            cpu::render_paths(plan, cpu::Precision::F32, true, false, &|_| {}, &cancel).unwrap();
        let mut compared = 0;
        for i in 0..image.len() {
            if fix.pixels.contains(&i) || fix.first_pixel == Some(i) {
                continue;
            }
            let (f, s) = (i % plan.fpixels, i / plan.fpixels);
            assert_eq!(
                (rows.image[i] as f32).to_bits(),
                image[i].to_bits(),
                "{case}: pixel {f},{s}: {} against {}",
                rows.image[i],
                image[i]
            );
            compared += usize::from(image[i] != 0.0);
        }
        assert!(
            compared > image.len() / 4,
            "{case}: {compared} pixels with signal"
        );
        taken += 1;
    }
    assert!(taken >= 20, "the row path took only {taken} golden cases");
}

/// Across the resolution limit (`dmin_roi`: the limit crosses its region), the row path's f32
/// tangents against central differences of the f64 image (an independent computation: another
/// kernel, the parameter moved in the set-up), on the pixels with signal (≥ 1e-3 of the peak)
/// where the image is smooth in the parameter: a pixel whose difference with step h and with
/// step h/2 disagree by more than 10 % is one the limit cuts within the step (the image jumps
/// there; at most 1 % of them). |fd − t| ≤ 2e-4·(|t| + 1e-3·max|t|) (measured 1.6e-5: the
/// f32 terms' rounding, ≤ 5e-6 of max|t| by TOL32, over the floor, and the difference's own
/// truncation).
#[test]
fn row_tangents_across_the_resolution_limit() {
    use nanobragg::cpu::{tangent32, tangent_row32};
    let cancel = AtomicBool::new(false);
    let prep = prepare("dmin_roi", "");
    assert!(prep.plan().dmin > 0.0 && tangent_row32::applies(prep.plan()));
    let params = [RotX, CellA, Distance];
    let (moved, t) =
        nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &[])
            .unwrap();
    let rows = tangent32::render_with_rows(&moved.plan, &t, true, &|_| {}, &cancel).unwrap();
    let npx = moved.plan.pixel_count();
    let peak = rows.image.iter().fold(0f64, |m, v| m.max(v.abs()));
    for (j, (&p, h)) in params.iter().zip([1e-7, 1e-4, 1e-5]).enumerate() {
        let image_at = |x: f64| {
            let plan = api::moved_plan(&prep, &DiskFiles, &[(p, x)]).unwrap();
            api::render_f64(&plan, &cancel).unwrap()
        };
        let (fd, fd_half) = (
            common::central_difference(h, image_at),
            common::central_difference(h / 2.0, image_at),
        );
        let tj = &rows.tangents[j * npx..(j + 1) * npx];
        let tmax = tj.iter().fold(0f64, |m, &v| m.max((v as f64).abs()));
        assert!(tmax > 0.0, "{}: the tangent is 0", p.name());
        let (mut worst, mut compared, mut cut) = (0f64, 0, 0);
        for i in 0..npx {
            if rows.image[i] < 1e-3 * peak {
                continue;
            }
            let floor = 1e-3 * tmax;
            if (fd[i] - fd_half[i]).abs() > 0.1 * (fd[i].abs() + floor) {
                cut += 1;
                continue;
            }
            let t = tj[i] as f64;
            worst = worst.max((fd[i] - t).abs() / (t.abs() + floor));
            compared += 1;
        }
        eprintln!(
            "dmin_roi {:9} compared {compared} cut {cut} worst {worst:.2e}",
            p.name()
        );
        assert!(
            compared > 1000 && cut * 100 <= compared,
            "{}: {compared}, {cut}",
            p.name()
        );
        assert!(worst <= 2e-4, "{}: {worst:e}", p.name());
    }
}
