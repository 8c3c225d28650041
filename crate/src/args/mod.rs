//! Command-line words -> `Options` (raw user settings, converted to internal units at parse time,
//! MODEL §1.2 and §2). Flag names and aliases are upstream nanoBragg's; the order-dependent side
//! effects that upstream's substring matching produces and that real command lines rely on are
//! reproduced (`-twotheta_axis` also sets two-theta, `-misset_seed` also acts as `-misset`,
//! conventions set the pivot, last flag wins). Unlike upstream, an unknown flag, a missing value
//! or a non-numeric value is an error naming the flag, and so is a number out of the flag's range
//! (NaN and ±inf included).
//!
//! The flags themselves, with their handlers, are one table: `table.rs` (`FLAGS`).

use crate::cfmt::{atof, parse_f64_strict, parse_i64_strict};
use crate::error::{Error, Result};
use crate::vec3::V3;

pub mod fields;
mod table;
pub use table::{
    find, help_text, own, shared, usage, Act, Check, Flag, Geometry, Group, Handler, Kind, ANGLE,
    FLAGS, SHORT_USAGE,
};

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

/// `-precision`: defined with the plan (what the kernels need lives there), re-exported here.
pub use crate::plan::Precision;

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
    /// `-pdb`: an atomic model (PDB or mmCIF) to compute structure factors from (`sf`).
    pub pdb: Option<String>,
    /// `-hklout`: where to write the structure-factor table the run used.
    pub hklout: Option<String>,
    pub dump: String,
    pub mat: Option<String>,
    /// `-expt FILE`: a DIALS experiment list (`io::expt`), applied by `resolve`.
    pub expt: Option<String>,
    /// `-geom FILE`: a CrystFEL geometry file (`io::geom`), applied by `resolve`.
    pub geom: Option<String>,
    /// `-geomout FILE`: the rendered detector as a CrystFEL geometry file.
    pub geomout: Option<String>,
    /// The crystal of an `-expt` file as a MOSFLM matrix (set by `resolve`, not a flag).
    pub mat_values: Option<[[f64; 3]; 3]>,
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
    /// `-nexus FILE`: an NXmx (HDF5) file of the int image (`io::nexus`), and `-nexus_images N`
    /// frames splitting the oscillation.
    pub nexus: Option<String>,
    pub nexus_images: i64,
    /// `-nexus_compression`: the `-nexus` frames' filters (shuffle + deflate by default).
    pub nexus_compression: crate::io::nexus::NxCompression,
    /// `-detector NAME`: a real detector's pixels, pixel size and module gaps (`detectors`).
    pub preset: Option<&'static crate::presets::DetectorPreset>,
    pub precision: Precision,
    pub threads: Option<usize>,
    pub backend: Backend,
    pub timings: bool,
    /// Render even when the cost estimate is over the CLI's budget.
    pub force: bool,
    /// `-help`: print the usage text.
    pub help: bool,
    /// Warnings produced while parsing (printed by the CLI).
    pub warnings: Vec<String>,
    /// `-gradients LIST`: the parameters to differentiate (MODEL §10).
    pub gradients: Vec<crate::tangent::Param>,
    /// `-gradfile PREFIX`: tangent images go to `PREFIX_<name>.bin`.
    pub gradfile: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            hkl: None,
            pdb: None,
            hklout: None,
            dump: "Fdump.bin".into(),
            mat: None,
            expt: None,
            geom: None,
            geomout: None,
            mat_values: None,
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
            nexus: None,
            nexus_images: 1,
            nexus_compression: crate::io::nexus::NxCompression::Deflate,
            preset: None,
            precision: Precision::F64,
            threads: None,
            backend: Backend::Cpu,
            timings: false,
            force: false,
            help: false,
            warnings: Vec::new(),
            gradients: Vec::new(),
            gradfile: None,
        }
    }
}

/// The parser: a cursor over the words and the options being built (`O`: nanobragg's `Options`,
/// or a companion program's options). Flag handlers (`table.rs`, and the companion programs'
/// own rows) read their values through it, so every value error names the flag as typed and
/// every number passes the row's check.
pub struct Parser<'a, O = Options> {
    words: &'a [String],
    i: usize,
    /// The flag being handled, as typed (a name or an alias).
    pub flag: &'a str,
    /// The row's name and check.
    name: &'static str,
    check: Check,
    pub o: &'a mut O,
}

