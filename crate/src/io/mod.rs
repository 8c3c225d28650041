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

/// A text file's bytes without the UTF-8 byte-order mark some editors put first (Windows
/// Notepad, spreadsheets' "UTF-8 CSV"): invisible in an editor, it would make the first line's
/// first number unreadable.
pub(crate) fn without_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text)
}

/// An error for a text file saved as UTF-16 (its byte-order mark first: what Windows
/// PowerShell's `>` writes), which the line readers would otherwise call binary or quote as
/// unreadable characters: the file is named, and what to do.
pub(crate) fn check_not_utf16(name: &str, text: &[u8]) -> crate::error::Result<()> {
    if text.starts_with(b"\xff\xfe") || text.starts_with(b"\xfe\xff") {
        return Err(crate::error::Error::input(format!(
            "{name}: a UTF-16 text file; save it as UTF-8 or ASCII text (in PowerShell, \
             `Out-File -Encoding ascii` or `Set-Content` rather than `>`)"
        ))
        .at_file(name)
        .at_line(1));
    }
    Ok(())
}

/// The lines of a text file with their 1-based numbers (a byte-order mark first is dropped,
/// [`without_bom`]); a trailing `\r` is removed.
pub(crate) fn numbered_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    without_bom(text)
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            (i + 1, line)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line-based reader reads a file that starts with a UTF-8 byte-order mark as the same
    /// file without it (a Windows editor's "UTF-8" file): the mark was read as part of the first
    /// number, and the error quoted a line that looked right.
    #[test]
    fn line_readers_skip_a_byte_order_mark() {
        let bom = |t: &str| format!("\u{feff}{t}").into_bytes();
        let hkl = "0 0 1 100\n1 1 0 50\n";
        assert_eq!(
            hkl::parse_hkl("w.hkl", &bom(hkl), 0.0).unwrap(),
            hkl::parse_hkl("w.hkl", hkl.as_bytes(), 0.0).unwrap()
        );
        let mat = "0.01 0 0\n0 0.01 0\n0 0 0.01\n";
        assert_eq!(
            matfile::parse_mat("w.mat", &bom(mat)).unwrap(),
            matfile::parse_mat("w.mat", mat.as_bytes()).unwrap()
        );
        let cols = "1 2 3\n4 5 6\n";
        assert_eq!(
            textcols::read_columns("w.txt", &bom(cols), 3).unwrap(),
            vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]
        );
        let stol = "0 10\n0.1 8\n0.2 5\n";
        assert_eq!(
            stol::read_stol("w.stol", &bom(stol), stol::StolUnit::Stol).unwrap(),
            stol::read_stol("w.stol", stol.as_bytes(), stol::StolUnit::Stol).unwrap()
        );
        // only a mark at the very start: one inside a line is still not a number
        let e = hkl::parse_hkl("w.hkl", "0 0 1 100\n\u{feff}1 1 0 50\n".as_bytes(), 0.0);
        assert_eq!(e.unwrap_err().line, Some(2));
    }

    /// A UTF-16 file (PowerShell's `>`) is said to be one, by every line reader.
    #[test]
    fn line_readers_say_a_utf16_file_is_one() {
        let utf16 = |bom: [u8; 2], t: &str, le: bool| {
            let mut v = bom.to_vec();
            for u in t.encode_utf16() {
                v.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
            v
        };
        for (bom, le) in [([0xff, 0xfe], true), ([0xfe, 0xff], false)] {
            let errors = [
                hkl::parse_hkl("u.hkl", &utf16(bom, "0 0 1 100\n", le), 0.0).unwrap_err(),
                matfile::parse_mat("u.mat", &utf16(bom, "0.01 0 0\n0 0.01 0\n0 0 0.01\n", le))
                    .unwrap_err(),
                textcols::read_columns("u.txt", &utf16(bom, "1 2 3\n", le), 3).unwrap_err(),
                geom::parse_geom("u.geom", &utf16(bom, "clen = 0.1\n", le)).unwrap_err(),
                expt::parse_expt("u.expt", &utf16(bom, "{}", le)).unwrap_err(),
            ];
            for e in errors {
                assert!(
                    e.message.contains(": a UTF-16 text file; save it as UTF-8"),
                    "{}",
                    e.message
                );
                assert!(e.file.is_some(), "{}", e.message);
            }
        }
    }
}
