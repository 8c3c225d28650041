//! The beam (MODEL §5.1, §5.7): the wavelength (flag, else the `-img` header, else 1 Å), the
//! fluence (from `-flux`, `-exposure` and `-beamsize` when a flux is given), and the crystal
//! size clipped to the beam.

use crate::args::Options;
use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct Beam {
    /// Central wavelength (m).
    pub lambda0: f64,
    /// Photons per m².
    pub fluence: f64,
    /// Crystal size along x, y, z (m) after clipping y and z to the beam size; 0 = not given.
    pub sample: [f64; 3],
    pub warnings: Vec<String>,
}

pub fn resolve_beam(o: &Options, header_lambda: Option<f64>) -> Result<Beam> {
    let lambda0 = o.lambda.or(header_lambda).unwrap_or(1e-10);
    if !(lambda0 > 0.0) || !lambda0.is_finite() {
        return Err(Error::geometry(format!(
            "-lambda: wavelength must be positive, got {} Å",
            lambda0 * 1e10
        ))
        .with_flag("-lambda"));
    }
    let mut warnings = Vec::new();
    let mut fluence = o.fluence;
    if o.flux != 0.0 && o.exposure > 0.0 && o.beamsize >= 0.0 {
        fluence = o.flux * o.exposure / o.beamsize / o.beamsize;
        if !fluence.is_finite() {
            return Err(Error::geometry(format!(
                "-flux {} -exposure {} -beamsize {} mm give an infinite fluence (flux × exposure / beamsize²)",
                crate::cfmt::fmt_g(o.flux),
                crate::cfmt::fmt_g(o.exposure),
                crate::cfmt::fmt_g(o.beamsize * 1e3)
            )).with_flag("-flux"));
        }
    }
    let mut sample = [o.sample_x, o.sample_y, o.sample_z];
    if o.beamsize >= 0.0 {
        if o.beamsize < sample[1] {
            warnings.push(format!(
                "WARNING: clipping sample width to the beam size: {} mm",
                o.beamsize * 1e3
            ));
            sample[1] = o.beamsize;
        }
        if o.beamsize < sample[2] {
            warnings.push(format!(
                "WARNING: clipping sample height to the beam size: {} mm",
                o.beamsize * 1e3
            ));
            sample[2] = o.beamsize;
        }
    }
    Ok(Beam {
        lambda0,
        fluence,
        sample,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::test_opts as opts;

    #[test]
    fn wavelength_from_flag_then_header_then_default() {
        assert_eq!(
            resolve_beam(&opts("-lambda 2"), Some(3e-10))
                .unwrap()
                .lambda0,
            2e-10
        );
        assert_eq!(resolve_beam(&opts(""), Some(3e-10)).unwrap().lambda0, 3e-10);
        assert_eq!(resolve_beam(&opts(""), None).unwrap().lambda0, 1e-10);
    }

    #[test]
    fn flux_sets_fluence_and_the_beam_clips_the_crystal() {
        let b = resolve_beam(
            &opts("-flux 1e12 -exposure 2 -beamsize 0.1 -xtalsize 0.5"),
            None,
        )
        .unwrap();
        assert_eq!(b.fluence, 1e12 * 2.0 / 1e-4 / 1e-4);
        assert_eq!(b.sample, [0.5e-3, 1e-4, 1e-4]);
        assert_eq!(b.warnings.len(), 2);
        let e = resolve_beam(&opts("-flux 1e12 -beamsize 0"), None).unwrap_err();
        assert!(e.message.contains("infinite fluence"), "{}", e.message);
    }
}
