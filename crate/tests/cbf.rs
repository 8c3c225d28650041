//! miniCBF files (`-cbffile`) decoded by an independent reader written here (MIME header,
//! byte-offset decompression, MD5) hold exactly the pixels of the SMV image of the same run, with
//! the header lines dxtbx reads. `scripts/check_cbf.py` does the same with fabio.

mod common;
use common::{repo_root, scratch};
use std::path::Path;

/// A decoded miniCBF: the `# key value` lines, the MIME fields and the pixels.
struct Cbf {
    text: String,
    width: usize,
    height: usize,
    pixels: Vec<i64>,
}

fn mime(text: &str, key: &str) -> String {
    let at = text
        .find(&format!("\r\n{key}: "))
        .unwrap_or_else(|| panic!("no {key} in the MIME header"));
    let rest = &text[at + key.len() + 4..];
    rest[..rest.find("\r\n").unwrap()].to_string()
}

/// Byte-offset decompression as the CBF specification defines it.
fn byte_offset_decode(data: &[u8], n: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(n);
    let (mut i, mut v) = (0usize, 0i64);
    while out.len() < n {
        let b = data[i] as i8;
        i += 1;
        if b != -128 {
            v += b as i64;
        } else {
            let s = i16::from_le_bytes([data[i], data[i + 1]]);
            i += 2;
            if s != i16::MIN {
                v += s as i64;
            } else {
                let w = i32::from_le_bytes(data[i..i + 4].try_into().unwrap());
                i += 4;
                if w != i32::MIN {
                    v += w as i64;
                } else {
                    v += i64::from_le_bytes(data[i..i + 8].try_into().unwrap());
                    i += 8;
                }
            }
        }
        out.push(v);
    }
    assert_eq!(
        i,
        data.len(),
        "X-Binary-Size does not match the compressed data"
    );
    out
}

fn read_cbf(path: &Path) -> Cbf {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(b"###CBF: VERSION"), "not a CBF file");
    let marker = bytes
        .windows(4)
        .position(|w| w == [0x0c, 0x1a, 0x04, 0xd5])
        .expect("no binary section marker");
    let text = String::from_utf8(bytes[..marker].to_vec()).unwrap();
    let size: usize = mime(&text, "X-Binary-Size").parse().unwrap();
    let width: usize = mime(&text, "X-Binary-Size-Fastest-Dimension")
        .parse()
        .unwrap();
    let height: usize = mime(&text, "X-Binary-Size-Second-Dimension")
        .parse()
        .unwrap();
    let n: usize = mime(&text, "X-Binary-Number-of-Elements").parse().unwrap();
    assert_eq!(n, width * height);
    assert_eq!(
        mime(&text, "X-Binary-Element-Type"),
        "\"signed 32-bit integer\""
    );
    assert!(text.contains("conversions=\"x-CBF_BYTE_OFFSET\""));
    let data = &bytes[marker + 4..marker + 4 + size];
    // Content-MD5: base64 of the MD5 of the compressed data
    use base64::Engine;
    use md5::Digest;
    let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(data));
    assert_eq!(mime(&text, "Content-MD5"), md5);
    let padding: usize = mime(&text, "X-Binary-Size-Padding").parse().unwrap();
    assert!(bytes[marker + 4 + size..marker + 4 + size + padding]
        .iter()
        .all(|&b| b == 0));
    assert!(bytes.ends_with(b"--CIF-BINARY-FORMAT-SECTION----\r\n;\r\n\r\n"));
    Cbf {
        text,
        width,
        height,
        pixels: byte_offset_decode(data, n),
    }
}

/// The value after `# key ` in the header.
fn header<'a>(c: &'a Cbf, key: &str) -> &'a str {
    let at = c
        .text
        .find(&format!("\r\n# {key}"))
        .unwrap_or_else(|| panic!("no '# {key}' line"));
    let rest = &c.text[at + key.len() + 4..];
    rest[..rest.find("\r\n").unwrap()].trim()
}

