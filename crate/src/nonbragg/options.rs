//! `nonbragg`'s flags: upstream nonBragg's names and aliases, with the order effects its
//! substring matching has and real command lines rely on (last flag wins; `-twotheta_axis` also
//! sets two-theta from its first component; `-samplesize` sets all three sample dimensions, so
//! it must come before `-thickness`; the last of `-distance -Xbeam -Ybeam` / `-close_distance
//! -Xclose -Yclose -ORGX -ORGY -twotheta` / `-pivot` picks the pivot). Unlike upstream, an
//! unknown flag, a missing value or a non-numeric value is an error naming the flag.

use crate::args::{Pivot, ANGLE, RTD};
use crate::error::{Error, Result};
use crate::flagwords::FlagWords;
use crate::io::stol::StolUnit;
use crate::vec3::V3;

/// Settings as given, in upstream's internal units (m, rad, g/m^3).
#[derive(Clone, Debug)]
pub struct NonBraggOptions {
    pub stol: Option<(String, StolUnit)>,
    pub sourcefile: Option<String>,
    pub floatfile: String,
    pub intfile: String,
    pub pgmfile: String,
    pub noisefile: String,
    pub cbffile: Option<String>,
    pub write_noise: bool,
    pub write_pgm: bool,
    // sample
    pub sample_x: f64,
    pub sample_y: f64,
    pub sample_z: f64,
    pub density: f64,
    pub molecular_weight: f64,
    /// 0: computed from the volume and density.
    pub molecules: f64,
    // beam
    pub lambda: f64,
    pub dispersion: f64,
    pub dispsteps: i64,
    pub hdivrange: f64,
    pub vdivrange: f64,
    pub hdivstep: f64,
    pub vdivstep: f64,
    pub hdivsteps: i64,
    pub vdivsteps: i64,
    pub round_div: bool,
    pub fluence: f64,
    pub flux: f64,
    pub exposure: f64,
    pub beamsize: f64,
    pub polar: f64,
    pub nopolar: bool,
    pub beam_vector: V3,
    pub polar_vector: V3,
    pub source_distance: f64,
    // detector
    pub preset: Option<&'static crate::presets::DetectorPreset>,
    pub pixel: f64,
    pub detsize_x: f64,
    pub detsize_y: f64,
    pub fpixels: Option<usize>,
    pub spixels: Option<usize>,
    pub distance: f64,
    pub close_distance: Option<f64>,
    pub xbeam: Option<f64>,
    pub ybeam: Option<f64>,
    pub xclose: Option<f64>,
    pub yclose: Option<f64>,
    pub orgx: Option<f64>,
    pub orgy: Option<f64>,
    pub pivot: Pivot,
    pub fdet_vector: V3,
    pub sdet_vector: V3,
    pub twotheta_axis: V3,
    pub twotheta: f64,
    pub rotx: f64,
    pub roty: f64,
    pub rotz: f64,
    pub curved: bool,
    pub point_pixel: bool,
    pub fmap: bool,
    pub oversample: i64,
    pub roi: Option<[i64; 4]>,
    // output
    pub scale: f64,
    pub pgmscale: f64,
    pub adc: f64,
    /// Stored negated (`-seed N` -> -N); `None`: from the clock.
    pub seed: Option<i64>,
    pub phi0: f64,
    pub osc: Option<f64>,
    pub phistep: f64,
    pub phisteps: i64,
    pub progress: bool,
    pub threads: Option<usize>,
    pub warnings: Vec<String>,
}

impl Default for NonBraggOptions {
    fn default() -> Self {
        NonBraggOptions {
            stol: None,
            sourcefile: None,
            floatfile: "floatimage.bin".into(),
            intfile: "intimage.img".into(),
            pgmfile: "image.pgm".into(),
            noisefile: "noiseimage.img".into(),
            cbffile: None,
            write_noise: true,
            write_pgm: true,
            sample_x: 1e-4,
            sample_y: 1e-4,
            sample_z: 1e-4,
            density: 1.0e6,
            molecular_weight: 18.0,
            molecules: 0.0,
            lambda: 1.0e-10,
            dispersion: 0.0,
            dispsteps: -1,
            hdivrange: -1.0,
            vdivrange: -1.0,
            hdivstep: -1.0,
            vdivstep: -1.0,
            hdivsteps: -1,
            vdivsteps: -1,
            round_div: true,
            fluence: 125932015286227086360700780544.0,
            flux: 0.0,
            exposure: 1.0,
            beamsize: 1e-4,
            polar: 0.0,
            nopolar: false,
            beam_vector: [1.0, 0.0, 0.0],
            polar_vector: [0.0, 0.0, 1.0],
            source_distance: 10.0,
            preset: None,
            pixel: 1e-4,
            detsize_x: 0.1024,
            detsize_y: 0.1024,
            fpixels: None,
            spixels: None,
            distance: 0.1,
            close_distance: None,
            xbeam: None,
            ybeam: None,
            xclose: None,
            yclose: None,
            orgx: None,
            orgy: None,
            pivot: Pivot::Beam,
            fdet_vector: [0.0, 0.0, 1.0],
            sdet_vector: [0.0, -1.0, 0.0],
            twotheta_axis: [0.0, 1.0, 0.0],
            twotheta: 0.0,
            rotx: 0.0,
            roty: 0.0,
            rotz: 0.0,
            curved: false,
            point_pixel: false,
            fmap: false,
            oversample: -1,
            roi: None,
            scale: 0.0,
            pgmscale: 0.0,
            adc: 40.0,
            seed: None,
            phi0: 0.0,
            osc: None,
            phistep: -1.0,
            phisteps: -1,
            progress: true,
            threads: None,
            warnings: Vec::new(),
        }
    }
}

