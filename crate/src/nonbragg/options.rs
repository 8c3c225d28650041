//! `nonbragg`'s flags: one table (`flags()`) of the rows it shares with nanobragg (detector,
//! beam, goniometer and output rows of `args::FLAGS`, stored in the nanobragg `Options` it holds,
//! `geo`) and its own (the `.stol` table, the amorphous sample, and the flags whose effect
//! differs from nanobragg's). Upstream nonBragg's order effects, which its substring matching
//! has and real command lines rely on, are kept: last flag wins; `-twotheta_axis` also sets
//! two-theta from its first component; `-samplesize` sets all three sample dimensions, so it must
//! come before `-thickness`; the last of `-distance -Xbeam -Ybeam` / `-close_distance -Xclose
//! -Yclose -ORGX -ORGY -twotheta` / `-pivot` picks the pivot. Unlike upstream, an unknown flag
//! (with the nearest name suggested), a missing value or a value out of range is an error naming
//! the flag.

use crate::args::{
    help_text, own, parse_with, shared, Check, Flag, Geometry, Group, Kind, Options, Parser,
};
use crate::error::Result;
use crate::io::stol::StolUnit;
use crate::vec3::V3;
use std::sync::LazyLock;

/// Settings as given, in upstream's internal units (m, rad, g/m^3). The detector, beam,
/// goniometer and output settings are nanobragg's (`geo`: not given is `None` there, nonBragg's
/// defaults come from the accessors below).
#[derive(Clone, Debug)]
pub struct NonBraggOptions {
    pub geo: Options,
    pub stol: Option<(String, StolUnit)>,
    // sample
    pub sample_x: f64,
    pub sample_y: f64,
    pub sample_z: f64,
    pub density: f64,
    pub molecular_weight: f64,
    /// 0: computed from the volume and density.
    pub molecules: f64,
    pub source_distance: f64,
    pub fmap: bool,
}

impl Default for NonBraggOptions {
    fn default() -> Self {
        NonBraggOptions {
            geo: Options::default(),
            stol: None,
            sample_x: 1e-4,
            sample_y: 1e-4,
            sample_z: 1e-4,
            density: 1.0e6,
            molecular_weight: 18.0,
            molecules: 0.0,
            source_distance: 10.0,
            fmap: false,
        }
    }
}

impl Geometry for NonBraggOptions {
    fn geometry(&mut self) -> &mut Options {
        &mut self.geo
    }
}

/// nonBragg's defaults for what nanobragg leaves unset (m, rad).
impl NonBraggOptions {
    pub fn lambda(&self) -> f64 {
        self.geo.lambda.unwrap_or(1.0e-10)
    }
    pub fn pixel(&self) -> f64 {
        self.geo.pixel.unwrap_or(1e-4)
    }
    pub fn distance(&self) -> f64 {
        self.geo.distance.unwrap_or(0.1)
    }
    /// The detector's size along fast and slow (`-detsize`; pixel counts take precedence).
    pub fn detsize(&self) -> (f64, f64) {
        (
            self.geo.detsize_f.unwrap_or(0.1024),
            self.geo.detsize_s.unwrap_or(0.1024),
        )
    }
    pub fn pixels(&self) -> (Option<usize>, Option<usize>) {
        let n = |v: Option<i64>| v.map(|n| n.max(0) as usize);
        (n(self.geo.fpixels), n(self.geo.spixels))
    }
    pub fn beam_vector(&self) -> V3 {
        self.geo.beam_vector.unwrap_or([1.0, 0.0, 0.0])
    }
    pub fn polar_vector(&self) -> V3 {
        self.geo.polar_vector.unwrap_or([0.0, 0.0, 1.0])
    }
    pub fn fdet_vector(&self) -> V3 {
        self.geo.fdet_vector.unwrap_or([0.0, 0.0, 1.0])
    }
    pub fn sdet_vector(&self) -> V3 {
        self.geo.sdet_vector.unwrap_or([0.0, -1.0, 0.0])
    }
    pub fn twotheta_axis(&self) -> V3 {
        self.geo.twotheta_axis.unwrap_or([0.0, 1.0, 0.0])
    }
    pub fn phi0(&self) -> f64 {
        self.geo.phi0.unwrap_or(0.0)
    }
}

