//! SMV (ADSC) images: the writer for `-intfile` / `-noisefile` (MODEL.md §7.3, §7.4) and the
//! header reader for `-img` / `-mask` (§7.11).

use crate::cfmt::{atof, fmt_g};
use crate::error::{Error, Result};

/// Fixed header size written by upstream.
pub const SMV_HEADER_BYTES: usize = 512;

/// Values of an SMV header, already in the header's units (mm, Å, degrees, pixels). The caller
/// computes them exactly as upstream does (e.g. `(Sbeam - 0.5*pixel)*1000` for MOSFLM_CENTER_X).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmvHeader {
    pub fpixels: usize,
    pub spixels: usize,
    pub pixel_mm: f64,
    pub distance_mm: f64,
    pub wavelength_a: f64,
    pub beam_center_x_mm: f64,
    pub beam_center_y_mm: f64,
    pub adxv_center_x: f64,
    pub adxv_center_y: f64,
    pub mosflm_center_x: f64,
    pub mosflm_center_y: f64,
    pub denzo_x_beam: f64,
    pub denzo_y_beam: f64,
    pub dials_origin: [f64; 3],
    pub xds_orgx: f64,
    pub xds_orgy: f64,
    pub close_distance_mm: f64,
    pub phi_deg: f64,
    pub osc_start_deg: f64,
    pub osc_range_deg: f64,
    pub twotheta_deg: f64,
}

/// Pixel type named in an SMV header's `TYPE` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmvType {
    /// `TYPE=unsigned_short`: 2-byte pixels.
    U16,
    /// `TYPE=long_integer`: 4-byte unsigned pixels (noisify `-bits 32`).
    U32,
}

/// The opening lines every upstream program writes, through `TYPE`.
pub fn header_open(ty: SmvType) -> String {
    let t = match ty {
        SmvType::U16 => "unsigned_short",
        SmvType::U32 => "long_integer",
    };
    format!("{{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE={t};\n")
}

/// The closing lines every upstream program writes (`BEAMLINE=fake` marks a simulated image).
pub const HEADER_CLOSE: &str = "DETECTOR_SN=000;\nBEAMLINE=fake;\n}\x0c";

/// Appends `KEY=<%g of v>;\n`.
pub fn push_g(s: &mut String, key: &str, v: f64) {
    s.push_str(key);
    s.push('=');
    s.push_str(&fmt_g(v));
    s.push_str(";\n");
}

/// The header text exactly as upstream prints it, up to and including `}` and the form feed
/// (without the space padding).
pub fn header_text(h: &SmvHeader) -> String {
    let g = fmt_g;
    let mut s = header_open(SmvType::U16);
    s.push_str(&format!("SIZE1={};\nSIZE2={};\n", h.fpixels, h.spixels));
    push_g(&mut s, "PIXEL_SIZE", h.pixel_mm);
    push_g(&mut s, "DISTANCE", h.distance_mm);
    push_g(&mut s, "WAVELENGTH", h.wavelength_a);
    push_g(&mut s, "BEAM_CENTER_X", h.beam_center_x_mm);
    push_g(&mut s, "BEAM_CENTER_Y", h.beam_center_y_mm);
    push_g(&mut s, "ADXV_CENTER_X", h.adxv_center_x);
    push_g(&mut s, "ADXV_CENTER_Y", h.adxv_center_y);
    push_g(&mut s, "MOSFLM_CENTER_X", h.mosflm_center_x);
    push_g(&mut s, "MOSFLM_CENTER_Y", h.mosflm_center_y);
    push_g(&mut s, "DENZO_X_BEAM", h.denzo_x_beam);
    push_g(&mut s, "DENZO_Y_BEAM", h.denzo_y_beam);
    let [o1, o2, o3] = h.dials_origin;
    s.push_str(&format!("DIALS_ORIGIN={},{},{}\n", g(o1), g(o2), g(o3)));
    push_g(&mut s, "XDS_ORGX", h.xds_orgx);
    push_g(&mut s, "XDS_ORGY", h.xds_orgy);
    push_g(&mut s, "CLOSE_DISTANCE", h.close_distance_mm);
    push_g(&mut s, "PHI", h.phi_deg);
    push_g(&mut s, "OSC_START", h.osc_start_deg);
    push_g(&mut s, "OSC_RANGE", h.osc_range_deg);
    push_g(&mut s, "TWOTHETA", h.twotheta_deg);
    s.push_str(HEADER_CLOSE);
    s
}

