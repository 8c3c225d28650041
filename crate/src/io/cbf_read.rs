//! miniCBF input: the byte-offset compressed images that `io::cbf` writes (and PILATUS/EIGER
//! detectors write), read back into pixels and the `# key value` header lines. Used by the
//! Python binding's `read_cbf`; errors name the file.

use crate::error::{Error, Result};

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

fn mime_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let (k, v) = l.split_once(':')?;
        (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Decodes byte-offset data into `n` values.
pub fn byte_offset_decode(data: &[u8], n: usize) -> Option<Vec<i32>> {
    let mut out = Vec::with_capacity(n);
    let mut prev: i64 = 0;
    let mut i = 0;
    while out.len() < n {
        let b = *data.get(i)?;
        i += 1;
        let d: i64 = if b != 0x80 {
            b as i8 as i64
        } else {
            let s = i16::from_le_bytes([*data.get(i)?, *data.get(i + 1)?]);
            i += 2;
            if s != i16::MIN {
                s as i64
            } else {
                let w = i32::from_le_bytes(data.get(i..i + 4)?.try_into().ok()?);
                i += 4;
                if w != i32::MIN {
                    w as i64
                } else {
                    let q = i64::from_le_bytes(data.get(i..i + 8)?.try_into().ok()?);
                    i += 8;
                    q
                }
            }
        };
        prev += d;
        out.push(i32::try_from(prev).ok()?);
    }
    Some(out)
}

/// Reads a miniCBF file with byte-offset compression.
pub fn read_minicbf(name: &str, bytes: &[u8]) -> Result<CbfImage> {
    let bad = |why: &str| Error::input(format!("{name}: not a byte-offset miniCBF file: {why}"));
    let start = bytes
        .windows(START.len())
        .position(|w| w == START)
        .ok_or_else(|| bad("no binary section"))?;
    let header = String::from_utf8_lossy(&bytes[..start]).into_owned();
    if !header.to_ascii_lowercase().contains("x-cbf_byte_offset") {
        return Err(bad("the compression is not x-CBF_BYTE_OFFSET"));
    }
    let num = |key: &str| -> Result<usize> {
        mime_value(&header, key)
            .and_then(|v| v.parse::<usize>().ok())
            .ok_or_else(|| bad(&format!("no {key} line")))
    };
    let width = num("X-Binary-Size-Fastest-Dimension")?;
    let height = num("X-Binary-Size-Second-Dimension")?;
    let n = num("X-Binary-Number-of-Elements")?;
    if width.checked_mul(height) != Some(n) {
        return Err(bad(&format!("{n} elements for a {width}x{height} image")));
    }
    let size = num("X-Binary-Size")?;
    let data = bytes
        .get(start + START.len()..start + START.len() + size)
        .ok_or_else(|| bad("the binary section is shorter than X-Binary-Size"))?;
    let pixels = byte_offset_decode(data, n).ok_or_else(|| bad("the data end early"))?;
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
}