/// The rows nonbragg shares with nanobragg, by name (their handlers store into `geo`).
const SHARED: &[&str] = &[
    // beam
    "-lambda",
    "-energy",
    "-dispersion",
    "-dispsteps",
    "-divergence",
    "-hdivrange",
    "-vdivrange",
    "-hdivstep",
    "-vdivstep",
    "-divsteps",
    "-hdivsteps",
    "-vdivsteps",
    "-round_div",
    "-square_div",
    "-sourcefile",
    "-beam_vector",
    "-polar_vector",
    "-polar",
    "-nopolar",
    "-fluence",
    "-flux",
    "-exposure",
    "-beamsize",
    // detector
    "-detector",
    "-pixel",
    "-detpixels",
    "-detpixels_f",
    "-detpixels_s",
    "-detsize",
    "-detsize_f",
    "-detsize_s",
    "-distance",
    "-close_distance",
    "-Xbeam",
    "-Ybeam",
    "-Xclose",
    "-Yclose",
    "-ORGX",
    "-ORGY",
    "-pivot",
    "-fdet_vector",
    "-sdet_vector",
    "-twotheta_axis",
    "-twotheta",
    "-detector_rotx",
    "-detector_roty",
    "-detector_rotz",
    "-curved_det",
    "-point_pixel",
    "-oversample",
    "-roi",
    // goniometer (the header's angles)
    "-phi",
    "-osc",
    "-phistep",
    "-phisteps",
    // output
    "-floatfile",
    "-intfile",
    "-noisefile",
    "-cbffile",
    "-nonoise",
    "-nopgm",
    "-scale",
    "-adc",
    "-seed",
    "-progress",
    "-noprogress",
    "-threads",
    "-help",
];

/// mm → m, a positive length.
const MM: Check = Check::Positive(1e6);

fn warn(p: &mut Parser<'_, NonBraggOptions>, what: String) {
    p.o.geo.warnings.push(what);
}