/// Pads header text (through the form feed) with spaces to the 512 bytes it declares. Text
/// longer than that (values of extreme geometry in `%g` form) gets the next multiple of 512
/// bytes, and its `HEADER_BYTES` says so (readers take the size from that key), rather than an
/// error after the render.
pub fn pad_header(mut text: String) -> Result<Vec<u8>> {
    let mut size = SMV_HEADER_BYTES;
    while text.len() > size {
        let grown = format!("HEADER_BYTES={};", size + SMV_HEADER_BYTES);
        let current = format!("HEADER_BYTES={size};");
        if !text.contains(&current) {
            return Err(Error::output(format!(
                "SMV header is {} bytes long, more than the {size} bytes it declares",
                text.len()
            )));
        }
        text = text.replacen(&current, &grown, 1);
        size += SMV_HEADER_BYTES;
    }
    let mut out = text.into_bytes();
    out.resize(size, b' ');
    Ok(out)
}

/// The 512-byte header block (text, form feed, space padding).
pub fn header_block(h: &SmvHeader) -> Result<Vec<u8>> {
    pad_header(header_text(h))
}

/// A complete SMV file: the 512-byte header (text, `}`, form feed, space padding) followed by
/// the pixels as little-endian u16, row-major.
pub fn write_smv(h: &SmvHeader, pixels: &[u16]) -> Result<Vec<u8>> {
    let n = h.fpixels.checked_mul(h.spixels);
    if n != Some(pixels.len()) {
        return Err(Error::output(format!(
            "SMV image: {} pixel values given for a {}x{} detector",
            pixels.len(),
            h.fpixels,
            h.spixels
        )));
    }
    let mut out = header_block(h)?;
    out.reserve(2 * pixels.len());
    for p in pixels {
        out.extend_from_slice(&p.to_le_bytes());
    }
    Ok(out)
}

/// An SMV file as read for `-img` / `-mask`.
#[derive(Clone, Debug, PartialEq)]
pub struct SmvFile {
    /// The first `header_bytes` bytes, up to the first NUL (as upstream's string functions see it).
    pub header_text: String,
    pub header_bytes: usize,
    /// `SIZE1*SIZE2` pixels (u16, little-endian, no byte swapping, like upstream) from byte
    /// `header_bytes` on; when the header gives no size, every whole u16 after the header.
    pub data: Vec<u16>,
}

