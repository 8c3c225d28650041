//! `noisify`'s flags (upstream's names and aliases; unlike upstream an unknown flag or a bad
//! value is an error naming the flag) and the resolution of its inputs: the SMV header to copy,
//! the image dimensions, and the float image itself (its size must match them).

use super::psf::PsfKind;
use super::{Effects, Generator, Psf, DEFAULT_FLUENCE};
use crate::args::{
    help_text, own, parse_with, shared, Check, Flag, Geometry, Group, Kind, Options, Parser,
};
use crate::error::{Error, ErrorKind, Result};
use crate::files::{FileKind, FileSource};
use crate::io::smv;
use crate::rng::{LaneKernel, Lanes};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::LazyLock;

/// The settings as given (lengths in m). The detector settings it shares with nanobragg are in
/// nanobragg's `Options` (`geo`: the pixel grid and size, `-detector`, the header's distance and
/// beam centre, the sensor thickness for the miniCBF header, fluence, ADC offset, seed and the
/// int, miniCBF and PGM files).
#[derive(Clone, Debug)]
pub struct NoisifyOptions {
    pub geo: Options,
    pub floatfile: Option<String>,
    /// More float images (`-add FILE`, repeatable), added pixel by pixel to `floatfile` in f32,
    /// in the order given (as `realistic::compose` adds layers).
    pub add: Vec<String>,
    pub header: Option<String>,
    pub pgmfile: String,
    pub noisefile: String,
    pub noise: bool,
    /// Å, written to the header as given.
    pub lambda: f64,
    pub psf: Option<PsfKind>,
    /// m, stored as upstream's `float`.
    pub psf_fwhm: f32,
    pub psf_radius: i32,
    pub scale: f64,
    pub readout: f64,
    pub flicker: f64,
    pub calibration: f64,
    pub gain: f64,
    pub calib_seed: i64,
    /// `-rng`: upstream's sequence (default) or the counter generator (`noisify` module docs).
    pub rng: Generator,
    pub bits32: bool,
    /// Degrees: `-phi` and `-osc` as given; `None` takes the `-header`'s OSC_START (or PHI)
    /// and OSC_RANGE, else 0 and 1 (see [`Prepared::phi`]).
    pub phi: Option<f64>,
    pub osc: Option<f64>,
}

impl Default for NoisifyOptions {
    fn default() -> Self {
        NoisifyOptions {
            geo: Options {
                fluence: DEFAULT_FLUENCE,
                ..Options::default()
            },
            floatfile: None,
            add: Vec::new(),
            header: None,
            pgmfile: "image.pgm".into(),
            noisefile: "noiseimage.img".into(),
            noise: true,
            lambda: 1.0,
            psf: None,
            psf_fwhm: 46e-6,
            psf_radius: 0,
            scale: 1.0,
            readout: 0.0,
            flicker: 0.0,
            calibration: 0.03,
            gain: 1.0,
            calib_seed: 123456789,
            rng: Generator::Upstream,
            bits32: false,
            phi: None,
            osc: None,
        }
    }
}

impl Geometry for NoisifyOptions {
    fn geometry(&mut self) -> &mut Options {
        &mut self.geo
    }
}

/// noisify's defaults for what nanobragg leaves unset (m).
impl NoisifyOptions {
    pub fn pixel(&self) -> f64 {
        self.geo.pixel.unwrap_or(1e-4)
    }
    /// The header's distance (a negative one is used as positive, as nanobragg's `-distance`
    /// warns).
    pub fn distance(&self) -> f64 {
        self.geo.distance.map_or(0.1, f64::abs)
    }
    /// `-detpixels` (or a preset's) along fast and slow.
    pub fn pixels(&self) -> (Option<i64>, Option<i64>) {
        (self.geo.fpixels, self.geo.spixels)
    }
}

