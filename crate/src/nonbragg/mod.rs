//! Amorphous scattering (upstream's `nonBragg`): water, air, ice or any material whose structure
//! factor depends only on sin(θ)/λ, from a `.stol` table, on the same detector models as the
//! crystal simulation (golden-extras README, "nonBragg").
//!
//! Per pixel: the sum over sub-pixels and sources of `sign(F)·F²·polar·omega·weight`, times
//! `r_e²·fluence·molecules/steps`; F interpolated from the table at the pixel's sin(θ)/λ.
//!
//! What is nonBragg's own: its argument rules and defaults (`options`), the sample (molecules
//! from the volume the beam sees), the source weights and its statistics (its rmsd is read one
//! pixel off, as upstream does). Everything else is the crate's: the detector is placed by
//! `detector.rs` (through `resolve`), pixel positions are `Plan::subpixel_position`, sources come
//! from the crate's divergence/dispersion grid or source file, the polarisation factor is
//! `crate::terms`, the table interpolation `io::stol`, and the int/PGM/noise images and the
//! miniCBF are `output.rs` and `io/`.

#[cfg(not(target_arch = "wasm32"))] // writes files through crate::cli (native only)
pub mod cli;
pub mod options;

use crate::args::{Convention, Options, RTD};
use crate::error::{Error, Result};
use crate::files::{FileKind, FileSource};
use crate::io::stol::{read_stol, StolTable};
use crate::plan::Plan;
use crate::resolve::{AVOGADRO, R_E_SQR};
use crate::stats::Stats;
use crate::terms::{polarization_f64, PolarFrame};
use crate::vec3::{cross, mag, unit, unitize, V3};
use options::NonBraggOptions;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The sample the beam sees.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Thickness along the beam, height and width (m), after clipping to the beam.
    pub x: f64,
    pub y: f64,
    pub z: f64,
    /// g/m³ (back-computed when `-sample_molecules` is given).
    pub density: f64,
    pub molecular_weight: f64,
    pub molecules: f64,
    /// Photons/m².
    pub fluence: f64,
    /// Upstream's clipping warnings, in its words.
    pub warnings: Vec<String>,
}

/// Fluence and molecules as upstream computes them: `-flux` (if non-zero) gives
/// `flux·exposure/beamsize²`; height and width larger than the beam are clipped to it.
pub fn sample(o: &NonBraggOptions) -> Sample {
    let mut fluence = o.geo.fluence;
    if o.geo.flux != 0.0 && o.geo.exposure > 0.0 && o.geo.beamsize >= 0.0 {
        fluence = o.geo.flux * o.geo.exposure / o.geo.beamsize / o.geo.beamsize;
    }
    let (x, mut y, mut z) = (o.sample_x, o.sample_y, o.sample_z);
    let mut warnings = Vec::new();
    let g = crate::cfmt::fmt_g;
    if o.geo.beamsize >= 0.0 {
        if o.geo.beamsize < y {
            warnings.push(format!(
                "WARNING: clipping sample ({} m high) with beam ({} m)",
                g(y),
                g(o.geo.beamsize)
            ));
            y = o.geo.beamsize;
        }
        if o.geo.beamsize < z {
            warnings.push(format!(
                "WARNING: clipping sample ({} m wide) with beam ({} m)",
                g(z),
                g(o.geo.beamsize)
            ));
            z = o.geo.beamsize;
        }
    }
    let volume = x * y * z;
    let mut density = o.density;
    if o.molecules != 0.0 {
        density = o.molecules / volume / AVOGADRO * o.molecular_weight;
    }
    let molecules = volume * density * AVOGADRO / o.molecular_weight;
    Sample {
        x,
        y,
        z,
        density,
        molecular_weight: o.molecular_weight,
        molecules,
        fluence,
        warnings,
    }
}

/// One source as nonBragg lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceRow {
    /// Position relative to the sample (m); only the direction counts.
    pub position: V3,
    pub weight: f64,
    pub lambda: f64,
}

/// Everything resolved for a render.
#[derive(Clone, Debug)]
pub struct Setup {
    pub opts: NonBraggOptions,
    /// The crate's resolution of the detector and beam (its crystal part is a placeholder).
    pub frame: crate::resolve::Setup,
    pub table: StolTable,
    pub sources: Vec<SourceRow>,
    /// Kept divergence grid points (-1 with a source file, as upstream prints).
    pub divsteps: i64,
    pub sample: Sample,
    /// nonBragg's detector size (m): pixels x pixel, or the `-detsize` value itself.
    pub detsize_x: f64,
    pub detsize_y: f64,
    /// Header angles (rad).
    pub phi0: f64,
    pub osc: f64,
    pub lambda0: f64,
    pub noise_seed: i64,
    pub warnings: Vec<String>,
}

