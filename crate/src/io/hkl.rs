//! Structure factors: the `-hkl` text file and the binary `Fdump.bin` cache (MODEL.md §7.7, §7.8).
//!
//! Text input diverges from upstream's stream parsing on purpose: every non-blank line that is not
//! a `#` comment must start with `h k l F` (integer indices); further columns are ignored, and
//! anything else is an error naming the file and line.

use super::{numbered_lines, show_line};
use crate::cfmt::{parse_f64_strict, parse_i64_strict};
use crate::error::{Error, Result};
use crate::plan::HklGrid;

/// Largest structure-factor table accepted, in values: 2^26 = 67,108,864 (512 MiB as f64, 256
/// MiB as the GPU's f32 copy), e.g. a box of ±200 in h, k and l, or ±60 x ±120 x ±600. The table
/// spans the whole box between the smallest and largest indices of the file, padded by one in
/// each direction (upstream's layout), however few records the file holds: a two-line file with
/// `-300 -300 -300` and `300 300 300` would need 218 million values (1.7 GB, and as much again
/// in `Fdump.bin`), and is an input error naming the file and the box instead.
pub const MAX_TABLE: usize = 1 << 26;

/// Padded table size `(h_range+1)(k_range+1)(l_range+1)` for the given bounds, checked against
/// `max` values.
fn table_len(name: &str, b: [i64; 6], max: usize) -> Result<(usize, [usize; 3])> {
    let mut ranges = [0usize; 3];
    for (i, r) in ranges.iter_mut().enumerate() {
        let (lo, hi) = (b[2 * i], b[2 * i + 1]);
        if hi < lo {
            return Err(Error::input(format!(
                "{name}: invalid Miller index bounds {}..{} for {}",
                lo,
                hi,
                ["h", "k", "l"][i]
            ))
            .at_file(name));
        }
        *r = usize::try_from(hi - lo + 1).unwrap_or(usize::MAX);
    }
    let len = ranges
        .iter()
        .try_fold(1usize, |acc, &r| acc.checked_mul(r.checked_add(1)?));
    match len {
        Some(n) if n <= max => Ok((n, ranges)),
        _ => {
            let values = ranges.iter().map(|&r| r as f64 + 1.0).product::<f64>();
            // a limit of the build's (`ErrorKind::Limit`), not a fault of the file's
            Err(crate::limits::over(format!(
                "{name}: Miller indices span h {}..{}, k {}..{}, l {}..{}: a structure-factor table of {values:.3e} values, more than the limit of {max}{}",
                b[0], b[1], b[2], b[3], b[4], b[5],
                if max == MAX_TABLE { " (a box of about ±200 in h, k and l)" } else { "" }
            )).at_file(name))
        }
    }
}

fn alloc_table(name: &str, len: usize) -> Result<Vec<f64>> {
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| {
        crate::limits::over(format!(
            "{name}: not enough memory for a structure-factor table of {len} values"
        ))
        .at_file(name)
    })?;
    data.resize(len, 0.0);
    Ok(data)
}

/// Calls `record` with each `h k l F` record of the text, in file order; errors name the file
/// and line.
fn for_each_record(name: &str, text: &[u8], mut record: impl FnMut([i32; 3], f64)) -> Result<()> {
    super::check_not_utf16(name, text)?;
    for (n, line) in numbered_lines(text) {
        let trimmed = String::from_utf8_lossy(line);
        let trimmed = trimmed.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // bytes no text file holds (not UTF-8, control characters): a binary file, whose
        // bytes are not echoed back
        let binary = std::str::from_utf8(line).is_err()
            || line
                .iter()
                .any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\r' | 0x0b | 0x0c)) || b == 0x7f);
        if binary {
            return Err(Error::input(format!(
                "{name}: not a text file (binary bytes at line {n}); expected lines of 4 numbers \"h k l F\""
            ))
            .at_file(name)
            .at_line(n));
        }
        let expected = || {
            Error::input(format!(
                "{name} line {n}: expected 4 numbers \"h k l F\", found \"{}\"",
                show_line(line)
            ))
            .at_file(name)
            .at_line(n)
        };
        let mut tokens = [""; 4];
        let mut count = 0;
        for (slot, tok) in tokens.iter_mut().zip(trimmed.split_ascii_whitespace()) {
            *slot = tok;
            count += 1;
        }
        if count < 4 {
            return Err(expected());
        }
        let f = match parse_f64_strict(tokens[3]) {
            Some(f) if f.is_finite() => f,
            Some(_) => {
                return Err(Error::input(format!(
                    "{name} line {n}: F is not a finite number: {}",
                    show_line(tokens[3].as_bytes())
                ))
                .at_file(name)
                .at_line(n))
            }
            None => return Err(expected()),
        };
        let mut hkl = [0i32; 3];
        for (slot, tok) in hkl.iter_mut().zip(&tokens[..3]) {
            *slot = match parse_i64_strict(tok) {
                Some(v) => i32::try_from(v).map_err(|_| {
                    Error::input(format!(
                        "{name} line {n}: Miller index {v} is out of range, in \"{}\"",
                        show_line(line)
                    ))
                    .at_file(name)
                    .at_line(n)
                })?,
                None if parse_f64_strict(tok).is_some() => {
                    return Err(Error::input(format!(
                        "{name} line {n}: Miller indices h k l must be integers, found \"{}\"",
                        show_line(line)
                    ))
                    .at_file(name)
                    .at_line(n))
                }
                None => return Err(expected()),
            };
        }
        record(hkl, f);
    }
    Ok(())
}

