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
//! Adding a target (e.g. a new parser): a function here, a row in [`TARGETS`], a three-line
//! file `fuzz/fuzz_targets/<name>.rs`, a `[[bin]]` entry in `fuzz/Cargo.toml`, and seeds in
//! `fuzz/corpus/<name>/`.

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
];

/// The body of a target by name.
pub fn target(name: &str) -> Option<Body> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Largest HKL table the parser bodies build (the real limit, `io::hkl::MAX_TABLE`, takes half
/// a second to fill; the size check is the same code).
const FUZZ_TABLE: usize = 1 << 20;

/// `-hkl` text: parse with and without a default F; a table that parses must have the size its
/// bounds promise and survive the `Fdump.bin` round trip bit for bit.
pub fn hkl(data: &[u8]) {
    for default_f in [0.0, 100.0] {
        let Ok(g) = io::hkl::parse_hkl_limited("fuzz.hkl", data, default_f, FUZZ_TABLE) else {
            continue;
        };
        let want =
            (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
        assert_eq!(g.data.len(), want, "table size");
        let dump = io::hkl::write_fdump(&g);
        let back = io::hkl::read_fdump_limited("Fdump.bin", &dump, FUZZ_TABLE)
            .expect("a dump we wrote reads back");
        assert_eq!(
            (back.h_min, back.h_max, back.k_min, back.k_max, back.l_min, back.l_max),
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max)
        );
        assert!(back
            .data
            .iter()
            .zip(&g.data)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// `Fdump.bin`: the binary structure-factor cache.
pub fn fdump(data: &[u8]) {
    if let Ok(g) = io::hkl::read_fdump_limited("Fdump.bin", data, FUZZ_TABLE) {
        let want =
            (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
        assert_eq!(g.data.len(), want, "table size");
    }
}

/// `-mat`: MOSFLM orientation matrix.
pub fn matrix(data: &[u8]) {
    let _ = io::matfile::parse_mat("A.mat", data);
}

/// `-sourcefile`: multi-column text.
pub fn sources(data: &[u8]) {
    if let Ok(rows) = io::textcols::read_columns("sources.txt", data, 5) {
        assert!(rows.iter().all(|r| r.len() == 5));
    }
}

/// SMV (`-img`, `-mask`): the reader, then the header's values through the whole resolution as
/// `-img` and as `-mask`, and a render when it is small.
pub fn smv(data: &[u8]) {
    if let Ok(f) = io::smv::read_smv("fuzz.img", data) {
        for key in [
            "SIZE1",
            "SIZE2",
            "PIXEL_SIZE",
            "DISTANCE",
            "WAVELENGTH",
            "PHI",
        ] {
            let _ = io::smv::value_of(&f.header_text, key);
        }
    }
    let mut files = fixture_files();
    files.0.insert("fuzz.img".into(), data.to_vec());
    for flag in ["-img", "-mask"] {
        let words = format!("-cell 100 100 100 90 90 90 -default_F 100 -N 2 {flag} fuzz.img");
        run_words(&api::split_args(&words), &files);
    }
}

/// The argument path, structure-aware: real flags with hostile numbers (see [`decode_words`]),
/// parsed and resolved against small valid input files (and one file of fuzzed bytes); when the
/// work is small the image is rendered in both precisions, checked (no NaN; an infinite pixel
/// refused by `api::check_image`), and turned into the
/// output files' bytes (int image, noise image, PGM) without writing them.
pub fn args(data: &[u8]) {
    let (words, extra) = decode_words(data);
    let mut files = fixture_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    run_words(&words, &files);
}

/// Most pixels, and pixel-terms, a fuzz input may render (larger set-ups are only resolved).
const RENDER_PIXELS: usize = 4096;
const RENDER_TERMS: u64 = 50_000;

fn run_words(words: &[String], files: &MemFiles) {
    let Ok(prep) = api::prepare(words, files) else {
        return;
    };
    let plan = prep.plan();
    let terms = (plan.pixel_count() as u64).saturating_mul(plan.terms_per_pixel());
    if plan.pixel_count() > RENDER_PIXELS || terms > RENDER_TERMS {
        return;
    }
    let cancel = AtomicBool::new(false);
    for precision in [api::Precision::F64, api::Precision::F32] {
        // On the global thread pool: `-threads` is the CLI's business (and a count of a million
        // would spend the run starting threads).
        let Ok(image) = api::render_cpu(plan, precision, &|_| {}, &cancel) else {
            continue;
        };
        assert_eq!(image.len(), plan.pixel_count());
        // NaN is a bug. An infinite pixel is an intensity beyond single precision (huge flux,
        // F, or a pixel at the sample): the renderer's check refuses it with an error naming
        // the flags to lower, never an image (`api::check_image`, applied by `api::Renderer`).
        if let Some(i) = image.iter().position(|v| v.is_nan()) {
            panic!(
                "{precision:?} image has a NaN pixel at {i} for: {}",
                words.join(" ")
            );
        }
        if image.iter().any(|v| v.is_infinite()) {
            let e = api::check_image(plan, &image).expect_err("an infinite pixel is refused");
            assert!(
                e.message.contains("beyond single precision"),
                "{}",
                e.message
            );
            continue;
        }
        let _ = api::statistics(&prep, &image);
        let _ = api::int_image_smv(&prep, &image);
        let _ = api::noise_image_smv(&prep, &image);
    }
}

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

/// What the values of a flag are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Val {
    /// A number (f64).
    N,
    /// A count or index (integer).
    I,
    /// An input file name.
    F,
    /// An output file name.
    O,
    /// A word (`-pivot`, `-precision`, `-backend`, `-misset random`).
    W,
}

/// The flags, each with its values (`"nnn"`: three numbers). The names are those of the flag
/// parser (`args.rs`); `crate/tests/fuzz_smoke.rs` checks that each one is accepted.
const FLAGS: &[(&str, &str)] = &[
    ("-hkl", "f"),
    ("-dump", "f"),
    ("-default_F", "n"),
    ("-mat", "f"),
    ("-matrix", "f"),
    ("-cell", "nnnnnn"),
    ("-img", "f"),
    ("-mask", "f"),
    ("-sourcefile", "f"),
    ("-stol", "f"),
    ("-4stol", "f"),
    ("-Q", "f"),
    ("-stolout", "o"),
    ("-N", "i"),
    ("-Na", "i"),
    ("-Nb", "i"),
    ("-Nc", "i"),
    ("-samplesize", "n"),
    ("-xtalsize", "n"),
    ("-xtal_thick", "n"),
    ("-xtal_width", "n"),
    ("-xtal_height", "n"),
    ("-density", "n"),
    ("-misset", "nnn"),
    ("-misset", "w"),
    ("-misset_seed", "inn"),
    ("-mosaic", "n"),
    ("-mosaic_dom", "i"),
    ("-mosaic_seed", "i"),
    ("-square_xtal", ""),
    ("-round_xtal", ""),
    ("-gauss_xtal", ""),
    ("-tophat_spots", ""),
    ("-binary_spots", ""),
    ("-fudge", "n"),
    ("-interpolate", ""),
    ("-nointerpolate", ""),
    ("-phi", "n"),
    ("-osc", "n"),
    ("-phistep", "n"),
    ("-phisteps", "i"),
    ("-spindle_axis", "nnn"),
    ("-lambda", "n"),
    ("-energy", "n"),
    ("-dispersion", "n"),
    ("-dispsteps", "i"),
    ("-divergence", "n"),
    ("-hdivrange", "n"),
    ("-vdivrange", "n"),
    ("-hdivstep", "n"),
    ("-vdivstep", "n"),
    ("-hdivsteps", "i"),
    ("-vdivsteps", "i"),
    ("-divsteps", "i"),
    ("-round_div", ""),
    ("-square_div", ""),
    ("-beam_vector", "nnn"),
    ("-polar_vector", "nnn"),
    ("-polar", "n"),
    ("-nopolar", ""),
    ("-fluence", "n"),
    ("-flux", "n"),
    ("-exposure", "n"),
    ("-beamsize", "n"),
    ("-water", "n"),
    ("-pixel", "n"),
    ("-detsize", "n"),
    ("-detsize_f", "n"),
    ("-detsize_s", "n"),
    ("-detpixels", "i"),
    ("-detpixels_f", "i"),
    ("-detpixels_s", "i"),
    ("-distance", "n"),
    ("-close_distance", "n"),
    ("-Xbeam", "n"),
    ("-Ybeam", "n"),
    ("-Xclose", "n"),
    ("-Yclose", "n"),
    ("-ORGX", "n"),
    ("-ORGY", "n"),
    ("-pivot", "w"),
    ("-mosflm", ""),
    ("-denzo", ""),
    ("-adxv", ""),
    ("-xds", ""),
    ("-dials", ""),
    ("-fdet_vector", "nnn"),
    ("-sdet_vector", "nnn"),
    ("-odet_vector", "nnn"),
    ("-twotheta_axis", "nnn"),
    ("-pix0_vector", "nnn"),
    ("-twotheta", "n"),
    ("-detector_rotx", "n"),
    ("-detector_roty", "n"),
    ("-detector_rotz", "n"),
    ("-curved_det", ""),
    ("-point_pixel", ""),
    ("-detector_abs", "n"),
    ("-detector_thick", "n"),
    ("-detector_thicksteps", "i"),
    ("-thicksteps", "i"),
    ("-oversample", "i"),
    ("-oversample_thick", ""),
    ("-oversample_polar", ""),
    ("-oversample_omega", ""),
    ("-roi", "iiii"),
    ("-dmin", "n"),
    ("-floatfile", "o"),
    ("-intfile", "o"),
    ("-noisefile", "o"),
    ("-nonoise", ""),
    ("-pgmfile", "o"),
    ("-nopgm", ""),
    ("-scale", "n"),
    ("-pgmscale", "n"),
    ("-adc", "n"),
    ("-seed", "i"),
    ("-printout", ""),
    ("-printout_pixel", "ii"),
    ("-progress", ""),
    ("-noprogress", ""),
    ("-precision", "w"),
    ("-threads", "i"),
    ("-backend", "w"),
    ("-timings", ""),
];

/// Every flag name the decoder emits (for the test that checks them against the parser).
pub fn flag_names() -> impl Iterator<Item = &'static str> {
    FLAGS.iter().map(|(n, _)| *n)
}

/// Numbers that break things: non-finite, signed zero, extremes of f64 and of the integer
/// types, values just past common limits, and text the parsers must reject.
const HOSTILE: &[&str] = &[
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "infinity",
    "-0",
    "0",
    "1e308",
    "-1e308",
    "1e-308",
    "4.9e-324",
    "-1e19",
    "1e19",
    "1e300",
    "1e-300",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e6",
    "1e7",
    "1e9",
    "1000000",
    "100000",
    "65536",
    "0.5",
    "1",
    "2",
    "3",
    "-1",
    "-2",
    "10",
    "90",
    "180",
    "-90",
    "360",
    "100",
    "0.1",
    "1e-10",
    "1e-6",
    "0x10",
    "1e",
    ".",
    "+",
    "-",
    "",
    "1,5",
    "abc",
];

/// Words for the word-valued flags.
const WORDS: &[&str] = &[
    "random", "sample", "beam", "f32", "f64", "single", "double", "cpu", "auto", "x",
];

/// Input file names: the fixtures, the fuzzed file, and ones that do not exist.
const FILES: &[&str] = &[
    "x.hkl", "far.hkl", "A.mat", "src.txt", "img.img", "fuzz.dat", "fuzz.dat", "missing",
];

/// A reader over the fuzz input; past the end it reads zeros.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |acc, _| (acc << 8) | self.u8() as u64)
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.u8() as usize % from.len()]
    }
    /// The bytes after the current position (all of them, to the end).
    fn rest(&mut self) -> &'a [u8] {
        let r = &self.data[self.pos.min(self.data.len())..];
        self.pos = self.data.len();
        r
    }
    fn number(&mut self, integer: bool) -> String {
        match self.u8() % 8 {
            0..=3 => self.pick(HOSTILE).to_string(),
            4 => (self.u8() as i64 - 64).to_string(),
            5 => (self.u64() as i64).to_string(),
            6 if !integer => format!("{:e}", f64::from_bits(self.u64())),
            6 => (self.u64() as i64 >> (self.u8() % 64)).to_string(),
            _ => format!("{}", self.u8() as f64 / 4.0),
        }
    }
}

