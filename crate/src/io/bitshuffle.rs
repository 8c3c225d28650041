//! The two LZ4 HDF5 filters EIGER data files use, decoded: bitshuffle (filter 32008, with or
//! without its LZ4 stage; the format of the bitshuffle library's `bshuf_h5filter`) and the plain
//! HDF5 LZ4 filter (32004). `hdf5-pure` decodes deflate and shuffle itself but has no hook for
//! other filters, so `io::h5image` reads such chunks' bytes and decodes them here. And encoded:
//! [`bitshuffle_lz4_encode`] writes a bitshuffle + LZ4 chunk (the NXmx writer's `bslz4`
//! frames, `io::nexus`), LZ4 by `lz4_flex` (pure Rust, builds for wasm32).

/// HDF5's registered identifier of the bitshuffle filter.
pub const FILTER_BITSHUFFLE: u16 = 32008;
/// HDF5's registered identifier of the LZ4 filter.
pub const FILTER_LZ4: u16 = 32004;
/// The bitshuffle filter's compression code (its fifth client value) for LZ4.
const BSHUF_LZ4: u32 = 2;

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Undoes the bit transposition of one block of `n` elements (`n` a multiple of 8) of
/// `size` bytes each: in the shuffled block, row `8·j + b` (of `n/8` bytes) holds bit `b` of
/// byte `j` of every element, element `i` in bit `i % 8` of byte `i / 8`.
pub fn bitunshuffle_block(input: &[u8], out: &mut [u8], n: usize, size: usize) {
    debug_assert!(n.is_multiple_of(8) && input.len() == n * size && out.len() == n * size);
    let row = n / 8;
    for j in 0..size {
        for g in 0..row {
            // the 8×8 bits of byte j of elements 8g..8g+8: row b = bit b of each element
            let mut x = 0u64;
            for b in 0..8 {
                x |= (input[(8 * j + b) * row + g] as u64) << (8 * b);
            }
            if x == 0 {
                for k in 0..8 {
                    out[(8 * g + k) * size + j] = 0;
                }
                continue;
            }
            let x = transpose8(x).to_le_bytes();
            for k in 0..8 {
                out[(8 * g + k) * size + j] = x[k];
            }
        }
    }
}

