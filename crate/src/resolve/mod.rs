//! Options -> Setup: the whole host-side resolution in upstream's order (MODEL §0), ending in
//! the flat `Plan` the kernels read. Everything here is f64 and runs once per render.
//!
//! Each step is a function of its inputs in its own module; [`resolve`] only calls them in order
//! and assembles the [`Setup`]:
//!
//! 1. `header`: `-mask`, then `-img` headers as starting values;
//! 2. `beam`: wavelength, fluence, crystal size clipped to the beam;
//! 3. `detector::resolve_detector`: size, convention, placement;
//! 4. `structure::check_required`: a crystal and structure factors (upstream's usage exit);
//! 5. `sampling::resolve_sampling`: phi, divergence, dispersion, layers, mosaic counts;
//! 6. `lattice`: the crystal (cell, matrix, misset), cell counts, oversampling;
//! 7. `structure`: structure factors and interpolation (a `-pdb` model's table is computed once
//!    the plan exists, for the detector's reach: `structure::model_table`);
//! 8. `sources`: from the file or the divergence × dispersion grid;
//! 9. `orientations`: mosaic domains × phi, stale-phi tables;
//! 10. `pixels`: ROI and mask;
//! 11. `scaling`: steps, r_e² fluence, water background.
//!
//! Counts and their products are checked against `limits` before anything is allocated.

pub mod beam;
pub mod crystal;
pub mod detector;
pub mod expt;
pub mod fitted;
pub mod header;
pub mod lattice;
pub mod orientations;
pub mod panels;
pub mod pixels;
pub mod sampling;
pub mod scaling;
pub mod sources;
pub mod structure;
pub mod tangent;

use crate::args::{Options, RTD};
use crate::error::{Error, Result};
use crate::files::{FileKind, FileSource};
use crate::io;
use crate::plan::{Interpolation, Plan};
use crate::resolve::crystal::Crystal;
use crate::resolve::detector::{resolve_detector, Detector};
use crate::resolve::sampling::resolve_sampling;
use crate::rng::RanState;

pub use scaling::{AVOGADRO, R_E_SQR};

/// Everything resolved: the plan plus what the outputs, headers and logs need.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The options as parsed (not modified by the resolution).
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