impl Setup {
    pub fn plan(&self) -> &Plan {
        &self.frame.plan
    }
}

/// nonBragg's pixel count: `ceil(detsize / pixel)` (nanoBragg subtracts half a pixel first).
fn pixel_count(given: Option<usize>, detsize: f64, pixel: f64) -> Result<(usize, f64)> {
    let detsize = given.map_or(detsize, |n| pixel * n as f64);
    let n = (detsize / pixel).ceil();
    if !(1.0..1e6).contains(&n) {
        return Err(Error::geometry(format!(
            "detector of {n} pixels across (check -detpixels / -detsize / -pixel)"
        )));
    }
    Ok((n as usize, detsize))
}

/// Parses nothing, reads the table (and source file) and resolves the geometry.
/// `clock_seed` is the noise seed used when `-seed` is not given.
pub fn prepare(o: &NonBraggOptions, files: &dyn FileSource, clock_seed: i64) -> Result<Setup> {
    let Some((stol_name, unit_kind)) = o.stol.clone() else {
        return Err(Error::new(
            crate::error::ErrorKind::MissingInput,
            "no structure-factor table: give -stol FILE (or -4stol FILE, -Q FILE)",
        ));
    };
    let (given_f, given_s) = o.pixels();
    let (size_f, size_s) = o.detsize();
    let (fpixels, detsize_x) = pixel_count(given_f, size_f, o.pixel())?;
    let (spixels, detsize_y) = pixel_count(given_s, size_s, o.pixel())?;
    if fpixels as u64 * spixels as u64 > 1 << 30 {
        return Err(Error::geometry(format!(
            "-detpixels: a {fpixels}x{spixels} detector is too large"
        ))
        .with_flag("-detpixels"));
    }

    // beam centre defaults: half a pixel off-centre in opposite directions; ORGX/ORGY win
    let px = o.pixel();
    let xclose = o
        .geo
        .orgx
        .map(|v| v * px)
        .or(o.geo.xclose)
        .unwrap_or((detsize_x - px) / 2.0);
    let yclose = o
        .geo
        .orgy
        .map(|v| v * px)
        .or(o.geo.yclose)
        .unwrap_or((detsize_y + px) / 2.0);
    let xbeam = o.geo.xbeam.unwrap_or(xclose);
    let ybeam = o.geo.ybeam.unwrap_or(yclose);

    let frame = resolve_frame(o, fpixels, spixels, [xclose, yclose], [xbeam, ybeam], files)?;

    let table = read_stol(
        &stol_name,
        &files.read(&stol_name, FileKind::Stol)?,
        unit_kind,
    )?;
    let plan = &frame.plan;
    let lambda0 = o.lambda();
    let beam = unit(o.beam_vector());
    let (sources, divsteps) = match &o.geo.sourcefile {
        // the crate read the file for the geometry; nonBragg also uses the weights
        Some(name) => {
            let rows =
                crate::io::textcols::read_columns(name, &files.read(name, FileKind::Sources)?, 5)?;
            let pick = |r: &Vec<f64>, i: usize, d: f64| if r[i].is_nan() { d } else { r[i] };
            let list = rows
                .iter()
                .map(|r| SourceRow {
                    position: [
                        pick(r, 0, -o.source_distance * beam[0]),
                        pick(r, 1, -o.source_distance * beam[1]),
                        pick(r, 2, -o.source_distance * beam[2]),
                    ],
                    weight: pick(r, 3, 1.0),
                    lambda: pick(r, 4, lambda0),
                })
                .collect::<Vec<_>>();
            (list, -1)
        }
        None => {
            let list: Vec<SourceRow> = plan
                .sources
                .iter()
                .map(|s| SourceRow {
                    position: s.incident.map(|c| -o.source_distance * c),
                    weight: 1.0,
                    lambda: s.lambda,
                })
                .collect();
            let (dispsteps, _, _) = crate::resolve::sampling::divergence_like(
                o.geo.dispsteps,
                o.geo.dispersion,
                -1.0,
                1.0,
            );
            let n = list.len() as i64 / dispsteps.max(1);
            (list, n)
        }
    };
    if sources.len() != plan.sources.len() {
        return Err(Error::input(
            "source list and geometry disagree".to_string(),
        ));
    }
    let (_, osc, _) = crate::resolve::sampling::phi(o.geo.phisteps, o.geo.osc, o.geo.phistep);
    let mut warnings = o.geo.warnings.clone();
    warnings.extend(frame.det.warnings.iter().cloned());
    Ok(Setup {
        opts: o.clone(),
        sample: sample(o),
        table,
        sources,
        divsteps,
        detsize_x,
        detsize_y,
        phi0: o.phi0(),
        osc,
        lambda0,
        noise_seed: o.geo.seed.unwrap_or(clock_seed),
        frame,
        warnings,
    })
}