/// A value upstream's noisify reads silently as another: the CLI keeps upstream's image and says
/// so ([`Clamp::warning`], pushed by [`parse`]); the Python face refuses it ([`Clamp::error`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Clamp {
    pub flag: &'static str,
    pub value: f64,
    /// What the value should be (`a read-out noise >= 0`).
    pub expected: &'static str,
    /// What upstream makes of it.
    pub read_as: String,
}

impl Clamp {
    /// The command line's warning.
    pub fn warning(&self) -> String {
        format!(
            "{} {}: {}, as upstream does",
            self.flag,
            crate::cfmt::fmt_g(self.value),
            self.read_as
        )
    }

    /// A usage error naming the flag, for a face that refuses the value.
    pub fn error(&self) -> Error {
        Error::usage(format!(
            "{} {}: expected {} (the noisify command reads it as upstream does: {})",
            self.flag,
            crate::cfmt::fmt_g(self.value),
            self.expected,
            self.read_as
        ))
        .with_flag(self.flag)
    }
}

impl NoisifyOptions {
    /// The values given that upstream reads silently as others: a negative `-readout_noise`
    /// (no read-out noise) and a `-gain` ≤ 0 (no signal, or counts that fall as photons rise).
    pub fn clamps(&self) -> Vec<Clamp> {
        let mut out = Vec::new();
        if self.readout < 0.0 {
            out.push(Clamp {
                flag: "-readout_noise",
                value: self.readout,
                expected: "a read-out noise >= 0",
                read_as: "a negative read-out noise is read as 0: no read-out noise".into(),
            });
        }
        if self.gain <= 0.0 {
            let read_as = if self.gain == 0.0 {
                format!(
                    "a gain of 0 leaves no signal: every count is the ADC offset ({} ADU) plus \
                     the read-out noise",
                    crate::cfmt::fmt_g(self.geo.adc)
                )
            } else {
                "a negative gain makes the counts fall as the photons rise: photons x gain + ADC \
                 offset, clipped at 0"
                    .into()
            };
            out.push(Clamp {
                flag: "-gain",
                value: self.gain,
                expected: "a gain > 0",
                read_as,
            });
        }
        out
    }
}

/// The rows noisify shares with nanobragg, by name (their handlers store into `geo`).
const SHARED: &[&str] = &[
    "-detector",
    "-detpixels",
    "-detpixels_f",
    "-detpixels_s",
    "-pixel",
    "-distance",
    "-Xbeam",
    "-Ybeam",
    "-detector_thick",
    "-fluence",
    "-intfile",
    "-cbffile",
    "-nopgm",
    "-adc",
    "-seed",
    "-help",
];

fn warn(p: &mut Parser<'_, NoisifyOptions>, what: String) {
    p.o.geo.warnings.push(what);
}

/// A seed: an integer within a C `int` (negated for upstream's generators).
const SEED: Check = Check::Within(2147483647.0);

