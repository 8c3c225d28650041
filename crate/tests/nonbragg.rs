//! Every nonBragg case of upstream's extras suite (tests/fixtures/nonbragg), the water stage of
//! the combined cases, and the whole combined chain (our nanobragg spots + our nonbragg water,
//! summed, through our noisify), compared with upstream's files: float image (correlation,
//! sum ratio), SMV headers and int image (±1), PGM (±1), noise image (identical) and the printed
//! statistics. The `.stol` tables come from `crate/data/stol/` (upstream's, shipped). Plus the
//! program's errors.

#![allow(non_snake_case)]

mod common;
use common::{
    compare, copy_dir, read_f32, repo_root, run_program as run, scratch, smv_header, smv_pixels,
    Run,
};
use std::path::{Path, PathBuf};

fn fixture(path: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(path)
}

/// The case's words with every output renamed to `ours_<name>`; the tables it names are copied
/// from crate/data/stol.
fn prepare_case(src: &Path, dir: &Path) -> Vec<String> {
    copy_dir(src, dir);
    let text = std::fs::read_to_string(src.join("args.txt")).unwrap();
    let mut words: Vec<String> = text.split_whitespace().map(String::from).collect();
    for i in 1..words.len() {
        let flag = words[i - 1].clone();
        if ["-floatfile", "-intfile", "-pgmfile", "-noisefile"].contains(&flag.as_str()) {
            words[i] = format!("ours_{}", words[i]);
        }
        if flag == "-stol" && !dir.join(&words[i]).exists() {
            let table = repo_root().join("crate/data/stol").join(&words[i]);
            std::fs::copy(&table, dir.join(&words[i]))
                .unwrap_or_else(|e| panic!("{}: {e}", table.display()));
        }
    }
    words
}

/// Numbers on the statistics lines nonBragg prints.
fn printed(stdout: &str) -> Vec<(String, f64)> {
    let mut v = Vec::new();
    for line in stdout.lines() {
        let key = [
            "max_I = ",
            "mean= ",
            "intfile_scale = ",
            "pgm_scale = ",
            "solid angle subtended by detector = ",
        ]
        .into_iter()
        .find(|k| line.starts_with(k));
        let photons = line.ends_with("overloads)") && line.contains(" photons on noise image");
        if key.is_some() || photons {
            for (i, w) in line.split_whitespace().enumerate() {
                if let Ok(x) = w.trim_start_matches('(').parse::<f64>() {
                    v.push((format!("{} #{i}", line.split('=').next().unwrap()), x));
                }
            }
        }
    }
    v
}

fn check_nonbragg(case: &str, src: &Path) {
    let dir = scratch(&format!("nonbragg-{}", case.replace('/', "-")));
    let words = prepare_case(src, &dir);
    let r = run(env!("CARGO_BIN_EXE_nonbragg"), &dir, &words);
    assert_eq!(r.status, 0, "{case}: nonbragg failed:\n{}", r.stderr);

    let reference = read_f32(&src.join("float.bin"));
    let ours = read_f32(&dir.join("ours_float.bin"));
    let c = compare(&reference, &ours);
    let same = reference
        .iter()
        .zip(&ours)
        .filter(|(a, b)| a.to_bits() == b.to_bits())
        .count();
    println!(
        "{case}: correlation {:.9}, sum ratio {:.9}, max |diff| {:.3e}, {same}/{} pixels bit-identical",
        c.correlation,
        c.sum_ratio,
        c.max_abs_diff,
        reference.len()
    );
    assert!(
        c.correlation >= 0.99999,
        "{case}: correlation {}",
        c.correlation
    );
    assert!(
        (c.sum_ratio - 1.0).abs() <= 1e-4,
        "{case}: sum ratio {}",
        c.sum_ratio
    );

    for name in ["int.img", "noise.img"] {
        if !src.join(name).exists() {
            continue;
        }
        let want = std::fs::read(src.join(name)).unwrap();
        let got = std::fs::read(dir.join(format!("ours_{name}"))).unwrap();
        let (hw, hg) = (smv_header(&want), smv_header(&got));
        assert_eq!(hw.len(), hg.len(), "{case}: {name} header keys");
        for ((kw, vw), (kg, vg)) in hw.iter().zip(&hg) {
            assert_eq!(kw, kg, "{case}: {name} header key order");
            let same = vw == vg
                || matches!((vw.parse::<f64>(), vg.parse::<f64>()),
                    (Ok(x), Ok(y)) if (x - y).abs() <= 1e-9 * x.abs().max(1.0));
            assert!(same, "{case}: {name} {kw}: upstream {vw}, ours {vg}");
        }
        let (pw, pg) = (smv_pixels(&want), smv_pixels(&got));
        assert_eq!(pw.len(), pg.len());
        if name == "noise.img" {
            assert!(pw == pg, "{case}: noise image differs");
        } else {
            let worst = pw
                .iter()
                .zip(&pg)
                .map(|(a, b)| (*a as i32 - *b as i32).abs())
                .max()
                .unwrap();
            assert!(worst <= 1, "{case}: int image differs by {worst}");
        }
    }
    // upstream writes 2·w·h PGM bytes, the stored file keeps the header and w·h of them
    let want = std::fs::read(src.join("image.pgm")).unwrap();
    let got = std::fs::read(dir.join("ours_image.pgm")).unwrap();
    assert_eq!(want.len(), got.len(), "{case}: PGM size");
    let n = reference.len();
    let head = got.len() - n;
    assert_eq!(want[..head], got[..head], "{case}: PGM header");
    let worst = want[head..]
        .iter()
        .zip(&got[head..])
        .map(|(a, b)| (*a as i32 - *b as i32).abs())
        .max()
        .unwrap();
    assert!(worst <= 1, "{case}: PGM differs by {worst}");

    let want = printed(&std::fs::read_to_string(src.join("stdout.txt")).unwrap());
    assert!(
        r.stdout
            .starts_with("nonBragg amorphous material diffraction simulator"),
        "{case}: the banner comes first:\n{}",
        r.stdout
    );
    let got = printed(&r.stdout);
    assert_eq!(
        want.iter().map(|w| &w.0).collect::<Vec<_>>(),
        got.iter().map(|g| &g.0).collect::<Vec<_>>(),
        "{case}: statistics lines:\n{}",
        r.stdout
    );
    for ((k, w), (_, g)) in want.iter().zip(&got) {
        let rel = if *w == 0.0 {
            g.abs()
        } else {
            ((g - w) / w).abs()
        };
        assert!(rel <= 6e-6, "{case}: {k}: ours {g}, upstream {w}");
    }
}

