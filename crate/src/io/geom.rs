//! CrystFEL geometry files (`.geom`, `-geom FILE`; written by `-geomout FILE`): panels with
//! `corner_x/y`, `fs`/`ss` vectors, `res`, `clen` + `coffset`, the inclusive `min/max_fs/ss`,
//! `max_adu`, `no_index`, `mask_edge_pixels`, bad regions (in fs/ss of a panel, or in the lab's
//! x/y), `photon_energy`/`wavelength`. Read here ([`parse_geom`]) in CrystFEL's own terms, and
//! turned into nanoBragg's lab frame by [`Geom::panel_specs`].
//!
//! Frames (docs/geometry.md): CrystFEL's lab has +z along the beam (away from the source), +y up,
//! +x completing a right-handed frame; dxtbx's has +z towards the source, +y up: (x, y, z)_CrystFEL
//! = (−x, y, −z)_dxtbx. nanoBragg's (beam +x) is dxtbx's through `expt::to_nanobragg`; composed:
//! (x, y, z)_CrystFEL → (z, y, −x)_nanoBragg. A panel's first pixel's outer corner is at
//! (corner_x/res, corner_y/res, clen + coffset) m; `fs`, `ss` are per-pixel steps (pixels).
//!
//! The stored image: a panel's pixels sit at its `min_fs`, `min_ss` of the data block; panels of
//! a block with more than two dimensions (a fixed index in a `dimN`, e.g. JUNGFRAU/AGIPD
//! module stacks) are stacked along the slow direction, module k starting at k × (largest
//! `max_ss` + 1). A `clen` or `photon_energy` that is a data-file location is an error (give the
//! number); global lines apply to the panels first mentioned after them (CrystFEL's rule).
//! Errors name the file, line and key.

use crate::check::Check;
use crate::error::{Error, Result};
use crate::io::out_of_range;
use crate::limits::MAX_PIXELS;
use std::collections::BTreeMap;

type V3 = [f64; 3];

/// One panel as the file states it (CrystFEL's lab frame).
#[derive(Clone, Debug, PartialEq)]
pub struct GeomPanel {
    pub name: String,
    pub min_fs: usize,
    pub max_fs: usize,
    pub min_ss: usize,
    pub max_ss: usize,
    pub corner_x: f64,
    pub corner_y: f64,
    /// Per-pixel steps (pixel units) of the fast and slow scan directions.
    pub fs: V3,
    pub ss: V3,
    /// Pixels per metre.
    pub res: f64,
    /// Camera length (m) and the panel's offset along z from it (m).
    pub clen: f64,
    pub coffset: f64,
    /// Saturation (0 = not stated).
    pub max_adu: f64,
    pub no_index: bool,
    pub mask_edge_pixels: usize,
    /// The fixed index of a `dimN = number` (module in a stack), if any.
    pub module: Option<usize>,
    /// Line where the panel is first mentioned.
    pub line: usize,
}