/// Words for the argument target.
///
/// `W` followed by text: the text's whitespace-separated words, literally (seeds are the golden
/// cases' command lines); after a NUL byte, the rest is the file `fuzz.dat`. Otherwise the bytes are a program: a base set-up (a small cubic crystal
/// and detector, so that resolution gets past the required inputs), then per step a flag with
/// values of its kinds drawn from [`HOSTILE`] and from the input, a stray number, a flag with a
/// wrong number of values, or "the rest of the input is the file `fuzz.dat`".
pub fn decode_words(data: &[u8]) -> (Vec<String>, Option<&[u8]>) {
    decode_with(data, &NANOBRAGG)
}

/// What the structure-aware decoder draws from, per program.
pub struct Grammar {
    /// The base set-up (words), used unless the first byte is a multiple of 4.
    pub base: &'static str,
    pub flags: &'static [(&'static str, &'static str)],
    pub files: &'static [&'static str],
    pub words: &'static [&'static str],
}

/// nanoBragg's command line.
pub const NANOBRAGG: Grammar = Grammar {
    base: "-cell 100 100 100 90 90 90 -default_F 100 -N 2 -detpixels 8 -distance 100",
    flags: FLAGS,
    files: FILES,
    words: WORDS,
};

/// Words for a grammar (see [`decode_words`]).
pub fn decode_with<'a>(data: &'a [u8], g: &Grammar) -> (Vec<String>, Option<&'a [u8]>) {
    if let Some(rest) = data.strip_prefix(b"W") {
        let (text, file) = match rest.iter().position(|&b| b == 0) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let text = String::from_utf8_lossy(text);
        return (text.split_whitespace().map(String::from).collect(), file);
    }
    let mut b = Bytes { data, pos: 0 };
    let mut words: Vec<String> = Vec::new();
    if !b.u8().is_multiple_of(4) {
        for w in g.base.split(' ') {
            words.push(w.to_string());
        }
    }
    let mut extra = None;
    let mut steps = 0;
    while !b.done() && steps < 64 {
        steps += 1;
        match b.u8() % 16 {
            0..=11 => {
                let (name, vals) = b.pick(g.flags);
                words.push(name.to_string());
                for v in vals.chars() {
                    words.push(value(&mut b, v, g));
                }
            }
            12 => words.push(b.number(false)),
            13 => {
                let (name, _) = b.pick(g.flags);
                words.push(name.to_string());
                for _ in 0..b.u8() % 4 {
                    words.push(b.number(false));
                }
            }
            14 => {
                // a word of the input's own bytes
                let n = (b.u8() % 12) as usize;
                let w: String = (0..n).map(|_| (b.u8() % 95 + 32) as char).collect();
                words.push(w);
            }
            _ => {
                extra = Some(b.rest());
            }
        }
    }
    (words, extra)
}

