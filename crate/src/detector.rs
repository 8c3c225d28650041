//! Detector geometry: conventions, beam centre mapping, pivots, rotations and `pix0`
//! (MODEL §3.2–§3.5). Everything in f64, in upstream's association order.

use crate::args::{Convention, Options, Pivot};
use crate::error::{Error, Result};
use crate::vec3::{cross, dot, mag, rotaxis, rotxyz, unit, unitize, V3};

/// The detector as placed, plus the values upstream reports in headers.
#[derive(Clone, Debug)]
pub struct Detector {
    pub convention: Convention,
    pub pivot: Pivot,
    pub fpixels: usize,
    pub spixels: usize,
    pub pixel: f64,
    pub detsize_f: f64,
    pub detsize_s: f64,
    pub fdet: V3,
    pub sdet: V3,
    pub odet: V3,
    pub beam: V3,
    pub polar_axis: V3,
    pub spindle: V3,
    pub twotheta_axis: V3,
    /// unit(beam x polar_axis): the "vertical" axis of the divergence grid.
    pub vert: V3,
    pub pix0: V3,
    /// Convention-frame beam centre as given or defaulted (header BEAM_CENTER_X/Y).
    pub xbeam: f64,
    pub ybeam: f64,
    pub fbeam: f64,
    pub sbeam: f64,
    pub fclose: f64,
    pub sclose: f64,
    pub close_distance: f64,
    pub distance: f64,
    pub ratio: f64,
    pub orgx: f64,
    pub orgy: f64,
    pub dials_origin: V3,
    pub twotheta: f64,
    pub warnings: Vec<String>,
}

/// Starting values that an `-img`/`-mask` header may supply (CLI flags override them).
#[derive(Clone, Debug, Default)]
pub struct HeaderDefaults {
    pub fpixels: Option<i64>,
    pub spixels: Option<i64>,
    pub pixel: Option<f64>,
    pub distance: Option<f64>,
    pub close_distance: Option<f64>,
    pub xbeam: Option<f64>,
    pub ybeam: Option<f64>,
    pub orgx: Option<f64>,
    pub orgy: Option<f64>,
}

/// Pixel counts and sizes (MODEL §3.2).
pub fn detector_size(o: &Options, hd: &HeaderDefaults) -> Result<(usize, usize, f64, f64, f64)> {
    let pixel = o.pixel.or(hd.pixel).unwrap_or(1e-4);
    if !(pixel > 0.0) || !pixel.is_finite() {
        return Err(Error::geometry(format!(
            "-pixel: pixel size must be positive, got {} mm",
            pixel * 1e3
        )));
    }
    let mut detsize_f = o.detsize_f.unwrap_or(0.1024);
    let mut detsize_s = o.detsize_s.unwrap_or(0.1024);
    let fpix = o.fpixels.or(hd.fpixels).unwrap_or(0);
    let spix = o.spixels.or(hd.spixels).unwrap_or(0);
    if fpix < 0 || spix < 0 {
        return Err(Error::geometry(
            "-detpixels: pixel counts must not be negative",
        ));
    }
    if fpix != 0 {
        detsize_f = pixel * fpix as f64;
    }
    if spix != 0 {
        detsize_s = pixel * spix as f64;
    }
    let fpixels = (detsize_f / pixel - 0.5).ceil();
    let spixels = (detsize_s / pixel - 0.5).ceil();
    if !(fpixels >= 1.0 && spixels >= 1.0) {
        return Err(Error::geometry(
            "detector has no pixels (check -detpixels / -detsize / -pixel)",
        ));
    }
    if fpixels * spixels > 1.0e9 {
        return Err(Error::geometry(format!(
            "detector of {fpixels}x{spixels} pixels is too large (at most 1e9 pixels)"
        )));
    }
    Ok((
        fpixels as usize,
        spixels as usize,
        pixel,
        detsize_f,
        detsize_s,
    ))
}

