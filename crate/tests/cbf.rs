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
}
