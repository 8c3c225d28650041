//! Options -> Setup: the whole host-side resolution in upstream's order (MODEL §0), ending in
//! the flat `Plan` the kernels read. Everything here is f64 and runs once per render.

use crate::args::{Options, RTD};
use crate::crystal::{resolve_crystal, Crystal, CrystalInput};
use crate::detector::{resolve_detector, Detector, HeaderDefaults};
use crate::error::{Error, ErrorKind, Result};
use crate::files::{FileKind, FileSource};
use crate::io;
use crate::plan::{HklGrid, Interpolation, Orientation, Plan, Roi, Source};
use crate::rng::{mosaic_rotation_umat, RanState};
use crate::sampling;
use crate::vec3::{mag, rotaxis, rotumat, unit, IDENTITY, M3};

pub const R_E_SQR: f64 = 7.94079248018965e-30;
pub const AVOGADRO: f64 = 6.02214179e23;

/// Everything resolved: the plan plus what the outputs, headers and logs need.
#[derive(Clone, Debug)]
pub struct Setup {
    pub opts: Options,
    pub det: Detector,
    pub crystal: Crystal,
    pub plan: Plan,
    pub lambda0: f64,
    pub phi0: f64,
    pub osc: f64,
    pub phistep: f64,
    pub mosaic_spread: f64,
    pub fluence: f64,
    pub recommended_oversample: i64,
    /// Noise seed (upstream's stored, negated form).
    pub noise_seed: i64,
    /// Where the structure factors came from, for the log.
    pub hkl_source: String,
    /// Lines upstream prints while setting up (informational).
    pub log: Vec<String>,
    pub warnings: Vec<String>,
}

/// Apply an SMV header's values as starting values (MODEL §7.11).
fn ingest_header(
    files: &dyn FileSource,
    name: &str,
    is_mask: bool,
    hd: &mut HeaderDefaults,
    lambda: &mut Option<f64>,
    phi0: &mut Option<f64>,
    osc: &mut Option<f64>,
) -> Result<io::smv::SmvFile> {
    let bytes = files.read(name, FileKind::Image)?;
    let smv = io::smv::read_smv(name, &bytes)?;
    let h = &smv.header_text;
    let v = |k: &str| io::smv::value_of(h, k).filter(|x| !x.is_nan());
    let mut size1 = v("SIZE1");
    let mut size2 = v("SIZE2");
    if size1 == Some(0.0) {
        size1 = v("DETECTOR_DIMENSIONS");
        size2 = size1;
    }
    if let Some(x) = size1 {
        hd.fpixels = Some(x as i64);
    }
    if let Some(x) = size2 {
        hd.spixels = Some(x as i64);
    }
    if let Some(x) = v("PIXEL_SIZE") {
        hd.pixel = Some(x / 1000.0);
    }
    if let Some(x) = v("DISTANCE") {
        hd.distance = Some(x / 1000.0);
    }
    if let Some(x) = v("CLOSE_DISTANCE") {
        hd.close_distance = Some(x / 1000.0);
    }
    if let Some(x) = v("WAVELENGTH") {
        *lambda = Some(x / 1e10);
    }
    if let Some(x) = v("BEAM_CENTER_X") {
        hd.xbeam = Some(x / 1000.0);
    }
    if let Some(x) = v("BEAM_CENTER_Y") {
        if is_mask {
            let ds = hd.pixel.unwrap_or(1e-4) * hd.spixels.unwrap_or(1024) as f64;
            hd.ybeam = Some(ds - x / 1000.0);
        } else {
            hd.ybeam = Some(x / 1000.0);
        }
    }
    if let Some(x) = v("ORGX") {
        hd.orgx = Some(x);
    }
    if let Some(x) = v("ORGY") {
        hd.orgy = Some(x);
    }
    if let Some(x) = v("PHI") {
        *phi0 = Some(x / RTD);
    }
    if let Some(x) = v("OSC_RANGE") {
        *osc = Some(x / RTD);
    }
    Ok(smv)
}

