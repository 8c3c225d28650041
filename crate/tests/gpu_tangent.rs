//! The GPU tangent kernel (`shaders/nanobragg.wgsl` with `TANGENT`, `gpu::tangent`, MODEL §10)
//! against the CPU f64 tangent kernel (`cpu::tangent`) on golden cases that together cover every
//! parameter and every term's derivative (square, round, Gaussian lattices, tricubic F, sensor
//! layers, polarisation, mosaic domains, sources, the water background); its image against the
//! GPU image kernel's (within 1e-6 of the peak: two shader modules a driver may contract
//! differently; bit for bit on lavapipe); the vector–Jacobian product against the CPU's; the
//! parameters split into passes; the refused set-ups.
//!
//! Tolerance: the GPU's tangents are f32 (its df64 chain as the image's); on the pixels with
//! signal (≥ 1e-3 of the image's largest) |gpu − cpu| ≤ [`TOL`] · max|cpu tangent| for each
//! parameter (the f32 sum of up to 10⁴ terms per pixel and f32 term derivatives; the measured
//! worst is printed with `--nocapture`).
#![cfg(feature = "gpu")]

#[path = "gpu_support/mod.rs"]
mod gpu_support;

use gpu_support::common::{case_words_for, golden_dir, Words};
use nanobragg::api::{self, Backend, Engine, Param, Precision, Prepared, Renderer};
use nanobragg::files::DiskFiles;
use nanobragg::gpu::GpuRenderer;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use Param::*;

/// Agreement of the f32 GPU tangents with the f64 CPU tangents, relative to each parameter's
/// largest |tangent|, on pixels with signal.
const TOL: f64 = 1e-4;

/// The tangent kernel's image against the image kernel's, relative to the image's peak (see
/// `image_is_the_image_kernels_and_passes_agree`).
const IMAGE_TOL: f64 = 1e-6;

/// One renderer for the binary (one device, pipelines compiled once).
static GPU: Mutex<Option<Renderer>> = Mutex::new(None);

fn with_renderer<T>(f: impl FnOnce(&mut Renderer) -> T) -> T {
    let mut g = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let r = g.get_or_insert_with(|| {
        // fail (or skip) here with the harness's message when there is no adapter
        let _ = gpu_support::device();
        Renderer::new(None)
    });
    f(r)
}

fn prepare(case: &str, extra: &str) -> Prepared {
    let mut words = case_words_for(&golden_dir(case), Words::InProcess);
    words.extend(api::split_args(extra));
    api::prepare(&words, &DiskFiles).unwrap_or_else(|e| panic!("{case}: {}", e.message))
}

/// GPU against CPU tangents for `params` on `case`; returns the worst relative error per
/// parameter.
fn check(case: &str, extra: &str, params: &[Param]) {
    let prep = prepare(case, extra);
    let cancel = AtomicBool::new(false);
    let t0 = std::time::Instant::now();
    let gpu = with_renderer(|r| {
        r.render_gradients(
            &prep,
            &DiskFiles,
            params,
            &[],
            Backend::Gpu,
            Precision::F32,
            &|_| {},
            &cancel,
        )
    })
    .unwrap_or_else(|e| panic!("{case}: {}", e.message));
    let gpu_s = t0.elapsed().as_secs_f64();
    assert_eq!(gpu.engine, Engine::Gpu);
    let g = gpu.gradients;
    let cpu = api::render_gradients(&prep, &DiskFiles, params, &|_| {}, &cancel).unwrap();
    let peak = cpu.image_f64.iter().fold(0f64, |m, v| m.max(v.abs()));
    assert!(peak > 0.0, "{case}: empty image");
    let signal: Vec<usize> = (0..cpu.image_f64.len())
        .filter(|&i| cpu.image_f64[i].abs() >= 1e-3 * peak)
        .collect();
    // the image: f32 against f64
    let img_err = signal
        .iter()
        .map(|&i| (g.image[i] as f64 - cpu.image_f64[i]).abs() / peak)
        .fold(0f64, f64::max);
    assert!(
        img_err < 1e-4,
        "{case}: GPU image off by {img_err:.2e} of the peak"
    );
    for (j, &p) in params.iter().enumerate() {
        let (a, b) = (g.tangent(j), cpu.tangent(j));
        let tmax = b.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(tmax > 0.0, "{case} {}: the CPU tangent is 0", p.name());
        let worst = signal
            .iter()
            .map(|&i| (a[i] - b[i]).abs() / tmax)
            .fold(0f64, f64::max);
        println!(
            "{case:34} {:11} pixels={:6} worst={worst:.2e} (GPU {gpu_s:.2} s)",
            p.name(),
            signal.len()
        );
        assert!(
            worst <= TOL,
            "{case} {}: GPU tangent off by {worst:.2e} of its largest, more than {TOL:e}",
            p.name()
        );
    }
}

