//! Command-line words -> `Options` (raw user settings, converted to internal units at parse time,
//! MODEL §1.2 and §2). Flag names and aliases are upstream nanoBragg's; the order-dependent side
//! effects that upstream's substring matching produces and that real command lines rely on are
//! reproduced (`-twotheta_axis` also sets two-theta, `-misset_seed` also acts as `-misset`,
//! conventions set the pivot, last flag wins). Unlike upstream, an unknown flag, a missing value
//! or a non-numeric value is an error naming the flag.

use crate::cfmt::{atof, parse_f64_strict, parse_i64_strict};
use crate::error::{Error, Result};
use crate::vec3::V3;

pub const RTD: f64 = 180.0 * std::f64::consts::FRAC_1_PI;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    Mosflm,
    Xds,
    Adxv,
    Denzo,
    Dials,
    Custom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pivot {
    Beam,
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    F32,
    F64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    Gpu,
    Auto,
}

/// Raw settings. Lengths in m, angles in rad, like upstream's variables right after parsing.
/// `None` (or a negative value where upstream uses -1) means "not given".
#[derive(Clone, Debug)]
pub struct Options {
    // files
    pub hkl: Option<String>,
    pub dump: String,
    pub mat: Option<String>,
    pub img: Option<String>,
    pub mask: Option<String>,
    pub sourcefile: Option<String>,
    pub stol: Option<String>,
    pub default_f: f64,
    // crystal
    pub cell: Option<[f64; 6]>,
    pub na: Option<f64>,
    pub nb: Option<f64>,
    pub nc: Option<f64>,
    pub sample_x: f64,
    pub sample_y: f64,
    pub sample_z: f64,
    pub misset: Option<V3>,
    pub misset_random: bool,
    pub misset_seed: i64,
    pub mosaic_spread: f64,
    pub mosaic_domains: i64,
    pub mosaic_seed: i64,
    pub shape: crate::plan::Shape,
    pub fudge: f64,
    /// 0 off, 1 on, 2 auto.
    pub interpolate: u8,
    pub phi0: Option<f64>,
    pub osc: Option<f64>,
    pub phistep: f64,
    pub phisteps: i64,
    pub spindle_axis: Option<V3>,
    // beam
    pub lambda: Option<f64>,
    pub dispersion: f64,
    pub dispsteps: i64,
    pub hdivrange: f64,
    pub vdivrange: f64,
    pub hdivstep: f64,
    pub vdivstep: f64,
    pub hdivsteps: i64,
    pub vdivsteps: i64,
    pub round_div: bool,
    pub beam_vector: Option<V3>,
    pub polar_vector: Option<V3>,
    pub polar: f64,
    pub nopolar: bool,
    pub fluence: f64,
    pub flux: f64,
    pub exposure: f64,
    pub beamsize: f64,
    pub water: f64,
    // detector
    pub pixel: Option<f64>,
    pub detsize_f: Option<f64>,
    pub detsize_s: Option<f64>,
    pub fpixels: Option<i64>,
    pub spixels: Option<i64>,
    pub distance: Option<f64>,
    pub close_distance: Option<f64>,
    pub xbeam: Option<f64>,
    pub ybeam: Option<f64>,
    pub xclose: Option<f64>,
    pub yclose: Option<f64>,
    pub orgx: Option<f64>,
    pub orgy: Option<f64>,
    pub pivot: Pivot,
    pub convention: Convention,
    pub fdet_vector: Option<V3>,
    pub sdet_vector: Option<V3>,
    pub odet_vector: Option<V3>,
    pub twotheta_axis: Option<V3>,
    pub twotheta: f64,
    pub rotx: f64,
    pub roty: f64,
    pub rotz: f64,
    pub curved_det: bool,
    pub point_pixel: bool,
    pub detector_mu: f64,
    pub detector_thick: f64,
    pub detector_thicksteps: i64,
    pub oversample: i64,
    pub oversample_thick: bool,
    pub oversample_polar: bool,
    pub oversample_omega: bool,
    pub roi: Option<[i64; 4]>,
    pub dmin: f64,
    // output
    pub floatfile: String,
    pub intfile: String,
    pub noisefile: String,
    pub pgmfile: String,
    pub write_noise: bool,
    pub write_pgm: bool,
    pub scale: f64,
    pub pgmscale: f64,
    pub adc: f64,
    pub seed: Option<i64>,
    pub printout: bool,
    /// `-predict FILE`: the reflection prediction table (`predict.rs`).
    pub predict: Option<String>,
    pub printout_pixel: Option<(i64, i64)>,
    pub progress: bool,
    // ours
    /// `-cbffile`: a miniCBF copy of the int image (`io::cbf`).
    pub cbffile: Option<String>,
    /// `-detector NAME`: a real detector's pixels, pixel size and module gaps (`detectors`).
    pub preset: Option<&'static crate::detectors::DetectorPreset>,
    pub precision: Precision,
    pub threads: Option<usize>,
    pub backend: Backend,
    pub timings: bool,
    /// Warnings produced while parsing (printed by the CLI).
    pub warnings: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            hkl: None,
            dump: "Fdump.bin".into(),
            mat: None,
            img: None,
            mask: None,
            sourcefile: None,
            stol: None,
            default_f: 0.0,
            cell: None,
            na: None,
            nb: None,
            nc: None,
            sample_x: 0.0,
            sample_y: 0.0,
            sample_z: 0.0,
            misset: None,
            misset_random: false,
            misset_seed: 0,
            mosaic_spread: -1.0,
            mosaic_domains: -1,
            mosaic_seed: -12345678,
            shape: crate::plan::Shape::Square,
            fudge: 1.0,
            interpolate: 2,
            phi0: None,
            osc: None,
            phistep: -1.0,
            phisteps: -1,
            spindle_axis: None,
            lambda: None,
            dispersion: 0.0,
            dispsteps: -1,
            hdivrange: -1.0,
            vdivrange: -1.0,
            hdivstep: -1.0,
            vdivstep: -1.0,
            hdivsteps: -1,
            vdivsteps: -1,
            round_div: true,
            beam_vector: None,
            polar_vector: None,
            polar: 0.0,
            nopolar: false,
            fluence: 125932015286227086360700780544.0,
            flux: 0.0,
            exposure: 1.0,
            beamsize: 1e-4,
            water: 0.0,
            pixel: None,
            detsize_f: None,
            detsize_s: None,
            fpixels: None,
            spixels: None,
            distance: None,
            close_distance: None,
            xbeam: None,
            ybeam: None,
            xclose: None,
            yclose: None,
            orgx: None,
            orgy: None,
            pivot: Pivot::Beam,
            convention: Convention::Mosflm,
            fdet_vector: None,
            sdet_vector: None,
            odet_vector: None,
            twotheta_axis: None,
            twotheta: 0.0,
            rotx: 0.0,
            roty: 0.0,
            rotz: 0.0,
            curved_det: false,
            point_pixel: false,
            detector_mu: -1.0,
            detector_thick: 0.0,
            detector_thicksteps: -1,
            oversample: -1,
            oversample_thick: false,
            oversample_polar: false,
            oversample_omega: false,
            roi: None,
            dmin: 0.0,
            floatfile: "floatimage.bin".into(),
            intfile: "intimage.img".into(),
            noisefile: "noiseimage.img".into(),
            pgmfile: "image.pgm".into(),
            write_noise: true,
            write_pgm: true,
            scale: 0.0,
            pgmscale: 0.0,
            adc: 40.0,
            seed: None,
            printout: false,
            predict: None,
            printout_pixel: None,
            progress: true,
            cbffile: None,
            preset: None,
            precision: Precision::F64,
            threads: None,
            backend: Backend::Cpu,
            timings: false,
            warnings: Vec::new(),
        }
    }
}