/// The detector, beam and sources through the crate's own resolution of a detector and beam
/// alone (`resolve::detector_and_beam`: no crystal): nonBragg's fixed frame is the crate's CUSTOM
/// convention (fast (0,0,1), slow (0,-1,0), beam (1,0,0), polarisation (0,0,1), two-theta axis
/// (0,1,0), detector normal = fast x slow), with the pixel counts and the beam centre nonBragg
/// chose (nonBragg's rules, not nanoBragg's: `prepare`).
fn resolve_frame(
    o: &NonBraggOptions,
    fpixels: usize,
    spixels: usize,
    close: [f64; 2],
    beam_centre: [f64; 2],
    files: &dyn FileSource,
) -> Result<crate::resolve::Setup> {
    let g = &o.geo;
    let (fdet, sdet) = (o.fdet_vector(), o.sdet_vector());
    let centre = if g.pivot == crate::args::Pivot::Sample {
        close
    } else {
        beam_centre
    };
    let n = Options {
        // the detector
        convention: Convention::Custom,
        pivot: g.pivot,
        pixel: Some(o.pixel()),
        fpixels: Some(fpixels as i64),
        spixels: Some(spixels as i64),
        fdet_vector: Some(fdet),
        sdet_vector: Some(sdet),
        odet_vector: Some(unit(cross(unit(fdet), unit(sdet)))),
        beam_vector: Some(o.beam_vector()),
        polar_vector: Some(o.polar_vector()),
        twotheta_axis: Some(o.twotheta_axis()),
        twotheta: g.twotheta,
        rotx: g.rotx,
        roty: g.roty,
        rotz: g.rotz,
        distance: Some(o.distance()),
        close_distance: g.close_distance,
        xbeam: Some(centre[0]),
        ybeam: Some(centre[1]),
        curved_det: g.curved_det,
        point_pixel: g.point_pixel,
        oversample: g.oversample.max(1),
        roi: g.roi,
        // its module gaps become the mask (resolution's step, as for nanobragg)
        preset: g.preset,
        // the beam
        lambda: Some(o.lambda()),
        dispersion: g.dispersion,
        dispsteps: g.dispsteps,
        hdivrange: g.hdivrange,
        vdivrange: g.vdivrange,
        hdivstep: g.hdivstep,
        vdivstep: g.vdivstep,
        hdivsteps: g.hdivsteps,
        vdivsteps: g.vdivsteps,
        round_div: g.round_div,
        sourcefile: g.sourcefile.clone(),
        polar: g.polar,
        nopolar: g.nopolar,
        seed: Some(-1),
        ..Options::default()
    };
    crate::resolve::detector_and_beam(&n, files)
}

/// Renders the float image (photons/pixel, or F with `-Fmap`); returns it and the summed solid
/// angle of the rendered sub-pixels. Rows in parallel; `progress` gets the fraction done,
/// `cancel` is polled per row.
pub fn render(
    setup: &Setup,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, f64)> {
    let plan = setup.plan();
    let (fp, sp) = (plan.fpixels, plan.spixels);
    let frames: Vec<PolarFrame> = plan
        .sources
        .iter()
        .map(|s| PolarFrame::new(s.incident, plan.polar_axis))
        .collect();
    let weights: Vec<f64> = setup.sources.iter().map(|s| s.weight).collect();
    let steps = (plan.sources.len() * (plan.oversample as usize).pow(2)) as f64;
    let smp = &setup.sample;
    let done = AtomicUsize::new(0);
    let mut image = vec![0f32; fp * sp];
    let omega_rows: Vec<f64> = image
        .par_chunks_mut(fp)
        .enumerate()
        .map(|(s, row)| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let mut omega_sum = 0.0;
            for (f, out) in row.iter_mut().enumerate() {
                if !plan.renders(f, s) {
                    continue;
                }
                let (v, om) = pixel(setup, plan, &frames, &weights, f, s);
                omega_sum += om;
                *out = if setup.opts.fmap {
                    v.1 as f32
                } else {
                    (v.0 * R_E_SQR * smp.fluence * smp.molecules / steps) as f32
                };
            }
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            if d.is_multiple_of(16) {
                progress(d as f32 / sp as f32);
            }
            Ok(omega_sum)
        })
        .collect::<Result<_>>()?;
    progress(1.0);
    // an image with a NaN or infinite pixel is an error, never an output (as nanobragg's)
    crate::api::check_image_with(
        plan,
        &image,
        "-fluence/-flux, -molecules/-samplesize, -scale or the table's F",
    )?;
    Ok((image, omega_rows.iter().sum()))
}

