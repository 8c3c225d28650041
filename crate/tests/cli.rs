//! CLI behaviour beyond the golden images: clear errors for bad input (naming the flag, file and
//! line), exit statuses, no partial output files, the Fdump cache, -img/-mask ingestion.

mod common;
use common::*;
use std::path::Path;

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

const BASE: &str =
    "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 32 -distance 100 -nonoise -nopgm";

fn run_in(name: &str, args: &str) -> Run {
    let dir = scratch(name);
    run_cli(&dir, &words(args))
}

fn assert_error(r: &Run, status: i32, needle: &str) {
    assert_eq!(r.status, status, "exit status; stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "stderr should mention {needle:?}:\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "panic:\n{}", r.stderr);
    // nothing written on failure
    let files: Vec<_> = std::fs::read_dir(&r.dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    let written: Vec<_> = files
        .iter()
        .filter(|f| {
            !f.to_string_lossy().ends_with(".hkl")
                && !f.to_string_lossy().ends_with(".txt")
                && !f.to_string_lossy().ends_with(".mat")
                && !f.to_string_lossy().ends_with(".img")
        })
        .collect();
    assert!(
        written.is_empty(),
        "files written despite the error: {written:?}"
    );
}

#[test]
fn unknown_flag_is_named() {
    assert_error(
        &run_in("err-unknown", &format!("{BASE} -frobnicate 3")),
        2,
        "unknown flag '-frobnicate'",
    );
}

#[test]
fn unknown_flag_suggests_the_nearest() {
    assert_error(
        &run_in("err-typo", &format!("{BASE} -cel 100 100 100 90 90 90")),
        2,
        "unknown flag '-cel' (did you mean -cell?)",
    );
    assert_error(
        &run_in("err-typo2", &format!("{BASE} -distnace 100")),
        2,
        "unknown flag '-distnace' (did you mean -distance?)",
    );
    let r = run_in("err-notypo", &format!("{BASE} -frobnicate 3"));
    assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
}

#[test]
fn zero_length_axes_are_errors_naming_the_flag() {
    for (flag, rest) in [
        ("-twotheta_axis", " -twotheta 10"),
        ("-spindle_axis", " -phi 10"),
        ("-polar_vector", ""),
        ("-beam_vector", ""),
        ("-fdet_vector", ""),
        ("-sdet_vector", ""),
    ] {
        assert_error(
            &run_in("err-zero-axis", &format!("{BASE} {flag} 0 0 0{rest}")),
            2,
            &format!("{flag}: 0 0 0 has no direction"),
        );
    }
    // a zero two-theta axis read as a (zero) angle by upstream's substring match is still no axis
    assert_error(
        &run_in("err-zero-axis0", &format!("{BASE} -twotheta_axis 0 0 0")),
        2,
        "-twotheta_axis: 0 0 0 has no direction",
    );
}

#[test]
fn missing_and_non_numeric_values_are_named() {
    assert_error(
        &run_in("err-missing", &format!("{BASE} -lambda")),
        2,
        "-lambda: missing value",
    );
    assert_error(
        &run_in("err-nonnum", &format!("{BASE} -distance far")),
        2,
        "-distance: expected a number, found 'far'",
    );
    assert_error(
        &run_in("err-nonint", &format!("{BASE} -detpixels many")),
        2,
        "-detpixels: expected an integer",
    );
}

#[test]
fn missing_inputs_print_usage_and_exit_9() {
    let r = run_in("err-nocell", "-default_F 100 -detpixels 32");
    assert_error(&r, 9, "no crystal");
    assert!(r.stderr.contains("usage: nanobragg"));
    let r = run_in("err-nof", "-cell 100 100 100 90 90 90 -detpixels 32");
    assert_error(&r, 9, "no structure factors");
}

#[test]
fn impossible_geometry_is_rejected() {
    assert_error(
        &run_in("err-lambda0", &format!("{BASE} -lambda 0")),
        2,
        "-lambda: expected a number > 0",
    );
    assert_error(
        &run_in("err-pixel0", &format!("{BASE} -pixel 0")),
        2,
        "-pixel: expected a number > 0",
    );
    assert_error(
        &run_in("err-parallel", &format!("{BASE} -detector_roty 90")),
        1,
        "parallel to the beam",
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn malformed_files_name_file_and_line() {
    let dir = scratch("err-hkl");
    write(&dir, "bad.hkl", "1 2 3 100\n0 0 1 50\n1 x 2 4\n");
    let r = run_cli(&dir, &words(&format!("{BASE} -hkl bad.hkl")));
    assert_error(&r, 1, "bad.hkl line 3");

    let dir = scratch("err-hkl-missing");
    let r = run_cli(&dir, &words(&format!("{BASE} -hkl nothere.hkl")));
    assert_error(&r, 1, "nothere.hkl");

    let dir = scratch("err-mat");
    write(&dir, "A.mat", "0.01 0 0\n0 0.01 0\n");
    let r = run_cli(
        &dir,
        &words("-mat A.mat -default_F 100 -detpixels 32 -nonoise -nopgm"),
    );
    assert_error(&r, 1, "A.mat");

    let dir = scratch("err-src");
    write(&dir, "src.txt", "-10 0 0 1 1e-10\nhello 0 0 1 1e-10\n");
    let r = run_cli(&dir, &words(&format!("{BASE} -sourcefile src.txt")));
    assert_error(&r, 1, "src.txt line 2");

    let dir = scratch("err-smv");
    write(&dir, "mask.img", "not an SMV file at all");
    let r = run_cli(&dir, &words(&format!("{BASE} -mask mask.img")));
    assert_error(&r, 1, "mask.img");
}

#[test]
fn failed_write_leaves_no_partial_file() {
    let dir = scratch("err-write");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    // the int file goes into a folder that does not exist: the outputs are checked before the
    // render, so nothing is written, and no temporary file is left behind
    let r = run_cli(
        &dir,
        &words(&format!(
            "{BASE} -floatfile sub/f.bin -intfile missing/int.img"
        )),
    );
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.stderr.contains("missing/int.img"), "{}", r.stderr);
    assert!(!dir.join("sub/f.bin").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("sub"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn fdump_cache_is_written_and_read_back() {
    let src = golden_dir("hkl_interpolate_explicit");
    let dir = scratch("fdump");
    copy_dir(&src, &dir);
    let w = case_words(&src);
    let r = run_cli(&dir, &w);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(dir.join("Fdump.bin").exists(), "Fdump.bin not written");
    let first = read_f32(&dir.join("ours_float.bin"));
    // the same run without -hkl reads the cache and says so
    let mut w2: Vec<String> = Vec::new();
    let mut i = 0;
    while i < w.len() {
        if w[i] == "-hkl" {
            i += 2;
            continue;
        }
        w2.push(if w[i] == "ours_float.bin" {
            "second.bin".into()
        } else {
            w[i].clone()
        });
        i += 1;
    }
    let r = run_cli(&dir, &w2);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("Fdump.bin"),
        "no notice about the cache:\n{}",
        r.stderr
    );
    assert_eq!(first, read_f32(&dir.join("second.bin")));
}

#[test]
fn img_header_sets_geometry_and_mask_skips_pixels() {
    let src = golden_dir("cubic_basic_mosflm");
    let dir = scratch("img-mask");
    copy_dir(&src, &dir);
    // -img: upstream's own int image supplies size, pixel, distance, wavelength, beam centre
    let r = run_cli(&dir, &words("-img int.img -cell 100 100 100 90 90 90 -default_F 100 -N 5 -floatfile a.bin -nonoise -nopgm"));
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stdout.contains("(128x128 pixels)"), "{}", r.stdout);
    // a mask with a zero rectangle: those pixels stay 0, the others equal a run whose mask is all
    // ones (a mask header moves the beam centre like upstream's, so compare mask with mask)
    let img = std::fs::read(dir.join("int.img")).unwrap();
    let make_mask = |name: &str, hole: bool| {
        let mut mask = img.clone();
        for s in 0..128usize {
            for f in 0..128usize {
                let v: u16 = if hole && f < 40 && s < 20 { 0 } else { 1 };
                let o = 512 + 2 * (s * 128 + f);
                mask[o..o + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
        std::fs::write(dir.join(name), &mask).unwrap();
    };
    make_mask("ones.img", false);
    make_mask("hole.img", true);
    let base = "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -nonoise -nopgm";
    let r = run_cli(
        &dir,
        &words(&format!("-mask ones.img {base} -floatfile a.bin")),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    let r = run_cli(
        &dir,
        &words(&format!("-mask hole.img {base} -floatfile b.bin")),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    let (a, b) = (read_f32(&dir.join("a.bin")), read_f32(&dir.join("b.bin")));
    assert!(a.iter().filter(|v| **v > 0.0).count() > 16000);
    for s in 0..128usize {
        for f in 0..128usize {
            let i = s * 128 + f;
            if f < 40 && s < 20 {
                assert_eq!(b[i], 0.0);
            } else {
                assert_eq!(a[i], b[i]);
            }
        }
    }
}

#[test]
fn threads_and_precision_flags() {
    let r1 = run_in("threads1", &format!("{BASE} -threads 1 -floatfile a.bin"));
    assert_eq!(r1.status, 0, "{}", r1.stderr);
    let r2 = run_in("threads2", &format!("{BASE} -threads 2 -floatfile a.bin"));
    assert_eq!(r2.status, 0, "{}", r2.stderr);
    assert_eq!(
        read_f32(&r1.dir.join("a.bin")),
        read_f32(&r2.dir.join("a.bin"))
    );
    assert_error(
        &run_in("threads0", &format!("{BASE} -threads 0")),
        2,
        "-threads",
    );
}

/// `-printout_pixel f s` reports the pixel's last term like upstream (MODEL §7.13 case A:
/// pixel (33,33) = 97.2806091).
#[test]
fn printout_pixel_reports_the_pixel() {
    let r = run_in("printout", "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 64 -distance 100 -lambda 1 -nonoise -nopgm -printout_pixel 33 33");
    assert_eq!(r.status, 0, "{}", r.stderr);
    let block: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("  33   33 : stol"))
        .take(9)
        .collect();
    assert_eq!(block.len(), 9, "{}", r.stdout);
    assert!(
        block[2].starts_with("hkl= ") && block[2].ends_with("hkl0= 0 0 0"),
        "{}",
        block[2]
    );
    assert!(block[3].contains("F_cell=100"), "{}", block[3]);
    assert_eq!(
        block[8].split_whitespace().nth(1),
        Some("97.28060913"),
        "{}",
        block[8]
    );
}

/// `-backend gpu` renders the same image through the WGSL kernel (Mesa lavapipe in CI; a
/// missing adapter fails this test with the driver's message).
#[cfg(feature = "gpu")]
#[test]
fn backend_gpu_matches_upstream() {
    let src = golden_dir("mosaic_domains_seed_noise");
    let dir = scratch("backend-gpu");
    copy_dir(&src, &dir);
    let mut w = case_words(&src);
    w.extend(["-backend", "gpu", "-timings"].map(String::from));
    let r = run_cli(&dir, &w);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("gpu timings ("),
        "no adapter line:\n{}",
        r.stderr
    );
    let c = compare(
        &read_f32(&src.join("float.bin")),
        &read_f32(&dir.join("ours_float.bin")),
    );
    assert!(
        c.correlation >= 0.9999 && (c.sum_ratio - 1.0).abs() <= 1e-3,
        "{} {}",
        c.correlation,
        c.sum_ratio
    );
}

/// The CPU kernels compiled per vector level (`simd`: none, AVX2, AVX-512) give the same bits:
/// the f32 image (row path, with mosaic domains, divergence and dispersion), the f64 image, the
/// f32 tangent images and structure factors computed from an atomic model, each with
/// `NANOBRAGG_SIMD` capping the level (a level the CPU lacks runs as its widest). A value that
/// is not a level is refused naming the variable, before anything is written.
#[test]
fn every_vector_level_gives_the_same_bits() {
    let model = repo_root().join("tests/fixtures/models/4hhh_frag.pdb");
    let runs = [
        (
            "f32",
            "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.5 -N 10 -default_F 100 -distance 100 \
             -detpixels 48 -pixel 0.4 -mosaic 0.5 -mosaic_dom 4 -hdivrange 0.5 -divsteps 2 \
             -dispersion 0.2 -dispsteps 2 -precision f32 -backend cpu -floatfile out.bin \
             -gradients rot_x,cell_a,distance,n_cells,lambda -gradfile g"
                .to_string(),
        ),
        (
            "f64",
            format!("{BASE} -misset 10 5 3 -mosaic 0.3 -mosaic_dom 3 -floatfile out.bin"),
        ),
        (
            "model",
            format!(
                "-pdb {} -lambda 1 -N 3 -distance 80 -detpixels 32 -pixel 0.4 -dmin 4 -precision f32 \
                 -backend cpu -floatfile out.bin -nonoise -nopgm",
                model.display()
            ),
        ),
    ];
    let run = |dir: &Path, level: &str, args: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nanobragg"))
            .args(words(args))
            .current_dir(dir)
            .env("NANOBRAGG_SIMD", level)
            .output()
            .unwrap()
    };
    for (name, args) in &runs {
        let mut outputs: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for level in ["none", "avx2", "avx512"] {
            let dir = scratch(&format!("simd_{name}_{level}"));
            let out = run(&dir, level, args);
            assert!(
                out.status.success(),
                "{name} {level}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{name} {level}: no output");
            outputs.push((
                level.to_string(),
                files.iter().map(|p| std::fs::read(p).unwrap()).collect(),
            ));
        }
        for (level, files) in &outputs[1..] {
            assert!(files == &outputs[0].1, "{name}: {level} differs from none");
        }
    }
    let dir = scratch("simd_bad");
    let out = run(&dir, "avx-512", BASE);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NANOBRAGG_SIMD") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "files written");
}
