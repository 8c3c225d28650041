//! Sources (MODEL §5.3–§5.5): read from `-sourcefile`, or generated as a divergence grid (trimmed
//! to an ellipse unless `-square_div`) times the dispersion's wavelengths. A source is a position
//! (m, upstream's convention: 10 m upstream of the sample) and a wavelength; the plan keeps the
//! unit incident direction.

use crate::error::{Error, Result};
use crate::limits::{self, over};
use crate::plan::Source;
use crate::resolve::detector::Detector;
use crate::resolve::sampling::Sampling;
use crate::vec3::{mag, rotaxis, unit, V3};

/// Rows of a source file (`x y z weight λ`; NaN where a column is missing) -> sources. Missing
/// positions are on the beam axis 10 m upstream, a missing wavelength is `lambda0`.
pub fn from_file(name: &str, rows: &[Vec<f64>], beam: V3, lambda0: f64) -> Result<Vec<(V3, f64)>> {
    if rows.is_empty() {
        return Err(Error::input(format!("{name}: no sources found")).at_file(name));
    }
    if rows.len() as u64 > limits::MAX_SOURCES {
        return Err(over(format!(
            "{name}: {} sources, more than the limit of {}",
            rows.len(),
            limits::MAX_SOURCES
        )));
    }
    let mut sources = Vec::with_capacity(rows.len());
    for r in rows {
        let pick = |i: usize, d: f64| {
            if r.get(i).is_none_or(|x| x.is_nan()) {
                d
            } else {
                r[i]
            }
        };
        let pos = [
            pick(0, -10.0 * beam[0]),
            pick(1, -10.0 * beam[1]),
            pick(2, -10.0 * beam[2]),
        ];
        let lambda = pick(4, lambda0);
        if !(lambda > 0.0) || !lambda.is_finite() {
            return Err(Error::input(format!(
                "{name}: source wavelength must be positive (metres), got {lambda}"
            ))
            .at_file(name));
        }
        if !pos.iter().all(|x| x.is_finite()) || !mag(pos).is_finite() {
            return Err(Error::input(format!(
                "{name}: a source position is not finite: {} {} {}",
                pos[0], pos[1], pos[2]
            ))
            .at_file(name));
        }
        if mag(pos) == 0.0 {
            return Err(Error::input(format!(
                "{name}: a source position is at the sample (0 0 0)"
            ))
            .at_file(name));
        }
        sources.push((pos, lambda));
    }
    Ok(sources)
}

/// The divergence grid × the wavelengths (MODEL §5.3), in upstream's order.
pub fn divergence_grid(
    s: &Sampling,
    round_div: bool,
    det: &Detector,
    lambda0: f64,
) -> Vec<(V3, f64)> {
    let (hdivsteps, hdivrange, hdivstep) = (s.hdivsteps, s.hdivrange, s.hdivstep);
    let (vdivsteps, vdivrange, vdivstep) = (s.vdivsteps, s.vdivrange, s.vdivstep);
    let mut sources = Vec::new();
    let source_distance = 10.0;
    for ih in 0..hdivsteps {
        for iv in 0..vdivsteps {
            let hdiv = hdivstep * ih as f64 - hdivrange / 2.0;
            let vdiv = vdivstep * iv as f64 - vdivrange / 2.0;
            let test = (hdiv * hdiv - ((hdivstep * hdivstep) / 4.0) * (1 - hdivsteps % 2) as f64)
                / hdivrange
                / hdivrange
                + (vdiv * vdiv - ((vdivstep * vdivstep) / 4.0) * (1 - vdivsteps % 2) as f64)
                    / vdivrange
                    / vdivrange;
            if round_div && test * 4.0 > 1.1 {
                continue;
            }
            let mut v = [
                -source_distance * det.beam[0],
                -source_distance * det.beam[1],
                -source_distance * det.beam[2],
            ];
            v = rotaxis(v, det.polar_axis, vdiv);
            v = rotaxis(v, det.vert, hdiv);
            for id in 0..s.dispsteps {
                let lambda = lambda0 * (1.0 + s.dispstep * id as f64 - s.dispersion / 2.0);
                sources.push((v, lambda));
            }
        }
    }
    sources
}

/// Positions -> the plan's unit incident directions (from the source towards the sample).
pub fn to_plan(sources: &[(V3, f64)]) -> Vec<Source> {
    sources
        .iter()
        .map(|(pos, lambda)| {
            let d = unit(*pos);
            Source {
                incident: [-d[0], -d[1], -d[2]],
                lambda: *lambda,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::detector::{resolve_detector, HeaderDefaults};
    use crate::resolve::sampling::resolve_sampling;

    fn grid(s: &str) -> Vec<(V3, f64)> {
        let o = crate::args::test_opts(s);
        let d = resolve_detector(&o, &HeaderDefaults::default()).unwrap();
        let smp = resolve_sampling(&o, None).unwrap();
        divergence_grid(&smp, o.round_div, &d, 1e-10)
    }

    #[test]
    fn grid_counts_and_order() {
        assert_eq!(grid("").len(), 1);
        // 3x3 grid: the round trim drops the four corners; 2 wavelengths each
        assert_eq!(
            grid("-divergence 1 -divsteps 3 -dispersion 10 -dispsteps 2").len(),
            10
        );
        assert_eq!(grid("-divergence 1 -divsteps 3 -square_div").len(), 9);
        let g = grid("-dispersion 10 -dispsteps 3");
        let l: Vec<f64> = g.iter().map(|s| s.1).collect();
        assert!(l[0] < l[1] && l[1] < l[2], "{l:?}");
        // the default source is 10 m upstream on the beam axis (MOSFLM: beam along +x)
        let p = to_plan(&grid(""));
        assert_eq!(p[0].incident, [1.0, 0.0, 0.0]);
    }

    #[test]
    fn file_rows_with_defaults_and_errors() {
        let nan = f64::NAN;
        let rows = vec![
            vec![nan, nan, nan, nan, nan],
            vec![-10.0, 0.1, 0.0, 1.0, 2e-10],
        ];
        let s = from_file("s.txt", &rows, [1.0, 0.0, 0.0], 1e-10).unwrap();
        assert_eq!(s[0], ([-10.0, -0.0, -0.0], 1e-10));
        assert_eq!(s[1], ([-10.0, 0.1, 0.0], 2e-10));
        let e = |rows: Vec<Vec<f64>>| {
            from_file("s.txt", &rows, [1.0, 0.0, 0.0], 1e-10)
                .unwrap_err()
                .message
        };
        assert_eq!(e(vec![]), "s.txt: no sources found");
        assert!(e(vec![vec![0.0, 0.0, 0.0, 1.0, 1e-10]]).contains("at the sample"));
        assert!(e(vec![vec![-10.0, 0.0, 0.0, 1.0, -1.0]]).contains("wavelength must be positive"));
        assert!(e(vec![vec![1e200, 1e200, 0.0, 1.0, 1e-10]]).contains("not finite"));
    }
}
