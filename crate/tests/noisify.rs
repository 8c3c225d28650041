//! Every noisify case of upstream's extras suite (tests/fixtures/noisify) and the noisify stage
//! of the combined cases (tests/fixtures/combined/*/3_noisify), run through our `noisify`:
//! noiseless and noise images bit-identical to upstream's (headers included), PGM identical, and
//! upstream's numeric stdout lines printed identically. Plus the program's errors.

#![allow(non_snake_case)]

mod common;
use common::{copy_dir, repo_root, run_program, scratch, Run};
use std::path::{Path, PathBuf};

fn noisify(dir: &Path, words: &[String]) -> Run {
    run_program(env!("CARGO_BIN_EXE_noisify"), dir, words)
}

fn fixture(path: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(path)
}

/// The case's words with every output renamed to `ours_<name>`.
fn words_renamed(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src.join("args.txt")).unwrap();
    let mut words: Vec<String> = text.split_whitespace().map(String::from).collect();
    for i in 1..words.len() {
        if ["-intfile", "-noisefile", "-pgmfile"].contains(&words[i - 1].as_str()) {
            words[i] = format!("ours_{}", words[i]);
        }
    }
    words
}

/// Lines of upstream's stdout that carry results (everything but the banner and file names
/// that we renamed).
fn result_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("noisify - ") && !l.starts_with("writing "))
        .map(|l| l.replace("ours_", ""))
        .collect()
}

/// Runs a noisify case whose inputs are already in `dir`; compares with the files in `src`.
fn check(case: &str, src: &Path, dir: &Path) {
    let run = noisify(dir, &words_renamed(src));
    assert_eq!(run.status, 0, "{case}: noisify failed:\n{}", run.stderr);
    for name in ["int.img", "noise.img", "image.pgm"] {
        let want = src.join(name);
        let got = dir.join(format!("ours_{name}"));
        if !want.exists() {
            assert!(!got.exists(), "{case}: wrote {name}, upstream did not");
            continue;
        }
        let (w, g) = (std::fs::read(&want).unwrap(), std::fs::read(&got).unwrap());
        assert_eq!(w.len(), g.len(), "{case}: {name} size");
        let diff = w.iter().zip(&g).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 0, "{case}: {name} differs in {diff} bytes");
    }
    let want = result_lines(&std::fs::read_to_string(src.join("stdout.txt")).unwrap());
    assert!(
        run.stdout.starts_with("noisify - add noise to pixels"),
        "{case}: the banner comes first:\n{}",
        run.stdout
    );
    let got = result_lines(&run.stdout);
    assert_eq!(want, got, "{case}: printed lines differ");
    println!("{case}: int, noise and PGM images identical to upstream's");
}

fn case(case: &str) {
    let src = fixture("noisify").join(case);
    let dir = scratch(&format!("noisify-{case}"));
    copy_dir(&src, &dir);
    check(case, &src, &dir);
}

#[test]
fn poisson_default_calibration() {
    case("poisson_default_calibration");
}
#[test]
fn scale_gain_adc_nocalib_header_fields() {
    case("scale_gain_adc_nocalib_header_fields");
}
#[test]
fn readout_flicker_calibration_shared_stream() {
    case("readout_flicker_calibration_shared_stream");
}
#[test]
fn calibration_calib_seed_fluence_readnoise() {
    case("calibration_calib_seed_fluence_readnoise");
}
#[test]
fn psf_gauss_auto_radius_guess_dims() {
    case("psf_gauss_auto_radius_guess_dims");
}
#[test]
fn psf_fiber_radius_bits32() {
    case("psf_fiber_radius_bits32");
}
#[test]
fn header_import() {
    case("header_import");
}
#[test]
fn nonoise_psf_noiseless_bin_alias() {
    case("nonoise_psf_noiseless_bin_alias");
}