fn value(b: &mut Bytes, kind: char, g: &Grammar) -> String {
    let kind = match kind {
        'n' => Val::N,
        'i' => Val::I,
        'f' => Val::F,
        'o' => Val::O,
        _ => Val::W,
    };
    match kind {
        Val::N => b.number(false),
        Val::I => b.number(true),
        Val::F => b.pick(g.files).to_string(),
        Val::O => "out.bin".to_string(),
        Val::W => b.pick(g.words).to_string(),
    }
}

// ---- structure factors from a model, .stol tables, noisify, nonBragg -----------------------------

/// Most atoms (after reading) and reflections a model input is computed for; larger models
/// are only read (the direct sum is atoms × symmetry × reflections, linear, and fast).
const MODEL_ATOMS: usize = 200;
const MODEL_REFLECTIONS: f64 = 3000.0;

/// A PDB or mmCIF model (`-pdb`): read (format by content), then, when small, the structure
/// factors to a resolution chosen so that about [`MODEL_REFLECTIONS`] reflections are computed
/// at most: every |F| finite and non-negative, the table's size what its bounds promise.
pub fn model(data: &[u8]) {
    let Ok(m) = nanobragg::sf::read_model("fuzz.pdb", data) else {
        return;
    };
    let v = m.cell.volume();
    assert!(v.is_finite() && v > 0.0, "cell volume {v} of a model read");
    if m.atoms.len() > MODEL_ATOMS {
        return;
    }
    // reflections within 1/d: (4/3)π/d³ · V; at least 2 Å (smaller cells: fewer reflections)
    let d_min = ((4.0 / 3.0) * std::f64::consts::PI * v / MODEL_REFLECTIONS)
        .cbrt()
        .max(2.0);
    let opts = nanobragg::sf::SfOptions::to_resolution(d_min);
    let Ok((g, summary)) =
        nanobragg::sf::compute_model(&m, &opts, &|_| {}, &AtomicBool::new(false))
    else {
        return;
    };
    let want = (g.h_range() as usize + 1) * (g.k_range() as usize + 1) * (g.l_range() as usize + 1);
    assert_eq!(g.data.len(), want, "table size");
    if let Some(i) = g.data.iter().position(|f| !f.is_finite() || *f < 0.0) {
        panic!(
            "|F| = {} at table index {i} ({})",
            g.data[i],
            summary.describe()
        );
    }
}