/// noisify's own rows.
static OWN: &[Flag<NoisifyOptions>] = &[
    own::<NoisifyOptions>("-floatfile", Group::Effects, "FILE", "float image in photons/pixel (raw little-endian f32); also a bare word containing floatimage.bin", |p| {
        p.o.floatfile = Some(p.text()?);
        Ok(())
    })
    .aka(&["-floatimage", "-bin"])
    .kind(Kind::InputFile),
    own::<NoisifyOptions>("-add", Group::Effects, "FILE", "add another float image of the same size (repeatable)", |p| {
        let f = p.text()?;
        p.o.add.push(f);
        Ok(())
    })
    .kind(Kind::InputFile),
    own::<NoisifyOptions>("-header", Group::Detector, "FILE", "copy this SMV header (SIZE1/SIZE2 give the dimensions)", |p| {
        p.o.header = Some(p.text()?);
        Ok(())
    })
    .kind(Kind::InputFile),
    own::<NoisifyOptions>("-lambda", Group::Beam, "Å", "wavelength for the header", |p| {
        p.o.lambda = p.f64()?;
        Ok(())
    })
    .check(Check::Positive(1e10)),
    own::<NoisifyOptions>("-detsize", Group::Detector, "mm", "accepted, no effect (the size is pixels × pixel size)", |p| {
        p.f64()?;
        let w = format!("{} has no effect in noisify (the size is pixels x pixel size); ignored", p.flag);
        warn(p, w);
        Ok(())
    })
    .aka(&["-detsize_x", "-detsize_y"])
    .kind(Kind::NoEffect)
    .check(Check::Positive(1e6)),
    own::<NoisifyOptions>("-psf", Group::Effects, "gauss|fiber", "point-spread function", |p| {
        let t = p.text()?;
        p.o.psf = Some(if t.contains("gauss") {
            PsfKind::Gauss
        } else if t.contains("fiber") {
            PsfKind::Fiber
        } else {
            return Err(p.err(format_args!("expected gauss or fiber, found '{t}'")));
        });
        Ok(())
    }),
    own::<NoisifyOptions>("-psf_radius", Group::Effects, "px", "radius of the point-spread function (0: automatic)", |p| {
        p.o.psf_radius = p.f64()? as i32;
        Ok(())
    })
    .check(Check::NonNegative(2147483647.0)),
    own::<NoisifyOptions>("-psf_fwhm", Group::Effects, "µm", "full width at half maximum of the point-spread function", |p| {
        p.o.psf_fwhm = (p.f64()? / 1e6) as f32;
        Ok(())
    })
    .aka(&["-psf_size", "-psf_width"])
    .check(Check::NonNegative(1e300)),
    own::<NoisifyOptions>("-scale", Group::Effects, "s", "photons = scale × fluence × r_e² × value (default 1)", |p| {
        p.o.scale = p.f64()?;
        Ok(())
    }),
    own::<NoisifyOptions>("-readout_noise", Group::Effects, "ADU", "read-out noise", |p| {
        p.o.readout = p.f64()?;
        Ok(())
    })
    .aka(&["-readout", "-readnoise"]),
    own::<NoisifyOptions>("-flicker", Group::Effects, "frac", "beam flicker (relative)", |p| {
        p.o.flicker = p.f64()?;
        Ok(())
    }),
    own::<NoisifyOptions>("-calibration", Group::Effects, "frac", "pixel calibration error (relative, default 0.03)", |p| {
        p.o.calibration = p.f64()?;
        Ok(())
    }),
    own::<NoisifyOptions>("-gain", Group::Effects, "ADU/photon", "detector gain (default 1)", |p| {
        p.o.gain = p.f64()?;
        Ok(())
    }),
    own::<NoisifyOptions>("-adc_offset", Group::Effects, "ADU", "as -adc", |p| {
        p.o.geo.adc = p.f64()?;
        Ok(())
    })
    .check(Check::Within(1e9)),
    own::<NoisifyOptions>("-calib_seed", Group::Effects, "n", "seed of the calibration error", |p| {
        p.o.calib_seed = -p.int()?;
        Ok(())
    })
    .check(SEED),
    own::<NoisifyOptions>("-rng", Group::Effects, "upstream|counter", "random numbers of the noise: upstream's sequence on one thread (default, bit-identical to upstream's noisify) or a counter-based generator on all threads (deterministic for any number of threads, not upstream's sequence)", |p| {
        let w = p.text()?;
        p.o.rng = match Generator::parse(&w) {
            Some(g) => g,
            None => return Err(p.err(format_args!("expected upstream or counter, found '{w}'"))),
        };
        Ok(())
    }),
    own::<NoisifyOptions>("-badpix_seed", Group::Effects, "n", "accepted, no effect in noisify", |p| {
        p.int()?;
        let w = format!("{} has no effect in noisify; ignored", p.flag);
        warn(p, w);
        Ok(())
    })
    .aka(&["-hotpix_seed"])
    .kind(Kind::NoEffect)
    .check(SEED),
    own::<NoisifyOptions>("-bits", Group::Output, "16|32", "bits per pixel of the SMV images", |p| {
        p.o.bits32 = match p.int()? {
            16 => false,
            32 => true,
            b => return Err(p.err(format_args!("expected 16 or 32, found {b}"))),
        };
        Ok(())
    }),
    own::<NoisifyOptions>("-phi", Group::Goniometer, "deg", "start of the oscillation (default: the -header's OSC_START, else 0)", |p| {
        p.o.phi = Some(p.f64()?);
        Ok(())
    }),
    own::<NoisifyOptions>("-osc", Group::Goniometer, "deg", "width of the oscillation (default: the -header's OSC_RANGE, else 1)", |p| {
        p.o.osc = Some(p.f64()?);
        Ok(())
    }),
    own::<NoisifyOptions>("-pgmfile", Group::Output, "FILE", "8-bit PGM picture (default image.pgm)", |p| {
        p.o.pgmfile = p.text()?;
        Ok(())
    })
    .aka(&["-pgmimage"])
    .kind(Kind::OutputFile),
    own::<NoisifyOptions>("-noisefile", Group::Output, "FILE", "SMV image with the detector effects (default noiseimage.img)", |p| {
        p.o.noisefile = p.text()?;
        Ok(())
    })
    .aka(&["-noiseimage"])
    .kind(Kind::OutputFile),
    own::<NoisifyOptions>("-nonoise", Group::Output, "", "no noise: no Poisson, read-out, flicker or calibration error", |p| {
        p.o.noise = false;
        Ok(())
    })
    .kind(Kind::OutputOption),
];