fn read_f32(p: &Path) -> Vec<f32> {
    std::fs::read(p)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The noisify stage of a combined case: its input is the f32 sum of upstream's spot and water
/// images (as the suite made it).
fn combined_stage(name: &str) {
    let root = fixture("combined").join(name);
    let spots = read_f32(&root.join("1_spots/float.bin"));
    let water = read_f32(&root.join("2_water/float.bin"));
    let sum: Vec<u8> = spots
        .iter()
        .zip(&water)
        .flat_map(|(a, b)| (a + b).to_le_bytes())
        .collect();
    let src = root.join("3_noisify");
    let dir = scratch(&format!("combined-noisify-{name}"));
    std::fs::write(dir.join("input.bin"), sum).unwrap();
    check(name, &src, &dir);
}

#[test]
fn combined_xfel_still_spots_water_noisify() {
    combined_stage("xfel_still_spots_water_noisify");
}
#[test]
fn combined_offcentre_spots_water_psf_flicker() {
    combined_stage("offcentre_spots_water_psf_flicker");
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn assert_error(r: &Run, status: i32, text: &str) {
    assert_eq!(r.status, status, "stderr: {}", r.stderr);
    assert!(
        r.stderr.contains(text),
        "expected '{text}' in: {}",
        r.stderr
    );
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = scratch("noisify-errors");
    let floats: Vec<u8> = (0..100).flat_map(|i| (i as f32).to_le_bytes()).collect();
    std::fs::write(dir.join("in.bin"), &floats).unwrap();
    std::fs::write(dir.join("odd.bin"), &floats[..398]).unwrap();
    let mut hdr = b"{\nHEADER_BYTES=512;\nDIM=2;\nSIZE1=20;\nSIZE2=20;\n}\x0c".to_vec();
    hdr.resize(512, b' ');
    std::fs::write(dir.join("h20.img"), &hdr).unwrap();
    std::fs::write(dir.join("text.img"), b"P5\n10 10\n255\n").unwrap();
    let outs = "-intfile i.img -noisefile n.img -pgmfile p.pgm";
    let r = |s: &str| noisify(&dir, &words(&format!("{s} {outs}")));

    assert_error(
        &r("-bin in.bin -detpixels 10 -bogus"),
        2,
        "unknown flag '-bogus'",
    );
    assert_error(
        &r("-bin in.bin -flicer 0.1"),
        2,
        "unknown flag '-flicer' (did you mean -flicker?)",
    );
    let h = r("-bin in.bin -help");
    assert_eq!(h.status, 0, "{}", h.stderr);
    assert!(h.stdout.contains("  -psf gauss|fiber") && h.stdout.contains("  -detpixels n"));
    // -help prints the usage alone (the banner belongs to a run: `cli::Program`)
    assert!(!h.stdout.contains("Rust port"), "{}", h.stdout);
    assert_error(
        &r("-bin in.bin -psf box"),
        2,
        "-psf: expected gauss or fiber",
    );
    assert_error(
        &r("-bin in.bin -rng philox"),
        2,
        "-rng: expected upstream or counter, found 'philox'",
    );
    assert_error(
        &r("-bin in.bin -seed x"),
        2,
        "-seed: expected an integer, found 'x'",
    );
    // upstream negates the seed: i64::MIN would overflow
    assert_error(
        &r("-bin in.bin -calib_seed -9223372036854775808"),
        2,
        "-calib_seed: expected an integer from -2147483647 to 2147483647, found '-9223372036854775808'",
    );
    assert_error(
        &r("-bin in.bin -readout_noise"),
        2,
        "-readout_noise: expected a number",
    );
    let nf = r("-detpixels 10");
    assert_error(&nf, 9, "no input image");
    assert!(nf.stderr.contains("usage: noisify"));
    assert_error(&r("-bin missing.bin"), 1, "cannot read file 'missing.bin'");
    assert_error(
        &r("-bin in.bin -detpixels 12"),
        1,
        "in.bin: the file holds 100 float pixels but the image is 12x12 = 144 pixels",
    );
    assert_error(
        &r("-bin odd.bin"),
        1,
        "odd.bin: 398 bytes is not a whole number",
    );
    assert_error(
        &r("-bin in.bin -header h20.img"),
        1,
        "in.bin: the file holds 100 float pixels but the image is 20x20 = 400 pixels (SIZE1 x SIZE2 of the header)",
    );
    assert_error(
        &r("-bin in.bin -header text.img"),
        1,
        "text.img: not an SMV image",
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !["in.bin", "odd.bin", "h20.img", "text.img"].contains(&n.as_str()))
        .collect();
    assert!(names.is_empty(), "files left behind: {names:?}");

    // a good run for contrast
    let ok = r("-bin in.bin -detpixels 10 -seed 1");
    assert_eq!(ok.status, 0, "{}", ok.stderr);
    assert!(dir.join("n.img").exists() && dir.join("i.img").exists());
}

#[test]
fn negative_readout_and_gain_not_positive_keep_upstreams_image_with_a_warning() {
    // upstream reads a negative read-out noise as 0 and uses a gain <= 0 as given: the same
    // images as the plain reading, said on stderr
    let dir = scratch("noisify-clamps");
    let floats: Vec<u8> = (0..100).flat_map(|i| (i as f32).to_le_bytes()).collect();
    std::fs::write(dir.join("in.bin"), &floats).unwrap();
    let run = |tag: &str, extra: &str| {
        let r = noisify(
            &dir,
            &words(&format!(
                "-bin in.bin -detpixels 10 -seed 3 -nopgm -intfile {tag}-i.img -noisefile {tag}-n.img {extra}"
            )),
        );
        assert_eq!(r.status, 0, "{extra}: {}", r.stderr);
        let img = |n: &str| std::fs::read(dir.join(format!("{tag}-{n}.img"))).unwrap();
        (r.stderr, img("i"), img("n"))
    };
    let (plain, i0, n0) = run("plain", "-readout_noise 0");
    assert!(!plain.contains("WARNING"), "{plain}");
    let (err, i1, n1) = run("neg", "-readout_noise -3");
    assert!(
        err.contains("WARNING: -readout_noise -3: a negative read-out noise is read as 0: no read-out noise, as upstream does"),
        "{err}"
    );
    assert_eq!((i1, n1), (i0, n0));
    let (err, i, n) = run("gain0", "-gain 0 -readout_noise 2");
    assert!(
        err.contains("WARNING: -gain 0: a gain of 0 leaves no signal: every count is the ADC offset (40 ADU)"),
        "{err}"
    );
    assert!(!err.contains("-readout_noise"), "{err}");
    // the noiseless image: every pixel the ADC offset (upstream's)
    assert!(
        i[512..]
            .chunks(2)
            .all(|c| u16::from_le_bytes([c[0], c[1]]) == 40),
        "int image"
    );
    assert_eq!(n.len(), i.len());
    let (err, _, _) = run("gain-neg", "-gain -2");
    assert!(err.contains("WARNING: -gain -2: a negative gain"), "{err}");
}
