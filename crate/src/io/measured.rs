//! Measured images in: SMV (ADSC-style, either byte order), miniCBF (byte offset) and NeXus/HDF5
//! (EIGER master + data files, `io::h5image`), read into their pixels as stored and the geometry
//! their header says, for the page's overlay of a measured image on the simulation
//! (`wasm::measured`). `MeasuredGeometry::words` turns the geometry into the simulation's flags
//! (MOSFLM convention, as the page's form uses), and its notes say what the file did not say.

use crate::error::{Error, Result};
use crate::io::{cbf_read, h5image, smv};
use serde::Serialize;

/// The pixels as the file stores them (fast index first, rows of `width`).
#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
}

impl Pixels {
    pub fn len(&self) -> usize {
        match self {
            Pixels::U8(v) => v.len(),
            Pixels::U16(v) => v.len(),
            Pixels::U32(v) => v.len(),
            Pixels::I16(v) => v.len(),
            Pixels::I32(v) => v.len(),
            Pixels::F32(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Little-endian element bytes of the given type.
    pub(crate) fn from_le(t: &hdf5_pure::DType, b: &[u8]) -> Pixels {
        use hdf5_pure::DType;
        fn conv<T, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
            b.chunks_exact(N)
                .map(|c| f(c.try_into().unwrap()))
                .collect()
        }
        match t {
            DType::U8 => Pixels::U8(b.to_vec()),
            DType::U16 => Pixels::U16(conv(b, u16::from_le_bytes)),
            DType::I16 => Pixels::I16(conv(b, i16::from_le_bytes)),
            DType::U32 => Pixels::U32(conv(b, u32::from_le_bytes)),
            DType::I32 => Pixels::I32(conv(b, i32::from_le_bytes)),
            _ => Pixels::F32(conv(b, f32::from_le_bytes)),
        }
    }

    /// The type's name as NumPy spells it.
    pub fn dtype(&self) -> &'static str {
        match self {
            Pixels::U8(_) => "uint8",
            Pixels::U16(_) => "uint16",
            Pixels::U32(_) => "uint32",
            Pixels::I16(_) => "int16",
            Pixels::I32(_) => "int32",
            Pixels::F32(_) => "float32",
        }
    }

    /// Each pixel's value, or `None` where the file flags it: the all-ones value of an unsigned
    /// type of 16 or 32 bits (EIGER's and PILATUS' flag of a gap or bad pixel), a negative
    /// integer, a float that is not finite.
    fn each(&self, mut f: impl FnMut(Option<f64>)) {
        match self {
            Pixels::U8(v) => v.iter().for_each(|&x| f(Some(x as f64))),
            Pixels::U16(v) => v
                .iter()
                .for_each(|&x| f((x != u16::MAX).then_some(x as f64))),
            Pixels::U32(v) => v
                .iter()
                .for_each(|&x| f((x != u32::MAX).then_some(x as f64))),
            Pixels::I16(v) => v.iter().for_each(|&x| f((x >= 0).then_some(x as f64))),
            Pixels::I32(v) => v.iter().for_each(|&x| f((x >= 0).then_some(x as f64))),
            Pixels::F32(v) => v.iter().for_each(|&x| f(x.is_finite().then_some(x as f64))),
        }
    }

    /// The values as f32 for display, with the flagged pixels (see [`Pixels::mask`]) as −1:
    /// the page's "untrusted" value. Returns the image and the count of such pixels.
    pub fn to_display(&self) -> (Vec<f32>, usize) {
        let mut bad = 0usize;
        let mut out = Vec::with_capacity(self.len());
        self.each(|v| {
            out.push(match v {
                Some(v) => v as f32,
                None => {
                    bad += 1;
                    -1.0
                }
            })
        });
        (out, bad)
    }

    /// The pixels a fit or a spot search may use (`refine::FitOptions::mask`,
    /// `refine::SpotOptions::mask`: fast-major, true = use): false where the file flags the
    /// pixel (the all-ones value of an unsigned type of 16 or 32 bits, EIGER's and PILATUS'
    /// flag of a gap or bad pixel; a negative integer; a float that is not finite). `None`
    /// when it flags none.
    pub fn mask(&self) -> Option<Vec<bool>> {
        let mut m = Vec::with_capacity(self.len());
        self.each(|v| m.push(v.is_some()));
        m.contains(&false).then_some(m)
    }

    /// The image as a fit's target (`refine::fit`: counts, fast-major; a flagged pixel 0, never
    /// read) and its mask ([`Pixels::mask`]).
    pub fn to_target(&self) -> (Vec<f64>, Option<Vec<bool>>) {
        let mut t = Vec::with_capacity(self.len());
        self.each(|v| t.push(v.unwrap_or(0.0)));
        (t, self.mask())
    }

    /// Little-endian bytes of the values as stored (tests compare them with NumPy's).
    pub fn le_bytes(&self) -> Vec<u8> {
        match self {
            Pixels::U8(v) => v.clone(),
            Pixels::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Pixels::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Pixels::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Pixels::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Pixels::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// What a file says of its experiment. Beam centre in pixels from the outer corner of the first
/// pixel (fast, slow), as miniCBF `Beam_xy` and NXmx `beam_center_x/y` give it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MeasuredGeometry {
    pub pixel_mm: Option<f64>,
    pub distance_mm: Option<f64>,
    pub beam_px: Option<(f64, f64)>,
    pub wavelength_a: Option<f64>,
    pub phi_deg: Option<f64>,
    pub osc_deg: Option<f64>,
    pub exposure_s: Option<f64>,
    pub saturation: Option<f64>,
    pub sensor_material: Option<String>,
    pub sensor_thickness_mm: Option<f64>,
    /// Remarks on what was read (several data files, non-square pixels, ...).
    pub notes: Vec<String>,
}

/// A number as the form shows it: shortest text that reads back to the same f64.
fn num(v: f64) -> String {
    format!("{v}")
}

/// What each format calls the values [`MeasuredGeometry::checked`] checks: pixel, distance,
/// wavelength, start angle, oscillation, beam centre.
pub(crate) type GeometryKeys = [&'static str; 6];

impl MeasuredGeometry {
    /// The geometry when every value it states is one the simulation's flag for it accepts
    /// (pixel, distance and wavelength positive and finite, angles within the flags' range, beam
    /// centre finite); else an error naming the file and the key (`keys`, as the file names it).
    pub(crate) fn checked(self, file: &str, keys: GeometryKeys) -> Result<Self> {
        use crate::check::{Check, ANGLE};
        let [pixel, distance, wavelength, phi, osc, beam] = keys;
        let each = [
            (self.pixel_mm, pixel, " mm", Check::Positive(1e3)),
            (self.distance_mm, distance, " mm", Check::Positive(1e6)),
            (self.wavelength_a, wavelength, " Å", Check::Positive(1e10)),
            (self.phi_deg, phi, "°", Check::Within(ANGLE)),
            (self.osc_deg, osc, "°", Check::Within(ANGLE)),
            (
                self.beam_px.map(|b| b.0),
                beam,
                " pixels",
                Check::Within(1e9),
            ),
            (
                self.beam_px.map(|b| b.1),
                beam,
                " pixels",
                Check::Within(1e9),
            ),
        ];
        for (v, key, unit, check) in each {
            if let Some(v) = v {
                crate::io::checked_value(file, key, v, unit, check)?;
            }
        }
        if let Some(why) = self.pixel_mm.and_then(crate::io::pixel_out_of_range) {
            return Err(Error::input(format!("{file}: {pixel}: {why}"))
                .at_file(file)
                .at_key(pixel));
        }
        Ok(self)
    }

    /// The simulation's flags and values for what the file says (`-detpixels_f/_s`, `-pixel`,
    /// `-distance`, `-Xbeam/-Ybeam` in the MOSFLM convention: Xbeam along slow, Ybeam along
    /// fast, each half a pixel less than the beam's distance from the first pixel's corner,
    /// `-lambda`, `-phi`, `-osc`), and the list of what it does not say.
    pub fn words(&self, width: usize, height: usize) -> (Vec<(String, String)>, Vec<String>) {
        let mut w = vec![
            ("-detpixels_f".to_string(), width.to_string()),
            ("-detpixels_s".to_string(), height.to_string()),
        ];
        let mut missing = Vec::new();
        match (self.beam_px, self.pixel_mm) {
            (Some((bf, bs)), Some(p)) => {
                w.push(("-Xbeam".into(), num((bs - 0.5) * p)));
                w.push(("-Ybeam".into(), num((bf - 0.5) * p)));
            }
            _ => missing.push("beam centre".to_string()),
        }
        let mut put = |flag: &str, v: Option<f64>, what: &str| match v {
            Some(v) => w.push((flag.to_string(), num(v))),
            None => missing.push(what.to_string()),
        };
        put("-pixel", self.pixel_mm, "pixel size");
        put("-distance", self.distance_mm, "detector distance");
        put("-lambda", self.wavelength_a, "wavelength");
        put("-phi", self.phi_deg, "start angle");
        put("-osc", self.osc_deg, "oscillation width");
        (w, missing)
    }
}

/// A measured image: frame 0 of the file, its format, size and geometry.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredImage {
    pub format: &'static str,
    pub width: usize,
    pub height: usize,
    /// Frames the file holds (the first is read).
    pub frames: usize,
    pub pixels: Pixels,
    pub geometry: MeasuredGeometry,
}

fn smv_image(name: &str, bytes: &[u8]) -> Result<MeasuredImage> {
    let head = smv::read_head(name, bytes)?;
    let t = &head.text;
    let bad = |why: String| Error::input(format!("{name}: {why}")).at_file(name);
    let kind = smv::find_value(t, "TYPE")
        .and_then(|(_, v)| v)
        .map(|v| v.split(';').next().unwrap_or("").trim().to_string())
        .unwrap_or_else(|| "unsigned_short".into());
    if kind != "unsigned_short" {
        return Err(bad(format!(
            "SMV TYPE={kind} is not read (unsigned_short is)"
        )));
    }
    let big = smv::find_value(t, "BYTE_ORDER")
        .and_then(|(_, v)| v)
        .is_some_and(|v| v.trim_start().starts_with("big_endian"));
    let (w, h) = head
        .dimensions()
        .ok_or_else(|| bad("the SMV header gives no SIZE1/SIZE2".into()))?;
    let n = w.saturating_mul(h);
    let body = &bytes[head.header_bytes..];
    if n > body.len() / 2 {
        return Err(bad(format!(
            "truncated SMV image: {w}x{h} pixels need {} bytes after the header, found {}",
            2.0 * n as f64,
            body.len()
        )));
    }
    let data: Vec<u16> = body[..2 * n]
        .chunks_exact(2)
        .map(|c| {
            let b = [c[0], c[1]];
            if big {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            }
        })
        .collect();
    let v = |k: &str| smv::value_of(t, k).filter(|x| x.is_finite());
    let pixel = v("PIXEL_SIZE").filter(|p| *p > 0.0);
    let mut g = MeasuredGeometry {
        pixel_mm: pixel,
        distance_mm: v("DISTANCE"),
        wavelength_a: v("WAVELENGTH"),
        phi_deg: v("PHI").or_else(|| v("OSC_START")),
        osc_deg: v("OSC_RANGE"),
        exposure_s: v("TIME"),
        saturation: v("SATURATED_VALUE"),
        ..Default::default()
    };
    // ADSC/nanoBragg BEAM_CENTER_X/Y are the MOSFLM Xbeam/Ybeam (mm): back to pixels from the
    // corner so that `words` gives them back unchanged
    if let (Some(x), Some(y), Some(p)) = (v("BEAM_CENTER_X"), v("BEAM_CENTER_Y"), pixel) {
        g.beam_px = Some((y / p + 0.5, x / p + 0.5));
    }
    let g = g.checked(
        name,
        [
            "PIXEL_SIZE",
            "DISTANCE",
            "WAVELENGTH",
            "PHI",
            "OSC_RANGE",
            "BEAM_CENTER_X/Y",
        ],
    )?;
    Ok(MeasuredImage {
        format: "SMV",
        width: w,
        height: h,
        frames: 1,
        pixels: Pixels::U16(data),
        geometry: g,
    })
}

/// `# Key value...` line of a PILATUS header: the text after the key.
fn pilatus<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    header.lines().find_map(|l| {
        let l = l.trim_start().strip_prefix('#')?.trim_start();
        l.strip_prefix(key).map(str::trim)
    })
}

/// The leading number of `s` (after `(` or `,`), and the rest.
fn lead_num(s: &str) -> Option<(f64, &str)> {
    let s = s.trim_start_matches(|c: char| c == '(' || c == ',' || c.is_whitespace());
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(s.len());
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// A value with its unit word (`0.2 m`, `172e-6 m`), in the unit `k` maps it to.
fn with_unit(s: &str, k: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let (v, rest) = lead_num(s)?;
    let unit = rest.split_whitespace().next().unwrap_or("");
    Some(v * k(unit)?)
}

fn cbf_image(name: &str, bytes: &[u8]) -> Result<MeasuredImage> {
    let c = cbf_read::read_minicbf(name, bytes).map_err(|e| e.at_file(name))?;
    let h = &c.header;
    let mm = |u: &str| match u {
        "m" => Some(1000.0),
        "mm" => Some(1.0),
        _ => None,
    };
    let mut g = MeasuredGeometry {
        pixel_mm: pilatus(h, "Pixel_size").and_then(|s| with_unit(s, &mm)),
        distance_mm: pilatus(h, "Detector_distance").and_then(|s| with_unit(s, &mm)),
        wavelength_a: pilatus(h, "Wavelength").and_then(|s| lead_num(s).map(|x| x.0)),
        phi_deg: pilatus(h, "Start_angle").and_then(|s| lead_num(s).map(|x| x.0)),
        osc_deg: pilatus(h, "Angle_increment").and_then(|s| lead_num(s).map(|x| x.0)),
        exposure_s: pilatus(h, "Exposure_time").and_then(|s| lead_num(s).map(|x| x.0)),
        saturation: pilatus(h, "Count_cutoff").and_then(|s| lead_num(s).map(|x| x.0)),
        ..Default::default()
    };
    if let Some(s) = pilatus(h, "Beam_xy") {
        if let Some((x, rest)) = lead_num(s) {
            g.beam_px = lead_num(rest).map(|(y, _)| (x, y));
        }
    }
    if let Some(s) = h.lines().find(|l| l.contains("sensor, thickness")) {
        let s = s.trim_start_matches(['#', ' ']);
        g.sensor_material = s.split_whitespace().next().map(str::to_string);
        g.sensor_thickness_mm = s.split("thickness").nth(1).and_then(|t| with_unit(t, &mm));
    }
    let g = g.checked(
        name,
        [
            "Pixel_size",
            "Detector_distance",
            "Wavelength",
            "Start_angle",
            "Angle_increment",
            "Beam_xy",
        ],
    )?;
    Ok(MeasuredImage {
        format: "miniCBF",
        width: c.width,
        height: c.height,
        frames: 1,
        pixels: Pixels::I32(c.pixels),
        geometry: g,
    })
}

/// Reads a measured image: the format is told by content (SMV `{\nHEADER_BYTES`, the CBF
/// binary marker, the HDF5 signature). `others` are files given with it (an EIGER master's
/// data files). Errors name the file and what was wrong.
pub fn read_measured(name: &str, bytes: &[u8], others: &[(&str, &[u8])]) -> Result<MeasuredImage> {
    if bytes.starts_with(b"{\nHEADER_BYT") {
        smv_image(name, bytes)
    } else if h5image::is_hdf5(bytes) {
        let (frames, width, height, pixels, geometry) = h5image::read_nexus(name, bytes, others)?;
        Ok(MeasuredImage {
            format: "NeXus/HDF5",
            width,
            height,
            frames,
            pixels,
            geometry,
        })
    } else if bytes.starts_with(b"###CBF") || bytes.windows(4).any(|w| w == b"\x0c\x1a\x04\xd5") {
        cbf_image(name, bytes)
    } else {
        Err(Error::input(format!(
            "{name}: not a measured image the page reads (SMV, miniCBF with byte-offset compression, NeXus/HDF5)"
        ))
        .at_file(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_give_back_an_smv_headers_beam_centre() {
        let g = MeasuredGeometry {
            pixel_mm: Some(0.1),
            beam_px: Some((3.2 / 0.1 + 0.5, 6.4 / 0.1 + 0.5)),
            ..Default::default()
        };
        let (w, missing) = g.words(128, 64);
        let get = |f: &str| {
            w.iter()
                .find(|(k, _)| k == f)
                .unwrap()
                .1
                .parse::<f64>()
                .unwrap()
        };
        assert!((get("-Xbeam") - 6.4).abs() < 1e-12 && (get("-Ybeam") - 3.2).abs() < 1e-12);
        assert_eq!(
            missing,
            [
                "detector distance",
                "wavelength",
                "start angle",
                "oscillation width"
            ]
        );
    }

    #[test]
    fn unknown_content_names_the_file() {
        let e = read_measured("x.bin", b"hello", &[]).unwrap_err();
        assert!(
            e.message.starts_with("x.bin: not a measured image"),
            "{}",
            e.message
        );
    }
}