pub fn resolve(opts: &Options, files: &dyn FileSource) -> Result<Setup> {
    // -expt: the DIALS file's geometry and crystal replace the flags' (io/expt.rs)
    // -geom: a CrystFEL file's panels replace the detector (and -expt's panels)
    let mut with_expt = None;
    let mut file_panels: Option<(String, Vec<panels::PanelSpec>)> = None;
    let mut geom = None;
    if let Some(name) = &opts.expt {
        let bytes = files
            .read(name, crate::files::FileKind::Experiment)
            .map_err(|e| e.with_flag("-expt").at_file(name.as_str()))?;
        let e = crate::io::expt::parse_expt(name, &bytes).map_err(|e| e.with_flag("-expt"))?;
        let (mut o, mat) = expt::apply(opts, &e, name)?;
        o.mat_values = mat.or(o.mat_values);
        if e.panels.len() > 1 {
            file_panels = Some((name.clone(), panels::from_expt(&e)));
        }
        with_expt = Some(o);
    }
    if let Some(name) = &opts.geom {
        let bytes = files
            .read(name, crate::files::FileKind::Geometry)
            .map_err(|e| e.with_flag("-geom").at_file(name.as_str()))?;
        let g = crate::io::geom::parse_geom(name, &bytes).map_err(|e| e.with_flag("-geom"))?;
        let o = with_expt.get_or_insert_with(|| opts.clone());
        if let Some(wl) = g.wavelength {
            o.lambda = Some(wl * 1e-10);
        }
        if !g.ignored.is_empty() {
            o.warnings.push(format!(
                "WARNING: -geom {name}: without effect on the simulation: {}",
                g.ignored.join(", ")
            ));
        }
        file_panels = Some((name.clone(), panels::from_geom(&g)));
        geom = Some(g);
    }
    if let (Some(o), Some((name, specs))) = (with_expt.as_mut(), &file_panels) {
        if o.curved_det {
            return Err(Error::geometry(format!(
                "{name}: a detector of several flat panels cannot also be curved (-curved_det)"
            ))
            .with_flag("-curved_det"));
        }
        panels::place_options(o, specs);
    }
    let o = with_expt.as_ref().unwrap_or(opts);
    let mut log = Vec::new();
    let mut warnings = o.warnings.clone();

    let headers = header::read_headers(o, files)?;
    let hv = &headers.values;
    warnings.extend(hv.warnings.iter().cloned());
    let beam = beam::resolve_beam(o, hv.lambda)?;
    let lambda0 = beam.lambda0;
    let phi0 = o.phi0.or(hv.phi0).unwrap_or(0.0);
    warnings.extend(beam.warnings.iter().cloned());

    let det = resolve_detector(o, &hv.det)?;
    warnings.extend(det.warnings.iter().cloned());

    let sf_origin = structure::origin(o, files);
    structure::check_required(o, &sf_origin)?;

    let smp = resolve_sampling(o, hv.osc)?;
    warnings.extend(smp.warnings.iter().cloned());

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
    let mut rng = RanState::new();
    let model = structure::read_model(&sf_origin, files)?;
    let crystal = lattice::crystal(
        o,
        structure::model_cell(o, model.as_ref()),
        files,
        lambda0,
        &mut misset_seed,
        &mut rng,
    )?;
    warnings.extend(crystal.warnings.iter().cloned());
    if let Some(m) = crystal.random_misset {
        log.push(format!(
            "random orientation misset angles: {:.6} {:.6} {:.6} deg",
            m[0], m[1], m[2]
        ));
    }
    let raw_n = lattice::raw_counts(o);
    warnings.extend(lattice::count_warnings(o, beam.sample));
    let n = lattice::cell_counts(raw_n, beam.sample, &crystal)?;
    let over = lattice::oversample(o.oversample, n, &crystal, lambda0, &det)?;
    log.extend(over.log.clone());
    warnings.extend(over.warning.clone());

    let sf = structure::structure_factors(o, files, &sf_origin)?;
    warnings.extend(sf.warnings);
    let interpolate = structure::interpolate(o.interpolate, raw_n, &sf.hkl);

    let plan_sources = source_list(o, files, &smp, &det, lambda0)?;

    let umats = orientations::mosaic_umats(
        &mut rng,
        smp.mosaic_spread,
        smp.mosaic_domains,
        o.mosaic_seed,
    );
    let phis = orientations::phi_values(phi0, smp.phistep, smp.phisteps);
    let (table, table_first) = orientations::tables(
        [crystal.a0, crystal.b0, crystal.c0],
        det.spindle,
        &phis,
        &umats,
        smp.mosaic_spread,
    );

    let steps = scaling::steps(
        plan_sources.len(),
        smp.mosaic_domains,
        smp.phisteps,
        over.value,
        smp.thicksteps,
    )?;

    let (roi, mask) = selection(o, &headers, &det)?;

    let noise_seed = o.seed.unwrap_or_else(|| -clock_seconds());

    let mut plan = Plan {
        phisteps: smp.phisteps as u32,
        mosaic_domains: smp.mosaic_domains as u32,
        orientations: table,
        orientations_first: table_first,
        na: n[0],
        nb: n[1],
        nc: n[2],
        a_star: crystal.a_star,
        b_star: crystal.b_star,
        c_star: crystal.c_star,
        hkl: sf.hkl,
        interpolation: if interpolate {
            Interpolation::Tricubic
        } else {
            Interpolation::Nearest
        },
        ..frame_plan(
            o,
            &det,
            &smp,
            over.value,
            (roi, mask),
            plan_sources,
            steps,
            beam.fluence,
        )
    };
    if let Some((name, specs)) = &file_panels {
        plan.panels = panels::from_specs(name, specs, plan.thick, plan.mu)?;
        let p0 = &plan.panels[0];
        (plan.pix0, plan.fdet, plan.sdet, plan.odet) = (p0.pix0, p0.fdet, p0.sdet, p0.odet);
        plan.close_distance = p0.close_distance;
        if let Some(m) = geom
            .as_ref()
            .and_then(|g| g.mask(plan.fpixels, plan.spixels))
        {
            plan.mask = Some(match plan.mask.take() {
                Some(old) => old.iter().zip(&m).map(|(a, b)| a & b).collect(),
                None => m,
            });
        }
        panels::mask_gaps(&mut plan);
        log.push(format!(
            "detector of {} panels from {name}, stored as {}x{} pixels",
            plan.panels.len(),
            plan.fpixels,
            plan.spixels
        ));
        pixels::check_selection(&plan.roi, plan.mask.as_deref(), plan.fpixels, plan.spixels)?;
    }
    let mut hkl_source = sf.description;
    if let (Some(model), structure::Origin::Model(name)) = (&model, &sf_origin) {
        let (table, description) =
            structure::model_table(name, model, &plan, &crystal, o, &mut log, &mut warnings)?;
        structure::install_table(&mut plan, o, table);
        hkl_source = description;
    }
    check_finite(&plan)?;

    log.push(format!("{} sources", plan.sources.len()));
    log.push(format!(
        "{} mosaic domains over mosaic spread of {} degrees",
        smp.mosaic_domains,
        crate::cfmt::fmt_g(smp.mosaic_spread * RTD)
    ));
    log.push(format!(
        "{} phi steps from {} to {} degrees",
        smp.phisteps,
        crate::cfmt::fmt_g(phi0 * RTD),
        crate::cfmt::fmt_g((phi0 + smp.phistep * (smp.phisteps - 1) as f64) * RTD)
    ));
    log.push(format!("{0}x{0} pixel oversample steps", over.value));

    let mut setup = Setup {
        opts: o.clone(),
        det,
        crystal,
        plan,
        lambda0,
        phi0,
        osc: smp.osc,
        phistep: smp.phistep,
        mosaic_spread: smp.mosaic_spread,
        fluence: beam.fluence,
        recommended_oversample: over.recommended,
        noise_seed,
        hkl_source,
        log,
        warnings,
    };
    pixels::apply_preset_mask(&mut setup);
    Ok(setup)
}

