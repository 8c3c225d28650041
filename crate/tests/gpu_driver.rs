//! The driver: cached pipeline and buffers (warm renders create nothing), chunked dispatch with
//! progress and cancel, known-answer values from upstream (MODEL §7.13), a double-float stress
//! case against the f64 CPU kernel, errors the caller can act on.
#![cfg(feature = "gpu")]

mod gpu_support;
use gpu_support::RenderExact;

use nanobragg::api::{self, Precision};
use nanobragg::error::ErrorKind;
use nanobragg::files::DiskFiles;
use nanobragg::plan::Plan;
use std::sync::atomic::{AtomicBool, Ordering};

fn plan(args: &str) -> Plan {
    api::prepare(&api::split_args(args), &DiskFiles)
        .expect("prepare")
        .plan()
        .clone()
}

const STRESS: &str = "-cell 300 300 300 90 90 90 -misset 10 20 30 -default_F 100 -N 1000 \
    -lambda 0.5 -distance 200 -pixel 0.05 -detpixels 48 -Xbeam 3 -Ybeam 3 -oversample 3";

const CASE_A: &str =
    "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 64 -distance 100 -lambda 1";

#[test]
fn known_answers_of_upstream_case_a() {
    // MODEL §7.13 case A (upstream C, verified): pixel values and the float sum.
    let mut r = gpu_support::renderer();
    let img = r.render_exact(&plan(CASE_A)).expect("render");
    let at = |f: usize, s: usize| img[s * 64 + f] as f64;
    for (got, want) in [
        (at(0, 0), 0.0660733581),
        (at(10, 20), 0.185374573),
        (at(33, 33), 97.2806091),
    ] {
        assert!(
            ((got - want) / want).abs() < 2e-6,
            "pixel {got} vs upstream {want}"
        );
    }
    let sum = gpu_support::sum(&img);
    assert!(((sum - 25194.0184) / 25194.0184).abs() < 1e-6, "sum {sum}");
}

#[test]
fn dekker_split_fallback_renders_the_same_image() {
    // Devices whose `fma` is not fused get Dekker's split in two_prod: force it here.
    let (d, q) = gpu_support::device();
    let mut split = pollster::block_on(nanobragg::gpu::GpuRenderer::new_with_device_and_fma(
        d,
        q,
        Some(false),
    ))
    .unwrap();
    assert!(!split.fma_fused());
    let p = plan(CASE_A);
    let a = split.render_exact(&p).unwrap();
    let b = gpu_support::renderer().render_exact(&p).unwrap();
    assert!(gpu_support::max_rel_to_peak(&a, &b) < 1e-6);
    let stress = plan(STRESS);
    let a = split.render_exact(&stress).unwrap();
    let cpu = api::render_cpu(&stress, Precision::F64, &|_| {}, &AtomicBool::new(false)).unwrap();
    assert!(gpu_support::max_rel_to_peak(&a, &cpu) < 1e-3);
}

#[test]
fn warm_render_creates_no_pipeline_buffer_or_bind_group() {
    let mut r = gpu_support::renderer();
    let p = plan(CASE_A);
    let first = r.render_exact(&p).unwrap();
    assert!(r.timings().cold);
    let cold = r.stats();
    assert_eq!(cold.pipelines_created, 1);
    let again = r.render_exact(&p).unwrap();
    assert_eq!(first, again, "same plan, same image");
    let warm = r.stats();
    assert!(!r.timings().cold);
    assert_eq!(
        (
            warm.pipelines_created,
            warm.buffers_created,
            warm.bind_groups_created
        ),
        (
            cold.pipelines_created,
            cold.buffers_created,
            cold.bind_groups_created
        ),
        "warm render created GPU objects"
    );
    // Only the flag words are written when nothing changed.
    assert!(
        warm.last_upload_bytes <= 16,
        "uploaded {} bytes on an unchanged plan",
        warm.last_upload_bytes
    );
    // A changed scalar (distance) with the same shapes: still no creation, only params uploaded.
    let p2 = plan(&format!("{CASE_A} -distance 90"));
    let moved = r.render_exact(&p2).unwrap();
    assert_ne!(moved, first);
    let s = r.stats();
    assert_eq!(
        (
            s.pipelines_created,
            s.buffers_created,
            s.bind_groups_created
        ),
        (
            cold.pipelines_created,
            cold.buffers_created,
            cold.bind_groups_created
        )
    );
    assert!(
        s.last_upload_bytes < 1024,
        "uploaded {} bytes for a scalar change",
        s.last_upload_bytes
    );
    // A new detector size changes shapes: buffers are recreated once.
    r.render_exact(&plan(&format!("{CASE_A} -detpixels 80")))
        .unwrap();
    assert!(r.timings().cold);
    assert!(r.stats().buffers_created > cold.buffers_created);
    assert_eq!(r.stats().pipelines_created, 1);
}

