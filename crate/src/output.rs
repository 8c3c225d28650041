//! Output images from the float image: noiseless SMV, Poisson-noise SMV, PGM (MODEL §7.3–§7.6),
//! and the SMV header fields derived from the resolved geometry.

use crate::args::RTD;
use crate::io::smv::SmvHeader;
use crate::plan::Roi;
use crate::resolve::Setup;
use crate::rng::{Noise, RanState};
use crate::stats::Stats;

pub fn smv_header(setup: &Setup) -> SmvHeader {
    let d = &setup.det;
    SmvHeader {
        fpixels: d.fpixels,
        spixels: d.spixels,
        pixel_mm: d.pixel * 1000.0,
        distance_mm: d.distance * 1000.0,
        wavelength_a: setup.lambda0 * 1e10,
        beam_center_x_mm: d.xbeam * 1000.0,
        beam_center_y_mm: d.ybeam * 1000.0,
        adxv_center_x: d.fbeam * 1000.0,
        adxv_center_y: (d.detsize_s - d.sbeam) * 1000.0,
        mosflm_center_x: (d.sbeam - 0.5 * d.pixel) * 1000.0,
        mosflm_center_y: (d.fbeam - 0.5 * d.pixel) * 1000.0,
        denzo_x_beam: (d.sbeam - 0.0 * d.pixel) * 1000.0,
        denzo_y_beam: d.fbeam * 1000.0,
        dials_origin: d.dials_origin,
        xds_orgx: d.orgx,
        xds_orgy: d.orgy,
        close_distance_mm: d.close_distance * 1000.0,
        phi_deg: setup.phi0 * RTD,
        osc_start_deg: setup.phi0 * RTD,
        osc_range_deg: setup.osc * RTD,
        twotheta_deg: d.twotheta * RTD,
    }
}

/// The SMV integer scale: `-scale` if positive, else 55000/max_I (1 if max_I is 0).
pub fn int_scale(setup: &Setup, stats: &Stats) -> f64 {
    if setup.opts.scale > 0.0 {
        setup.opts.scale
    } else if stats.max_i > 0.0 {
        55000.0 / stats.max_i
    } else {
        1.0
    }
}

pub fn int_pixels(setup: &Setup, image: &[f32], scale: f64) -> Vec<u16> {
    let p = &setup.plan;
    int_pixels_roi(p.fpixels, &p.roi, image, scale, setup.opts.adc)
}

/// The SMV integer image of any program (nanoBragg, nonBragg): pixels inside `roi` are
/// `floorf((float)(clamp(v·scale + adc, 0, 65535) + 0.5))`, the others 0. `fpixels` is the
/// row length of `image`.
pub fn int_pixels_roi(fpixels: usize, roi: &Roi, image: &[f32], scale: f64, adc: f64) -> Vec<u16> {
    use rayon::prelude::*;
    let mut out = vec![0u16; image.len()];
    if fpixels == 0 {
        return out;
    }
    let spixels = image.len() / fpixels;
    let cols = roi.xmin..roi.xmax.saturating_add(1).min(fpixels);
    let rows = roi.ymin..roi.ymax.saturating_add(1).min(spixels);
    if cols.is_empty() || rows.is_empty() {
        return out;
    }
    let convert = |(s, (o, v)): (usize, (&mut [u16], &[f32]))| {
        if rows.contains(&s) {
            for (o, &v) in o[cols.clone()].iter_mut().zip(&v[cols.clone()]) {
                // min then max (not clamp): a NaN becomes 65535, as upstream's fmin/fmax
                let mut v = (v as f64 * scale + adc).min(65535.0);
                v = v.max(0.0);
                // upstream: floorf((float)(v + 0.5)); v >= 0, so truncation is the floor
                *o = ((v + 0.5) as f32) as u16;
            }
        }
    };
    // rows in parallel from PARALLEL_FROM pixels (each pixel on its own: the result does not
    // depend on the split); below, the thread pool costs more than it saves
    if image.len() >= PARALLEL_FROM {
        out.par_chunks_mut(fpixels)
            .zip(image.par_chunks(fpixels))
            .enumerate()
            .for_each(convert);
    } else {
        out.chunks_mut(fpixels)
            .zip(image.chunks(fpixels))
            .enumerate()
            .for_each(convert);
    }
    out
}

