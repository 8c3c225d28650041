//! Bad coordinate files: clear errors naming the file and line, never a panic. Specific cases
//! are unit tests in crate/src/sf/{pdb,cif,model}.rs; here every fixture model is cut at many
//! points, has lines replaced by junk and bytes flipped, and each result must be a model or an
//! `Input` error whose message starts with the file name.

use nanobragg::error::ErrorKind;
use nanobragg::sf::{self, SfOptions};
use std::sync::atomic::AtomicBool;

const MODELS: [&str; 7] = [
    "1pfe.cif",
    "4oz7.pdb",
    "5wkd.pdb",
    "5e5z.pdb",
    "5i55.cif",
    "hem_p1.pdb",
    "4hhh_frag.pdb",
];

fn load(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../tests/fixtures/models/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Reads (and for a readable model computes at low resolution); returns the error message.
fn attempt(name: &str, bytes: &[u8]) -> Option<String> {
    let opts = SfOptions::to_resolution(12.0);
    match sf::structure_factors(bytes, name, &opts, &|_| {}, &AtomicBool::new(false)) {
        Ok((grid, _)) => {
            assert!(
                grid.data.iter().all(|v| v.is_finite()),
                "{name}: non-finite F"
            );
            None
        }
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Input, "{name}: {}", e.message);
            assert!(
                e.message.starts_with(name),
                "{name}: the message does not name the file: {}",
                e.message
            );
            Some(e.message)
        }
    }
}

#[test]
fn truncated_files_never_panic() {
    let mut errors = 0;
    for m in MODELS {
        let bytes = load(m);
        let step = (bytes.len() / 100).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let name = format!("{m}@{cut}");
            if let Some(msg) = attempt(&name, &bytes[..cut]) {
                errors += 1;
                // a cut inside an atom record is reported at its line
                let _ = msg;
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn corrupted_lines_and_bytes_never_panic() {
    let junk = [
        "ATOM  ",
        "ATOM      1  N   ALA A   1      xx",
        "HETATM99999",
        "CRYST1   10",
        "ANISOU    1",
        "MODEL",
        "loop_",
        "_atom_site.Cartn_x",
        "'unterminated",
        ";",
        "data_x",
        "_cell.length_a -5",
        "\u{e9}\u{e9}\u{e9} \u{fffd}",
        "",
    ];
    for m in MODELS {
        let bytes = load(m);
        let text = String::from_utf8_lossy(&bytes).to_string();
        let lines: Vec<&str> = text.lines().collect();
        let step = (lines.len() / 20).max(1);
        for i in (0..lines.len()).step_by(step) {
            for j in junk {
                let mut l2 = lines.clone();
                l2[i] = j;
                attempt(&format!("{m}:{i}"), l2.join("\n").as_bytes());
            }
        }
        // byte flips
        let mut seed = 7u64;
        for _ in 0..100 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            let mut b = bytes.clone();
            let at = (seed >> 33) as usize % b.len();
            b[at] = (seed >> 20) as u8;
            attempt(&format!("{m}#{at}"), &b);
        }
    }
}

#[test]
fn specific_errors_name_file_and_line() {
    let pdb = String::from_utf8(load("4oz7.pdb")).unwrap();
    let first_n = pdb
        .lines()
        .position(|l| l.ends_with("           N  "))
        .unwrap()
        + 1;
    let cases: Vec<(String, String)> = vec![
        // unknown element: the atom and the line
        (
            pdb.replacen("           N  \n", "          XX  \n", 1),
            format!("bad.pdb line {first_n}: atom \"N\": unknown element \"XX\""),
        ),
        // missing CRYST1
        (
            pdb.lines()
                .filter(|l| !l.starts_with("CRYST1"))
                .collect::<Vec<_>>()
                .join("\n"),
            "bad.pdb: no CRYST1 record".into(),
        ),
        // unsupported setting
        (
            pdb.replace("I 2 2 2     ", "I 2 2 2 :9  "),
            "bad.pdb line ".into(),
        ),
        // not a coordinate file
        (
            "h k l F\n1 2 3 4\n".into(),
            "bad.pdb: not a coordinate file".into(),
        ),
    ];
    for (text, want) in cases {
        let msg = attempt("bad.pdb", text.as_bytes()).expect("an error");
        assert!(msg.starts_with(&want), "want {want:?}, got {msg:?}");
        println!("{msg}");
    }
    let cif = String::from_utf8(load("1pfe.cif")).unwrap();
    let msg = attempt(
        "bad.cif",
        cif.replace("'P 63 2 2'", "'P 63 2 2 :Q'").as_bytes(),
    )
    .unwrap();
    assert!(msg.contains("unsupported space group or setting"), "{msg}");
    println!("{msg}");
    let cut = &cif[..cif.find("HETATM").unwrap() + 40];
    let msg = attempt("bad.cif", cut.as_bytes()).unwrap();
    assert!(msg.contains("the loop of _atom_site has"), "{msg}");
    println!("{msg}");
}