#[test]
fn chunked_render_reports_progress_and_matches_single_chunk() {
    let mut r = gpu_support::renderer();
    let p = plan(CASE_A);
    let whole = r.render_exact(&p).unwrap();
    assert_eq!(r.timings().chunks, 1);
    // 64 px per row, 4 oversampled terms per pixel: a budget of 1000 terms gives 3-row chunks.
    r.set_chunk_budget(1000);
    let mut seen = Vec::new();
    let cancel = AtomicBool::new(false);
    let chunked = r
        .render_exact_with(&p, &mut |f| seen.push(f), &cancel)
        .unwrap();
    assert_eq!(whole, chunked);
    assert_eq!(r.timings().chunks, 22);
    assert_eq!(seen.len(), 22);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]) && *seen.last().unwrap() == 1.0,
        "{seen:?}"
    );
    // Less than one row per submission: pieces a whole number of workgroups (8 pixels) wide,
    // in bands of as many rows as the budget holds such pieces of. 100 terms = 25 pixels: 21
    // bands of 3 rows × 8 columns (8 pieces each), then the last row in pieces of 24 columns.
    r.set_chunk_budget(100);
    let tiled = r.render_exact(&p).unwrap();
    assert_eq!(whole, tiled);
    assert_eq!(r.timings().chunks, 21 * 8 + 3);
}

#[test]
fn cancel_between_chunks() {
    let mut r = gpu_support::renderer();
    r.set_chunk_budget(1000);
    let cancel = AtomicBool::new(false);
    let mut calls = 0;
    let err = r
        .render_exact_with(
            &plan(CASE_A),
            &mut |_| {
                calls += 1;
                if calls == 3 {
                    cancel.store(true, Ordering::Relaxed);
                }
            },
            &cancel,
        )
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert_eq!(calls, 3);
    // The renderer stays usable.
    cancel.store(false, Ordering::Relaxed);
    r.render_exact(&plan(CASE_A)).unwrap();
}

#[test]
fn double_float_chain_holds_on_a_stress_case() {
    // MODEL §9.8: large cell, short wavelength, N = 1000, fine sampling: plain f32 Miller
    // indices fail visibly here; the df64 chain must track the f64 CPU kernel.
    let p = plan(STRESS);
    let mut r = gpu_support::renderer();
    let gpu = r.render_exact(&p).unwrap();
    let cpu = api::render_cpu(&p, Precision::F64, &|_| {}, &AtomicBool::new(false)).unwrap();
    let corr = gpu_support::pearson(&gpu, &cpu);
    let rel = gpu_support::max_rel_to_peak(&gpu, &cpu);
    let ratio = gpu_support::sum(&gpu) / gpu_support::sum(&cpu);
    eprintln!("stress: corr {corr}, max diff/peak {rel:e}, sum ratio {ratio}");
    assert!(
        corr > 0.99999 && rel < 1e-3 && (ratio - 1.0).abs() < 1e-4,
        "corr {corr} rel {rel} ratio {ratio}"
    );
}

#[test]
fn oversized_hkl_table_is_a_gpu_error() {
    let mut p = plan(CASE_A);
    let mut r = gpu_support::renderer();
    let limit = r.device().limits().max_storage_buffer_binding_size;
    // A table just over the limit (not allocated: the check happens before packing).
    let n = (limit / 4 + 1) as usize;
    let side = (n as f64).cbrt().ceil() as i32;
    p.hkl = nanobragg::plan::HklGrid {
        h_min: 0,
        h_max: side - 2,
        k_min: 0,
        k_max: side - 2,
        l_min: 0,
        l_max: side - 2,
        hkls: 1,
        data: Vec::new(),
    };
    let err = r.render_exact(&p).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Gpu, "{}", err.message);
    assert!(err.message.contains("HKL"), "{}", err.message);
}

