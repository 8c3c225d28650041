//! Header ingestion (MODEL §7.11): the SMV headers of `-mask` and then `-img` supply starting
//! values for the detector, the wavelength and the goniometer; every command-line flag overrides
//! them. Each key's value is checked like the flag it stands for (`-pixel` for `PIXEL_SIZE`, ...):
//! a value that is not a number (upstream's `atof` reads "garbage" as 0), not finite, or out of
//! that flag's range is an error naming the file, the header line and the key.

use crate::args::{self, Check, Options, RTD};
use crate::cfmt::scan_f64;
use crate::error::{Error, Result};
use crate::files::{FileKind, FileSource};
use crate::io::smv::{self, SmvFile};
use crate::resolve::detector::HeaderDefaults;

/// What one header (or the merged headers) supplies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeaderValues {
    pub det: HeaderDefaults,
    pub lambda: Option<f64>,
    pub phi0: Option<f64>,
    pub osc: Option<f64>,
    pub warnings: Vec<String>,
}

/// Both headers and the mask file itself (its pixels are the mask).
pub struct Headers {
    pub values: HeaderValues,
    pub mask: Option<(String, SmvFile)>,
}

/// The check of the flag a header key stands for.
fn check_of(flag: &str) -> Check {
    args::find(flag).map_or(Check::Finite, |f| f.check)
}

/// One key's value in the header's units, checked; `None` when the key is absent.
fn key_value(name: &str, header: &str, key: &str, flag: &str) -> Result<Option<f64>> {
    let Some((offset, text)) = smv::find_value(header, key) else {
        return Ok(None);
    };
    let line = header[..offset].matches('\n').count() + 1;
    let shown = text
        .unwrap_or("")
        .split([';', '\n'])
        .next()
        .unwrap_or("")
        .trim();
    let v = match text {
        None => 0.0,
        Some(t) => match scan_f64(t.as_bytes()) {
            (_, 0) => {
                return Err(Error::input(format!(
                    "{name} header line {line}: {key}={shown} is not a number"
                ))
                .at_file(name)
                .at_line(line)
                .at_key(key))
            }
            (v, _) => v,
        },
    };
    match check_of(flag).violation(v) {
        None => Ok(Some(v)),
        Some(want) => Err(Error::input(format!(
            "{name} header line {line}: {key}={shown}: expected {want} (as for {flag})"
        ))
        .at_file(name)
        .at_line(line)
        .at_key(key)),
    }
}

/// The values one header supplies. A mask's `BEAM_CENTER_Y` is flipped (upstream reads masks
/// written by ADXV-style tools), using that header's own pixel size and count.
pub fn header_values(name: &str, header: &str, is_mask: bool) -> Result<HeaderValues> {
    let v = |key: &str, flag: &str| key_value(name, header, key, flag);
    let mut hv = HeaderValues::default();
    let mut size1 = v("SIZE1", "-detpixels")?;
    let mut size2 = v("SIZE2", "-detpixels")?;
    if size1 == Some(0.0) {
        size1 = v("DETECTOR_DIMENSIONS", "-detpixels")?;
        size2 = size1;
    }
    let hd = &mut hv.det;
    if size1.is_some() || size2.is_some() {
        hd.size_file = Some(name.to_string());
    }
    hd.fpixels = size1.map(|x| x as i64);
    hd.spixels = size2.map(|x| x as i64);
    hd.pixel = v("PIXEL_SIZE", "-pixel")?.map(|x| x / 1000.0);
    hd.distance = v("DISTANCE", "-distance")?.map(|x| x / 1000.0);
    if let Some(d) = hd.distance.filter(|d| *d < 0.0) {
        hv.warnings.push(format!(
            "WARNING: {name}: DISTANCE={}: a negative distance is used as positive (as upstream does)",
            crate::cfmt::fmt_g(d * 1e3)
        ));
    }
    hd.close_distance = v("CLOSE_DISTANCE", "-close_distance")?.map(|x| x / 1000.0);
    hv.lambda = v("WAVELENGTH", "-lambda")?.map(|x| x / 1e10);
    hd.xbeam = v("BEAM_CENTER_X", "-Xbeam")?.map(|x| x / 1000.0);
    hd.ybeam = v("BEAM_CENTER_Y", "-Ybeam")?.map(|x| {
        if is_mask {
            let ds = hd.pixel.unwrap_or(1e-4) * hd.spixels.unwrap_or(1024) as f64;
            ds - x / 1000.0
        } else {
            x / 1000.0
        }
    });
    hd.orgx = v("ORGX", "-ORGX")?;
    hd.orgy = v("ORGY", "-ORGY")?;
    hv.phi0 = v("PHI", "-phi")?.map(|x| x / RTD);
    hv.osc = v("OSC_RANGE", "-osc")?.map(|x| x / RTD);
    Ok(hv)
}