/// A `.stol` table (nonBragg's `-stol`, `-4stol`, `-Q`): read in each unit; a table read must
/// interpolate to finite values everywhere.
pub fn stol(data: &[u8]) {
    use nanobragg::io::stol::{read_stol, StolUnit};
    for unit in [StolUnit::Stol, StolUnit::FourStol, StolUnit::Q] {
        let Ok(t) = read_stol("fuzz.stol", data, unit) else {
            continue;
        };
        assert_eq!(t.stol.len(), t.f.len());
        assert!(
            t.stol.windows(2).all(|w| w[0] < w[1]),
            "table not increasing"
        );
        for x in [0.0, 1e8, 1e9, 5e9, 1e10, 1e11, -1.0, 1e300] {
            let f = t.interpolate(x);
            assert!(f.is_finite(), "F({x}) = {f} for a table read ({unit:?})");
        }
        for &x in t.stol.iter().skip(2).take(64) {
            let f = t.interpolate(x);
            assert!(f.is_finite(), "F({x}) = {f} at a table point ({unit:?})");
        }
    }
}

/// Most pixels a noisify or nonBragg input renders.
const PROGRAM_PIXELS: usize = 4096;

/// noisify's command line (structure-aware, as [`args`]), against a valid 8×8 float image, an
/// SMV header and a fuzzed file: parse, prepare, and when small apply every effect; the counts
/// and the header must come out.
pub fn noisify(data: &[u8]) {
    let (words, extra) = decode_with(data, &NOISIFY);
    let mut files = program_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    let Ok(o) = nanobragg::noisify::options::parse(&words) else {
        return;
    };
    let Ok(p) = nanobragg::noisify::options::prepare(&o, &files, 12345) else {
        return;
    };
    assert_eq!(p.input.len(), p.width * p.height, "image size");
    if p.width * p.height > PROGRAM_PIXELS {
        return;
    }
    let cancel = AtomicBool::new(false);
    let Ok(d) = nanobragg::noisify::detect(
        &p.input,
        p.width,
        p.height,
        &p.effects,
        o.bits32,
        &|_| {},
        &cancel,
    ) else {
        return;
    };
    assert_eq!(d.adu.len(), p.input.len());
    if let Some(n) = &d.noise {
        assert_eq!(n.adu.len(), p.input.len());
    }
    let _ = nanobragg::noisify::options::own_header(&p);
}