#[test]
fn lost_device_is_a_gpu_error() {
    let mut r = gpu_support::renderer();
    r.render_exact(&plan(CASE_A)).unwrap();
    r.device().destroy();
    let err = r.render_exact(&plan(CASE_A)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Gpu, "{}", err.message);
}

/// A mistyped `NANOBRAGG_GPU_READBACK` is an error naming it, also under `-backend auto`, whose
/// policy falls back to the CPU when the GPU fails (the setting is the user's, not the GPU's).
#[test]
fn bad_readback_setting_is_an_error_with_the_auto_backend() {
    let dir = std::env::temp_dir();
    for backend in ["auto", "gpu"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .env("NANOBRAGG_GPU_READBACK", "paralel")
            .args(CASE_A.split_whitespace())
            .args(["-detpixels", "16", "-precision", "f32", "-backend", backend])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "-backend {backend}: {stderr}");
        assert!(
            stderr.contains("NANOBRAGG_GPU_READBACK=paralel"),
            "-backend {backend}: {stderr}"
        );
    }
}

fn cpu64(p: &Plan) -> Vec<f32> {
    api::render_cpu(p, Precision::F64, &|_| {}, &AtomicBool::new(false)).unwrap()
}

#[test]
fn stale_phi_first_sequence_matches_upstream_case_c() {
    // MODEL §7.13 case C: -phi 0 with a sweep, mosaic domains; pixel (0,0) holds the run's first
    // phi sequence (unrotated vectors), every other pixel the steady-state table.
    let p = plan(
        "-cell 70 80 90 75 85 95 -default_F 100 -N 5 -detpixels 64 -distance 100 -lambda 1 \
                  -mosaic 0.5 -mosaic_dom 3 -phi 0 -osc 1 -phisteps 3 -oversample 1 -seed 1",
    );
    assert_ne!(
        p.orientations, p.orientations_first,
        "case C must exercise the first sequence"
    );
    let mut r = gpu_support::renderer();
    let img = r.render_exact(&p).unwrap();
    for (got, want) in [
        (img[0] as f64, 0.24340266),
        (img[32 * 64 + 32] as f64, 124.179947),
    ] {
        assert!(
            ((got - want) / want).abs() < 2e-6,
            "pixel {got} vs upstream {want}"
        );
    }
    let sum = gpu_support::sum(&img);
    assert!(
        ((sum - 8741.525884) / 8741.525884).abs() < 1e-6,
        "sum {sum}"
    );
}

#[test]
fn mask_skips_pixels_like_the_cpu() {
    let mut p = plan(CASE_A);
    let mask: Vec<u8> = (0..p.pixel_count())
        .map(|i| ((i * 7919) % 5 != 0) as u8)
        .collect();
    p.mask = Some(mask.clone());
    let mut r = gpu_support::renderer();
    let gpu = r.render_exact(&p).unwrap();
    let cpu = cpu64(&p);
    for (i, m) in mask.iter().enumerate() {
        if *m == 0 {
            assert_eq!(gpu[i], 0.0, "masked pixel {i}");
        }
    }
    assert!(gpu_support::max_rel_to_peak(&gpu, &cpu) < 1e-5);
    // Same shapes without the mask: the stale mask words must not leak into the next render.
    p.mask = None;
    let unmasked = r.render_exact(&p).unwrap();
    assert!(gpu_support::max_rel_to_peak(&unmasked, &cpu64(&p)) < 1e-5);
}