/// One pixel: (Σ sign·F²·polar·omega·weight, last F) and its summed solid angle.
fn pixel(
    setup: &Setup,
    plan: &Plan,
    frames: &[PolarFrame],
    weights: &[f64],
    f: usize,
    s: usize,
) -> ((f64, f64), f64) {
    let n = plan.oversample as usize;
    let px2 = plan.pixel * plan.pixel;
    let (mut sum, mut last_f, mut omega_sum) = (0.0f64, 0.0f64, 0.0f64);
    for subs in 0..n {
        for subf in 0..n {
            let pos = plan.subpixel_position(f * n + subf, s * n + subs, 0.0);
            let (d, r) = unitize(pos);
            let omega = if plan.point_pixel {
                (1.0 / r) / r
            } else {
                ((px2 / r) / r) * plan.close_distance / r
            };
            omega_sum += omega;
            for (si, src) in plan.sources.iter().enumerate() {
                let i = src.incident;
                let q = [
                    (d[0] - i[0]) / src.lambda,
                    (d[1] - i[1]) / src.lambda,
                    (d[2] - i[2]) / src.lambda,
                ];
                let stol = 0.5 * mag(q);
                let fb = setup.table.interpolate(stol);
                // negative F gives a negative intensity, as upstream allows
                let sign = if fb < 0.0 { -1.0 } else { 1.0 };
                let polar = if plan.nopolar {
                    1.0
                } else {
                    polarization_f64(plan.polar_k, &frames[si], d)
                };
                sum += ((((sign * fb) * fb) * polar) * omega) * weights[si];
                last_f = fb;
            }
        }
    }
    ((sum, last_f), omega_sum)
}

/// Statistics as nonBragg prints them: the crate's max/mean/rms over the rendered pixels, and
/// upstream's rmsd, which takes each ROI pixel's deviation from the value of the NEXT pixel in
/// memory (0 past the end).
pub fn statistics(setup: &Setup, image: &[f32]) -> Stats {
    let plan = setup.plan();
    let mut st = crate::stats::compute(plan, image);
    let (mut dev, mut n) = (0.0f64, 0usize);
    for idx in 0..image.len() {
        let (f, s) = (idx % plan.fpixels, idx / plan.fpixels);
        if !plan.roi.contains(f, s) {
            continue;
        }
        let next = image.get(idx + 1).map_or(0.0, |&v| v as f64);
        dev += (next - st.mean) * (next - st.mean);
        n += 1;
    }
    st.rmsd = (dev / (n.max(2) - 1) as f64).sqrt();
    st
}