/// nonBragg's command line (structure-aware), against upstream's water table, a source file
/// and a fuzzed file: parse, prepare, and when small render; the image must be finite, its
/// statistics and SMV header must come out.
pub fn nonbragg(data: &[u8]) {
    use nanobragg::nonbragg;
    let (words, extra) = decode_with(data, &NONBRAGG);
    let mut files = program_files();
    if let Some(bytes) = extra {
        files.0.insert("fuzz.dat".into(), bytes.to_vec());
    }
    let Ok(o) = nonbragg::options::parse(&words) else {
        return;
    };
    let Ok(setup) = nonbragg::prepare(&o, &files, 12345) else {
        return;
    };
    let plan = setup.plan();
    let work = (plan.pixel_count() as u64)
        .saturating_mul(setup.sources.len() as u64)
        .saturating_mul((plan.oversample as u64).saturating_mul(plan.oversample as u64));
    if plan.pixel_count() > PROGRAM_PIXELS || work > RENDER_TERMS {
        return;
    }
    let cancel = AtomicBool::new(false);
    let Ok((image, _omega)) = nonbragg::render(&setup, &|_| {}, &cancel) else {
        return;
    };
    assert_eq!(image.len(), plan.pixel_count());
    if let Some(i) = image.iter().position(|v| !v.is_finite()) {
        panic!(
            "nonBragg image has a non-finite pixel ({}) at {i} for: {}",
            image[i],
            words.join(" ")
        );
    }
    let _ = nonbragg::statistics(&setup, &image);
    let _ = nonbragg::smv_header(&setup);
}

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