/// Images from this many pixels (512²) are converted and written with threads.
pub const PARALLEL_FROM: usize = 1 << 18;

pub fn pgm_scale(setup: &Setup, stats: &Stats, int_scale: f64) -> f64 {
    if setup.opts.pgmscale > 0.0 {
        setup.opts.pgmscale
    } else if stats.rmsd > 0.0 {
        250.0 / (5.0 * stats.rmsd)
    } else {
        int_scale
    }
}

pub fn pgm_bytes(setup: &Setup, image: &[f32], scale: f64) -> Vec<u8> {
    let p = &setup.plan;
    pgm_bytes_roi(p.fpixels, &p.roi, image, scale)
}

/// PGM bytes: `(unsigned char) min(255, v·scale)` inside `roi`, 0 elsewhere. A negative value
/// converts as C does on x86-64 (through a 32-bit integer: -1.5 -> 255), which nonBragg's
/// ice tables produce.
pub fn pgm_bytes_roi(fpixels: usize, roi: &Roi, image: &[f32], scale: f64) -> Vec<u8> {
    let mut out = vec![0u8; image.len()];
    for (idx, o) in out.iter_mut().enumerate() {
        if roi.contains(idx % fpixels, idx / fpixels) {
            let v = (image[idx] as f64 * scale).min(255.0);
            *o = v as i32 as u8;
        }
    }
    out
}

/// Poisson noise image with upstream's generator and seed; returns pixels, photon total and
/// overload count.
pub fn noise_pixels(setup: &Setup, image: &[f32]) -> (Vec<u16>, f64, usize) {
    let p = &setup.plan;
    noise_pixels_roi(p.fpixels, &p.roi, image, setup.opts.adc, setup.noise_seed)
}

/// The Poisson noise image of any program: for every pixel inside `roi` in raster order,
/// `poidev(v) + adc` clipped at 65535 (counted as an overload); 0 outside. `seed` is upstream's
/// stored (negated) seed.
pub fn noise_pixels_roi(
    fpixels: usize,
    roi: &Roi,
    image: &[f32],
    adc: f64,
    seed: i64,
) -> (Vec<u16>, f64, usize) {
    let mut rng = RanState::new();
    let mut noise = Noise::new();
    let mut seed = seed;
    let mut out = vec![0u16; image.len()];
    let (mut sum, mut overloads) = (0.0f64, 0usize);
    for (idx, o) in out.iter_mut().enumerate() {
        if !roi.contains(idx % fpixels, idx / fpixels) {
            continue;
        }
        let mut v = noise.poidev(&mut rng, image[idx], &mut seed) as f64;
        sum += v;
        v += adc;
        if v > 65535.0 {
            v = 65535.0;
            overloads += 1;
        }
        *o = v.max(0.0) as u16;
    }
    (out, sum, overloads)
}

/// Little-endian bytes of an f32, u16 or u32 image, without a copy on little-endian machines.
pub fn le_bytes<T: bytemuck::Pod + LeBytes>(image: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(image))
    } else {
        std::borrow::Cow::Owned(image.iter().flat_map(|v| v.le()).collect())
    }
}