/// Parses an `h k l F` text file into the padded structure-factor table.
///
/// Bounds come from the records; the table is zero-filled, the inner `h_range x k_range x
/// l_range` block is prefilled with `default_f` when it is non-zero, then the records are stored
/// (the last duplicate wins). `hkls` is the number of records.
///
/// Two passes over the text (bounds, then values): memory is the text and the table, nothing
/// per record, and the table size is checked against [`MAX_TABLE`] before it is allocated.
pub fn parse_hkl(name: &str, text: &[u8], default_f: f64) -> Result<HklGrid> {
    parse_hkl_limited(name, text, default_f, MAX_TABLE)
}

/// [`parse_hkl`] with a smaller table limit (the fuzz targets use one, to stay fast).
pub fn parse_hkl_limited(
    name: &str,
    text: &[u8],
    default_f: f64,
    max_values: usize,
) -> Result<HklGrid> {
    let mut b = [i64::MAX, i64::MIN, i64::MAX, i64::MIN, i64::MAX, i64::MIN];
    let mut records = 0usize;
    for_each_record(name, text, |hkl, _| {
        records += 1;
        for i in 0..3 {
            b[2 * i] = b[2 * i].min(hkl[i] as i64);
            b[2 * i + 1] = b[2 * i + 1].max(hkl[i] as i64);
        }
    })?;
    if records == 0 {
        return Err(Error::input(format!("{name}: no \"h k l F\" records found")).at_file(name));
    }
    let mut grid = new_table(name, b, default_f, max_values)?;
    for_each_record(name, text, |hkl, f| {
        let i = grid.index(hkl[0], hkl[1], hkl[2]);
        grid.data[i] = f;
    })?;
    grid.hkls = records;
    Ok(grid)
}

/// The table of bounds `b` (h_min, h_max, k_min, k_max, l_min, l_max) holding `data`.
fn table_of(b: [i64; 6], hkls: usize, data: Vec<f64>) -> HklGrid {
    HklGrid {
        h_min: b[0] as i32,
        h_max: b[1] as i32,
        k_min: b[2] as i32,
        k_max: b[3] as i32,
        l_min: b[4] as i32,
        l_max: b[5] as i32,
        hkls,
        data,
    }
}

/// An empty padded table for the bounds `h_min h_max k_min k_max l_min l_max`: zero-filled, the
/// inner `h_range x k_range x l_range` block prefilled with `default_f` when it is non-zero;
/// `hkls` = 0. Errors (naming `name`) when the ranges are invalid or larger than `max_values`
/// (at most [`MAX_TABLE`]).
pub fn new_table(name: &str, b: [i64; 6], default_f: f64, max_values: usize) -> Result<HklGrid> {
    let (len, [hr, kr, lr]) = table_len(name, b, max_values.min(MAX_TABLE))?;
    let mut data = alloc_table(name, len)?;
    let (kd, ld) = (kr + 1, lr + 1);
    if default_f != 0.0 {
        for ih in 0..hr {
            for ik in 0..kr {
                let row = (ih * kd + ik) * ld;
                data[row..row + lr].fill(default_f);
            }
        }
    }
    Ok(table_of(b, 0, data))
}