/// `later`'s values where it has them, else `earlier`'s (the image header after the mask's).
pub fn merge(earlier: HeaderValues, later: HeaderValues) -> HeaderValues {
    let (e, l) = (earlier.det, later.det);
    let size_file = if l.fpixels.is_some() || l.spixels.is_some() {
        l.size_file
    } else {
        e.size_file
    };
    HeaderValues {
        det: HeaderDefaults {
            fpixels: l.fpixels.or(e.fpixels),
            spixels: l.spixels.or(e.spixels),
            pixel: l.pixel.or(e.pixel),
            distance: l.distance.or(e.distance),
            close_distance: l.close_distance.or(e.close_distance),
            xbeam: l.xbeam.or(e.xbeam),
            ybeam: l.ybeam.or(e.ybeam),
            orgx: l.orgx.or(e.orgx),
            orgy: l.orgy.or(e.orgy),
            size_file,
        },
        lambda: later.lambda.or(earlier.lambda),
        phi0: later.phi0.or(earlier.phi0),
        osc: later.osc.or(earlier.osc),
        warnings: [earlier.warnings, later.warnings].concat(),
    }
}

/// Read the `-mask` header, then the `-img` header.
pub fn read_headers(o: &Options, files: &dyn FileSource) -> Result<Headers> {
    let mut values = HeaderValues::default();
    let mut mask = None;
    if let Some(name) = &o.mask {
        let flag = |e: Error| e.with_flag("-mask").at_file(name.as_str());
        let smv =
            smv::read_smv(name, &files.read(name, FileKind::Image).map_err(flag)?).map_err(flag)?;
        values = header_values(name, &smv.header_text, true).map_err(flag)?;
        mask = Some((name.clone(), smv));
    }
    if let Some(name) = &o.img {
        let flag = |e: Error| e.with_flag("-img").at_file(name.as_str());
        let smv =
            smv::read_smv(name, &files.read(name, FileKind::Image).map_err(flag)?).map_err(flag)?;
        values = merge(
            values,
            header_values(name, &smv.header_text, false).map_err(flag)?,
        );
    }
    Ok(Headers { values, mask })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "{\nHEADER_BYTES=  512;\nDIM=2;\nSIZE1=128;\nSIZE2=64;\nPIXEL_SIZE=0.1;\n\
        DISTANCE=100;\nWAVELENGTH=1.5;\nBEAM_CENTER_X=6.4;\nBEAM_CENTER_Y=3.2;\nPHI=10;\n\
        OSC_RANGE=0.5;\n}";

    #[test]
    fn reads_the_keys_in_internal_units() {
        let hv = header_values("a.img", HEADER, false).unwrap();
        let d = &hv.det;
        assert_eq!((d.fpixels, d.spixels), (Some(128), Some(64)));
        assert_eq!(d.pixel, Some(0.1 / 1000.0));
        assert_eq!(d.distance, Some(0.1));
        assert_eq!(hv.lambda, Some(1.5e-10));
        assert_eq!(d.ybeam, Some(3.2 / 1000.0));
        assert_eq!(hv.phi0, Some(10.0 / RTD));
        assert_eq!(d.size_file.as_deref(), Some("a.img"));
        // a mask's beam centre y is flipped within its own detector
        let hv = header_values("m.img", HEADER, true).unwrap();
        let ds = 0.1 / 1000.0 * 64.0;
        assert_eq!(hv.det.ybeam, Some(ds - 3.2 / 1000.0));
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        let bad = |from: &str, to: &str| {
            header_values("x.img", &HEADER.replace(from, to), false)
                .unwrap_err()
                .message
        };
        assert_eq!(
            bad("PHI=10", "PHI=inf"),
            "x.img header line 11: PHI=inf: expected a finite number (as for -phi)"
        );
        assert_eq!(
            bad("DISTANCE=100", "DISTANCE=garbage"),
            "x.img header line 7: DISTANCE=garbage is not a number"
        );
        let e = header_values("x.img", &HEADER.replace("PHI=10", "PHI=x"), false).unwrap_err();
        assert_eq!(
            (e.file.as_deref(), e.line, e.key.as_deref()),
            (Some("x.img"), Some(11), Some("PHI"))
        );
        assert_eq!(
            bad("SIZE1=128", "SIZE1=-5"),
            "x.img header line 4: SIZE1=-5: expected a number ≥ 0 and ≤ 1000000 (as for -detpixels)"
        );
        assert!(bad("PIXEL_SIZE=0.1", "PIXEL_SIZE=0")
            .starts_with("x.img header line 6: PIXEL_SIZE=0: expected a number > 0"));
        assert!(bad("WAVELENGTH=1.5", "WAVELENGTH=0")
            .starts_with("x.img header line 8: WAVELENGTH=0: expected a number > 0"));
        assert!(bad("DISTANCE=100", "DISTANCE=0")
            .starts_with("x.img header line 7: DISTANCE=0: expected a non-zero number"));
    }

    #[test]
    fn image_header_overrides_mask_header() {
        let mask =
            header_values("m.img", "{\nSIZE1=10;\nSIZE2=10;\nPIXEL_SIZE=0.2;\n}", true).unwrap();
        let img = header_values("i.img", "{\nPIXEL_SIZE=0.3;\nWAVELENGTH=2;\n}", false).unwrap();
        let m = merge(mask, img);
        assert_eq!(m.det.pixel, Some(0.3e-3));
        assert_eq!(m.det.fpixels, Some(10));
        assert_eq!(m.det.size_file.as_deref(), Some("m.img"));
        assert_eq!(m.lambda, Some(2e-10));
    }
}
