//! Helpers shared by the integration tests (the GPU tests reach them through `gpu_support`):
//! where the golden cases are and their list, a case's words, running the CLI on a case in a
//! scratch folder, reading float images, and the one image comparison; for the library's
//! tests: words of a string, a golden case set up in process, PDB 1PFE set up as the realistic
//! chain does it, a fit's errors, and the derivatives' finite differences and weights.
#![allow(dead_code, unused_macros)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The golden cases in the repository (`tests/fixtures/golden/<case>`).
pub fn golden_dir(case: &str) -> PathBuf {
    repo_root().join("tests/fixtures/golden").join(case)
}

/// The full shared golden suite, which also holds the two large scaling cases that are not
/// copied into the repository: `$NANOBRAGG_SHARED_GOLDEN` when set, else `../shared/golden`
/// beside the checkout; `None` when neither exists (a fresh clone).
pub fn shared_golden() -> Option<PathBuf> {
    let dir = match std::env::var_os("NANOBRAGG_SHARED_GOLDEN") {
        Some(d) => PathBuf::from(d),
        None => repo_root().join("../shared/golden"),
    };
    dir.is_dir().then_some(dir)
}

/// Prints a line that the test harness's output capture cannot swallow (for SKIPPED lines).
pub fn loud(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

/// The two cases only the shared suite holds (4 and 16 MiB float images).
pub const SHARED_ONLY_CASES: [&str; 2] = ["scaling_1024", "scaling_2048"];

/// The folder of a shared-only case, or `None` after printing a loud SKIPPED line (the case
/// cannot be checked on a fresh clone).
pub fn shared_case(case: &str) -> Option<PathBuf> {
    let dir = shared_golden().map(|d| d.join(case));
    match dir {
        Some(d) if d.join("float.bin").exists() => Some(d),
        _ => {
            let msg = format!(
                "SKIPPED {case}: only in the shared golden suite (set NANOBRAGG_SHARED_GOLDEN or put shared/golden beside the checkout)"
            );
            loud(&msg);
            None
        }
    }
}

/// The golden cases of `tests/fixtures/golden`, in one list: `golden_cases!(m)` expands to
/// `m!(case, case, ...)` (use `#[macro_use] mod common;`). A test checks that every folder is
/// listed.
macro_rules! golden_cases {
    ($m:ident) => {
        $m!(
            adxv_xybeam,
            cubic_basic_mosflm,
            curved_det_nopolar,
            custom_twotheta_axis,
            custom_vectors_pix0_pivot_beam,
            custom_xclose_pivot_sample_rot,
            denzo_xybeam_pixel008,
            detector_thickness_layers,
            dials_orgxy_roty,
            dispersion_divergence,
            divergence_round_divsteps,
            divergence_square_stepsize,
            dmin_roi,
            energy_scale_adc_pgmscale_noise,
            flux_exposure_beamsize_xtalsize_noise,
            gauss_xtal_fudge,
            hkl_interpolate_auto_Na2,
            hkl_interpolate_explicit,
            hkl_sparse_default_F,
            mat_3line_misset_Nabc_square,
            mat_mosflm9_hkl_nearest,
            misset_random_seed,
            mosaic_domains_seed_noise,
            mosflm_detrot_xyz_close_distance,
            mosflm_twotheta_pivot_sample_ignored,
            nonsquare_detpixels_fs,
            nonsquare_detsize_xds,
            oversample_explicit,
            oversample_thick_polar_omega,
            phi_osc_phisteps_triclinic,
            point_pixel_pixel0172,
            polar_kahn_wide_angle,
            precision_cubic300_N50,
            precision_triclinic_big,
            round_xtal_fudge,
            sourcefile_3sources,
            spindle_axis_phistep,
            tophat_spots_fudge,
            triclinic_misset_xybeam,
            water_background,
            xds_orgxy_rotx,
            xds_twotheta_close_distance,
        );
    };
}

/// Fails when a folder of `tests/fixtures/golden` is missing from `listed`.
pub fn check_every_fixture_is_listed(listed: &[&str]) {
    let dir = repo_root().join("tests/fixtures/golden");
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            let name = e.file_name().into_string().unwrap();
            assert!(
                listed.contains(&name.as_str()),
                "golden case {name} has no test"
            );
        }
    }
}