/// noisify's flag table: the shared rows it accepts, then its own.
pub fn flags() -> &'static [Flag<NoisifyOptions>] {
    static TABLE: LazyLock<Vec<Flag<NoisifyOptions>>> = LazyLock::new(|| {
        let mut t = shared(SHARED);
        t.extend_from_slice(OWN);
        t
    });
    &TABLE
}

/// The first lines of the usage text: what a run needs.
pub const SHORT_USAGE: &str = "\
usage: noisify -floatfile floatimage.bin [options]
  an image:  -floatfile FILE (photons/pixel, raw little-endian f32)
  noisify -help lists every flag
";

/// `-help`: the usage text, from the table.
pub fn usage() -> String {
    help_text(SHORT_USAGE, flags())
}

/// Parses noisify's words (upstream takes any bare word containing "floatimage.bin" as the
/// input).
pub fn parse(words: &[String]) -> Result<NoisifyOptions> {
    let mut o = NoisifyOptions::default();
    parse_with(flags(), words, &mut o, |w, o| {
        let input = w.contains("floatimage.bin");
        if input {
            o.floatfile = Some(w.to_string());
        }
        input
    })?;
    for c in o.clamps() {
        o.geo.warnings.push(c.warning());
    }
    Ok(o)
}

/// Everything resolved: dimensions, header, the input image and the effects to apply.
/// `'a`: the input image's pixels when they were given borrowed ([`prepare_with_image`]);
/// [`prepare`]'s own are `'static`.
#[derive(Clone, Debug)]
pub struct Prepared<'a> {
    pub opts: NoisifyOptions,
    pub width: usize,
    pub height: usize,
    pub pixel: f64,
    pub distance: f64,
    pub xbeam: f64,
    pub ybeam: f64,
    /// m, along fast and slow from the first pixel's outer corner: where the direct beam meets
    /// the detector, for the miniCBF's `Beam_xy`. A nanobragg/nonbragg header's
    /// `ADXV_CENTER_X`/`_Y` (that exact point; its `BEAM_CENTER_X`/`_Y` are MOSFLM's, which
    /// upstream noisify reads as if they were these), else (`xbeam`, `ybeam`).
    pub beam_fs: (f64, f64),
    pub detsize_x: f64,
    pub detsize_y: f64,
    /// Å: the header's WAVELENGTH, else `-lambda`.
    pub wavelength: f64,
    /// Degrees: `-phi`/`-osc`, else the header's OSC_START (or PHI) and OSC_RANGE, else 0 and 1.
    pub phi: f64,
    pub osc: f64,
    /// The imported header's first HEADER_BYTES bytes, written verbatim.
    pub header: Option<Vec<u8>>,
    /// The input's pixels (fast index first): borrowed when given so, unless `-add` summed
    /// images into them.
    pub input: Cow<'a, [f32]>,
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