impl<'a, O> Parser<'a, O> {
    /// Words left after the cursor.
    pub fn remaining(&self) -> usize {
        self.words.len() - self.i
    }
    /// The word `k` places after the cursor.
    pub fn peek(&self, k: usize) -> Option<&'a str> {
        self.words.get(self.i + k).map(|s| s.as_str())
    }
    pub fn skip(&mut self, n: usize) {
        self.i = (self.i + n).min(self.words.len());
    }
    pub fn err(&self, what: impl std::fmt::Display) -> Error {
        Error::usage(format!("{}: {what}", self.flag)).with_flag(self.name)
    }
    /// The next word, as is.
    pub fn text(&mut self) -> Result<String> {
        match self.words.get(self.i) {
            Some(s) => {
                self.i += 1;
                Ok(s.clone())
            }
            None => Err(self.err("missing value")),
        }
    }
    fn checked(&self, v: f64, t: &str, integer: bool) -> Result<f64> {
        match self.check.violation_of(v, integer) {
            None => Ok(v),
            Some(want) => Err(self.err(format_args!("expected {want}, found '{t}'"))),
        }
    }
    /// The next word as a finite number that passes the row's check.
    pub fn f64(&mut self) -> Result<f64> {
        let t = self.text()?;
        match parse_f64_strict(&t) {
            Some(v) => self.checked(v, &t, false),
            None => Err(self.err(format_args!("expected a number, found '{t}'"))),
        }
    }
    /// `f64`, but `inf` is allowed (`-detector_abs inf`).
    pub fn f64_allowing_inf(&mut self) -> Result<f64> {
        let t = self.text()?;
        match parse_f64_strict(&t) {
            Some(v) if v == f64::INFINITY => Ok(v),
            Some(v) => self.checked(v, &t, false),
            None => Err(self.err(format_args!("expected a number, found '{t}'"))),
        }
    }
    /// The next word as an integer that passes the row's check. Upstream reads counts with
    /// `atoi`; numbers such as "2.0" are accepted by truncation.
    pub fn int(&mut self) -> Result<i64> {
        let t = self.text()?;
        let v = match parse_i64_strict(&t) {
            Some(v) => v as f64,
            None => match parse_f64_strict(&t) {
                Some(v) => v.trunc(),
                None => return Err(self.err(format_args!("expected an integer, found '{t}'"))),
            },
        };
        let v = self.checked(v, &t, true)?;
        if v.abs() >= 9.0e18 {
            return Err(self.err(format_args!("{t} is out of range")));
        }
        Ok(v as i64)
    }
    pub fn vec3(&mut self) -> Result<V3> {
        Ok([self.f64()?, self.f64()?, self.f64()?])
    }

    /// Three numbers that give a direction: a zero-length vector is an error naming the flag
    /// (upstream would silently drop the rotation about it).
    pub fn axis(&mut self) -> Result<V3> {
        let v = self.vec3()?;
        if v.iter().all(|x| *x == 0.0) {
            return Err(self.err("0 0 0 has no direction: give a non-zero vector"));
        }
        Ok(v)
    }
}

/// `-cell`'s entries, in order (Å, degrees).
pub const CELL_ENTRIES: [&str; 6] = ["a", "b", "c", "alpha", "beta", "gamma"];

/// What `-cell`'s entry `i` must be when `v` is not it: a in (0, 1e7], b and c within ±1e7, an
/// angle within ±180 and below 180 degrees. Entries that pass but are not positive (b, c, the
/// angles) are read as others: [`cell_entry_as_read`].
pub fn cell_entry_violation(i: usize, v: f64) -> Option<String> {
    match i {
        0 => Check::Positive(1e7).violation(v),
        1 | 2 => Check::Within(1e7).violation(v),
        _ => Check::Within(180.0)
            .violation(v)
            .or_else(|| (v >= 180.0).then(|| "an angle below 180 degrees".to_string())),
    }
}

/// The cell's rule (upstream's, MODEL §2.2): `Some` of what `-cell`'s entry `i` = `v` is read
/// as when it is not itself: b, c <= 0 as a (`a`), an angle <= 0 as 90 degrees. The one place
/// of the rule: the reading ([`cell_as_read`]), the command line's warning and the Python
/// face's refusal ([`cell_clamps`]) derive from it.
pub fn cell_entry_as_read(i: usize, v: f64, a: f64) -> Option<f64> {
    match i {
        // `!(v <= 0)`: a NaN (refused by the parser) is not read as another
        0 => None,
        _ if !(v <= 0.0) => None,
        1 | 2 => Some(a),
        _ => Some(90.0),
    }
}