/// A fresh scratch folder under the target directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Flags of the golden cases that name an output file, and an input file.
const OUTPUT_FLAGS: [&str; 4] = ["-floatfile", "-intfile", "-pgmfile", "-noisefile"];
const INPUT_FLAGS: [&str; 5] = ["-hkl", "-mat", "-sourcefile", "-img", "-mask"];

/// How a case's words are adapted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// For the CLI run in a scratch copy of the case folder: every output renamed `ours_<name>`.
    Cli,
    /// For an in-process render (`api::prepare` with `DiskFiles`): input files made absolute
    /// (the case folder), outputs dropped.
    InProcess,
}

/// The words of a case's `args.txt`, adapted for `how`.
pub fn case_words_for(dir: &Path, how: Words) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("args.txt"))
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.join("args.txt").display()));
    let words = nanobragg::api::split_args(&text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let value = words.get(i + 1);
        match (how, value) {
            (Words::Cli, Some(v)) if OUTPUT_FLAGS.contains(&w) => {
                out.push(w.to_string());
                out.push(format!("ours_{v}"));
            }
            (Words::InProcess, Some(_)) if OUTPUT_FLAGS.contains(&w) => {}
            (Words::InProcess, Some(v)) if INPUT_FLAGS.contains(&w) => {
                out.push(w.to_string());
                out.push(dir.join(v).to_string_lossy().into_owned());
            }
            _ => {
                out.push(w.to_string());
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    out
}

/// The case's words for the CLI, every output file renamed to `ours_<name>`.
pub fn case_words(dir: &Path) -> Vec<String> {
    case_words_for(dir, Words::Cli)
}

pub struct Run {
    pub dir: PathBuf,
    pub stdout: String,
    pub stderr: String,
    pub status: i32,
}

pub fn run_cli(dir: &Path, words: &[String]) -> Run {
    run_program(env!("CARGO_BIN_EXE_nanobragg"), dir, words)
}

/// Runs one of the crate's programs (`env!("CARGO_BIN_EXE_<name>")`) in `dir`.
pub fn run_program(bin: &str, dir: &Path, words: &[String]) -> Run {
    let out = Command::new(bin)
        .args(words)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {bin}: {e}"));
    Run {
        dir: dir.to_path_buf(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status.code().unwrap_or(-1),
    }
}

/// A float image file (little-endian f32).
pub fn read_f32(path: &Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        b.len().is_multiple_of(4),
        "{}: {} bytes is not a whole number of f32 values",
        path.display(),
        b.len()
    );
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// How an image compares with a reference.
#[derive(Clone, Copy, Debug)]
pub struct Compare {
    /// Pearson correlation (1 when both images are constant).
    pub correlation: f64,
    /// sum(test) / sum(reference) (1 when both sums are 0).
    pub sum_ratio: f64,
    pub max_abs_diff: f64,
    /// max |reference|.
    pub max_ref: f64,
}

impl Compare {
    /// Largest |test − reference| relative to the reference's peak (the difference itself when
    /// the reference is all zero).
    pub fn max_rel_to_peak(&self) -> f64 {
        if self.max_ref == 0.0 {
            self.max_abs_diff
        } else {
            self.max_abs_diff / self.max_ref
        }
    }
}

/// The one image comparison of the tests: sizes must agree and the test image must be finite.
pub fn compare(reference: &[f32], test: &[f32]) -> Compare {
    assert_eq!(reference.len(), test.len(), "image sizes differ");
    assert!(
        test.iter().all(|v| v.is_finite()),
        "image has NaN or infinite pixels"
    );
    let n = reference.len() as f64;
    let (sr, st) = (sum(reference), sum(test));
    let (mr, mt) = (sr / n, st / n);
    let (mut sxy, mut sxx, mut syy, mut maxd, mut maxr) = (0.0, 0.0, 0.0, 0.0f64, 0.0f64);
    for (r, t) in reference.iter().zip(test) {
        let (x, y) = (*r as f64 - mr, *t as f64 - mt);
        sxy += x * y;
        sxx += x * x;
        syy += y * y;
        maxd = maxd.max((*r as f64 - *t as f64).abs());
        maxr = maxr.max((*r as f64).abs());
    }
    let correlation = if sxx == 0.0 && syy == 0.0 {
        1.0
    } else {
        sxy / (sxx * syy).sqrt()
    };
    let sum_ratio = if sr == 0.0 && st == 0.0 { 1.0 } else { st / sr };
    Compare {
        correlation,
        sum_ratio,
        max_abs_diff: maxd,
        max_ref: maxr,
    }
}

/// Sum of an image in f64.
pub fn sum(a: &[f32]) -> f64 {
    a.iter().map(|&x| x as f64).sum()
}

/// Deterministic xorshift64* generator for test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `KEY=value` pairs of an SMV header.
pub fn smv_header(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(&bytes[..512.min(bytes.len())]).into_owned();
    let body = text.split('}').next().unwrap_or("");
    body.lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(';');
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

pub fn smv_pixels(bytes: &[u8]) -> Vec<u16> {
    bytes[512..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// Statistics numbers printed by upstream and by us: max_I, mean, rms, rmsd.
pub fn printed_stats(stdout: &str) -> Vec<f64> {
    let mut v = Vec::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("max_I = ") {
            v.push(rest.split_whitespace().next().unwrap().parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("mean= ") {
            let parts: Vec<&str> = rest.split_whitespace().collect();
            v.push(parts[0].parse().unwrap());
            v.push(parts[2].parse().unwrap());
            v.push(parts[4].parse().unwrap());
        }
    }
    v
}

/// The words of `s` (split on white space).
pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// The set-up of `words` with PDB 1PFE's crystal (`tests/fixtures/models/1pfe.cif`) as the
/// realistic chain makes it (`nanobragg::realistic`): the model's cell words added, its
/// structure factors computed to the resolution the set-up needs and installed.
pub fn prepare_1pfe(mut words: Vec<String>) -> nanobragg::api::Prepared {
    use nanobragg::realistic::{self, SfCache};
    let bytes = std::fs::read(repo_root().join("tests/fixtures/models/1pfe.cif")).unwrap();
    let mut slot = None;
    SfCache::load(&mut slot, "1pfe.cif", &bytes).unwrap();
    let cache = slot.as_mut().unwrap();
    words.extend(cache.crystal_words());
    let mut prep = nanobragg::api::prepare(&words, &nanobragg::files::MemFiles::default()).unwrap();
    let d_min = realistic::needed_d_min(&prep).unwrap();
    let never = std::sync::atomic::AtomicBool::new(false);
    assert!(cache.ensure(d_min, &|_| {}, &never).unwrap());
    let (grid, _) = cache.table.as_ref().unwrap();
    realistic::install_table(&mut prep, grid, "1pfe.cif");
    prep
}

/// The realistic chain's water or air image (`realistic::background`) of the set-up: the
/// background's words `m` with the beam's `beam`.
pub fn background_of(prep: &nanobragg::api::Prepared, m: &str, beam: &str) -> Vec<f32> {
    let never = std::sync::atomic::AtomicBool::new(false);
    let w = words(&format!("{m} {beam}"));
    let files = nanobragg::files::MemFiles::default();
    nanobragg::realistic::background(prep, &w, &files, &|_| {}, &never).unwrap()
}

/// The set-up's detector reading of the photons `sum` (`realistic::detect`, noise on), with
/// the effects `detector`.
pub fn detected(
    prep: &nanobragg::api::Prepared,
    sum: &[f32],
    detector: &nanobragg::realistic::DetectorSettings,
) -> Vec<u32> {
    let never = std::sync::atomic::AtomicBool::new(false);
    let p = prep.plan();
    let (nf, ns, pixel) = (p.fpixels, p.spixels, p.pixel);
    nanobragg::realistic::detect(sum, nf, ns, pixel, detector, true, &|_| {}, &never).unwrap()
}

/// The set-up's prediction of what is on the image (`PredictOptions::on_image`).
pub fn predicted_on_image(prep: &nanobragg::api::Prepared) -> nanobragg::predict::Prediction {
    let opts = nanobragg::predict::PredictOptions {
        on_image: true,
        ..Default::default()
    };
    nanobragg::predict::predict(&prep.setup, &opts).unwrap()
}

/// Offsets of `rot_deg` about each axis (signs alternating) and of the share `share` of each
/// edge of `cell`.
pub fn rot_cell_offsets(
    rot_deg: f64,
    share: f64,
    cell: [f64; 3],
) -> Vec<(nanobragg::api::Param, f64)> {
    use nanobragg::api::Param;
    let deg = std::f64::consts::PI / 180.0;
    vec![
        (Param::RotX, rot_deg * deg),
        (Param::RotY, -rot_deg * deg),
        (Param::RotZ, rot_deg * deg),
        (Param::CellA, share * cell[0]),
        (Param::CellB, -share * cell[1]),
        (Param::CellC, share * cell[2]),
    ]
}

/// A fit's largest orientation error (°, any axis) and cell error (share of `cell`, any edge)
/// against the true offsets `truth` (a parameter not listed: 0).
pub fn fit_errors(
    fit: &nanobragg::api::Fit,
    truth: &[(nanobragg::api::Param, f64)],
    cell: [f64; 3],
) -> (f64, f64) {
    use nanobragg::api::Param;
    let deg = std::f64::consts::PI / 180.0;
    let (mut rot, mut edge) = (0f64, 0f64);
    for (p, v) in fit.params.iter().zip(&fit.values) {
        let t = truth.iter().find(|(q, _)| q == p).map_or(0.0, |x| x.1);
        let d = v - t;
        match p {
            Param::RotX | Param::RotY | Param::RotZ => rot = rot.max((d / deg).abs()),
            Param::CellA => edge = edge.max((d / cell[0]).abs()),
            Param::CellB => edge = edge.max((d / cell[1]).abs()),
            Param::CellC => edge = edge.max((d / cell[2]).abs()),
            _ => {}
        }
    }
    (rot, edge)
}

/// The golden case `case` set up in process, with the `extra` words.
pub fn prepare_case(case: &str, extra: &str) -> nanobragg::api::Prepared {
    let mut words = case_words_for(&golden_dir(case), Words::InProcess);
    words.extend(nanobragg::api::split_args(extra));
    nanobragg::api::prepare(&words, &nanobragg::files::DiskFiles)
        .unwrap_or_else(|e| panic!("{case}: {}", e.message))
}

/// The finite-difference step of each parameter (public unit), for the tangents' tests.
pub fn fd_step(p: nanobragg::api::Param, prep: &nanobragg::api::Prepared) -> f64 {
    use nanobragg::api::Param::*;
    match p {
        RotX | RotY | RotZ => 1e-7,
        CellA | CellB | CellC | CellAlpha | CellBeta | CellGamma => 1e-4,
        NA | NB | NC | NCells => 1e-7,
        Mosaic => 3.2e-2,
        Distance | BeamX | BeamY => 1e-5,
        DetRotX | DetRotY | DetRotZ => 1e-5,
        Lambda => 1e-7,
        Scale => 1e-4,
        Fluence => 1e-4 * prep.setup.fluence,
        DefaultF => 1e-2,
    }
}

/// (image_at(x) − image_at(−x)) / 2x, pixel by pixel.
pub fn central_difference(x: f64, image_at: impl Fn(f64) -> Vec<f64>) -> Vec<f64> {
    let (plus, minus) = (image_at(x), image_at(-x));
    plus.iter()
        .zip(&minus)
        .map(|(a, b)| (a - b) / (2.0 * x))
        .collect()
}

/// The central difference of `image_at` (the image at an offset of `p`) with step `h`; for the
/// mosaic spread, whose image is a staircase in the f32 angles upstream draws the domains with
/// (~1e-7 relative, too coarse for a plain difference at 1e-4), Richardson on steps h and h/2
/// (truncation O(h⁴)) with a step well above the stairs.
pub fn finite_difference(
    p: nanobragg::api::Param,
    h: f64,
    image_at: impl Fn(f64) -> Vec<f64>,
) -> Vec<f64> {
    let central = |x: f64| central_difference(x, &image_at);
    if p == nanobragg::api::Param::Mosaic {
        let (coarse, fine) = (central(h), central(h / 2.0));
        fine.iter()
            .zip(&coarse)
            .map(|(f, c)| (4.0 * f - c) / 3.0)
            .collect()
    } else {
        central(h)
    }
}

/// Weights in [-1, 1] for `n` pixels, for the vector–Jacobian products' tests.
pub fn vjp_weights(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
        .collect()
}

/// The products `v` are Σ weights·tangent of `g`'s tangent images, within `rel` of the sum of
/// their magnitudes.
pub fn check_vjp(case: &str, g: &nanobragg::api::Gradients, w: &[f64], v: &[f64], rel: f64) {
    for (i, p) in g.params.iter().enumerate() {
        let want: f64 = g.tangent(i).iter().zip(w).map(|(a, b)| a * b).sum();
        let scale: f64 = g.tangent(i).iter().zip(w).map(|(a, b)| (a * b).abs()).sum();
        assert!(
            (v[i] - want).abs() <= rel * scale,
            "{case} {}: {} vs {want}",
            p.name(),
            v[i]
        );
    }
}
