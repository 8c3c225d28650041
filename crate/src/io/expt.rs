//! DIALS experiment lists (`.expt` JSON, `-expt FILE`): the first experiment's beam, detector
//! (one panel), goniometer, scan and crystal A matrix, read here (`parse_expt`) and made the
//! simulation's by `resolve::expt::apply`, in nanoBragg's MOSFLM-like lab frame.
//!
//! Frames: dxtbx's imgCIF lab frame (beam towards −z, the usual fast +x, slow −y, axis +x) maps
//! to nanoBragg's (beam +x, fast +z, slow −y, spindle +z) by the transpose of
//! M: (x, y, z)_nanoBragg → (z, y, −x)_dxtbx (MODEL §3.5, `DIALS_ORIGIN`), i.e.
//! (x, y, z)_dxtbx → (−z, y, x)_nanoBragg. The panel becomes a CUSTOM detector with the SAMPLE
//! pivot whose first pixel's outer corner is the panel's origin (pix0 = −Fclose·f − Sclose·s +
//! close_distance·o with o = f × s); the crystal's real-space vectors, turned by the
//! goniometer's setting and fixed rotations (the crystal in the lab at scan angle 0), become a
//! MOSFLM matrix (λ-scaled reciprocal vectors).
//!
//! What the file states replaces the corresponding flags wherever they stand (detector size,
//! pixel, vectors, beam centre and distance, beam direction, wavelength, spindle, crystal
//! orientation); `-phi`/`-osc` given on the command line win over the scan's first image.
//! A detector of several panels is flattened: each panel's global frame is its `hierarchy`
//! group frames composed with its local one (dxtbx writes panels' and groups' vectors relative to
//! their parent: fast = F·f_x + S·f_y + N·f_z, origin = O + F·o_x + S·o_y + N·o_z with the
//! parent's fast F, slow S, normal N = F × S and origin O); the panels are stacked down the
//! stored image in the file's order (panel k's first row after panel k−1's last), which is also
//! how the NXmx file written from it places them. The sensor (material, thickness) is not taken
//! over: nanoBragg's sensor needs an attenuation depth the file does not hold
//! (`-detector_thick`, `-detector_abs`).

use crate::check::{Check, ANGLE};
use crate::error::{Error, Result};
use crate::io::{out_of_range, pixel_out_of_range};
use crate::limits::MAX_PIXELS;
use serde_json::Value;

type V3 = [f64; 3];

/// One panel in dxtbx's lab frame (global: the hierarchy applied), mm.
#[derive(Clone, Debug, PartialEq)]
pub struct ExptPanel {
    pub name: String,
    pub origin: V3,
    pub fast: V3,
    pub slow: V3,
    pub pixel: f64,
    pub image_size: (usize, usize),
    /// Trusted range of counts (`trusted_range`; [0, 0] when absent).
    pub trusted: [f64; 2],
}

/// What the first experiment of a list says (dxtbx frame, mm, Å, degrees).
#[derive(Clone, Debug, PartialEq)]
pub struct Expt {
    /// Every panel (the fields `origin` … `image_size` below are the first's).
    pub panels: Vec<ExptPanel>,
    /// Sample to source (dxtbx's beam `direction`), unit.
    pub beam_to_source: V3,
    pub wavelength: f64,
    pub origin: V3,
    pub fast: V3,
    pub slow: V3,
    pub pixel: f64,
    pub image_size: (usize, usize),
    /// Lab-frame rotation axis (setting rotation applied).
    pub axis: Option<V3>,
    /// First image's φ start and width (degrees).
    pub scan: Option<(f64, f64)>,
    /// Real-space a, b, c (Å) in the lab at scan angle 0.
    pub crystal: Option<[V3; 3]>,
}

fn err(name: &str, key: &str, what: impl std::fmt::Display) -> Error {
    Error::input(format!("{name}: {key}: {what}"))
        .at_file(name)
        .at_key(key)
        .with_flag("-expt")
}

fn get<'a>(name: &str, v: &'a Value, key: &str) -> Result<&'a Value> {
    v.get(key).ok_or_else(|| err(name, key, "missing"))
}

fn num(name: &str, v: &Value, key: &str) -> Result<f64> {
    get(name, v, key)?
        .as_f64()
        .filter(|x| x.is_finite())
        .ok_or_else(|| err(name, key, "expected a finite number"))
}