/// Decodes a raw little-endian f32 image of width `w`; every pixel must be finite.
fn float_pixels(name: &str, bytes: &[u8], w: usize) -> Result<Vec<f32>> {
    let input: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    check_finite(name, &input, w)?;
    Ok(input)
}

/// An error naming the first pixel that is not a finite number.
fn check_finite(name: &str, input: &[f32], w: usize) -> Result<()> {
    // a pass that vectorises, in parallel chunks compiled for the CPU's vector unit (all
    // finite: the usual case), then the first culprit's position
    struct Finite<'a>(&'a [f32]);
    impl LaneKernel for Finite<'_> {
        type Out = bool;
        #[inline(always)]
        fn compute(self) -> bool {
            // finite: an exponent field that is not all ones
            self.0.chunks(256).all(|c| {
                c.iter()
                    .fold(true, |a, v| a & (v.to_bits() & 0x7F80_0000 != 0x7F80_0000))
            })
        }
    }
    let lanes = Lanes::detected();
    let finite = input.par_chunks(1 << 14).all(|c| lanes.run(Finite(c)));
    if finite {
        return Ok(());
    }
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
    Ok(())
}

/// Reads the header (if any) and the float images and settles the dimensions.
/// `seed` is used when the options carry none (upstream: the clock).
pub fn prepare(o: &NoisifyOptions, files: &dyn FileSource, seed: i64) -> Result<Prepared<'static>> {
    prepare_with_image(o, files, seed, None)
}