#[test]
fn crystal_cell_beam_and_scale() {
    check(
        "triclinic_misset_xybeam",
        "",
        &[
            RotX, RotY, RotZ, CellA, CellB, CellC, CellAlpha, CellBeta, CellGamma, NA, NB, NC,
            NCells, Distance, BeamX, BeamY, Lambda, Scale, Fluence, DefaultF,
        ],
    );
}

#[test]
fn detector_layers_polarisation_mosaic() {
    check(
        "mosflm_detrot_xyz_close_distance",
        "",
        &[DetRotX, DetRotY, DetRotZ, Distance, BeamX, BeamY],
    );
    check("detector_thickness_layers", "", &[Distance, DetRotX, CellA]);
    check("polar_kahn_wide_angle", "", &[BeamX, DetRotY, RotY]);
    check("mosaic_domains_seed_noise", "", &[Mosaic, RotX, NCells]);
}

#[test]
fn shapes_sources_tables_background() {
    check("round_xtal_fudge", "", &[RotX, NA, NCells, Distance]);
    // rot_x moves a*, b*, c* (the Gaussian's r² depends on them)
    check("gauss_xtal_fudge", "", &[RotX, NCells, Lambda]);
    check("tophat_spots_fudge", "", &[NCells, Distance]);
    check("point_pixel_pixel0172", "", &[Distance, BeamY, RotZ]);
    check("dispersion_divergence", "", &[Lambda, RotX, Distance]);
    check("phi_osc_phisteps_triclinic", "", &[RotZ, CellBeta]);
    check("hkl_interpolate_explicit", "", &[RotX, CellA, NCells]);
    check("water_background", "", &[Scale, Fluence, RotX]);
}

/// The host's forms of the term-moving parameters (`gpu::layout::TermForm`): rotations and
/// the wavelength contracted on the right (once per sub-pixel and source), the cell on the left
/// (once per pixel), the mosaic spread per term (its term tangents the only block uploaded);
/// and all of them asked together, against the CPU f64 tangents.
#[test]
fn contracted_and_per_term_parameters_together() {
    use nanobragg::gpu::layout::{self, TermForm};
    let case = "mosaic_domains_seed_noise";
    let params = [Mosaic, RotY, CellA, CellGamma, Lambda, RotZ];
    let prep = prepare(case, "");
    let (moved, t) =
        nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &[])
            .unwrap();
    let first = layout::first_sequence_pixel(&moved.plan) != layout::NO_PIXEL;
    let forms: Vec<&str> = t
        .deltas
        .iter()
        .map(|d| match layout::term_form(&moved.plan, d, first) {
            TermForm::Right(_) => "right",
            TermForm::Left(_) => "left",
            TermForm::Generic => "generic",
        })
        .collect();
    assert_eq!(
        forms,
        ["generic", "right", "left", "left", "right", "right"],
        "{case}: {params:?}"
    );
    let which: Vec<usize> = (0..params.len()).collect();
    let (tp, blocks) = layout::pack_tangent(&moved.plan, &t, &which, first);
    assert_eq!(
        blocks.len(),
        tp.block as usize,
        "{case}: one block of term tangents"
    );
    check(case, "", &params);
}

