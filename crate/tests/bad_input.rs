//! Every bad input listed in issue 10 (and the `-img` header cases), run through the CLI: each
//! gives its exit status and a message that names the flag, or the file, line and key; none
//! panics, hangs or writes a file. All of these fail (or finish) in milliseconds.

mod common;
use common::*;
use std::path::Path;

const BASE: &str =
    "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 32 -distance 100 -nonoise -nopgm";

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Run `args` in a scratch folder holding `files`; check the exit status, that stderr contains
/// `needle`, that nothing panicked and (on failure) that no file was written.
fn check(name: &str, files: &[(&str, Vec<u8>)], args: &str, status: i32, needle: &str) -> Run {
    let dir = scratch(&format!("bad-{name}"));
    for (f, bytes) in files {
        std::fs::write(dir.join(f), bytes).unwrap();
    }
    let before = listing(&dir);
    let r = run_cli(&dir, &words(args));
    assert_eq!(r.status, status, "{args}\nstderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "{args}\nstderr should contain {needle:?}:\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{args}\n{}", r.stderr);
    if status != 0 {
        assert_eq!(
            listing(&dir),
            before,
            "{args}: files written despite the error"
        );
    }
    r
}

fn bad(name: &str, args: &str, status: i32, needle: &str) {
    check(name, &[], &format!("{BASE} {args}"), status, needle);
}

/// An SMV file: `keys` (`KEY=value;` lines) after the standard ones, then `w × h` zero pixels.
fn smv(keys: &str, w: usize, h: usize) -> Vec<u8> {
    smv_with_body(keys, w, h, w * h)
}

/// The same header with `pixels` zero pixels after it (fewer than it declares, say).
fn smv_with_body(keys: &str, w: usize, h: usize, pixels: usize) -> Vec<u8> {
    let head = format!(
        "{{\nHEADER_BYTES=  512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n\
         SIZE1={w};\nSIZE2={h};\n{keys}}}\n"
    );
    let mut b = head.into_bytes();
    b.resize(512, 0);
    b.resize(512 + 2 * pixels, 0);
    b
}

// ---- panics (index out of bounds via a NaN Miller index)

#[test]
fn degenerate_cell_with_tricubic_table() {
    let hkl = b"5 5 5 50\n8 8 8 50\n".to_vec();
    check(
        "degenerate-tricubic",
        &[("far.hkl", hkl)],
        "-cell 100 100 100 90 90 180 -hkl far.hkl -N 2 -detpixels 32 -nonoise -nopgm",
        2,
        "-cell: expected an angle below 180 degrees for gamma, found '180'",
    );
    // angles below 180 that make no cell: upstream takes |volume| and renders garbage
    check(
        "degenerate-angles",
        &[],
        "-cell 100 100 100 10 10 170 -default_F 1 -detpixels 32 -nonoise -nopgm",
        1,
        "-cell: the angles 10 10 170 do not make a cell",
    );
    check(
        "tiny-cell",
        &[],
        "-cell 1e-300 1e-300 1e-300 90 90 90 -default_F 100 -detpixels 32 -nonoise -nopgm",
        1,
        "cell is too small to compute with",
    );
}

#[test]
fn nan_and_inf_values_name_the_flag() {
    for (flag, value) in [
        ("-misset", "nan 0 0"),
        ("-phi", "inf"),
        ("-fluence", "inf"),
        ("-default_F", "nan"),
        ("-dispersion", "nan"),
        ("-mosaic", "inf"),
    ] {
        let first = value.split(' ').next().unwrap();
        bad(
            &format!("nan{flag}"),
            &format!("{flag} {value}"),
            2,
            &format!("{flag}: expected a finite number, found '{first}'"),
        );
    }
}

#[test]
fn infinite_source_position_names_file_and_line() {
    check(
        "src-inf",
        &[("src.txt", b"-10 0 0 1 1e-10\ninf 0 0 1 1e-10\n".to_vec())],
        &format!("{BASE} -sourcefile src.txt"),
        1,
        "src.txt line 2: column 1 is 'inf', not a finite number",
    );
}

// ---- memory: products of counts

#[test]
fn work_products_are_checked() {
    bad(
        "orientations",
        "-mosaic 1 -mosaic_dom 1000000 -phisteps 100000 -osc 1",
        1,
        "orientations: 100000 phi steps × 1000000 mosaic domains (-phisteps, -mosaic_dom) are more than the limit of",
    );
    bad(
        "sources",
        "-divergence 1 -divsteps 1000 -dispersion 10 -dispsteps 100000",
        1,
        "sources: 1000 × 1000 divergence points × 100000 wavelengths (-divsteps, -dispsteps) are more than the limit of 1000000 sources",
    );
    bad(
        "divsteps-2-32",
        "-square_div -hdivsteps 4294967296 -vdivsteps 4294967296",
        2,
        "-hdivsteps: expected an integer from -1000000 to 1000000, found '4294967296'",
    );
    // counts within their own limits whose product is not
    bad(
        "divergence-grid",
        "-divergence 1 -hdivsteps 100000 -vdivsteps 100000 -square_div",
        1,
        "divergence: 100000 × 100000 grid points",
    );
}

// ---- hangs

#[test]
fn huge_and_wrapping_counts() {
    bad(
        "divsteps-1e308",
        "-divsteps 1e308",
        2,
        "-divsteps: expected an integer from -1000000 to 1000000, found '1e308'",
    );
    // a range over a tiny step: the auto-selected count is checked, not wrapped
    bad(
        "hdivstep-tiny",
        "-hdivrange 1 -hdivstep 1e-300 -vdivrange 1 -vdivstep 1e-300",
        1,
        "divergence:",
    );
}

#[test]
fn threads_are_capped() {
    let r = check(
        "threads",
        &[],
        &format!("{BASE} -threads 100000 -floatfile f.bin"),
        0,
        "-threads 100000: capped at",
    );
    assert_eq!(read_f32(&r.dir.join("f.bin")).len(), 32 * 32);
}

// ---- overflows

/// Found by the 10-minute fuzz campaign (fuzz/regressions/args/fuzz-*).
#[test]
fn angles_fudge_and_an_empty_divergence_grid() {
    for (flag, value) in [
        ("-phi", "1e7"),
        ("-osc", "-2e6"),
        ("-misset", "1 2 3e6"),
        ("-twotheta", "1e20"),
        ("-twotheta_axis", "1e20 0 0"),
        ("-detector_rotz", "1e7"),
    ] {
        let bad_value = value.split(' ').find(|v| v.contains('e')).unwrap();
        bad(
            &format!("angle{flag}"),
            &format!("{flag} {value}"),
            2,
            &format!("{flag}: expected a number from -1000000 to 1000000, found '{bad_value}'"),
        );
    }
    // a negative fudge made the round shape's sqrt NaN
    bad(
        "fudge",
        "-fudge -1 -round_xtal",
        2,
        "-fudge: expected a number > 0 and ≤ 1000000, found '-1'",
    );
    // one grid point outside the round trim: no source (upstream renders NaN)
    bad(
        "divsteps-1",
        "-divsteps 1",
        1,
        "the divergence grid keeps no source: 1 × 1 points",
    );
}

#[test]
fn a_long_smv_header_grows_to_1024_bytes() {
    let dir = scratch("header-1024");
    let r = run_cli(
        &dir,
        &words(&format!(
            "{BASE} -lambda 0.1 -twotheta_axis 1 1e6 1 -intfile int.img"
        )),
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    let bytes = std::fs::read(dir.join("int.img")).unwrap();
    let head = String::from_utf8_lossy(&bytes[..1024]).into_owned();
    assert!(head.starts_with("{\nHEADER_BYTES=1024;"), "{head}");
    let f = nanobragg::io::smv::read_smv("int.img", &bytes).unwrap();
    assert_eq!(f.header_bytes, 1024);
    assert_eq!(bytes.len(), 1024 + 2 * f.data.len());
}

#[test]
fn kahn_factor_is_within_one() {
    bad(
        "polar-1e300",
        "-polar 1e300",
        2,
        "-polar: expected a number from -1 to 1, found '1e300'",
    );
}

#[test]
fn seeds_do_not_overflow() {
    for flag in ["-seed", "-mosaic_seed", "-misset_seed"] {
        bad(
            &format!("seed{flag}"),
            &format!("{flag} -1e19"),
            2,
            &format!("{flag}: expected an integer from -2147483647 to 2147483647, found '-1e19'"),
        );
    }
}

// ---- NaN or all-zero images with exit 0

#[test]
fn zero_phi_steps() {
    bad(
        "phistep-osc0",
        "-phistep 1 -osc 0",
        1,
        "-osc 0 with -phistep 1 gives no phi steps",
    );
}

#[test]
fn huge_crystal_and_sensor() {
    bad(
        "xtalsize-1e308",
        "-xtalsize 1e308",
        2,
        "-xtalsize: expected a number ≥ 0 and ≤ 1e300, found '1e308'",
    );
    bad(
        "xtalsize-cells",
        "-xtalsize 1e10 -oversample 1",
        1,
        "(-xtal_thick or -xtalsize) is 1e+15 unit cells, more than the limit of 1e+07",
    );
    bad(
        "thick-1e308",
        "-detector_thick 1e308",
        2,
        "-detector_thick: expected a number ≥ 0 and ≤ 1000000, found '1e308'",
    );
}

#[test]
fn empty_selections() {
    bad(
        "roi-empty",
        "-roi 20 10 0 31",
        1,
        "-roi 20 10 0 31 selects no pixel of the 32x32 detector",
    );
    let mask = smv("", 32, 32);
    check(
        "mask-all-zero",
        &[("mask.img", mask)],
        &format!("{BASE} -mask mask.img"),
        1,
        "every pixel inside the rendered region is masked",
    );
}

// ---- geometry that names the right thing

#[test]
fn distance_zero_and_negative() {
    bad(
        "distance0-oversample1",
        "-distance 0 -oversample 1",
        2,
        "-distance: expected a non-zero number",
    );
    bad(
        "distance0",
        "-distance 0",
        2,
        "-distance: expected a non-zero number",
    );
    // upstream silently uses +50: we do too, and say so
    let r = check(
        "distance-neg",
        &[],
        &format!("{BASE} -distance -50 -floatfile f.bin"),
        0,
        "WARNING: -distance -50: a negative distance is used as 50 mm (as upstream does)",
    );
    assert!(r.stdout.contains("distance=0.05 "), "{}", r.stdout);
}

#[test]
fn pixel_and_two_theta() {
    bad(
        "pixel-1e308",
        "-pixel 1e308",
        2,
        "-pixel: expected a number > 0 and ≤ 1000, found '1e308'",
    );
    bad(
        "twotheta90",
        "-twotheta 90",
        1,
        "the detector plane passes through the sample (distance along its normal 6.12323e-15 mm): after -twotheta 90 the detector is edge-on to the sample",
    );
    // a tiny distance: the auto-selected oversampling names its inputs
    bad(
        "oversample-auto",
        "-distance 1e-3",
        1,
        "the auto-selected oversampling would be 150000 sub-pixels per axis (limit 1000): a 0.05 µm crystal against λ·distance/pixel = 1e-06 µm (λ 1 Å, distance 0.001 mm",
    );
}

#[test]
fn cell_with_a_word_names_the_cell() {
    check(
        "cell-abc",
        &[],
        "-cell 100 abc -default_F 100",
        2,
        "-cell: expected a number, found 'abc'",
    );
}

// ---- -img / -mask headers: blamed on the file, its line and key

#[test]
fn header_values_name_file_line_and_key() {
    let cases = [
        ("PHI=inf;\n", "img.img header line 8: PHI=inf: expected a finite number (as for -phi)"),
        ("DISTANCE=garbage;\n", "img.img header line 8: DISTANCE=garbage is not a number"),
        ("PIXEL_SIZE=0;\n", "img.img header line 8: PIXEL_SIZE=0: expected a number > 0 and ≤ 1000 (as for -pixel)"),
        ("WAVELENGTH=0;\n", "img.img header line 8: WAVELENGTH=0: expected a number > 0 and ≤ 1e10 (as for -lambda)"),
        ("DISTANCE=0;\n", "img.img header line 8: DISTANCE=0: expected a non-zero number"),
    ];
    for (i, (key, needle)) in cases.iter().enumerate() {
        check(
            &format!("img-{i}"),
            &[("img.img", smv(key, 16, 16))],
            "-img img.img -cell 100 100 100 90 90 90 -default_F 100 -N 5 -nonoise -nopgm",
            1,
            needle,
        );
    }
    let mut neg = smv("", 16, 16);
    let text = String::from_utf8_lossy(&neg[..512]).replace("SIZE1=16;", "SIZE1=-5;");
    neg[..512].copy_from_slice(text.as_bytes());
    check(
        "img-size-neg",
        &[("img.img", neg)],
        "-img img.img -cell 100 100 100 90 90 90 -default_F 100 -N 5 -nonoise -nopgm",
        1,
        "img.img header line 6: SIZE1=-5: expected a number ≥ 0 and ≤ 1000000 (as for -detpixels)",
    );
}

#[test]
fn header_asking_for_a_huge_detector() {
    // a header that asks for 40000 × 40000 pixels but holds none: refused before any render
    let img = smv_with_body("", 40000, 40000, 64);
    check(
        "img-huge",
        &[("img.img", img)],
        "-img img.img -cell 100 100 100 90 90 90 -default_F 100 -N 5 -nonoise -nopgm",
        1,
        "img.img",
    );
}

// ---- the cost budget

#[test]
fn over_budget_is_refused_unless_forced() {
    bad(
        "budget",
        "-detpixels 4096 -mosaic 1 -mosaic_dom 10000 -osc 1 -phisteps 20",
        1,
        "more than the budget of 1e+12 terms: give -force to render it anyway",
    );
}

#[test]
fn help_lists_every_flag() {
    let r = check("help", &[], "-help", 0, "");
    for f in nanobragg::args::FLAGS {
        assert!(r.stdout.contains(f.name), "{} missing from -help", f.name);
    }
}