#[test]
fn tricubic_switch_off_follows_raster_order() {
    // A small HKL grid with forced interpolation: pixels whose stencil leaves the grid switch
    // interpolation off for the rest of the image (MODEL §6.4); the CPU implements the same
    // raster-order rule.
    let mut text = String::new();
    // Wide in h and k; l stops at 2, so the stencil leaves the grid part-way down the image.
    for h in -8i32..=8 {
        for k in -8..=8 {
            for l in -8..=2 {
                text += &format!(
                    "{h} {k} {l} {}\n",
                    50 + (h * 7 + k * 3 + l).rem_euclid(11) * 10
                );
            }
        }
    }
    let files = nanobragg::files::MemFiles([("small.hkl".to_string(), text.into_bytes())].into());
    let words = api::split_args(
        "-hkl small.hkl -interpolate -cell 100 100 100 90 90 90 -N 5 -detpixels 64 -distance 100 -lambda 1 -nonoise -nopgm",
    );
    let p = api::prepare(&words, &files).unwrap().plan().clone();
    let mut r = gpu_support::renderer();
    let gpu = r.render_exact(&p).unwrap();
    let sw = r
        .interpolation_switch_pixel()
        .expect("interpolation must switch off in this case");
    assert!(sw > 0 && sw < p.pixel_count() - 1, "switch pixel {sw}");
    let cpu = cpu64(&p);
    let rel = gpu_support::max_rel_to_peak(&gpu, &cpu);
    eprintln!(
        "switch at pixel {sw} (f={}, s={}); GPU vs CPU f64 max diff/peak {rel:e}",
        sw % 64,
        sw / 64
    );
    assert!(
        rel < 1e-5,
        "GPU vs CPU f64 after the tricubic switch: {rel:e}"
    );
    // The test discriminates: nearest-neighbour look-ups everywhere give a different image.
    let nearest = {
        let mut q = p.clone();
        q.interpolation = nanobragg::plan::Interpolation::Nearest;
        r.render_exact(&q).unwrap()
    };
    assert!(
        gpu_support::max_rel_to_peak(&nearest, &cpu) > 1e-3,
        "nearest-only image should differ"
    );
}

/// The orientation table holding one orientation twice, and the same with the second copy's
/// a-axis NaN (every h of that domain NaN).
fn doubled_and_nan(p: &Plan) -> (Plan, Plan) {
    let mut dup = p.clone();
    let o = dup.orientations[0];
    dup.orientations = vec![o, o];
    dup.orientations_first = dup.orientations.clone();
    dup.mosaic_domains = 2;
    dup.steps *= 2;
    let mut nan = dup.clone();
    nan.orientations[1].a = [f64::NAN, 0.0, 0.0];
    nan.orientations_first = nan.orientations.clone();
    (dup, nan)
}

#[test]
fn nan_miller_index_is_dropped_by_the_gpu_kernel() {
    // Issue 10's case on the GPU: tricubic lookups on a table that does not cover index 0,
    // reached by NaN indices; and nearest lookups on a full table. The NaN domain contributes
    // nothing: the image is half that of two identical domains, and equals the CPU's.
    let far = String::from("5 5 5 50\n8 8 8 50\n");
    let mut full = String::new();
    for h in -6i32..=6 {
        for k in -6..=6 {
            for l in -6..=6 {
                full += &format!("{h} {k} {l} {}\n", 20 + (h * 3 + k - l).rem_euclid(13));
            }
        }
    }
    let files = nanobragg::files::MemFiles(
        [
            ("far.hkl".to_string(), far.into_bytes()),
            ("s.hkl".to_string(), full.into_bytes()),
        ]
        .into(),
    );
    let geo = "-cell 40 40 40 90 90 90 -lambda 1 -distance 30 -Xbeam 0.3 -Ybeam 0.3 -detpixels 24";
    let mut r = gpu_support::renderer();
    for extra in [
        "-hkl far.hkl -N 2 -default_F 3",
        "-hkl s.hkl -N 2",
        "-hkl s.hkl -N 3 -nointerpolate -water 50",
        "-hkl s.hkl -N 3 -round_xtal",
    ] {
        let words = api::split_args(&format!("{geo} {extra}"));
        let p = api::prepare(&words, &files).unwrap().plan().clone();
        let (dup, nan) = doubled_and_nan(&p);
        let a = r.render_exact(&dup).unwrap();
        let b = r.render_exact(&nan).unwrap();
        assert!(b.iter().all(|v| v.is_finite()), "{extra}: non-finite pixel");
        let cpu = cpu64(&nan);
        let rel = gpu_support::max_rel_to_peak(&b, &cpu);
        assert!(rel < 1e-5, "{extra}: GPU vs CPU f64 {rel:e}");
        if !extra.contains("water") {
            let half: Vec<f32> = a.iter().map(|v| v / 2.0).collect();
            let rel = gpu_support::max_rel_to_peak(&b, &half);
            assert!(rel < 1e-6, "{extra}: NaN domain contributed ({rel:e})");
        }
    }
}