/// Transposes the 8×8 bit matrix whose row i is byte i and column j bit j (Hacker's Delight
/// §7-3, three swaps of 1×1, 2×2 and 4×4 blocks).
fn transpose8(mut x: u64) -> u64 {
    let mut t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

/// The bit transposition of one block of `n` elements (`n` a multiple of 8) of `size` bytes
/// each, the inverse of [`bitunshuffle_block`]: row `8·j + b` (of `n/8` bytes) of `out` holds
/// bit `b` of byte `j` of every element, element `i` in bit `i % 8` of byte `i / 8`. In two
/// passes ([`planes_then_bits`], `planes` its scratch), or:
///
/// Four-byte elements (the int32 frames) on a CPU with AVX2 ([`crate::simd::level`]) take one
/// pass instead, 32 elements at a time ([`shuffle4_avx2`]: byte j of each element picked and
/// packed in order, its bits by `vpmovmskb`), the rest 8 at a time ([`groups_bits`]): the same
/// bytes (`tests::the_transposition_is_the_definition` runs both).
pub fn bitshuffle_block(input: &[u8], out: &mut [u8], n: usize, size: usize, planes: &mut Vec<u8>) {
    debug_assert!(n.is_multiple_of(8) && input.len() == n * size && out.len() == n * size);
    #[cfg(target_arch = "x86_64")]
    if size == 4 && crate::simd::level() >= crate::simd::Simd::Avx2 {
        // SAFETY: the CPU has AVX2 (`simd::level`); the lengths are as asserted above
        let done = unsafe { shuffle4_avx2(input, out, n) };
        groups_bits(input, out, n, size, done);
        return;
    }
    planes_then_bits(input, out, n, size, planes);
}

/// [`bitshuffle_block`] in two passes, as the bitshuffle library does it: the bytes into `size`
/// planes (plane `j` holds byte `j` of every element, in `planes`, resized here), then each
/// plane's bits into its 8 rows ([`plane_bits`]).
fn planes_then_bits(input: &[u8], out: &mut [u8], n: usize, size: usize, planes: &mut Vec<u8>) {
    planes.resize(n * size, 0);
    if size == 4 {
        let (p01, p23) = planes.split_at_mut(2 * n);
        let (p0, p1) = p01.split_at_mut(n);
        let (p2, p3) = p23.split_at_mut(n);
        for ((((e, a), b), c), d) in input.chunks_exact(4).zip(p0).zip(p1).zip(p2).zip(p3) {
            (*a, *b, *c, *d) = (e[0], e[1], e[2], e[3]);
        }
    } else {
        for (i, e) in input.chunks_exact(size).enumerate() {
            for (j, &v) in e.iter().enumerate() {
                planes[j * n + i] = v;
            }
        }
    }
    let row = n / 8;
    for (j, plane) in planes.chunks_exact(n).enumerate() {
        plane_bits(plane, &mut out[8 * j * row..8 * (j + 1) * row], row);
    }
}

/// The 8 bit rows of one byte plane (`plane.len()` a multiple of 8) into `rows` (8 rows of
/// `row` = `plane.len() / 8` bytes; row `b` holds bit `b` of each byte, byte `i` in bit `i % 8`
/// of byte `i / 8`): 16 bytes at a time by their top bits (SSE2's `pmovmskb`, x86_64's
/// baseline; wasm32's `i8x16.bitmask` with simd128), each byte shifted up a bit between rows;
/// what is left, 8 bytes at a time as an 8×8 bit matrix transposed.
fn plane_bits(plane: &[u8], rows: &mut [u8], row: usize) {
    let n = plane.len();
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= n {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8, _mm_slli_epi16};
        // SAFETY: SSE2 is part of x86_64's baseline, and the 16 bytes read lie in `plane`
        // (i + 16 <= n); the load is unaligned
        let mut x = unsafe { _mm_loadu_si128(plane.as_ptr().add(i) as *const __m128i) };
        for b in (0..8).rev() {
            // SAFETY: as above (register operations only)
            let m = unsafe { _mm_movemask_epi8(x) } as u16;
            rows[b * row + i / 8..b * row + i / 8 + 2].copy_from_slice(&m.to_le_bytes());
            // each byte's next bit to its top (16-bit lanes: the bit carried into the high
            // byte lands at its bottom, which is never read)
            // SAFETY: as above (register operations only)
            x = unsafe { _mm_slli_epi16(x, 1) };
        }
        i += 16;
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    while i + 16 <= n {
        use std::arch::wasm32::{i16x8_shl, i8x16_bitmask, u8x16};
        let p = &plane[i..i + 16];
        let mut x = u8x16(
            p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13],
            p[14], p[15],
        );
        for b in (0..8).rev() {
            let m = i8x16_bitmask(x);
            rows[b * row + i / 8..b * row + i / 8 + 2].copy_from_slice(&m.to_le_bytes());
            x = i16x8_shl(x, 1);
        }
        i += 16;
    }
    while i + 8 <= n {
        let x = u64::from_le_bytes(plane[i..i + 8].try_into().expect("8 bytes"));
        let t = if x == 0 { 0 } else { transpose8(x) }.to_le_bytes();
        for (b, &v) in t.iter().enumerate() {
            rows[b * row + i / 8] = v;
        }
        i += 8;
    }
}

/// The bit transposition of elements `from ..` of a block ([`bitshuffle_block`]'s layout; `from`
/// and `n` multiples of 8), 8 elements at a time: byte j of each as an 8×8 bit matrix,
/// transposed.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn groups_bits(input: &[u8], out: &mut [u8], n: usize, size: usize, from: usize) {
    let row = n / 8;
    for g in from / 8..row {
        for j in 0..size {
            let mut x = 0u64;
            for k in 0..8 {
                x |= (input[(8 * g + k) * size + j] as u64) << (8 * k);
            }
            let t = if x == 0 { 0 } else { transpose8(x) }.to_le_bytes();
            for (b, &v) in t.iter().enumerate() {
                out[(8 * j + b) * row + g] = v;
            }
        }
    }
}