fn nums<const N: usize>(name: &str, v: &Value, key: &str) -> Result<[f64; N]> {
    let a = get(name, v, key)?
        .as_array()
        .filter(|a| a.len() == N)
        .ok_or_else(|| err(name, key, format_args!("expected {N} numbers")))?;
    let mut out = [0.0; N];
    for (o, x) in out.iter_mut().zip(a) {
        *o = x
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| err(name, key, format_args!("expected {N} finite numbers")))?;
    }
    Ok(out)
}

/// The model `kind` (e.g. "beam") the first experiment points to, if any.
fn model<'a>(name: &str, root: &'a Value, exp: &Value, kind: &str) -> Result<Option<&'a Value>> {
    let Some(i) = exp.get(kind) else {
        return Ok(None);
    };
    let i = i
        .as_u64()
        .ok_or_else(|| err(name, &format!("experiment[0].{kind}"), "expected an index"))?;
    root.get(kind)
        .and_then(|l| l.as_array())
        .and_then(|l| l.get(i as usize))
        .map(Some)
        .ok_or_else(|| err(name, kind, format_args!("no {kind} {i}")))
}

fn mat_vec(m: &[f64; 9], v: V3) -> V3 {
    [
        m[0] * v[0] + m[1] * v[1] + m[2] * v[2],
        m[3] * v[0] + m[4] * v[1] + m[5] * v[2],
        m[6] * v[0] + m[7] * v[1] + m[8] * v[2],
    ]
}

fn unit(name: &str, key: &str, v: V3) -> Result<V3> {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if !(n > 0.0) {
        return Err(err(name, key, "zero-length vector"));
    }
    Ok([v[0] / n, v[1] / n, v[2] / n])
}

/// Parses a DIALS experiment list; errors name the file and the key.
pub fn parse_expt(name: &str, bytes: &[u8]) -> Result<Expt> {
    super::check_not_utf16(name, bytes)?;
    let root: Value = serde_json::from_slice(super::without_bom(bytes)).map_err(|e| {
        Error::input(format!("{name}: not a DIALS experiment list (JSON): {e}"))
            .at_file(name)
            .at_line(e.line())
            .with_flag("-expt")
    })?;
    let exp = root
        .get("experiment")
        .and_then(|l| l.as_array())
        .and_then(|l| l.first())
        .ok_or_else(|| err(name, "experiment", "no experiment in the list"))?;
    let beam = model(name, &root, exp, "beam")?.ok_or_else(|| err(name, "beam", "missing"))?;
    let det =
        model(name, &root, exp, "detector")?.ok_or_else(|| err(name, "detector", "missing"))?;
    let panels = get(name, det, "panels")?
        .as_array()
        .ok_or_else(|| err(name, "panels", "expected a list"))?;
    if panels.is_empty() {
        return Err(err(name, "detector.panels", "no panel"));
    }
    // the global frame of each panel: its hierarchy groups' frames composed with its own
    let mut frames: Vec<Option<Frame>> = vec![None; panels.len()];
    match det.get("hierarchy") {
        Some(h) => walk(name, h, IDENTITY, panels, &mut frames, 0)?,
        None => {
            for (i, p) in panels.iter().enumerate() {
                frames[i] = Some(compose(name, IDENTITY, p)?);
            }
        }
    }
    let mut out = Vec::with_capacity(panels.len());
    for (i, (p, frame)) in panels.iter().zip(frames).enumerate() {
        let frame = match frame {
            Some(f) => f,
            // a panel the hierarchy does not list: dxtbx places it in the lab frame
            None => compose(name, IDENTITY, p)?,
        };
        out.push(panel(name, i, p, frame)?);
    }
    // the panels stacked down the stored image: its size within the build's limit
    let fast = out.iter().map(|p| p.image_size.0 as u64).max().unwrap_or(0);
    let slow = out
        .iter()
        .try_fold(0u64, |a, p| a.checked_add(p.image_size.1 as u64));
    if slow
        .and_then(|s| s.checked_mul(fast))
        .is_none_or(|n| n > MAX_PIXELS as u64)
    {
        return Err(err(
            name,
            "detector.panels",
            format_args!(
                "{} panels stacked need a stored image of {fast} x {} pixels, beyond this \
                 build's detector limit ({MAX_PIXELS} pixels)",
                out.len(),
                slow.map_or("2^64".into(), |s| s.to_string())
            ),
        ));
    }
    let p0 = out[0].clone();
    let gonio = model(name, &root, exp, "goniometer")?;
    let ident = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    let (setting, fixed) = match gonio {
        Some(g) => (
            if g.get("setting_rotation").is_some() {
                nums::<9>(name, g, "setting_rotation")?
            } else {
                ident
            },
            if g.get("fixed_rotation").is_some() {
                nums::<9>(name, g, "fixed_rotation")?
            } else {
                ident
            },
        ),
        None => (ident, ident),
    };
    let axis = match gonio {
        Some(g) => Some(unit(
            name,
            "rotation_axis",
            mat_vec(&setting, nums(name, g, "rotation_axis")?),
        )?),
        None => None,
    };
    let scan = match model(name, &root, exp, "scan")? {
        Some(s) => {
            let o: [f64; 2] = nums(name, s, "oscillation")?;
            for v in o {
                if let Some(why) = out_of_range(v, "°", Check::Within(ANGLE)) {
                    return Err(err(name, "oscillation", why));
                }
            }
            Some((o[0], o[1]))
        }
        None => None,
    };
    let crystal = match model(name, &root, exp, "crystal")? {
        Some(c) => {
            let mut v = [[0.0; 3]; 3];
            for (k, key) in ["real_space_a", "real_space_b", "real_space_c"]
                .iter()
                .enumerate()
            {
                v[k] = mat_vec(&setting, mat_vec(&fixed, nums(name, c, key)?));
            }
            Some(v)
        }
        None => None,
    };
    let wavelength = num(name, beam, "wavelength")?;
    if let Some(why) = out_of_range(wavelength, " Å", Check::Positive(1e10)) {
        return Err(err(name, "wavelength", why));
    }
    Ok(Expt {
        panels: out,
        beam_to_source: unit(name, "direction", nums(name, beam, "direction")?)?,
        wavelength,
        origin: p0.origin,
        fast: p0.fast,
        slow: p0.slow,
        pixel: p0.pixel,
        image_size: p0.image_size,
        axis,
        scan,
        crystal,
    })
}