pub const USAGE: &str = "\
usage: nonbragg -stol water.stol [options]
  -stol FILE | -4stol FILE | -Q FILE   table of sin(theta)/lambda (or 4 stol, or Q) and F
  sample:  -thickness mm -samplesize mm -width mm -height mm -density g/cm^3 -MW g/mol
           -sample_molecules n
  beam:    -lambda A | -energy eV  -dispersion % -dispsteps n  -divergence mrad -divsteps n
           -hdivrange -vdivrange -hdivstep -vdivstep -hdivsteps -vdivsteps -round_div -square_div
           -fluence ph/m^2 | -flux ph/s -exposure s -beamsize mm  -sourcefile FILE
           -polar K | -nopolar  -polar_vector x y z  -beam_vector x y z
  detector: -distance mm | -close_distance mm  -detpixels n -pixel mm -detsize mm
           -Xbeam -Ybeam mm | -Xclose -Yclose mm | -ORGX -ORGY px  -pivot beam|sample
           -detector_rotx/y/z deg -twotheta deg -twotheta_axis x y z -fdet_vector -sdet_vector
           -curved_det -point_pixel -oversample n -roi x0 x1 y0 y1  -detector NAME (a preset)
  output:  -floatfile F -intfile F -pgmfile F -noisefile F -cbffile F -nonoise -nopgm
           -scale s -pgmscale s -adc ADU -seed n -Fmap  -phi deg -osc deg (header)
  added by this port: -threads N
";