/// noisify's flags and their values (names from `noisify/options.rs`).
const NOISIFY_FLAGS: &[(&str, &str)] = &[
    ("-floatfile", "f"),
    ("-floatimage", "f"),
    ("-bin", "f"),
    ("-header", "f"),
    ("-intfile", "o"),
    ("-pgmfile", "o"),
    ("-noisefile", "o"),
    ("-cbffile", "o"),
    ("-nonoise", ""),
    ("-nopgm", ""),
    ("-lambda", "n"),
    ("-Xbeam", "n"),
    ("-Ybeam", "n"),
    ("-distance", "n"),
    ("-detsize", "n"),
    ("-detpixels", "i"),
    ("-detpixels_x", "i"),
    ("-detpixels_y", "i"),
    ("-pixel", "n"),
    ("-psf", "w"),
    ("-psf_radius", "n"),
    ("-psf_fwhm", "n"),
    ("-fluence", "n"),
    ("-scale", "n"),
    ("-readout_noise", "n"),
    ("-flicker", "n"),
    ("-calibration", "n"),
    ("-seed", "i"),
    ("-calib_seed", "i"),
    ("-badpix_seed", "i"),
    ("-adc", "n"),
    ("-gain", "n"),
    ("-bits", "w"),
    ("-phi", "n"),
    ("-osc", "n"),
];

/// The noisify grammar: a small valid set-up (an 8×8 image, a Gaussian PSF, noise sources).
pub const NOISIFY: Grammar = Grammar {
    base: "-floatfile float.bin -detpixels 8 -pixel 0.1 -distance 100 -psf gauss -psf_fwhm 100 -readout 3 -flicker 0.01 -calibration 0.02",
    flags: NOISIFY_FLAGS,
    files: &[
        "float.bin",
        "img.img",
        "fuzz.dat",
        "fuzz.dat",
        "water.stol",
        "missing",
    ],
    words: &["gauss", "fiber", "16", "32", "8", "x"],
};

