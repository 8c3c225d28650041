//! `noisify`'s flags (upstream's names and aliases; unlike upstream an unknown flag or a bad
//! value is an error naming the flag) and the resolution of its inputs: the SMV header to copy,
//! the image dimensions, and the float image itself (its size must match them).

use super::psf::PsfKind;
use super::{Effects, Psf, DEFAULT_FLUENCE};
use crate::error::{Error, ErrorKind, Result};
use crate::files::{FileKind, FileSource};
use crate::flagwords::FlagWords;
use crate::io::smv;

/// The settings as given (lengths in m).
#[derive(Clone, Debug)]
pub struct NoisifyOptions {
    pub floatfile: Option<String>,
    pub header: Option<String>,
    pub intfile: String,
    pub pgmfile: String,
    pub noisefile: String,
    pub cbffile: Option<String>,
    pub write_pgm: bool,
    pub noise: bool,
    /// Å, written to the header as given.
    pub lambda: f64,
    pub xbeam: Option<f64>,
    pub ybeam: Option<f64>,
    pub distance: f64,
    pub pixel: f64,
    pub xpixels: Option<usize>,
    pub ypixels: Option<usize>,
    pub psf: Option<PsfKind>,
    /// m, stored as upstream's `float`.
    pub psf_fwhm: f32,
    pub psf_radius: i32,
    pub fluence: f64,
    pub scale: f64,
    pub readout: f64,
    pub flicker: f64,
    pub calibration: f64,
    pub adc: f64,
    pub gain: f64,
    /// Stored negated (`-seed N` -> -N); `None`: seeded from the clock.
    pub seed: Option<i64>,
    pub calib_seed: i64,
    pub bits32: bool,
    /// Degrees, header only.
    pub phi: f64,
    pub osc: f64,
    pub warnings: Vec<String>,
}

impl Default for NoisifyOptions {
    fn default() -> Self {
        NoisifyOptions {
            floatfile: None,
            header: None,
            intfile: "intimage.img".into(),
            pgmfile: "image.pgm".into(),
            noisefile: "noiseimage.img".into(),
            cbffile: None,
            write_pgm: true,
            noise: true,
            lambda: 1.0,
            xbeam: None,
            ybeam: None,
            distance: 0.1,
            pixel: 1e-4,
            xpixels: None,
            ypixels: None,
            psf: None,
            psf_fwhm: 46e-6,
            psf_radius: 0,
            fluence: DEFAULT_FLUENCE,
            scale: 1.0,
            readout: 0.0,
            flicker: 0.0,
            calibration: 0.03,
            adc: 40.0,
            gain: 1.0,
            seed: None,
            calib_seed: 123456789,
            bits32: false,
            phi: 0.0,
            osc: 1.0,
            warnings: Vec::new(),
        }
    }
}

pub const USAGE: &str = "\
usage: noisify -floatfile floatimage.bin [options]
  -floatfile FILE (or -bin)  float image in photons/pixel (raw little-endian f32)
  -header FILE               copy this SMV header (SIZE1/SIZE2 give the dimensions)
  -detpixels n | -detpixels_x n -detpixels_y n   dimensions (default: from the file size)
  -scale s  -fluence ph/m^2  photons = scale * fluence * r_e^2 * value
  -gain ADU/photon  -adc ADU  -readout_noise ADU  -flicker frac  -calibration frac
  -seed n  -calib_seed n     -psf gauss|fiber -psf_fwhm um -psf_radius px  -bits 16|32
  -pixel mm -distance mm -lambda A -Xbeam mm -Ybeam mm -phi deg -osc deg  (header values)
  -intfile F -noisefile F -pgmfile F -cbffile F  -nonoise -nopgm
";

