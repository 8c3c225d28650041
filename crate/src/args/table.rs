//! The flag tables: every flag nanobragg accepts, once (`FLAGS`), and the rows the companion
//! programs share from it (`shared`: detector, beam, goniometer and output rows, each defined
//! once here; `nonbragg` and `noisify` add their own rows, `own`). Each row: Name, aliases, value words, kind,
//! group, range check and one-line help sit beside the handler that stores the value in
//! `Options`; the parser's dispatch, the usage text (`usage()`) and the serialisable list the web
//! front end reads (`api::flag_table()`) are all derived from it.
//!
//! Adding a flag is one row: `flag(name, group, values, help, handler)` plus the builder calls
//! that differ from the defaults (`.aka(..)` aliases, `.kind(..)`, `.check(..)`, `.arity(..)`,
//! `.pixel_units()`). `values` names the value words (`""` for a switch); their count is the
//! arity unless `.arity(min, max)` says otherwise. Checks are applied by the value readers
//! (`Parser::f64`, `Parser::int`, `Parser::vec3`) in the user's units, before any conversion.

use super::{Backend, Convention, Options, Parser, Pivot, Precision, RTD};
pub use crate::check::{Check, ANGLE};
use crate::error::{Error, Result};
use crate::plan::Shape;

/// What a flag's value is, for callers that treat flags by role (the browser strips output
/// files, routes input files to its file store, and handles our own flags itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A file that is read (`-hkl`, `-mat`, `-img`, ...).
    InputFile,
    /// A file that is written (`-floatfile`, ...).
    OutputFile,
    /// A model parameter (crystal, beam, detector, goniometer).
    Model,
    /// How outputs are scaled, seeded or reported (`-scale`, `-seed`, `-nonoise`, ...).
    OutputOption,
    /// Added by this port (`-precision`, `-threads`, `-backend`, ...).
    Ours,
    /// Accepted for upstream compatibility, without effect (a warning says so).
    NoEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// nonbragg's amorphous sample.
    Sample,
    Crystal,
    StructureFactors,
    Goniometer,
    Beam,
    Detector,
    Output,
    /// noisify's detector effects.
    Effects,
    /// Added by this port.
    Port,
}

impl Group {
    pub const ALL: [Group; 9] = [
        Group::Sample,
        Group::Crystal,
        Group::StructureFactors,
        Group::Goniometer,
        Group::Beam,
        Group::Detector,
        Group::Output,
        Group::Effects,
        Group::Port,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Group::Sample => "sample",
            Group::Crystal => "crystal",
            Group::StructureFactors => "structure factors",
            Group::Goniometer => "goniometer",
            Group::Beam => "beam",
            Group::Detector => "detector",
            Group::Output => "output",
            Group::Effects => "detector effects",
            Group::Port => "added by this port",
        }
    }
}

/// What a row does with its values: reads them through the parser into the options.
pub type Handler<O = Options> = fn(&mut Parser<'_, O>) -> Result<()>;

/// A row's handler: a shared row stores into nanobragg's `Options` (for a companion program, the
/// `Options` it holds for its detector and beam, [`Geometry`]); a program's own row into its own
/// options.
pub enum Act<O: 'static> {
    Shared(Handler<Options>),
    Own(Handler<O>),
}

impl<O> Clone for Act<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for Act<O> {}

/// Options that hold nanobragg's `Options` for the shared rows (the detector, beam, goniometer
/// and output settings they store): nanobragg's own, or a companion program's `geo`.
pub trait Geometry: 'static {
    fn geometry(&mut self) -> &mut Options;
}

impl Geometry for Options {
    fn geometry(&mut self) -> &mut Options {
        self
    }
}

/// One row of a table.
pub struct Flag<O: 'static = Options> {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub group: Group,
    pub kind: Kind,
    /// The value words, as the usage text shows them (`""` for a switch).
    pub values: &'static str,
    /// Fewest and most value words.
    pub arity: (u8, u8),
    pub check: Check,
    /// The values count pixels, or the file fixes the pixel grid: a reduced-resolution preview
    /// (fewer, larger pixels) cannot keep this flag.
    pub pixel_units: bool,
    pub help: &'static str,
    pub handler: Act<O>,
}

impl<O> Clone for Flag<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for Flag<O> {}

const fn count_words(s: &str) -> u8 {
    let b = s.as_bytes();
    let (mut i, mut n, mut inside) = (0, 0u8, false);
    while i < b.len() {
        if b[i] == b' ' {
            inside = false;
        } else if !inside {
            inside = true;
            n += 1;
        }
        i += 1;
    }
    n
}

/// A row of nanobragg's table (shareable with the companion programs).
const fn flag(
    name: &'static str,
    group: Group,
    values: &'static str,
    help: &'static str,
    handler: Handler,
) -> Flag {
    row(name, group, values, help, Act::Shared(handler))
}

/// A companion program's own row.
pub const fn own<O>(
    name: &'static str,
    group: Group,
    values: &'static str,
    help: &'static str,
    handler: Handler<O>,
) -> Flag<O> {
    row(name, group, values, help, Act::Own(handler))
}

const fn row<O>(
    name: &'static str,
    group: Group,
    values: &'static str,
    help: &'static str,
    handler: Act<O>,
) -> Flag<O> {
    let n = count_words(values);
    Flag {
        name,
        aliases: &[],
        group,
        kind: Kind::Model,
        values,
        arity: (n, n),
        check: Check::Finite,
        pixel_units: false,
        help,
        handler,
    }
}

