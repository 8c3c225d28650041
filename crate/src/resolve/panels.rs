//! The detector as a list of panels (`plan::Panel`): today's single panel (every convention,
//! pivot, tilt and two-theta rule, or the curved form) as one panel over the whole image; a
//! `-detector` preset's modules; the panels of a DIALS `.expt` or a CrystFEL `.geom`
//! ([`PanelSpec`], nanoBragg's lab frame). Pixels of no panel are masked (so statistics, the
//! miniCBF's −1 and the cost see them as gaps), and the kernels skip them in any case.

use crate::args::{Convention, Options, Pivot};
use crate::error::{Error, Result};
use crate::io::expt::{to_nanobragg, Expt};
use crate::io::geom::Geom;
use crate::plan::{Panel, Plan};
use crate::presets::DetectorPreset;
use crate::resolve::detector::Detector;
use crate::vec3::{cross, dot, unitize, V3};

/// The resolved single-panel detector as one panel covering the whole stored image.
pub fn single(det: &Detector, thick: f64, mu: f64) -> Panel {
    Panel {
        name: "panel0".to_string(),
        data_origin: [0, 0],
        size: [det.fpixels, det.spixels],
        pixel: det.pixel,
        origin: det.pix0,
        fdet: det.fdet,
        sdet: det.sdet,
        odet: det.odet,
        pix0: det.pix0,
        close_distance: det.close_distance,
        thick,
        mu,
        saturation: 0.0,
        trusted: [0.0, 0.0],
    }
}

/// A preset's modules as panels of the plan's one flat panel (same plane, same reference
/// point: each module's pixels render bit-identically to the whole panel's), in raster order,
/// named `module_NN` (NN = row × modules across + column: names sort in panel order). None when the
/// preset has no gaps or the detector no longer has its pixel counts.
pub fn preset_modules(plan: &Plan, p: &DetectorPreset) -> Option<Vec<Panel>> {
    if (p.gap_fast == 0 && p.gap_slow == 0)
        || plan.panels.len() != 1
        || plan.curved
        || (plan.fpixels, plan.spixels) != (p.fast_pixels, p.slow_pixels)
    {
        return None;
    }
    let whole = &plan.panels[0];
    let (nf, ns) = p.modules();
    let mut out = Vec::with_capacity(nf * ns);
    for j in 0..ns {
        for i in 0..nf {
            let mut m = whole.sub_panel(
                &format!("module_{:02}", j * nf + i),
                i * (p.module_fast + p.gap_fast),
                j * (p.module_slow + p.gap_slow),
                p.module_fast,
                p.module_slow,
            );
            m.saturation = p.saturation as f64;
            m.trusted = [0.0, p.saturation as f64];
            out.push(m);
        }
    }
    Some(out)
}

/// One panel as a file states it, in nanoBragg's lab frame (m, unit vectors).
#[derive(Clone, Debug, PartialEq)]
pub struct PanelSpec {
    pub name: String,
    pub data_origin: [usize; 2],
    pub size: [usize; 2],
    pub pixel: f64,
    /// Outer corner of the first pixel (m).
    pub origin: V3,
    pub fdet: V3,
    pub sdet: V3,
    /// Sensor thickness (m; 0 = not stated), saturation (0 = not stated), trusted range.
    pub thick: f64,
    pub saturation: f64,
    pub trusted: [f64; 2],
}

/// The panels of a DIALS experiment (dxtbx frame, mm) in nanoBragg's frame (m), stacked down
/// the stored image in the file's order.
pub fn from_expt(e: &Expt) -> Vec<PanelSpec> {
    let mut row = 0;
    e.panels
        .iter()
        .map(|p| {
            let spec = PanelSpec {
                name: p.name.clone(),
                data_origin: [0, row],
                size: [p.image_size.0, p.image_size.1],
                pixel: p.pixel * 1e-3,
                origin: to_nanobragg(p.origin).map(|x| x * 1e-3),
                fdet: to_nanobragg(p.fast),
                sdet: to_nanobragg(p.slow),
                thick: 0.0,
                saturation: p.trusted[1],
                trusted: p.trusted,
            };
            row += p.image_size.1;
            spec
        })
        .collect()
}

/// The panels of a CrystFEL geometry file in nanoBragg's frame (m).
pub fn from_geom(g: &Geom) -> Vec<PanelSpec> {
    g.lab_panels()
        .into_iter()
        .map(|p| PanelSpec {
            name: p.name,
            data_origin: p.data_origin,
            size: p.size,
            pixel: p.pixel,
            origin: p.origin,
            fdet: p.fast,
            sdet: p.slow,
            thick: 0.0,
            saturation: p.saturation,
            trusted: [0.0, p.saturation],
        })
        .collect()
}

