//! The `h5chunk` target.

use super::*;

/// The HDF5 chunk decoders of bitshuffle (with and without LZ4) and LZ4. The input's first
/// four bytes choose the case: byte 0 the element size (1, 2, 4 or 8, low bits) and the filter
/// (bit 2: the LZ4 filter; else bitshuffle, bit 3: with LZ4), byte 1 the bitshuffle block in
/// 8-element steps (0: the default), bytes 2–3 the chunk's decoded size (u16 little-endian);
/// the rest is the chunk as stored. A decoded chunk holds exactly that size.
pub fn h5chunk(data: &[u8]) {
    let [mode, block, lo, hi, chunk @ ..] = data else {
        return;
    };
    let elem = 1usize << (mode & 3);
    let expect = u16::from_le_bytes([*lo, *hi]) as usize;
    let out = if mode & 4 != 0 {
        io::bitshuffle::lz4_filter_decode(chunk, expect)
    } else {
        let compression = if mode & 8 != 0 { 2 } else { 0 };
        let cd = [0, 3, elem as u32, *block as u32 * 8, compression];
        io::bitshuffle::bitshuffle_decode(chunk, &cd, elem, expect)
    };
    if let Ok(out) = out {
        assert_eq!(out.len(), expect, "decoded size");
    }
}
