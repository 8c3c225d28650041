//! miniCBF output (`-cbffile`): the single-image CBF that PILATUS and EIGER detectors write, with
//! byte-offset compression, a MIME header with `Content-MD5`, and the `# key value` header lines
//! that DIALS' dxtbx and fabio read (`Pixel_size`, `Silicon sensor, thickness`,
//! `Detector_distance`, `Beam_xy`, `Wavelength`, `Count_cutoff`, `Exposure_period`,
//! `Start_angle`, `Angle_increment`, ...). Lines end in CRLF, as PILATUS writes them.
//!
//! The header convention is `PILATUS_1.2` when the image tiles PILATUS modules (487 x 195 pixels,
//! gaps 7 and 17) or the detector is an EIGER; dxtbx's PILATUS reader derives the module mask
//! from the image size and rejects other sizes, so any other image is written as `GENERIC_MINI`,
//! dxtbx's convention for simulated pixel-array data (same header lines, no module mask).

use crate::cfmt::fmt_g_prec;
use base64::Engine;
use md5::{Digest, Md5};

/// What the header says about the experiment (SI units unless named otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct CbfInfo {
    /// Detector description for `# Detector:` (e.g. "PILATUS 6M"); a name containing "EIGER"
    /// makes dxtbx use its EIGER reader.
    pub detector: String,
    /// Pixel size, m.
    pub pixel: f64,
    /// Sensor material ("Silicon", "CdTe", "CCD") and thickness (m); `None` writes no sensor line.
    pub sensor: Option<(String, f64)>,
    pub exposure: f64,
    /// Largest trusted count (`Count_cutoff`).
    pub count_cutoff: u64,
    /// Å.
    pub wavelength: f64,
    /// Sample to detector along the beam, m.
    pub distance: f64,
    /// Direct-beam position in pixels from the corner of the first pixel (fast, slow).
    pub beam_xy: (f64, f64),
    /// Degrees.
    pub start_angle: f64,
    pub angle_increment: f64,
    /// Pixels marked -1 (module gaps), for `N_excluded_pixels`.
    pub excluded: usize,
    /// The detector's swing about the two-theta axis, degrees (`Detector_2theta`).
    pub two_theta: f64,
    /// The beam's polarisation fraction (`Polarization`: dxtbx's fraction, (1 + K)/2 of the
    /// Kahn factor K); `None` (no polarisation factor in the image, `-nopolar`, or not known)
    /// writes no line.
    pub polarization: Option<f64>,
    /// Photons per second (`Flux`; 0: not known).
    pub flux: f64,
}

/// True when `width` x `height` is a whole PILATUS module array.
pub fn pilatus_tiling(width: usize, height: usize) -> bool {
    width >= 487
        && height >= 195
        && (width + 7).is_multiple_of(494)
        && (height + 17).is_multiple_of(212)
}

/// CBF byte-offset compression: each pixel as the difference from the previous one (the first
/// from 0) in 1 byte, or the escape 0x80 and 2 bytes, or the escapes 0x80, 0x8000 and 4 bytes,
/// or the escapes 0x80, 0x8000, 0x80000000 and 8 bytes; little-endian, two's complement.
pub fn byte_offset(pixels: &[i32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pixels.len() + pixels.len() / 8 + 16);
    let mut prev: i64 = 0;
    for &p in pixels {
        let d = p as i64 - prev;
        prev = p as i64;
        if (-127..=127).contains(&d) {
            out.push(d as i8 as u8);
            continue;
        }
        out.push(0x80);
        if (-32767..=32767).contains(&d) {
            out.extend_from_slice(&(d as i16).to_le_bytes());
            continue;
        }
        out.extend_from_slice(&[0x00, 0x80]);
        if (-2147483647..=2147483647).contains(&d) {
            out.extend_from_slice(&(d as i32).to_le_bytes());
            continue;
        }
        out.extend_from_slice(&[0x00, 0x00, 0x00, 0x80]);
        out.extend_from_slice(&d.to_le_bytes());
    }
    out
}