/// [`bitshuffle_block`] of 4-byte elements with AVX2, 32 elements a step: four loads of 8
/// elements; for byte j, each element shifted down by 8j and masked, packed 32 → 16 → 8 bits
/// (in-lane packs, put back in element order by one permutation of dwords), then the 8 bit rows
/// by `vpmovmskb` (the top bit of each byte), each byte shifted up a bit between rows (16-bit
/// lanes: what is carried into a high byte lands at its bottom, never read). Returns the
/// elements done (`n` rounded down to 32).
///
/// # Safety
/// The CPU must have AVX2; `input` and `out` hold `4·n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn shuffle4_avx2(input: &[u8], out: &mut [u8], n: usize) -> usize {
    use std::arch::x86_64::*;
    assert!(input.len() >= 4 * n && out.len() >= 4 * n);
    #[inline(always)]
    unsafe fn byte<const S: i32>(x: __m256i, low: __m256i) -> __m256i {
        _mm256_and_si256(_mm256_srli_epi32::<S>(x), low)
    }
    let row = n / 8;
    let low = _mm256_set1_epi32(0xFF);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let (src, dst) = (input.as_ptr(), out.as_mut_ptr());
    let mut e = 0;
    while e + 32 <= n {
        // SAFETY: bytes 4e .. 4e + 128 lie in `input` (e + 32 <= n); unaligned loads
        let v = unsafe {
            [0, 32, 64, 96].map(|o| _mm256_loadu_si256(src.add(4 * e + o) as *const __m256i))
        };
        for j in 0..4 {
            let b: [__m256i; 4] = match j {
                0 => v.map(|x| _mm256_and_si256(x, low)),
                1 => v.map(|x| unsafe { byte::<8>(x, low) }),
                2 => v.map(|x| unsafe { byte::<16>(x, low) }),
                _ => v.map(|x| _mm256_srli_epi32::<24>(x)),
            };
            // [a0-3 b0-3 | a4-7 b4-7] as i16, then [a0-3 b0-3 c0-3 d0-3 | a4-7 ...] as u8
            let ab = _mm256_packs_epi32(b[0], b[1]);
            let cd = _mm256_packs_epi32(b[2], b[3]);
            let mut x = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
            for bit in (0..8).rev() {
                let m = _mm256_movemask_epi8(x) as u32;
                // SAFETY: row (8j + bit) holds `row` = n/8 bytes, of which e/8 .. e/8 + 4
                // (e + 32 <= n) are written; it ends by 4n
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        m.to_le_bytes().as_ptr(),
                        dst.add((8 * j + bit) * row + e / 8),
                        4,
                    )
                };
                x = _mm256_slli_epi16::<1>(x);
            }
        }
        e += 32;
    }
    e
}

/// One chunk through the bitshuffle filter with LZ4 (client value 4 = 2), as the bitshuffle
/// library's HDF5 filter writes it and [`bitshuffle_decode`] reads it: the uncompressed size
/// (u64 big-endian), the block size in bytes (u32 big-endian: the library's default block,
/// [`default_block`] elements), then each block of whole groups of 8 elements, bit-shuffled
/// and LZ4-compressed, as a u32 big-endian length and the LZ4 block (the last block holds the
/// elements left, rounded down to 8), then the `n % 8` elements left over, copied as they are.
/// `data` holds whole elements of `elem` bytes (the datatype's size; 4 for int32 frames).
pub fn bitshuffle_lz4_encode(data: &[u8], elem: usize) -> Vec<u8> {
    assert!(elem > 0 && data.len().is_multiple_of(elem));
    let n = data.len() / elem;
    let block = default_block(elem);
    let block_bytes = block * elem;
    let blocks = n.div_ceil(block);
    let mut out = Vec::with_capacity(
        12 + blocks * (4 + lz4_flex::block::get_maximum_output_size(block_bytes)),
    );
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    out.extend_from_slice(&(block_bytes as u32).to_be_bytes());
    let mut shuffled = vec![0u8; block_bytes.min(n / 8 * 8 * elem)];
    let mut planes = Vec::new();
    let mut done = 0usize; // elements
    while n - done >= 8 {
        let m = block.min((n - done) / 8 * 8);
        let bytes = m * elem;
        bitshuffle_block(
            &data[done * elem..done * elem + bytes],
            &mut shuffled[..bytes],
            m,
            elem,
            &mut planes,
        );
        let at = out.len();
        let bound = lz4_flex::block::get_maximum_output_size(bytes);
        out.resize(at + 4 + bound, 0);
        let len = lz4_flex::block::compress_into(&shuffled[..bytes], &mut out[at + 4..])
            .expect("the output holds LZ4's bound");
        out[at..at + 4].copy_from_slice(&(len as u32).to_be_bytes());
        out.truncate(at + 4 + len);
        done += m;
    }
    out.extend_from_slice(&data[done * elem..]);
    out
}

/// The bitshuffle library's default block (`bshuf_default_block_size`): 8 KiB of elements, a
/// multiple of 8, at least 128 elements.
fn default_block(elem: usize) -> usize {
    (8192 / elem / 8 * 8).max(128)
}

