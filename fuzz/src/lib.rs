//! The bodies of the fuzz targets, as plain functions of arbitrary bytes.
//!
//! Each body must never panic, abort, hang or exhaust memory, whatever the bytes; an error
//! result is fine. Where a body gets an image it also checks that no pixel is NaN (a bug) and
//! that an infinite pixel (an intensity beyond single precision) is refused by the renderer's
//! check with a clear error (issue 10: never a NaN or infinite image with success). The same functions are driven by
//! cargo-fuzz (`fuzz/fuzz_targets/<name>.rs`, libFuzzer, nightly) and by the ordinary test
//! `crate/tests/fuzz_smoke.rs` (a deterministic mutation run and the regression corpus, stable,
//! part of `npm test`), which includes this file with `#[path]`.
//!
//! Adding a target (e.g. a new parser): its body in `<name>.rs` (a `mod` and `pub use` line here), a row in [`TARGETS`], a three-line
//! file `fuzz/fuzz_targets/<name>.rs`, a `[[bin]]` entry in `fuzz/Cargo.toml`, and seeds in
//! `fuzz/corpus/<name>/`.

mod args;
mod cbf;
mod expt;
mod fdump;
mod geom;
mod grammar;
mod h5chunk;
mod hkl;
mod matrix;
mod measured;
mod model;
mod noisify;
mod nonbragg;
mod smv;
mod sources;
mod stol;

pub use args::args;
pub use cbf::cbf;
pub use expt::expt;
pub use fdump::fdump;
pub use geom::geom;
#[allow(unused_imports)] // used by the fuzz targets, not by every includer
pub use grammar::{
    decode_with, decode_words, flag_names, grammar_flag_names, Grammar, NANOBRAGG, NOISIFY,
    NONBRAGG,
};
pub use h5chunk::h5chunk;
pub use hkl::hkl;
pub use matrix::matrix;
pub use measured::measured;
pub use model::model;
pub use noisify::noisify;
pub use nonbragg::nonbragg;
pub use smv::smv;
pub use sources::sources;
pub use stol::stol;

use nanobragg::api;
use nanobragg::files::MemFiles;
use nanobragg::io;
use std::sync::atomic::AtomicBool;

/// A target's body.
pub type Body = fn(&[u8]);

/// Every target: name and body.
pub const TARGETS: &[(&str, Body)] = &[
    ("args", args),
    ("hkl", hkl),
    ("fdump", fdump),
    ("matrix", matrix),
    ("sources", sources),
    ("smv", smv),
    ("model", model),
    ("stol", stol),
    ("noisify", noisify),
    ("nonbragg", nonbragg),
    ("cbf", cbf),
    ("measured", measured),
    ("h5chunk", h5chunk),
    ("expt", expt),
    ("geom", geom),
];

/// The body of a target by name.
pub fn target(name: &str) -> Option<Body> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Largest HKL table the parser bodies build (the real limit, `io::hkl::MAX_TABLE`, takes half
/// a second to fill; the size check is the same code).
const FUZZ_TABLE: usize = 1 << 20;

/// Most pixels, and pixel-terms, a fuzz input may render (larger set-ups are only resolved).
const RENDER_PIXELS: usize = 4096;

const RENDER_TERMS: u64 = 50_000;

/// Small valid input files the decoded words may name.
fn fixture_files() -> MemFiles {
    let mut m = MemFiles::default();
    let mut put = |name: &str, bytes: &[u8]| {
        m.0.insert(name.to_string(), bytes.to_vec());
    };
    put("x.hkl", b"0 0 0 10\n1 1 1 20\n-1 2 0 5\n2 -2 1 7.5\n");
    put("far.hkl", b"5 5 5 50\n8 8 8 50\n");
    put("A.mat", b" 0.01 0 0\n 0 0.01 0\n 0 0 0.01\n");
    put(
        "src.txt",
        b"-10 0 0 1.0 1.0e-10\n-10 0.0015 0 0.5 1.03e-10\n-10 0 -0.002 2.0 0.97e-10\n",
    );
    put("img.img", &small_smv());
    m
}

/// A 4x4 SMV image with a plain header.
pub fn small_smv() -> Vec<u8> {
    let mut v = b"{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n\
SIZE1=4;\nSIZE2=4;\nPIXEL_SIZE=0.1;\nDISTANCE=100;\nWAVELENGTH=1;\nBEAM_CENTER_X=0.2;\n\
BEAM_CENTER_Y=0.2;\nPHI=0;\nOSC_RANGE=0;\n}\x0c"
        .to_vec();
    v.resize(512, b' ');
    for i in 0..16u16 {
        v.extend_from_slice(&(i % 3).to_le_bytes());
    }
    v
}

/// Most pixels a noisify or nonBragg input renders.
const PROGRAM_PIXELS: usize = 4096;

/// Input files of the noisify and nonBragg targets.
fn program_files() -> MemFiles {
    let mut m = fixture_files();
    let float: Vec<u8> = (0..64u32)
        .flat_map(|i| ((i % 7) as f32 * 10.0 + 0.5).to_le_bytes())
        .collect();
    m.0.insert("float.bin".into(), float);
    m.0.insert(
        "water.stol".into(),
        include_bytes!("../../crate/data/stol/water.stol").to_vec(),
    );
    m
}

/// The measured-image reader on one file (and the files given with it): an image it returns
/// holds width × height pixels, and its display values, mask and the form's words are made.
fn measured_file(name: &str, data: &[u8], others: &[(&str, &[u8])]) {
    let Ok(img) = io::measured::read_measured(name, data, others) else {
        return;
    };
    assert_eq!(img.pixels.len(), img.width * img.height, "image size");
    let (display, _) = img.pixels.to_display();
    assert_eq!(display.len(), img.pixels.len());
    let _ = img.pixels.mask();
    let (words, _) = img.geometry.words(img.width, img.height);
    for (flag, value) in &words {
        let v: f64 = value.parse().expect("a number");
        assert!(v.is_finite(), "{flag} {value}");
    }
}

/// A detector file (`-expt`, `-geom`) named `name` with the bytes `data`, through the resolution
/// as the CLI takes it, and a small render.
fn geometry_file(flag: &str, name: &str, data: &[u8]) {
    let mut files = fixture_files();
    files.0.insert(name.into(), data.to_vec());
    let words = format!("-cell 100 100 100 90 90 90 -default_F 100 -N 2 {flag} {name}");
    args::run_words(&api::split_args(&words), &files);
}