/// A frame of the hierarchy: (fast, slow, origin), global.
type Frame = (V3, V3, V3);
const IDENTITY: Frame = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]);

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// A node's local frame (its `fast_axis`, `slow_axis`, `origin`) in its parent's global frame.
fn compose(name: &str, parent: Frame, node: &Value) -> Result<Frame> {
    let (pf, ps, po) = parent;
    let pn = cross(pf, ps);
    let local = |v: V3| [0, 1, 2].map(|c| pf[c] * v[0] + ps[c] * v[1] + pn[c] * v[2]);
    let f = unit(name, "fast_axis", nums(name, node, "fast_axis")?)?;
    let s = unit(name, "slow_axis", nums(name, node, "slow_axis")?)?;
    let o: V3 = nums(name, node, "origin")?;
    let lo = local(o);
    Ok((local(f), local(s), [0, 1, 2].map(|c| po[c] + lo[c])))
}

/// Walks the `hierarchy` tree: groups compose their frames, leaves (`{"panel": i}`) get theirs.
fn walk(
    name: &str,
    node: &Value,
    parent: Frame,
    panels: &[Value],
    frames: &mut [Option<Frame>],
    depth: usize,
) -> Result<()> {
    if depth > 64 {
        return Err(err(name, "hierarchy", "nested more than 64 deep"));
    }
    if let Some(i) = node.get("panel") {
        let i = i
            .as_u64()
            .map(|i| i as usize)
            .filter(|&i| i < panels.len())
            .ok_or_else(|| err(name, "hierarchy.panel", "not an index of detector.panels"))?;
        frames[i] = Some(compose(name, parent, &panels[i])?);
        return Ok(());
    }
    let here = compose(name, parent, node)?;
    if let Some(children) = node.get("children") {
        let children = children
            .as_array()
            .ok_or_else(|| err(name, "hierarchy.children", "expected a list"))?;
        for c in children {
            walk(name, c, here, panels, frames, depth + 1)?;
        }
    }
    Ok(())
}