/// The tangent kernel's image is the image kernel's (same chain, same terms, same order) to
/// within [`IMAGE_TOL`] of the image's peak, and the parameters split into passes give the
/// tangents of one pass (bit for bit: one shader module, one pipeline).
///
/// Bit-identity of the two kernels' images is not asserted: they are two shader modules, and a
/// driver may contract `a * b + c` into an fma differently in each (NVIDIA's Vulkan compiler
/// does: on an H100 about 15 % of the pixels of `triclinic_misset_xybeam` differ in their last
/// bits; on lavapipe all are identical). The df64 sums are protected from contraction
/// (`df_bar`); what changes is the rounding of the f32 term values and first-value factors,
/// a few ulp of each. The bound [`IMAGE_TOL`] (1e-6 of the peak, ≈ 16 f32 ulp of the peak's
/// value) holds those; a real departure from the image kernel (a term missed or counted twice,
/// another first-value factor) moves pixels by far more (the f32 images differ from the f64
/// kernel's by ~2e-6 of the peak, `check` allows 1e-4). The worst difference and the count of
/// bit-identical pixels are printed.
#[test]
fn image_is_the_image_kernels_and_passes_agree() {
    let (d, q) = gpu_support::device();
    let mut r = pollster::block_on(GpuRenderer::new_with_device(d, q)).unwrap();
    for (case, params) in [
        ("triclinic_misset_xybeam", &[RotX, Distance, NCells][..]),
        ("hkl_interpolate_explicit", &[RotY, CellA][..]),
        ("detector_thickness_layers", &[DetRotY, BeamX][..]),
    ] {
        let prep = prepare(case, "");
        let (moved, t) =
            nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, params, &[])
                .unwrap();
        let image = r.render_blocking(&moved.plan).unwrap();
        let one = r.render_tangents_blocking(&moved.plan, &t).unwrap();
        assert_eq!(one.passes, 1);
        let same = image
            .iter()
            .zip(&one.image)
            .filter(|(a, b)| a.to_bits() == b.to_bits())
            .count();
        let peak = image.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
        assert!(peak > 0.0, "{case}: empty image");
        let (worst_i, worst) = image
            .iter()
            .zip(&one.image)
            .map(|(a, b)| (*a as f64 - *b as f64).abs())
            .enumerate()
            .fold((0, 0f64), |m, (i, d)| if d > m.1 { (i, d) } else { m });
        let ulp = |v: f32| (f32::from_bits(v.abs().to_bits() + 1) - v.abs()) as f64;
        let msg = format!(
            "{case}: tangent kernel's image against the image kernel's: {same} of {} pixels \
             bit-identical, worst |diff| {worst:.3e} = {:.2e} of the peak {peak:.4e} ({:.1} ulp \
             of pixel {worst_i}, value {:.6e})",
            image.len(),
            worst / peak,
            worst / ulp(image[worst_i]),
            image[worst_i]
        );
        println!("{msg}");
        assert!(
            worst <= IMAGE_TOL * peak,
            "{msg}: more than {IMAGE_TOL:e} of the peak"
        );
        r.set_tangent_params_per_pass(Some(1));
        let split = r.render_tangents_blocking(&moved.plan, &t).unwrap();
        r.set_tangent_params_per_pass(None);
        assert_eq!(split.passes, params.len());
        assert_eq!(split.image, one.image, "{case}");
        assert_eq!(split.tangents, one.tangents, "{case}: passes");
    }
}