/// Decodes one chunk written by the bitshuffle filter into its `expect` bytes (the chunk's
/// shape × element size, checked against what the chunk says before any buffer is sized).
/// With LZ4 (client value 4 = 2): a 12-byte header (uncompressed bytes, u64 big-endian; block
/// size in bytes, u32 big-endian), then each block as a u32 big-endian compressed length and
/// the LZ4 block. Without compression (0, hdf5plugin's `cname="none"`): no header, the blocks
/// as they are, of `cd[3]` elements (0: the library's default). Then the `n % 8` elements left
/// over, copied unshuffled. `cd` is the filter's client data (`[.., .., element size, block
/// size, compression]`). Errors say what is wrong (the caller names file and chunk).
pub fn bitshuffle_decode(
    chunk: &[u8],
    cd: &[u32],
    elem: usize,
    expect: usize,
) -> Result<Vec<u8>, String> {
    let lz4 = match cd.get(4).copied() {
        None | Some(0) => false,
        Some(BSHUF_LZ4) => true,
        Some(c) => {
            return Err(format!(
                "bitshuffle compression {c} is not supported (0 none, 2 LZ4 are)"
            ))
        }
    };
    if elem == 0 {
        return Err("element size 0".into());
    }
    let short = || "the bitshuffle chunk is truncated".to_string();
    let (total, block, mut at) = if lz4 {
        let total = be64(chunk, 0).ok_or_else(short)?;
        let block_bytes = be32(chunk, 8).ok_or_else(short)? as usize;
        if total != expect as u64 {
            return Err(format!(
                "the bitshuffle header says {total} bytes, the chunk's shape holds {expect}"
            ));
        }
        if !block_bytes.is_multiple_of(elem) {
            return Err(format!(
                "bitshuffle blocks of {block_bytes} bytes for {elem}-byte elements"
            ));
        }
        (expect, block_bytes / elem, 12usize)
    } else {
        if chunk.len() != expect {
            return Err(format!(
                "{} bytes of uncompressed bitshuffle data, the chunk's shape holds {expect}",
                chunk.len()
            ));
        }
        let block = match cd.get(3).copied().unwrap_or(0) {
            0 => default_block(elem),
            b => b as usize,
        };
        (expect, block, 0usize)
    };
    if !total.is_multiple_of(elem) {
        return Err(format!(
            "bitshuffle chunk of {total} bytes for {elem}-byte elements"
        ));
    }
    if block == 0 || !block.is_multiple_of(8) {
        return Err(format!(
            "bitshuffle block of {block} elements (a multiple of 8 expected)"
        ));
    }
    let n = total / elem;
    let mut out = vec![0u8; total];
    // scratch for one decompressed block: never larger than the chunk
    let mut tmp = vec![0u8; if lz4 { block.min(n) * elem } else { 0 }];
    let mut done = 0usize; // elements
    while n - done >= 8 {
        let m = block.min((n - done) / 8 * 8);
        let bytes = m * elem;
        let src: &[u8] = if lz4 {
            let len = be32(chunk, at).ok_or_else(short)? as usize;
            at += 4;
            let comp = chunk.get(at..at + len).ok_or_else(short)?;
            at += len;
            let got = lz4_flex::block::decompress_into(comp, &mut tmp[..bytes])
                .map_err(|e| format!("an LZ4 block does not decode ({e})"))?;
            if got != bytes {
                return Err(format!("an LZ4 block gave {got} bytes, {bytes} expected"));
            }
            &tmp[..bytes]
        } else {
            let s = chunk.get(at..at + bytes).ok_or_else(short)?;
            at += bytes;
            s
        };
        bitunshuffle_block(src, &mut out[done * elem..done * elem + bytes], m, elem);
        done += m;
    }
    let rest = (n - done) * elem;
    let tail = chunk.get(at..at + rest).ok_or_else(short)?;
    out[done * elem..].copy_from_slice(tail);
    Ok(out)
}