/// Parses nonbragg's words.
pub fn parse(words: &[String]) -> Result<NonBraggOptions> {
    let mut o = NonBraggOptions::default();
    let mut w = FlagWords::new(words);
    while let Some(arg) = w.next_flag() {
        if !arg.starts_with('-') || arg.len() < 2 {
            return Err(Error::usage(format!(
                "unexpected argument '{arg}' (values must follow a flag)"
            )));
        }
        match arg.as_str() {
            // ---- tables and files
            "-stol" => o.stol = Some((w.text()?, StolUnit::Stol)),
            "-4stol" => o.stol = Some((w.text()?, StolUnit::FourStol)),
            "-Q" => o.stol = Some((w.text()?, StolUnit::Q)),
            "-sourcefile" => o.sourcefile = Some(w.text()?),
            "-floatfile" | "-floatimage" => o.floatfile = w.text()?,
            "-intfile" | "-intimage" => o.intfile = w.text()?,
            "-pgmfile" | "-pgmimage" => o.pgmfile = w.text()?,
            "-noisefile" | "-noiseimage" => {
                o.noisefile = w.text()?;
                o.write_noise = true;
            }
            "-cbffile" => o.cbffile = Some(w.text()?),
            "-nonoise" => o.write_noise = false,
            "-nopgm" => o.write_pgm = false,
            "-img" => {
                return Err(w.error(
                    "comparing with an input image (and -stolout, -ignore, -noreject) is not supported by this port",
                ))
            }
            // ---- sample
            "-samplesize" | "-sample_size" => {
                let v = w.positive()? / 1000.0;
                (o.sample_x, o.sample_y, o.sample_z) = (v, v, v);
            }
            "-thickness" | "-thick" | "-sample_thick" | "-sample_thickness" | "-sample_x" => {
                o.sample_x = w.positive()? / 1000.0
            }
            "-width" | "-sample_width" | "-sample_y" => o.sample_y = w.positive()? / 1000.0,
            "-height" | "-sample_height" | "-sample_z" => o.sample_z = w.positive()? / 1000.0,
            "-density" | "-sample_density" => o.density = w.positive()? * 1e6,
            "-molecules" | "-sample_molecules" => o.molecules = w.positive()?,
            "-MW" | "-molecular_weight" => o.molecular_weight = w.positive()?,
            // ---- beam
            "-lambda" | "-wave" | "-wavelength" => o.lambda = w.positive()? / 1e10,
            "-energy" => o.lambda = 12398.42 / w.positive()? / 1e10,
            "-dispersion" => o.dispersion = w.non_negative()? / 100.0,
            "-dispsteps" => o.dispsteps = w.int()?,
            "-divergence" => {
                let v = w.non_negative()? / 1000.0;
                (o.hdivrange, o.vdivrange) = (v, v);
            }
            "-hdivrange" => o.hdivrange = w.non_negative()? / 1000.0,
            "-vdivrange" => o.vdivrange = w.non_negative()? / 1000.0,
            "-hdivstep" => o.hdivstep = w.non_negative()? / 1000.0,
            "-vdivstep" => o.vdivstep = w.non_negative()? / 1000.0,
            "-hdivsteps" => o.hdivsteps = w.int()?,
            "-vdivsteps" => o.vdivsteps = w.int()?,
            "-divsteps" => {
                let n = w.int()?;
                (o.hdivsteps, o.vdivsteps) = (n, n);
            }
            "-round_div" => o.round_div = true,
            "-square_div" => o.round_div = false,
            "-fluence" => o.fluence = w.non_negative()?,
            "-flux" => o.flux = w.non_negative()?,
            "-exposure" => o.exposure = w.non_negative()?,
            "-beamsize" => o.beamsize = w.non_negative()? / 1000.0,
            "-polar" => {
                // the Kahn factor: -1..1 (upstream takes any number)
                o.polar = w.between(-1.0, 1.0)?;
                o.nopolar = false;
            }
            "-nopolar" => o.nopolar = true,
            "-beam_vector" => o.beam_vector = w.vec3()?,
            "-polar_vector" => o.polar_vector = w.vec3()?,
            "-source_distance" => {
                o.source_distance = w.positive()? / 1000.0;
                o.warnings
                    .push("-source_distance: only a source's direction counts; no effect".into());
            }
            "-coherent" => o
                .warnings
                .push("-coherent has no effect in nonBragg; ignored".into()),
            // ---- detector
            "-detector" => {
                let name = w.text()?;
                let p = crate::presets::lookup(&name).map_err(|m| w.error(m))?;
                o.preset = Some(p);
                o.fpixels = Some(p.fast_pixels);
                o.spixels = Some(p.slow_pixels);
                o.pixel = p.pixel_mm / 1000.0;
            }
            "-pixel" => o.pixel = w.positive()? / 1000.0,
            "-detsize" => {
                let v = w.positive()? / 1000.0;
                (o.detsize_x, o.detsize_y) = (v, v);
            }
            "-detsize_x" | "-detsize_f" => o.detsize_x = w.positive()? / 1000.0,
            "-detsize_y" | "-detsize_s" => o.detsize_y = w.positive()? / 1000.0,
            "-detpixels" => {
                let n = w.count()?;
                (o.fpixels, o.spixels) = (Some(n), Some(n));
            }
            "-detpixels_f" | "-detpixels_x" => o.fpixels = Some(w.count()?),
            "-detpixels_s" | "-detpixels_y" => o.spixels = Some(w.count()?),
            "-distance" => {
                o.distance = w.positive()? / 1000.0;
                o.pivot = Pivot::Beam;
            }
            "-close_distance" => {
                o.close_distance = Some(w.positive()? / 1000.0);
                o.pivot = Pivot::Sample;
            }
            "-Xbeam" => {
                o.xbeam = Some(w.f64()? / 1000.0);
                o.pivot = Pivot::Beam;
            }
            "-Ybeam" => {
                o.ybeam = Some(w.f64()? / 1000.0);
                o.pivot = Pivot::Beam;
            }
            "-Xclose" => {
                o.xclose = Some(w.f64()? / 1000.0);
                o.pivot = Pivot::Sample;
            }
            "-Yclose" => {
                o.yclose = Some(w.f64()? / 1000.0);
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
                o.pivot = if v.contains("sample") {
                    Pivot::Sample
                } else if v.contains("beam") {
                    Pivot::Beam
                } else {
                    return Err(w.error(format_args!("expected 'sample' or 'beam', found '{v}'")));
                };
            }
            "-fdet_vector" => o.fdet_vector = w.vec3()?,
            "-sdet_vector" => o.sdet_vector = w.vec3()?,
            "-odet_vector" | "-pix0_vector" | "-spindle_axis" => {
                w.vec3()?;
                o.warnings.push(format!(
                    "{arg}: recomputed (or unused) by nonBragg; the value has no effect"
                ));
            }
            "-twotheta_axis" => {
                // within ±ANGLE like -twotheta, which upstream also sets from the first component
                let v = [
                    w.between(-ANGLE, ANGLE)?,
                    w.between(-ANGLE, ANGLE)?,
                    w.between(-ANGLE, ANGLE)?,
                ];
                o.twotheta_axis = v;
                // upstream's substring match also runs -twotheta with the first component
                o.twotheta = v[0] / RTD;
                o.pivot = Pivot::Sample;
            }
            "-twotheta" => {
                o.twotheta = w.between(-ANGLE, ANGLE)? / RTD;
                o.pivot = Pivot::Sample;
            }
            "-detector_rotx" => o.rotx = w.between(-ANGLE, ANGLE)? / RTD,
            "-detector_roty" => o.roty = w.between(-ANGLE, ANGLE)? / RTD,
            "-detector_rotz" => o.rotz = w.between(-ANGLE, ANGLE)? / RTD,
            "-curved_det" => {
                if w.remaining() >= 1 {
                    o.curved = true;
                } else {
                    o.warnings.push(
                        "-curved_det as the last argument is ignored (as upstream does)".into(),
                    );
                }
            }
            "-point_pixel" => o.point_pixel = true,
            "-Fmap" => o.fmap = true,
            "-oversample" => o.oversample = w.int()?,
            "-roi" => o.roi = Some([w.int()?, w.int()?, w.int()?, w.int()?]),
            // ---- output
            "-scale" => o.scale = w.f64()?,
            "-pgmscale" => o.pgmscale = w.f64()?,
            "-adc" | "-adcoffset" => o.adc = w.f64()?,
            "-gain" => {
                w.f64()?;
                o.warnings
                    .push("-gain is only used with -img in nonBragg; ignored".into());
            }
            "-seed" => o.seed = Some(-w.seed()?),
            "-phi" => o.phi0 = w.between(-ANGLE, ANGLE)? / RTD,
            "-osc" => o.osc = Some(w.between(-ANGLE, ANGLE)? / RTD),
            "-phistep" => o.phistep = w.between(-ANGLE, ANGLE)? / RTD,
            "-phisteps" => o.phisteps = w.int()?,
            "-progress" => o.progress = true,
            "-noprogress" => o.progress = false,
            "-threads" => o.threads = Some(w.count()?),
            _ => return Err(Error::usage(format!("unknown flag '{arg}'"))),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<NonBraggOptions> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn order_effects_and_units() {
        let o = p("-samplesize 0.2 -thickness 0.5 -density 0.0012 -MW 29 -4stol w.txt").unwrap();
        assert_eq!(
            (o.sample_x, o.sample_y, o.sample_z),
            (0.5e-3, 0.2e-3, 0.2e-3)
        );
        assert_eq!(o.density, 1200.0);
        assert_eq!(o.stol, Some(("w.txt".into(), StolUnit::FourStol)));
        let o = p("-Xclose 8.5 -Yclose 11.2 -distance 70").unwrap();
        assert_eq!(o.pivot, Pivot::Beam);
        let o = p("-twotheta_axis 3 1 0").unwrap();
        assert_eq!(o.pivot, Pivot::Sample);
        assert!((o.twotheta * RTD - 3.0).abs() < 1e-12);
        let o = p("-noisefile n.img -nonoise").unwrap();
        assert!(!o.write_noise);
        let o = p("-nonoise -noisefile n.img").unwrap();
        assert!(o.write_noise);
        let o = p("-detector eiger2-4m -pixel 0.1").unwrap();
        assert_eq!(
            (o.fpixels, o.spixels, o.pixel),
            (Some(2068), Some(2162), 1e-4)
        );
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = |s: &str| p(s).unwrap_err().message;
        assert_eq!(e("-stol"), "-stol: missing value");
        assert_eq!(e("-bogus"), "unknown flag '-bogus'");
        assert_eq!(e("-thickness -1"), "-thickness: must be positive, found -1");
        assert_eq!(
            e("-pivot middle"),
            "-pivot: expected 'sample' or 'beam', found 'middle'"
        );
        assert!(e("-detector pilatus2m")
            .starts_with("-detector: unknown detector 'pilatus2m' (known: pilatus6m"));
        assert!(e("-img x.img").starts_with("-img: comparing with an input image"));
        assert_eq!(
            e("water.stol"),
            "unexpected argument 'water.stol' (values must follow a flag)"
        );
    }
}