pub fn resolve_detector(o: &Options, hd: &HeaderDefaults) -> Result<Detector> {
    let (fpixels, spixels, px, df, ds) = detector_size(o, hd)?;
    let mut warnings = Vec::new();

    // Step A: near-point defaults
    let orgx = o.orgx.or(hd.orgx);
    let orgy = o.orgy.or(hd.orgy);
    let mut fclose = orgx.map_or(df / 2.0, |v| (v - 0.5) * px);
    let mut sclose = orgy.map_or(ds / 2.0, |v| (v - 0.5) * px);
    let xclose = o.xclose.unwrap_or(fclose);
    let yclose = o.yclose.unwrap_or(sclose);
    let user_xbeam = o.xbeam.or(hd.xbeam);
    let user_ybeam = o.ybeam.or(hd.ybeam);

    // Step B: convention block
    let conv = o.convention;
    let (b, f, s, od, t2, p, u);
    let (xbeam, ybeam, fbeam, sbeam);
    let mut pivot = o.pivot;
    match conv {
        Convention::Mosflm | Convention::Denzo => {
            b = [1.0, 0.0, 0.0];
            f = [0.0, 0.0, 1.0];
            s = [0.0, -1.0, 0.0];
            od = [1.0, 0.0, 0.0];
            t2 = [0.0, 0.0, -1.0];
            p = [0.0, 0.0, 1.0];
            u = [0.0, 0.0, 1.0];
            xbeam = user_xbeam.unwrap_or((ds + px) / 2.0);
            ybeam = user_ybeam.unwrap_or((df + px) / 2.0);
            if conv == Convention::Mosflm {
                fbeam = ybeam + px / 2.0;
                sbeam = xbeam + px / 2.0;
            } else {
                fbeam = ybeam;
                sbeam = xbeam;
            }
            pivot = Pivot::Beam;
        }
        Convention::Adxv => {
            b = [0.0, 0.0, 1.0];
            f = [1.0, 0.0, 0.0];
            s = [0.0, -1.0, 0.0];
            od = [0.0, 0.0, 1.0];
            t2 = [-1.0, 0.0, 0.0];
            p = [1.0, 0.0, 0.0];
            u = [1.0, 0.0, 0.0];
            xbeam = user_xbeam.unwrap_or((df + px) / 2.0);
            ybeam = user_ybeam.unwrap_or((ds - px) / 2.0);
            fbeam = xbeam;
            sbeam = ds - ybeam;
            pivot = Pivot::Beam;
        }
        Convention::Xds | Convention::Dials => {
            b = [0.0, 0.0, 1.0];
            f = [1.0, 0.0, 0.0];
            s = [0.0, 1.0, 0.0];
            od = [0.0, 0.0, 1.0];
            if conv == Convention::Xds {
                t2 = [1.0, 0.0, 0.0];
                p = [1.0, 0.0, 0.0];
                u = [1.0, 0.0, 0.0];
            } else {
                t2 = [0.0, 1.0, 0.0];
                p = [0.0, 1.0, 0.0];
                u = [0.0, 1.0, 0.0];
            }
            xbeam = user_xbeam.unwrap_or(xclose);
            ybeam = user_ybeam.unwrap_or(yclose);
            fbeam = xbeam;
            sbeam = ybeam;
            pivot = Pivot::Sample;
        }
        Convention::Custom => {
            b = o.beam_vector.unwrap_or([1.0, 0.0, 0.0]);
            f = o.fdet_vector.unwrap_or([0.0, 0.0, 1.0]);
            s = o.sdet_vector.unwrap_or([0.0, -1.0, 0.0]);
            od = o.odet_vector.unwrap_or([1.0, 0.0, 0.0]);
            t2 = o.twotheta_axis.unwrap_or([0.0, 1.0, 0.0]);
            p = o.polar_vector.unwrap_or([0.0, 0.0, 1.0]);
            u = o.spindle_axis.unwrap_or([0.0, 0.0, 1.0]);
            xbeam = user_xbeam.unwrap_or(xclose);
            ybeam = user_ybeam.unwrap_or(yclose);
            fbeam = xbeam;
            sbeam = ybeam;
            fclose = xbeam;
            sclose = ybeam;
        }
    }

    // Step C: normalisation
    let b = unit(b);
    let f = unit(f);
    let s = unit(s);
    let (mut od, m) = unitize(od);
    if m != 1.0 {
        od = unit(cross(f, s));
        warnings.push("WARNING: auto-generating odet_vector".to_string());
    }
    let p = unit(p);
    let u = unit(u);
    let vert = unit(cross(b, p));
    for (name, v) in [
        ("beam", b),
        ("fast", f),
        ("slow", s),
        ("polarization", p),
        ("spindle", u),
    ] {
        if mag(v) == 0.0 || !v.iter().all(|x| x.is_finite()) {
            return Err(Error::geometry(format!(
                "the {name} axis vector is zero or not finite"
            )));
        }
    }

    // Placement (MODEL §3.5)
    let (rx, ry, rz, tt) = (o.rotx, o.roty, o.rotz, o.twotheta);
    let o_r = rotxyz(od, rx, ry, rz);
    let mut ratio = dot(b, o_r);
    if ratio == 0.0 {
        ratio = f64::MIN_POSITIVE;
    }
    let distance_in = o.distance.or(hd.distance).unwrap_or(0.1);
    let mut close_distance = match o.close_distance.or(hd.close_distance) {
        Some(c) => c,
        None => (ratio * distance_in).abs(),
    };
    let mut distance = close_distance / ratio;
    if ratio.abs() < 1e-12 {
        return Err(Error::geometry(
            "detector is parallel to the beam (beam . detector normal = 0)",
        ));
    }

    let mut pix0 = [0.0; 3];
    if pivot == Pivot::Sample {
        let mut pp = [0.0; 3];
        for i in 0..3 {
            pp[i] = ((-fclose * f[i]) - (sclose * s[i])) + (close_distance * od[i]);
        }
        pp = rotxyz(pp, rx, ry, rz);
        pix0 = rotaxis(pp, t2, tt);
    }
    let f = rotaxis(rotxyz(f, rx, ry, rz), t2, tt);
    let s = rotaxis(rotxyz(s, rx, ry, rz), t2, tt);
    let od = rotaxis(rotxyz(od, rx, ry, rz), t2, tt);
    if pivot == Pivot::Beam {
        for i in 0..3 {
            pix0[i] = ((-fbeam * f[i]) - (sbeam * s[i])) + (distance * b[i]);
        }
    }

    // derived quantities
    fclose = -dot(pix0, f);
    sclose = -dot(pix0, s);
    close_distance = dot(pix0, od);
    let mut r = [0.0; 3];
    for i in 0..3 {
        r[i] = (close_distance / ratio) * b[i] - pix0[i];
    }
    let fbeam = dot(f, r);
    let sbeam = dot(s, r);
    distance = close_distance / ratio;
    let orgx = fclose / px + 0.5;
    let orgy = sclose / px + 0.5;
    let dials_origin = [
        1000.0 * dot(pix0, [0.0, 0.0, 1.0]),
        1000.0 * dot(pix0, [0.0, 1.0, 0.0]),
        1000.0 * dot(pix0, [-1.0, 0.0, 0.0]),
    ];
    if !pix0.iter().all(|x| x.is_finite()) || !distance.is_finite() {
        return Err(Error::geometry(
            "detector placement is not finite (check distance, beam centre and vectors)",
        ));
    }

    Ok(Detector {
        convention: conv,
        pivot,
        fpixels,
        spixels,
        pixel: px,
        detsize_f: df,
        detsize_s: ds,
        fdet: f,
        sdet: s,
        odet: od,
        beam: b,
        polar_axis: p,
        spindle: u,
        twotheta_axis: t2,
        vert,
        pix0,
        xbeam,
        ybeam,
        fbeam,
        sbeam,
        fclose,
        sclose,
        close_distance,
        distance,
        ratio,
        orgx,
        orgy,
        dials_origin,
        twotheta: tt,
        warnings,
    })
}