/// Every read-back strategy (`gpu::readback`, `NANOBRAGG_GPU_READBACK`) gives the bits of
/// `plain`: the image, the tangent planes (f32, and widened to f64 as `api` reads them), the
/// parameters split into passes (each pass's planes read into their place). 256² with two
/// parameters: 3 planes of 65 536 values, enough for the copies to split over threads; 7
/// chunks do not fall on plane boundaries.
#[test]
fn readback_strategies_give_the_same_bits() {
    use nanobragg::gpu::readback::Readback;
    let (d, q) = gpu_support::device();
    let mut r = pollster::block_on(GpuRenderer::new_with_device(d, q)).unwrap();
    let words = api::split_args(
        "-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 -detpixels 256",
    );
    let prep = api::prepare(&words, &DiskFiles).unwrap();
    let (moved, t) = nanobragg::resolve::tangent::plan_tangent_at(
        &prep.setup,
        &DiskFiles,
        &[RotX, Distance],
        &[],
    )
    .unwrap();
    let plan = &moved.plan;
    r.set_readback(Readback::parse("plain").unwrap());
    let image = r.render_blocking(plan).unwrap();
    let tan = r.render_tangents_blocking(plan, &t).unwrap();
    assert!(image.iter().any(|&v| v > 0.0) && tan.tangents.iter().any(|&v| v != 0.0));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let wide: Vec<u64> = tan.tangents.iter().map(|&v| (v as f64).to_bits()).collect();
    for mode in ["parallel", "chunked:7", "chunked:2+huge", "parallel+huge"] {
        let m = Readback::parse(mode).unwrap();
        assert_eq!(m.to_string(), mode);
        r.set_readback(m);
        assert_eq!(
            bits(&r.render_blocking(plan).unwrap()),
            bits(&image),
            "{mode}: image"
        );
        let f = r.render_tangents_blocking(plan, &t).unwrap();
        assert_eq!(
            bits(&f.image),
            bits(&tan.image),
            "{mode}: tangent pass image"
        );
        assert_eq!(bits(&f.tangents), bits(&tan.tangents), "{mode}: tangents");
        r.set_tangent_params_per_pass(Some(1));
        let w = r.render_tangents_f64_blocking(plan, &t).unwrap();
        r.set_tangent_params_per_pass(None);
        assert_eq!(w.passes, 2);
        assert_eq!(bits(&w.image), bits(&tan.image), "{mode}: f64 image");
        let got: Vec<u64> = w.tangents.iter().map(|v| v.to_bits()).collect();
        assert!(
            got == wide,
            "{mode}: tangents widened to f64, in two passes"
        );
    }
    for bad in ["fast", "chunked:1", "chunked:65", "parallel+", ""] {
        let e = Readback::parse(bad).unwrap_err();
        assert!(
            e.message.contains("NANOBRAGG_GPU_READBACK") && e.message.contains("chunked:N"),
            "{bad}: {}",
            e.message
        );
    }
}

/// The vector–Jacobian product, reduced on the GPU (`shaders/reduce.wgsl`: f32 partial sums per
/// workgroup, added in f64 on the host), against the CPU f64 one, within [`TOL`] of Σ|w·t|; the
/// exact-Bragg pixels (`precision_cubic300_N50`) from the f64 tangent kernel, as for the
/// tangent images.
#[test]
fn vjp_matches_the_cpu() {
    for (case, params) in [
        (
            "triclinic_misset_xybeam",
            &[RotX, CellB, Distance, Scale][..],
        ),
        ("hkl_interpolate_explicit", &[RotZ, NCells][..]),
        ("precision_cubic300_N50", &[RotX, NCells][..]),
    ] {
        let prep = prepare(case, "");
        let n = prep.plan().pixel_count();
        let w: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
            .collect();
        let cancel = AtomicBool::new(false);
        let (img, g, engine) = with_renderer(|r| {
            r.vjp(
                &prep,
                &DiskFiles,
                params,
                &[],
                &w,
                Backend::Gpu,
                Precision::F32,
                &cancel,
            )
        })
        .unwrap();
        assert_eq!(engine, Engine::Gpu);
        assert_eq!(img.len(), n);
        let (_, want) = api::vjp(&prep, &DiskFiles, params, &w, &cancel).unwrap();
        let cpu = api::render_gradients(&prep, &DiskFiles, params, &|_| {}, &cancel).unwrap();
        for (j, p) in params.iter().enumerate() {
            // relative to Σ|w·t|, the size of the terms summed
            let scale: f64 = cpu
                .tangent(j)
                .iter()
                .zip(&w)
                .map(|(t, w)| (t * w).abs())
                .sum();
            let err = (g[j] - want[j]).abs() / scale;
            println!(
                "{case:34} vjp {:11} {:.6e} vs {:.6e} ({err:.1e})",
                p.name(),
                g[j],
                want[j]
            );
            assert!(
                err < TOL,
                "{case} vjp {}: {} vs {}",
                p.name(),
                g[j],
                want[j]
            );
        }
    }
}

