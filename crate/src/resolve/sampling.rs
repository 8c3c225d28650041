//! Auto-selection of sampling counts, ranges and steps (MODEL §5.2): phi, divergence,
//! dispersion, detector layers, mosaic domains. Ported literally: the rules differ per quantity.
//! [`resolve_sampling`] applies them all and checks the counts and their products against the
//! documented limits (`limits`) before any table is built.

use crate::args::Options;
use crate::error::{Error, Result};
use crate::limits::{self, over, product};

/// (steps, range, step) after the divergence-style rules; `count_only_range` is the range used
/// when only a count is given (1 rad for divergence, 1.0 = 100 % for dispersion).
pub fn divergence_like(
    mut steps: i64,
    mut range: f64,
    mut step: f64,
    count_only_range: f64,
) -> (i64, f64, f64) {
    if steps <= 0 {
        if range < 0.0 {
            if step <= 0.0 {
                steps = 1;
                range = 0.0;
                step = 0.0;
            } else {
                range = step;
                steps = 2;
            }
        } else if step <= 0.0 {
            step = range;
            steps = 2;
        } else {
            steps = (range / step).ceil() as i64;
        }
    } else if range < 0.0 {
        if step <= 0.0 {
            range = count_only_range;
            step = range / steps as f64;
        } else {
            range = step;
            steps = 2;
        }
    } else if step <= 0.0 {
        if steps <= 1 {
            steps = 2;
        }
        step = range / (steps - 1) as f64;
    }
    if range <= 0.0 || step <= 0.0 || steps <= 0 {
        (1, 0.0, 0.0)
    } else {
        (steps, range, step)
    }
}

/// (phisteps, osc, phistep); no sanity reset for phi.
pub fn phi(mut steps: i64, osc: Option<f64>, mut step: f64) -> (i64, f64, f64) {
    let mut osc = osc.unwrap_or(-1.0);
    if steps < 0 {
        if osc < 0.0 {
            if step <= 0.0 {
                steps = 1;
                osc = 0.0;
                step = 0.0;
            } else {
                osc = step;
                steps = 2;
            }
        } else if step <= 0.0 {
            steps = 2;
            step = osc / 2.0;
        } else {
            steps = (osc / step).ceil() as i64;
        }
    } else {
        if steps == 0 {
            steps = 1;
        }
        if osc < 0.0 {
            if step <= 0.0 {
                osc = 1.0 / crate::args::RTD;
                step = osc / steps as f64;
            } else {
                osc = step;
                steps = 2;
            }
        } else if step < 0.0 {
            step = osc / steps as f64;
        }
    }
    (steps, osc, step)
}

/// (thicksteps, thick, thickstep, mu). The step cannot be given on the command line.
pub fn thickness(
    mut steps: i64,
    mut thick: f64,
    mut mu: f64,
) -> (i64, f64, f64, f64, Option<String>) {
    let mut step;
    let mut warning = None;
    if steps <= 0 {
        if thick < 0.0 {
            steps = 1;
            thick = 0.0;
            step = 0.0;
        } else {
            steps = 2;
            step = thick / steps as f64;
        }
    } else if thick < 0.0 {
        thick = 0.5e-6;
        step = thick / steps as f64;
    } else {
        if steps <= 1 {
            steps = 2;
        }
        step = thick / (steps - 1) as f64;
    }
    if thick > 0.0 && mu < 0.0 {
        mu = 1.0 / thick;
        warning = Some(format!(
            "WARNING: detector attenuation depth not specified, using {} um",
            thick * 1e6
        ));
    }
    if thick <= 0.0 || step <= 0.0 || steps <= 0 {
        steps = 1;
        thick = 0.0;
        step = 0.0;
    }
    (steps, thick, step, mu, warning)
}

/// (domains, spread).
pub fn mosaic(domains: i64, spread: f64) -> (i64, f64, Option<String>) {
    if domains <= 0 {
        if spread <= 0.0 {
            (1, 0.0, None)
        } else {
            (
                10,
                spread,
                Some("WARNING: defaulting to 10 mosaic domains".into()),
            )
        }
    } else if spread < 0.0 {
        (
            1,
            0.0,
            Some("WARNING: no mosaic spread given, using one domain".into()),
        )
    } else if spread == 0.0 {
        (
            1,
            0.0,
            Some("WARNING: zero mosaic spread, using one domain".into()),
        )
    } else {
        (domains, spread, None)
    }
}

/// Every sampling count, range and step after auto-selection.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampling {
    pub phisteps: i64,
    pub osc: f64,
    pub phistep: f64,
    pub hdivsteps: i64,
    pub hdivrange: f64,
    pub hdivstep: f64,
    pub vdivsteps: i64,
    pub vdivrange: f64,
    pub vdivstep: f64,
    pub dispsteps: i64,
    pub dispersion: f64,
    pub dispstep: f64,
    pub thicksteps: i64,
    pub thick: f64,
    pub thickstep: f64,
    pub mu: f64,
    pub mosaic_domains: i64,
    pub mosaic_spread: f64,
    pub warnings: Vec<String>,
}