fn header_lines(info: &CbfInfo) -> Vec<String> {
    let um = fmt_g_prec(info.pixel * 1e6, 10);
    let energy_ev = 12398.42 / info.wavelength;
    let mut h = vec![
        format!("# Detector: {}, S/N 00-0000", info.detector),
        // fixed: images of the same run are identical files
        "# 1970-01-01T00:00:00.000".to_string(),
        format!("# Pixel_size {um}e-6 m x {um}e-6 m"),
    ];
    if let Some((material, t)) = &info.sensor {
        h.push(format!("# {material} sensor, thickness {t:.6} m"));
    }
    h.extend([
        format!("# Exposure_time {:.7} s", info.exposure),
        format!("# Exposure_period {:.7} s", info.exposure),
        "# Tau = 0 s".to_string(),
        format!("# Count_cutoff {} counts", info.count_cutoff),
        format!("# Threshold_setting: {:.0} eV", energy_ev / 2.0),
        "# Gain_setting: not applicable (simulated)".to_string(),
        format!("# N_excluded_pixels = {}", info.excluded),
        "# Excluded_pixels: (nil)".to_string(),
        "# Flat_field: (nil)".to_string(),
        "# Trim_file: (nil)".to_string(),
        "# Image_path: (nil)".to_string(),
        format!("# Wavelength {:.6} A", info.wavelength),
        format!("# Detector_distance {:.6} m", info.distance),
        format!(
            "# Beam_xy ({:.2}, {:.2}) pixels",
            info.beam_xy.0, info.beam_xy.1
        ),
        format!("# Flux {:.6}", info.flux),
        "# Filter_transmission 1.0000".to_string(),
        format!("# Start_angle {:.4} deg.", info.start_angle),
        format!("# Angle_increment {:.4} deg.", info.angle_increment),
        format!("# Detector_2theta {:.4} deg.", info.two_theta),
    ]);
    if let Some(p) = info.polarization {
        h.push(format!("# Polarization {p:.3}"));
    }
    h.extend([
        "# Alpha 0.0000 deg.".to_string(),
        "# Kappa 0.0000 deg.".to_string(),
        format!("# Phi {:.4} deg.", info.start_angle),
        "# Chi 0.0000 deg.".to_string(),
        "# Oscillation_axis X, CW".to_string(),
        "# N_oscillations 1".to_string(),
    ]);
    h
}

/// Padding after the binary data, as PILATUS writes it.
const PADDING: usize = 4095;