/// The options of a CUSTOM, SAMPLE-pivot detector whose plane is the first panel's and whose
/// pixels are the stored image's (the whole-detector quantities: header, beam centre, `pix0`),
/// as `resolve::expt::apply` places a single panel. The panels replace it in the plan.
pub fn place_options(o: &mut Options, specs: &[PanelSpec]) {
    let first = &specs[0];
    let (f, _) = unitize(first.fdet);
    let (s, _) = unitize(first.sdet);
    let n = cross(f, s);
    let (fp, sp) = image_extent(specs);
    let pix0 = Panel::reference(first.origin, f, s, first.pixel, first.data_origin);
    custom_plane(o, [f, s, n], pix0, first.pixel, [fp, sp]);
    if o.beam_vector.is_none() {
        o.beam_vector = Some([1.0, 0.0, 0.0]);
    }
}

/// A CUSTOM, SAMPLE-pivot detector with unit axes `[f, s, n]`, first-pixel corner `pix0` (m),
/// pitch `pixel` (m) and `[fast, slow]` pixels: the flags every other placement sets are cleared
/// (sizes, distance, ORGX/ORGY, rotations, two-theta) and the beam centre is where `pix0` puts it
/// (`-expt` with one panel, and the whole-detector frame of several panels).
pub fn custom_plane(
    o: &mut Options,
    [f, s, n]: [V3; 3],
    pix0: V3,
    pixel: f64,
    [fp, sp]: [usize; 2],
) {
    o.convention = Convention::Custom;
    o.pivot = Pivot::Sample;
    o.fdet_vector = Some(f);
    o.sdet_vector = Some(s);
    o.odet_vector = Some(n);
    o.pixel = Some(pixel);
    o.fpixels = Some(fp as i64);
    o.spixels = Some(sp as i64);
    o.detsize_f = None;
    o.detsize_s = None;
    let (fclose, sclose, close) = (-dot(pix0, f), -dot(pix0, s), dot(pix0, n));
    o.xclose = Some(fclose);
    o.yclose = Some(sclose);
    o.xbeam = Some(fclose);
    o.ybeam = Some(sclose);
    o.close_distance = Some(close);
    o.distance = None;
    o.orgx = None;
    o.orgy = None;
    (o.twotheta, o.rotx, o.roty, o.rotz) = (0.0, 0.0, 0.0, 0.0);
    o.twotheta_axis = None;
}

/// The stored image's size: the smallest that holds every panel's rectangle.
pub fn image_extent(specs: &[PanelSpec]) -> (usize, usize) {
    specs.iter().fold((0, 0), |(f, s), p| {
        (
            f.max(p.data_origin[0] + p.size[0]),
            s.max(p.data_origin[1] + p.size[1]),
        )
    })
}

/// Panels from a file's list (`what` names the file for errors): one pixel pitch, the plan's
/// sensor, fast ⟂ slow, no two panels on one stored pixel.
pub fn from_specs(what: &str, specs: &[PanelSpec], thick: f64, mu: f64) -> Result<Vec<Panel>> {
    let bad = |name: &str, msg: String| {
        Error::geometry(format!("{what}: panel {name}: {msg}"))
            .at_file(what)
            .at_key(name)
    };
    let Some(first) = specs.first() else {
        return Err(Error::geometry(format!("{what}: no panels")).at_file(what));
    };
    let mut out: Vec<Panel> = Vec::with_capacity(specs.len());
    let mut cover = Cover::new(image_extent(specs));
    for p in specs {
        if p.size[0] == 0 || p.size[1] == 0 {
            return Err(bad(&p.name, "has no pixels".into()));
        }
        if (p.pixel - first.pixel).abs() > 1e-9 * first.pixel {
            return Err(bad(
                &p.name,
                format!(
                    "pixel size {} mm differs from the first panel's {} mm: one pixel size per \
                     detector is rendered",
                    p.pixel * 1e3,
                    first.pixel * 1e3
                ),
            ));
        }
        let (f, fl) = unitize(p.fdet);
        let (s, sl) = unitize(p.sdet);
        if !(fl > 0.0 && sl > 0.0) || dot(f, s).abs() > 1e-6 {
            return Err(bad(
                &p.name,
                "fast and slow axes must be non-zero and perpendicular".into(),
            ));
        }
        // the normal points away from the sample (into the sensor), whichever way f × s turns
        let n = cross(f, s);
        let o = if dot(p.origin, n) < 0.0 {
            n.map(|x| -x)
        } else {
            n
        };
        if let Some(q) = cover.overlap(p, specs) {
            return Err(bad(
                &p.name,
                format!("overlaps panel {} in the stored image", q.name),
            ));
        }
        let far = crate::vec3::mag_scaled(p.origin);
        if !(far <= crate::limits::MAX_DETECTOR_DISTANCE_M) {
            return Err(bad(
                &p.name,
                format!(
                    "its origin is {} mm from the sample, more than {} mm",
                    crate::cfmt::fmt_g(far * 1e3),
                    crate::cfmt::fmt_g(crate::limits::MAX_DETECTOR_DISTANCE_M * 1e3)
                ),
            ));
        }
        let close = dot(p.origin, o);
        if !(close.abs() > 0.0) {
            return Err(bad(&p.name, "its plane passes through the sample".into()));
        }
        out.push(Panel {
            name: p.name.clone(),
            data_origin: p.data_origin,
            size: p.size,
            pixel: first.pixel,
            origin: p.origin,
            fdet: f,
            sdet: s,
            odet: o,
            pix0: Panel::reference(p.origin, f, s, first.pixel, p.data_origin),
            close_distance: close,
            thick,
            mu,
            saturation: p.saturation,
            trusted: p.trusted,
        });
    }
    Ok(out)
}

