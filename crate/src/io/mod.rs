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
