//! miniCBF input: the byte-offset compressed images that `io::cbf` writes (and PILATUS/EIGER
//! detectors write), read back into pixels and the `# key value` header lines. Used by the
//! Python binding's `read_cbf`; errors name the file.

use crate::error::{Error, Result};
use crate::limits::{over, MAX_PIXELS};

/// A miniCBF file: its header text (before the binary section), image size and pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct CbfImage {
    /// Everything before the binary section's start marker (CIF text and MIME headers).
    pub header: String,
    pub width: usize,
    pub height: usize,
    /// Signed 32-bit pixels, fast index first.
    pub pixels: Vec<i32>,
}

const START: &[u8] = b"\x0c\x1a\x04\xd5";

fn mime_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once(':')?;
        (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().trim_matches('"'))
    })
}

/// Why byte-offset data do not decode into the values asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum DecodeError {
    /// The data end before value `at` (0-based) is complete.
    Short { at: usize },
    /// Value `at` is beyond signed 32 bits.
    Range { at: usize, value: i128 },
}

/// The `K` bytes at `*i` (moved past them), or the end of the data inside value `at`.
fn take<const K: usize>(
    data: &[u8],
    i: &mut usize,
    at: usize,
) -> std::result::Result<[u8; K], DecodeError> {
    let s = data.get(*i..*i + K).ok_or(DecodeError::Short { at })?;
    *i += K;
    Ok(s.try_into().unwrap_or([0; K]))
}

/// Decodes byte-offset data into `n` values; returns them and the bytes used. The output is
/// never larger than the data allow (each value takes at least one byte).
pub fn byte_offset_decode(
    data: &[u8],
    n: usize,
) -> std::result::Result<(Vec<i32>, usize), DecodeError> {
    let mut out = Vec::with_capacity(n.min(data.len()));
    let mut prev: i128 = 0;
    let mut i = 0;
    while out.len() < n {
        let at = out.len();
        let b = *data.get(i).ok_or(DecodeError::Short { at })?;
        i += 1;
        let d: i128 = if b != 0x80 {
            b as i8 as i128
        } else {
            let s = i16::from_le_bytes(take(data, &mut i, at)?);
            if s != i16::MIN {
                s as i128
            } else {
                let w = i32::from_le_bytes(take(data, &mut i, at)?);
                if w != i32::MIN {
                    w as i128
                } else {
                    i64::from_le_bytes(take(data, &mut i, at)?) as i128
                }
            }
        };
        prev += d;
        let v = i32::try_from(prev).map_err(|_| DecodeError::Range { at, value: prev })?;
        out.push(v);
    }
    Ok((out, i))
}

/// Reads a miniCBF file with byte-offset compression. Every declared size is checked against
/// the bytes present before anything is allocated; errors name the file and the header key.
pub fn read_minicbf(name: &str, bytes: &[u8]) -> Result<CbfImage> {
    read_named(name, bytes).map_err(|e| e.at_file(name))
}