/// The detector and the beam alone, for a sample without a lattice (nonbragg's amorphous one):
/// the headers, beam, detector, sampling, sources and pixel selection of [`resolve`], no crystal
/// and no structure factors. The plan has no orientations, one cell and an empty HKL grid; the
/// setup's crystal is empty. One sub-pixel unless `-oversample` is given (nothing to
/// auto-select it from). A `-detector` preset's module gaps join the mask, as in [`resolve`].
pub fn detector_and_beam(o: &Options, files: &dyn FileSource) -> Result<Setup> {
    let mut warnings = o.warnings.clone();
    let headers = header::read_headers(o, files)?;
    let hv = &headers.values;
    warnings.extend(hv.warnings.iter().cloned());
    let beam = beam::resolve_beam(o, hv.lambda)?;
    warnings.extend(beam.warnings.iter().cloned());
    let det = resolve_detector(o, &hv.det)?;
    warnings.extend(det.warnings.iter().cloned());
    let smp = resolve_sampling(o, hv.osc)?;
    warnings.extend(smp.warnings.iter().cloned());
    let oversample = o.oversample.max(1);
    let plan_sources = source_list(o, files, &smp, &det, beam.lambda0)?;
    let steps = scaling::steps(
        plan_sources.len(),
        smp.mosaic_domains,
        smp.phisteps,
        oversample,
        smp.thicksteps,
    )?;
    let selected = selection(o, &headers, &det)?;
    let plan = frame_plan(
        o,
        &det,
        &smp,
        oversample,
        selected,
        plan_sources,
        steps,
        beam.fluence,
    );
    check_finite(&plan)?;
    let mut setup = Setup {
        opts: o.clone(),
        det,
        crystal: Crystal::default(),
        plan,
        lambda0: beam.lambda0,
        phi0: o.phi0.or(hv.phi0).unwrap_or(0.0),
        osc: smp.osc,
        phistep: smp.phistep,
        mosaic_spread: smp.mosaic_spread,
        fluence: beam.fluence,
        recommended_oversample: oversample,
        noise_seed: o.seed.unwrap_or_else(|| -clock_seconds()),
        hkl_source: String::new(),
        log: Vec::new(),
        warnings,
    };
    pixels::apply_preset_mask(&mut setup);
    Ok(setup)
}

/// Sources from `-sourcefile` or the divergence × dispersion grid (step 8); an empty grid is an
/// error.
fn source_list(
    o: &Options,
    files: &dyn FileSource,
    smp: &sampling::Sampling,
    det: &Detector,
    lambda0: f64,
) -> Result<Vec<crate::plan::Source>> {
    let source_list = match &o.sourcefile {
        Some(name) => {
            let located =
                |e: crate::error::Error| e.with_flag("-sourcefile").at_file(name.as_str());
            let rows = files
                .read(name, FileKind::Sources)
                .and_then(|text| io::textcols::read_columns(name, &text, 5))
                .map_err(located)?;
            sources::from_file(name, &rows, det.beam, lambda0).map_err(located)?
        }
        None => sources::divergence_grid(smp, o.round_div, det, lambda0),
    };
    if source_list.is_empty() {
        // upstream divides by zero steps and renders NaN
        return Err(Error::geometry(format!(
            "the divergence grid keeps no source: {} × {} points over {} × {} mrad, all outside the \
             round trim (-round_div); give -divergence (or -hdivrange/-vdivrange), more steps, or \
             -square_div",
            smp.hdivsteps,
            smp.vdivsteps,
            crate::cfmt::fmt_g(smp.hdivrange * 1000.0),
            crate::cfmt::fmt_g(smp.vdivrange * 1000.0)
        )));
    }
    Ok(sources::to_plan(&source_list))
}