/// [`prepare`] with the `-floatfile` image's pixels given (`image`: fast index first, as the
/// file would hold them) instead of read from `files`: the same checks (size, finite values)
/// without a round trip through the file's bytes, and without a copy of borrowed pixels
/// (Python's `noisify` of an array) unless `-add` sums images into them.
pub fn prepare_with_image<'a>(
    o: &NoisifyOptions,
    files: &dyn FileSource,
    seed: i64,
    image: Option<Cow<'a, [f32]>>,
) -> Result<Prepared<'a>> {
    let Some(name) = o.floatfile.clone() else {
        return Err(Error::new(
            ErrorKind::MissingInput,
            "no input image: give -floatfile FILE",
        ));
    };
    let mut log = Vec::new();
    let (mut xpixels, mut ypixels) = match o.pixels() {
        (Some(0), _) | (_, Some(0)) => {
            return Err(
                Error::usage("-detpixels: expected a positive count, found 0")
                    .with_flag("-detpixels"),
            )
        }
        (x, y) => (x.map(|n| n as usize), y.map(|n| n as usize)),
    };
    let mut pixel = o.pixel();
    let mut distance = o.distance();
    let (mut hdr_xbeam, mut hdr_ybeam) = (None, None);
    let mut hdr_adxv = None;
    let mut wavelength = o.lambda;
    let (mut hdr_phi, mut hdr_osc) = (None, None);
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
        hdr_phi = v("OSC_START").or_else(|| v("PHI"));
        hdr_osc = v("OSC_RANGE");
        hdr_xbeam = v("BEAM_CENTER_X").map(|x| x / 1000.0);
        hdr_ybeam = v("BEAM_CENTER_Y");
        hdr_adxv = v("ADXV_CENTER_X").zip(v("ADXV_CENTER_Y"));
        header = Some(bytes[..head.header_bytes].to_vec());
    }

    let bytes = match &image {
        Some(_) => None,
        None => Some(files.read(&name, FileKind::FloatImage)?),
    };
    let n = match (&image, &bytes) {
        (Some(px), _) => px.len(),
        (None, Some(bytes)) => {
            if bytes.is_empty() {
                return Err(Error::input(format!(
                    "{name}: the file is empty (expected 4-byte float pixels)"
                ))
                .at_file(name));
            }
            if bytes.len() % 4 != 0 {
                return Err(Error::input(format!(
                    "{name}: {} bytes is not a whole number of 4-byte float pixels",
                    bytes.len()
                ))
                .at_file(name));
            }
            bytes.len() / 4
        }
        (None, None) => unreachable!("read above"),
    };
    if n == 0 {
        return Err(Error::input(format!("{name}: the image has no pixels")).at_file(name));
    }
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
            } else if o.geo.preset.is_some() {
                " (-detector, -detpixels)"
            } else {
                " (-detpixels)"
            }
        ))
        .at_file(name));
    }
    let mut input = match (image, &bytes) {
        (Some(px), _) => {
            check_finite(&name, &px, w)?;
            px
        }
        (None, Some(bytes)) => Cow::Owned(float_pixels(&name, bytes, w)?),
        (None, None) => unreachable!("read above"),
    };
    log.push(format!("importing {n} pixel intensites: {name}"));
    for add in &o.add {
        let bytes = files.read(add, FileKind::FloatImage)?;
        if bytes.len() != 4 * n {
            return Err(Error::input(format!(
                "{add}: -add: {} bytes, but the image {name} is {n} float pixels ({} bytes)",
                bytes.len(),
                4 * n
            ))
            .at_file(add));
        }
        // f32 sums in the order given, as realistic::compose adds layers
        for (a, b) in input.to_mut().iter_mut().zip(float_pixels(add, &bytes, w)?) {
            *a += b;
        }
        log.push(format!("adding {n} pixel intensites: {add}"));
    }
    if let Some(p) = o.geo.preset {
        if (w, h) != (p.fast_pixels, p.slow_pixels) {
            return Err(Error::input(format!(
                "-detector {}: the detector is {}x{} pixels but the image is {w}x{h}",
                p.name, p.fast_pixels, p.slow_pixels
            )));
        }
    }

    let detsize_x = pixel * w as f64;
    let detsize_y = pixel * h as f64;
    // the header's beam centre overrides the flags; the default is the middle
    let xbeam = hdr_xbeam.or(o.geo.xbeam).unwrap_or(detsize_x / 2.0);
    let ybeam = hdr_ybeam
        .map(|y| detsize_y - y / 1000.0)
        .or(o.geo.ybeam)
        .unwrap_or(detsize_y / 2.0);
    let beam_fs = hdr_adxv.map_or((xbeam, ybeam), |(x, y)| {
        (x / 1000.0, detsize_y - y / 1000.0)
    });

    let psf = o.psf.map(|kind| Psf {
        kind,
        fwhm_px: o.psf_fwhm as f64 / pixel,
        radius: o.psf_radius,
    });
    let effects = Effects {
        fluence: o.geo.fluence,
        scale: o.scale,
        gain: o.gain,
        adc: o.geo.adc,
        readout: if o.noise { o.readout } else { 0.0 },
        flicker: if o.noise { o.flicker } else { 0.0 },
        calibration: if o.noise { o.calibration } else { 0.0 },
        psf,
        seed: o.geo.seed.unwrap_or(seed),
        calib_seed: o.calib_seed,
        noise: o.noise,
        rng: o.rng,
    };
    Ok(Prepared {
        opts: o.clone(),
        width: w,
        height: h,
        pixel,
        distance,
        xbeam,
        ybeam,
        beam_fs,
        detsize_x,
        detsize_y,
        wavelength,
        phi: o.phi.or(hdr_phi).unwrap_or(0.0),
        osc: o.osc.or(hdr_osc).unwrap_or(1.0),
        header,
        input,
        effects,
        log,
    })
}