/// The GPU's reduction is deterministic (the same bits on a second run) and the parameters
/// split into passes reduce to the same sums as one pass (each parameter's plane is reduced
/// alone); it equals the f64 sum of the read-back tangent images × weights within f32 rounding.
#[test]
fn vjp_reduction_is_deterministic_and_passes_agree() {
    let (d, q) = gpu_support::device();
    let mut r = pollster::block_on(GpuRenderer::new_with_device(d, q)).unwrap();
    let case = "triclinic_misset_xybeam";
    let params = [RotX, CellA, Distance];
    let prep = prepare(case, "");
    let (moved, t) =
        nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &[])
            .unwrap();
    let n = moved.plan.pixel_count();
    let w: Vec<f64> = (0..n).map(|i| ((i * 31) % 17) as f64 / 8.0 - 1.0).collect();
    let a = r.render_vjp_blocking(&moved.plan, &t, &w).unwrap();
    let b = r.render_vjp_blocking(&moved.plan, &t, &w).unwrap();
    assert_eq!(a, b, "{case}: a second run");
    // new weights into the kept weights buffer: the negated weights give the negated sums
    let neg: Vec<f64> = w.iter().map(|x| -x).collect();
    let c = r.render_vjp_blocking(&moved.plan, &t, &neg).unwrap();
    let negated: Vec<f64> = a.sums.iter().map(|x| -x).collect();
    assert_eq!(c.sums, negated, "{case}: new weights");
    r.set_tangent_params_per_pass(Some(1));
    let split = r.render_vjp_blocking(&moved.plan, &t, &w).unwrap();
    r.set_tangent_params_per_pass(None);
    assert_eq!(split.passes, params.len());
    assert_eq!(
        (&split.image, &split.sums),
        (&a.image, &a.sums),
        "{case}: passes"
    );
    let full = r.render_tangents_blocking(&moved.plan, &t).unwrap();
    assert_eq!(full.image, a.image, "{case}: image");
    assert!(
        r.exact_fixup().pixels.is_empty(),
        "{case}: no exact-Bragg pixel"
    );
    for (j, p) in params.iter().enumerate() {
        let plane = &full.tangents[j * n..(j + 1) * n];
        let want: f64 = plane.iter().zip(&w).map(|(t, w)| *t as f64 * w).sum();
        let scale: f64 = plane
            .iter()
            .zip(&w)
            .map(|(t, w)| (*t as f64 * w).abs())
            .sum();
        let err = (a.sums[j] - want).abs() / scale;
        println!(
            "{case} reduction {:9} {:.6e} vs {want:.6e} ({err:.1e})",
            p.name(),
            a.sums[j]
        );
        assert!(err < 1e-6, "{case} {}: {} vs {want}", p.name(), a.sums[j]);
    }
}