/// Panel `i` with its global frame.
fn panel(name: &str, i: usize, p: &Value, (fast, slow, origin): Frame) -> Result<ExptPanel> {
    let px: [f64; 2] = nums(name, p, "pixel_size")?;
    if let Some(why) = pixel_out_of_range(px[0]) {
        return Err(err(name, "pixel_size", why));
    }
    if (px[0] - px[1]).abs() > 1e-12 * px[0] {
        return Err(err(
            name,
            "pixel_size",
            format_args!("{} x {} mm: nanoBragg's pixels are square", px[0], px[1]),
        ));
    }
    let size: [f64; 2] = nums(name, p, "image_size")?;
    if !(size[0] >= 1.0 && size[1] >= 1.0 && size[0].fract() == 0.0 && size[1].fract() == 0.0) {
        return Err(err(
            name,
            "image_size",
            "expected two positive whole numbers",
        ));
    }
    if size[0] * size[1] > MAX_PIXELS as f64 {
        return Err(err(
            name,
            "image_size",
            format_args!(
                "{} x {} pixels, beyond this build's detector limit ({MAX_PIXELS} pixels)",
                size[0], size[1]
            ),
        ));
    }
    let trusted = if p.get("trusted_range").is_some() {
        nums(name, p, "trusted_range")?
    } else {
        [0.0, 0.0]
    };
    let label = p
        .get("name")
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("panel{i}"), str::to_string);
    Ok(ExptPanel {
        name: label,
        origin,
        fast: unit(name, "fast_axis", fast)?,
        slow: unit(name, "slow_axis", slow)?,
        pixel: px[0],
        image_size: (size[0] as usize, size[1] as usize),
        trusted,
    })
}

