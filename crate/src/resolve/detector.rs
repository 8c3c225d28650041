//! Detector geometry: conventions, beam centre mapping, pivots, rotations and `pix0`
//! (MODEL §3.2–§3.5). Everything in f64, in upstream's association order.

use crate::args::{Convention, Options, Pivot};
use crate::error::{Error, Result};
use crate::limits;
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
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// The file whose header gave the pixel counts (for error messages).
    pub size_file: Option<String>,
}

/// Pixel counts and sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectorSize {
    pub fpixels: usize,
    pub spixels: usize,
    pub pixel: f64,
    pub detsize_f: f64,
    pub detsize_s: f64,
}

/// Pixel counts and sizes (MODEL §3.2): pixel counts beat sizes; at most
/// [`limits::MAX_PIXELS`] pixels.
pub fn detector_size(o: &Options, hd: &HeaderDefaults) -> Result<DetectorSize> {
    let pixel = o.pixel.or(hd.pixel).unwrap_or(1e-4);
    if !(pixel > 0.0) || !pixel.is_finite() {
        return Err(Error::geometry(format!(
            "-pixel: pixel size must be positive, got {} mm",
            pixel * 1e3
        ))
        .with_flag("-pixel"));
    }
    let mut detsize_f = o.detsize_f.unwrap_or(0.1024);
    let mut detsize_s = o.detsize_s.unwrap_or(0.1024);
    let fpix = o.fpixels.or(hd.fpixels).unwrap_or(0);
    let spix = o.spixels.or(hd.spixels).unwrap_or(0);
    if fpix < 0 || spix < 0 {
        return Err(
            Error::geometry("-detpixels: pixel counts must not be negative")
                .with_flag("-detpixels"),
        );
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
    let from_header = o.fpixels.is_none() && o.spixels.is_none() && hd.fpixels.is_some();
    let what = match (&hd.size_file, from_header) {
        (Some(file), true) => format!("{file}: the header's SIZE1/SIZE2"),
        _ if o.fpixels.is_some() || o.spixels.is_some() => "-detpixels".to_string(),
        _ => "-detsize / -pixel".to_string(),
    };
    limits::check_pixels(&what, fpixels, spixels, limits::MAX_PIXELS)?;
    Ok(DetectorSize {
        fpixels: fpixels as usize,
        spixels: spixels as usize,
        pixel,
        detsize_f,
        detsize_s,
    })
}

/// The convention's frame before normalisation and placement (MODEL §3.3): basis vectors, beam
/// centre in the convention's axes and on the detector, the near point, and the pivot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub beam: V3,
    pub fdet: V3,
    pub sdet: V3,
    pub odet: V3,
    pub twotheta_axis: V3,
    pub polar_axis: V3,
    pub spindle: V3,
    pub xbeam: f64,
    pub ybeam: f64,
    pub fbeam: f64,
    pub sbeam: f64,
    pub fclose: f64,
    pub sclose: f64,
    pub pivot: Pivot,
}

/// Steps A and B of MODEL §3.3: near-point defaults, then the convention block.
pub fn convention_frame(o: &Options, hd: &HeaderDefaults, size: &DetectorSize) -> Frame {
    let (px, df, ds) = (size.pixel, size.detsize_f, size.detsize_s);
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
    Frame {
        beam: b,
        fdet: f,
        sdet: s,
        odet: od,
        twotheta_axis: t2,
        polar_axis: p,
        spindle: u,
        xbeam,
        ybeam,
        fbeam,
        sbeam,
        fclose,
        sclose,
        pivot,
    }
}

/// Step C: unit vectors (the two-theta axis stays as given, C-QUIRK 1); an odet that is not
/// already a unit vector is replaced by fast × slow, with a warning. Returns the frame and the
/// "vertical" axis unit(beam × polar) of the divergence grid.
pub fn normalise(fr: Frame) -> Result<(Frame, V3, Option<String>)> {
    let b = unit(fr.beam);
    let f = unit(fr.fdet);
    let s = unit(fr.sdet);
    let (mut od, m) = unitize(fr.odet);
    let mut warning = None;
    if m != 1.0 {
        od = unit(cross(f, s));
        warning = Some("WARNING: auto-generating odet_vector".to_string());
    }
    let p = unit(fr.polar_axis);
    let u = unit(fr.spindle);
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
    Ok((
        Frame {
            beam: b,
            fdet: f,
            sdet: s,
            odet: od,
            polar_axis: p,
            spindle: u,
            ..fr
        },
        vert,
        warning,
    ))
}

