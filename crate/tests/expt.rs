//! `-expt FILE` (a DIALS experiment list, `io::expt`) through the CLI: a tilted panel lands where
//! the file says (nanoBragg's printed DIALS origin and detector axes, mapped to dxtbx's frame),
//! the crystal's real-space vectors are the file's, several panels render stacked (their bad
//! geometry is a clear error). DIALS
//! itself reads back a render from an `.expt` in `scripts/dials_roundtrip.py`.

mod common;
use common::scratch;
use std::path::Path;

fn run(dir: &Path, args: &str) -> common::Run {
    let words: Vec<String> = args.split_whitespace().map(String::from).collect();
    common::run_program(env!("CARGO_BIN_EXE_nanobragg"), dir, &words)
}

/// The numbers after `key` on its stdout line.
fn numbers(stdout: &str, key: &str) -> Vec<f64> {
    let line = stdout
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("no {key} in\n{stdout}"));
    line[line.find(key).unwrap() + key.len()..]
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn expt(panels: &str) -> String {
    format!(
        r#"{{"__id__": "ExperimentList",
  "experiment": [{{"beam": 0, "detector": 0, "goniometer": 0, "scan": 0, "crystal": 0}}],
  "beam": [{{"direction": [0.0, 0.0, 1.0], "wavelength": 0.9}}],
  "detector": [{{"panels": [{panels}]}}],
  "goniometer": [{{"rotation_axis": [1.0, 0.0, 0.0]}}],
  "scan": [{{"image_range": [1, 1], "oscillation": [12.0, 0.5]}}],
  "crystal": [{{"real_space_a": [30.0, 5.0, -2.0], "real_space_b": [-4.0, 41.0, 3.0],
    "real_space_c": [1.0, -2.0, 52.0]}}]}}"#
    )
}

// a panel tilted by 10° about the slow axis (fast, normal turned), off centre
const PANEL: &str = r#"{"origin": [-20.5, 18.25, -95.0],
  "fast_axis": [0.984807753012208, 0.0, 0.17364817766693033], "slow_axis": [0.0, -1.0, 0.0],
  "pixel_size": [0.172, 0.172], "image_size": [200, 180]}"#;

#[test]
fn expt_places_the_panel_and_the_crystal() {
    let dir = scratch("expt-one");
    std::fs::write(dir.join("x.expt"), expt(PANEL)).unwrap();
    let r = run(
        &dir,
        "-expt x.expt -default_F 10 -N 3 -oversample 1 -nopgm -nonoise -floatfile f.bin -intfile i.img",
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    let out = &r.stdout;
    // nanoBragg prints its lab-frame vectors; dxtbx's frame is (z, y, -x) of them
    let origin = numbers(out, "dials origin=");
    for (got, want) in origin.iter().zip([-20.5, 18.25, -95.0]) {
        assert!((got - want).abs() < 1e-4, "origin {origin:?}");
    }
    let fast = numbers(out, "DIRECTION_OF_DETECTOR_X-AXIS=");
    let to_dxtbx = |v: &[f64]| [v[2], v[1], -v[0]];
    let f = to_dxtbx(&fast);
    assert!(
        (f[0] - 0.984808).abs() < 1e-5 && (f[2] - 0.173648).abs() < 1e-5,
        "{f:?}"
    );
    assert_eq!(
        to_dxtbx(&numbers(out, "DIRECTION_OF_DETECTOR_Y-AXIS=")),
        [0.0, -1.0, -0.0]
    );
    assert_eq!(
        to_dxtbx(&numbers(out, "INCIDENT_BEAM_DIRECTION=")),
        [0.0, 0.0, -1.0]
    );
    assert_eq!(
        to_dxtbx(&numbers(out, "spindle ROTATION_AXIS=")),
        [1.0, 0.0, -0.0]
    );
    assert!(out.contains("wave=9e-11 meters"), "{out}");
    assert!(
        out.contains("(200x180 pixels)") && out.contains("pixel=0.000172"),
        "{out}"
    );
    for (key, want) in [
        ("a = ", [30.0, 5.0, -2.0]),
        ("b = ", [-4.0, 41.0, 3.0]),
        ("c = ", [1.0, -2.0, 52.0]),
    ] {
        let v = to_dxtbx(&numbers(out, key));
        for k in 0..3 {
            assert!((v[k] - want[k]).abs() < 1e-3, "{key}{v:?}");
        }
    }
    // the scan's first image: phi 12, osc 0.5 (flags win)
    assert!(out.contains("phi steps from 12 to 12.25 degrees"), "{out}");
    let r = run(
        &dir,
        "-expt x.expt -phi 3 -default_F 10 -N 3 -oversample 1 -nopgm -nonoise -floatfile f.bin -intfile i.img",
    );
    assert!(
        r.stdout.contains("phi steps from 3 to 3.25 degrees"),
        "{}",
        r.stdout
    );
}

#[test]
fn expt_errors_name_file_and_key() {
    let dir = scratch("expt-bad");
    // several panels render (stacked down the stored image); their errors name the file
    std::fs::write(dir.join("two.expt"), expt(&format!("{PANEL}, {PANEL}"))).unwrap();
    let r = run(
        &dir,
        "-expt two.expt -default_F 10 -N 2 -oversample 1 -nopgm -nonoise -floatfile f.bin -intfile i.img",
    );
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stdout.contains("2 panels from two.expt"), "{}", r.stdout);
    assert_eq!(
        std::fs::metadata(dir.join("f.bin")).unwrap().len(),
        200 * 360 * 4
    );
    let skew = PANEL.replace("[0.0, -1.0, 0.0]", "[0.5, -1.0, 0.0]");
    std::fs::write(dir.join("skew.expt"), expt(&format!("{PANEL}, {skew}"))).unwrap();
    let r = run(&dir, "-expt skew.expt -default_F 10 -nopgm -nonoise");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "skew.expt: panel panel1: fast and slow axes must be non-zero and perpendicular"
        ),
        "{}",
        r.stderr
    );
    let r = run(&dir, "-expt none.expt -default_F 10 -nopgm -nonoise");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.stderr.contains("none.expt"), "{}", r.stderr);
    std::fs::write(dir.join("bad.expt"), "{\"experiment\": [{}]}").unwrap();
    let r = run(&dir, "-expt bad.expt -default_F 10 -nopgm -nonoise");
    // led by the flag, as the CLI's other file errors
    assert!(
        r.stderr.contains("error: -expt: bad.expt: beam: missing"),
        "{}",
        r.stderr
    );
    // a detector 1e300 mm away (the fuzz run's: NaN pixels in single precision): refused
    let far = PANEL.replace("-95.0]", "-1e300]");
    assert_ne!(far, PANEL);
    std::fs::write(dir.join("far.expt"), expt(&far)).unwrap();
    let r = run(&dir, "-expt far.expt -default_F 10 -nopgm -nonoise");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("mm from the sample, more than 1e+15 mm"),
        "{}",
        r.stderr
    );
    std::fs::write(dir.join("bad.geom"), "clen = 0.1\n").unwrap();
    let r = run(&dir, "-geom bad.geom -default_F 10 -nopgm -nonoise");
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(r.stderr.contains("error: -geom: bad.geom"), "{}", r.stderr);
}