/// dxtbx lab → nanoBragg lab: (x, y, z) → (−z, y, x).
pub fn to_nanobragg(v: V3) -> V3 {
    [-v[2], v[1], v[0]]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_first_is_not_part_of_the_text() {
        let with = format!("\u{feff}{ONE}");
        let e = parse_expt("w.expt", with.as_bytes()).unwrap();
        assert_eq!(e, parse_expt("w.expt", ONE.as_bytes()).unwrap());
    }

    pub(crate) const ONE: &str = r#"{"__id__": "ExperimentList",
      "experiment": [{"beam": 0, "detector": 0, "goniometer": 0, "scan": 0, "crystal": 0}],
      "beam": [{"direction": [0.0, 0.0, 1.0], "wavelength": 0.9}],
      "detector": [{"panels": [{"origin": [-25.7, 25.7, -80.0], "fast_axis": [1.0, 0.0, 0.0],
        "slow_axis": [0.0, -1.0, 0.0], "pixel_size": [0.1, 0.1], "image_size": [512, 400]}]}],
      "goniometer": [{"rotation_axis": [1.0, 0.0, 0.0],
        "fixed_rotation": [1,0,0,0,1,0,0,0,1], "setting_rotation": [1,0,0,0,1,0,0,0,1]}],
      "scan": [{"image_range": [1, 12], "oscillation": [5.0, 0.5]}],
      "crystal": [{"real_space_a": [40.0, 0.0, 0.0], "real_space_b": [0.0, 50.0, 0.0],
        "real_space_c": [0.0, 0.0, 60.0]}]}"#;

    #[test]
    fn one_experiment() {
        let e = parse_expt("x.expt", ONE.as_bytes()).unwrap();
        assert_eq!(e.image_size, (512, 400));
        assert_eq!(e.scan, Some((5.0, 0.5)));
        assert_eq!(e.beam_to_source, [0.0, 0.0, 1.0]);
        assert_eq!(e.origin, [-25.7, 25.7, -80.0]);
        assert_eq!((e.pixel, e.wavelength), (0.1, 0.9));
        assert_eq!(e.crystal.unwrap()[1], [0.0, 50.0, 0.0]);
        assert_eq!(to_nanobragg([1.0, 2.0, 3.0]), [-3.0, 2.0, 1.0]);
    }

    /// A detector of two panels under a group, as dxtbx writes it (local vectors); the first
    /// panel's global frame was printed by dxtbx itself (`Panel.get_origin()` etc.).
    #[test]
    fn hierarchy_is_flattened_as_dxtbx_does() {
        let text = r#"{"experiment": [{"beam": 0, "detector": 0}],
          "beam": [{"direction": [0.0, 0.0, 1.0], "wavelength": 1.0}],
          "detector": [{"panels": [
            {"name": "a", "fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, 1.0, 0.0],
             "origin": [1.0, 2.0, 3.0], "image_size": [10, 20], "pixel_size": [0.1, 0.1],
             "trusted_range": [-1, 65535]},
            {"name": "", "fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, 1.0, 0.0],
             "origin": [0.0, 0.0, 0.0], "image_size": [10, 20], "pixel_size": [0.1, 0.1]}],
           "hierarchy": {"fast_axis": [1.0, 0.0, 0.0], "slow_axis": [0.0, -1.0, 0.0],
             "origin": [-10.0, 10.0, -100.0], "children": [
               {"fast_axis": [0.0, 1.0, 0.0], "slow_axis": [1.0, 0.0, 0.0],
                "origin": [5.0, 6.0, 7.0], "children": [{"panel": 0}]},
               {"panel": 1}]}}]}"#;
        let e = parse_expt("h.expt", text.as_bytes()).unwrap();
        assert_eq!(e.panels.len(), 2);
        let a = &e.panels[0];
        assert_eq!(
            (a.fast, a.slow, a.origin),
            ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [-3.0, 3.0, -104.0])
        );
        assert_eq!((a.name.as_str(), a.trusted), ("a", [-1.0, 65535.0]));
        let b = &e.panels[1];
        assert_eq!(
            (b.fast, b.slow, b.origin),
            ([1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [-10.0, 10.0, -100.0])
        );
        assert_eq!(b.name, "panel1");
        assert_eq!(e.origin, a.origin);
    }

    #[test]
    fn errors_name_file_and_key() {
        let e = |text: &str| parse_expt("x.expt", text.as_bytes()).unwrap_err().message;
        assert!(e("{").starts_with("x.expt: not a DIALS experiment list (JSON)"));
        assert_eq!(e("{}"), "x.expt: experiment: no experiment in the list");
        let two = ONE.replace(
            r#""image_size": [512, 400]}]"#,
            r#""image_size": [512, 400]}, {"origin": [0,0,0]}]"#,
        );
        assert_eq!(e(&two), "x.expt: fast_axis: missing");
        let rect = ONE.replace("[0.1, 0.1]", "[0.1, 0.2]");
        assert_eq!(
            e(&rect),
            "x.expt: pixel_size: 0.1 x 0.2 mm: nanoBragg's pixels are square"
        );
        let bad = ONE.replace("\"wavelength\": 0.9", "\"wavelength\": \"x\"");
        assert_eq!(e(&bad), "x.expt: wavelength: expected a finite number");
        let short = ONE.replace("[-25.7, 25.7, -80.0]", "[1, 2]");
        assert_eq!(e(&short), "x.expt: origin: expected 3 numbers");
        let err = parse_expt("x.expt", b"{}").unwrap_err();
        assert_eq!(err.flag.as_deref(), Some("-expt"));
    }

    #[test]
    fn crafted_values_are_refused_naming_file_and_key() {
        let e = |from: &str, to: &str| {
            let err = parse_expt("x.expt", ONE.replace(from, to).as_bytes()).unwrap_err();
            assert_eq!(err.file.as_deref(), Some("x.expt"));
            (err.message, err.key.unwrap_or_default().to_string())
        };
        let (m, k) = e("[512, 400]", "[1e19, 400]");
        assert!(
            m.starts_with("x.expt: image_size: 10000000000000000000 x 400 pixels, beyond"),
            "{m}"
        );
        assert_eq!(k, "image_size");
        let (m, _) = e("[0.1, 0.1]", "[1e-300, 1e-300]");
        assert!(
            m.starts_with("x.expt: pixel_size: 1e-300 mm is out of range"),
            "{m}"
        );
        let (m, _) = e("[0.1, 0.1]", "[0, 0]");
        assert!(
            m.starts_with("x.expt: pixel_size: 0 mm is out of range"),
            "{m}"
        );
        let (m, k) = e("\"wavelength\": 0.9", "\"wavelength\": 1e300");
        assert!(
            m.starts_with("x.expt: wavelength: 1e300 Å is out of range"),
            "{m}"
        );
        assert_eq!(k, "wavelength");
        let (m, _) = e("[5.0, 0.5]", "[5.0, 1e300]");
        assert!(
            m.starts_with("x.expt: oscillation: 1e300° is out of range"),
            "{m}"
        );
        // many panels stacked beyond the limit (each within it)
        let panel = r#"{"origin": [0, 0, -80], "fast_axis": [1, 0, 0], "slow_axis": [0, -1, 0],
            "pixel_size": [0.1, 0.1], "image_size": [30000, 30000]}"#;
        let many = format!(
            r#"{{"experiment": [{{"beam": 0, "detector": 0}}],
            "beam": [{{"direction": [0, 0, 1], "wavelength": 1}}],
            "detector": [{{"panels": [{}]}}]}}"#,
            [panel; 3].join(",")
        );
        let err = parse_expt("m.expt", many.as_bytes()).unwrap_err();
        assert!(
            err.message.starts_with("m.expt: detector.panels: 3 panels stacked need a stored image of 30000 x 90000 pixels"),
            "{}",
            err.message
        );
    }
}