/// The whole table as `h k l F` text (`-hklout`): every entry of the `h_range x k_range x
/// l_range` box, h outer, l fastest, F as the shortest decimal that reads back to the same f64,
/// so [`parse_hkl`] returns the identical table.
pub fn write_hkl(grid: &HklGrid) -> Vec<u8> {
    use std::fmt::Write;
    let mut out = String::new();
    for ih in 0..grid.h_range() {
        for ik in 0..grid.k_range() {
            for il in 0..grid.l_range() {
                let _ = writeln!(
                    out,
                    "{} {} {} {}",
                    grid.h_min + ih,
                    grid.k_min + ik,
                    grid.l_min + il,
                    grid.at(ih, ik, il)
                );
            }
        }
    }
    out.into_bytes()
}

/// Serialises the table as upstream's `Fdump.bin`: `"%d %d %d %d %d %d\n\f"` (h_min h_max k_min
/// k_max l_min l_max), then the padded table as little-endian f64, h outer, l fastest.
pub fn write_fdump(grid: &HklGrid) -> Vec<u8> {
    let head = format!(
        "{} {} {} {} {} {}\n\x0c",
        grid.h_min, grid.h_max, grid.k_min, grid.k_max, grid.l_min, grid.l_max
    );
    let mut out = Vec::with_capacity(head.len() + 8 * grid.data.len());
    out.extend_from_slice(head.as_bytes());
    for v in &grid.data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Reads a `Fdump.bin` written by [`write_fdump`] (or upstream). Exactly `\n\f` must follow the
/// six integers (upstream's scanf would also swallow data bytes that look like whitespace).
/// `hkls` is set to `h_range*k_range*l_range`.
pub fn read_fdump(name: &str, bytes: &[u8]) -> Result<HklGrid> {
    read_fdump_limited(name, bytes, MAX_TABLE)
}

/// [`read_fdump`] with a smaller table limit (the fuzz targets use one, to stay fast).
pub fn read_fdump_limited(name: &str, bytes: &[u8], max_values: usize) -> Result<HklGrid> {
    let not_dump = || {
        Error::input(format!(
            "{name}: not a structure-factor dump (expected six integers \"h_min h_max k_min k_max l_min l_max\" followed by a newline and a form feed)"
        )).at_file(name)
    };
    let mut pos = 0usize;
    let mut b = [0i64; 6];
    for v in b.iter_mut() {
        while pos < bytes.len() && matches!(bytes[pos], b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
        {
            pos += 1;
        }
        let start = pos;
        if pos < bytes.len() && (bytes[pos] == b'-' || bytes[pos] == b'+') {
            pos += 1;
        }
        let digits = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() && pos - digits < 10 {
            pos += 1;
        }
        if pos == digits || (pos < bytes.len() && bytes[pos].is_ascii_digit()) {
            return Err(not_dump());
        }
        let text = std::str::from_utf8(&bytes[start..pos]).map_err(|_| not_dump())?;
        *v = parse_i64_strict(text)
            .filter(|x| i32::try_from(*x).is_ok())
            .ok_or_else(not_dump)?;
    }
    if bytes.get(pos..pos + 2) != Some(b"\n\x0c") {
        return Err(not_dump());
    }
    pos += 2;
    let (len, [hr, kr, lr]) = table_len(name, b, max_values.min(MAX_TABLE))?;
    let body = &bytes[pos..];
    let need = len * 8;
    if body.len() < need {
        return Err(Error::input(format!(
            "{name}: truncated structure-factor dump: the header promises {len} values ({need} bytes) but only {} bytes follow",
            body.len()
        )).at_file(name));
    }
    let mut data = alloc_table(name, len)?;
    for (d, chunk) in data.iter_mut().zip(body.chunks_exact(8)) {
        *d = f64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
    }
    Ok(table_of(b, hr * kr * lr, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const SMALL: &str = "# a comment\n\
        0 0 0 10.5\n\
        \n\
        1 -1 2 3.25\n\
        -1 0 1 7 0.5 extra\n\
        1 -1 2 4.0\n";

    #[test]
    fn parses_bounds_and_values() {
        let g = parse_hkl("input.hkl", SMALL.as_bytes(), 0.0).unwrap();
        assert_eq!(
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max),
            (-1, 1, -1, 0, 0, 2)
        );
        assert_eq!((g.h_range(), g.k_range(), g.l_range()), (3, 2, 3));
        assert_eq!(g.hkls, 4);
        assert_eq!(g.data.len(), 4 * 3 * 4);
        assert_eq!(g.at(1, 1, 0), 10.5); // (0,0,0)
        assert_eq!(g.at(2, 0, 2), 4.0); // (1,-1,2), last duplicate wins
        assert_eq!(g.at(0, 1, 1), 7.0); // (-1,0,1), extra columns ignored
        assert_eq!(g.at(0, 0, 0), 0.0);
        assert_eq!(g.data.iter().filter(|&&v| v != 0.0).count(), 3);
    }

    #[test]
    fn default_f_fills_inner_block_only() {
        let g = parse_hkl("input.hkl", SMALL.as_bytes(), 100.0).unwrap();
        let (kd, ld) = (3usize, 4usize);
        for ih in 0..4usize {
            for ik in 0..kd {
                for il in 0..ld {
                    let v = g.data[(ih * kd + ik) * ld + il];
                    let inner = ih < 3 && ik < 2 && il < 3;
                    let want = match (ih, ik, il) {
                        (1, 1, 0) => 10.5,
                        (2, 0, 2) => 4.0,
                        (0, 1, 1) => 7.0,
                        _ if inner => 100.0,
                        _ => 0.0,
                    };
                    assert_eq!(v, want, "({ih},{ik},{il})");
                }
            }
        }
    }

    #[test]
    fn crlf_and_signs() {
        let g = parse_hkl("x.hkl", b"+1 2 3 1e2\r\n\r\n  -2 -2 -2 -0.5 \r\n", 0.0).unwrap();
        assert_eq!(
            (g.h_min, g.h_max, g.k_min, g.k_max, g.l_min, g.l_max),
            (-2, 1, -2, 2, -2, 3)
        );
        assert_eq!(g.at(3, 4, 5), 100.0);
        assert_eq!(g.at(0, 0, 0), -0.5);
        assert_eq!(g.hkls, 2);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_hkl("input.hkl", b"0 0 0 1\n\n# c\n\n\n\n1 2 x\n", 0.0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert_eq!(
            e.message,
            "input.hkl line 7: expected 4 numbers \"h k l F\", found \"1 2 x\""
        );
        let e = parse_hkl("input.hkl", b"1 2 3 x\n", 0.0).unwrap_err();
        assert_eq!(
            e.message,
            "input.hkl line 1: expected 4 numbers \"h k l F\", found \"1 2 3 x\""
        );
        let e = parse_hkl("a.hkl", b"0 0 0 1\nh k l F\n", 0.0).unwrap_err();
        assert!(
            e.message.starts_with("a.hkl line 2: expected 4 numbers"),
            "{}",
            e.message
        );
        // a binary file: said so, its bytes not echoed
        let e = parse_hkl("junk.hkl", b"D\x00\xff\x8b\x01\x02k0\x9c\n1 2 3 4\n", 0.0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert_eq!(
            e.message,
            "junk.hkl: not a text file (binary bytes at line 1); expected lines of 4 numbers \"h k l F\""
        );
        assert_eq!((e.file.as_deref(), e.line), (Some("junk.hkl"), Some(1)));
        let e = parse_hkl("junk.hkl", b"0 0 0 1\n1 2 3 \x014\n", 0.0).unwrap_err();
        assert!(
            e.message.contains("binary bytes at line 2"),
            "{}",
            e.message
        );
        // a comment may hold any bytes (latin-1 accents)
        assert!(parse_hkl("c.hkl", b"# caf\xe9\n0 0 0 1\n", 0.0).is_ok());
        // four fields, F not finite: said so
        for (f, shown) in [("NaN", "NaN"), ("inf", "inf"), ("1e999", "1e999")] {
            let e =
                parse_hkl("nan.hkl", format!("0 0 0 1\n1 2 3 {f}\n").as_bytes(), 0.0).unwrap_err();
            assert_eq!(
                e.message,
                format!("nan.hkl line 2: F is not a finite number: {shown}")
            );
            assert_eq!(e.line, Some(2));
        }
        let e = parse_hkl("a.hkl", b"1.0 2 3 4\n", 0.0).unwrap_err();
        assert_eq!(
            e.message,
            "a.hkl line 1: Miller indices h k l must be integers, found \"1.0 2 3 4\""
        );
        let e = parse_hkl("a.hkl", b"1 99999999999 3 4\n", 0.0).unwrap_err();
        assert!(
            e.message
                .starts_with("a.hkl line 1: Miller index 99999999999 is out of range"),
            "{}",
            e.message
        );
        let e = parse_hkl("a.hkl", b"-2000000000 0 0 1\n2000000000 0 0 1\n", 0.0).unwrap_err();
        assert!(
            e.message.contains("more than the limit of 67108864"),
            "{}",
            e.message
        );
        // 31 bytes spanning ±300: 218 million values, refused before any allocation.
        let far = b"-300 -300 -300 1\n300 300 300 1\n";
        assert_eq!(far.len(), 31);
        let e = parse_hkl("far.hkl", far, 0.0).unwrap_err();
        // a limit of the build's, not a fault of the file's (the faces sort errors by kind)
        assert_eq!(e.kind, crate::error::ErrorKind::Limit);
        assert_eq!(e.file.as_deref(), Some("far.hkl"));
        assert_eq!(
            e.message,
            "far.hkl: Miller indices span h -300..300, k -300..300, l -300..300: a structure-factor table of 2.182e8 values, more than the limit of 67108864 (a box of about ±200 in h, k and l)"
        );
        // The largest cube within the limit is ±202 (padded 406^3 = 66.9 million values).
        let (len, _) = table_len("near.hkl", [-202, 202, -202, 202, -202, 202], MAX_TABLE).unwrap();
        assert_eq!(len, 406 * 406 * 406);
        assert!(table_len("x.hkl", [-203, 203, -203, 203, -203, 203], MAX_TABLE).is_err());
        let e = parse_hkl("empty.hkl", b"\n# only comments\n  \n", 0.0).unwrap_err();
        assert_eq!(e.message, "empty.hkl: no \"h k l F\" records found");
        let e = parse_hkl("bin.hkl", b"\x00\x01\xff\xfe", 0.0).unwrap_err();
        assert!(
            e.message
                .starts_with("bin.hkl: not a text file (binary bytes at line 1)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn fdump_roundtrip_and_format() {
        let g = parse_hkl("input.hkl", SMALL.as_bytes(), 100.0).unwrap();
        let bytes = write_fdump(&g);
        let head = b"-1 1 -1 0 0 2\n\x0c";
        assert_eq!(&bytes[..head.len()], head);
        assert_eq!(bytes.len(), head.len() + 8 * 48);
        // (0,0,0) at padded offset (1,1,0) -> index (1*3+1)*4 = 16
        let off = head.len() + 16 * 8;
        assert_eq!(
            f64::from_le_bytes(bytes[off..off + 8].try_into().unwrap()),
            10.5
        );
        let r = read_fdump("Fdump.bin", &bytes).unwrap();
        assert_eq!(r.data, g.data);
        assert_eq!(
            (r.h_min, r.h_max, r.k_min, r.k_max, r.l_min, r.l_max),
            (-1, 1, -1, 0, 0, 2)
        );
        assert_eq!(r.hkls, 3 * 2 * 3);
    }

    #[test]
    fn fdump_first_value_with_whitespace_byte_is_not_swallowed() {
        // 0x20 as the first data byte would be eaten by upstream's scanf.
        let mut g = parse_hkl("x.hkl", b"0 0 0 1\n", 0.0).unwrap();
        g.data[0] = f64::from_le_bytes([0x20, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        let r = read_fdump("Fdump.bin", &write_fdump(&g)).unwrap();
        assert_eq!(r.data, g.data);
        assert_eq!(r.data.len(), 8);
        assert_eq!(r.hkls, 1);
    }

    #[test]
    fn fdump_errors() {
        let g = parse_hkl("x.hkl", b"0 0 0 1\n1 1 1 2\n", 0.0).unwrap();
        let bytes = write_fdump(&g);
        let e = read_fdump("Fdump.bin", &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert!(
            e.message
                .starts_with("Fdump.bin: truncated structure-factor dump"),
            "{}",
            e.message
        );
        assert!(e.message.contains("27 values (216 bytes)"), "{}", e.message);
        for bad in [
            &b"garbage"[..],
            b"0 1 0 1 0\n\x0c",
            b"0 1 0 1 0 1\n",
            b"0 1 0 1 0 1 \n\x0c",
            b"",
        ] {
            let e = read_fdump("Fdump.bin", bad).unwrap_err();
            assert!(
                e.message
                    .starts_with("Fdump.bin: not a structure-factor dump"),
                "{}",
                e.message
            );
        }
        let e = read_fdump("Fdump.bin", b"1 0 0 1 0 1\n\x0c").unwrap_err();
        assert!(
            e.message.contains("invalid Miller index bounds"),
            "{}",
            e.message
        );
        let e =
            read_fdump("Fdump.bin", b"-1000000 1000000 -1000000 1000000 0 0\n\x0c").unwrap_err();
        assert!(
            e.message.contains("more than the limit of 67108864"),
            "{}",
            e.message
        );
    }
}