fn read_named(name: &str, bytes: &[u8]) -> Result<CbfImage> {
    let not_cbf =
        |why: &str| Error::input(format!("{name}: not a byte-offset miniCBF file: {why}"));
    let start = bytes
        .windows(START.len())
        .position(|w| w == START)
        .ok_or_else(|| not_cbf("no binary section"))?;
    let header = String::from_utf8_lossy(&bytes[..start]).into_owned();
    if !header.to_ascii_lowercase().contains("x-cbf_byte_offset") {
        return Err(not_cbf("the compression is not x-CBF_BYTE_OFFSET"));
    }
    let bad = |key: &str, why: String| {
        Error::input(format!("{name}: {key}: {why}"))
            .at_file(name)
            .at_key(key)
    };
    let num = |key: &str| -> Result<usize> {
        let v = mime_value(&header, key).ok_or_else(|| bad(key, "missing".into()))?;
        v.parse::<usize>()
            .map_err(|_| bad(key, format!("'{v}' is not a whole number")))
    };
    let width = num("X-Binary-Size-Fastest-Dimension")?;
    let height = num("X-Binary-Size-Second-Dimension")?;
    let n = num("X-Binary-Number-of-Elements")?;
    if width.checked_mul(height) != Some(n) {
        return Err(bad(
            "X-Binary-Number-of-Elements",
            format!("{n} elements for a {width}x{height} image"),
        ));
    }
    if n > MAX_PIXELS {
        return Err(over(format!(
            "{name}: X-Binary-Number-of-Elements: {n} pixels ({width}x{height}), more than this \
             build reads (at most {MAX_PIXELS})"
        ))
        .at_file(name)
        .at_key("X-Binary-Number-of-Elements"));
    }
    let size = num("X-Binary-Size")?;
    let body = &bytes[start + START.len()..];
    if size > body.len() {
        return Err(bad(
            "X-Binary-Size",
            format!(
                "{size} bytes declared, the file holds {} after the binary marker (truncated?)",
                body.len()
            ),
        ));
    }
    if n > size {
        return Err(bad(
            "X-Binary-Number-of-Elements",
            format!(
                "{n} pixels cannot be held in X-Binary-Size {size} bytes (at least one byte each)"
            ),
        ));
    }
    let data = &body[..size];
    let (pixels, used) = byte_offset_decode(data, n).map_err(|e| match e {
        DecodeError::Short { at } => bad(
            "X-Binary-Size",
            format!("the {size} bytes of data end inside pixel {at} of {n} (truncated?)"),
        ),
        DecodeError::Range { at, value } => Error::input(format!(
            "{name}: pixel {at} (fast {}, slow {}) is {value}, beyond signed 32 bits",
            at % width.max(1),
            at / width.max(1)
        ))
        .at_file(name),
    })?;
    if used != size {
        return Err(bad(
            "X-Binary-Number-of-Elements",
            format!(
                "{n} pixels use {used} of the {size} bytes of data: the data hold more pixels \
                 than the header declares"
            ),
        ));
    }
    Ok(CbfImage {
        header,
        width,
        height,
        pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::cbf::{write_minicbf, CbfInfo};

    #[test]
    fn reads_back_what_the_writer_wrote() {
        let px: Vec<i32> = vec![
            0,
            5,
            -3,
            200,
            -40000,
            70000,
            1 << 30,
            -(1 << 30),
            7,
            7,
            7,
            0,
        ];
        let info = CbfInfo {
            detector: "test".into(),
            pixel: 172e-6,
            sensor: None,
            exposure: 1.0,
            count_cutoff: 1 << 20,
            wavelength: 1.0,
            distance: 0.1,
            beam_xy: (2.0, 1.5),
            start_angle: 0.0,
            angle_increment: 0.1,
            excluded: 0,
            two_theta: 0.0,
            polarization: None,
            flux: 0.0,
        };
        let bytes = write_minicbf(&info, 4, 3, &px);
        let img = read_minicbf("t.cbf", &bytes).unwrap();
        assert_eq!((img.width, img.height), (4, 3));
        assert_eq!(img.pixels, px);
        assert!(img.header.contains("# Wavelength 1.000000 A"));
        // cut inside the compressed data (the file is padded by 4095 bytes after it)
        let start = bytes
            .windows(4)
            .position(|w| w == [0x0c, 0x1a, 0x04, 0xd5])
            .unwrap();
        let e = read_minicbf("t.cbf", &bytes[..start + 4 + 20]).unwrap_err();
        assert!(e.message.starts_with("t.cbf: "), "{}", e.message);
    }

    /// A miniCBF of the given header values over `data` (then padding, as PILATUS writes).
    fn crafted(w: &str, h: &str, n: &str, size: usize, data: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "###CBF: VERSION 1.5\r\nconversions=\"x-CBF_BYTE_OFFSET\"\r\nX-Binary-Size: {size}\r\n\
             X-Binary-Number-of-Elements: {n}\r\nX-Binary-Size-Fastest-Dimension: {w}\r\n\
             X-Binary-Size-Second-Dimension: {h}\r\n\r\n"
        )
        .into_bytes();
        v.extend_from_slice(START);
        v.extend_from_slice(data);
        v.resize(v.len() + 64, 0);
        v
    }

    fn msg(b: &[u8]) -> String {
        let e = read_minicbf("c.cbf", b).unwrap_err();
        assert_eq!(e.file.as_deref(), Some("c.cbf"), "{}", e.message);
        e.message
    }

    #[test]
    fn every_error_names_the_file() {
        for bytes in [&b"junk"[..], b"", b"data_\n\x0c\x1a\x04\xd5"] {
            let e = read_minicbf("j.cbf", bytes).unwrap_err();
            assert_eq!(e.file.as_deref(), Some("j.cbf"), "{}", e.message);
        }
    }

    #[test]
    fn crafted_headers_are_refused_before_anything_is_allocated() {
        let data = [1u8, 1, 1, 1];
        assert_eq!(
            read_minicbf("c.cbf", &crafted("2", "2", "4", 4, &data))
                .unwrap()
                .pixels,
            [1, 2, 3, 4]
        );
        // 2^20 x 2^20 and 2^31 x 2^31: beyond the build's limit, no allocation
        let m = msg(&crafted("1048576", "1048576", "1099511627776", 4, &data));
        assert!(
            m.contains("X-Binary-Number-of-Elements: 1099511627776 pixels"),
            "{m}"
        );
        let m = msg(&crafted(
            "2147483648",
            "2147483648",
            "4611686018427387904",
            4,
            &data,
        ));
        assert!(m.contains("more than this build reads"), "{m}");
        // 16384^2 declared in a file of a few bytes: refused by the size, not by decoding
        let m = msg(&crafted("16384", "16384", "268435456", 4, &data));
        assert!(
            m.starts_with("c.cbf: X-Binary-Number-of-Elements: 268435456 pixels cannot be held"),
            "{m}"
        );
        // a size beyond the file, and a file cut inside its data
        let m = msg(&crafted("2", "2", "4", 400, &data));
        assert!(
            m.starts_with("c.cbf: X-Binary-Size: 400 bytes declared"),
            "{m}"
        );
        let m = msg(&crafted("2", "1", "2", 2, &[0x80, 1]));
        assert_eq!(
            m,
            "c.cbf: X-Binary-Size: the 2 bytes of data end inside pixel 0 of 2 (truncated?)"
        );
        // fewer pixels declared than the data hold
        let m = msg(&crafted("1", "2", "2", 4, &data));
        assert!(
            m.contains("the data hold more pixels than the header declares"),
            "{m}"
        );
        // a value beyond i32 is not "the data end early"
        let mut big = vec![0x80, 0x00, 0x80, 0xff, 0xff, 0xff, 0x7f]; // i32::MAX
        big.push(1); // + 1
        let m = msg(&crafted("2", "1", "2", big.len(), &big));
        assert!(
            m.contains("pixel 1 (fast 1, slow 0) is 2147483648, beyond signed 32 bits"),
            "{m}"
        );
        // a present but unparsable count is not "missing"
        let m = msg(&crafted("2", "2", "four", 4, &data));
        assert_eq!(
            m,
            "c.cbf: X-Binary-Number-of-Elements: 'four' is not a whole number"
        );
        let mut b = crafted("2", "2", "4", 4, &data);
        let at = b.windows(6).position(|w| w == b"Second").unwrap();
        b[at..at + 6].copy_from_slice(b"Secund");
        assert_eq!(msg(&b), "c.cbf: X-Binary-Size-Second-Dimension: missing");
    }
}