/// nonBragg's SMV header.
pub fn smv_header(setup: &Setup) -> Result<Vec<u8>> {
    use crate::io::smv::{header_open, pad_header, push_g, SmvType, HEADER_CLOSE};
    let d = &setup.frame.det;
    let px = d.pixel;
    let mut s = header_open(SmvType::U16);
    s.push_str(&format!("SIZE1={};\nSIZE2={};\n", d.fpixels, d.spixels));
    push_g(&mut s, "PIXEL_SIZE", px * 1000.0);
    push_g(&mut s, "DISTANCE", d.distance * 1000.0);
    push_g(&mut s, "WAVELENGTH", setup.lambda0 * 1e10);
    push_g(&mut s, "BEAM_CENTER_X", d.fbeam * 1000.0);
    push_g(
        &mut s,
        "BEAM_CENTER_Y",
        (setup.detsize_y - d.sbeam) * 1000.0,
    );
    push_g(&mut s, "ORGX", d.fclose / px);
    push_g(&mut s, "ORGY", d.sclose / px);
    push_g(&mut s, "CLOSE_DISTANCE", d.close_distance * 1000.0);
    push_g(&mut s, "PHI", setup.phi0 * RTD);
    push_g(&mut s, "OSC_START", setup.phi0 * RTD);
    push_g(&mut s, "OSC_RANGE", setup.osc * RTD);
    push_g(&mut s, "TWOTHETA", setup.opts.geo.twotheta * RTD);
    s.push_str(HEADER_CLOSE);
    pad_header(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;

    fn setup(args: &str, files: &MemFiles) -> Result<Setup> {
        let o = options::parse(
            &args
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )?;
        prepare(&o, files, -1)
    }

    fn water() -> MemFiles {
        let mut m = MemFiles::default();
        m.0.insert(
            "w.stol".into(),
            b"0 2.57\n0.1 2.0\n0.3 3.0\n0.5 3.1\n".to_vec(),
        );
        m
    }

    #[test]
    fn sample_clipping_and_molecules() {
        let s = setup(
            "-stol w.stol -samplesize 0.2 -thickness 1 -beamsize 0.1",
            &water(),
        )
        .unwrap()
        .sample;
        assert_eq!((s.x, s.y, s.z), (1e-3, 1e-4, 1e-4));
        assert_eq!(s.warnings.len(), 2);
        assert!(s.warnings[0].contains("0.0002 m high"), "{}", s.warnings[0]);
        // 1e-11 m^3 of water: 1e-5 g / 18 g/mol
        assert!((s.molecules / (1e-5 / 18.0 * AVOGADRO) - 1.0).abs() < 1e-12);
        let s = setup("-stol w.stol -sample_molecules 1e12", &water())
            .unwrap()
            .sample;
        assert!((s.molecules / 1e12 - 1.0).abs() < 1e-12);
        let s = setup(
            "-stol w.stol -flux 1e12 -exposure 2 -beamsize 0.1",
            &water(),
        )
        .unwrap()
        .sample;
        assert_eq!(s.fluence, 1e12 * 2.0 / 1e-4 / 1e-4);
    }

    #[test]
    fn default_centre_and_pixel_counts() {
        let st = setup(
            "-stol w.stol -detsize 25.5 -pixel 0.2 -distance 100",
            &water(),
        )
        .unwrap();
        let d = &st.frame.det;
        assert_eq!((d.fpixels, d.spixels), (128, 128));
        assert_eq!(st.detsize_y, 0.0255);
        // beam centre (detsize - pixel)/2 fast, (detsize + pixel)/2 slow
        assert!((d.fbeam - 0.01265).abs() < 1e-12 && (d.sbeam - 0.01285).abs() < 1e-12);
        let e = setup("-distance 100", &water()).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::MissingInput);
    }

    /// The frame is a detector and a beam alone (`resolve::detector_and_beam`): no crystal, no
    /// orientations, no structure factors; a preset's gaps are masked as for nanobragg.
    #[test]
    fn the_frame_has_no_crystal() {
        let st = setup("-stol w.stol -detpixels 16 -oversample 2", &water()).unwrap();
        let (c, p) = (&st.frame.crystal, st.plan());
        assert_eq!((c.volume, c.a_star), (0.0, [0.0; 3]));
        assert!(p.orientations.is_empty() && p.hkl.hkls == 0);
        assert_eq!((p.na, p.oversample, p.sources.len()), (1.0, 2, 1));
        let st = setup("-stol w.stol -detector pilatus6m", &water()).unwrap();
        let mask = st.plan().mask.as_ref().expect("the preset's module gaps");
        assert!(mask.contains(&0) && mask.iter().any(|&m| m != 0));
    }

    #[test]
    fn flat_table_gives_the_thomson_solid_angle_sum() {
        // F = 1 everywhere, no polarisation: each pixel is r_e² · fluence · molecules · omega
        let mut m = MemFiles::default();
        m.0.insert("one.stol".into(), b"0 1\n1 1\n2 1\n3 1\n".to_vec());
        let st = setup(
            "-stol one.stol -nopolar -detpixels 16 -pixel 1 -distance 50 -fluence 1e24 -sample_molecules 1e10",
            &m,
        )
        .unwrap();
        let (img, omega) = render(&st, &|_| {}, &AtomicBool::new(false)).unwrap();
        let k = R_E_SQR * 1e24 * st.sample.molecules;
        let total: f64 = img.iter().map(|&v| v as f64).sum();
        assert!(
            (total / (k * omega) - 1.0).abs() < 1e-6,
            "{total} {}",
            k * omega
        );
        // the pixel nearest the beam sees the largest solid angle
        let max = img.iter().cloned().fold(0f32, f32::max);
        assert_eq!(
            max,
            img[8 * 16 + 7].max(img[7 * 16 + 7]).max(img[8 * 16 + 8])
        );
    }
}