/// nonBragg's flags and their values (names from `nonbragg/options.rs`).
const NONBRAGG_FLAGS: &[(&str, &str)] = &[
    ("-stol", "f"),
    ("-4stol", "f"),
    ("-Q", "f"),
    ("-sourcefile", "f"),
    ("-floatfile", "o"),
    ("-intfile", "o"),
    ("-pgmfile", "o"),
    ("-noisefile", "o"),
    ("-nonoise", ""),
    ("-nopgm", ""),
    ("-samplesize", "n"),
    ("-thickness", "n"),
    ("-width", "n"),
    ("-height", "n"),
    ("-density", "n"),
    ("-molecules", "n"),
    ("-MW", "n"),
    ("-lambda", "n"),
    ("-energy", "n"),
    ("-dispersion", "n"),
    ("-dispsteps", "i"),
    ("-divergence", "n"),
    ("-hdivrange", "n"),
    ("-vdivrange", "n"),
    ("-hdivstep", "n"),
    ("-vdivstep", "n"),
    ("-hdivsteps", "i"),
    ("-vdivsteps", "i"),
    ("-divsteps", "i"),
    ("-round_div", ""),
    ("-square_div", ""),
    ("-fluence", "n"),
    ("-flux", "n"),
    ("-exposure", "n"),
    ("-beamsize", "n"),
    ("-polar", "n"),
    ("-nopolar", ""),
    ("-beam_vector", "nnn"),
    ("-polar_vector", "nnn"),
    ("-source_distance", "n"),
    ("-detector", "w"),
    ("-pixel", "n"),
    ("-detsize", "n"),
    ("-detsize_x", "n"),
    ("-detsize_y", "n"),
    ("-detpixels", "i"),
    ("-detpixels_f", "i"),
    ("-detpixels_s", "i"),
    ("-distance", "n"),
    ("-close_distance", "n"),
    ("-Xbeam", "n"),
    ("-Ybeam", "n"),
    ("-Xclose", "n"),
    ("-Yclose", "n"),
    ("-ORGX", "n"),
    ("-ORGY", "n"),
    ("-pivot", "w"),
    ("-fdet_vector", "nnn"),
    ("-sdet_vector", "nnn"),
    ("-odet_vector", "nnn"),
    ("-twotheta_axis", "nnn"),
    ("-twotheta", "n"),
    ("-detector_rotx", "n"),
    ("-detector_roty", "n"),
    ("-detector_rotz", "n"),
    ("-curved_det", ""),
    ("-point_pixel", ""),
    ("-Fmap", ""),
    ("-oversample", "i"),
    ("-roi", "iiii"),
    ("-scale", "n"),
    ("-pgmscale", "n"),
    ("-adc", "n"),
    ("-gain", "n"),
    ("-seed", "i"),
    ("-phi", "n"),
    ("-osc", "n"),
    ("-phistep", "n"),
    ("-phisteps", "i"),
    ("-threads", "i"),
];

/// The nonBragg grammar: a small valid set-up (water, an 8×8 detector).
pub const NONBRAGG: Grammar = Grammar {
    base: "-stol water.stol -detpixels 8 -pixel 0.1 -distance 100 -lambda 1 -thickness 0.1",
    flags: NONBRAGG_FLAGS,
    files: &[
        "water.stol",
        "src.txt",
        "fuzz.dat",
        "fuzz.dat",
        "float.bin",
        "missing",
    ],
    words: &["sample", "beam", "pilatus6m", "eiger2-16m", "x", "random"],
};

/// Every flag name of a grammar (for the tests that check them against the programs' parsers).
pub fn grammar_flag_names(g: &Grammar) -> impl Iterator<Item = &'static str> {
    g.flags.iter().map(|(n, _)| *n)
}