/// The ROI and the `-mask` file's mask (step 10); an empty selection is an error.
fn selection(
    o: &Options,
    headers: &header::Headers,
    det: &Detector,
) -> Result<(crate::plan::Roi, Option<Vec<u8>>)> {
    let roi = pixels::roi(o.roi, det.fpixels, det.spixels);
    let mask = match &headers.mask {
        Some((name, smv)) => Some(pixels::mask(name, smv, det.fpixels, det.spixels)?),
        None => None,
    };
    pixels::check_selection(&roi, mask.as_deref(), det.fpixels, det.spixels)?;
    Ok((roi, mask))
}

/// The plan's detector, beam, sources, sampling and scaling (the crystal's parts neutral: no
/// orientations, one cell, no HKL grid); [`resolve`] fills in the crystal.
#[allow(clippy::too_many_arguments)]
fn frame_plan(
    o: &Options,
    det: &Detector,
    smp: &sampling::Sampling,
    oversample: i64,
    (roi, mask): (crate::plan::Roi, Option<Vec<u8>>),
    sources: Vec<crate::plan::Source>,
    steps: u64,
    fluence: f64,
) -> Plan {
    Plan {
        panels: vec![panels::single(det, smp.thick, smp.mu)],
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
        thicksteps: smp.thicksteps as u32,
        thickstep: smp.thickstep,
        thick: smp.thick,
        mu: smp.mu,
        roi,
        mask,
        sources,
        polar_k: o.polar,
        polar_axis: det.polar_axis,
        nopolar: o.nopolar,
        dmin: o.dmin,
        phisteps: smp.phisteps as u32,
        mosaic_domains: smp.mosaic_domains as u32,
        orientations: Vec::new(),
        orientations_first: Vec::new(),
        na: 1.0,
        nb: 1.0,
        nc: 1.0,
        shape: o.shape,
        fudge: o.fudge,
        a_star: [0.0; 3],
        b_star: [0.0; 3],
        c_star: [0.0; 3],
        hkl: Default::default(),
        default_f: o.default_f,
        interpolation: Interpolation::Nearest,
        oversample_thick: o.oversample_thick,
        oversample_polar: o.oversample_polar,
        oversample_omega: o.oversample_omega,
        steps,
        r_e_sqr_fluence: R_E_SQR * fluence,
        i_bg: scaling::water_background(fluence, o.water),
        water: o.water != 0.0,
    }
}

/// The last guard before the kernels: every number of the plan they read is finite (the steps
/// above reject what makes them otherwise; this names the quantity if one slipped through).
fn check_finite(p: &Plan) -> Result<()> {
    let scalars = [
        ("pixel size", p.pixel),
        ("distance", p.distance),
        ("close distance", p.close_distance),
        ("sensor thickness", p.thick),
        ("sensor layer step", p.thickstep),
        ("attenuation", p.mu),
        ("polarisation factor", p.polar_k),
        ("resolution cut", p.dmin),
        ("cell counts", p.na + p.nb + p.nc),
        ("shape fudge factor", p.fudge),
        ("default structure factor", p.default_f),
        ("fluence", p.r_e_sqr_fluence),
        ("water background", p.i_bg),
    ];
    let vectors = [
        ("pix0", p.pix0),
        ("fast axis", p.fdet),
        ("slow axis", p.sdet),
        ("detector normal", p.odet),
        ("beam", p.beam),
        ("polarisation axis", p.polar_axis),
        ("a*", p.a_star),
        ("b*", p.b_star),
        ("c*", p.c_star),
    ];
    let bad = scalars
        .iter()
        .find(|(_, v)| !v.is_finite())
        .map(|(n, _)| *n)
        .or_else(|| {
            vectors
                .iter()
                .find(|(_, v)| !v.iter().all(|x| x.is_finite()))
                .map(|(n, _)| *n)
        })
        .or_else(|| {
            p.sources
                .iter()
                .any(|s| !s.lambda.is_finite() || !s.incident.iter().all(|x| x.is_finite()))
                .then_some("sources")
        })
        .or_else(|| {
            p.orientations
                .iter()
                .chain(&p.orientations_first)
                .any(|o| ![o.a, o.b, o.c].iter().flatten().all(|x| x.is_finite()))
                .then_some("crystal orientations")
        });
    match bad {
        Some(what) => Err(Error::geometry(format!(
            "the resolved {what} is not finite: check the flags that set it"
        ))),
        None => Ok(()),
    }
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