impl<O> Flag<O> {
    pub const fn aka(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }
    pub const fn kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }
    pub const fn check(mut self, check: Check) -> Self {
        self.check = check;
        self
    }
    pub const fn arity(mut self, min: u8, max: u8) -> Self {
        self.arity = (min, max);
        self
    }
    pub const fn pixel_units(mut self) -> Self {
        self.pixel_units = true;
        self
    }
    /// The name and the aliases.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// The row for a word as typed (a name or an alias).
pub fn find(word: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.names().any(|n| n == word))
}

/// The rows of nanobragg's table named by `names`, for a companion program's table (the program
/// stores their values in the `Options` it holds, [`Geometry`]). A name that is not a row of
/// `FLAGS` is a programming error (each program's table test builds its table).
pub fn shared<O: Geometry>(names: &[&str]) -> Vec<Flag<O>> {
    names
        .iter()
        .map(|n| {
            let f = FLAGS
                .iter()
                .find(|f| f.name == *n)
                .unwrap_or_else(|| panic!("{n} is not a row of the flag table"));
            let handler = match f.handler {
                Act::Shared(h) | Act::Own(h) => Act::Shared(h),
            };
            Flag {
                name: f.name,
                aliases: f.aliases,
                group: f.group,
                kind: f.kind,
                values: f.values,
                arity: f.arity,
                check: f.check,
                pixel_units: f.pixel_units,
                help: f.help,
                handler,
            }
        })
        .collect()
}

// Limits used by the rows (user units). Counts that multiply into work are checked again as
// products after auto-selection (`sampling::resolve_sampling`, `limits`).
const BIG: f64 = 1e300;
/// Seeds are C `int`s upstream (read with `atoi`).
const SEED: f64 = 2147483647.0;
/// Most pixels per detector side.
const SIDE: f64 = 1e6;
/// Longest length in mm (detector sizes, distances): 1 km.
const MM: f64 = 1e6;

use Check::*;
use Group::*;
use Kind::*;

/// Set the pivot (upstream's parse-time pivot side effects, MODEL §2.4).
fn pivot(p: &mut Parser, v: Pivot) {
    p.o.pivot = v;
}