/// noisify's own SMV header (when no `-header` is given).
pub fn own_header(p: &Prepared<'_>) -> Result<Vec<u8>> {
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
    smv::push_g(&mut s, "PHI", p.phi);
    smv::push_g(&mut s, "OSC_START", p.phi);
    smv::push_g(&mut s, "OSC_RANGE", p.osc);
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
        assert_eq!((o.geo.seed, o.calib_seed), (Some(-5), -9));
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
        assert_eq!(
            e("-pixel 0"),
            "-pixel: expected a number > 0 and ≤ 1000, found '0'"
        );
        assert_eq!(
            e("-psf_fwhn 1"),
            "unknown flag '-psf_fwhn' (did you mean -psf_fwhm?)"
        );
        // a nanobragg flag noisify does not take
        assert_eq!(e("-mat a.mat"), "unknown flag '-mat'");
        assert_eq!(e("-gain"), "-gain: missing value");
        assert_eq!(e("-adc ten"), "-adc: expected a number, found 'ten'");
        assert_eq!(
            e("input.bin"),
            "unexpected argument 'input.bin' (values must follow a flag)"
        );
        let files = MemFiles::default();
        let e = prepare(
            &parse(&words("-bin a.bin -detpixels 0")).unwrap(),
            &files,
            1,
        );
        assert_eq!(
            e.unwrap_err().message,
            "-detpixels: expected a positive count, found 0"
        );
    }

    #[test]
    fn help_lists_every_flag() {
        let u = usage();
        assert!(u.starts_with("usage: noisify"));
        for f in flags() {
            for n in f.names() {
                assert!(u.contains(n), "{n} missing from the help text");
            }
        }
        assert!(u.contains("detector effects:") && !u.contains("crystal:"));
        let mut seen = std::collections::HashSet::new();
        for n in flags().iter().flat_map(|f| f.names()) {
            assert!(seen.insert(n), "{n} appears twice");
        }
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
        files.0.insert("empty.bin".into(), vec![]);
        let e = p("-bin empty.bin", &files).unwrap_err();
        assert_eq!(
            e.message,
            "empty.bin: the file is empty (expected 4-byte float pixels)"
        );
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
        // a non-finite pixel deep in a larger image (the vector lanes of a later chunk): each
        // kind named at its place, finite extremes accepted
        let n = 300 * 200;
        for (i, bad, what) in [
            (41_234, f32::INFINITY, "inf"),
            (59_999, f32::NEG_INFINITY, "-inf"),
            (17, -f32::NAN, "NaN"),
        ] {
            let mut px = vec![0.5f32; n];
            px[5] = f32::MAX;
            px[6] = -f32::MAX;
            px[7] = f32::MIN_POSITIVE / 4.0;
            px[i] = bad;
            files.0.insert("big.bin".into(), floats(&px));
            let e = p("-bin big.bin -detpixels_x 300 -detpixels_y 200", &files).unwrap_err();
            let want = format!(
                "big.bin: pixel {i} (fast {}, slow {}) is {what}",
                i % 300,
                i / 300
            );
            assert!(e.message.starts_with(&want), "{}", e.message);
            px[i] = 1.0;
            files.0.insert("big.bin".into(), floats(&px));
            assert!(p("-bin big.bin -detpixels_x 300 -detpixels_y 200", &files).is_ok());
        }
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

    #[test]
    fn added_images_phi_and_preset() {
        let mut files = MemFiles::default();
        files
            .0
            .insert("a.bin".into(), floats(&[1.0, 2.5, 0.1, 4.0]));
        files
            .0
            .insert("b.bin".into(), floats(&[0.5, 1e8, 0.2, -1.0]));
        files.0.insert("c.bin".into(), floats(&[1.0; 3]));
        let p = |s: &str, files: &MemFiles| prepare(&parse(&words(s)).unwrap(), files, -1);
        let r = p("-bin a.bin -add b.bin -add a.bin -detpixels 2", &files).unwrap();
        let want: Vec<f32> = [1.0f32, 2.5, 0.1, 4.0]
            .iter()
            .zip([0.5f32, 1e8, 0.2, -1.0])
            .map(|(a, b)| (a + b) + a)
            .collect();
        assert_eq!(r.input, want);
        assert_eq!((r.phi, r.osc), (0.0, 1.0));
        let e = p("-bin a.bin -add c.bin", &files).unwrap_err();
        assert_eq!(
            e.message,
            "c.bin: -add: 12 bytes, but the image a.bin is 4 float pixels (16 bytes)"
        );
        let e = p("-bin a.bin -add none.bin", &files).unwrap_err();
        assert!(e.message.contains("none.bin"), "{}", e.message);

        // phi and oscillation: the header's OSC_START (or PHI) and OSC_RANGE, flags first
        let head = |text: &str| {
            let mut h = format!("{{\nHEADER_BYTES=512;\nSIZE1=2;\nSIZE2=2;\n{text}}}").into_bytes();
            h.resize(512, b' ');
            h
        };
        files.0.insert(
            "h1.img".into(),
            head("PHI=3;\nOSC_START=7.5;\nOSC_RANGE=0.25;\n"),
        );
        files.0.insert("h2.img".into(), head("PHI=12;\n"));
        let r = p("-bin a.bin -header h1.img", &files).unwrap();
        assert_eq!((r.phi, r.osc), (7.5, 0.25));
        let r = p("-bin a.bin -header h2.img", &files).unwrap();
        assert_eq!((r.phi, r.osc), (12.0, 1.0));
        // the miniCBF's beam: a nanobragg header's ADXV centre (fast, size - slow), not its
        // MOSFLM BEAM_CENTER_X/Y
        files.0.insert(
            "h3.img".into(),
            head("PIXEL_SIZE=0.2;\nBEAM_CENTER_X=0.3;\nBEAM_CENTER_Y=0.3;\nADXV_CENTER_X=0.1;\nADXV_CENTER_Y=0.3;\n"),
        );
        let r = p("-bin a.bin -header h3.img", &files).unwrap();
        assert_eq!((r.xbeam, r.ybeam), (0.3e-3, 0.4e-3 - 0.3e-3));
        assert_eq!(r.beam_fs, (0.1e-3, 0.4e-3 - 0.3e-3));
        let r = p("-bin a.bin -header h2.img", &files).unwrap();
        assert_eq!(r.beam_fs, (r.xbeam, r.ybeam));
        let r = p("-bin a.bin -header h1.img -phi 1 -osc 0.1", &files).unwrap();
        assert_eq!((r.phi, r.osc), (1.0, 0.1));
        let own = own_header(&r).unwrap();
        let text = String::from_utf8_lossy(&own);
        assert!(
            text.contains("OSC_START=1;") && text.contains("OSC_RANGE=0.1;"),
            "{text}"
        );

        // a preset sets size and pixel (later flags override); the image must be its size
        let o = parse(&words("-detector Pilatus6M -detector_thick 450")).unwrap();
        assert_eq!(
            (o.pixels(), o.pixel()),
            ((Some(2463), Some(2527)), 0.172 / 1000.0)
        );
        assert_eq!(o.geo.preset.unwrap().name, "pilatus6m");
        assert_eq!(o.geo.detector_thick, 450e-6);
        let e = p("-bin a.bin -detector eiger2-4m -detpixels 2", &files).unwrap_err();
        assert_eq!(
            e.message,
            "-detector eiger2-4m: the detector is 2068x2162 pixels but the image is 2x2"
        );
        let e = p("-bin a.bin -detector eiger2-4m", &files).unwrap_err();
        assert!(
            e.message.ends_with("(-detector, -detpixels)"),
            "{}",
            e.message
        );
        let e = parse(&words("-detector pilatus2m")).unwrap_err().message;
        assert!(
            e.starts_with("-detector: unknown detector 'pilatus2m' (known: pilatus6m"),
            "{e}"
        );
    }
}