/// A bad region: pixels of one panel (inclusive fs/ss), or a lab-frame x/y box (pixels).
#[derive(Clone, Debug, PartialEq)]
pub enum BadRegion {
    Pixels {
        name: String,
        panel: String,
        fs: [usize; 2],
        ss: [usize; 2],
    },
    Lab {
        name: String,
        x: [f64; 2],
        y: [f64; 2],
    },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Geom {
    pub panels: Vec<GeomPanel>,
    pub bad: Vec<BadRegion>,
    /// Å, when the file states it as a number.
    pub wavelength: Option<f64>,
    /// Keys read but without effect on the simulation (for a warning).
    pub ignored: Vec<String>,
}

fn err(name: &str, line: usize, key: &str, what: impl std::fmt::Display) -> Error {
    Error::input(format!("{name}:{line}: {key}: {what}"))
        .at_file(name)
        .at_line(line)
        .at_key(key)
        .with_flag("-geom")
}

/// `-0.001x +0.999999y` (and `z`) → (x, y, z).
fn parse_vector(name: &str, line: usize, key: &str, v: &str) -> Result<V3> {
    let mut out = [0.0; 3];
    let mut seen = [false; 3];
    let s: String = v.chars().filter(|c| !c.is_whitespace()).collect();
    let bad = || {
        err(
            name,
            line,
            key,
            format_args!("'{v}' is not a vector like '-1.0x +0.5y'"),
        )
    };
    if s.is_empty() {
        return Err(bad());
    }
    // terms start at a sign, except the sign of a number's exponent (`1e-3x`)
    let mut starts = vec![0];
    let mut prev = None;
    for (i, c) in s.char_indices() {
        if i > 0 && (c == '+' || c == '-') && !matches!(prev, Some('e' | 'E')) {
            starts.push(i);
        }
        prev = Some(c);
    }
    starts.push(s.len());
    for w in starts.windows(2) {
        let term = &s[w[0]..w[1]];
        let axis = match term.chars().last() {
            Some('x') => 0,
            Some('y') => 1,
            Some('z') => 2,
            _ => return Err(bad()),
        };
        let num = &term[..term.len() - 1]; // x, y and z are one byte
        let value = match num {
            "" | "+" => 1.0,
            "-" => -1.0,
            n => n.parse::<f64>().map_err(|_| bad())?,
        };
        if seen[axis] || !value.is_finite() {
            return Err(bad());
        }
        seen[axis] = true;
        out[axis] = value;
    }
    Ok(out)
}

/// A number with an optional unit among `units` (factor to the result's unit); a value that
/// starts with `/` is a data-file location.
fn parse_number(
    name: &str,
    line: usize,
    key: &str,
    v: &str,
    units: &[(&str, f64)],
    default: f64,
) -> Result<f64> {
    if v.starts_with('/') {
        return Err(err(
            name,
            line,
            key,
            format_args!("'{v}' is a data-file location: give the value as a number"),
        ));
    }
    let mut words = v.split_whitespace();
    let n = words.next().unwrap_or("");
    let value: f64 = n
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite())
        .ok_or_else(|| err(name, line, key, format_args!("'{v}' is not a number")))?;
    let factor = match words.next() {
        None => default,
        Some(u) => units
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(u))
            .map(|(_, f)| *f)
            .ok_or_else(|| err(name, line, key, format_args!("unknown unit '{u}'")))?,
    };
    Ok(value * factor)
}

/// A pixel index (or count) below the build's pixel limit, so that sums and products of a few
/// of them cannot overflow.
fn parse_index(name: &str, line: usize, key: &str, v: &str) -> Result<usize> {
    let n = v
        .parse::<usize>()
        .map_err(|_| err(name, line, key, format_args!("'{v}' is not a pixel index")))?;
    if n >= MAX_PIXELS {
        return Err(err(
            name,
            line,
            key,
            format_args!("{n} is beyond this build's detector limit ({MAX_PIXELS} pixels)"),
        ));
    }
    Ok(n)
}

fn parse_bool(name: &str, line: usize, key: &str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(err(
            name,
            line,
            key,
            format_args!("'{v}' is not 0/1/true/false"),
        )),
    }
}

/// Settings of one panel (or the global defaults) as (key → (value, line)).
type Settings = BTreeMap<String, (String, usize)>;

/// Keys a panel may hold.
const PANEL_KEYS: &[&str] = &[
    "min_fs",
    "max_fs",
    "min_ss",
    "max_ss",
    "corner_x",
    "corner_y",
    "fs",
    "ss",
    "res",
    "clen",
    "coffset",
    "max_adu",
    "no_index",
    "mask_edge_pixels",
    "data",
    "adu_per_eV",
    "adu_per_photon",
    "flag_lessthan",
    "flag_morethan",
    "flag_equal",
    "saturation_map",
    "saturation_map_file",
    "mask",
    "mask_file",
    "mask_good",
    "mask_bad",
];

fn panel_key(key: &str) -> bool {
    PANEL_KEYS.contains(&key)
        || key.starts_with("dim")
        || (key.starts_with("mask") && key.len() > 4 && key.as_bytes()[4].is_ascii_digit())
}

