//! The `measured` target.

use super::*;

/// Between the files of one input: the first is the file opened (`master.h5`), the others are
/// given with it as `data_000001.h5`, `data_000002.h5`, … (an EIGER master's data files).
pub const NEXT_FILE: &[u8] = b"\n--next-file--\n";

/// The measured-image reader (SMV, miniCBF, NeXus/HDF5 single file or master + data files).
pub fn measured(data: &[u8]) {
    let mut parts = split(data, NEXT_FILE);
    let first = parts.remove(0);
    let names: Vec<String> = (1..=parts.len())
        .map(|k| format!("data_{k:06}.h5"))
        .collect();
    let others: Vec<(&str, &[u8])> = names.iter().map(String::as_str).zip(parts).collect();
    measured_file("master.h5", first, &others);
}

/// `data` cut at each `sep`.
fn split<'a>(data: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(sep.len()).position(|w| w == sep) {
        out.push(&rest[..i]);
        rest = &rest[i + sep.len()..];
    }
    out.push(rest);
    out
}