/// What the tangent kernel does not follow is refused on the GPU with the CPU's error; an
/// unknown or inapplicable parameter too; the weights' length is checked.
#[test]
fn refused_as_on_the_cpu() {
    let cancel = AtomicBool::new(false);
    for (case, extra, params) in [
        ("curved_det_nopolar", "", &[RotX][..]),
        ("oversample_thick_polar_omega", "", &[Distance][..]),
        ("triclinic_misset_xybeam", "", &[Mosaic][..]),
    ] {
        let prep = prepare(case, extra);
        let want = api::render_gradients(&prep, &DiskFiles, params, &|_| {}, &cancel)
            .expect_err("the CPU refuses");
        let got = with_renderer(|r| {
            r.render_gradients(
                &prep,
                &DiskFiles,
                params,
                &[],
                Backend::Gpu,
                Precision::F32,
                &|_| {},
                &cancel,
            )
        })
        .expect_err("the GPU refuses");
        assert_eq!(
            (&got.message, &got.flag, got.kind),
            (&want.message, &want.flag, want.kind),
            "{case}"
        );
    }
    let prep = prepare("triclinic_misset_xybeam", "");
    let e = with_renderer(|r| {
        r.vjp(
            &prep,
            &DiskFiles,
            &[RotX],
            &[],
            &[1.0; 3],
            Backend::Gpu,
            Precision::F32,
            &cancel,
        )
    })
    .unwrap_err();
    assert!(
        e.message.starts_with("weights: expected 65536 values"),
        "{}",
        e.message
    );
}

/// `-backend gpu -gradients LIST -gradfile PREFIX`: the GPU's tangent images and its image,
/// as the library gives them.
#[test]
fn cli_follows_the_backend() {
    use gpu_support::common;
    let case = "mosflm_detrot_xyz_close_distance";
    let dir = common::scratch("gpu_gradients_cli");
    common::copy_dir(&golden_dir(case), &dir);
    let mut words = common::case_words(&dir);
    words.extend(api::split_args(
        "-backend gpu -gradients det_rotx,rot_z -gradfile g",
    ));
    let run = common::run_cli(&dir, &words);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let prep = prepare(case, "");
    let cancel = AtomicBool::new(false);
    let g = with_renderer(|r| {
        r.render_gradients(
            &prep,
            &DiskFiles,
            &[DetRotX, RotZ],
            &[],
            Backend::Gpu,
            Precision::F64,
            &|_| {},
            &cancel,
        )
    })
    .unwrap()
    .gradients;
    for (i, name) in ["det_rotx", "rot_z"].iter().enumerate() {
        let file = common::read_f32(&dir.join(format!("g_{name}.bin")));
        let want: Vec<f32> = g.tangent(i).iter().map(|&v| v as f32).collect();
        assert_eq!(file, want, "{name}");
    }
    assert_eq!(common::read_f32(&dir.join("ours_float.bin")), g.image);
}

/// Pixels under the exact-Bragg rule (a symmetric set-up: a 300 Å cube, N = 50) take their
/// value and tangents from the f64 tangent kernel (rounded to the f32 planes), as images take
/// theirs from the f64 kernel.
#[test]
fn exact_bragg_pixels_from_the_f64_kernel() {
    let case = "precision_cubic300_N50";
    let params = [RotX, NCells];
    let prep = prepare(case, "");
    let (moved, t) =
        nanobragg::resolve::tangent::plan_tangent_at(&prep.setup, &DiskFiles, &params, &[])
            .unwrap();
    let (d, q) = gpu_support::device();
    let mut r = pollster::block_on(GpuRenderer::new_with_device(d, q)).unwrap();
    r.render_tangents_blocking(&moved.plan, &t).unwrap();
    let flagged = r.exact_fixup().pixels.clone();
    assert!(!flagged.is_empty(), "{case}: no exact-Bragg pixel flagged");
    let cancel = AtomicBool::new(false);
    let g = with_renderer(|r| {
        r.render_gradients(
            &prep,
            &DiskFiles,
            &params,
            &[],
            Backend::Gpu,
            Precision::F32,
            &|_| {},
            &cancel,
        )
    })
    .unwrap()
    .gradients;
    let cpu = api::render_gradients(&prep, &DiskFiles, &params, &|_| {}, &cancel).unwrap();
    for &i in &flagged {
        assert_eq!(
            g.image[i].to_bits(),
            cpu.image[i].to_bits(),
            "{case} pixel {i}"
        );
        // the GPU's planes are f32: the f64 kernel's tangents rounded
        for j in 0..params.len() {
            assert_eq!(
                g.tangent_f32(j)[i].to_bits(),
                (cpu.tangent(j)[i] as f32).to_bits(),
                "{case} pixel {i}"
            );
        }
    }
    println!(
        "{case}: {} pixels from the f64 tangent kernel",
        flagged.len()
    );
}