fn case(name: &str) {
    check_nonbragg(name, &fixture("nonbragg").join(name));
}

#[test]
fn water_thickness_flux_noise() {
    case("water_thickness_flux_noise");
}
#[test]
fn air_samplesize_density_MW_divergence() {
    case("air_samplesize_density_MW_divergence");
}
#[test]
fn ice_molecules_energy_xybeam_polar() {
    case("ice_molecules_energy_xybeam_polar");
}
#[test]
fn nanoice_pointpixel_thick_width_height() {
    case("nanoice_pointpixel_thick_width_height");
}
#[test]
fn tilt_twotheta_close_orgxy_nonsquare() {
    case("tilt_twotheta_close_orgxy_nonsquare");
}
#[test]
fn fmap_Q_curved_custom_vectors() {
    case("fmap_Q_curved_custom_vectors");
}
#[test]
fn divergence_dispersion_polar_vector_oversample() {
    case("divergence_dispersion_polar_vector_oversample");
}
#[test]
fn sourcefile_4stol_roi_scale_adc_pgmscale_noise() {
    case("sourcefile_4stol_roi_scale_adc_pgmscale_noise");
}

/// A combined case end to end: each stage checked, then our spots + our water summed in f32 and
/// run through our noisify, whose noise image must be upstream's.
fn combined(name: &str) {
    let root = fixture("combined").join(name);
    check_nonbragg(&format!("{name}/2_water"), &root.join("2_water"));

    let dir = scratch(&format!("combined-{name}"));
    let spots_args = std::fs::read_to_string(root.join("1_spots/args.txt")).unwrap();
    let spots: Vec<String> = spots_args
        .split_whitespace()
        .map(|w| match w {
            "float.bin" => "spots.bin".into(),
            "int.img" => "spots.img".into(),
            "image.pgm" => "spots.pgm".into(),
            w => w.into(),
        })
        .collect();
    let r = run(env!("CARGO_BIN_EXE_nanobragg"), &dir, &spots);
    assert_eq!(r.status, 0, "{name}: nanobragg: {}", r.stderr);
    let c = compare(
        &read_f32(&root.join("1_spots/float.bin")),
        &read_f32(&dir.join("spots.bin")),
    );
    assert!(
        c.correlation >= 0.99999,
        "{name}: spots correlation {}",
        c.correlation
    );

    // the water stage's folder, written by check_nonbragg above
    let wdir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nonbragg-{name}-2_water"));
    let sum: Vec<u8> = read_f32(&dir.join("spots.bin"))
        .iter()
        .zip(read_f32(&wdir.join("ours_float.bin")))
        .flat_map(|(a, b)| (a + b).to_le_bytes())
        .collect();
    std::fs::write(dir.join("input.bin"), sum).unwrap();
    let src = root.join("3_noisify");
    let text = std::fs::read_to_string(src.join("args.txt")).unwrap();
    let words: Vec<String> = text.split_whitespace().map(String::from).collect();
    let r = run(env!("CARGO_BIN_EXE_noisify"), &dir, &words);
    assert_eq!(r.status, 0, "{name}: noisify: {}", r.stderr);
    for f in ["noise.img", "int.img", "image.pgm"] {
        let same = std::fs::read(src.join(f)).unwrap() == std::fs::read(dir.join(f)).unwrap();
        assert!(
            same,
            "{name}: {f} from our own spots + water differs from upstream's"
        );
    }
    println!(
        "{name}: spots (nanobragg) + water (nonbragg) -> noisify: int, noise and PGM identical"
    );
}