/// The cell as it is read ([`cell_entry_as_read`] on each entry).
pub fn cell_as_read(cell: [f64; 6]) -> [f64; 6] {
    let mut out = cell;
    for (i, v) in out.iter_mut().enumerate() {
        if let Some(r) = cell_entry_as_read(i, *v, cell[0]) {
            *v = r;
        }
    }
    out
}

/// A `-cell` entry given that is read silently as another: the command line keeps upstream's
/// image and says so ([`CellClamp::warning`]); the Python face refuses it ([`CellClamp::error`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CellClamp {
    /// The entry's index in [`CELL_ENTRIES`].
    pub entry: usize,
    pub value: f64,
    /// What it is read as (Å, degrees).
    pub read_as: f64,
}

impl CellClamp {
    fn name(&self) -> &'static str {
        CELL_ENTRIES[self.entry]
    }

    /// The command line's warning.
    pub fn warning(&self) -> String {
        let g = crate::cfmt::fmt_g;
        if self.entry < 3 {
            format!(
                "WARNING: -cell: {} = {} is not positive: read as a = {} Å (as upstream does)",
                self.name(),
                g(self.value),
                g(self.read_as)
            )
        } else {
            format!(
                "WARNING: -cell: {} = {} degrees is not positive: read as {} degrees (as \
                 upstream does)",
                self.name(),
                g(self.value),
                g(self.read_as)
            )
        }
    }

    /// A usage error naming `-cell` and the entry (`given`: the value as the caller wrote it),
    /// for a face that refuses the value.
    pub fn error(&self, given: &str) -> Error {
        let g = crate::cfmt::fmt_g;
        let (want, read) = if self.entry < 3 {
            ("a length > 0 (Å)", format!("a = {} Å", g(self.read_as)))
        } else {
            (
                "an angle between 0 and 180 degrees (exclusive)",
                format!("{} degrees", g(self.read_as)),
            )
        };
        Error::usage(format!(
            "-cell: {} = {given}: expected {want} (the command line reads it as {read}, as \
             upstream does)",
            self.name()
        ))
        .with_flag("-cell")
    }
}

/// The entries among the first `n` of `cell` (those given) that are read as others.
pub fn cell_clamps(cell: &[f64; 6], n: usize) -> Vec<CellClamp> {
    (0..n.min(6))
        .filter_map(|i| {
            cell_entry_as_read(i, cell[i], cell[0]).map(|read_as| CellClamp {
                entry: i,
                value: cell[i],
                read_as,
            })
        })
        .collect()
}

/// A face's check of a cell of six words (the typed Python configuration's): the command line's
/// refusals ([`cell_entry_violation`]) and its silent readings ([`cell_clamps`]) both refused,
/// as a usage error naming `-cell` and the entry as given (`-cell: b = 0.0: expected …`).
pub fn check_cell(words: &[String]) -> Result<()> {
    let mut c = [0.0; 6];
    if words.len() != 6 {
        return Err(Error::usage(format!(
            "-cell: expected 6 numbers (a b c alpha beta gamma), got {}",
            words.len()
        ))
        .with_flag("-cell"));
    }
    for (i, w) in words.iter().enumerate() {
        let name = CELL_ENTRIES[i];
        let v = parse_f64_strict(w).ok_or_else(|| {
            Error::usage(format!("-cell: {name} = {w}: expected a number")).with_flag("-cell")
        })?;
        if let Some(want) = cell_entry_violation(i, v) {
            return Err(
                Error::usage(format!("-cell: {name} = {w}: expected {want}")).with_flag("-cell"),
            );
        }
        c[i] = v;
    }
    match cell_clamps(&c, 6).first() {
        Some(k) => Err(k.error(&words[k.entry])),
        None => Ok(()),
    }
}