impl Sampling {
    /// Upper bound of the generated sources (the round-divergence trim keeps fewer).
    pub fn source_points(&self) -> Option<u64> {
        product(&[
            self.hdivsteps as u64,
            self.vdivsteps as u64,
            self.dispsteps as u64,
        ])
    }
    /// Crystal orientations: phi steps × mosaic domains.
    pub fn orientations(&self) -> Option<u64> {
        product(&[self.phisteps as u64, self.mosaic_domains as u64])
    }
}

/// Apply the auto-selection rules (MODEL §5.2) to the flags; without `-osc`, the oscillation
/// may come from an `-img` header (`header_osc`). Errors name the flags when a count is zero, too large, or multiplies with the others
/// into more sources or orientations than the documented limits.
pub fn resolve_sampling(o: &Options, header_osc: Option<f64>) -> Result<Sampling> {
    let mut warnings = Vec::new();
    let (phisteps, osc, phistep) = phi(o.phisteps, o.osc.or(header_osc), o.phistep);
    let (hdivsteps, hdivrange, hdivstep) =
        divergence_like(o.hdivsteps, o.hdivrange, o.hdivstep, 1.0);
    let (vdivsteps, vdivrange, vdivstep) =
        divergence_like(o.vdivsteps, o.vdivrange, o.vdivstep, 1.0);
    let (dispsteps, dispersion, dispstep) = divergence_like(o.dispsteps, o.dispersion, -1.0, 1.0);
    let (thicksteps, thick, thickstep, mu, w) =
        thickness(o.detector_thicksteps, o.detector_thick, o.detector_mu);
    warnings.extend(w);
    if o.oversample_thick && thick <= 0.0 {
        // MODEL §6.5: capture = exp(0) - exp(0) at every sub-pixel; upstream's image, said
        warnings.push(
            "WARNING: -oversample_thick without a sensor thickness (-detector_thick): the capture \
             fraction is 0 at every sub-pixel and the image is all zero (as upstream, MODEL §6.5)"
                .into(),
        );
    }
    if o.mosaic_domains == 0 || o.mosaic_domains < -1 {
        // -1 is upstream's "unset"; any other count below 1 is read as unset too
        warnings.push(format!(
            "WARNING: -mosaic_domains {}: fewer than 1 mosaic domain, read as not given (as \
             upstream does)",
            o.mosaic_domains
        ));
    }
    let (mosaic_domains, mosaic_spread, w) = mosaic(o.mosaic_domains, o.mosaic_spread);
    warnings.extend(w);
    let s = Sampling {
        phisteps,
        osc,
        phistep,
        hdivsteps,
        hdivrange,
        hdivstep,
        vdivsteps,
        vdivrange,
        vdivstep,
        dispsteps,
        dispersion,
        dispstep,
        thicksteps,
        thick,
        thickstep,
        mu,
        mosaic_domains,
        mosaic_spread,
        warnings,
    };
    check_counts(&s)?;
    Ok(s)
}