/// The Python face's `Session` honours `-backend`: with `-backend gpu` its gradients and VJP
/// come from the GPU's tangent kernel (engine `Gpu`), within [`TOL`] of the CPU f64 tangents on
/// the pixels with signal; with `-backend cpu` they are the f64 tangent kernel's, bit for bit.
#[test]
fn session_gradients_and_vjp_follow_the_backend() {
    use nanobragg::session::{CachedFiles, Session};
    // fail (or skip) here with the harness's message when there is no adapter
    let _ = gpu_support::device();
    let base = "-default_F 100 -cell 70 80 90 75 85 95 -misset 15 25 35 -N 5 -lambda 1.2 \
                -distance 120 -pixel 0.4 -detpixels 48 -Xbeam 12.5 -Ybeam 14.0";
    let params = [RotX, CellA, Distance, NCells, Scale];
    let offsets = [(RotY, 1e-3)];
    let cancel = AtomicBool::new(false);
    let session = |backend: &str| {
        let words = api::split_args(&format!("{base} -backend {backend}"));
        Session::new(words, CachedFiles::default()).unwrap()
    };
    let mut cpu_s = session("cpu");
    let cpu = cpu_s.gradients(&[], &params, &offsets, &cancel).unwrap();
    assert_eq!(cpu.engine, Engine::Cpu);
    let prep = cpu_s.prepared().clone();
    let want =
        api::render_gradients_at(&prep, &DiskFiles, &params, &offsets, &|_| {}, &cancel).unwrap();
    assert_eq!(cpu.gradients.image_f64, want.image_f64);
    assert_eq!(cpu.gradients.tangents, want.tangents);

    let mut gpu_s = session("gpu");
    let gpu = gpu_s
        .gradients(&[], &params, &offsets, &cancel)
        .unwrap_or_else(|e| panic!("Session -backend gpu: {}", e.message));
    assert_eq!(gpu.engine, Engine::Gpu, "{:?}", gpu.notices);
    assert!(gpu_s.gpu_adapter().is_some());
    let (g, c) = (&gpu.gradients, &want);
    let peak = c.image_f64.iter().fold(0f64, |m, v| m.max(v.abs()));
    let signal: Vec<usize> = (0..c.image_f64.len())
        .filter(|&i| c.image_f64[i] >= 1e-3 * peak)
        .collect();
    assert!(signal.len() > 50, "{} pixels with signal", signal.len());
    for (j, p) in params.iter().enumerate() {
        let (a, b) = (g.tangent(j), c.tangent(j));
        let tmax = b.iter().fold(0f64, |m, v| m.max(v.abs()));
        let worst = signal
            .iter()
            .map(|&i| (a[i] - b[i]).abs() / tmax)
            .fold(0f64, f64::max);
        println!("session gpu {:11} worst={worst:.2e}", p.name());
        assert!(tmax > 0.0 && worst <= TOL, "{}: {worst:.2e}", p.name());
        assert_ne!(
            a,
            b,
            "{}: the GPU's f32 tangents are not the CPU's",
            p.name()
        );
    }
    // the VJP on the GPU against the CPU's
    let n = 48 * 48;
    let w: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
        .collect();
    let v = gpu_s.vjp(&[], &params, &offsets, &w, &cancel).unwrap();
    assert_eq!(v.engine, Engine::Gpu);
    assert!(v.notices.is_empty(), "{:?}", v.notices);
    let vc = cpu_s.vjp(&[], &params, &offsets, &w, &cancel).unwrap();
    assert_eq!(vc.engine, Engine::Cpu);
    for j in 0..params.len() {
        let scale: f64 = c
            .tangent(j)
            .iter()
            .zip(&w)
            .map(|(t, w)| (t * w).abs())
            .sum();
        let err = (v.products[j] - vc.products[j]).abs() / scale;
        assert!(err < TOL, "vjp {}: {err:.1e}", params[j].name());
    }
}
