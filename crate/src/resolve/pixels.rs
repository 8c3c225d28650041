//! Which pixels are rendered (MODEL §3.7): the `-roi` rectangle (inclusive; a negative bound is
//! the detector's edge) and the `-mask` image (pixels whose mask value is 0 are skipped). A
//! selection that leaves no pixel is an error rather than an empty image.

use crate::error::{Error, Result};
use crate::io::smv::{self, SmvFile};
use crate::plan::Roi;
use crate::resolve::Setup;

pub fn roi(roi: Option<[i64; 4]>, fpixels: usize, spixels: usize) -> Roi {
    let (fp, sp) = (fpixels as i64, spixels as i64);
    let r = roi.unwrap_or([-1; 4]);
    let pick = |v: i64, d: i64| if v < 0 { d } else { v };
    Roi {
        xmin: pick(r[0], 0) as usize,
        xmax: pick(r[1], fp) as usize,
        ymin: pick(r[2], 0) as usize,
        ymax: pick(r[3], sp) as usize,
    }
}

/// The mask's pixels as 0/1; its header's SIZE1 × SIZE2 must be the detector's.
pub fn mask(name: &str, smv: &SmvFile, fpixels: usize, spixels: usize) -> Result<Vec<u8>> {
    let (mf, ms) = (
        smv::value_of(&smv.header_text, "SIZE1").unwrap_or(0.0) as usize,
        smv::value_of(&smv.header_text, "SIZE2").unwrap_or(0.0) as usize,
    );
    if mf != fpixels || ms != spixels || smv.data.len() < fpixels * spixels {
        return Err(Error::input(format!(
            "-mask {name}: mask is {mf}x{ms} pixels but the detector is {fpixels}x{spixels}"
        ))
        .with_flag("-mask"));
    }
    Ok(smv.data[..fpixels * spixels]
        .iter()
        .map(|&v| (v != 0) as u8)
        .collect())
}

/// At least one pixel is inside the ROI and not masked.
pub fn check_selection(
    roi: &Roi,
    mask: Option<&[u8]>,
    fpixels: usize,
    spixels: usize,
) -> Result<()> {
    let (x1, y1) = (roi.xmax.min(fpixels - 1), roi.ymax.min(spixels - 1));
    if roi.xmin > x1 || roi.ymin > y1 {
        return Err(Error::geometry(format!(
            "-roi {} {} {} {} selects no pixel of the {fpixels}x{spixels} detector",
            roi.xmin, roi.xmax, roi.ymin, roi.ymax
        ))
        .with_flag("-roi"));
    }
    if let Some(m) = mask {
        let any = (roi.ymin..=y1).any(|s| {
            m[s * fpixels + roi.xmin..=s * fpixels + x1]
                .iter()
                .any(|&v| v != 0)
        });
        if !any {
            return Err(Error::input(
                "-mask: every pixel inside the rendered region is masked (0): nothing to render",
            )
            .with_flag("-mask"));
        }
    }
    Ok(())
}

/// A `-detector` preset's module gaps join the plan's mask, and its modules become the plan's
/// panels (`panels::preset_modules`), when the detector still has the preset's pixel counts
/// (later flags may have changed them; then a warning says so).
pub fn apply_preset_mask(setup: &mut Setup) {
    let Some(p) = setup.opts.preset else { return };
    let plan = &mut setup.plan;
    if plan.fpixels != p.fast_pixels || plan.spixels != p.slow_pixels {
        setup.warnings.push(format!(
            "WARNING: -detector {}: the detector is {}x{} pixels, not the preset's {}x{}; module gaps not masked",
            p.name, plan.fpixels, plan.spixels, p.fast_pixels, p.slow_pixels
        ));
        return;
    }
    let gaps = p.mask();
    plan.mask = Some(match plan.mask.take() {
        Some(m) => m
            .iter()
            .zip(&gaps)
            .map(|(a, b)| (*a != 0 && *b != 0) as u8)
            .collect(),
        None => gaps,
    });
    // the modules become the detector's panels (a flat detector with the preset's pixels)
    if let Some(modules) = crate::resolve::panels::preset_modules(plan, p) {
        plan.panels = modules;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_bounds_are_the_edges() {
        let r = roi(Some([-1, 10, 2, -5]), 64, 32);
        assert_eq!((r.xmin, r.xmax, r.ymin, r.ymax), (0, 10, 2, 32));
        assert_eq!(
            roi(None, 64, 32),
            Roi {
                xmin: 0,
                xmax: 64,
                ymin: 0,
                ymax: 32
            }
        );
    }

    #[test]
    fn empty_selections_are_errors() {
        let full = roi(None, 4, 4);
        assert!(check_selection(&full, None, 4, 4).is_ok());
        let e = check_selection(&roi(Some([3, 1, 0, 3]), 4, 4), None, 4, 4).unwrap_err();
        assert_eq!(
            e.message,
            "-roi 3 1 0 3 selects no pixel of the 4x4 detector"
        );
        assert!(check_selection(&roi(Some([10, 20, 0, 3]), 4, 4), None, 4, 4).is_err());
        let mut m = vec![0u8; 16];
        assert!(check_selection(&full, Some(&m), 4, 4)
            .unwrap_err()
            .message
            .contains("masked"));
        m[15] = 1;
        assert!(check_selection(&full, Some(&m), 4, 4).is_ok());
        assert!(check_selection(&roi(Some([0, 2, 0, 3]), 4, 4), Some(&m), 4, 4).is_err());
    }

    #[test]
    fn mask_must_match_the_detector() {
        let smv = SmvFile {
            header_text: "{\nHEADER_BYTES=512;\nSIZE1=2;\nSIZE2=2;\n}".into(),
            header_bytes: 512,
            data: vec![0, 3, 1, 0],
        };
        assert_eq!(mask("m.img", &smv, 2, 2).unwrap(), vec![0, 1, 1, 0]);
        let e = mask("m.img", &smv, 4, 2).unwrap_err();
        assert_eq!(
            e.message,
            "-mask m.img: mask is 2x2 pixels but the detector is 4x2"
        );
    }
}