/// Parses noisify's words.
pub fn parse(words: &[String]) -> Result<NoisifyOptions> {
    let mut o = NoisifyOptions::default();
    let mut w = FlagWords::new(words);
    while let Some(arg) = w.next_flag() {
        if !arg.starts_with('-') {
            // upstream takes any word containing "floatimage.bin" as the input
            if arg.contains("floatimage.bin") {
                o.floatfile = Some(arg);
                continue;
            }
            return Err(Error::usage(format!(
                "unexpected argument '{arg}' (values must follow a flag)"
            )));
        }
        match arg.as_str() {
            "-floatfile" | "-floatimage" | "-bin" => o.floatfile = Some(w.text()?),
            "-header" => o.header = Some(w.text()?),
            "-intfile" | "-intimage" => o.intfile = w.text()?,
            "-pgmfile" | "-pgmimage" => o.pgmfile = w.text()?,
            "-noisefile" | "-noiseimage" => o.noisefile = w.text()?,
            "-cbffile" => o.cbffile = Some(w.text()?),
            "-nonoise" => o.noise = false,
            "-nopgm" => o.write_pgm = false,
            "-lambda" => o.lambda = w.positive()?,
            "-Xbeam" => o.xbeam = Some(w.f64()? / 1000.0),
            "-Ybeam" => o.ybeam = Some(w.f64()? / 1000.0),
            "-distance" => o.distance = w.positive()? / 1000.0,
            "-detsize" | "-detsize_x" | "-detsize_y" => {
                w.positive()?;
                o.warnings.push(format!(
                    "{arg} has no effect in noisify (the size is pixels x pixel size); ignored"
                ));
            }
            "-detpixels" => {
                let n = w.count()?;
                o.xpixels = Some(n);
                o.ypixels = Some(n);
            }
            "-detpixels_x" | "-detpixels_f" => o.xpixels = Some(w.count()?),
            "-detpixels_y" | "-detpixels_s" => o.ypixels = Some(w.count()?),
            "-pixel" => o.pixel = w.positive()? / 1000.0,
            "-psf" => {
                let t = w.text()?;
                o.psf = Some(if t.contains("gauss") {
                    PsfKind::Gauss
                } else if t.contains("fiber") {
                    PsfKind::Fiber
                } else {
                    return Err(w.error(format_args!("expected gauss or fiber, found '{t}'")));
                });
            }
            "-psf_radius" => {
                let r = w.non_negative()?;
                if r > i32::MAX as f64 {
                    return Err(w.error(format_args!("radius {r} is too large")));
                }
                o.psf_radius = r as i32;
            }
            "-psf_fwhm" | "-psf_size" | "-psf_width" => {
                o.psf_fwhm = (w.non_negative()? / 1e6) as f32
            }
            "-fluence" => o.fluence = w.non_negative()?,
            "-scale" => o.scale = w.f64()?,
            "-readout_noise" | "-readout" | "-readnoise" => o.readout = w.f64()?,
            "-flicker" => o.flicker = w.f64()?,
            "-calibration" => o.calibration = w.f64()?,
            "-seed" => o.seed = Some(-w.seed()?),
            "-calib_seed" => o.calib_seed = -w.seed()?,
            "-badpix_seed" | "-hotpix_seed" => {
                w.seed()?;
                o.warnings
                    .push(format!("{arg} has no effect in noisify; ignored"));
            }
            "-adc" | "-adcoffset" | "-adc_offset" => o.adc = w.f64()?,
            "-gain" => o.gain = w.f64()?,
            "-bits" => {
                o.bits32 = match w.int()? {
                    16 => false,
                    32 => true,
                    b => return Err(w.error(format_args!("expected 16 or 32, found {b}"))),
                }
            }
            "-phi" => o.phi = w.f64()?,
            "-osc" => o.osc = w.f64()?,
            _ => return Err(Error::usage(format!("unknown flag '{arg}'"))),
        }
    }
    Ok(o)
}