/// The detector in the lab frame (MODEL §3.5 steps 1–2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    pub pix0: V3,
    pub fdet: V3,
    pub sdet: V3,
    pub odet: V3,
    /// beam · normal after the x/y/z rotations only (C-QUIRK 5).
    pub ratio: f64,
}

/// Rotate the detector and place its origin `pix0` about the pivot (MODEL §3.5).
pub fn place(fr: &Frame, o: &Options, hd: &HeaderDefaults) -> Result<Placement> {
    let (b, f, s, od, t2) = (fr.beam, fr.fdet, fr.sdet, fr.odet, fr.twotheta_axis);
    let (rx, ry, rz, tt) = (o.rotx, o.roty, o.rotz, o.twotheta);
    let o_r = rotxyz(od, rx, ry, rz);
    let mut ratio = dot(b, o_r);
    if ratio == 0.0 {
        ratio = f64::MIN_POSITIVE;
    }
    let distance_in = o.distance.or(hd.distance).unwrap_or(0.1);
    let close_distance = match o.close_distance.or(hd.close_distance) {
        Some(c) => c,
        None => (ratio * distance_in).abs(),
    };
    let distance = close_distance / ratio;
    if ratio.abs() < 1e-12 {
        return Err(Error::geometry(
            "detector is parallel to the beam (beam . detector normal = 0)",
        ));
    }

    let mut pix0 = [0.0; 3];
    if fr.pivot == Pivot::Sample {
        let mut pp = [0.0; 3];
        for i in 0..3 {
            pp[i] = ((-fr.fclose * f[i]) - (fr.sclose * s[i])) + (close_distance * od[i]);
        }
        pp = rotxyz(pp, rx, ry, rz);
        pix0 = rotaxis(pp, t2, tt);
    }
    let f = rotaxis(rotxyz(f, rx, ry, rz), t2, tt);
    let s = rotaxis(rotxyz(s, rx, ry, rz), t2, tt);
    let od = rotaxis(rotxyz(od, rx, ry, rz), t2, tt);
    if fr.pivot == Pivot::Beam {
        for i in 0..3 {
            pix0[i] = ((-fr.fbeam * f[i]) - (fr.sbeam * s[i])) + (distance * b[i]);
        }
    }
    Ok(Placement {
        pix0,
        fdet: f,
        sdet: s,
        odet: od,
        ratio,
    })
}

/// Values derived from the placement, as upstream reports them (MODEL §3.5 step 3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Derived {
    pub fclose: f64,
    pub sclose: f64,
    pub close_distance: f64,
    pub fbeam: f64,
    pub sbeam: f64,
    pub distance: f64,
    pub orgx: f64,
    pub orgy: f64,
    pub dials_origin: V3,
}

pub fn derive(pl: &Placement, beam: V3, pixel: f64) -> Derived {
    let (pix0, f, s, od, ratio) = (pl.pix0, pl.fdet, pl.sdet, pl.odet, pl.ratio);
    let fclose = -dot(pix0, f);
    let sclose = -dot(pix0, s);
    let close_distance = dot(pix0, od);
    let mut r = [0.0; 3];
    for i in 0..3 {
        r[i] = (close_distance / ratio) * beam[i] - pix0[i];
    }
    Derived {
        fclose,
        sclose,
        close_distance,
        fbeam: dot(f, r),
        sbeam: dot(s, r),
        distance: close_distance / ratio,
        orgx: fclose / pixel + 0.5,
        orgy: sclose / pixel + 0.5,
        dials_origin: [
            1000.0 * dot(pix0, [0.0, 0.0, 1.0]),
            1000.0 * dot(pix0, [0.0, 1.0, 0.0]),
            1000.0 * dot(pix0, [-1.0, 0.0, 0.0]),
        ],
    }
}