impl Parser<'_, Options> {
    /// `-cell a [b c α β γ]`: up to six numbers, stopping at the next flag (MODEL §2.2). Lengths
    /// b, c ≤ 0 mean a and angles ≤ 0 mean 90° (upstream's rules); a must be positive and every
    /// angle below 180°. Whether the angles make a cell is checked with the crystal.
    fn cell(&mut self) -> Result<()> {
        let mut c = [0.0; 6];
        let mut n = 0;
        while n < 6
            && self
                .peek(0)
                .is_some_and(|t| !t.starts_with('-') || is_number(t))
        {
            let t = self.peek(0).unwrap_or_default();
            let v = parse_f64_strict(t)
                .ok_or_else(|| self.err(format_args!("expected a number, found '{t}'")))?;
            let want = cell_entry_violation(n, v);
            if let Some(want) = want {
                let what = CELL_ENTRIES[n];
                return Err(self.err(format_args!("expected {want} for {what}, found '{t}'")));
            }
            c[n] = v;
            n += 1;
            self.i += 1;
        }
        if n == 0 {
            return Err(self.err("expected a b c alpha beta gamma (Å, degrees)"));
        }
        // upstream reads b, c <= 0 as a and an angle <= 0 as 90 degrees: an entry left out
        // (`-cell 100`, a cube) is that shorthand; one given so is said (the typed Python
        // configuration refuses it: `check_cell`)
        for k in cell_clamps(&c, n) {
            self.o.warnings.push(k.warning());
        }
        self.o.cell = Some(c);
        Ok(())
    }

    /// `-misset_seed n`: upstream's substring match also runs the `-misset` handler on the next
    /// three words (C-QUIRK 2), and the two numbers after the seed are that misset's other
    /// angles.
    fn misset_seed(&mut self) -> Result<()> {
        if self.remaining() >= 3 {
            let words = [self.peek(0), self.peek(1), self.peek(2)].map(Option::unwrap_or_default);
            let m = words.map(atof);
            if let Some(k) = m.iter().position(|v| !v.is_finite()) {
                return Err(self.err(format_args!(
                    "upstream also reads the next three words as -misset angles, and '{}' is not a finite angle",
                    words[k]
                )));
            }
            self.o.misset = Some(m);
            self.o.misset_random = false;
        }
        self.o.misset_seed = -self.int()?;
        for _ in 0..2 {
            if self.peek(0).is_some_and(is_number) {
                self.i += 1;
            }
        }
        Ok(())
    }
}

/// A command line given as one string, parsed (for the unit tests of the resolution steps).
#[cfg(test)]
pub(crate) fn test_opts(s: &str) -> Options {
    parse(&split_args(s)).unwrap()
}

fn is_number(s: &str) -> bool {
    parse_f64_strict(s).is_some()
}

/// Split a command line into words (whitespace, with '…' and "…" quoting).
pub fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for ch in s.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => cur.push(ch),
            None if ch == '\'' || ch == '"' => {
                quote = Some(ch);
                has = true;
            }
            None if ch.is_whitespace() => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            None => cur.push(ch),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parse the words after the program name.
pub fn parse(words: &[String]) -> Result<Options> {
    let mut o = Options::default();
    parse_with(FLAGS, words, &mut o, |_, _| false)?;
    Ok(o)
}