/// Cursor over the words, with value readers that name the flag in their errors.
struct Words<'a> {
    w: &'a [String],
    i: usize,
    flag: String,
}

impl<'a> Words<'a> {
    fn remaining(&self) -> usize {
        self.w.len() - self.i
    }
    fn peek(&self, k: usize) -> Option<&'a str> {
        self.w.get(self.i + k).map(|s| s.as_str())
    }
    fn text(&mut self) -> Result<String> {
        match self.w.get(self.i) {
            Some(s) => {
                self.i += 1;
                Ok(s.clone())
            }
            None => Err(Error::usage(format!("{}: missing value", self.flag))),
        }
    }
    fn f64(&mut self) -> Result<f64> {
        let flag = self.flag.clone();
        let t = self.text()?;
        parse_f64_strict(&t)
            .ok_or_else(|| Error::usage(format!("{flag}: expected a number, found '{t}'")))
    }
    fn int(&mut self) -> Result<i64> {
        let flag = self.flag.clone();
        let t = self.text()?;
        if let Some(v) = parse_i64_strict(&t) {
            return Ok(v);
        }
        // upstream reads counts with atoi: accept "2.0"-like numbers by truncation
        match parse_f64_strict(&t) {
            Some(v) if v.is_finite() => Ok(v.trunc() as i64),
            _ => Err(Error::usage(format!(
                "{flag}: expected an integer, found '{t}'"
            ))),
        }
    }
    fn vec3(&mut self) -> Result<V3> {
        Ok([self.f64()?, self.f64()?, self.f64()?])
    }
}