/// nonbragg's own rows.
static OWN: &[Flag<NonBraggOptions>] = &[
    own::<NonBraggOptions>("-stol", Group::StructureFactors, "FILE", "table of sin(θ)/λ (Å⁻¹) and F, one pair per line", |p| {
        p.o.stol = Some((p.text()?, StolUnit::Stol));
        Ok(())
    })
    .kind(Kind::InputFile),
    own::<NonBraggOptions>("-4stol", Group::StructureFactors, "FILE", "the table with 4·sin(θ)/λ in its first column", |p| {
        p.o.stol = Some((p.text()?, StolUnit::FourStol));
        Ok(())
    })
    .kind(Kind::InputFile),
    own::<NonBraggOptions>("-Q", Group::StructureFactors, "FILE", "the table with Q = 4π·sin(θ)/λ in its first column", |p| {
        p.o.stol = Some((p.text()?, StolUnit::Q));
        Ok(())
    })
    .kind(Kind::InputFile),
    own::<NonBraggOptions>("-img", Group::Detector, "FILE", "not supported by this port (comparing with an input image)", |p| {
        Err(p.err(
            "comparing with an input image (and -stolout, -ignore, -noreject) is not supported by this port",
        ))
    })
    .kind(Kind::InputFile),
    own::<NonBraggOptions>("-samplesize", Group::Sample, "mm", "sample size along x, y and z (give it before -thickness)", |p| {
        let v = p.f64()? / 1000.0;
        (p.o.sample_x, p.o.sample_y, p.o.sample_z) = (v, v, v);
        Ok(())
    })
    .aka(&["-sample_size"])
    .check(MM),
    own::<NonBraggOptions>("-thickness", Group::Sample, "mm", "sample thickness along the beam (x)", |p| {
        p.o.sample_x = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-thick", "-sample_thick", "-sample_thickness", "-sample_x"])
    .check(MM),
    own::<NonBraggOptions>("-width", Group::Sample, "mm", "sample width (y; clipped to the beam)", |p| {
        p.o.sample_y = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-sample_width", "-sample_y"])
    .check(MM),
    own::<NonBraggOptions>("-height", Group::Sample, "mm", "sample height (z; clipped to the beam)", |p| {
        p.o.sample_z = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-sample_height", "-sample_z"])
    .check(MM),
    own::<NonBraggOptions>("-density", Group::Sample, "g/cm³", "sample density (default 1)", |p| {
        p.o.density = p.f64()? * 1e6;
        Ok(())
    })
    .aka(&["-sample_density"])
    .check(Check::Positive(1e30)),
    own::<NonBraggOptions>("-molecules", Group::Sample, "n", "molecules in the illuminated volume (sets the density)", |p| {
        p.o.molecules = p.f64()?;
        Ok(())
    })
    .aka(&["-sample_molecules"])
    .check(Check::Positive(1e300)),
    own::<NonBraggOptions>("-MW", Group::Sample, "g/mol", "molecular weight (default 18)", |p| {
        p.o.molecular_weight = p.f64()?;
        Ok(())
    })
    .aka(&["-molecular_weight"])
    .check(Check::Positive(1e30)),
    own::<NonBraggOptions>("-source_distance", Group::Beam, "mm", "accepted; only a source's direction counts (no effect)", |p| {
        p.o.source_distance = p.f64()? / 1000.0;
        warn(p, "-source_distance: only a source's direction counts; no effect".into());
        Ok(())
    })
    .kind(Kind::NoEffect)
    .check(MM),
    own::<NonBraggOptions>("-coherent", Group::Beam, "", "accepted, no effect in nonBragg", |p| {
        warn(p, "-coherent has no effect in nonBragg; ignored".into());
        Ok(())
    })
    .kind(Kind::NoEffect),
    own::<NonBraggOptions>("-detsize_x", Group::Detector, "mm", "detector size along the fast axis (as -detsize_f)", |p| {
        p.o.geo.detsize_f = Some(p.f64()? / 1000.0);
        Ok(())
    })
    .check(MM),
    own::<NonBraggOptions>("-detsize_y", Group::Detector, "mm", "detector size along the slow axis (as -detsize_s)", |p| {
        p.o.geo.detsize_s = Some(p.f64()? / 1000.0);
        Ok(())
    })
    .check(MM),
    own::<NonBraggOptions>("-odet_vector", Group::Detector, "x y z", "accepted; nonBragg recomputes it (no effect)", |p| {
        p.vec3()?;
        let w = format!("{}: recomputed (or unused) by nonBragg; the value has no effect", p.flag);
        warn(p, w);
        Ok(())
    })
    .aka(&["-pix0_vector", "-spindle_axis"])
    .kind(Kind::NoEffect),
    own::<NonBraggOptions>("-Fmap", Group::Output, "", "write F (the table's value at each pixel) instead of photons", |p| {
        p.o.fmap = true;
        Ok(())
    })
    .kind(Kind::OutputOption),
    own::<NonBraggOptions>("-pgmfile", Group::Output, "FILE", "8-bit PGM picture (default image.pgm)", |p| {
        p.o.geo.pgmfile = p.text()?;
        Ok(())
    })
    .aka(&["-pgmimage"])
    .kind(Kind::OutputFile),
    own::<NonBraggOptions>("-pgmscale", Group::Output, "s", "PGM scale (≤ 0: auto)", |p| {
        p.o.geo.pgmscale = p.f64()?;
        Ok(())
    })
    .kind(Kind::OutputOption),
    own::<NonBraggOptions>("-gain", Group::Output, "x", "accepted, only used with -img in nonBragg (no effect)", |p| {
        p.f64()?;
        warn(p, "-gain is only used with -img in nonBragg; ignored".into());
        Ok(())
    })
    .kind(Kind::NoEffect),
];

/// nonbragg's flag table: the shared rows it accepts, then its own.
pub fn flags() -> &'static [Flag<NonBraggOptions>] {
    static TABLE: LazyLock<Vec<Flag<NonBraggOptions>>> = LazyLock::new(|| {
        let mut t = shared(SHARED);
        t.extend_from_slice(OWN);
        t
    });
    &TABLE
}

/// The first lines of the usage text: what a run needs.
pub const SHORT_USAGE: &str = "\
usage: nonbragg -stol water.stol [options]
  a table:  -stol FILE (sin(theta)/lambda and F per line; or -4stol FILE, -Q FILE)
  nonbragg -help lists every flag
";

/// `-help`: the usage text, from the table.
pub fn usage() -> String {
    help_text(SHORT_USAGE, flags())
}

/// Parses nonbragg's words.
pub fn parse(words: &[String]) -> Result<NonBraggOptions> {
    let mut o = NonBraggOptions::default();
    parse_with(flags(), words, &mut o, |_, _| false)?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Pivot, RTD};

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
        assert_eq!(o.geo.pivot, Pivot::Beam);
        let o = p("-twotheta_axis 3 1 0").unwrap();
        assert_eq!(o.geo.pivot, Pivot::Sample);
        assert!((o.geo.twotheta * RTD - 3.0).abs() < 1e-12);
        let o = p("-noisefile n.img -nonoise").unwrap();
        assert!(!o.geo.write_noise);
        let o = p("-nonoise -noisefile n.img").unwrap();
        assert!(o.geo.write_noise);
        // nonBragg's -pgmfile does not undo -nopgm (nanobragg's does)
        let o = p("-nopgm -pgmfile p.pgm -pgmscale 2").unwrap();
        assert!(!o.geo.write_pgm);
        let o = p("-detector eiger2-4m -pixel 0.1").unwrap();
        assert_eq!((o.pixels(), o.pixel()), ((Some(2068), Some(2162)), 1e-4));
        // upstream's mm -> m: x / 1000 (189.42 * 1e-3 is one ulp away)
        let o = p("-distance 189.42 -detsize_x 30").unwrap();
        assert_eq!(o.distance(), 189.42 / 1000.0);
        assert_eq!(o.detsize(), (0.03, 0.1024));
        let o = p("").unwrap();
        assert_eq!(
            (o.lambda(), o.pixel(), o.distance(), o.phi0()),
            (1e-10, 1e-4, 0.1, 0.0)
        );
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = |s: &str| p(s).unwrap_err().message;
        assert_eq!(e("-stol"), "-stol: missing value");
        assert_eq!(e("-bogus"), "unknown flag '-bogus'");
        assert_eq!(
            e("-thicknes 1"),
            "unknown flag '-thicknes' (did you mean -thickness?)"
        );
        // a nanobragg flag nonbragg does not take
        assert_eq!(e("-cel 1"), "unknown flag '-cel'");
        assert_eq!(
            e("-thickness -1"),
            "-thickness: expected a number > 0 and ≤ 1000000, found '-1'"
        );
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
        assert_eq!(
            e("-twotheta_axis 0 0 0"),
            "-twotheta_axis: 0 0 0 has no direction: give a non-zero vector"
        );
    }

    #[test]
    fn help_lists_every_flag() {
        let u = usage();
        assert!(u.starts_with("usage: nonbragg"));
        for f in flags() {
            for n in f.names() {
                assert!(u.contains(n), "{n} missing from the help text");
            }
        }
        assert!(u.contains("sample:") && !u.contains("crystal:"));
        // one row per name
        let mut seen = std::collections::HashSet::new();
        for n in flags().iter().flat_map(|f| f.names()) {
            assert!(seen.insert(n), "{n} appears twice");
        }
    }
}