/// Parses a CrystFEL geometry file; errors name the file, line and key.
pub fn parse_geom(name: &str, bytes: &[u8]) -> Result<Geom> {
    super::check_not_utf16(name, bytes)?;
    let text = std::str::from_utf8(super::without_bom(bytes)).map_err(|_| {
        Error::input(format!(
            "{name}: not a CrystFEL geometry file (not UTF-8 text)"
        ))
        .at_file(name)
        .with_flag("-geom")
    })?;
    let mut defaults = Settings::new();
    let mut panels: Vec<(String, usize, Settings)> = Vec::new();
    let mut bad: BTreeMap<String, (usize, Settings)> = BTreeMap::new();
    let mut geom = Geom::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split(';').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let Some((k, v)) = content.split_once('=') else {
            return Err(err(name, line, content, "expected 'key = value'"));
        };
        let (key, value) = (k.trim(), v.trim().to_string());
        match key.split_once('/') {
            Some((panel, pkey)) => {
                if panel.starts_with("bad") {
                    let entry = bad
                        .entry(panel.to_string())
                        .or_insert((line, Settings::new()));
                    entry.1.insert(pkey.to_string(), (value, line));
                    continue;
                }
                if panel.starts_with("group") || panel.starts_with("rigid_group") {
                    continue;
                }
                if !panel_key(pkey) {
                    return Err(err(name, line, key, "unknown panel key"));
                }
                let idx = match panels.iter().position(|(n, _, _)| n == panel) {
                    Some(i) => i,
                    None => {
                        panels.push((panel.to_string(), line, defaults.clone()));
                        panels.len() - 1
                    }
                };
                panels[idx].2.insert(pkey.to_string(), (value, line));
            }
            None => match key {
                "photon_energy" => {
                    let ev = parse_number(
                        name,
                        line,
                        key,
                        &value,
                        &[("eV", 1.0), ("keV", 1000.0)],
                        1.0,
                    )?;
                    let wl = 12398.419843320026 / ev;
                    if let Some(why) = out_of_range(wl, " Å", Check::Positive(1e10)) {
                        let ev = crate::io::short(ev);
                        return Err(err(name, line, key, format_args!("{ev} eV: {why}")));
                    }
                    geom.wavelength = Some(wl);
                }
                "wavelength" => {
                    let wl =
                        parse_number(name, line, key, &value, &[("m", 1e10), ("A", 1.0)], 1e10)?;
                    if let Some(why) = out_of_range(wl, " Å", Check::Positive(1e10)) {
                        return Err(err(name, line, key, why));
                    }
                    geom.wavelength = Some(wl);
                }
                "electron_voltage" => {
                    return Err(err(
                        name,
                        line,
                        key,
                        "electron diffraction is not simulated",
                    ))
                }
                k if k.starts_with("group_") || k.starts_with("rigid_group") => {}
                "bandwidth"
                | "peak_list"
                | "peak_list_type"
                | "peak_info_location"
                | "hdf5_peak_path"
                | "detector_shift_x"
                | "detector_shift_y"
                | "photon_energy_bandwidth"
                | "photon_energy_scale"
                | "clen_for_centering"
                | "rail_direction" => geom.ignored.push(format!("{key} (line {line})")),
                k if panel_key(k) => {
                    defaults.insert(k.to_string(), (value, line));
                }
                _ => return Err(err(name, line, key, "unknown key")),
            },
        }
    }
    if panels.is_empty() {
        return Err(
            Error::input(format!("{name}: no panels (lines 'name/min_fs = …')"))
                .at_file(name)
                .with_flag("-geom"),
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    // the key as the line that set it wrote it: `clen` (a global line) or `p0/clen`
    let written = |pname: &str, k: &str, l: usize| {
        let own = lines
            .get(l.wrapping_sub(1))
            .and_then(|t| t.split('=').next())
            .is_some_and(|t| t.contains('/'));
        if own {
            format!("{pname}/{k}")
        } else {
            k.to_string()
        }
    };
    for (pname, first_line, s) in &panels {
        let get = |k: &str| s.get(k).map(|(v, l)| (v.as_str(), *l));
        let need = |k: &str| {
            get(k).ok_or_else(|| {
                err(
                    name,
                    *first_line,
                    &format!("{pname}/{k}"),
                    "missing (the panel needs it)",
                )
            })
        };
        let idx = |k: &str| -> Result<usize> {
            let (v, l) = need(k)?;
            parse_index(name, l, &written(pname, k, l), v)
        };
        let num = |k: &str, units: &[(&str, f64)], default: f64| -> Result<f64> {
            let (v, l) = need(k)?;
            parse_number(name, l, &written(pname, k, l), v, units, default)
        };
        let (min_fs, max_fs, min_ss, max_ss) = (
            idx("min_fs")?,
            idx("max_fs")?,
            idx("min_ss")?,
            idx("max_ss")?,
        );
        if max_fs < min_fs || max_ss < min_ss {
            let l = need("max_fs")?.1;
            return Err(err(
                name,
                l,
                &format!("{pname}/max_fs"),
                "max_fs/max_ss must not be below min_fs/min_ss (inclusive ranges)",
            ));
        }
        let vector = |k: &str| -> Result<V3> {
            let (v, l) = need(k)?;
            parse_vector(name, l, &written(pname, k, l), v)
        };
        // a value the flag that takes it would refuse, named by the line that set it
        let refuse = |k: &str, why: Option<String>| match why {
            None => Ok(()),
            Some(why) => {
                let l = need(k)?.1;
                Err(err(name, l, &written(pname, k, l), why))
            }
        };
        // the .expt reader's rule: fast and slow non-zero and perpendicular
        if let Some(why) = crate::vec3::axes_fault(vector("fs")?, vector("ss")?) {
            let l = need("fs")?.1.max(need("ss")?.1);
            return Err(err(name, l, &format!("{pname}/fs, {pname}/ss"), why));
        }
        let res = num("res", &[], 1.0)?;
        if !(res > 0.0) {
            refuse("res", Some("must be positive".into()))?;
        }
        refuse(
            "res",
            crate::io::pixel_out_of_range(1e3 / res).map(|w| format!("a pixel of {w}")),
        )?;
        let clen = num("clen", &[("m", 1.0), ("mm", 1e-3)], 1.0)?;
        refuse("clen", out_of_range(clen * 1e3, " mm", Check::Within(1e6)))?;
        let coffset = match get("coffset") {
            Some(_) => num("coffset", &[("m", 1.0), ("mm", 1e-3)], 1.0)?,
            None => 0.0,
        };
        refuse(
            "coffset",
            out_of_range(coffset * 1e3, " mm", Check::Within(1e6)),
        )?;
        // the panel's distance along the beam: in front of the sample (the writer puts it all in
        // `coffset`, with `clen = 0`)
        refuse(
            "clen",
            out_of_range(
                (clen + coffset) * 1e3,
                " mm (clen + coffset)",
                Check::Positive(1e6),
            ),
        )?;
        let max_adu = match get("max_adu") {
            Some(_) => num("max_adu", &[], 1.0)?,
            None => 0.0,
        };
        let no_index = match get("no_index") {
            Some((v, l)) => parse_bool(name, l, &written(pname, "no_index", l), v)?,
            None => false,
        };
        let mask_edge_pixels = match get("mask_edge_pixels") {
            Some((v, l)) => parse_index(name, l, &written(pname, "mask_edge_pixels", l), v)?,
            None => 0,
        };
        // a fixed index among the data block's dimensions: the module in a stack
        let mut module = None;
        for (k, (v, l)) in s.range("dim".to_string()..) {
            if !k.starts_with("dim") {
                break;
            }
            if v.bytes().all(|b| b.is_ascii_digit()) {
                let n = parse_index(name, *l, &written(pname, k, *l), v)?;
                if module.is_some() {
                    return Err(err(
                        name,
                        *l,
                        &written(pname, k, *l),
                        "more than one fixed dimension",
                    ));
                }
                module = Some(n);
            } else if !matches!(v.as_str(), "%" | "ss" | "fs") {
                return Err(err(
                    name,
                    *l,
                    &written(pname, k, *l),
                    format_args!("'{v}' is not %, ss, fs or an index"),
                ));
            }
        }
        for k in s.keys() {
            if k.starts_with("mask") || k.starts_with("flag_") || k.starts_with("saturation_map") {
                // named once per key, not once per panel
                let what = format!("{k} (panels)");
                if !geom.ignored.contains(&what) {
                    geom.ignored.push(what);
                }
            }
        }
        geom.panels.push(GeomPanel {
            name: pname.clone(),
            min_fs,
            max_fs,
            min_ss,
            max_ss,
            corner_x: num("corner_x", &[], 1.0)?,
            corner_y: num("corner_y", &[], 1.0)?,
            fs: vector("fs")?,
            ss: vector("ss")?,
            res,
            clen,
            coffset,
            max_adu,
            no_index,
            mask_edge_pixels,
            module,
            line: *first_line,
        });
    }
    // the stored image the panels need (a stack's modules one below the other) within the limit,
    // so that placing them cannot overflow
    let rows = geom.stack_rows() as u64;
    for p in &geom.panels {
        let bottom = (p.module.unwrap_or(0) as u64)
            .checked_mul(rows)
            .and_then(|r| r.checked_add(p.max_ss as u64 + 1));
        let pixels = bottom.and_then(|b| b.checked_mul(p.max_fs as u64 + 1));
        if pixels.is_none_or(|n| n > MAX_PIXELS as u64) {
            return Err(err(
                name,
                p.line,
                &p.name,
                format_args!(
                    "its place in the stored image (up to fast pixel {}, slow pixel {}) is beyond \
                     this build's detector limit ({MAX_PIXELS} pixels)",
                    p.max_fs,
                    bottom.map_or("2^64".into(), |b| (b - 1).to_string())
                ),
            ));
        }
    }
    for (bname, (first_line, s)) in bad {
        let has = |k: &str| s.contains_key(k);
        let n = |k: &str| -> Result<f64> {
            let (v, l) = s
                .get(k)
                .ok_or_else(|| err(name, first_line, &format!("{bname}/{k}"), "missing"))?;
            parse_number(name, *l, &format!("{bname}/{k}"), v, &[], 1.0)
        };
        let i = |k: &str| -> Result<usize> {
            let (v, l) = s
                .get(k)
                .ok_or_else(|| err(name, first_line, &format!("{bname}/{k}"), "missing"))?;
            parse_index(name, *l, &format!("{bname}/{k}"), v)
        };
        if has("min_x") || has("max_x") || has("min_y") || has("max_y") {
            geom.bad.push(BadRegion::Lab {
                name: bname.clone(),
                x: [n("min_x")?, n("max_x")?],
                y: [n("min_y")?, n("max_y")?],
            });
        } else {
            let (panel, l) = s.get("panel").ok_or_else(|| {
                err(
                    name,
                    first_line,
                    &format!("{bname}/panel"),
                    "missing (a bad region in fs/ss names its panel)",
                )
            })?;
            if !geom.panels.iter().any(|p| &p.name == panel) {
                return Err(err(
                    name,
                    *l,
                    &format!("{bname}/panel"),
                    format_args!("no panel '{panel}'"),
                ));
            }
            geom.bad.push(BadRegion::Pixels {
                name: bname.clone(),
                panel: panel.clone(),
                fs: [i("min_fs")?, i("max_fs")?],
                ss: [i("min_ss")?, i("max_ss")?],
            });
        }
    }
    Ok(geom)
}

/// CrystFEL lab → nanoBragg lab: (x, y, z) → (z, y, −x).
pub fn to_nanobragg(v: V3) -> V3 {
    [v[2], v[1], -v[0]]
}

/// nanoBragg lab → CrystFEL lab: (x, y, z) → (−z, y, x).
pub fn from_nanobragg(v: V3) -> V3 {
    [-v[2], v[1], v[0]]
}

/// A panel in nanoBragg's frame for the writer (and as the reader gives it).
#[derive(Clone, Debug, PartialEq)]
pub struct LabPanel {
    pub name: String,
    /// Stored image (fast, slow) of the first pixel and the pixel counts.
    pub data_origin: [usize; 2],
    pub size: [usize; 2],
    /// m.
    pub pixel: f64,
    /// Outer corner of the first pixel (m), unit fast and slow axes.
    pub origin: V3,
    pub fast: V3,
    pub slow: V3,
    pub saturation: f64,
}

impl Geom {
    /// The stored-image row where module `k` of a stack starts.
    fn stack_rows(&self) -> usize {
        if self.panels.iter().any(|p| p.module.is_some()) {
            self.panels.iter().map(|p| p.max_ss + 1).max().unwrap_or(0)
        } else {
            0
        }
    }

    /// The panels in nanoBragg's lab frame (m), each at its place in the stored image.
    pub fn lab_panels(&self) -> Vec<LabPanel> {
        let rows = self.stack_rows();
        self.panels
            .iter()
            .map(|p| {
                let unit = |v: V3| {
                    // scaled first: a vector like 1e-300x has a length that squares to 0
                    let m = v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
                    let v = v.map(|x| x / m);
                    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                    to_nanobragg([v[0] / n, v[1] / n, v[2] / n])
                };
                let corner = [p.corner_x / p.res, p.corner_y / p.res, p.clen + p.coffset];
                LabPanel {
                    name: p.name.clone(),
                    data_origin: [p.min_fs, p.min_ss + p.module.unwrap_or(0) * rows],
                    size: [p.max_fs - p.min_fs + 1, p.max_ss - p.min_ss + 1],
                    pixel: 1.0 / p.res,
                    origin: to_nanobragg(corner),
                    fast: unit(p.fs),
                    slow: unit(p.ss),
                    saturation: p.max_adu,
                }
            })
            .collect()
    }

    /// The mask of a stored image of `fpixels` × `spixels` (1 = use): bad regions, `no_index`
    /// panels and `mask_edge_pixels`. None when nothing is masked.
    pub fn mask(&self, fpixels: usize, spixels: usize) -> Option<Vec<u8>> {
        let lab = self.lab_panels();
        let mut m = vec![1u8; fpixels * spixels];
        let mut any = false;
        let mut off = |f: usize, s: usize| {
            if f < fpixels && s < spixels {
                m[s * fpixels + f] = 0;
                any = true;
            }
        };
        for (p, l) in self.panels.iter().zip(&lab) {
            let e = p.mask_edge_pixels;
            for ss in 0..l.size[1] {
                for fs in 0..l.size[0] {
                    let edge = fs < e || ss < e || fs + e >= l.size[0] || ss + e >= l.size[1];
                    if p.no_index || edge {
                        off(l.data_origin[0] + fs, l.data_origin[1] + ss);
                    }
                }
            }
        }
        for b in &self.bad {
            match b {
                BadRegion::Pixels { panel, fs, ss, .. } => {
                    let (p, l) = self
                        .panels
                        .iter()
                        .zip(&lab)
                        .find(|(p, _)| &p.name == panel)
                        .expect("checked by the parser");
                    // the region's fs/ss are of the data block; keep those inside the panel
                    for s in ss[0].max(p.min_ss)..=ss[1].min(p.max_ss) {
                        for f in fs[0].max(p.min_fs)..=fs[1].min(p.max_fs) {
                            off(
                                l.data_origin[0] + f - p.min_fs,
                                l.data_origin[1] + s - p.min_ss,
                            );
                        }
                    }
                }
                BadRegion::Lab { x, y, .. } => {
                    for (p, l) in self.panels.iter().zip(&lab) {
                        for ss in 0..l.size[1] {
                            for fs in 0..l.size[0] {
                                // the pixel's centre in the lab, pixel units
                                let (a, b) = (fs as f64 + 0.5, ss as f64 + 0.5);
                                let px = p.corner_x + a * p.fs[0] + b * p.ss[0];
                                let py = p.corner_y + a * p.fs[1] + b * p.ss[1];
                                if px >= x[0] && px <= x[1] && py >= y[0] && py <= y[1] {
                                    off(l.data_origin[0] + fs, l.data_origin[1] + ss);
                                }
                            }
                        }
                    }
                }
            }
        }
        any.then_some(m)
    }
}

fn fmt_vector(v: V3) -> String {
    let mut s = String::new();
    for (c, axis) in v.iter().zip(['x', 'y', 'z']) {
        if *c != 0.0 {
            s.push_str(&format!("{:+.10}{axis} ", c));
        }
    }
    if s.is_empty() {
        s.push_str("+0x");
    }
    s.trim_end().to_string()
}

/// A CrystFEL geometry file for panels in nanoBragg's lab frame (one 2-D data block `/entry/data/data`
/// of the NXmx file written beside it: `dim0 = %`, `dim1 = ss`, `dim2 = fs`), `clen` 0 and each
/// panel's z in its `coffset`, every value per panel (nothing depends on line order).
pub fn write_geom(panels: &[LabPanel], wavelength_a: f64, what: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "; CrystFEL geometry written by nanoBragg Web ({what})\n\
         ; lab frame: CrystFEL's (+z along the beam, +y up); lengths in metres\n\
         wavelength = {:.10e} m\n\
         clen = 0.0 m\n\
         data = /entry/data/data\n\
         dim0 = %\n\
         dim1 = ss\n\
         dim2 = fs\n\
         adu_per_photon = 1\n\n",
        wavelength_a * 1e-10
    ));
    for p in panels {
        let res = 1.0 / p.pixel;
        let c = from_nanobragg(p.origin);
        let n = &p.name;
        s.push_str(&format!(
            "{n}/min_fs = {}\n{n}/max_fs = {}\n{n}/min_ss = {}\n{n}/max_ss = {}\n\
             {n}/res = {res:.10}\n{n}/fs = {}\n{n}/ss = {}\n\
             {n}/corner_x = {:.10}\n{n}/corner_y = {:.10}\n{n}/coffset = {:.12} m\n",
            p.data_origin[0],
            p.data_origin[0] + p.size[0] - 1,
            p.data_origin[1],
            p.data_origin[1] + p.size[1] - 1,
            fmt_vector(from_nanobragg(p.fast)),
            fmt_vector(from_nanobragg(p.slow)),
            c[0] * res,
            c[1] * res,
            c[2],
        ));
        if p.saturation > 0.0 {
            s.push_str(&format!("{n}/max_adu = {}\n", p.saturation));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "\
; two panels
photon_energy = 9300 eV
res = 10000
clen = 0.1 m
adu_per_eV = 0.001
dim0 = %
dim1 = ss
dim2 = fs

p0/min_fs = 0
p0/max_fs = 99   ; inclusive
p0/min_ss = 0
p0/max_ss = 49
p0/fs = -1.0x
p0/ss = -1.0y
p0/corner_x = 100
p0/corner_y = 60
p0/coffset = 0.002

p1/min_fs = 0
p1/max_fs = 99
p1/min_ss = 50
p1/max_ss = 99
p1/fs = +0.0000x +1y
p1/ss = -x
p1/corner_x = -60.5
p1/corner_y = -100
p1/no_index = 0

bad_edge/min_fs = 0
bad_edge/max_fs = 4
bad_edge/min_ss = 98
bad_edge/max_ss = 200
bad_edge/panel = p1

group_all = p0,p1
";

    #[test]
    fn a_byte_order_mark_first_is_not_part_of_the_text() {
        let with = format!("\u{feff}{TWO}");
        assert_eq!(
            parse_geom("w.geom", with.as_bytes()),
            parse_geom("w.geom", TWO.as_bytes())
        );
        assert!(parse_geom("w.geom", with.as_bytes()).is_ok());
    }

    #[test]
    fn panels_defaults_and_inclusive_ranges() {
        let g = parse_geom("t.geom", TWO.as_bytes()).unwrap();
        assert_eq!(g.panels.len(), 2);
        let p0 = &g.panels[0];
        assert_eq!(
            (p0.max_fs, p0.max_ss, p0.res, p0.clen),
            (99, 49, 10000.0, 0.1)
        );
        assert_eq!(
            (p0.fs, p0.ss, p0.coffset),
            ([-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], 0.002)
        );
        assert_eq!(g.panels[1].ss, [-1.0, 0.0, 0.0]);
        assert!((g.wavelength.unwrap() - 12398.419843320026 / 9300.0).abs() < 1e-12);
        let lab = g.lab_panels();
        assert_eq!(lab[1].data_origin, [0, 50]);
        assert_eq!(lab[1].size, [100, 50]);
        // corner (100, 60) px = (0.01, 0.006) m at z = 0.102 → nanoBragg (0.102, 0.006, -0.01)
        let o = lab[0].origin;
        assert!((o[0] - 0.102).abs() < 1e-15 && (o[1] - 0.006).abs() < 1e-15);
        assert!((o[2] + 0.01).abs() < 1e-15);
        // CrystFEL -x → nanoBragg +z
        assert_eq!(lab[0].fast, [0.0, 0.0, 1.0]);
        let m = g.mask(100, 100).unwrap();
        assert_eq!(m.iter().filter(|&&v| v == 0).count(), 5 * 2);
        assert_eq!(m[98 * 100 + 4], 0);
        assert_eq!(m[98 * 100 + 5], 1);
    }

    #[test]
    fn written_files_read_back_to_the_same_panels() {
        let g = parse_geom("t.geom", TWO.as_bytes()).unwrap();
        let lab = g.lab_panels();
        let text = write_geom(&lab, g.wavelength.unwrap(), "test");
        let back = parse_geom("w.geom", text.as_bytes()).unwrap().lab_panels();
        assert_eq!(back.len(), 2);
        for (a, b) in lab.iter().zip(&back) {
            assert_eq!(
                (&a.name, a.data_origin, a.size),
                (&b.name, b.data_origin, b.size)
            );
            for c in 0..3 {
                assert!((a.origin[c] - b.origin[c]).abs() < 1e-12, "{a:?} {b:?}");
                assert!((a.fast[c] - b.fast[c]).abs() < 1e-9);
                assert!((a.slow[c] - b.slow[c]).abs() < 1e-9);
            }
            assert!((a.pixel - b.pixel).abs() < 1e-15);
        }
    }

    #[test]
    fn stacked_modules_go_down_the_stored_image() {
        let text = "res = 13333.3\nclen = 0.1\ndim0 = %\ndim2 = ss\ndim3 = fs\n\
            m0/dim1 = 0\nm0/min_fs = 0\nm0/max_fs = 9\nm0/min_ss = 0\nm0/max_ss = 4\n\
            m0/fs = x\nm0/ss = y\nm0/corner_x = 0\nm0/corner_y = 0\n\
            m1/dim1 = 1\nm1/min_fs = 0\nm1/max_fs = 9\nm1/min_ss = 0\nm1/max_ss = 4\n\
            m1/fs = x\nm1/ss = y\nm1/corner_x = 0\nm1/corner_y = 10\n";
        let g = parse_geom("s.geom", text.as_bytes()).unwrap();
        let lab = g.lab_panels();
        assert_eq!((lab[0].data_origin, lab[1].data_origin), ([0, 0], [0, 5]));
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = |t: &str| parse_geom("e.geom", t.as_bytes()).unwrap_err();
        let bad_vec = TWO.replace("p0/fs = -1.0x", "p0/fs = -1.0q");
        let x = e(&bad_vec);
        assert_eq!(
            x.message,
            "e.geom:14: p0/fs: '-1.0q' is not a vector like '-1.0x +0.5y'"
        );
        assert_eq!((x.line, x.key.as_deref()), (Some(14), Some("p0/fs")));
        let x = e(&TWO.replace("p1/corner_y = -100\n", ""));
        assert_eq!(
            x.message,
            "e.geom:20: p1/corner_y: missing (the panel needs it)"
        );
        let x = e(&TWO.replace("clen = 0.1 m", "clen = /LCLS/detector0-EncoderValue"));
        assert!(
            x.message.starts_with("e.geom:4: clen: '/LCLS"),
            "{}",
            x.message
        );
        let x = e(&TWO.replace("p0/max_ss = 49", "p0/colour = 49"));
        assert_eq!(x.message, "e.geom:13: p0/colour: unknown panel key");
        let x = e(&TWO.replace("bad_edge/panel = p1", "bad_edge/panel = q9"));
        assert_eq!(x.message, "e.geom:34: bad_edge/panel: no panel 'q9'");
        let x = e("res = 1\n");
        assert_eq!(x.message, "e.geom: no panels (lines 'name/min_fs = …')");
        let x = e(&TWO.replace("p0/max_fs = 99", "p0/max_fs = -3"));
        assert_eq!(x.message, "e.geom:11: p0/max_fs: '-3' is not a pixel index");
        assert_eq!(x.flag.as_deref(), Some("-geom"));
    }

    #[test]
    fn crafted_values_are_refused_naming_line_and_key() {
        let e = |t: &str| parse_geom("e.geom", t.as_bytes()).unwrap_err().message;
        // a non-ASCII character in a vector: an error, not a panic on a char boundary
        assert_eq!(
            e(&TWO.replace("p0/fs = -1.0x", "p0/fs = éx")),
            "e.geom:14: p0/fs: 'éx' is not a vector like '-1.0x +0.5y'"
        );
        assert!(e(&TWO.replace("p0/fs = -1.0x", "p0/fs = xé")).starts_with("e.geom:14: p0/fs:"));
        // an exponent's sign does not split the term
        let g = parse_geom(
            "t.geom",
            TWO.replace("p0/fs = -1.0x", "p0/fs = 1e-300x -2E-300y")
                .replace("p0/ss = -1.0y", "p0/ss = 2e-300x +1E-300y")
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(g.panels[0].fs, [1e-300, -2e-300, 0.0]);
        let f = g.lab_panels()[0].fast;
        assert!((f[1] + 2.0 / 5f64.sqrt()).abs() < 1e-12, "{f:?}");
        // indices and module numbers beyond the limit
        let huge = "18446744073709551615";
        assert!(
            e(&TWO.replace("p0/max_fs = 99", &format!("p0/max_fs = {huge}")))
                .starts_with("e.geom:11: p0/max_fs: 18446744073709551615 is beyond this build's")
        );
        let m = e(&TWO.replace("p0/max_fs = 99", "p0/max_fs = 999999999999"));
        assert!(
            m.starts_with("e.geom:11: p0/max_fs: 999999999999 is beyond this build's"),
            "{m}"
        );
        let m = e(&TWO
            .replace("dim1 = ss", &format!("dim1 = {}", MAX_PIXELS - 1))
            .replace("dim0 = %", "dim0 = ss"));
        assert!(m.contains("beyond this build's detector limit"), "{m}");
        // camera lengths and wavelengths the flags refuse
        let m = e(&TWO.replace("clen = 0.1 m", "clen = 1e300 m"));
        assert!(
            m.starts_with("e.geom:4: clen: 1e303 mm is out of range"),
            "{m}"
        );
        let m = e(&TWO.replace("clen = 0.1 m", "clen = -0.1 m"));
        assert!(
            m.starts_with("e.geom:4: clen: -98") && m.contains("(clen + coffset) is out of range"),
            "{m}"
        );
        let m = e(&TWO.replace("res = 10000", "res = 1e-300"));
        assert!(m.starts_with("e.geom:3: res: a pixel of"), "{m}");
        let m = e(&TWO.replace("res = 10000", "res = 1e300"));
        assert!(m.contains("at least 1e-6 mm"), "{m}");
        let m = e(&TWO.replace("9300 eV", "1e-300 eV"));
        assert!(m.starts_with("e.geom:2: photon_energy: 1e-300 eV: "), "{m}");
    }
}