/// Every flag, in the usage text's order within each group.
pub static FLAGS: &[Flag] = &[
    // ---- crystal
    flag("-cell", Crystal, "a b c α β γ", "unit cell (Å, degrees); b, c ≤ 0 mean a, angles ≤ 0 mean 90", |p| {
        p.cell()
    })
    .arity(1, 6)
    .check(Positive(1e7)),
    flag("-mat", Crystal, "FILE", "MOSFLM orientation matrix (A = UB, λ-scaled Å⁻¹)", |p| {
        p.o.mat = Some(p.text()?);
        Ok(())
    })
    .aka(&["-matrix"])
    .kind(InputFile),
    flag("-N", Crystal, "n", "unit cells along each axis", |p| {
        let n = p.int()? as f64;
        p.o.na = Some(n);
        p.o.nb = Some(n);
        p.o.nc = Some(n);
        Ok(())
    })
    .check(Within(1e7)),
    flag("-Na", Crystal, "n", "unit cells along a", |p| {
        p.o.na = Some(p.int()? as f64);
        Ok(())
    })
    .check(Within(1e7)),
    flag("-Nb", Crystal, "n", "unit cells along b", |p| {
        p.o.nb = Some(p.int()? as f64);
        Ok(())
    })
    .check(Within(1e7)),
    flag("-Nc", Crystal, "n", "unit cells along c", |p| {
        p.o.nc = Some(p.int()? as f64);
        Ok(())
    })
    .check(Within(1e7)),
    flag("-xtalsize", Crystal, "mm", "crystal size along x, y and z (sets the cell counts)", |p| {
        let v = p.f64()? / 1000.0;
        p.o.sample_x = v;
        p.o.sample_y = v;
        p.o.sample_z = v;
        Ok(())
    })
    .aka(&["-samplesize", "-sample_size", "-xtal_size"])
    .check(NonNegative(BIG)),
    flag("-xtal_thick", Crystal, "mm", "crystal size along x (the beam)", |p| {
        p.o.sample_x = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-sample_thick", "-sample_x", "-xtal_x"])
    .check(NonNegative(BIG)),
    flag("-xtal_width", Crystal, "mm", "crystal size along y", |p| {
        p.o.sample_y = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-sample_width", "-sample_y", "-xtal_y", "-width"])
    .check(NonNegative(BIG)),
    flag("-xtal_height", Crystal, "mm", "crystal size along z", |p| {
        p.o.sample_z = p.f64()? / 1000.0;
        Ok(())
    })
    .aka(&["-sample_height", "-sample_z", "-xtal_z", "-height"])
    .check(NonNegative(BIG)),
    flag("-misset", Crystal, "rx ry rz", "rotate the crystal about x, then y, then z (degrees); `random` for a random orientation", |p| {
        if p.peek(0).is_some_and(|t| t.contains("rand")) {
            p.skip(1);
            p.o.misset_random = true;
            p.o.misset = None;
        } else {
            p.o.misset = Some(p.vec3()?);
            p.o.misset_random = false;
        }
        Ok(())
    })
    .arity(1, 3)
    .check(Within(ANGLE)),
    flag("-misset_seed", Crystal, "n", "seed of the random misset (upstream also reads the next three words as -misset angles)", |p| {
        p.misset_seed()
    })
    .arity(1, 3)
    .check(Within(SEED)),
    flag("-mosaic", Crystal, "deg", "mosaic spread", |p| {
        p.o.mosaic_spread = p.f64()? / RTD;
        Ok(())
    })
    .aka(&["-mosaicity", "-mosaic_spread"])
    .check(NonNegative(180.0)),
    flag("-mosaic_dom", Crystal, "n", "mosaic domains", |p| {
        p.o.mosaic_domains = p.int()?;
        Ok(())
    })
    .aka(&["-mosaic_domains"])
    .check(Within(1e6)),
    flag("-mosaic_seed", Crystal, "n", "seed of the mosaic domain orientations", |p| {
        p.o.mosaic_seed = -p.int()?;
        Ok(())
    })
    .check(Within(SEED)),
    flag("-square_xtal", Crystal, "", "parallelepiped crystal: grating lattice factor (default)", |p| {
        p.o.shape = Shape::Square;
        Ok(())
    }),
    flag("-round_xtal", Crystal, "", "spherical crystal: sphere-transform lattice factor", |p| {
        p.o.shape = Shape::Round;
        Ok(())
    }),
    flag("-gauss_xtal", Crystal, "", "Gaussian spots", |p| {
        p.o.shape = Shape::Gauss;
        Ok(())
    }),
    flag("-tophat_spots", Crystal, "", "top-hat spots", |p| {
        p.o.shape = Shape::Tophat;
        Ok(())
    })
    .aka(&["-binary_spots"]),
    flag("-fudge", Crystal, "x", "spot-size factor of the round, Gaussian and top-hat shapes", |p| {
        p.o.fudge = p.f64()?;
        Ok(())
    })
    .check(Positive(1e6)),
    flag("-density", Crystal, "x", "accepted, no effect in nanoBragg", |p| {
        p.f64()?;
        let w = format!("{} has no effect in nanoBragg; ignored", p.flag);
        p.o.warnings.push(w);
        Ok(())
    })
    .aka(&["-sample_density", "-MW", "-molecules"])
    .kind(NoEffect),
    // ---- structure factors
    flag("-hkl", StructureFactors, "FILE", "structure factors, `h k l F` per line", |p| {
        p.o.hkl = Some(p.text()?);
        Ok(())
    })
    .kind(InputFile),
    flag("-pdb", Port, "FILE", "atomic model (PDB or mmCIF): structure factors for every reflection the detector reaches (or to -dmin); the cell unless -cell/-mat", |p| {
        p.o.pdb = Some(p.text()?);
        Ok(())
    })
    .kind(InputFile),
    flag("-hklout", Port, "FILE", "the structure-factor table the run used, `h k l F` per line (readable with -hkl)", |p| {
        p.o.hklout = Some(p.text()?);
        Ok(())
    })
    .kind(OutputFile),
    flag("-default_F", StructureFactors, "F", "structure factor of reflections not in the -hkl file", |p| {
        p.o.default_f = p.f64()?;
        Ok(())
    })
    .check(Within(BIG)),
    flag("-dump", StructureFactors, "FILE", "structure-factor cache (default Fdump.bin): written after -hkl is read, read when no -hkl is given", |p| {
        p.o.dump = p.text()?;
        Ok(())
    })
    .kind(InputFile),
    flag("-interpolate", StructureFactors, "", "tricubic interpolation of structure factors (default: on when a cell count is ≤ 2)", |p| {
        p.o.interpolate = 1;
        Ok(())
    }),
    flag("-nointerpolate", StructureFactors, "", "nearest structure factor", |p| {
        p.o.interpolate = 0;
        Ok(())
    }),
    flag("-stol", StructureFactors, "FILE", "accepted, no effect (upstream reads it but never uses it)", |p| {
        p.o.stol = Some(p.text()?);
        let w = format!("{} is read by upstream but has no effect; ignored", p.flag);
        p.o.warnings.push(w);
        Ok(())
    })
    .aka(&["-4stol", "-Q"])
    .kind(NoEffect),
    // ---- goniometer
    flag("-phi", Goniometer, "deg", "spindle angle at the start", |p| {
        p.o.phi0 = Some(p.f64()? / RTD);
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-osc", Goniometer, "deg", "oscillation range", |p| {
        p.o.osc = Some(p.f64()? / RTD);
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-phistep", Goniometer, "deg", "phi step", |p| {
        p.o.phistep = p.f64()? / RTD;
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-phisteps", Goniometer, "n", "phi steps", |p| {
        p.o.phisteps = p.int()?;
        Ok(())
    })
    .check(Within(1e5)),
    flag("-spindle_axis", Goniometer, "x y z", "phi rotation axis (selects the CUSTOM convention)", |p| {
        p.o.spindle_axis = Some(p.axis()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    // ---- beam
    flag("-lambda", Beam, "Å", "wavelength", |p| {
        p.o.lambda = Some(p.f64()? / 1e10);
        Ok(())
    })
    .aka(&["-wave", "-wavelength"])
    .check(Positive(1e10)),
    flag("-energy", Beam, "eV", "photon energy (sets the wavelength)", |p| {
        p.o.lambda = Some((12398.42 / p.f64()?) / 1e10);
        Ok(())
    })
    .check(Positive(1e30)),
    flag("-dispersion", Beam, "%", "spectral width Δλ/λ", |p| {
        p.o.dispersion = p.f64()? / 100.0;
        Ok(())
    })
    .check(NonNegative(100.0)),
    flag("-dispsteps", Beam, "n", "wavelengths across the spectral width", |p| {
        p.o.dispsteps = p.int()?;
        Ok(())
    })
    .check(Within(1e5)),
    flag("-divergence", Beam, "mrad", "beam divergence, both directions", |p| {
        let v = p.f64()? / 1000.0;
        p.o.hdivrange = v;
        p.o.vdivrange = v;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-hdivrange", Beam, "mrad", "horizontal divergence", |p| {
        p.o.hdivrange = p.f64()? / 1000.0;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-vdivrange", Beam, "mrad", "vertical divergence", |p| {
        p.o.vdivrange = p.f64()? / 1000.0;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-hdivstep", Beam, "mrad", "horizontal divergence step", |p| {
        p.o.hdivstep = p.f64()? / 1000.0;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-vdivstep", Beam, "mrad", "vertical divergence step", |p| {
        p.o.vdivstep = p.f64()? / 1000.0;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-divsteps", Beam, "n", "divergence steps, both directions", |p| {
        let n = p.int()?;
        p.o.hdivsteps = n;
        p.o.vdivsteps = n;
        Ok(())
    })
    .check(Within(1e6)),
    flag("-hdivsteps", Beam, "n", "horizontal divergence steps", |p| {
        p.o.hdivsteps = p.int()?;
        Ok(())
    })
    .check(Within(1e6)),
    flag("-vdivsteps", Beam, "n", "vertical divergence steps", |p| {
        p.o.vdivsteps = p.int()?;
        Ok(())
    })
    .check(Within(1e6)),
    flag("-round_div", Beam, "", "trim the divergence grid to an ellipse (default)", |p| {
        p.o.round_div = true;
        Ok(())
    }),
    flag("-square_div", Beam, "", "keep the whole divergence grid", |p| {
        p.o.round_div = false;
        Ok(())
    }),
    flag("-sourcefile", Beam, "FILE", "sources, `x y z weight λ` per line (m); replaces divergence and dispersion", |p| {
        p.o.sourcefile = Some(p.text()?);
        Ok(())
    })
    .kind(InputFile),
    flag("-beam_vector", Beam, "x y z", "direction of the beam (selects CUSTOM)", |p| {
        p.o.beam_vector = Some(p.axis()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    flag("-polar_vector", Beam, "x y z", "E-vector of the beam (selects CUSTOM)", |p| {
        p.o.polar_vector = Some(p.axis()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    flag("-polar", Beam, "K", "Kahn polarisation factor, -1 to 1 (default 0)", |p| {
        p.o.polar = p.f64()?;
        p.o.nopolar = false;
        Ok(())
    })
    .check(Within(1.0)),
    flag("-nopolar", Beam, "", "no polarisation factor", |p| {
        p.o.nopolar = true;
        Ok(())
    }),
    flag("-fluence", Beam, "ph/m²", "integrated fluence", |p| {
        p.o.fluence = p.f64()?;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-flux", Beam, "ph/s", "flux (fluence = flux × exposure / beamsize²)", |p| {
        p.o.flux = p.f64()?;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-exposure", Beam, "s", "exposure time", |p| {
        p.o.exposure = p.f64()?;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-beamsize", Beam, "mm", "beam width; the crystal is clipped to it (negative: no clipping)", |p| {
        p.o.beamsize = p.f64()? / 1000.0;
        Ok(())
    })
    .check(Within(MM)),
    flag("-water", Beam, "µm", "thickness of water giving a background", |p| {
        p.o.water = p.f64()? / 1e6;
        Ok(())
    })
    .check(NonNegative(1e9)),
    flag("-coherent", Beam, "", "accepted, no effect in nanoBragg", |p| {
        p.o.warnings.push("-coherent has no effect in nanoBragg; ignored".into());
        Ok(())
    })
    .kind(NoEffect),
    // ---- detector
    flag("-mosflm", Detector, "", "MOSFLM convention (default)", |p| {
        p.o.convention = Convention::Mosflm;
        pivot(p, Pivot::Beam);
        Ok(())
    }),
    flag("-xds", Detector, "", "XDS convention", |p| {
        p.o.convention = Convention::Xds;
        pivot(p, Pivot::Sample);
        Ok(())
    }),
    flag("-adxv", Detector, "", "ADXV convention", |p| {
        p.o.convention = Convention::Adxv;
        pivot(p, Pivot::Beam);
        Ok(())
    }),
    flag("-denzo", Detector, "", "DENZO convention", |p| {
        p.o.convention = Convention::Denzo;
        pivot(p, Pivot::Beam);
        Ok(())
    }),
    flag("-dials", Detector, "", "DIALS convention", |p| {
        p.o.convention = Convention::Dials;
        pivot(p, Pivot::Beam);
        Ok(())
    }),
    flag("-pixel", Detector, "mm", "pixel size", |p| {
        p.o.pixel = Some(p.f64()? / 1000.0);
        Ok(())
    })
    .check(Positive(1e3)),
    flag("-detector", Port, "pilatus6m|eiger2-16m|eiger2-4m|mx300", "a real detector: its pixels, pixel size, module gaps (mask) and overload value", |p| {
        let name = p.text()?;
        let d = crate::presets::lookup(&name).map_err(|m| p.err(m))?;
        p.o.preset = Some(d);
        p.o.fpixels = Some(d.fast_pixels as i64);
        p.o.spixels = Some(d.slow_pixels as i64);
        p.o.pixel = Some(d.pixel_mm / 1000.0);
        Ok(())
    }),
    flag("-detpixels", Detector, "n", "pixels per side", |p| {
        let n = p.int()?;
        p.o.fpixels = Some(n);
        p.o.spixels = Some(n);
        Ok(())
    })
    .check(NonNegative(SIDE)),
    flag("-detpixels_f", Detector, "n", "pixels along the fast axis", |p| {
        p.o.fpixels = Some(p.int()?);
        Ok(())
    })
    .aka(&["-detpixels_x"])
    .check(NonNegative(SIDE)),
    flag("-detpixels_s", Detector, "n", "pixels along the slow axis", |p| {
        p.o.spixels = Some(p.int()?);
        Ok(())
    })
    .aka(&["-detpixels_y"])
    .check(NonNegative(SIDE)),
    flag("-detsize", Detector, "mm", "detector side (pixel counts take precedence)", |p| {
        let v = p.f64()? / 1000.0;
        p.o.detsize_f = Some(v);
        p.o.detsize_s = Some(v);
        Ok(())
    })
    .check(Positive(MM)),
    flag("-detsize_f", Detector, "mm", "detector size along the fast axis", |p| {
        p.o.detsize_f = Some(p.f64()? / 1000.0);
        Ok(())
    })
    .check(Positive(MM)),
    flag("-detsize_s", Detector, "mm", "detector size along the slow axis", |p| {
        p.o.detsize_s = Some(p.f64()? / 1000.0);
        Ok(())
    })
    .check(Positive(MM)),
    flag("-distance", Detector, "mm", "sample to beam spot (beam pivot); a negative value is used as positive, as upstream does", |p| {
        let v = p.f64()?;
        if v < 0.0 {
            let w = format!(
                "WARNING: {} {}: a negative distance is used as {} mm (as upstream does)",
                p.flag,
                crate::cfmt::fmt_g(v),
                crate::cfmt::fmt_g(-v)
            );
            p.o.warnings.push(w);
        }
        p.o.distance = Some(v / 1000.0);
        pivot(p, Pivot::Beam);
        Ok(())
    })
    .check(NonZero(MM)),
    flag("-close_distance", Detector, "mm", "sample to detector plane along its normal (sample pivot)", |p| {
        p.o.close_distance = Some(p.f64()? / 1000.0);
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(NonZero(MM)),
    flag("-Xbeam", Detector, "mm", "beam centre, convention's x", |p| {
        p.o.xbeam = Some(p.f64()? / 1000.0);
        pivot(p, Pivot::Beam);
        Ok(())
    })
    .check(Within(MM)),
    flag("-Ybeam", Detector, "mm", "beam centre, convention's y", |p| {
        p.o.ybeam = Some(p.f64()? / 1000.0);
        pivot(p, Pivot::Beam);
        Ok(())
    })
    .check(Within(MM)),
    flag("-Xclose", Detector, "mm", "near point, fast", |p| {
        p.o.xclose = Some(p.f64()? / 1000.0);
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(MM)),
    flag("-Yclose", Detector, "mm", "near point, slow", |p| {
        p.o.yclose = Some(p.f64()? / 1000.0);
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(MM)),
    flag("-ORGX", Detector, "px", "XDS origin, fast (pixels)", |p| {
        p.o.orgx = Some(p.f64()?);
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(1e9))
    .pixel_units(),
    flag("-ORGY", Detector, "px", "XDS origin, slow (pixels)", |p| {
        p.o.orgy = Some(p.f64()?);
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(1e9))
    .pixel_units(),
    flag("-pivot", Detector, "sample|beam", "what the detector rotates about (CUSTOM convention only)", |p| {
        let v = p.text()?;
        if v.contains("sample") {
            pivot(p, Pivot::Sample);
        } else if v.contains("beam") {
            pivot(p, Pivot::Beam);
        } else {
            return Err(Error::usage(format!(
                "{}: expected 'sample' or 'beam', found '{v}'",
                p.flag
            )));
        }
        Ok(())
    }),
    flag("-fdet_vector", Detector, "x y z", "fast axis (selects CUSTOM)", |p| {
        p.o.fdet_vector = Some(p.axis()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    flag("-sdet_vector", Detector, "x y z", "slow axis (selects CUSTOM)", |p| {
        p.o.sdet_vector = Some(p.axis()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    flag("-odet_vector", Detector, "x y z", "detector normal (selects CUSTOM)", |p| {
        p.o.odet_vector = Some(p.vec3()?);
        p.o.convention = Convention::Custom;
        Ok(())
    }),
    flag("-twotheta_axis", Detector, "x y z", "two-theta axis (selects CUSTOM; upstream also sets two-theta to x degrees)", |p| {
        let v = p.axis()?;
        p.o.twotheta_axis = Some(v);
        p.o.convention = Convention::Custom;
        // upstream's substring match also runs -twotheta with the first component
        p.o.twotheta = v[0] / RTD;
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-pix0_vector", Detector, "x y z", "accepted; upstream recomputes pix0, the flag only selects CUSTOM", |p| {
        p.vec3()?;
        p.o.convention = Convention::Custom;
        let w = format!("{}: upstream recomputes pix0 from the beam centre; the value only selects the CUSTOM convention", p.flag);
        p.o.warnings.push(w);
        Ok(())
    })
    .aka(&["-pix0_vector_mm"])
    .pixel_units(),
    flag("-twotheta", Detector, "deg", "detector swing about the two-theta axis", |p| {
        p.o.twotheta = p.f64()? / RTD;
        pivot(p, Pivot::Sample);
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-detector_rotx", Detector, "deg", "detector rotation about x", |p| {
        p.o.rotx = p.f64()? / RTD;
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-detector_roty", Detector, "deg", "detector rotation about y", |p| {
        p.o.roty = p.f64()? / RTD;
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-detector_rotz", Detector, "deg", "detector rotation about z", |p| {
        p.o.rotz = p.f64()? / RTD;
        Ok(())
    })
    .check(Within(ANGLE)),
    flag("-curved_det", Detector, "", "spherical detector (upstream ignores it as the last word)", |p| {
        if p.remaining() >= 1 {
            p.o.curved_det = true;
        } else {
            p.o
                .warnings
                .push("-curved_det as the last argument is ignored (as upstream does)".into());
        }
        Ok(())
    }),
    flag("-point_pixel", Detector, "", "solid angle 1/R² (no obliquity)", |p| {
        p.o.point_pixel = true;
        Ok(())
    }),
    flag("-detector_abs", Detector, "µm", "attenuation depth of the sensor; inf or 0: no absorption", |p| {
        let v = p.f64_allowing_inf()?;
        if v.is_infinite() || v == 0.0 {
            p.o.detector_thick = 0.0;
            p.o.detector_mu = 0.0;
        } else {
            p.o.detector_mu = 1.0 / (v * 1e-6);
        }
        Ok(())
    })
    .aka(&["-detector_absorb", "-detector_absorption"])
    .check(NonNegative(BIG)),
    flag("-detector_thick", Detector, "µm", "sensor thickness", |p| {
        p.o.detector_thick = p.f64()? * 1e-6;
        Ok(())
    })
    .check(NonNegative(1e6)),
    flag("-detector_thicksteps", Detector, "n", "sensor layers", |p| {
        p.o.detector_thicksteps = p.int()?;
        Ok(())
    })
    .aka(&["-thicksteps"])
    .check(Within(1e4)),
    flag("-oversample", Detector, "n", "sub-pixels per axis (default: auto)", |p| {
        p.o.oversample = p.int()?;
        Ok(())
    })
    .check(Within(1000.0)),
    flag("-oversample_thick", Detector, "", "capture fraction per sub-pixel", |p| {
        p.o.oversample_thick = true;
        Ok(())
    }),
    flag("-oversample_polar", Detector, "", "polarisation per sub-pixel", |p| {
        p.o.oversample_polar = true;
        Ok(())
    }),
    flag("-oversample_omega", Detector, "", "solid angle per sub-pixel", |p| {
        p.o.oversample_omega = true;
        Ok(())
    }),
    flag("-roi", Detector, "xmin xmax ymin ymax", "render only these pixels (inclusive; negative: the edge)", |p| {
        p.o.roi = Some([p.int()?, p.int()?, p.int()?, p.int()?]);
        Ok(())
    })
    .check(Within(1e9))
    .pixel_units(),
    flag("-dmin", Detector, "Å", "skip contributions with resolution d < dmin", |p| {
        p.o.dmin = p.f64()? * 1e-10;
        Ok(())
    })
    .check(NonNegative(BIG)),
    flag("-mask", Detector, "FILE", "SMV mask: pixels that are 0 are not rendered; its header sets the detector", |p| {
        p.o.mask = Some(p.text()?);
        Ok(())
    })
    .kind(InputFile)
    .pixel_units(),
    flag("-img", Detector, "FILE", "SMV image whose header sets the detector, wavelength and phi", |p| {
        p.o.img = Some(p.text()?);
        Ok(())
    })
    .kind(InputFile)
    .pixel_units(),
    // ---- output
    flag("-floatfile", Output, "FILE", "raw f32 image (default floatimage.bin)", |p| {
        p.o.floatfile = p.text()?;
        Ok(())
    })
    .aka(&["-floatimage"])
    .kind(OutputFile),
    flag("-intfile", Output, "FILE", "SMV image without noise (default intimage.img)", |p| {
        p.o.intfile = p.text()?;
        Ok(())
    })
    .aka(&["-intimage"])
    .kind(OutputFile),
    flag("-noisefile", Output, "FILE", "SMV image with Poisson noise (default noiseimage.img)", |p| {
        p.o.noisefile = p.text()?;
        p.o.write_noise = true;
        Ok(())
    })
    .aka(&["-noiseimage"])
    .kind(OutputFile),
    flag("-pgmfile", Output, "FILE", "8-bit PGM picture (default image.pgm)", |p| {
        p.o.pgmfile = p.text()?;
        p.o.write_pgm = true;
        Ok(())
    })
    .aka(&["-pgmimage"])
    .kind(OutputFile),
    flag("-predict", Output, "FILE", "reflection prediction table: h k l fast slow d twotheta excitation_error F ...", |p| {
        p.o.predict = Some(p.text()?);
        Ok(())
    })
    .kind(OutputFile),
    flag("-cbffile", Port, "FILE", "miniCBF copy of the int image (PILATUS 1.2 header, byte-offset compression)", |p| {
        p.o.cbffile = Some(p.text()?);
        Ok(())
    })
    .kind(OutputFile),
    // DIALS geometry in (issue 18 §1, io/expt.rs)
    flag("-expt", Port, "FILE", "DIALS experiment list (.expt): its panels (the hierarchy flattened), beam, spindle, scan start/width and crystal A matrix replace those flags; -misset turns the file's crystal, -cell gives it that cell in the file's orientation", |p| {
        p.o.expt = Some(p.text()?);
        Ok(())
    }),
    // CrystFEL geometry in and out (issue 18 §1, io/geom.rs)
    flag("-geom", Port, "FILE", "CrystFEL geometry (.geom): its panels replace the detector flags (and -expt's panels); a stated photon_energy/wavelength replaces -lambda; bad regions, no_index and mask_edge_pixels join the mask", |p| {
        p.o.geom = Some(p.text()?);
        Ok(())
    }),
    flag("-geomout", Port, "FILE", "CrystFEL geometry (.geom) of the rendered detector, for the -nexus file's /entry/data/data", |p| {
        p.o.geomout = Some(p.text()?);
        Ok(())
    })
    .kind(OutputFile),
    // NXmx output (issue 18/19: the one NeXus writer, io/nexus.rs)
    flag("-nexus", Port, "FILE", "NeXus/NXmx (HDF5) file of the int image, or of a rotation series with -nexus_images", |p| {
        p.o.nexus = Some(p.text()?);
        Ok(())
    })
    .kind(OutputFile),
    flag("-nexus_images", Port, "n", "frames in the -nexus file: the oscillation split into n images of osc/n, phisteps/n steps each", |p| {
        p.o.nexus_images = p.int()?;
        Ok(())
    })
    .check(Positive(1e4)),
    flag("-nexus_compression", Port, "deflate|bslz4", "the -nexus frames' filters: deflate (shuffle + deflate, default: every HDF5 reader) or bslz4 (bitshuffle + LZ4 as EIGER files: much faster to write, read with the bitshuffle plugin)", |p| {
        let v = p.text()?;
        p.o.nexus_compression = crate::io::nexus::NxCompression::from_name(&v).ok_or_else(|| {
            Error::usage(format!("{}: expected deflate or bslz4, found '{v}'", p.flag))
        })?;
        Ok(())
    })
    .kind(OutputOption),
    flag("-stolout", Output, "FILE", "accepted, never written (as upstream)", |p| {
        p.text()?;
        Ok(())
    })
    .kind(OutputFile),
    flag("-nonoise", Output, "", "no noise image", |p| {
        p.o.write_noise = false;
        Ok(())
    })
    .kind(OutputOption),
    flag("-nopgm", Output, "", "no PGM picture", |p| {
        p.o.write_pgm = false;
        Ok(())
    })
    .kind(OutputOption),
    flag("-scale", Output, "s", "SMV scale (≤ 0: 55000 / max)", |p| {
        p.o.scale = p.f64()?;
        Ok(())
    })
    .kind(OutputOption),
    flag("-pgmscale", Output, "s", "PGM scale (≤ 0: auto)", |p| {
        p.o.pgmscale = p.f64()?;
        p.o.write_pgm = true;
        Ok(())
    })
    .kind(OutputOption),
    flag("-adc", Output, "n", "offset added to SMV pixels (default 40)", |p| {
        p.o.adc = p.f64()?;
        Ok(())
    })
    .aka(&["-adcoffset"])
    .kind(OutputOption)
    .check(Within(1e9)),
    flag("-seed", Output, "n", "noise seed (default: the clock)", |p| {
        p.o.seed = Some(-p.int()?);
        Ok(())
    })
    .kind(OutputOption)
    .check(Within(SEED)),
    flag("-printout", Output, "", "print every rendered pixel's last term", |p| {
        p.o.printout = true;
        Ok(())
    })
    .kind(OutputOption),
    flag("-printout_pixel", Output, "f s", "print this pixel's last term", |p| {
        p.o.printout_pixel = Some((p.int()?, p.int()?));
        p.o.printout = true;
        Ok(())
    })
    .kind(OutputOption)
    .check(Within(1e9))
    .pixel_units(),
    flag("-progress", Output, "", "progress meter on a terminal (default)", |p| {
        p.o.progress = true;
        Ok(())
    })
    .kind(OutputOption),
    flag("-noprogress", Output, "", "no progress meter", |p| {
        p.o.progress = false;
        Ok(())
    })
    .kind(OutputOption),
    // ---- ours
    flag("-precision", Port, "f64|f32", "f64 (default) matches upstream bit for bit; f32 is the fast mode", |p| {
        let v = p.text()?;
        p.o.precision = match v.as_str() {
            "f32" | "single" => Precision::F32,
            "f64" | "double" => Precision::F64,
            _ => {
                return Err(Error::usage(format!(
                    "{}: expected f32 or f64, found '{v}'",
                    p.flag
                )))
            }
        };
        Ok(())
    })
    .kind(Ours),
    flag("-backend", Port, "cpu|gpu|auto", "where to render: auto = GPU for f32 when an adapter exists, else CPU", |p| {
        let v = p.text()?;
        p.o.backend = match v.as_str() {
            "cpu" => Backend::Cpu,
            "gpu" => Backend::Gpu,
            "auto" => Backend::Auto,
            _ => {
                return Err(Error::usage(format!(
                    "{}: expected cpu, gpu or auto, found '{v}'",
                    p.flag
                )))
            }
        };
        Ok(())
    })
    .kind(Ours),
    flag("-gradients", Port, "LIST", "derivatives of the image for these parameters (rot_x,cell_a,distance,…; MODEL §10; in the -precision), written with -gradfile", |p| {
        let v = p.text()?;
        p.o.gradients = crate::tangent::Param::parse_list(&v, p.flag)?;
        Ok(())
    })
    .kind(Ours),
    flag("-gradfile", Port, "PREFIX", "one f32 image per -gradients parameter: PREFIX_<name>.bin", |p| {
        p.o.gradfile = Some(p.text()?);
        Ok(())
    })
    .kind(Ours),
    flag("-threads", Port, "n", "CPU threads (default: all cores; at most 4 per core)", |p| {
        p.o.threads = Some(p.int()? as usize);
        Ok(())
    })
    .kind(Ours)
    .check(Positive(1e6)),
    flag("-timings", Port, "", "print setup, render and output times", |p| {
        p.o.timings = true;
        Ok(())
    })
    .kind(Ours),
    flag("-force", Port, "", "render even when the cost estimate exceeds the budget", |p| {
        p.o.force = true;
        Ok(())
    })
    .kind(Ours),
    flag("-help", Port, "", "print this text", |p| {
        p.o.help = true;
        Ok(())
    })
    .aka(&["-h", "--help"])
    .kind(Ours),
];

/// The usage text, from the table.
pub fn usage() -> String {
    help_text(SHORT_USAGE, FLAGS)
}

/// A program's `-help` text: `head`, then every row of `table` by group, aliases included.
pub fn help_text<O>(head: &str, table: &[Flag<O>]) -> String {
    let mut s = String::from(head);
    for g in Group::ALL {
        if !table.iter().any(|f| f.group == g) {
            continue;
        }
        s.push_str(&format!("{}:\n", g.title()));
        for f in table.iter().filter(|f| f.group == g) {
            let head = if f.values.is_empty() {
                format!("  {}", f.name)
            } else {
                format!("  {} {}", f.name, f.values)
            };
            let mut help = f.help.to_string();
            if !f.aliases.is_empty() {
                help.push_str(&format!(" (also {})", f.aliases.join(", ")));
            }
            let width = head.chars().count();
            if width < 30 {
                s.push_str(&format!("{head}{}{help}\n", " ".repeat(30 - width)));
            } else {
                s.push_str(&format!("{head}\n{}{help}\n", " ".repeat(30)));
            }
        }
    }
    s
}

/// The first lines of the usage text: what a run needs.
pub const SHORT_USAGE: &str = "\
usage: nanobragg [options]
  a crystal:   -cell a b c alpha beta gamma (Å, deg)  or  -mat MOSFLM.mat
  structure factors:  -hkl FILE (h k l F per line)  and/or  -default_F F
  nanobragg -help lists every flag
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for f in FLAGS {
            for n in f.names() {
                assert!(n.starts_with('-') && n.len() >= 2, "{n}");
                assert!(seen.insert(n), "{n} appears twice");
            }
            assert!(f.arity.0 <= f.arity.1, "{}", f.name);
            assert_eq!(f.values.is_empty(), f.arity.1 == 0, "{}", f.name);
            assert!(!f.help.is_empty(), "{}", f.name);
        }
    }

    #[test]
    fn usage_lists_every_flag_and_alias() {
        let u = usage();
        assert!(u.starts_with("usage: nanobragg"));
        for f in FLAGS {
            for n in f.names() {
                assert!(u.contains(n), "{n} missing from the usage text");
            }
        }
    }

    #[test]
    fn checks() {
        assert_eq!(
            Positive(10.0).violation(0.0).unwrap(),
            "a number > 0 and ≤ 10"
        );
        assert!(Positive(10.0).violation(10.0).is_none());
        assert_eq!(Finite.violation(f64::NAN).unwrap(), "a finite number");
        assert_eq!(
            Positive(BIG).violation(f64::INFINITY).unwrap(),
            "a finite number"
        );
        assert_eq!(
            NonZero(5.0).violation(0.0).unwrap(),
            "a non-zero number from -5 to 5"
        );
        assert!(NonZero(5.0).violation(-5.0).is_none());
        assert_eq!(
            Within(3.0).violation(-4.0).unwrap(),
            "a number from -3 to 3"
        );
        assert_eq!(
            NonNegative(f64::MAX).violation(-1.0).unwrap(),
            "a number ≥ 0"
        );
        assert_eq!(
            NonNegative(BIG).violation(1e308).unwrap(),
            "a number ≥ 0 and ≤ 1e300"
        );
        assert_eq!(
            Within(SEED).violation_of(-1e19, true).unwrap(),
            "an integer from -2147483647 to 2147483647"
        );
        assert_eq!(
            Positive(1e6).violation_of(0.0, true).unwrap(),
            "an integer > 0 and ≤ 1000000"
        );
    }

    #[test]
    fn bounds_as_a_person_reads_them() {
        let cases = [
            (1.0, "1"),
            (180.0, "180"),
            (1000.0, "1000"),
            (1e6, "1000000"),
            (9999999.0, "9999999"),
            (1e7, "1e7"),
            (1e10, "1e10"),
            (2.5e8, "2.5e8"),
            (2147483647.0, "2147483647"),
            (4294967295.0, "4294967295"),
            (1e30, "1e30"),
            (1e300, "1e300"),
            (0.5, "0.5"),
            (1e-9, "1e-9"),
        ];
        for (m, want) in cases {
            assert_eq!(crate::check::bound(m), want, "bound({m:e})");
        }
    }
}