#[test]
fn cancel_acts_within_a_long_render_and_progress_moves() {
    // 20000 mosaic domains: 20000 terms per pixel, minutes on lavapipe. Tiles are sized by
    // time, so progress moves early and cancel is seen within one tile.
    let p = plan(
        "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -mosaic 1 -mosaic_dom 20000 -detpixels 128",
    );
    let mut r = gpu_support::renderer();
    let cancel = AtomicBool::new(false);
    let seen = std::sync::atomic::AtomicU32::new(0);
    let t0 = std::time::Instant::now();
    let (res, latency, at, started) = std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            r.render_exact_with(
                &p,
                &mut |f| seen.store(f.to_bits(), Ordering::Relaxed),
                &cancel,
            )
        });
        while f32::from_bits(seen.load(Ordering::Relaxed)) == 0.0 {
            assert!(t0.elapsed().as_secs() < 120, "no progress after 120 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let at = f32::from_bits(seen.load(Ordering::Relaxed));
        let t1 = std::time::Instant::now();
        cancel.store(true, Ordering::Relaxed);
        let res = h.join().unwrap();
        (res, t1.elapsed(), at, t1 - t0)
    });
    eprintln!(
        "GPU: progress {at} after {:.0} ms, render returned {:.1} ms after cancel",
        started.as_secs_f64() * 1e3,
        latency.as_secs_f64() * 1e3
    );
    assert_eq!(res.unwrap_err().kind, ErrorKind::Cancelled);
    assert!(at > 0.0 && at < 1.0);
    // A GPU finishes its tile in about 40 ms; lavapipe (CI) spends 30-50 ms per submission
    // whatever its size, so its tiles aim at 8× that, and tests running beside this one slow
    // it further: a generous bound, the figure is printed.
    assert!(latency.as_secs_f64() < 2.0, "cancel took {latency:?}");
}

/// `auto` never picks a software adapter (the CPU emulating a GPU: lavapipe here) over the CPU
/// kernel, and says so; `gpu` still renders on it. On a hardware GPU `auto` takes the GPU.
#[test]
fn auto_passes_a_software_adapter_over_for_the_cpu() {
    let Some((_, _)) = gpu_support::device_or_skip("auto_passes_a_software_adapter_over") else {
        return;
    };
    let info = pollster::block_on(nanobragg::gpu::request_device())
        .unwrap()
        .2;
    let software = info.device_type == wgpu::DeviceType::Cpu;
    let p = plan(CASE_A);
    let cancel = AtomicBool::new(false);
    let mut r = api::Renderer::new(None);
    let auto = r
        .render(&p, api::Backend::Auto, Precision::F32, &|_| {}, &cancel)
        .unwrap();
    if software {
        assert_eq!(auto.engine, api::Engine::Cpu, "{}", info.name);
        assert_eq!(auto.notices.len(), 1, "{:?}", auto.notices);
        let n = &auto.notices[0];
        assert!(
            n.contains("software renderer") && n.contains(&info.name) && n.contains("-backend gpu"),
            "{n}"
        );
        assert_eq!(r.cpu_fallback_notice(), *n);
        let cpu = api::render_cpu(&p, Precision::F32, &|_| {}, &cancel).unwrap();
        assert_eq!(auto.image, cpu, "auto's CPU image is the f32 CPU kernel's");
    } else {
        assert_eq!(auto.engine, api::Engine::Gpu, "{}", info.name);
        assert!(auto.notices.is_empty(), "{:?}", auto.notices);
    }
    // asked for by name, the adapter renders whatever it is
    let gpu = r
        .render(&p, api::Backend::Gpu, Precision::F32, &|_| {}, &cancel)
        .unwrap();
    assert_eq!(gpu.engine, api::Engine::Gpu);
    assert!(gpu.notices.is_empty(), "{:?}", gpu.notices);
    // the derivatives follow the same rule
    let prep = api::prepare(&api::split_args(CASE_A), &DiskFiles).unwrap();
    let g = r
        .render_gradients(
            &prep,
            &DiskFiles,
            &[nanobragg::tangent::Param::RotX],
            &[],
            api::Backend::Auto,
            Precision::F32,
            &|_| {},
            &cancel,
        )
        .unwrap();
    assert_eq!(g.engine == api::Engine::Cpu, software);
    assert_eq!(
        g.notices.iter().any(|n| n.contains("software renderer")),
        software
    );
}