/// Everything resolved: dimensions, header, the input image and the effects to apply.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub opts: NoisifyOptions,
    pub width: usize,
    pub height: usize,
    pub pixel: f64,
    pub distance: f64,
    pub xbeam: f64,
    pub ybeam: f64,
    pub detsize_x: f64,
    pub detsize_y: f64,
    /// Å: the header's WAVELENGTH, else `-lambda`.
    pub wavelength: f64,
    /// The imported header's first HEADER_BYTES bytes, written verbatim.
    pub header: Option<Vec<u8>>,
    pub input: Vec<f32>,
    pub effects: Effects,
    /// Lines printed while resolving, in upstream's order.
    pub log: Vec<String>,
}

/// Dimensions from the number of values when none are given: upstream's guess (the largest
/// width <= sqrt(n) that divides n).
pub fn guess_dimensions(n: usize) -> (usize, usize) {
    let mut x = (n as f64).sqrt() as usize;
    while x > 0 && !n.is_multiple_of(x) {
        x -= 1;
    }
    if x == 0 {
        (n, 1)
    } else {
        (x, n / x)
    }
}

/// Reads the header (if any) and the float image and settles the dimensions.
/// `seed` is used when the options carry none (upstream: the clock).
pub fn prepare(o: &NoisifyOptions, files: &dyn FileSource, seed: i64) -> Result<Prepared> {
    let Some(name) = o.floatfile.clone() else {
        return Err(Error::new(
            ErrorKind::MissingInput,
            "no input image: give -floatfile FILE",
        ));
    };
    let mut log = Vec::new();
    let (mut xpixels, mut ypixels) = (o.xpixels, o.ypixels);
    let mut pixel = o.pixel;
    let mut distance = o.distance;
    let (mut hdr_xbeam, mut hdr_ybeam) = (None, None);
    let mut wavelength = o.lambda;
    let mut header = None;
    if let Some(hname) = &o.header {
        log.push(format!("taking header from {hname}"));
        log.push(format!("reading {hname}"));
        let bytes = files.read(hname, FileKind::Image)?;
        let head = smv::read_head(hname, &bytes)?;
        let (w, h) = head.dimensions().ok_or_else(|| {
            Error::input(format!(
                "{hname}: the SMV header has no positive SIZE1 and SIZE2 (nor DETECTOR_DIMENSIONS)"
            ))
            .at_file(hname)
        })?;
        xpixels = Some(w);
        ypixels = Some(h);
        let v = |k: &str| smv::value_of(&head.text, k).filter(|x| !x.is_nan());
        if let Some(p) = v("PIXEL_SIZE") {
            if !(p > 0.0 && p.is_finite()) {
                return Err(Error::input(format!(
                    "{hname}: PIXEL_SIZE={p} in the SMV header is not a positive size (mm)"
                ))
                .at_file(hname));
            }
            pixel = p / 1000.0;
        }
        // read for the log only, as upstream does (the last key containing "DISTANCE" wins)
        if let Some(d) = v("DISTANCE") {
            distance = d / 1000.0;
        }
        if let Some(l) = v("WAVELENGTH").filter(|l| *l > 0.0) {
            wavelength = l;
        }
        hdr_xbeam = v("BEAM_CENTER_X").map(|x| x / 1000.0);
        hdr_ybeam = v("BEAM_CENTER_Y");
        header = Some(bytes[..head.header_bytes].to_vec());
    }

    let bytes = files.read(&name, FileKind::FloatImage)?;
    if bytes.len() % 4 != 0 || bytes.is_empty() {
        return Err(Error::input(format!(
            "{name}: {} bytes is not a whole number of 4-byte float pixels",
            bytes.len()
        ))
        .at_file(name));
    }
    let n = bytes.len() / 4;
    let (w, h) = match (xpixels, ypixels) {
        (Some(x), Some(y)) => (x, y),
        (Some(x), None) => (x, n / x),
        (None, Some(y)) => (n / y, y),
        (None, None) => {
            log.push("WARNING: guessing xy pixel dimensions.".into());
            guess_dimensions(n)
        }
    };
    if w.checked_mul(h) != Some(n) {
        return Err(Error::input(format!(
            "{name}: the file holds {n} float pixels but the image is {w}x{h} = {} pixels{}",
            w as u128 * h as u128,
            if o.header.is_some() {
                " (SIZE1 x SIZE2 of the header)"
            } else {
                " (-detpixels)"
            }
        ))
        .at_file(name));
    }
    let input: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if let Some(i) = input.iter().position(|v| !v.is_finite()) {
        return Err(Error::input(format!(
            "{name}: pixel {} (fast {}, slow {}) is {} (the image must hold finite numbers)",
            i,
            i % w,
            i / w,
            input[i]
        ))
        .at_file(name));
    }
    log.push(format!("importing {n} pixel intensites: {name}"));

    let detsize_x = pixel * w as f64;
    let detsize_y = pixel * h as f64;
    // the header's beam centre overrides the flags; the default is the middle
    let xbeam = hdr_xbeam.or(o.xbeam).unwrap_or(detsize_x / 2.0);
    let ybeam = hdr_ybeam
        .map(|y| detsize_y - y / 1000.0)
        .or(o.ybeam)
        .unwrap_or(detsize_y / 2.0);

    let psf = o.psf.map(|kind| Psf {
        kind,
        fwhm_px: o.psf_fwhm as f64 / pixel,
        radius: o.psf_radius,
    });
    let effects = Effects {
        fluence: o.fluence,
        scale: o.scale,
        gain: o.gain,
        adc: o.adc,
        readout: if o.noise { o.readout } else { 0.0 },
        flicker: if o.noise { o.flicker } else { 0.0 },
        calibration: if o.noise { o.calibration } else { 0.0 },
        psf,
        seed: o.seed.unwrap_or(seed),
        calib_seed: o.calib_seed,
        noise: o.noise,
    };
    Ok(Prepared {
        opts: o.clone(),
        width: w,
        height: h,
        pixel,
        distance,
        xbeam,
        ybeam,
        detsize_x,
        detsize_y,
        wavelength,
        header,
        input,
        effects,
        log,
    })
}

