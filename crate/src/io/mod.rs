//! File formats: reading inputs (HKL text, structure-factor dumps, MOSFLM matrices, multi-column
//! text, SMV headers) and writing outputs (SMV, PGM, miniCBF) atomically.

pub mod atomic;
pub mod bitshuffle;
pub mod cbf;
pub mod cbf_read;
pub mod expt;
pub mod geom;
pub mod h5image;
pub mod hkl;
pub mod matfile;
pub mod measured;
pub mod nexus;
pub mod pgm;
pub mod smv;
pub mod stol;
pub mod textcols;

/// Why a geometry value a file states is one the flag that takes it refuses (`check`, in the
/// flag's unit `unit`), as a phrase for the reader's error ("0 mm is out of range (…)").
pub(crate) fn out_of_range(v: f64, unit: &str, check: crate::check::Check) -> Option<String> {
    check
        .violation(v)
        .map(|want| format!("{}{unit} is out of range ({want} expected)", short(v)))
}

/// A number as an error shows it: plain when of a usual size, else in exponent form (`1e300`).
pub(crate) fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e7).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A geometry value a file states, checked as [`out_of_range`] does: the value, or an error
/// naming the file and the key.
pub(crate) fn checked_value(
    file: &str,
    key: &str,
    v: f64,
    unit: &str,
    check: crate::check::Check,
) -> crate::error::Result<f64> {
    match out_of_range(v, unit, check) {
        None => Ok(v),
        Some(why) => Err(crate::error::Error::input(format!("{file}: {key}: {why}"))
            .at_file(file)
            .at_key(key)),
    }
}

/// The range a file's pixel size (mm) must be in: the flag's (`-pixel`, ≤ 1 m), and at least
/// a nanometre (a smaller pixel's solid angle underflows to an all-zero image).
pub(crate) fn pixel_out_of_range(mm: f64) -> Option<String> {
    out_of_range(mm, " mm", crate::check::Check::Positive(1e3)).or_else(|| {
        (mm < 1e-6).then(|| {
            format!(
                "{} mm is out of range (a pixel of at least 1e-6 mm expected)",
                short(mm)
            )
        })
    })
}

/// A line of input shown in an error message: trimmed, control characters replaced, and cut
/// to a readable length.
pub(crate) fn show_line(line: &[u8]) -> String {
    const MAX: usize = 60;
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == MAX {
            out.push_str("...");
            break;
        }
        out.push(if c.is_control() { '?' } else { c });
    }
    out
}

/// The lines of a text file with their 1-based numbers; a trailing `\r` is removed.
pub(crate) fn numbered_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    text.split(|&b| b == b'\n').enumerate().map(|(i, line)| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (i + 1, line)
    })
}