/// Parse `words` with a program's flag table into `o`. A word that is not a flag is offered to
/// `loose` (noisify takes a bare `…floatimage.bin` as its input), else it is an error that says
/// which flag it follows; an unknown flag is an error suggesting the table's nearest name.
pub fn parse_with<O: Geometry>(
    table: &[Flag<O>],
    words: &[String],
    o: &mut O,
    loose: fn(&str, &mut O) -> bool,
) -> Result<()> {
    let mut i = 0;
    let mut prev: Option<(&Flag<O>, &str)> = None;
    while i < words.len() {
        let arg = words[i].as_str();
        i += 1;
        if !arg.starts_with('-') || arg.len() < 2 {
            if loose(arg, o) {
                continue;
            }
            let after = match prev {
                Some((f, typed)) if f.arity.1 == 0 => {
                    format!(" after {typed}, which takes no value")
                }
                Some((f, typed)) => {
                    let (lo, hi) = f.arity;
                    let n = if lo == hi {
                        format!("{lo}")
                    } else {
                        format!("{lo} to {hi}")
                    };
                    let s = if hi == 1 { "" } else { "s" };
                    format!(" after {typed} {}, which takes {n} value{s}", f.values)
                }
                None => String::new(),
            };
            let e = Error::usage(format!(
                "unexpected argument '{arg}'{after} (values must follow a flag)"
            ));
            return Err(match prev {
                Some((f, _)) => e.with_flag(f.name),
                None => e,
            });
        }
        let row = table
            .iter()
            .find(|f| f.names().any(|n| n == arg))
            .ok_or_else(|| {
                crate::flagwords::unknown_flag(arg, table.iter().flat_map(|f| f.names()))
            })?;
        let result = match row.handler {
            Act::Own(h) => {
                let mut p = Parser {
                    words,
                    i,
                    flag: arg,
                    name: row.name,
                    check: row.check,
                    o: &mut *o,
                };
                let r = h(&mut p);
                i = p.i;
                r
            }
            Act::Shared(h) => {
                let mut p = Parser {
                    words,
                    i,
                    flag: arg,
                    name: row.name,
                    check: row.check,
                    o: o.geometry(),
                };
                let r = h(&mut p);
                i = p.i;
                r
            }
        };
        result.map_err(|e| e.with_flag(row.name))?;
        prev = Some((row, arg));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cell_rule_is_one_for_the_reading_the_warning_and_the_refusal() {
        let cell = [78.0, 0.0, -2.0, 90.0, 0.0, -90.0];
        let read = cell_as_read(cell);
        assert_eq!(read, [78.0, 78.0, 78.0, 90.0, 90.0, 90.0]);
        // the entries said are exactly those read as others, with what they are read as
        let clamps = cell_clamps(&cell, 6);
        assert_eq!(
            clamps.iter().map(|k| k.entry).collect::<Vec<_>>(),
            [1, 2, 4, 5]
        );
        for k in &clamps {
            assert_eq!(k.read_as, read[k.entry]);
        }
        assert_eq!(
            clamps[0].warning(),
            "WARNING: -cell: b = 0 is not positive: read as a = 78 Å (as upstream does)"
        );
        // entries left out (`-cell 78`) are the shorthand, not said
        assert!(cell_clamps(&[78.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1).is_empty());
        // the parser warns of the same entries
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let o = parse(&w("-cell 78 0 -2 90 0 -90 -default_F 1")).unwrap();
        let said: Vec<_> = clamps.iter().map(CellClamp::warning).collect();
        let warned: Vec<_> = o
            .warnings
            .iter()
            .filter(|w| w.contains("-cell"))
            .cloned()
            .collect();
        assert_eq!(warned, said);
        // the face's check refuses them, naming -cell, the entry as written and the reading
        let e = check_cell(&w("78 0.0 78 90 90 90")).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Usage);
        assert_eq!(e.flag.as_deref(), Some("-cell"));
        assert_eq!(
            e.message,
            "-cell: b = 0.0: expected a length > 0 (Å) (the command line reads it as a = 78 Å, \
             as upstream does)"
        );
        let e = check_cell(&w("78 78 78 90 -1 90")).unwrap_err();
        assert!(e
            .message
            .starts_with("-cell: beta = -1: expected an angle between 0 and 180"));
        assert!(
            e.message.contains("reads it as 90 degrees"),
            "{}",
            e.message
        );
        // and what the command line refuses, as it does
        let e = check_cell(&w("0 78 78 90 90 90")).unwrap_err();
        assert!(
            e.message.starts_with("-cell: a = 0: expected a number > 0"),
            "{}",
            e.message
        );
        let e = check_cell(&w("78 78 78 90 90 180")).unwrap_err();
        assert_eq!(
            e.message,
            "-cell: gamma = 180: expected an angle below 180 degrees"
        );
        assert!(parse(&w("-cell 78 78 78 90 90 180")).is_err());
        assert!(check_cell(&w("78 80 90 60 70 80")).is_ok());
    }

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
        // mm → m as upstream: x / 1000 (x * 1e-3 is one ulp off for 189.42 and about one typed
        // value in seven)
        let o = p("-distance 189.42 -Xbeam 189.42 -pixel 0.18942 -beamsize 189.42").unwrap();
        let m = 189.42 / 1000.0;
        assert_ne!(m, 189.42 * 1e-3);
        assert_eq!((o.distance, o.xbeam, o.beamsize), (Some(m), Some(m), m));
        assert_eq!(o.pixel, Some(0.18942 / 1000.0));
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
        let e = |s: &str| p(s).unwrap_err().message;
        assert!(e("-bogus 1").contains("-bogus"));
        assert!(e("-lambda").contains("-lambda: missing value"));
        assert!(e("-lambda abc").contains("-lambda: expected a number"));
        assert!(e("-N x").contains("-N"));
        assert!(e("-precision f16").contains("-precision"));
        // an alias is named as typed
        assert_eq!(
            e("-wave 0"),
            "-wave: expected a number > 0 and ≤ 1e10, found '0'"
        );
    }

    #[test]
    fn non_finite_numbers_are_rejected_everywhere() {
        for (args, msg) in [
            ("-misset nan 0 0", "-misset: expected a finite number, found 'nan'"),
            ("-fluence inf", "-fluence: expected a finite number, found 'inf'"),
            ("-default_F nan", "-default_F: expected a finite number, found 'nan'"),
            ("-dispersion nan", "-dispersion: expected a finite number, found 'nan'"),
            ("-mosaic inf", "-mosaic: expected a finite number, found 'inf'"),
            ("-phi inf", "-phi: expected a finite number, found 'inf'"),
            ("-N nan", "-N: expected a finite integer, found 'nan'"),
            ("-detector_abs nan", "-detector_abs: expected a finite number, found 'nan'"),
            ("-misset_seed 5 nan 1", "-misset_seed: upstream also reads the next three words as -misset angles, and 'nan' is not a finite angle"),
        ] {
            assert_eq!(p(args).unwrap_err().message, msg, "{args}");
        }
        // upstream's documented meaning of an infinite attenuation depth: no absorption
        let o = p("-detector_thick 100 -detector_abs inf").unwrap();
        assert_eq!((o.detector_thick, o.detector_mu), (0.0, 0.0));
    }

    #[test]
    fn ranges_are_checked_in_the_users_units() {
        let e = |s: &str| p(s).unwrap_err().message;
        assert_eq!(
            e("-distance 0"),
            "-distance: expected a non-zero number from -1000000 to 1000000, found '0'"
        );
        assert_eq!(
            e("-pixel 1e308"),
            "-pixel: expected a number > 0 and ≤ 1000, found '1e308'"
        );
        assert_eq!(
            e("-divsteps 1e308"),
            "-divsteps: expected an integer from -1000000 to 1000000, found '1e308'"
        );
        assert_eq!(
            e("-seed -1e19"),
            "-seed: expected an integer from -2147483647 to 2147483647, found '-1e19'"
        );
        assert!(e("-mosaic_seed -1e19").starts_with("-mosaic_seed: expected"));
        assert!(e("-misset_seed -1e19").starts_with("-misset_seed: expected"));
        assert!(e("-threads 0").starts_with("-threads: expected an integer > 0"));
        assert!(e("-detector_thick 1e308").starts_with("-detector_thick: expected"));
        assert!(e("-lambda -1").starts_with("-lambda: expected a number > 0"));
        // a negative distance is upstream's |distance|: a warning, not an error
        let o = p("-distance -50").unwrap();
        assert_eq!(o.distance, Some(-0.05));
        assert!(o.warnings[0].contains("-distance -50: a negative distance is used as 50 mm"));
    }

    #[test]
    fn cell_values_name_the_cell() {
        let e = |s: &str| p(s).unwrap_err().message;
        assert_eq!(e("-cell 100 abc"), "-cell: expected a number, found 'abc'");
        assert_eq!(
            e("-cell 0 1 1 90 90 90"),
            "-cell: expected a number > 0 and ≤ 1e7 for a, found '0'"
        );
        assert_eq!(
            e("-cell 100 100 100 90 90 180"),
            "-cell: expected an angle below 180 degrees for gamma, found '180'"
        );
        assert_eq!(
            e("-cell 1e300 1 1"),
            "-cell: expected a number > 0 and ≤ 1e7 for a, found '1e300'"
        );
        // fewer than six values, then a flag: upstream's rule
        let o = p("-cell 100 -N 2").unwrap();
        assert_eq!(o.cell, Some([100.0, 0.0, 0.0, 0.0, 0.0, 0.0]));
        // a stray word after a flag names that flag
        assert_eq!(
            e("-N 5 7"),
            "unexpected argument '7' after -N n, which takes 1 value (values must follow a flag)"
        );
    }

    /// Every row of the table parses with values of its arity and consumes exactly them.
    #[test]
    fn every_flag_parses_with_its_values() {
        for f in FLAGS {
            let values: Vec<&str> = f
                .values
                .split_whitespace()
                .map(|v| match v {
                    "FILE" => "x.txt",
                    "LIST" => "rot_x",
                    v if v.contains('|') => v.split('|').next().unwrap(),
                    _ => "1",
                })
                .collect();
            for name in f.names() {
                let mut words = vec![name.to_string()];
                words.extend(values.iter().map(|v| v.to_string()));
                words.push("-nopgm".into());
                let o = parse(&words).unwrap_or_else(|e| panic!("{name}: {}", e.message));
                assert!(!o.write_pgm, "{name} consumed the next flag");
            }
        }
    }
}
