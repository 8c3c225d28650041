//! Helpers shared by the integration tests: golden-case discovery, running the CLI on a case
//! in a scratch folder, and image comparison.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn golden_dir(case: &str) -> PathBuf {
    repo_root().join("tests/fixtures/golden").join(case)
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

/// The case's words with every output file renamed to `ours_<name>`.
pub fn case_words(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("args.txt")).unwrap();
    let words: Vec<String> = text.split_whitespace().map(String::from).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if ["-floatfile", "-intfile", "-pgmfile", "-noisefile"].contains(&w.as_str()) {
            out.push(w.clone());
            out.push(format!("ours_{}", words[i + 1]));
            i += 2;
        } else {
            out.push(w.clone());
            i += 1;
        }
    }
    out
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

pub fn read_f32(path: &Path) -> Vec<f32> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub struct Compare {
    pub correlation: f64,
    pub sum_ratio: f64,
    pub max_abs_diff: f64,
    pub max_ref: f64,
}

pub fn compare(reference: &[f32], test: &[f32]) -> Compare {
    assert_eq!(reference.len(), test.len(), "image sizes differ");
    assert!(
        test.iter().all(|v| v.is_finite()),
        "image has NaN or infinite pixels"
    );
    let n = reference.len() as f64;
    let (mut sr, mut st) = (0.0, 0.0);
    for (r, t) in reference.iter().zip(test) {
        sr += *r as f64;
        st += *t as f64;
    }
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