/// noisify's own SMV header (when no `-header` is given).
pub fn own_header(p: &Prepared) -> Result<Vec<u8>> {
    let ty = if p.opts.bits32 {
        smv::SmvType::U32
    } else {
        smv::SmvType::U16
    };
    let mut s = smv::header_open(ty);
    s.push_str(&format!("SIZE1={};\nSIZE2={};\n", p.width, p.height));
    smv::push_g(&mut s, "PIXEL_SIZE", p.pixel * 1000.0);
    smv::push_g(&mut s, "DISTANCE", p.distance * 1000.0);
    smv::push_g(&mut s, "WAVELENGTH", p.opts.lambda);
    smv::push_g(&mut s, "BEAM_CENTER_X", p.xbeam * 1000.0);
    smv::push_g(&mut s, "BEAM_CENTER_Y", (p.detsize_y - p.ybeam) * 1000.0);
    smv::push_g(&mut s, "PHI", p.opts.phi);
    smv::push_g(&mut s, "OSC_START", p.opts.phi);
    smv::push_g(&mut s, "OSC_RANGE", p.opts.osc);
    s.push_str(smv::HEADER_CLOSE);
    smv::pad_header(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags_and_aliases() {
        let o = parse(&words(
            "-bin a.bin -readnoise 2 -psf fiber -psf_fwhm 100 -psf_radius 4.7 -bits 32 -seed 5 -calib_seed 9",
        ))
        .unwrap();
        assert_eq!(o.floatfile.as_deref(), Some("a.bin"));
        assert_eq!(
            (o.readout, o.psf, o.psf_radius),
            (2.0, Some(PsfKind::Fiber), 4)
        );
        assert_eq!(o.psf_fwhm, 100e-6f64 as f32);
        assert!(o.bits32);
        assert_eq!((o.seed, o.calib_seed), (Some(-5), -9));
        let o = parse(&words("my_floatimage.bin -nonoise")).unwrap();
        assert_eq!(o.floatfile.as_deref(), Some("my_floatimage.bin"));
        assert!(!o.noise);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = |s: &str| parse(&words(s)).unwrap_err().message;
        assert_eq!(e("-bogus 1"), "unknown flag '-bogus'");
        assert_eq!(e("-psf box"), "-psf: expected gauss or fiber, found 'box'");
        assert_eq!(e("-bits 8"), "-bits: expected 16 or 32, found 8");
        assert_eq!(e("-pixel 0"), "-pixel: must be positive, found 0");
        assert_eq!(e("-gain"), "-gain: missing value");
        assert_eq!(e("-adc ten"), "-adc: expected a number, found 'ten'");
        assert_eq!(
            e("input.bin"),
            "unexpected argument 'input.bin' (values must follow a flag)"
        );
        assert!(e("-detpixels 0").starts_with("-detpixels: expected a positive count"));
    }

    fn floats(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn dimensions_from_flags_header_or_guess() {
        assert_eq!(guess_dimensions(160 * 96), (120, 128));
        assert_eq!(guess_dimensions(7), (1, 7));
        let mut files = MemFiles::default();
        files.0.insert("f.bin".into(), floats(&[1.0; 12]));
        let p = |s: &str, files: &MemFiles| prepare(&parse(&words(s)).unwrap(), files, -1);
        let r = p("-bin f.bin -detpixels_x 4", &files).unwrap();
        assert_eq!((r.width, r.height), (4, 3));
        let r = p("-bin f.bin", &files).unwrap();
        assert_eq!((r.width, r.height), (3, 4));
        assert!(r.log[0].contains("guessing"));
        let e = p("-bin f.bin -detpixels 4", &files).unwrap_err();
        assert_eq!(
            e.message,
            "f.bin: the file holds 12 float pixels but the image is 4x4 = 16 pixels (-detpixels)"
        );
        files.0.insert("odd.bin".into(), vec![0; 10]);
        let e = p("-bin odd.bin", &files).unwrap_err();
        assert!(e.message.starts_with("odd.bin: 10 bytes"), "{}", e.message);
        files
            .0
            .insert("nan.bin".into(), floats(&[1.0, f32::NAN, 0.0, 0.0]));
        let e = p("-bin nan.bin", &files).unwrap_err();
        assert!(
            e.message
                .starts_with("nan.bin: pixel 1 (fast 1, slow 0) is NaN"),
            "{}",
            e.message
        );
        let e = p("-pixel 0.1", &files).unwrap_err();
        assert_eq!(e.kind, ErrorKind::MissingInput);

        let mut hdr = b"{\nHEADER_BYTES=512;\nSIZE1=6;\nSIZE2=2;\nPIXEL_SIZE=0.2;\n}".to_vec();
        hdr.resize(512, b' ');
        files.0.insert("h.img".into(), hdr.clone());
        let r = p("-bin f.bin -header h.img -detpixels 3", &files).unwrap();
        assert_eq!((r.width, r.height, r.pixel), (6, 2, 2e-4));
        assert_eq!(r.header.as_deref(), Some(&hdr[..]));
        let mut bad = b"{\nHEADER_BYTES=512;\nSIZE2=2;\n}".to_vec();
        bad.resize(512, b' ');
        files.0.insert("bad.img".into(), bad);
        let e = p("-bin f.bin -header bad.img", &files).unwrap_err();
        assert!(
            e.message
                .starts_with("bad.img: the SMV header has no positive SIZE1"),
            "{}",
            e.message
        );
        files
            .0
            .insert("short.img".into(), b"{\nHEADER_BYTES=512;\n".to_vec());
        let e = p("-bin f.bin -header short.img", &files).unwrap_err();
        assert!(
            e.message.starts_with("short.img: truncated SMV image"),
            "{}",
            e.message
        );
        files.0.insert("text.img".into(), b"hello".to_vec());
        let e = p("-bin f.bin -header text.img", &files).unwrap_err();
        assert!(
            e.message.starts_with("text.img: not an SMV image"),
            "{}",
            e.message
        );
    }
}