/// Decodes one chunk written by the HDF5 LZ4 filter (32004) into its `expect` bytes (checked
/// against the header before any buffer is sized): the uncompressed size (u64 big-endian),
/// the block size (u32 big-endian), then per block a u32 big-endian compressed length and the
/// block (stored as is when that length equals the block's size).
pub fn lz4_filter_decode(chunk: &[u8], expect: usize) -> Result<Vec<u8>, String> {
    let short = || "the LZ4 chunk is truncated".to_string();
    let total = be64(chunk, 0).ok_or_else(short)?;
    let block = be32(chunk, 8).ok_or_else(short)? as usize;
    if total != expect as u64 {
        return Err(format!(
            "the LZ4 header says {total} bytes, the chunk's shape holds {expect}"
        ));
    }
    let total = expect;
    if block == 0 && total > 0 {
        return Err("LZ4 block size 0".into());
    }
    let mut out = vec![0u8; total];
    let (mut at, mut done) = (12usize, 0usize);
    while done < total {
        let want = block.min(total - done);
        let len = be32(chunk, at).ok_or_else(short)? as usize;
        at += 4;
        let comp = chunk.get(at..at + len).ok_or_else(short)?;
        at += len;
        if len == want {
            out[done..done + want].copy_from_slice(comp);
        } else {
            let got = lz4_flex::block::decompress_into(comp, &mut out[done..done + want])
                .map_err(|e| format!("an LZ4 block does not decode ({e})"))?;
            if got != want {
                return Err(format!("an LZ4 block gave {got} bytes, {want} expected"));
            }
        }
        done += want;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forward transposition, written from the definition (test only).
    fn bitshuffle_block(input: &[u8], n: usize, size: usize) -> Vec<u8> {
        let mut out = vec![0u8; n * size];
        for i in 0..n {
            for j in 0..size {
                for b in 0..8 {
                    if input[i * size + j] >> b & 1 != 0 {
                        out[(8 * j + b) * (n / 8) + i / 8] |= 1 << (i % 8);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_transposition_is_the_definition() {
        // whole 16-byte vectors, and a group of 8 left (the scalar transposition)
        for (n, size) in [
            (8, 1),
            (64, 4),
            (2048, 4),
            (24, 2),
            (16, 8),
            (40, 4),
            (136, 3),
            (32, 4),
            (96 + 24, 4),
            (2048 + 8, 4),
        ] {
            let data: Vec<u8> = (0..(n * size) as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect();
            let want = bitshuffle_block(&data, n, size);
            let mut got = vec![0u8; data.len()];
            super::bitshuffle_block(&data, &mut got, n, size, &mut Vec::new());
            assert_eq!(got, want, "{n} x {size}");
            // each way on its own: two passes, 8 elements at a time, and AVX2 (where the CPU
            // has it) for 4-byte elements
            got.fill(0);
            planes_then_bits(&data, &mut got, n, size, &mut Vec::new());
            assert_eq!(got, want, "{n} x {size}: planes, then bits");
            got.fill(0);
            groups_bits(&data, &mut got, n, size, 0);
            assert_eq!(got, want, "{n} x {size}: 8 at a time");
            #[cfg(target_arch = "x86_64")]
            if size == 4 && std::arch::is_x86_feature_detected!("avx2") {
                got.fill(0);
                // SAFETY: the CPU has AVX2; `data` and `got` hold 4n bytes
                let done = unsafe { shuffle4_avx2(&data, &mut got, n) };
                assert_eq!(done, n / 32 * 32);
                groups_bits(&data, &mut got, n, size, done);
                assert_eq!(got, want, "{n} x {size}: AVX2");
            }
        }
    }

    #[test]
    fn bslz4_chunks_decode_to_their_data() {
        // int32 frames: several blocks of 2048, a short last block, 0..7 elements left over
        for n in [0usize, 5, 8, 2048, 2053, 2048 * 3 + 136 + 7, 512 * 512] {
            let vals: Vec<i32> = (0..n as i64)
                .map(|i| ((i * i * 7919) % 1001 - 40) as i32)
                .collect();
            let raw: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            let c = bitshuffle_lz4_encode(&raw, 4);
            assert_eq!(&c[..8], &(raw.len() as u64).to_be_bytes());
            assert_eq!(&c[8..12], &8192u32.to_be_bytes());
            let back = bitshuffle_decode(&c, &[0, 2, 4, 0, 2], 4, raw.len()).unwrap();
            assert_eq!(back, raw, "{n} elements");
        }
        // other element sizes (their default blocks: 8192 / size elements)
        let raw: Vec<u8> = (0..3 * 4099u32).map(|i| (i % 7) as u8).collect();
        for elem in [1, 3] {
            let c = bitshuffle_lz4_encode(&raw, elem);
            assert_eq!(
                bitshuffle_decode(&c, &[0, 2, elem as u32, 0, 2], elem, raw.len()).unwrap(),
                raw
            );
        }
        // noisy counts compress (11 bits of noise a pixel: about 1.6 of 4 bytes kept)
        let mut s = 1u64;
        let noisy: Vec<u8> = (0..65536)
            .flat_map(|_| {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (1000 + (s >> 53) as i32).to_le_bytes()
            })
            .collect();
        let c = bitshuffle_lz4_encode(&noisy, 4);
        assert!(c.len() < noisy.len() / 2, "{} of {}", c.len(), noisy.len());
    }

    #[test]
    fn unshuffle_inverts_the_transposition() {
        let data: Vec<u8> = (0..64u32 * 4).map(|i| (i * 37 % 251) as u8).collect();
        let sh = bitshuffle_block(&data, 64, 4);
        let mut back = vec![0u8; data.len()];
        bitunshuffle_block(&sh, &mut back, 64, 4);
        assert_eq!(back, data);
    }

    #[test]
    fn uncompressed_bitshuffle_chunk_with_leftover() {
        // 21 u16 elements in blocks of 8 (client value 3), no compression: no header (as
        // bshuf_h5filter writes it), two blocks of 8, then 5 left over copied as is
        let vals: Vec<u16> = (0..21).map(|i| i * 1000 + 7).collect();
        let raw: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut chunk = bitshuffle_block(&raw[..16], 8, 2);
        chunk.extend(bitshuffle_block(&raw[16..32], 8, 2));
        chunk.extend(&raw[32..]);
        assert_eq!(
            bitshuffle_decode(&chunk, &[0, 3, 2, 8, 0], 2, 42).unwrap(),
            raw
        );
        let e = bitshuffle_decode(&chunk[..30], &[0, 3, 2, 8, 0], 2, 42).unwrap_err();
        assert!(
            e.contains("30 bytes of uncompressed bitshuffle data"),
            "{e}"
        );
        // the default block (client value 0): 4096 u16 elements, so one block of 16 here
        let mut chunk = bitshuffle_block(&raw[..32], 16, 2);
        chunk.extend(&raw[32..]);
        assert_eq!(
            bitshuffle_decode(&chunk, &[0, 3, 2, 0, 0], 2, 42).unwrap(),
            raw
        );
    }

    /// An LZ4 block of literals only (the build has no LZ4 compressor): the token's length
    /// nibble, its continuation bytes, the bytes.
    fn lz4_literals(b: &[u8]) -> Vec<u8> {
        let mut out = vec![(b.len().min(15) as u8) << 4];
        if b.len() >= 15 {
            let mut rest = b.len() - 15;
            while rest >= 255 {
                out.push(255);
                rest -= 255;
            }
            out.push(rest as u8);
        }
        out.extend_from_slice(b);
        out
    }

    /// An LZ4 bitshuffle chunk: header, then each block's length and LZ4 block.
    fn lz4_chunk(raw: &[u8], total: u64, block_bytes: u32, elem: usize) -> Vec<u8> {
        let mut chunk = total.to_be_bytes().to_vec();
        chunk.extend(block_bytes.to_be_bytes());
        let n = raw.len() / elem / 8 * 8;
        for b in raw[..n * elem].chunks(block_bytes as usize) {
            let c = lz4_literals(&bitshuffle_block(b, b.len() / elem, elem));
            chunk.extend((c.len() as u32).to_be_bytes());
            chunk.extend(c);
        }
        chunk.extend(&raw[n * elem..]);
        chunk
    }

    #[test]
    fn crafted_headers_are_refused_before_anything_is_allocated() {
        let raw: Vec<u8> = (0..84u32).map(|i| (i * 7) as u8).collect(); // 21 u32
        let cd = [0, 3, 4, 0, 2];
        assert_eq!(
            bitshuffle_decode(&lz4_chunk(&raw, 84, 32, 4), &cd, 4, 84).unwrap(),
            raw
        );
        // totals of 2^40 and 2^63, a block of 0xFFFFFFF0 bytes: against the chunk's shape
        for total in [1u64 << 40, 1 << 63] {
            let e = bitshuffle_decode(&lz4_chunk(&raw, total, 32, 4), &cd, 4, 84).unwrap_err();
            assert!(e.contains(&format!("says {total} bytes")), "{e}");
            let mut l = lz4_chunk(&raw, 84, 84, 1);
            l[..8].copy_from_slice(&total.to_be_bytes());
            let e = lz4_filter_decode(&l, 84).unwrap_err();
            assert!(e.contains(&format!("says {total} bytes")), "{e}");
        }
        let mut c = lz4_chunk(&raw, 84, 32, 4);
        c[8..12].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
        // one block of 16 elements at most (the chunk's), its data do not decode as one
        assert!(bitshuffle_decode(&c, &cd, 4, 84).is_err());
    }
}