fn header_str(bytes: &[u8], len: usize) -> String {
    let raw = &bytes[..len.min(bytes.len())];
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// A positive integral size from a header value (C `(int)` truncation), if any.
fn header_size(v: Option<f64>) -> Option<usize> {
    v.filter(|x| x.is_finite() && *x >= 1.0 && *x < 1e9)
        .map(|x| x.trunc() as usize)
}

/// The header of an SMV file: its text (up to the first NUL, as upstream's string functions
/// see it) and its length in bytes (`HEADER_BYTES`).
#[derive(Clone, Debug, PartialEq)]
pub struct SmvHead {
    pub text: String,
    pub header_bytes: usize,
}

impl SmvHead {
    /// `SIZE1` x `SIZE2` (or `DETECTOR_DIMENSIONS` squared when `SIZE1` is missing).
    pub fn dimensions(&self) -> Option<(usize, usize)> {
        let w = header_size(value_of(&self.text, "SIZE1"));
        match w {
            Some(w) => Some((w, header_size(value_of(&self.text, "SIZE2"))?)),
            None => header_size(value_of(&self.text, "DETECTOR_DIMENSIONS")).map(|d| (d, d)),
        }
    }
}

/// Reads an SMV header. The file must start with `{\nHEADER_BYT`; `HEADER_BYTES` gives the
/// header length, and the file must hold at least that many bytes.
pub fn read_head(name: &str, bytes: &[u8]) -> Result<SmvHead> {
    if !bytes.starts_with(b"{\nHEADER_BYT") {
        return Err(Error::input(format!(
            "{name}: not an SMV image (the file must start with \"{{\" and a line \"HEADER_BYTES=...\")"
        )).at_file(name));
    }
    let first = header_str(bytes, SMV_HEADER_BYTES);
    let header_bytes = header_size(value_of(&first, "HEADER_BYTES"))
        .filter(|&n| n >= 12)
        .ok_or_else(|| {
            Error::input(format!("{name}: invalid HEADER_BYTES in the SMV header")).at_file(name)
        })?;
    if header_bytes > bytes.len() {
        return Err(Error::input(format!(
            "{name}: truncated SMV image: the header declares {header_bytes} header bytes but the file has {} bytes",
            bytes.len()
        )).at_file(name));
    }
    let text = if header_bytes == SMV_HEADER_BYTES {
        first
    } else {
        header_str(bytes, header_bytes)
    };
    Ok(SmvHead { text, header_bytes })
}

/// Reads an SMV file. It must start with `{\nHEADER_BYT`; `HEADER_BYTES` gives the header length.
pub fn read_smv(name: &str, bytes: &[u8]) -> Result<SmvFile> {
    let SmvHead {
        text: header_text,
        header_bytes,
    } = read_head(name, bytes)?;

    let mut width = header_size(value_of(&header_text, "SIZE1"));
    let mut height = header_size(value_of(&header_text, "SIZE2"));
    if width.is_none() {
        let d = header_size(value_of(&header_text, "DETECTOR_DIMENSIONS"));
        width = d;
        height = d;
    }
    let body = &bytes[header_bytes..];
    let count = match (width, height) {
        (Some(w), Some(h)) => {
            let n = w.checked_mul(h).filter(|n| n.checked_mul(2).is_some());
            match n {
                Some(n) if 2 * n <= body.len() => n,
                _ => {
                    return Err(Error::input(format!(
                        "{name}: truncated SMV image: {w}x{h} pixels need {} bytes after the header, found {}",
                        2.0 * w as f64 * h as f64,
                        body.len()
                    )).at_file(name))
                }
            }
        }
        _ => body.len() / 2,
    };
    let data = body[..2 * count]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Ok(SmvFile {
        header_text,
        header_bytes,
        data,
    })
}

/// Upstream's `ValueOf`: the LAST occurrence of `key` anywhere in the header (non-overlapping
/// search), then the next `=` after it, then `atof` of the text after the `=`.
/// Missing key: `None` (upstream: NaN). Key with no later `=`: `Some(0.0)`.
pub fn value_of(header: &str, key: &str) -> Option<f64> {
    find_value(header, key).map(|(_, text)| text.map_or(0.0, atof))
}

/// Where [`value_of`] looks: the byte offset of the key's last occurrence and the text after the
/// next `=` (`None` when no `=` follows). For callers that check the value and name its line.
pub fn find_value<'a>(header: &'a str, key: &str) -> Option<(usize, Option<&'a str>)> {
    if key.is_empty() {
        return None;
    }
    let mut pos = None;
    let mut from = 0;
    while let Some(i) = header[from..].find(key) {
        from += i + key.len();
        pos = Some(from);
    }
    let pos = pos?;
    let after = &header[pos..];
    Some((pos - key.len(), after.find('=').map(|i| &after[i + 1..])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const GOLDEN: &[u8] = include_bytes!("../../../tests/fixtures/smv/cubic_basic_mosflm_int.img");

    fn cubic_header() -> SmvHeader {
        SmvHeader {
            fpixels: 128,
            spixels: 128,
            pixel_mm: 0.1,
            distance_mm: 100.0,
            wavelength_a: 1.0,
            beam_center_x_mm: 6.45,
            beam_center_y_mm: 6.45,
            adxv_center_x: 6.5,
            adxv_center_y: 6.3,
            mosflm_center_x: 6.45,
            mosflm_center_y: 6.45,
            denzo_x_beam: 6.5,
            denzo_y_beam: 6.5,
            dials_origin: [-6.5, 6.5, -100.0],
            xds_orgx: 65.5,
            xds_orgy: 65.5,
            close_distance_mm: 100.0,
            phi_deg: 0.0,
            osc_start_deg: 0.0,
            osc_range_deg: 0.0,
            twotheta_deg: 0.0,
        }
    }

    #[test]
    fn byte_identical_to_upstream_file() {
        let golden = read_smv("int.img", GOLDEN).unwrap();
        assert_eq!(golden.data.len(), 128 * 128);
        let out = write_smv(&cubic_header(), &golden.data).unwrap();
        assert_eq!(out.len(), GOLDEN.len());
        assert_eq!(&out[..512], &GOLDEN[..512], "header differs");
        assert_eq!(out, GOLDEN);
    }

    #[test]
    fn header_layout() {
        let mut h = cubic_header();
        h.adxv_center_y = -2.5000312;
        h.denzo_x_beam = -0.0;
        h.pixel_mm = 0.000012345;
        h.twotheta_deg = 1234567.0;
        let text = header_text(&h);
        assert!(text.contains("\nADXV_CENTER_Y=-2.50003;\n"));
        assert!(text.contains("\nDENZO_X_BEAM=-0;\n"));
        assert!(text.contains("\nPIXEL_SIZE=1.2345e-05;\n"));
        assert!(text.contains("\nTWOTHETA=1.23457e+06;\n"));
        assert!(text.contains("\nDIALS_ORIGIN=-6.5,6.5,-100\nXDS_ORGX=65.5;\n"));
        assert!(text.ends_with("DETECTOR_SN=000;\nBEAMLINE=fake;\n}\x0c"));
        let out = write_smv(&h, &[7; 128 * 128]).unwrap();
        assert_eq!(out.len(), 512 + 2 * 128 * 128);
        assert!(out[text.len()..512].iter().all(|&b| b == b' '));
        assert_eq!(&out[512..516], &[7, 0, 7, 0]);
    }

    #[test]
    fn write_errors() {
        let e = write_smv(&cubic_header(), &[0; 10]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Output);
        let mut h = cubic_header();
        h.fpixels = 1;
        h.spixels = 1;
        // Values that make the text longer than 512 bytes.
        for v in [
            &mut h.pixel_mm,
            &mut h.distance_mm,
            &mut h.wavelength_a,
            &mut h.beam_center_x_mm,
            &mut h.beam_center_y_mm,
            &mut h.adxv_center_x,
            &mut h.adxv_center_y,
            &mut h.mosflm_center_x,
            &mut h.mosflm_center_y,
            &mut h.denzo_x_beam,
            &mut h.denzo_y_beam,
            &mut h.xds_orgx,
            &mut h.xds_orgy,
            &mut h.close_distance_mm,
            &mut h.phi_deg,
            &mut h.osc_start_deg,
            &mut h.osc_range_deg,
            &mut h.twotheta_deg,
        ] {
            *v = -1.23456e-100;
        }
        h.dials_origin = [-1.23456e-100; 3];
        // the header grows to 1024 bytes and says so; it reads back with its values
        let bytes = write_smv(&h, &[7]).unwrap();
        assert_eq!(bytes.len(), 1024 + 2);
        let text = String::from_utf8_lossy(&bytes[..1024]).into_owned();
        assert!(text.starts_with("{\nHEADER_BYTES=1024;\n"), "{text}");
        let back = read_smv("big.img", &bytes).unwrap();
        assert_eq!(
            (back.header_bytes, back.data.as_slice()),
            (1024, &[7u16][..])
        );
        assert_eq!(value_of(&back.header_text, "TWOTHETA"), Some(-1.23456e-100));
        // text that declares no size cannot grow
        let e = pad_header("x".repeat(600)).unwrap_err();
        assert!(
            e.message.contains("more than the 512 bytes"),
            "{}",
            e.message
        );
    }

    #[test]
    fn value_of_semantics() {
        let golden = read_smv("int.img", GOLDEN).unwrap();
        let hd = &golden.header_text;
        assert_eq!(golden.header_bytes, 512);
        assert_eq!(value_of(hd, "HEADER_BYTES"), Some(512.0));
        assert_eq!(value_of(hd, "SIZE1"), Some(128.0));
        assert_eq!(value_of(hd, "PIXEL_SIZE"), Some(0.1));
        assert_eq!(value_of(hd, "WAVELENGTH"), Some(1.0));
        assert_eq!(value_of(hd, "BEAM_CENTER_Y"), Some(6.45));
        assert_eq!(value_of(hd, "ORGX"), Some(65.5));
        assert_eq!(value_of(hd, "DIALS_ORIGIN"), Some(-6.5));
        assert_eq!(value_of(hd, "PHI"), Some(0.0));
        // The last "DISTANCE" is inside CLOSE_DISTANCE.
        let t = "{\nDISTANCE=100;\nCLOSE_DISTANCE=95.5;\n}";
        assert_eq!(value_of(t, "DISTANCE"), Some(95.5));
        assert_eq!(value_of(t, "NOPE"), None);
        assert_eq!(value_of("A=1;\nKEY", "KEY"), Some(0.0));
        assert_eq!(value_of("KEY = 2.5e1 ;", "KEY"), Some(25.0));
        assert_eq!(value_of("KEY=abc;", "KEY"), Some(0.0));
        // Non-overlapping search: "AAA" holds one "AA", the value comes after it.
        assert_eq!(value_of("AAA=3;", "AA"), Some(3.0));
        assert_eq!(value_of("X=1;", ""), None);
    }

    #[test]
    fn reader_variants_and_errors() {
        // Bigger header, DETECTOR_DIMENSIONS fallback.
        let mut f = b"{\nHEADER_BYTES=1024;\nDETECTOR_DIMENSIONS=2;\n}".to_vec();
        f.resize(1024, b' ');
        f.extend_from_slice(&[1, 0, 2, 0, 3, 0, 0, 1, 9]);
        let r = read_smv("m.img", &f).unwrap();
        assert_eq!(r.header_bytes, 1024);
        assert_eq!(r.data, vec![1, 2, 3, 256]);
        assert!(r.header_text.contains("DETECTOR_DIMENSIONS=2"));
        // No size at all: every whole u16 after the header.
        let mut g = b"{\nHEADER_BYTES=20;\n}".to_vec();
        g.resize(20, b' ');
        g.extend_from_slice(&[5, 0, 6, 0, 7]);
        assert_eq!(read_smv("g.img", &g).unwrap().data, vec![5, 6]);
        // Header text stops at a NUL.
        let mut n = b"{\nHEADER_BYTES=20;\n\0SIZE1=9".to_vec();
        n.resize(20, b' ');
        let r = read_smv("n.img", &n).unwrap();
        assert_eq!(r.header_text, "{\nHEADER_BYTES=20;\n");

        let e = read_smv("x.img", b"P5\n3 2\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Input);
        assert!(
            e.message.starts_with("x.img: not an SMV image"),
            "{}",
            e.message
        );
        let e = read_smv("short.img", &GOLDEN[..1000]).unwrap_err();
        assert!(
            e.message.starts_with("short.img: truncated SMV image"),
            "{}",
            e.message
        );
        let e = read_smv("h.img", b"{\nHEADER_BYTES=4096;\n}").unwrap_err();
        assert!(
            e.message.starts_with("h.img: truncated SMV image"),
            "{}",
            e.message
        );
        let e = read_smv("z.img", b"{\nHEADER_BYTES=zero;\n}").unwrap_err();
        assert!(
            e.message.starts_with("z.img: invalid HEADER_BYTES"),
            "{}",
            e.message
        );
    }
}