fn check_counts(s: &Sampling) -> Result<()> {
    let g = crate::cfmt::fmt_g;
    if s.phisteps < 1 {
        return Err(Error::geometry(format!(
            "-osc {} with -phistep {} gives no phi steps",
            g(s.osc * crate::args::RTD),
            g(s.phistep * crate::args::RTD)
        ))
        .with_flag("-osc"));
    }
    let too_many = |what: &str, n: i64, max: i64, flags: &str| {
        over(format!(
            "{what}: {n} ({flags}) is more than the limit of {max}"
        ))
    };
    if s.phisteps > limits::MAX_PHISTEPS {
        return Err(too_many(
            "phi steps",
            s.phisteps,
            limits::MAX_PHISTEPS,
            "-phisteps, or -osc / -phistep",
        ));
    }
    if s.dispsteps > limits::MAX_DISPSTEPS {
        return Err(too_many(
            "wavelengths",
            s.dispsteps,
            limits::MAX_DISPSTEPS,
            "-dispsteps",
        ));
    }
    if s.mosaic_domains > limits::MAX_MOSAIC_DOMAINS {
        return Err(too_many(
            "mosaic domains",
            s.mosaic_domains,
            limits::MAX_MOSAIC_DOMAINS,
            "-mosaic_dom",
        ));
    }
    if s.thicksteps > limits::MAX_THICKSTEPS {
        return Err(too_many(
            "sensor layers",
            s.thicksteps,
            limits::MAX_THICKSTEPS,
            "-detector_thicksteps",
        ));
    }
    let div = product(&[s.hdivsteps as u64, s.vdivsteps as u64])
        .filter(|&n| n <= limits::MAX_DIVERGENCE_POINTS as u64);
    if div.is_none() {
        return Err(over(format!(
            "divergence: {} × {} grid points (-hdivsteps/-vdivsteps/-divsteps, or the ranges over \
             the steps) are more than the limit of {}",
            s.hdivsteps,
            s.vdivsteps,
            limits::MAX_DIVERGENCE_POINTS
        )));
    }
    if s.source_points().is_none_or(|n| n > limits::MAX_SOURCES) {
        return Err(over(format!(
            "sources: {} × {} divergence points × {} wavelengths (-divsteps, -dispsteps) are more \
             than the limit of {} sources",
            s.hdivsteps,
            s.vdivsteps,
            s.dispsteps,
            limits::MAX_SOURCES
        )));
    }
    if s.orientations()
        .is_none_or(|n| n > limits::MAX_ORIENTATIONS)
    {
        return Err(over(format!(
            "orientations: {} phi steps × {} mosaic domains (-phisteps, -mosaic_dom) are more \
             than the limit of {} crystal orientations",
            s.phisteps,
            s.mosaic_domains,
            limits::MAX_ORIENTATIONS
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::test_opts as opts;

    #[test]
    fn divergence_rules() {
        // range and step given: ceil(range/step)
        assert_eq!(divergence_like(-1, 0.28e-3, 0.02e-3, 1.0).0, 14);
        // count only: 1 rad range, step range/count
        assert_eq!(divergence_like(3, -1.0, -1.0, 1.0), (3, 1.0, 1.0 / 3.0));
        // range only: two steps of the range
        assert_eq!(divergence_like(-1, 0.5, -1.0, 1.0), (2, 0.5, 0.5));
        // nothing: one point
        assert_eq!(divergence_like(-1, -1.0, -1.0, 1.0), (1, 0.0, 0.0));
        // dispersion count only with zero range: reset
        assert_eq!(divergence_like(5, 0.0, -1.0, 1.0), (1, 0.0, 0.0));
    }

    #[test]
    fn phi_rules() {
        let (n, osc, step) = phi(-1, Some(1.0), -1.0);
        assert_eq!((n, osc, step), (2, 1.0, 0.5));
        assert_eq!(phi(-1, Some(2.0), 0.6).0, 4);
        assert_eq!(phi(-1, None, -1.0), (1, 0.0, 0.0));
    }

    #[test]
    fn thickness_rules() {
        // -detector_thick T alone: two layers of T/2
        let (n, t, s, mu, _) = thickness(-1, 100e-6, -1.0);
        assert_eq!((n, t, s), (2, 100e-6, 50e-6));
        assert_eq!(mu, 1.0 / 100e-6);
        // with n steps: T/(n-1)
        let (n, _, s, _, _) = thickness(4, 450e-6, 1.0 / 320e-6);
        assert_eq!(n, 4);
        assert!((s - 150e-6).abs() < 1e-18);
        // no thickness: one layer
        assert_eq!(thickness(-1, 0.0, -1.0).0, 1);
    }

    #[test]
    fn resolve_sampling_defaults_and_products() {
        let s = resolve_sampling(&opts(""), None).unwrap();
        assert_eq!(
            (s.phisteps, s.hdivsteps, s.vdivsteps, s.dispsteps),
            (1, 1, 1, 1)
        );
        assert_eq!((s.thicksteps, s.mosaic_domains), (1, 1));
        let s = resolve_sampling(
            &opts("-divergence 1 -divsteps 3 -dispersion 1 -dispsteps 2"),
            None,
        )
        .unwrap();
        assert_eq!(s.source_points(), Some(18));
        let s =
            resolve_sampling(&opts("-osc 1 -phisteps 4 -mosaic 1 -mosaic_dom 5"), None).unwrap();
        assert_eq!(s.orientations(), Some(20));
        // the oscillation may come from an -img header
        let s = resolve_sampling(&opts("-phistep 0.25"), Some(1.0 / crate::args::RTD)).unwrap();
        assert_eq!(s.phisteps, 4);
    }

    #[test]
    fn resolve_sampling_refuses_zero_and_huge_counts() {
        let e = |s: &str| resolve_sampling(&opts(s), None).unwrap_err().message;
        assert_eq!(
            e("-phistep 1 -osc 0"),
            "-osc 0 with -phistep 1 gives no phi steps"
        );
        assert!(e("-mosaic 1 -mosaic_dom 1000000 -phisteps 100000 -osc 1")
            .starts_with("orientations: 100000 phi steps × 1000000 mosaic domains"));
        assert!(
            e("-divergence 1 -divsteps 1000 -dispersion 10 -dispsteps 100000")
                .starts_with("sources: 1000 × 1000 divergence points × 100000 wavelengths")
        );
        assert!(e("-divergence 1 -divsteps 1000000 -square_div")
            .starts_with("divergence: 1000000 × 1000000 grid points"));
        // ranges over tiny steps give huge counts after auto-selection, without wrapping
        assert!(
            e("-hdivrange 1 -hdivstep 1e-300 -vdivrange 1 -vdivstep 1e-300")
                .starts_with("divergence:")
        );
        assert!(e("-osc 10 -phistep 1e-9").starts_with("phi steps: 1000000000"));
    }
}
