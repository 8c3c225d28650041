//! The driver: cached pipeline and buffers (warm renders create nothing), chunked dispatch with
//! progress and cancel, known-answer values from upstream (MODEL §7.13), a double-float stress
//! case against the f64 CPU kernel, errors the caller can act on.
#![cfg(feature = "gpu")]

mod gpu_support;

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
    let img = r.render_blocking(&plan(CASE_A)).expect("render");
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
    let a = split.render_blocking(&p).unwrap();
    let b = gpu_support::renderer().render_blocking(&p).unwrap();
    assert!(gpu_support::max_rel_to_peak(&a, &b) < 1e-6);
    let stress = plan(STRESS);
    let a = split.render_blocking(&stress).unwrap();
    let cpu = api::render_cpu(&stress, Precision::F64, &|_| {}, &AtomicBool::new(false)).unwrap();
    assert!(gpu_support::max_rel_to_peak(&a, &cpu) < 1e-3);
}

#[test]
fn warm_render_creates_no_pipeline_buffer_or_bind_group() {
    let mut r = gpu_support::renderer();
    let p = plan(CASE_A);
    let first = r.render_blocking(&p).unwrap();
    assert!(r.timings().cold);
    let cold = r.stats();
    assert_eq!(cold.pipelines_created, 1);
    let again = r.render_blocking(&p).unwrap();
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
    let moved = r.render_blocking(&p2).unwrap();
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
    r.render_blocking(&plan(&format!("{CASE_A} -detpixels 80")))
        .unwrap();
    assert!(r.timings().cold);
    assert!(r.stats().buffers_created > cold.buffers_created);
    assert_eq!(r.stats().pipelines_created, 1);
}

#[test]
fn chunked_render_reports_progress_and_matches_single_chunk() {
    let mut r = gpu_support::renderer();
    let p = plan(CASE_A);
    let whole = r.render_blocking(&p).unwrap();
    assert_eq!(r.timings().chunks, 1);
    // 64 px per row, 4 oversampled terms per pixel: a budget of 1000 terms gives 3-row chunks.
    r.set_chunk_budget(1000);
    let mut seen = Vec::new();
    let cancel = AtomicBool::new(false);
    let chunked = r
        .render_blocking_with(&p, &mut |f| seen.push(f), &cancel)
        .unwrap();
    assert_eq!(whole, chunked);
    assert_eq!(r.timings().chunks, 22);
    assert_eq!(seen.len(), 22);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]) && *seen.last().unwrap() == 1.0,
        "{seen:?}"
    );
    // Less than one row per submission: tiles of 25 pixels (100 terms) within rows.
    r.set_chunk_budget(100);
    let tiled = r.render_blocking(&p).unwrap();
    assert_eq!(whole, tiled);
    assert_eq!(r.timings().chunks, 64 * 3);
}

#[test]
fn cancel_between_chunks() {
    let mut r = gpu_support::renderer();
    r.set_chunk_budget(1000);
    let cancel = AtomicBool::new(false);
    let mut calls = 0;
    let err = r
        .render_blocking_with(
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
    r.render_blocking(&plan(CASE_A)).unwrap();
}

#[test]
fn double_float_chain_holds_on_a_stress_case() {
    // MODEL §9.8: large cell, short wavelength, N = 1000, fine sampling: plain f32 Miller
    // indices fail visibly here; the df64 chain must track the f64 CPU kernel.
    let p = plan(STRESS);
    let mut r = gpu_support::renderer();
    let gpu = r.render_blocking(&p).unwrap();
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
    let err = r.render_blocking(&p).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Gpu, "{}", err.message);
    assert!(err.message.contains("HKL"), "{}", err.message);
}

#[test]
fn lost_device_is_a_gpu_error() {
    let mut r = gpu_support::renderer();
    r.render_blocking(&plan(CASE_A)).unwrap();
    r.device().destroy();
    let err = r.render_blocking(&plan(CASE_A)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Gpu, "{}", err.message);
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
    let img = r.render_blocking(&p).unwrap();
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
    let gpu = r.render_blocking(&p).unwrap();
    let cpu = cpu64(&p);
    for (i, m) in mask.iter().enumerate() {
        if *m == 0 {
            assert_eq!(gpu[i], 0.0, "masked pixel {i}");
        }
    }
    assert!(gpu_support::max_rel_to_peak(&gpu, &cpu) < 1e-5);
    // Same shapes without the mask: the stale mask words must not leak into the next render.
    p.mask = None;
    let unmasked = r.render_blocking(&p).unwrap();
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
    let gpu = r.render_blocking(&p).unwrap();
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
        r.render_blocking(&q).unwrap()
    };
    assert!(
        gpu_support::max_rel_to_peak(&nearest, &cpu) > 1e-3,
        "nearest-only image should differ"
    );
}
