//! `-pdb MODEL` and `-hklout FILE` on the command line: a model renders, the table written by
//! -hklout reads back through -hkl (and the Fdump.bin cache) to the identical image, and bad
//! models give clear errors naming the file and line, with no output written.

mod common;
use common::*;
use std::path::Path;

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

const GEOM: &str = "-lambda 1 -N 3 -distance 60 -detpixels 96 -pixel 0.3 -nonoise -nopgm";

fn model(dir: &Path, name: &str) {
    std::fs::copy(
        repo_root().join("tests/fixtures/models").join(name),
        dir.join(name),
    )
    .unwrap();
}

fn ok(r: &Run) {
    assert_eq!(r.status, 0, "stderr:\n{}\nstdout:\n{}", r.stderr, r.stdout);
}

#[test]
fn pdb_renders_and_hklout_round_trips_through_hkl_and_fdump() {
    let d1 = scratch("sf-cli-pdb");
    model(&d1, "5e5z.pdb");
    let r = run_cli(
        &d1,
        &words(&format!(
            "-pdb 5e5z.pdb {GEOM} -hklout table.hkl -floatfile a.bin"
        )),
    );
    ok(&r);
    assert!(r.stdout.contains("space group P 1 21 1"), "{}", r.stdout);
    assert!(
        r.stdout.contains("structure factors: 5e5z.pdb (PDB model"),
        "{}",
        r.stdout
    );
    let a = read_f32(&d1.join("a.bin"));
    let max = a.iter().cloned().fold(0.0f32, f32::max);
    let mean = a.iter().map(|&v| v as f64).sum::<f64>() / a.len() as f64;
    assert!(
        max as f64 > 10.0 * mean && mean > 0.0,
        "max {max} mean {mean}"
    );
    assert!(
        d1.join("Fdump.bin").is_file(),
        "the table is cached like -hkl's"
    );

    // the written table, read back with -hkl in the model's cell: the identical image
    let d2 = scratch("sf-cli-hkl");
    std::fs::copy(d1.join("table.hkl"), d2.join("table.hkl")).unwrap();
    let cell = "-cell 9.643 9.609 19.029 90 101.22 90";
    let r = run_cli(
        &d2,
        &words(&format!("-hkl table.hkl {cell} {GEOM} -floatfile b.bin")),
    );
    ok(&r);
    assert_eq!(a, read_f32(&d2.join("b.bin")), "-hklout table through -hkl");

    // and through the Fdump.bin cache (no -hkl, no -pdb)
    let r = run_cli(&d1, &words(&format!("{cell} {GEOM} -floatfile c.bin")));
    ok(&r);
    assert!(
        r.stderr
            .contains("reading structure factors from Fdump.bin"),
        "{}",
        r.stderr
    );
    assert_eq!(a, read_f32(&d1.join("c.bin")), "Fdump.bin cache");
}

#[test]
fn cell_flag_wins_for_the_lattice_and_is_logged() {
    let d = scratch("sf-cli-cell");
    model(&d, "4oz7.pdb");
    let r = run_cli(
        &d,
        &words(&format!(
            "-pdb 4oz7.pdb -cell 38 39.42 40.24 90 90 90 -dmin 4 {GEOM} -floatfile a.bin"
        )),
    );
    ok(&r);
    assert!(
        r.stdout
            .contains("the crystal lattice is the one given by -cell/-mat"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("differs from the model's cell"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("to 4.000 Å"), "{}", r.stdout);
}

fn assert_fails(name: &str, files: &[(&str, &[u8])], args: &str, status: i32, needle: &str) {
    let d = scratch(name);
    for (f, bytes) in files {
        std::fs::write(d.join(f), bytes).unwrap();
    }
    let r = run_cli(&d, &words(&format!("{args} {GEOM}")));
    assert_eq!(r.status, status, "stderr:\n{}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "want {needle:?} in:\n{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let written: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| !files.iter().any(|(n, _)| n == f))
        .collect();
    assert!(
        written.is_empty(),
        "files written despite the error: {written:?}"
    );
}

#[test]
fn bad_models_are_clear_errors() {
    let good = std::fs::read(repo_root().join("tests/fixtures/models/5e5z.pdb")).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    assert_fails(
        "sf-cli-missing",
        &[],
        "-pdb nothere.pdb",
        1,
        "cannot read file 'nothere.pdb'",
    );
    let cut = &good[..text.find("ATOM      5").unwrap() + 40];
    assert_fails(
        "sf-cli-cut",
        &[("cut.pdb", cut)],
        "-pdb cut.pdb",
        1,
        "cut.pdb line ",
    );
    let elem = text.replacen("           N  \n", "          QQ  \n", 1);
    assert_fails(
        "sf-cli-elem",
        &[("q.pdb", elem.as_bytes())],
        "-pdb q.pdb",
        1,
        "unknown element \"QQ\"",
    );
    let nocell: String = text
        .lines()
        .filter(|l| !l.starts_with("CRYST1"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_fails(
        "sf-cli-nocell",
        &[("n.pdb", nocell.as_bytes())],
        "-pdb n.pdb",
        1,
        "n.pdb: no CRYST1 record",
    );
    assert_fails(
        "sf-cli-both",
        &[("m.pdb", &good), ("x.hkl", b"0 0 0 1\n")],
        "-pdb m.pdb -hkl x.hkl",
        2,
        "-pdb and -hkl both give structure factors",
    );
    assert_fails(
        "sf-cli-notmodel",
        &[("x.hkl", b"0 0 0 1\n")],
        "-pdb x.hkl",
        1,
        "x.hkl: not a coordinate file",
    );
}