fn is_number(s: &str) -> bool {
    parse_f64_strict(s).is_some()
}

/// Parse the words after the program name.
pub fn parse(words: &[String]) -> Result<Options> {
    let mut o = Options::default();
    let mut w = Words {
        w: words,
        i: 0,
        flag: String::new(),
    };
    while w.i < words.len() {
        let arg = words[w.i].clone();
        w.i += 1;
        if !arg.starts_with('-') || arg.len() < 2 {
            return Err(Error::usage(format!(
                "unexpected argument '{arg}' (values must follow a flag)"
            )));
        }
        w.flag = arg.clone();
        let mm = 1e-3;
        match arg.as_str() {
            // ---- files and structure factors
            "-hkl" => o.hkl = Some(w.text()?),
            "-dump" => o.dump = w.text()?,
            "-default_F" => o.default_f = w.f64()?,
            "-mat" | "-matrix" => o.mat = Some(w.text()?),
            "-cell" => {
                let mut c = [0.0; 6];
                let mut n = 0;
                while n < 6
                    && w.peek(0)
                        .is_some_and(|t| !t.starts_with('-') && is_number(t))
                {
                    c[n] = w.f64()?;
                    n += 1;
                }
                if n == 0 {
                    return Err(Error::usage(
                        "-cell: expected a b c alpha beta gamma (Å, degrees)",
                    ));
                }
                o.cell = Some(c);
            }
            "-img" => o.img = Some(w.text()?),
            "-mask" => o.mask = Some(w.text()?),
            "-sourcefile" => o.sourcefile = Some(w.text()?),
            "-stol" | "-4stol" | "-Q" => {
                o.stol = Some(w.text()?);
                o.warnings.push(format!(
                    "{arg} is read by upstream but has no effect; ignored"
                ));
            }
            "-stolout" => {
                w.text()?;
            }
            // ---- crystal
            "-N" => {
                let n = w.int()? as f64;
                o.na = Some(n);
                o.nb = Some(n);
                o.nc = Some(n);
            }
            "-Na" => o.na = Some(w.int()? as f64),
            "-Nb" => o.nb = Some(w.int()? as f64),
            "-Nc" => o.nc = Some(w.int()? as f64),
            "-samplesize" | "-sample_size" | "-xtalsize" | "-xtal_size" => {
                let v = w.f64()? * mm;
                o.sample_x = v;
                o.sample_y = v;
                o.sample_z = v;
            }
            "-sample_thick" | "-sample_x" | "-xtal_thick" | "-xtal_x" => o.sample_x = w.f64()? * mm,
            "-sample_width" | "-sample_y" | "-xtal_width" | "-xtal_y" | "-width" => {
                o.sample_y = w.f64()? * mm
            }
            "-sample_height" | "-sample_z" | "-xtal_height" | "-xtal_z" | "-height" => {
                o.sample_z = w.f64()? * mm
            }
            "-density" | "-sample_density" | "-MW" | "-molecules" => {
                w.f64()?;
                o.warnings
                    .push(format!("{arg} has no effect in nanoBragg; ignored"));
            }
            "-misset" => {
                if w.peek(0).is_some_and(|t| t.contains("rand")) {
                    w.i += 1;
                    o.misset_random = true;
                    o.misset = None;
                } else {
                    o.misset = Some(w.vec3()?);
                    o.misset_random = false;
                }
            }
            "-misset_seed" => {
                // upstream's substring match also runs the -misset handler on the next three words
                if w.remaining() >= 3 {
                    let m = [
                        atof(w.peek(0).unwrap()),
                        atof(w.peek(1).unwrap()),
                        atof(w.peek(2).unwrap()),
                    ];
                    o.misset = Some(m);
                    o.misset_random = false;
                }
                o.misset_seed = -w.int()?;
                // ... and the two numbers after the seed are that misset's other angles
                for _ in 0..2 {
                    if w.peek(0).is_some_and(is_number) {
                        w.i += 1;
                    }
                }
            }
            "-mosaic" | "-mosaicity" | "-mosaic_spread" => o.mosaic_spread = w.f64()? / RTD,
            "-mosaic_dom" | "-mosaic_domains" => o.mosaic_domains = w.int()?,
            "-mosaic_seed" => o.mosaic_seed = -w.int()?,
            "-square_xtal" => o.shape = crate::plan::Shape::Square,
            "-round_xtal" => o.shape = crate::plan::Shape::Round,
            "-gauss_xtal" => o.shape = crate::plan::Shape::Gauss,
            "-binary_spots" | "-tophat_spots" => o.shape = crate::plan::Shape::Tophat,
            "-fudge" => o.fudge = w.f64()?,
            "-interpolate" => o.interpolate = 1,
            "-nointerpolate" => o.interpolate = 0,
            "-phi" => o.phi0 = Some(w.f64()? / RTD),
            "-osc" => o.osc = Some(w.f64()? / RTD),
            "-phistep" => o.phistep = w.f64()? / RTD,
            "-phisteps" => o.phisteps = w.int()?,
            "-spindle_axis" => {
                o.spindle_axis = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            // ---- beam
            "-lambda" | "-wave" | "-wavelength" => o.lambda = Some(w.f64()? / 1e10),
            "-energy" => o.lambda = Some((12398.42 / w.f64()?) / 1e10),
            "-dispersion" => o.dispersion = w.f64()? / 100.0,
            "-dispsteps" => o.dispsteps = w.int()?,
            "-divergence" => {
                let v = w.f64()? / 1000.0;
                o.hdivrange = v;
                o.vdivrange = v;
            }
            "-hdivrange" => o.hdivrange = w.f64()? / 1000.0,
            "-vdivrange" => o.vdivrange = w.f64()? / 1000.0,
            "-hdivstep" => o.hdivstep = w.f64()? / 1000.0,
            "-vdivstep" => o.vdivstep = w.f64()? / 1000.0,
            "-hdivsteps" => o.hdivsteps = w.int()?,
            "-vdivsteps" => o.vdivsteps = w.int()?,
            "-divsteps" => {
                let n = w.int()?;
                o.hdivsteps = n;
                o.vdivsteps = n;
            }
            "-round_div" => o.round_div = true,
            "-square_div" => o.round_div = false,
            "-beam_vector" => {
                o.beam_vector = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            "-polar_vector" => {
                o.polar_vector = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            "-polar" => {
                o.polar = w.f64()?;
                o.nopolar = false;
            }
            "-nopolar" => o.nopolar = true,
            "-fluence" => o.fluence = w.f64()?,
            "-flux" => o.flux = w.f64()?,
            "-exposure" => o.exposure = w.f64()?,
            "-beamsize" => o.beamsize = w.f64()? * mm,
            "-coherent" => o
                .warnings
                .push("-coherent has no effect in nanoBragg; ignored".into()),
            "-water" => o.water = w.f64()? / 1e6,
            // ---- detector
            "-pixel" => o.pixel = Some(w.f64()? * mm),
            "-detsize" => {
                let v = w.f64()? * mm;
                o.detsize_f = Some(v);
                o.detsize_s = Some(v);
            }
            "-detsize_f" => o.detsize_f = Some(w.f64()? * mm),
            "-detsize_s" => o.detsize_s = Some(w.f64()? * mm),
            "-detpixels" => {
                let n = w.int()?;
                o.fpixels = Some(n);
                o.spixels = Some(n);
            }
            "-detpixels_f" | "-detpixels_x" => o.fpixels = Some(w.int()?),
            "-detpixels_s" | "-detpixels_y" => o.spixels = Some(w.int()?),
            "-distance" => {
                o.distance = Some(w.f64()? * mm);
                o.pivot = Pivot::Beam;
            }
            "-close_distance" => {
                o.close_distance = Some(w.f64()? * mm);
                o.pivot = Pivot::Sample;
            }
            "-Xbeam" => {
                o.xbeam = Some(w.f64()? * mm);
                o.pivot = Pivot::Beam;
            }
            "-Ybeam" => {
                o.ybeam = Some(w.f64()? * mm);
                o.pivot = Pivot::Beam;
            }
            "-Xclose" => {
                o.xclose = Some(w.f64()? * mm);
                o.pivot = Pivot::Sample;
            }
            "-Yclose" => {
                o.yclose = Some(w.f64()? * mm);
                o.pivot = Pivot::Sample;
            }
            "-ORGX" => {
                o.orgx = Some(w.f64()?);
                o.pivot = Pivot::Sample;
            }
            "-ORGY" => {
                o.orgy = Some(w.f64()?);
                o.pivot = Pivot::Sample;
            }
            "-pivot" => {
                let v = w.text()?;
                if v.contains("sample") {
                    o.pivot = Pivot::Sample;
                } else if v.contains("beam") {
                    o.pivot = Pivot::Beam;
                } else {
                    return Err(Error::usage(format!(
                        "-pivot: expected 'sample' or 'beam', found '{v}'"
                    )));
                }
            }
            "-mosflm" => {
                o.convention = Convention::Mosflm;
                o.pivot = Pivot::Beam;
            }
            "-denzo" => {
                o.convention = Convention::Denzo;
                o.pivot = Pivot::Beam;
            }
            "-adxv" => {
                o.convention = Convention::Adxv;
                o.pivot = Pivot::Beam;
            }
            "-xds" => {
                o.convention = Convention::Xds;
                o.pivot = Pivot::Sample;
            }
            "-dials" => {
                o.convention = Convention::Dials;
                o.pivot = Pivot::Beam;
            }
            "-fdet_vector" => {
                o.fdet_vector = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            "-sdet_vector" => {
                o.sdet_vector = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            "-odet_vector" => {
                o.odet_vector = Some(w.vec3()?);
                o.convention = Convention::Custom;
            }
            "-twotheta_axis" => {
                let v = w.vec3()?;
                o.twotheta_axis = Some(v);
                o.convention = Convention::Custom;
                // upstream's substring match also runs -twotheta with the first component
                o.twotheta = v[0] / RTD;
                o.pivot = Pivot::Sample;
            }
            "-pix0_vector" | "-pix0_vector_mm" => {
                w.vec3()?;
                o.convention = Convention::Custom;
                o.warnings.push(format!("{arg}: upstream recomputes pix0 from the beam centre; the value only selects the CUSTOM convention"));
            }
            "-twotheta" => {
                o.twotheta = w.f64()? / RTD;
                o.pivot = Pivot::Sample;
            }
            "-detector_rotx" => o.rotx = w.f64()? / RTD,
            "-detector_roty" => o.roty = w.f64()? / RTD,
            "-detector_rotz" => o.rotz = w.f64()? / RTD,
            "-curved_det" => {
                if w.remaining() >= 1 {
                    o.curved_det = true;
                } else {
                    o.warnings.push(
                        "-curved_det as the last argument is ignored (as upstream does)".into(),
                    );
                }
            }
            "-point_pixel" => o.point_pixel = true,
            "-detector_abs" | "-detector_absorb" | "-detector_absorption" => {
                let v = w.f64()?;
                if v.is_infinite() || v == 0.0 {
                    o.detector_thick = 0.0;
                    o.detector_mu = 0.0;
                } else {
                    o.detector_mu = 1.0 / (v * 1e-6);
                }
            }
            "-detector_thick" => o.detector_thick = w.f64()? * 1e-6,
            "-detector_thicksteps" | "-thicksteps" => o.detector_thicksteps = w.int()?,
            "-oversample" => o.oversample = w.int()?,
            "-oversample_thick" => o.oversample_thick = true,
            "-oversample_polar" => o.oversample_polar = true,
            "-oversample_omega" => o.oversample_omega = true,
            "-roi" => o.roi = Some([w.int()?, w.int()?, w.int()?, w.int()?]),
            "-dmin" => o.dmin = w.f64()? * 1e-10,
            // ---- output
            "-floatfile" | "-floatimage" => o.floatfile = w.text()?,
            "-intfile" | "-intimage" => o.intfile = w.text()?,
            "-noisefile" | "-noiseimage" => {
                o.noisefile = w.text()?;
                o.write_noise = true;
            }
            "-nonoise" => o.write_noise = false,
            "-pgmfile" | "-pgmimage" => {
                o.pgmfile = w.text()?;
                o.write_pgm = true;
            }
            "-nopgm" => o.write_pgm = false,
            "-scale" => o.scale = w.f64()?,
            "-pgmscale" => {
                o.pgmscale = w.f64()?;
                o.write_pgm = true;
            }
            "-adc" | "-adcoffset" => o.adc = w.f64()?,
            "-seed" => o.seed = Some(-w.int()?),
            "-printout" => o.printout = true,
            "-predict" => o.predict = Some(w.text()?),
            "-printout_pixel" => {
                o.printout_pixel = Some((w.int()?, w.int()?));
                o.printout = true;
            }
            "-progress" => o.progress = true,
            "-noprogress" => o.progress = false,
            // ---- ours
            "-precision" => {
                o.precision = match w.text()?.as_str() {
                    "f32" | "single" => Precision::F32,
                    "f64" | "double" => Precision::F64,
                    v => {
                        return Err(Error::usage(format!(
                            "-precision: expected f32 or f64, found '{v}'"
                        )))
                    }
                }
            }
            "-threads" => {
                let n = w.int()?;
                if n < 1 {
                    return Err(Error::usage(format!(
                        "-threads: expected a positive count, found {n}"
                    )));
                }
                o.threads = Some(n as usize);
            }
            "-backend" => {
                o.backend = match w.text()?.as_str() {
                    "cpu" => Backend::Cpu,
                    "gpu" => Backend::Gpu,
                    "auto" => Backend::Auto,
                    v => {
                        return Err(Error::usage(format!(
                            "-backend: expected cpu, gpu or auto, found '{v}'"
                        )))
                    }
                }
            }
            "-timings" => o.timings = true,
            "-cbffile" => o.cbffile = Some(w.text()?),
            "-detector" => {
                let name = w.text()?;
                let p = crate::detectors::find(&name).ok_or_else(|| {
                    Error::usage(format!(
                        "-detector: unknown detector '{name}' (known: {})",
                        crate::detectors::names()
                    ))
                })?;
                o.preset = Some(p);
                o.fpixels = Some(p.fast_pixels as i64);
                o.spixels = Some(p.slow_pixels as i64);
                o.pixel = Some(p.pixel_mm * mm);
            }
            _ => return Err(Error::usage(format!("unknown flag '{arg}'"))),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Options> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn units_are_converted() {
        let o =
            p("-cell 10 20 30 90 90 90 -lambda 1.5 -distance 100 -pixel 0.1 -detector_thick 450")
                .unwrap();
        assert_eq!(o.cell, Some([10.0, 20.0, 30.0, 90.0, 90.0, 90.0]));
        assert_eq!(o.lambda, Some(1.5e-10));
        assert_eq!(o.distance, Some(0.1));
        assert!((o.detector_thick - 450e-6).abs() < 1e-18);
    }

    #[test]
    fn quirks() {
        let o = p("-twotheta_axis 3 0 0").unwrap();
        assert_eq!(o.convention, Convention::Custom);
        assert!((o.twotheta * RTD - 3.0).abs() < 1e-12);
        assert_eq!(o.pivot, Pivot::Sample);
        let o = p("-misset random -misset_seed 5 1 2").unwrap();
        assert!(!o.misset_random);
        assert_eq!(o.misset, Some([5.0, 1.0, 2.0]));
        let o = p("-misset_seed 5 -misset random").unwrap();
        assert!(o.misset_random);
        assert_eq!(o.misset_seed, -5);
        let o = p("-Xbeam -8 -Ybeam -8").unwrap();
        assert_eq!(o.xbeam, Some(-0.008));
    }

    #[test]
    fn bad_input_names_the_flag() {
        assert!(p("-bogus 1").unwrap_err().message.contains("-bogus"));
        assert!(p("-lambda")
            .unwrap_err()
            .message
            .contains("-lambda: missing value"));
        assert!(p("-lambda abc")
            .unwrap_err()
            .message
            .contains("-lambda: expected a number"));
        assert!(p("-N x").unwrap_err().message.contains("-N"));
        assert!(p("-precision f16")
            .unwrap_err()
            .message
            .contains("-precision"));
    }
}