/// A complete miniCBF file of `width` x `height` signed 32-bit pixels (fast index first).
pub fn write_minicbf(info: &CbfInfo, width: usize, height: usize, pixels: &[i32]) -> Vec<u8> {
    assert_eq!(pixels.len(), width * height, "write_minicbf: image size");
    let data = byte_offset(pixels);
    let md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&data));
    let convention =
        if pilatus_tiling(width, height) || info.detector.to_uppercase().contains("EIGER") {
            "PILATUS_1.2"
        } else {
            "GENERIC_MINI"
        };
    let mut text = vec![
        "###CBF: VERSION 1.5, CBFlib v0.7.8 - PILATUS detectors (written by nanoBragg Web)"
            .to_string(),
        String::new(),
        "data_image".to_string(),
        String::new(),
        format!("_array_data.header_convention \"{convention}\""),
        "_array_data.header_contents".to_string(),
        ";".to_string(),
    ];
    text.extend(header_lines(info));
    text.extend([
        ";".to_string(),
        String::new(),
        "_array_data.data".to_string(),
        ";".to_string(),
        "--CIF-BINARY-FORMAT-SECTION--".to_string(),
        "Content-Type: application/octet-stream;".to_string(),
        "     conversions=\"x-CBF_BYTE_OFFSET\"".to_string(),
        "Content-Transfer-Encoding: BINARY".to_string(),
        format!("X-Binary-Size: {}", data.len()),
        "X-Binary-ID: 1".to_string(),
        "X-Binary-Element-Type: \"signed 32-bit integer\"".to_string(),
        "X-Binary-Element-Byte-Order: LITTLE_ENDIAN".to_string(),
        format!("Content-MD5: {md5}"),
        format!("X-Binary-Number-of-Elements: {}", pixels.len()),
        format!("X-Binary-Size-Fastest-Dimension: {width}"),
        format!("X-Binary-Size-Second-Dimension: {height}"),
        format!("X-Binary-Size-Padding: {PADDING}"),
        String::new(),
    ]);
    let mut out = Vec::with_capacity(data.len() + PADDING + 4096);
    for line in &text {
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&[0x0c, 0x1a, 0x04, 0xd5]);
    out.extend_from_slice(&data);
    out.resize(out.len() + PADDING, 0);
    out.extend_from_slice(b"\r\n--CIF-BINARY-FORMAT-SECTION----\r\n;\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_offset_escapes() {
        let px = [
            0,
            5,
            -122,
            200,
            200 - 32767,
            70000,
            -70000,
            i32::MAX,
            i32::MIN,
        ];
        let enc = byte_offset(&px);
        let want: Vec<u8> = [
            vec![0x00, 0x05, 0x81],                         // +0, +5, -127
            vec![0x80, 0x42, 0x01],                         // +322
            vec![0x80, 0x01, 0x80],                         // -32767
            vec![0x80, 0x00, 0x80, 0xa7, 0x90, 0x01, 0x00], // +102567
            vec![0x80, 0x00, 0x80, 0x20, 0xdd, 0xfd, 0xff], // -140000
            vec![0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80], // +2147553647: 8 bytes
            vec![0x6f, 0x11, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00],
            vec![0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80], // -4294967295: 8 bytes
            vec![0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff],
        ]
        .concat();
        assert_eq!(enc, want);
    }

    /// What a 4M miniCBF costs (the CLI writes one per run; no dataset writes CBF): run with
    /// `cargo test --release -p nanobragg --lib minicbf_bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn minicbf_bench() {
        let (w, h) = (2068, 2162);
        let px: Vec<i32> = (0..w * h)
            .map(|i: usize| {
                let z = (i as u64 ^ 0x5851_f42d).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                (((z >> 32) as u32).count_ones() as i32 - 13).max(0)
            })
            .collect();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let data = byte_offset(&px);
            let t_bo = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let md5 = Md5::digest(&data);
            let t_md5 = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let info = CbfInfo {
                detector: "EIGER2 X 4M".into(),
                pixel: 75e-6,
                sensor: Some(("Silicon".into(), 450e-6)),
                exposure: 0.1,
                count_cutoff: 1048575,
                wavelength: 1.0,
                distance: 0.25,
                beam_xy: (1034.0, 1081.0),
                start_angle: 0.0,
                angle_increment: 0.1,
                excluded: 0,
                two_theta: 0.0,
                polarization: None,
                flux: 0.0,
            };
            let file = write_minicbf(&info, w, h, &px);
            println!(
                "byte offset {:.1} ms ({} bytes), md5 {:.1} ms ({:02x}), whole file {:.1} ms ({} bytes)",
                t_bo * 1e3,
                data.len(),
                t_md5 * 1e3,
                md5[0],
                t.elapsed().as_secs_f64() * 1e3,
                file.len()
            );
        }
    }

    #[test]
    fn layout_and_conventions() {
        assert!(
            pilatus_tiling(2463, 2527) && pilatus_tiling(487, 195) && pilatus_tiling(1475, 1679)
        );
        assert!(
            !pilatus_tiling(128, 128) && !pilatus_tiling(4148, 4362) && !pilatus_tiling(2463, 2526)
        );
        let info = CbfInfo {
            detector: "nanoBragg simulation".into(),
            pixel: 172e-6,
            sensor: Some(("Silicon".into(), 450e-6)),
            exposure: 0.1,
            count_cutoff: 1048575,
            wavelength: 1.0,
            distance: 0.25,
            beam_xy: (1231.5, 1263.25),
            start_angle: 10.0,
            angle_increment: 0.5,
            excluded: 0,
            two_theta: 0.0,
            polarization: None,
            flux: 0.0,
        };
        let f = write_minicbf(&info, 3, 2, &[1, 2, 3, 4, 5, 6]);
        let text = String::from_utf8_lossy(&f);
        assert!(text.starts_with("###CBF: VERSION 1.5"));
        assert!(text.contains("_array_data.header_convention \"GENERIC_MINI\"\r\n"));
        for line in [
            "# Pixel_size 172e-6 m x 172e-6 m\r\n",
            "# Silicon sensor, thickness 0.000450 m\r\n",
            "# Count_cutoff 1048575 counts\r\n",
            "# Detector_distance 0.250000 m\r\n",
            "# Beam_xy (1231.50, 1263.25) pixels\r\n",
            "# Start_angle 10.0000 deg.\r\n",
            "# Angle_increment 0.5000 deg.\r\n",
            "# Exposure_period 0.1000000 s\r\n",
            "# Wavelength 1.000000 A\r\n",
            "X-Binary-Size: 6\r\n",
            "X-Binary-Size-Fastest-Dimension: 3\r\n",
            "X-Binary-Size-Second-Dimension: 2\r\n",
            "X-Binary-Number-of-Elements: 6\r\n",
            // md5 of [1,1,1,1,1,1]
            "Content-MD5: tZC2hc7HgvFSegFdBMPGhg==\r\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        let start = f
            .windows(4)
            .position(|w| w == [0x0c, 0x1a, 0x04, 0xd5])
            .unwrap()
            + 4;
        assert_eq!(&f[start..start + 6], &[1, 1, 1, 1, 1, 1]);
        assert!(f[start + 6..start + 6 + PADDING].iter().all(|&b| b == 0));
        assert!(f.ends_with(b"--CIF-BINARY-FORMAT-SECTION----\r\n;\r\n\r\n"));
        let eiger = CbfInfo {
            detector: "EIGER2 X 4M".into(),
            ..info
        };
        let f = write_minicbf(&eiger, 1, 1, &[0]);
        assert!(String::from_utf8_lossy(&f).contains("\"PILATUS_1.2\""));
    }
}
