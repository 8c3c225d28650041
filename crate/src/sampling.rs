//! Auto-selection of sampling counts, ranges and steps (MODEL §5.2): phi, divergence,
//! dispersion, detector layers, mosaic domains. Ported literally: the rules differ per quantity.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