fn smv(path: &Path) -> (String, Vec<i64>) {
    let b = std::fs::read(path).unwrap();
    let head = String::from_utf8_lossy(&b[..512]).into_owned();
    let wide = head.contains("TYPE=long_integer;");
    let px = if wide {
        b[512..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i64)
            .collect()
    } else {
        b[512..]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]) as i64)
            .collect()
    };
    (head, px)
}

fn run(bin: &str, dir: &Path, args: &str) -> String {
    let words: Vec<String> = args.split_whitespace().map(String::from).collect();
    let r = common::run_program(bin, dir, &words);
    assert_eq!(r.status, 0, "{bin} {args}:\n{}", r.stderr);
    r.stdout
}

#[test]
fn noisify_cbf_holds_the_noise_image() {
    let dir = scratch("cbf-noisify");
    let input = repo_root().join("tests/fixtures/noisify/poisson_default_calibration/input.bin");
    std::fs::copy(input, dir.join("in.bin")).unwrap();
    let nz = env!("CARGO_BIN_EXE_noisify");
    run(
        nz,
        &dir,
        "-bin in.bin -detpixels 128 -pixel 0.1 -distance 120 -lambda 1.3 -Xbeam 6.0 -Ybeam 7.0 \
         -phi 5 -osc 0.5 -seed 4 -nopgm -intfile i.img -noisefile n.img -cbffile n.cbf",
    );
    let c = read_cbf(&dir.join("n.cbf"));
    let (_, px) = smv(&dir.join("n.img"));
    assert_eq!((c.width, c.height), (128, 128));
    assert_eq!(c.pixels, px, "CBF pixels differ from the noise image");
    assert!(c
        .text
        .contains("_array_data.header_convention \"GENERIC_MINI\""));
    assert_eq!(header(&c, "Pixel_size"), "100e-6 m x 100e-6 m");
    assert_eq!(header(&c, "Detector_distance"), "0.120000 m");
    assert_eq!(header(&c, "Wavelength"), "1.300000 A");
    assert_eq!(header(&c, "Beam_xy"), "(60.00, 70.00) pixels");
    assert_eq!(header(&c, "Count_cutoff"), "65535 counts");
    assert_eq!(header(&c, "Start_angle"), "5.0000 deg.");
    assert_eq!(header(&c, "Angle_increment"), "0.5000 deg.");
    assert_eq!(header(&c, "Exposure_period"), "1.0000000 s");

    // 32-bit counts, some above 65535
    run(
        nz,
        &dir,
        "-bin in.bin -detpixels 128 -scale 1000 -bits 32 -seed 4 -nopgm -intfile i32.img \
         -noisefile n32.img -cbffile n32.cbf",
    );
    let c = read_cbf(&dir.join("n32.cbf"));
    let (_, px) = smv(&dir.join("n32.img"));
    assert!(px.iter().any(|&v| v > 65535));
    assert_eq!(c.pixels, px);
    assert_eq!(header(&c, "Count_cutoff"), "2147483647 counts");
}