/// The placed detector must be finite and must not pass through the sample (a detector plane
/// that contains the sample sees the beam edge-on: every pixel is at 90° and the auto-selected
/// oversampling is unbounded).
pub fn check_placement(pl: &Placement, d: &Derived, o: &Options) -> Result<()> {
    if !pl.pix0.iter().all(|x| x.is_finite()) || !d.distance.is_finite() {
        return Err(Error::geometry(
            "detector placement is not finite (check distance, beam centre and vectors)",
        ));
    }
    let far = crate::vec3::mag_scaled(pl.pix0).max(d.distance.abs());
    if far > crate::limits::MAX_DETECTOR_DISTANCE_M {
        return Err(Error::geometry(format!(
            "the detector is placed {} mm from the sample, more than {} mm (check distance, beam \
             centre and vectors, or the detector of an -expt or -geom file)",
            crate::cfmt::fmt_g(far * 1e3),
            crate::cfmt::fmt_g(crate::limits::MAX_DETECTOR_DISTANCE_M * 1e3)
        )));
    }
    if d.close_distance.abs() < 1e-9 {
        let turns: Vec<String> = [
            ("-twotheta", o.twotheta),
            ("-detector_rotx", o.rotx),
            ("-detector_roty", o.roty),
            ("-detector_rotz", o.rotz),
        ]
        .iter()
        .filter(|(_, v)| *v != 0.0)
        .map(|(n, v)| format!("{n} {}", crate::cfmt::fmt_g(v * crate::args::RTD)))
        .collect();
        let why = if turns.is_empty() {
            "check -close_distance and the detector vectors".to_string()
        } else {
            format!(
                "after {} the detector is edge-on to the sample",
                turns.join(" ")
            )
        };
        return Err(Error::geometry(format!(
            "the detector plane passes through the sample (distance along its normal {} mm): {why}",
            crate::cfmt::fmt_g(d.close_distance * 1e3)
        )));
    }
    Ok(())
}

/// The fast and slow axes the user gave (`-fdet_vector`, `-sdet_vector`, or the plane an `-expt`
/// or `-geom` file set, whose readers check them first) are non-zero and perpendicular
/// ([`crate::vec3::axes_fault`], the `.expt` reader's rule): upstream renders anything.
fn check_axes(o: &Options, fr: &Frame) -> Result<()> {
    if o.fdet_vector.is_none() && o.sdet_vector.is_none() {
        return Ok(());
    }
    match crate::vec3::axes_fault(fr.fdet, fr.sdet) {
        None => Ok(()),
        Some(why) => {
            let flag = if o.fdet_vector.is_some() {
                "-fdet_vector"
            } else {
                "-sdet_vector"
            };
            Err(Error::usage(format!("-fdet_vector and -sdet_vector: {why}")).with_flag(flag))
        }
    }
}