pub fn convention_name(c: Convention) -> &'static str {
    match c {
        Convention::Mosflm => "MOSFLM",
        Convention::Xds => "XDS",
        Convention::Adxv => "ADXV",
        Convention::Denzo => "DENZO",
        Convention::Dials => "DIALS",
        Convention::Custom => "CUSTOM",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    fn det(s: &str) -> Detector {
        let o = parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap();
        resolve_detector(&o, &HeaderDefaults::default()).unwrap()
    }

    fn close(a: V3, b: V3) -> bool {
        (0..3).all(|i| (a[i] - b[i]).abs() < 1e-12)
    }

    #[test]
    fn mosflm_default_pix0_and_centres() {
        // MODEL §3.10
        let d = det("");
        assert!(close(d.pix0, [0.1, 0.0513, -0.0513]), "{:?}", d.pix0);
        assert!((d.xbeam - 0.05125).abs() < 1e-15 && (d.fbeam - 0.0513).abs() < 1e-12);
        assert!((d.orgx - 513.5).abs() < 1e-9);
        assert!(close(d.dials_origin, [-51.3, 51.3, -100.0]));
    }

    #[test]
    fn mosflm_explicit_beam_adds_half_pixel() {
        let d = det("-Xbeam 51.2 -Ybeam 51.2");
        assert!(close(d.pix0, [0.1, 0.05125, -0.05125]), "{:?}", d.pix0);
    }

    #[test]
    fn xds_orgx_and_default_centre() {
        let d = det("-xds -ORGX 100 -ORGY 200");
        assert!((d.fclose - 9.95e-3).abs() < 1e-12 && (d.sclose - 19.95e-3).abs() < 1e-12);
        assert!((d.orgx - 100.0).abs() < 1e-9);
        let d = det("-xds");
        assert!((d.fclose - 0.0512).abs() < 1e-12 && (d.orgx - 512.5).abs() < 1e-9);
        assert_eq!(d.pivot, Pivot::Sample);
    }

    #[test]
    fn mosflm_forces_beam_pivot_and_twotheta_ratio_quirk() {
        // MODEL §3.5 worked example: 64x64, 100 mm, rotations and two-theta with BEAM pivot
        let d = det("-detpixels 64 -detector_rotx 5 -detector_roty 3 -detector_rotz 2 -twotheta 10 -pivot sample");
        assert_eq!(d.pivot, Pivot::Beam);
        assert!((d.distance - 0.0990872).abs() < 1e-7, "{}", d.distance);
        assert!((d.fbeam - 0.00326394).abs() < 1e-8, "{}", d.fbeam);
        assert!((d.sbeam - 0.00343068).abs() < 1e-8, "{}", d.sbeam);
    }

    #[test]
    fn parallel_detector_is_an_error() {
        let o = parse(&["-detector_roty".to_string(), "90".to_string()]).unwrap();
        let e = resolve_detector(&o, &HeaderDefaults::default()).unwrap_err();
        assert!(e.message.contains("parallel"), "{}", e.message);
    }
}