#[test]
fn combined_xfel_still_spots_water_noisify() {
    combined("xfel_still_spots_water_noisify");
}
#[test]
fn combined_offcentre_spots_water_psf_flicker() {
    combined("offcentre_spots_water_psf_flicker");
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = scratch("nonbragg-errors");
    std::fs::write(dir.join("ok.stol"), "0 2.57\n0.1 2.4\n0.2 2.8\n0.3 3.0\n").unwrap();
    std::fs::write(dir.join("short.stol"), "0 2.57\n0.1\n").unwrap();
    std::fs::write(dir.join("text.stol"), "# water\nstol F\n0 2.57\n").unwrap();
    std::fs::write(dir.join("down.stol"), "0 2.57\n0.2 2.4\n0.18 2.8\n").unwrap();
    std::fs::write(dir.join("src.txt"), "-10 0 0 1 1e-10\n-10 x 0 1 1e-10\n").unwrap();
    std::fs::write(dir.join("bigx.stol"), "0 2.57\n1e300 2.4\n").unwrap();
    std::fs::write(dir.join("bigf.stol"), "0 2.57\n0.1 1e300\n").unwrap();
    std::fs::write(dir.join("huge.stol"), "0 2.57\n0.1 1e29\n").unwrap();
    let outs = "-detpixels 16 -floatfile f.bin -intfile i.img -pgmfile p.pgm -noisefile n.img";
    let nb = env!("CARGO_BIN_EXE_nonbragg");
    let r = |s: &str| run(nb, &dir, &words(&format!("{s} {outs}")));
    let expect = |o: Run, status: i32, text: &str| {
        assert_eq!(o.status, status, "{text}: {}", o.stderr);
        assert!(
            o.stderr.contains(text),
            "expected '{text}' in: {}",
            o.stderr
        );
    };
    expect(
        r("-stol short.stol"),
        1,
        "short.stol line 2: expected two numbers 'stol F'",
    );
    expect(
        r("-stol text.stol"),
        1,
        "text.stol line 2: expected up to 2 numbers, found \"stol F\"",
    );
    expect(
        r("-stol down.stol"),
        1,
        "down.stol line 3: 0.18 does not increase from 0.2 on line 2",
    );
    expect(r("-stol none.stol"), 1, "cannot read file 'none.stol'");
    expect(
        r("-stol bigx.stol"),
        1,
        "bigx.stol line 2: 1e+300 is out of range for the first column",
    );
    expect(
        r("-stol bigf.stol"),
        1,
        "bigf.stol line 2: F = 1e+300 is out of range",
    );
    // found by the fuzz target: a Kahn factor of 1e300 rendered an infinite image with exit 0
    expect(
        r("-stol ok.stol -polar 1e300"),
        2,
        "-polar: expected a number from -1 to 1, found '1e300'",
    );
    // an image beyond single precision is an error, never an output
    expect(r("-stol huge.stol -fluence 1e30"), 1, "not finite");
    expect(
        r("-stol ok.stol -seed -9223372036854775808"),
        2,
        "-seed: expected an integer from -2147483647 to 2147483647",
    );
    expect(r("-stol ok.stol -sourcefile src.txt"), 1, "src.txt line 2");
    expect(r("-stol ok.stol -bogus 3"), 2, "unknown flag '-bogus'");
    expect(
        r("-stol ok.stol -thicknes 1"),
        2,
        "unknown flag '-thicknes' (did you mean -thickness?)",
    );
    let h = r("-stol ok.stol -help");
    assert_eq!(h.status, 0, "{}", h.stderr);
    assert!(h.stdout.contains("  -thickness mm") && h.stdout.contains("  -detpixels n"));
    // -help prints the usage alone (the banner belongs to a run: `cli::Program`)
    assert!(!h.stdout.contains("Rust port"), "{}", h.stdout);
    expect(
        r("-stol ok.stol -distance far"),
        2,
        "-distance: expected a number, found 'far'",
    );
    expect(
        r("-stol ok.stol -detector_roty 90"),
        1,
        "parallel to the beam",
    );
    let u = r("-lambda 1");
    assert!(u.stderr.contains("usage: nonbragg"));
    expect(u, 9, "no structure-factor table");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".stol") && n != "src.txt")
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    let ok = r("-stol ok.stol -seed 1");
    assert_eq!(ok.status, 0, "{}", ok.stderr);
    assert!(dir.join("n.img").exists());
    // a shared row's warning, printed once with its prefix
    let neg = r("-stol ok.stol -distance -100");
    assert_eq!(neg.status, 0, "{}", neg.stderr);
    assert!(
        neg.stderr
            .contains("WARNING: -distance -100: a negative distance is used as 100 mm")
            && !neg.stderr.contains("WARNING: WARNING"),
        "{}",
        neg.stderr
    );
}