/// Options (+ header starting values) -> the placed detector: [`detector_size`],
/// [`convention_frame`], [`normalise`], [`place`], [`derive`], [`check_placement`].
pub fn resolve_detector(o: &Options, hd: &HeaderDefaults) -> Result<Detector> {
    let size = detector_size(o, hd)?;
    let frame = convention_frame(o, hd, &size);
    check_axes(o, &frame)?;
    let (frame, vert, warning) = normalise(frame)?;
    let pl = place(&frame, o, hd)?;
    let d = derive(&pl, frame.beam, size.pixel);
    check_placement(&pl, &d, o)?;
    Ok(Detector {
        convention: o.convention,
        pivot: frame.pivot,
        fpixels: size.fpixels,
        spixels: size.spixels,
        pixel: size.pixel,
        detsize_f: size.detsize_f,
        detsize_s: size.detsize_s,
        fdet: pl.fdet,
        sdet: pl.sdet,
        odet: pl.odet,
        beam: frame.beam,
        polar_axis: frame.polar_axis,
        spindle: frame.spindle,
        twotheta_axis: frame.twotheta_axis,
        vert,
        pix0: pl.pix0,
        xbeam: frame.xbeam,
        ybeam: frame.ybeam,
        fbeam: d.fbeam,
        sbeam: d.sbeam,
        fclose: d.fclose,
        sclose: d.sclose,
        close_distance: d.close_distance,
        distance: d.distance,
        ratio: pl.ratio,
        orgx: d.orgx,
        orgy: d.orgy,
        dials_origin: d.dials_origin,
        twotheta: o.twotheta,
        warnings: warning.into_iter().collect(),
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
    use crate::args::test_opts as opts;

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

    #[test]
    fn the_flags_extremes_are_within_the_placement_limit() {
        // 1e6 mm away, the beam centre 1e6 mm off, and upstream's un-normalised two-theta axis
        // (7e10 mm away): placed (the limit is for files' detectors, crate/tests/expt.rs)
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        for w in [
            "-distance 1e6 -Xbeam 1e6 -Ybeam 1e6",
            "-twotheta_axis 1 1e6 1",
        ] {
            let o = parse(&words(w)).unwrap();
            assert!(
                resolve_detector(&o, &HeaderDefaults::default()).is_ok(),
                "{w}"
            );
        }
    }

    #[test]
    fn pixel_counts_beat_sizes_and_the_limit_names_the_source() {
        let hd = HeaderDefaults::default();
        let s = detector_size(&opts("-detpixels 100 -detsize 50 -pixel 0.1"), &hd).unwrap();
        assert_eq!((s.fpixels, s.spixels), (100, 100));
        assert!((s.detsize_f - 0.01).abs() < 1e-15);
        let s = detector_size(&opts("-detsize_f 10 -detsize_s 5 -pixel 0.1"), &hd).unwrap();
        assert_eq!((s.fpixels, s.spixels), (100, 50));
        let big = HeaderDefaults {
            fpixels: Some(100_000),
            spixels: Some(100_000),
            size_file: Some("big.img".into()),
            ..Default::default()
        };
        let e = detector_size(&opts(""), &big).unwrap_err();
        assert!(
            e.message
                .starts_with("big.img: the header's SIZE1/SIZE2: a 100000x100000 detector"),
            "{}",
            e.message
        );
        let e = detector_size(&opts("-detpixels 100000"), &hd).unwrap_err();
        assert!(
            e.message
                .starts_with("-detpixels: a 100000x100000 detector"),
            "{}",
            e.message
        );
    }

    #[test]
    fn convention_frames_map_the_beam_centre() {
        let hd = HeaderDefaults::default();
        let frame = |s: &str| {
            let o = opts(s);
            convention_frame(&o, &hd, &detector_size(&o, &hd).unwrap())
        };
        // ADXV: beam along +z, the slow coordinate counts from the far edge
        let f = frame("-adxv -detpixels 100 -pixel 0.1 -Xbeam 3 -Ybeam 4");
        assert_eq!(f.beam, [0.0, 0.0, 1.0]);
        assert_eq!(f.fbeam, 0.003);
        assert!((f.sbeam - (0.01 - 0.004)).abs() < 1e-15);
        // DENZO swaps x and y like MOSFLM but adds no half pixel
        let f = frame("-denzo -Xbeam 3 -Ybeam 4");
        assert_eq!((f.fbeam, f.sbeam), (0.004, 0.003));
        // DIALS pivots about the sample whatever the flags say
        assert_eq!(frame("-dials -pivot beam").pivot, Pivot::Sample);
    }

    #[test]
    fn normalise_regenerates_a_non_unit_normal_and_rejects_zero_axes() {
        let hd = HeaderDefaults::default();
        let o = opts("-odet_vector 2 0 0");
        let fr = convention_frame(&o, &hd, &detector_size(&o, &hd).unwrap());
        let (fr, vert, w) = normalise(fr).unwrap();
        assert!(w.unwrap().contains("auto-generating odet_vector"));
        assert_eq!(fr.odet, unit(cross(fr.fdet, fr.sdet)));
        assert_eq!(vert, unit(cross(fr.beam, fr.polar_axis)));
        let o = opts("-beam_vector 1 0 0");
        let mut fr = convention_frame(&o, &hd, &detector_size(&o, &hd).unwrap());
        fr.beam = [0.0; 3];
        assert!(normalise(fr)
            .unwrap_err()
            .message
            .contains("beam axis vector is zero"));
    }

    #[test]
    fn sample_pivot_keeps_the_near_point_under_two_theta() {
        let d = det("-xds -ORGX 100 -ORGY 200 -twotheta 20");
        assert!((d.orgx - 100.0).abs() < 1e-9 && (d.orgy - 200.0).abs() < 1e-9);
        assert!((dot(d.odet, [0.0, 0.0, 1.0]) - (20f64).to_radians().cos()).abs() < 1e-12);
    }

    #[test]
    fn edge_on_detector_names_the_rotation() {
        // MOSFLM pivots about the beam spot: a 90° two-theta puts the plane through the sample
        let e = resolve_detector(&opts("-twotheta 90"), &HeaderDefaults::default()).unwrap_err();
        assert!(
            e.message
                .contains("after -twotheta 90 the detector is edge-on"),
            "{}",
            e.message
        );
    }
}