/// The stored pixels the panels seen so far cover, one bit each: finding overlaps takes time
/// linear in the pixels, whatever the number of panels.
struct Cover {
    fast: usize,
    bits: Vec<u64>,
}

impl Cover {
    fn new((fast, slow): (usize, usize)) -> Cover {
        Cover {
            fast,
            bits: vec![0; (fast * slow).div_ceil(64)],
        }
    }

    /// Marks `p`'s pixels; the earlier panel of `specs` it overlaps, if any.
    fn overlap<'a>(&mut self, p: &PanelSpec, specs: &'a [PanelSpec]) -> Option<&'a PanelSpec> {
        let [f0, s0] = p.data_origin;
        for s in s0..s0 + p.size[1] {
            for i in s * self.fast + f0..s * self.fast + f0 + p.size[0] {
                let (w, b) = (i / 64, 1u64 << (i % 64));
                if self.bits[w] & b != 0 {
                    let f = i - s * self.fast;
                    return specs.iter().find(|q| {
                        f.wrapping_sub(q.data_origin[0]) < q.size[0]
                            && s.wrapping_sub(q.data_origin[1]) < q.size[1]
                    });
                }
                self.bits[w] |= b;
            }
        }
        None
    }
}

/// Mask the stored pixels of no panel (joined to the mask already there): time linear in the
/// pixels and panels.
pub fn mask_gaps(plan: &mut Plan) {
    let (fp, sp) = (plan.fpixels, plan.spixels);
    let whole = plan.panels.len() == 1 && plan.panels[0].data_origin == [0, 0] && {
        let s = plan.panels[0].size;
        s[0] >= fp && s[1] >= sp
    };
    if whole {
        return;
    }
    let mut cover = vec![0u8; fp * sp];
    for p in &plan.panels {
        let [f0, s0] = p.data_origin;
        let f1 = f0.saturating_add(p.size[0]).min(fp);
        for s in s0..s0.saturating_add(p.size[1]).min(sp) {
            if f0 < f1 {
                cover[s * fp + f0..s * fp + f1].fill(1);
            }
        }
    }
    if let Some(m) = &plan.mask {
        for (c, &m) in cover.iter_mut().zip(m) {
            *c = if *c != 0 { m } else { 0 };
        }
    }
    plan.mask = Some(cover);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, at: [usize; 2], origin: V3) -> PanelSpec {
        PanelSpec {
            name: name.into(),
            data_origin: at,
            size: [4, 3],
            pixel: 1e-4,
            origin,
            fdet: [0.0, 0.0, 1.0],
            sdet: [0.0, -1.0, 0.0],
            thick: 0.0,
            saturation: 0.0,
            trusted: [0.0, 0.0],
        }
    }

    #[test]
    fn specs_become_panels_and_bad_ones_are_named() {
        let a = spec("a", [0, 0], [0.1, 0.0, 0.0]);
        let b = spec("b", [4, 0], [0.1, 0.0, 0.0004]);
        let p = from_specs("x.geom", &[a.clone(), b.clone()], 0.0, 0.0).unwrap();
        assert_eq!(image_extent(&[a.clone(), b.clone()]), (8, 3));
        assert_eq!(p[1].odet, [1.0, 0.0, 0.0]);
        assert!((p[1].pix0[2] - 0.0).abs() < 1e-18 && (p[1].close_distance - 0.1).abs() < 1e-15);
        let mut c = b.clone();
        c.data_origin = [2, 1];
        let e = from_specs("x.geom", &[a.clone(), c], 0.0, 0.0).unwrap_err();
        assert_eq!(
            e.message,
            "x.geom: panel b: overlaps panel a in the stored image"
        );
        let mut d = b.clone();
        d.pixel = 2e-4;
        assert!(from_specs("x.geom", &[a.clone(), d], 0.0, 0.0)
            .unwrap_err()
            .message
            .contains("pixel size 0.2 mm differs"));
        let mut s = b.clone();
        s.sdet = [0.0, 0.0, 1.0];
        assert!(from_specs("x.geom", &[a.clone(), s], 0.0, 0.0)
            .unwrap_err()
            .message
            .contains("perpendicular"));
        // a panel beyond the placement limit (the fuzz run's 1e300 mm .expt: positions overflow
        // the single-precision kernels, NaN pixels)
        let mut far = b;
        far.origin = [1e297, 0.0, 0.0004];
        assert_eq!(
            from_specs("x.geom", &[a, far], 0.0, 0.0)
                .unwrap_err()
                .message,
            "x.geom: panel b: its origin is 1e+300 mm from the sample, more than 1e+15 mm"
        );
    }
}