fn stdout_value(stdout: &str, key: &str) -> f64 {
    let at = stdout
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in stdout"));
    stdout[at + key.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn nanobragg_cbf_holds_the_int_image() {
    let dir = scratch("cbf-nanobragg");
    let stdout = run(
        env!("CARGO_BIN_EXE_nanobragg"),
        &dir,
        "-cell 70 80 90 90 90 90 -default_F 100 -N 5 -misset 10 20 30 -lambda 0.98 \
         -distance 150 -detpixels 96 -pixel 0.172 -Xbeam 7.1 -Ybeam 9.3 -phi 12 -osc 0.25 \
         -exposure 0.04 -nonoise -nopgm -floatfile f.bin -intfile i.img -cbffile i.cbf",
    );
    let c = read_cbf(&dir.join("i.cbf"));
    let (_, px) = smv(&dir.join("i.img"));
    assert_eq!((c.width, c.height), (96, 96));
    assert_eq!(c.pixels, px, "CBF pixels differ from the int image");
    assert!(px.iter().any(|&v| v > 1000), "an image with spots");
    assert_eq!(header(&c, "Pixel_size"), "172e-6 m x 172e-6 m");
    assert_eq!(header(&c, "Wavelength"), "0.980000 A");
    assert_eq!(header(&c, "Detector_distance"), "0.150000 m");
    assert_eq!(header(&c, "Start_angle"), "12.0000 deg.");
    assert_eq!(header(&c, "Angle_increment"), "0.2500 deg.");
    assert_eq!(header(&c, "Exposure_period"), "0.0400000 s");
    assert_eq!(header(&c, "Count_cutoff"), "65535 counts");
    // Beam_xy: the direct beam in pixels along fast and slow from the first pixel's corner
    let (fbeam, sbeam) = (
        stdout_value(&stdout, "Fbeam="),
        stdout_value(&stdout, "Sbeam="),
    );
    let want = format!("({:.2}, {:.2}) pixels", fbeam / 172e-6, sbeam / 172e-6);
    assert_eq!(header(&c, "Beam_xy"), want);
    // MOSFLM -Xbeam/-Ybeam are slow/fast plus half a pixel
    assert_eq!(want, "(54.57, 41.78) pixels");
    // the run's beam: unpolarised (K = 0, upstream's default: fraction ½), no flux given
    assert_eq!(header(&c, "Polarization"), "0.500");
    assert_eq!(header(&c, "Flux"), "0.000000");
    assert_eq!(header(&c, "Detector_2theta"), "0.0000 deg.");
}

#[test]
fn nanobragg_cbf_header_says_the_runs_two_theta_polarisation_and_flux() {
    let dir = scratch("cbf-header");
    let common = "-cell 70 80 90 90 90 90 -default_F 100 -N 5 -lambda 1 -distance 150 \
                  -detpixels 32 -nonoise -nopgm";
    run(
        env!("CARGO_BIN_EXE_nanobragg"),
        &dir,
        &format!("{common} -twotheta 20 -polar 0.5 -flux 1e12 -cbffile a.cbf"),
    );
    let c = read_cbf(&dir.join("a.cbf"));
    assert_eq!(header(&c, "Detector_2theta"), "20.0000 deg.");
    // dxtbx's polarisation fraction of the Kahn factor K: (1 + K)/2
    assert_eq!(header(&c, "Polarization"), "0.750");
    assert_eq!(header(&c, "Flux"), "1000000000000.000000");
    // -nopolar: the image has no polarisation factor, so no fraction is claimed
    run(
        env!("CARGO_BIN_EXE_nanobragg"),
        &dir,
        &format!("{common} -nopolar -cbffile b.cbf"),
    );
    let c = read_cbf(&dir.join("b.cbf"));
    assert!(!c.text.contains("# Polarization"), "{}", c.text);
}

fn write_f32(path: &Path, v: &[f32]) {
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, b).unwrap();
}

/// An EIGER2 X 4M gap pixel, computed here from DECTRIS' layout (1028 x 512 modules, 12 and 38
/// inactive pixels between them).
fn eiger4m_gap(f: usize, s: usize) -> bool {
    f % 1040 >= 1028 || s % 550 >= 512
}

/// The realistic chain's end (issue 18 §4): noisify adds the float images itself, takes
/// `-detector`, carries φ and the oscillation from the SMV header (or the flags) into the
/// miniCBF, states the sensor, and writes the module gaps as -1 with counts up to the detector's
/// largest count.
#[test]
fn noisify_detector_preset_added_images_and_phi() {
    let dir = scratch("cbf-noisify-preset");
    let (w, h) = (2068usize, 2162usize);
    let a: Vec<f32> = (0..w * h)
        .map(|i| {
            if eiger4m_gap(i % w, i / w) {
                0.0
            } else {
                ((i * 7919) % 13) as f32 * 0.75
            }
        })
        .collect();
    let mut b: Vec<f32> = (0..w * h)
        .map(|i| ((i * 104729) % 7) as f32 * 0.3)
        .collect();
    b[5000] = 2.0e5; // above 16 bits
    write_f32(&dir.join("a.bin"), &a);
    write_f32(&dir.join("b.bin"), &b);
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    write_f32(&dir.join("sum.bin"), &sum);
    let mut head = format!(
        "{{\nHEADER_BYTES=512;\nDIM=2;\nBYTE_ORDER=little_endian;\nTYPE=unsigned_short;\n\
         SIZE1={w};\nSIZE2={h};\nPIXEL_SIZE=0.075;\nDISTANCE=120;\nWAVELENGTH=0.9;\n\
         BEAM_CENTER_X=77.55;\nBEAM_CENTER_Y=81.075;\nPHI=7.5;\nOSC_START=7.5;\nOSC_RANGE=0.25;\n}}"
    )
    .into_bytes();
    head.resize(512, b' ');
    std::fs::write(dir.join("h.img"), head).unwrap();
    let nz = env!("CARGO_BIN_EXE_noisify");
    let common = "-detector eiger2-4m -header h.img -seed 3 -nopgm -intfile i.img";
    run(
        nz,
        &dir,
        &format!("-bin a.bin -add b.bin {common} -noisefile n.img -cbffile n.cbf"),
    );
    run(
        nz,
        &dir,
        &format!("-bin sum.bin {common} -noisefile nsum.img -cbffile nsum.cbf"),
    );
    // adding inside noisify is the f32 sum of the files
    assert_eq!(
        std::fs::read(dir.join("n.cbf")).unwrap(),
        std::fs::read(dir.join("nsum.cbf")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.join("n.img")).unwrap(),
        std::fs::read(dir.join("nsum.img")).unwrap()
    );
    let c = read_cbf(&dir.join("n.cbf"));
    let (_, px) = smv(&dir.join("n.img"));
    assert_eq!((c.width, c.height), (w, h));
    let mut gaps = 0;
    for (i, (&cbf, &img)) in c.pixels.iter().zip(&px).enumerate() {
        if eiger4m_gap(i % w, i / w) {
            gaps += 1;
            assert_eq!(cbf, -1, "gap pixel {i}");
        } else if img < 65535 {
            assert_eq!(cbf, img, "pixel {i}");
        } else {
            // the SMV image is 16-bit; the detector's counts go on
            assert!(cbf > 65535, "pixel {i}: {cbf}");
        }
    }
    assert!(c.pixels[5000] > 150_000, "{}", c.pixels[5000]);
    assert_eq!(header(&c, "N_excluded_pixels"), format!("= {gaps}"));
    assert_eq!(gaps, 2068 * 2162 - 8 * 1028 * 512);
    assert!(c.text.contains("# Detector: DECTRIS EIGER2 X 4M"));
    assert!(c
        .text
        .contains("_array_data.header_convention \"PILATUS_1.2\""));
    assert!(c
        .text
        .contains("\r\n# Silicon sensor, thickness 0.000450 m\r\n"));
    assert_eq!(header(&c, "Count_cutoff"), "2147483647 counts");
    assert_eq!(header(&c, "Start_angle"), "7.5000 deg.");
    assert_eq!(header(&c, "Angle_increment"), "0.2500 deg.");
    assert_eq!(header(&c, "Wavelength"), "0.900000 A");
    assert_eq!(header(&c, "Pixel_size"), "75e-6 m x 75e-6 m");

    // flags override the header's φ; without a preset -detector_thick states a silicon sensor
    run(
        nz,
        &dir,
        "-bin a.bin -header h.img -phi 30 -osc 0.1 -detector_thick 320 -seed 3 -nopgm \
         -intfile i.img -noisefile n2.img -cbffile n2.cbf",
    );
    let c = read_cbf(&dir.join("n2.cbf"));
    assert_eq!(header(&c, "Start_angle"), "30.0000 deg.");
    assert_eq!(header(&c, "Angle_increment"), "0.1000 deg.");
    assert!(c
        .text
        .contains("\r\n# Silicon sensor, thickness 0.000320 m\r\n"));
    assert_eq!(header(&c, "Count_cutoff"), "65535 counts");
    assert!(c.pixels.iter().all(|&v| v >= 0));
}