pub fn resolve(opts: &Options, files: &dyn FileSource) -> Result<Setup> {
    let mut o = opts.clone();
    let mut log = Vec::new();
    let mut warnings = std::mem::take(&mut o.warnings);

    // 1. headers: mask first, then img; CLI values override them
    let mut hd = HeaderDefaults::default();
    let mut hdr_lambda = None;
    let mut hdr_phi0 = None;
    let mut hdr_osc = None;
    let mut mask_file = None;
    if let Some(name) = o.mask.clone() {
        mask_file = Some((
            name.clone(),
            ingest_header(
                files,
                &name,
                true,
                &mut hd,
                &mut hdr_lambda,
                &mut hdr_phi0,
                &mut hdr_osc,
            )?,
        ));
    }
    if let Some(name) = o.img.clone() {
        ingest_header(
            files,
            &name,
            false,
            &mut hd,
            &mut hdr_lambda,
            &mut hdr_phi0,
            &mut hdr_osc,
        )?;
    }
    let lambda0 = o.lambda.or(hdr_lambda).unwrap_or(1e-10);
    if !(lambda0 > 0.0) || !lambda0.is_finite() {
        return Err(Error::geometry(format!(
            "-lambda: wavelength must be positive, got {} Å",
            lambda0 * 1e10
        )));
    }
    let phi0 = o.phi0.or(hdr_phi0).unwrap_or(0.0);
    let osc_in = o.osc.or(hdr_osc);

    // 3. fluence from flux; sample clipping by the beam size (MODEL §5.7)
    let mut fluence = o.fluence;
    if o.flux != 0.0 && o.exposure > 0.0 && o.beamsize >= 0.0 {
        fluence = o.flux * o.exposure / o.beamsize / o.beamsize;
    }
    if o.beamsize >= 0.0 {
        if o.beamsize < o.sample_y {
            warnings.push(format!(
                "WARNING: clipping sample width to the beam size: {} mm",
                o.beamsize * 1e3
            ));
            o.sample_y = o.beamsize;
        }
        if o.beamsize < o.sample_z {
            warnings.push(format!(
                "WARNING: clipping sample height to the beam size: {} mm",
                o.beamsize * 1e3
            ));
            o.sample_z = o.beamsize;
        }
    }

    // 4-5. detector conventions, vectors; usage check
    // (placement needs nothing from the sampling step, so it is done here in one go)
    let det = resolve_detector(&o, &hd)?;
    warnings.extend(det.warnings.iter().cloned());

    let has_mat = o.mat.is_some();
    let cell_a = o.cell.map_or(0.0, |c| c[0]);
    let hkl_dump_exists = o.hkl.is_none() && files.exists(&o.dump);
    if (o.hkl.is_none() && !hkl_dump_exists && o.default_f == 0.0) || (!has_mat && cell_a == 0.0) {
        let mut why = Vec::new();
        if o.hkl.is_none() && !hkl_dump_exists && o.default_f == 0.0 {
            why.push("no structure factors: give -hkl FILE or -default_F F");
        }
        if !has_mat && cell_a == 0.0 {
            why.push("no crystal: give -cell a b c alpha beta gamma or -mat FILE");
        }
        return Err(Error::new(ErrorKind::MissingInput, why.join("; ")));
    }

    // 6. sampling auto-selection
    let (phisteps, osc, phistep) = sampling::phi(o.phisteps, osc_in, o.phistep);
    let (hdivsteps, hdivrange, hdivstep) =
        sampling::divergence_like(o.hdivsteps, o.hdivrange, o.hdivstep, 1.0);
    let (vdivsteps, vdivrange, vdivstep) =
        sampling::divergence_like(o.vdivsteps, o.vdivrange, o.vdivstep, 1.0);
    let (dispsteps, dispersion, dispstep) =
        sampling::divergence_like(o.dispsteps, o.dispersion, -1.0, 1.0);
    let (thicksteps, thick, thickstep, mu, w) =
        sampling::thickness(o.detector_thicksteps, o.detector_thick, o.detector_mu);
    warnings.extend(w);
    let (mosaic_domains, mosaic_spread, w) = sampling::mosaic(o.mosaic_domains, o.mosaic_spread);
    warnings.extend(w);
    if phisteps > 100_000
        || hdivsteps * vdivsteps > 1_000_000
        || dispsteps > 100_000
        || mosaic_domains > 1_000_000
    {
        return Err(Error::geometry(
            "sampling counts are unreasonably large (phi, divergence, dispersion or mosaic steps)",
        ));
    }

    // 8. interpolation switch from the raw counts (MODEL §6.4, C-QUIRK 18)
    let raw_n = [
        o.na.unwrap_or(1.0),
        o.nb.unwrap_or(1.0),
        o.nc.unwrap_or(1.0),
    ];
    let mut interpolate = match o.interpolate {
        0 => false,
        1 => true,
        _ => raw_n.iter().any(|&n| n <= 2.0),
    };

    // 9. crystal
    let mut rng = RanState::new();
    // upstream seeds the random misset from the clock unless -misset_seed is given
    let mut misset_seed = if o.misset_seed == 0 && o.misset_random {
        let seed = -clock_seconds();
        log.push(format!(
            "random misset seeded from the clock: -misset_seed {}",
            -seed
        ));
        seed
    } else {
        o.misset_seed
    };
    let mat = match &o.mat {
        Some(name) => Some(io::matfile::parse_mat(
            name,
            &files.read(name, FileKind::Matrix)?,
        )?),
        None => None,
    };
    let crystal = resolve_crystal(CrystalInput {
        cell: o.cell,
        mat,
        lambda0,
        misset: o.misset,
        misset_random: o.misset_random,
        misset_seed: &mut misset_seed,
        rng: &mut rng,
    })?;
    warnings.extend(crystal.warnings.iter().cloned());
    if let Some(m) = crystal.random_misset {
        log.push(format!(
            "random orientation misset angles: {:.6} {:.6} {:.6} deg",
            m[0], m[1], m[2]
        ));
    }

    // 10. sizes -> counts; oversample
    let (la, lb, lc) = (mag(crystal.a0), mag(crystal.b0), mag(crystal.c0));
    let mut n = raw_n;
    if o.sample_x > 0.0 {
        n[0] = (o.sample_x / la).ceil();
    }
    if o.sample_y > 0.0 {
        n[1] = (o.sample_y / lb).ceil();
    }
    if o.sample_z > 0.0 {
        n[2] = (o.sample_z / lc).ceil();
    }
    for v in n.iter_mut() {
        if *v <= 1.0 {
            *v = 1.0;
        }
    }
    let xtalsize_max = (la * n[0]).max(lb * n[1]).max(lc * n[2]);
    let reciprocal_pixel = lambda0 * det.distance / det.pixel;
    let mut recommended = (3.0 * xtalsize_max / reciprocal_pixel).ceil() as i64;
    if recommended <= 0 {
        recommended = 1;
    }
    let oversample = if o.oversample <= 0 {
        log.push(format!("auto-selected {recommended}-fold oversampling"));
        recommended
    } else {
        o.oversample
    };
    if oversample < recommended {
        warnings.push(format!(
            "WARNING: oversampling of {oversample} is less than the recommended {recommended}"
        ));
    }
    if oversample > 1000 {
        return Err(Error::geometry(format!(
            "-oversample {oversample} is unreasonably large"
        )));
    }

    // 11. structure factors
    let mut hkl = HklGrid::default();
    let hkl_source;
    if let Some(name) = &o.hkl {
        hkl = io::hkl::parse_hkl(name, &files.read(name, FileKind::Hkl)?, o.default_f)?;
        hkl_source = format!("{} ({} reflections)", name, hkl.hkls);
    } else if hkl_dump_exists {
        hkl = io::hkl::read_fdump(&o.dump, &files.read(&o.dump, FileKind::Fdump)?)?;
        hkl_source = format!("{} (cached structure factors, no -hkl given)", o.dump);
        warnings.push(format!(
            "reading structure factors from {} because no -hkl was given",
            o.dump
        ));
    } else {
        hkl_source = format!("default_F = {}", o.default_f);
    }
    if hkl.hkls == 0 {
        interpolate = false;
    }

    // 12. sources
    let mut sources = Vec::new();
    if let Some(name) = &o.sourcefile {
        let rows = io::textcols::read_columns(name, &files.read(name, FileKind::Sources)?, 5)?;
        if rows.is_empty() {
            return Err(Error::input(format!("{name}: no sources found")));
        }
        for r in rows {
            let pick = |i: usize, d: f64| {
                if r.get(i).is_none_or(|x| x.is_nan()) {
                    d
                } else {
                    r[i]
                }
            };
            let pos = [
                pick(0, -10.0 * det.beam[0]),
                pick(1, -10.0 * det.beam[1]),
                pick(2, -10.0 * det.beam[2]),
            ];
            let lambda = pick(4, lambda0);
            if !(lambda > 0.0) {
                return Err(Error::input(format!(
                    "{name}: source wavelength must be positive (metres), got {lambda}"
                )));
            }
            if mag(pos) == 0.0 {
                return Err(Error::input(format!(
                    "{name}: a source position is at the sample (0 0 0)"
                )));
            }
            sources.push((pos, lambda));
        }
    } else {
        let source_distance = 10.0;
        for ih in 0..hdivsteps {
            for iv in 0..vdivsteps {
                let hdiv = hdivstep * ih as f64 - hdivrange / 2.0;
                let vdiv = vdivstep * iv as f64 - vdivrange / 2.0;
                let test = (hdiv * hdiv
                    - ((hdivstep * hdivstep) / 4.0) * (1 - hdivsteps % 2) as f64)
                    / hdivrange
                    / hdivrange
                    + (vdiv * vdiv - ((vdivstep * vdivstep) / 4.0) * (1 - vdivsteps % 2) as f64)
                        / vdivrange
                        / vdivrange;
                if o.round_div && test * 4.0 > 1.1 {
                    continue;
                }
                let mut v = [
                    -source_distance * det.beam[0],
                    -source_distance * det.beam[1],
                    -source_distance * det.beam[2],
                ];
                v = rotaxis(v, det.polar_axis, vdiv);
                v = rotaxis(v, det.vert, hdiv);
                for id in 0..dispsteps {
                    let lambda = lambda0 * (1.0 + dispstep * id as f64 - dispersion / 2.0);
                    sources.push((v, lambda));
                }
            }
        }
    }
    let plan_sources: Vec<Source> = sources
        .iter()
        .map(|(pos, lambda)| {
            let d = unit(*pos);
            Source {
                incident: [-d[0], -d[1], -d[2]],
                lambda: *lambda,
            }
        })
        .collect();

    // 13. mosaic domains, orientation tables
    let mut mosaic_seed = o.mosaic_seed;
    let mut umats: Vec<M3> = Vec::with_capacity(mosaic_domains as usize);
    for m in 0..mosaic_domains {
        let u = mosaic_rotation_umat(&mut rng, mosaic_spread as f32, &mut mosaic_seed);
        umats.push(if m == 0 { IDENTITY } else { u });
    }
    let phis: Vec<f64> = (0..phisteps).map(|j| phi0 + phistep * j as f64).collect();
    let rotate = |phi: f64| {
        [
            rotaxis(crystal.a0, det.spindle, phi),
            rotaxis(crystal.b0, det.spindle, phi),
            rotaxis(crystal.c0, det.spindle, phi),
        ]
    };
    let unrotated = [crystal.a0, crystal.b0, crystal.c0];
    // steady state: a zero phi reuses the nearest preceding non-zero phi, cyclically
    let last_nonzero = phis.iter().rev().find(|&&p| p != 0.0).copied();
    let table = |first: bool| -> Vec<Orientation> {
        let mut prev = if first {
            unrotated
        } else {
            last_nonzero.map_or(unrotated, rotate)
        };
        let mut out = Vec::with_capacity(phis.len() * umats.len());
        for &phi in &phis {
            if phi != 0.0 {
                prev = rotate(phi);
            }
            for u in &umats {
                let abc = if mosaic_spread > 0.0 {
                    [
                        rotumat(prev[0], u),
                        rotumat(prev[1], u),
                        rotumat(prev[2], u),
                    ]
                } else {
                    prev
                };
                out.push(Orientation {
                    a: abc[0],
                    b: abc[1],
                    c: abc[2],
                });
            }
        }
        out
    };
    let orientations = table(false);
    let orientations_first = table(true);

    let steps = plan_sources.len() as u64
        * mosaic_domains as u64
        * phisteps as u64
        * (oversample * oversample) as u64;
    let f_bg = 2.57;
    let i_bg =
        f_bg * f_bg * R_E_SQR * fluence * o.water * o.water * o.water * 1e6 * AVOGADRO / 18.0;

    // ROI (negative values revert to defaults) and mask
    let (fp, sp) = (det.fpixels as i64, det.spixels as i64);
    let r = o.roi.unwrap_or([-1; 4]);
    let pick = |v: i64, d: i64| if v < 0 { d } else { v };
    let roi = Roi {
        xmin: pick(r[0], 0) as usize,
        xmax: pick(r[1], fp) as usize,
        ymin: pick(r[2], 0) as usize,
        ymax: pick(r[3], sp) as usize,
    };
    let mask = match mask_file {
        Some((name, smv)) => {
            let (mf, ms) = (
                io::smv::value_of(&smv.header_text, "SIZE1").unwrap_or(0.0) as usize,
                io::smv::value_of(&smv.header_text, "SIZE2").unwrap_or(0.0) as usize,
            );
            if mf != det.fpixels || ms != det.spixels || smv.data.len() < det.fpixels * det.spixels
            {
                return Err(Error::input(format!(
                    "-mask {name}: mask is {mf}x{ms} pixels but the detector is {}x{}",
                    det.fpixels, det.spixels
                )));
            }
            Some(
                smv.data[..det.fpixels * det.spixels]
                    .iter()
                    .map(|&v| (v != 0) as u8)
                    .collect(),
            )
        }
        None => None,
    };

    let noise_seed = o.seed.unwrap_or_else(|| -clock_seconds());

    let plan = Plan {
        fpixels: det.fpixels,
        spixels: det.spixels,
        pixel: det.pixel,
        oversample: oversample as u32,
        pix0: det.pix0,
        fdet: det.fdet,
        sdet: det.sdet,
        odet: det.odet,
        beam: det.beam,
        close_distance: det.close_distance,
        distance: det.distance,
        curved: o.curved_det,
        point_pixel: o.point_pixel,
        thicksteps: thicksteps as u32,
        thickstep,
        thick,
        mu,
        roi,
        mask,
        sources: plan_sources,
        polar_k: o.polar,
        polar_axis: det.polar_axis,
        nopolar: o.nopolar,
        dmin: o.dmin,
        phisteps: phisteps as u32,
        mosaic_domains: mosaic_domains as u32,
        orientations,
        orientations_first,
        na: n[0],
        nb: n[1],
        nc: n[2],
        shape: o.shape,
        fudge: o.fudge,
        a_star: crystal.a_star,
        b_star: crystal.b_star,
        c_star: crystal.c_star,
        hkl,
        default_f: o.default_f,
        interpolation: if interpolate {
            Interpolation::Tricubic
        } else {
            Interpolation::Nearest
        },
        oversample_thick: o.oversample_thick,
        oversample_polar: o.oversample_polar,
        oversample_omega: o.oversample_omega,
        steps,
        r_e_sqr_fluence: R_E_SQR * fluence,
        i_bg,
        water: o.water != 0.0,
    };

    log.push(format!("{} sources", plan.sources.len()));
    log.push(format!(
        "{} mosaic domains over mosaic spread of {} degrees",
        mosaic_domains,
        crate::cfmt::fmt_g(mosaic_spread * RTD)
    ));
    log.push(format!(
        "{} phi steps from {} to {} degrees",
        phisteps,
        crate::cfmt::fmt_g(phi0 * RTD),
        crate::cfmt::fmt_g((phi0 + phistep * (phisteps - 1) as f64) * RTD)
    ));
    log.push(format!("{oversample}x{oversample} pixel oversample steps"));

    Ok(Setup {
        opts: o,
        det,
        crystal,
        plan,
        lambda0,
        phi0,
        osc,
        phistep,
        mosaic_spread,
        fluence,
        recommended_oversample: recommended,
        noise_seed,
        hkl_source,
        log,
        warnings,
    })
}

/// Seconds since the epoch: upstream's default noise and misset seed. The browser has no std
/// clock (the wasm bindings pass `-seed` from JavaScript's clock instead); there this is 1.
pub(crate) fn clock_seconds() -> i64 {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        1
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(1)
    }
}