pub trait LeBytes {
    fn le(&self) -> Vec<u8>;
}
impl LeBytes for f32 {
    fn le(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}
impl LeBytes for u16 {
    fn le(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}
impl LeBytes for u32 {
    fn le(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

pub fn float_bytes(image: &[f32]) -> Vec<u8> {
    le_bytes(image).into_owned()
}

/// The miniCBF header values of a placed detector (`-cbffile`): the beam position in pixels
/// from the corner of the first pixel, the preset's name, sensor and largest count when the run
/// used one (else 65535, the SMV image's limit, and a silicon sensor of `sensor_thickness` m if
/// positive), the detector's two-theta; the beam's polarisation and flux are the caller's
/// ([`cbf_beam`]).
pub fn cbf_info(
    det: &crate::resolve::detector::Detector,
    preset: Option<&crate::presets::DetectorPreset>,
    default_name: &str,
    wavelength_a: f64,
    exposure: f64,
    phi_deg: f64,
    osc_deg: f64,
    sensor_thickness: f64,
) -> crate::io::cbf::CbfInfo {
    crate::io::cbf::CbfInfo {
        detector: preset.map_or(default_name.to_string(), |p| p.label.to_string()),
        pixel: det.pixel,
        sensor: match preset {
            Some(p) => Some((p.sensor.to_string(), p.sensor_thickness_um * 1e-6)),
            None if sensor_thickness > 0.0 => Some(("Silicon".to_string(), sensor_thickness)),
            None => None,
        },
        exposure,
        count_cutoff: preset.map_or(65535, |p| p.saturation),
        wavelength: wavelength_a,
        distance: det.distance,
        beam_xy: (det.fbeam / det.pixel, det.sbeam / det.pixel),
        start_angle: phi_deg,
        angle_increment: osc_deg,
        excluded: 0,
        two_theta: det.twotheta * crate::args::RTD,
        polarization: None,
        flux: 0.0,
    }
}

/// The beam's header values of nanoBragg's options (`info.polarization`, `info.flux`): the
/// polarisation fraction (1 + K)/2 of the Kahn factor `-polar` K (none with `-nopolar`: the
/// image has no polarisation factor), the `-flux`.
pub fn cbf_beam(info: &mut crate::io::cbf::CbfInfo, o: &crate::args::Options) {
    info.polarization = (!o.nopolar).then_some((1.0 + o.polar) / 2.0);
    info.flux = o.flux;
}

/// The pixels of an SMV integer image as a miniCBF holds them: masked pixels (module gaps, a
/// `-mask`) are -1, as PILATUS and EIGER files mark their gaps. Sets `info.excluded`.
pub fn cbf_pixels(
    ints: &[u16],
    mask: Option<&[u8]>,
    info: &mut crate::io::cbf::CbfInfo,
) -> Vec<i32> {
    let px: Vec<i32> = ints
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if mask.is_some_and(|m| m[i] == 0) {
                -1
            } else {
                v as i32
            }
        })
        .collect();
    info.excluded = px.iter().filter(|&&v| v == -1).count();
    px
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_int_image_equals_the_serial_loop() {
        // below and above PARALLEL_FROM: the serial and the threaded path
        for (fp, sp) in [(29usize, 17usize), (600, 500)] {
            let mut image: Vec<f32> = (0..fp * sp)
                .map(|i| ((i * 7919) % 1000) as f32 * 0.37 - 20.0)
                .collect();
            image[33] = f32::NAN;
            image[34] = 1e9;
            for roi in [
                Roi {
                    xmin: 0,
                    xmax: fp - 1,
                    ymin: 0,
                    ymax: sp - 1,
                },
                Roi {
                    xmin: 2,
                    xmax: 9,
                    ymin: 4,
                    ymax: 99999,
                },
                Roi {
                    xmin: 9,
                    xmax: 2,
                    ymin: 0,
                    ymax: 16,
                },
                Roi {
                    xmin: 4000,
                    xmax: 5000,
                    ymin: 0,
                    ymax: 16,
                },
            ] {
                let mut want = vec![0u16; image.len()];
                for (idx, o) in want.iter_mut().enumerate() {
                    if roi.contains(idx % fp, idx / fp) {
                        let mut v = (image[idx] as f64 * 123.4 + 10.0).min(65535.0);
                        v = v.max(0.0);
                        *o = ((v + 0.5) as f32) as u16;
                    }
                }
                let got = int_pixels_roi(fp, &roi, &image, 123.4, 10.0);
                assert!(got == want, "{fp}x{sp} {roi:?}");
            }
        }
    }
}
