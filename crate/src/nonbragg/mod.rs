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
    let mut out = render_shared(&[setup], progress, cancel)?;
    Ok(out.pop().expect("one material"))
}

/// Whether two set-ups see the same pixels from the same sources: the same detector frame
/// (pixels, panels, ROI, mask), sub-pixel grid, sources and their weights, and polarisation;
/// then [`render_shared`] renders them in one pass.
pub fn same_frame(a: &Setup, b: &Setup) -> bool {
    let (p, q) = (a.plan(), b.plan());
    let weights = |s: &Setup| s.sources.iter().map(|r| r.weight).collect::<Vec<_>>();
    p.fpixels == q.fpixels
        && p.spixels == q.spixels
        && p.pixel == q.pixel
        && p.oversample == q.oversample
        && p.point_pixel == q.point_pixel
        && p.curved == q.curved
        && p.close_distance == q.close_distance
        && p.distance == q.distance
        && p.beam == q.beam
        && p.nopolar == q.nopolar
        && p.polar_k == q.polar_k
        && p.polar_axis == q.polar_axis
        && p.roi == q.roi
        && p.mask == q.mask
        && p.panels == q.panels
        && p.sources.len() == q.sources.len()
        && p.sources
            .iter()
            .zip(&q.sources)
            .all(|(s, t)| s.incident == t.incident && s.lambda == t.lambda)
        && weights(a) == weights(b)
}

/// [`render`] of several materials on one frame ([`same_frame`]: the page's water and air on
/// the spots' detector) in one pass over the pixels: each pixel's positions, solid angles,
/// sin(θ)/λ and polarisation are computed once and each material's table interpolated there,
/// every material's sum in [`render`]'s order (each image is the one `render` gives, to the
/// bit). Set-ups of different frames are rendered one after the other. `progress` gets the
/// fraction done over all of them.
pub fn render_shared(
    setups: &[&Setup],
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<(Vec<f32>, f64)>> {
    render_with(setups, true, progress, cancel)
}

/// [`render_shared`]; `lanes` false: every pixel alone ([`pixel`]), the reference the lanes
/// are tested against.
fn render_with(
    setups: &[&Setup],
    lanes: bool,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<Vec<(Vec<f32>, f64)>> {
    let Some(first) = setups.first() else {
        return Ok(Vec::new());
    };
    if !setups.iter().all(|s| same_frame(first, s)) {
        let n = setups.len() as f32;
        return setups
            .iter()
            .enumerate()
            .map(|(i, s)| render(s, &|p| progress((i as f32 + p) / n), cancel))
            .collect();
    }
    let plan = first.plan();
    let (fp, sp) = (plan.fpixels, plan.spixels);
    let frames: Vec<PolarFrame> = plan
        .sources
        .iter()
        .map(|s| PolarFrame::new(s.incident, plan.polar_axis))
        .collect();
    let weights: Vec<f64> = first.sources.iter().map(|s| s.weight).collect();
    let steps = (plan.sources.len() * (plan.oversample as usize).pow(2)) as f64;
    let tables: Vec<Lookup> = setups.iter().map(|s| Lookup::new(&s.table)).collect();
    // one sub-pixel per pixel on flat panels (nonBragg's default, the page's): pixels in lanes
    let lanes = lanes && plan.oversample == 1 && !plan.curved;
    let m = setups.len();
    let done = AtomicUsize::new(0);
    let mut images: Vec<Vec<f32>> = (0..m).map(|_| vec![0f32; fp * sp]).collect();
    // rows in parallel: row s of every material's image
    let mut rows: Vec<Vec<&mut [f32]>> = (0..sp).map(|_| Vec::with_capacity(m)).collect();
    for image in images.iter_mut() {
        for (r, row) in rows.iter_mut().zip(image.chunks_mut(fp)) {
            r.push(row);
        }
    }
    let omega_rows: Vec<f64> = rows
        .into_par_iter()
        .enumerate()
        .map(|(s, mut out)| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let mut omega_sum = 0.0;
            let mut sums = vec![(0.0f64, 0.0f64); m];
            let mut lsums = vec![([0.0f64; LANES], [0.0f64; LANES]); m];
            let mut hints = vec![0usize; m];
            // the runs of pixels a panel renders (`Plan::row_segments`): the others (no panel's,
            // outside the ROI, masked) stay 0 and are not computed
            for (at, end, panel) in plan.row_segments(s) {
                if let Some(pi) = panel {
                    let panel = &plan.panels[pi];
                    let store = |out: &mut [&mut [f32]], f: usize, k: usize, v: (f64, f64)| {
                        let st = setups[k];
                        let smp = &st.sample;
                        out[k][f] = if st.opts.fmap {
                            v.1 as f32
                        } else {
                            (v.0 * R_E_SQR * smp.fluence * smp.molecules / steps) as f32
                        };
                    };
                    if lanes {
                        // LANES pixels at a time, each pixel's value as `pixel` gives it
                        let mut f0 = at;
                        while f0 < end {
                            let len = (end - f0).min(LANES);
                            let omega = pixel_lanes(
                                plan, panel, &tables, &frames, &weights, f0, s, &mut lsums,
                                &mut hints,
                            );
                            for l in 0..len {
                                let f = f0 + l;
                                omega_sum += omega[l];
                                for (k, sum) in lsums.iter().enumerate() {
                                    store(&mut out, f, k, (sum.0[l], sum.1[l]));
                                }
                            }
                            f0 += len;
                        }
                    } else {
                        for f in at..end {
                            omega_sum += pixel(
                                plan, panel, &tables, &frames, &weights, f, s, &mut sums,
                                &mut hints,
                            );
                            for (k, &v) in sums.iter().enumerate() {
                                store(&mut out, f, k, v);
                            }
                        }
                    }
                }
            }
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            if d.is_multiple_of(16) {
                progress(d as f32 / sp as f32);
            }
            Ok(omega_sum)
        })
        .collect::<Result<_>>()?;
    progress(1.0);
    let omega: f64 = omega_rows.iter().sum();
    images
        .into_iter()
        .map(|image| {
            // an image with a NaN or infinite pixel is an error, never an output (as nanobragg's)
            crate::api::check_image_with(
                plan,
                &image,
                "-fluence/-flux, -molecules/-samplesize, -scale or the table's F",
            )?;
            Ok((image, omega))
        })
        .collect()
}

/// A `.stol` table's interpolation as [`StolTable::interpolate`] computes it, to the bit, with
/// each interval's Lagrange denominators computed once and the interval found from the last
/// one's (neighbouring pixels have neighbouring sin(θ)/λ) instead of a search of the table.
struct Lookup<'a> {
    t: &'a StolTable,
    /// Per interval start n (1 ..= len − 3): the four denominators of `terms::polint` through
    /// points n − 1 .. n + 2, in its association order.
    den: Vec<[f64; 4]>,
}

impl<'a> Lookup<'a> {
    fn new(t: &'a StolTable) -> Self {
        let x = &t.stol;
        let den = (0..x.len())
            .map(|n| {
                if n < 1 || n + 2 >= x.len() {
                    return [f64::NAN; 4];
                }
                let [x0, x1, x2, x3] = [x[n - 1], x[n], x[n + 1], x[n + 2]];
                [
                    ((x0 - x1) * (x0 - x2)) * (x0 - x3),
                    ((x1 - x0) * (x1 - x2)) * (x1 - x3),
                    ((x2 - x0) * (x2 - x1)) * (x2 - x3),
                    ((x3 - x0) * (x3 - x1)) * (x3 - x2),
                ]
            })
            .collect();
        Lookup { t, den }
    }

    /// The first of the four nodes whose cubic interpolates at `x` (finite, clamped to the
    /// table's inner nodes; at least four nodes), from the number of nodes ≤ x
    /// (`partition_point(|t| t <= x)`): found from `hint` (the previous call's, 0: none) when
    /// it is a few nodes off, else by bisection; `hint` is updated.
    #[inline(always)]
    fn interval(&self, x: f64, hint: &mut usize) -> usize {
        let s = &self.t.stol;
        let len = s.len();
        let mut p = (*hint).clamp(1, len - 1);
        let mut walk = 0;
        while walk < 8 && s[p - 1] > x {
            p -= 1;
            walk += 1;
            if p == 0 {
                break;
            }
        }
        while walk < 8 && p < len && s[p] <= x {
            p += 1;
            walk += 1;
        }
        let exact = (p == 0 || s[p - 1] <= x) && (p == len || s[p] > x);
        if !exact {
            p = s.partition_point(|&t| t <= x);
        }
        *hint = p;
        p.saturating_sub(1).clamp(1, len - 3)
    }

    /// `StolTable::interpolate(x)`; `hint` is the previous call's `partition_point` (0: none).
    #[inline(always)]
    fn interpolate(&self, x: f64, hint: &mut usize) -> f64 {
        let s = &self.t.stol;
        let len = s.len();
        if !x.is_finite() || len < 4 {
            return self.t.interpolate(x);
        }
        let x = x.clamp(s[1], s[len - 2]);
        let n = self.interval(x, hint);
        let xa = [s[n - 1], s[n], s[n + 1], s[n + 2]];
        let f = &self.t.f;
        let ya = [f[n - 1], f[n], f[n + 1], f[n + 2]];
        let [x0, x1, x2, x3] = xa;
        let d = self.den[n];
        // `terms::polint` with its denominators precomputed (the same values)
        let cubic = (((x - x1) * (x - x2)) * (x - x3)) * ya[0] / d[0]
            + (((x - x0) * (x - x2)) * (x - x3)) * ya[1] / d[1]
            + (((x - x0) * (x - x1)) * (x - x3)) * ya[2] / d[2]
            + (((x - x0) * (x - x1)) * (x - x2)) * ya[3] / d[3];
        if cubic.is_finite() {
            return cubic;
        }
        let t = ((x - xa[1]) / (xa[2] - xa[1])).clamp(0.0, 1.0);
        ya[1] + (ya[2] - ya[1]) * t
    }
}

/// Pixels side by side in [`pixel_lanes`].
const LANES: usize = 8;

impl Lookup<'_> {
    /// [`Lookup::interpolate`] of `LANES` values (the hint walked through them in order): the
    /// interval of each found one after the other, the cubic through its points computed in
    /// lanes with the same operations in the same order (the same bits).
    #[inline(always)]
    fn interpolate_lanes(&self, x: &[f64; LANES], hint: &mut usize) -> [f64; LANES] {
        let s = &self.t.stol;
        let len = s.len();
        let f = &self.t.f;
        let (mut xc, mut special) = ([0f64; LANES], [false; LANES]);
        let (mut xa, mut ya, mut d) = ([[0f64; LANES]; 4], [[0f64; LANES]; 4], [[1f64; LANES]; 4]);
        for l in 0..LANES {
            if !x[l].is_finite() || len < 4 {
                special[l] = true;
                continue;
            }
            let x = x[l].clamp(s[1], s[len - 2]);
            xc[l] = x;
            let n = self.interval(x, hint);
            for j in 0..4 {
                xa[j][l] = s[n - 1 + j];
                ya[j][l] = f[n - 1 + j];
                d[j][l] = self.den[n][j];
            }
        }
        let mut out = [0f64; LANES];
        for l in 0..LANES {
            let x = xc[l];
            let [x0, x1, x2, x3] = [xa[0][l], xa[1][l], xa[2][l], xa[3][l]];
            let cubic = (((x - x1) * (x - x2)) * (x - x3)) * ya[0][l] / d[0][l]
                + (((x - x0) * (x - x2)) * (x - x3)) * ya[1][l] / d[1][l]
                + (((x - x0) * (x - x1)) * (x - x3)) * ya[2][l] / d[2][l]
                + (((x - x0) * (x - x1)) * (x - x2)) * ya[3][l] / d[3][l];
            out[l] = cubic;
        }
        for l in 0..LANES {
            if special[l] {
                out[l] = self.t.interpolate(x[l]);
            } else if !out[l].is_finite() {
                let t = ((xc[l] - xa[1][l]) / (xa[2][l] - xa[1][l])).clamp(0.0, 1.0);
                out[l] = ya[1][l] + (ya[2][l] - ya[1][l]) * t;
            }
        }
        out
    }
}

/// [`pixel`] for the `LANES` pixels `f0 ..` of row `s` on a flat `panel` with one sub-pixel per
/// pixel (pixels past the panel's run are computed and not used): for each material k,
/// `sums[k]` = (Σ sign·F²·polar·omega·weight, last F) of every lane; returns their solid angles.
/// Lane by lane the same operations in the same order as [`pixel`] (its images to the bit).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pixel_lanes(
    plan: &Plan,
    panel: &crate::plan::Panel,
    tables: &[Lookup],
    frames: &[PolarFrame],
    weights: &[f64],
    f0: usize,
    s: usize,
    sums: &mut [([f64; LANES], [f64; LANES])],
    hints: &mut [usize],
) -> [f64; LANES] {
    debug_assert!(plan.oversample == 1 && !plan.curved);
    // `Plan::panel_subpixel_position` and `panel_point` (odet 0), the row's terms once
    let sub = plan.pixel / plan.oversample as f64;
    let sdet = sub * (s as f64) + sub / 2.0;
    let row: [f64; 3] = std::array::from_fn(|c| sdet * panel.sdet[c]);
    let depth: [f64; 3] = std::array::from_fn(|c| 0.0 * panel.odet[c]);
    let mut pos = [[0f64; LANES]; 3];
    for l in 0..LANES {
        let fdet = sub * ((f0 + l) as f64) + sub / 2.0;
        for c in 0..3 {
            pos[c][l] = ((fdet * panel.fdet[c] + row[c]) + depth[c]) + panel.pix0[c];
        }
    }
    // `unitize`, the solid angle. Each loop is one operation over the lanes without a branch
    // (a quotient computed and then kept or not, the point-pixel choice outside the loop):
    // loops the compiler vectorises (f64x2 on wasm32, where the loops with a branch stayed
    // scalar), the same operations lane by lane.
    let px2 = plan.pixel * plan.pixel;
    let (mut r, mut d, mut omega) = ([0f64; LANES], [[0f64; LANES]; 3], [0f64; LANES]);
    for l in 0..LANES {
        r[l] = ((pos[0][l] * pos[0][l] + pos[1][l] * pos[1][l]) + pos[2][l] * pos[2][l]).sqrt();
    }
    for c in 0..3 {
        for l in 0..LANES {
            let q = pos[c][l] / r[l];
            d[c][l] = if r[l] != 0.0 { q } else { 0.0 };
        }
    }
    if plan.point_pixel {
        for l in 0..LANES {
            omega[l] = (1.0 / r[l]) / r[l];
        }
    } else {
        for l in 0..LANES {
            omega[l] = ((px2 / r[l]) / r[l]) * plan.close_distance / r[l];
        }
    }
    // `polarization_f64`'s unit direction (d again through `unit`), as `unitize` above
    let (mut m, mut du) = ([0f64; LANES], [[0f64; LANES]; 3]);
    for l in 0..LANES {
        m[l] = ((d[0][l] * d[0][l] + d[1][l] * d[1][l]) + d[2][l] * d[2][l]).sqrt();
    }
    for c in 0..3 {
        for l in 0..LANES {
            let q = d[c][l] / m[l];
            du[c][l] = if m[l] != 0.0 { q } else { 0.0 };
        }
    }
    for sum in sums.iter_mut() {
        *sum = ([0.0; LANES], [0.0; LANES]);
    }
    let k = plan.polar_k;
    // cos 2ψ at ψ = 0 (no polarisation factor k): the value `polarization_f64` multiplies by k
    let cos_zero = (2.0f64 * 0.0).cos();
    for (si, src) in plan.sources.iter().enumerate() {
        let i = src.incident;
        let mut stol = [0f64; LANES];
        let mut polar = [1f64; LANES];
        for l in 0..LANES {
            let q = [
                (d[0][l] - i[0]) / src.lambda,
                (d[1][l] - i[1]) / src.lambda,
                (d[2][l] - i[2]) / src.lambda,
            ];
            stol[l] = 0.5 * ((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]).sqrt();
        }
        if !plan.nopolar {
            let fr = &frames[si];
            let mut cos2psi = [cos_zero; LANES];
            if k != 0.0 {
                for l in 0..LANES {
                    let u = [du[0][l], du[1][l], du[2][l]];
                    let e_out = crate::vec3::dot(u, fr.e_in);
                    let b_out = crate::vec3::dot(u, fr.b_in);
                    let psi = -b_out.atan2(e_out);
                    cos2psi[l] = (2.0 * psi).cos();
                }
            }
            for l in 0..LANES {
                let c2 = (fr.i[0] * du[0][l] + fr.i[1] * du[1][l]) + fr.i[2] * du[2][l];
                let c2sq = c2 * c2;
                let s2sq = 1.0 - c2sq;
                polar[l] = 0.5 * (1.0 + c2sq - k * cos2psi[l] * s2sq);
            }
        }
        let w = weights[si];
        for ((t, sum), hint) in tables.iter().zip(sums.iter_mut()).zip(hints.iter_mut()) {
            let fb = t.interpolate_lanes(&stol, hint);
            for l in 0..LANES {
                let sign = if fb[l] < 0.0 { -1.0 } else { 1.0 };
                sum.0[l] += ((((sign * fb[l]) * fb[l]) * polar[l]) * omega[l]) * w;
            }
            sum.1 = fb;
        }
    }
    omega
}

/// One pixel on `panel`: for each material k, `sums[k]` = (Σ sign·F²·polar·omega·weight, last
/// F); returns its summed solid angle.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn pixel(
    plan: &Plan,
    panel: &crate::plan::Panel,
    tables: &[Lookup],
    frames: &[PolarFrame],
    weights: &[f64],
    f: usize,
    s: usize,
    sums: &mut [(f64, f64)],
    hints: &mut [usize],
) -> f64 {
    let n = plan.oversample as usize;
    let px2 = plan.pixel * plan.pixel;
    let mut omega_sum = 0.0f64;
    sums.fill((0.0, 0.0));
    for subs in 0..n {
        for subf in 0..n {
            let pos = plan.panel_subpixel_position(panel, f * n + subf, s * n + subs, 0.0);
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
                let polar = if plan.nopolar {
                    1.0
                } else {
                    polarization_f64(plan.polar_k, &frames[si], d)
                };
                for ((t, sum), hint) in tables.iter().zip(sums.iter_mut()).zip(hints.iter_mut()) {
                    let fb = t.interpolate(stol, hint);
                    // negative F gives a negative intensity, as upstream allows
                    let sign = if fb < 0.0 { -1.0 } else { 1.0 };
                    sum.0 += ((((sign * fb) * fb) * polar) * omega) * weights[si];
                    sum.1 = fb;
                }
            }
        }
    }
    omega_sum
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

    /// [`water`] and the bundled air table (`air.stol`).
    fn water_and_air() -> MemFiles {
        let mut m = water();
        m.0.insert(
            "air.stol".into(),
            crate::realistic::bundled_stol("air.stol").unwrap().to_vec(),
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

    #[test]
    fn lookup_interpolates_as_the_table_does_to_the_bit() {
        // the bundled water table (10,000 points) and a short one, at points in order (the
        // hint walks), out of order (bisection), on nodes, beyond both ends and not finite
        for name in ["water.stol", "air.stol"] {
            let bytes = crate::realistic::bundled_stol(name).unwrap();
            let t = read_stol(name, bytes, crate::io::stol::StolUnit::Stol).unwrap();
            let lookup = Lookup::new(&t);
            let top = t.stol[t.len() - 3];
            let mut xs: Vec<f64> = (0..20_000)
                .map(|i| top * 1.1 * i as f64 / 20_000.0)
                .collect();
            xs.extend((0..5000).map(|i| top * ((i * 7919) % 5000) as f64 / 5000.0));
            xs.extend(t.stol.iter().copied());
            xs.extend([-1.0, -1e99, 1e99, f64::INFINITY, f64::NAN, 0.0]);
            let mut hint = 0;
            for x in xs {
                let (a, b) = (lookup.interpolate(x, &mut hint), t.interpolate(x));
                assert!(a.to_bits() == b.to_bits(), "{name} at {x}: {a} {b}");
            }
        }
    }

    #[test]
    fn pixels_in_lanes_are_the_pixels_alone_to_the_bit() {
        let mut m = water_and_air();
        m.0.insert(
            "neg.stol".into(),
            b"0 -3\n0.1 2\n0.2 -5\n0.3 9\n0.4 1\n".to_vec(),
        );
        let never = AtomicBool::new(false);
        for frame in [
            // partial blocks of lanes, polarisation factors, point pixels, several sources
            "-detpixels 13 -pixel 0.3 -distance 30",
            "-detpixels 21 -pixel 0.25 -distance 20 -polar 0.6",
            "-detpixels 19 -pixel 0.2 -distance 25 -point_pixel -nopolar",
            "-detpixels 17 -pixel 0.2 -distance 40 -divergence 0.4 -divsteps 2 -dispersion 1 -dispsteps 2",
            "-detpixels 18 -pixel 0.2 -distance 30 -twotheta 20 -Xbeam 1 -Ybeam 2",
            // module gaps (the mask) and a ROI
            "-detector pilatus6m -roi 480 540 180 230 -distance 200",
            "-detector eiger2-4m -roi 1020 1090 500 560 -distance 120 -lambda 1",
        ] {
            for table in ["w.stol", "neg.stol", "air.stol"] {
                let a = setup(&format!("-stol {table} -thickness 1 {frame}"), &m).unwrap();
                let b = setup(&format!("-stol air.stol -MW 29 -density 0.0012 -Fmap {frame}"), &m)
                    .unwrap();
                let lanes = render_with(&[&a, &b], true, &|_| {}, &never).unwrap();
                let alone = render_with(&[&a, &b], false, &|_| {}, &never).unwrap();
                for (x, y) in lanes.iter().zip(&alone) {
                    assert_eq!(x.1.to_bits(), y.1.to_bits(), "{frame} {table}: solid angle");
                    assert!(
                        x.0.iter().zip(&y.0).all(|(p, q)| p.to_bits() == q.to_bits()),
                        "{frame} {table}"
                    );
                    assert!(x.0.iter().any(|&v| v != 0.0), "{frame} {table}");
                }
            }
        }
    }

    #[test]
    fn a_mask_leaves_its_pixels_out_and_the_others_as_they_were() {
        // the realistic chain renders water and air on the spots' plan, which carries the
        // detector's mask when it has one (`realistic::setup_on_plan`): a masked pixel is 0
        // and adds no solid angle, every other pixel is the unmasked render's to the bit, in
        // the lanes and pixel by pixel (both take their runs from `Plan::row_segments`; the
        // unmasked render is the independent reference)
        let m = water_and_air();
        let never = AtomicBool::new(false);
        for frame in [
            "-detpixels 37 -pixel 0.2 -distance 30 -polar 0.6",
            "-detector eiger2-4m -roi 1020 1090 500 560 -distance 120 -lambda 1",
        ] {
            let make = || {
                let a = setup(&format!("-stol w.stol -thickness 1 {frame}"), &m).unwrap();
                let b = setup(
                    &format!("-stol air.stol -MW 29 -density 0.0012 {frame}"),
                    &m,
                )
                .unwrap();
                (a, b)
            };
            let (a, b) = make();
            let full = render_with(&[&a, &b], true, &|_| {}, &never).unwrap();
            let (fp, sp) = (a.plan().fpixels, a.plan().spixels);
            let roi = &a.plan().roi;
            let (x0, y0) = (roi.xmin, roi.ymin);
            let (x1, y1) = (roi.xmax.min(fp - 1), roi.ymax.min(sp - 1));
            // a run across a block of lanes' edge, single pixels at the ROI's edges and inside,
            // a whole row, and a column
            let mut mask = a.plan().mask.clone().unwrap_or_else(|| vec![1u8; fp * sp]);
            for f in x0 + LANES - 3..x0 + LANES + 4 {
                mask[(y0 + 2) * fp + f] = 0;
            }
            for (f, s) in [(x0, y0), (x1, y0), (x0, y1), (x1, y1), (x0 + 11, y0 + 5)] {
                mask[s * fp + f] = 0;
            }
            for f in 0..fp {
                mask[(y0 + 7) * fp + f] = 0;
            }
            for s in 0..sp {
                mask[s * fp + x0 + 9] = 0;
            }
            let (mut a, mut b) = make();
            a.frame.plan.mask = Some(mask.clone());
            b.frame.plan.mask = Some(mask.clone());
            let lanes = render_with(&[&a, &b], true, &|_| {}, &never).unwrap();
            let alone = render_with(&[&a, &b], false, &|_| {}, &never).unwrap();
            for k in 0..2 {
                let (img, omega) = (&lanes[k].0, lanes[k].1);
                let mut left_out = 0;
                for i in 0..fp * sp {
                    if mask[i] == 0 {
                        assert_eq!(img[i].to_bits(), 0, "{frame} {k}: masked pixel {i}");
                        left_out += (full[k].0[i] != 0.0) as usize;
                    } else {
                        assert_eq!(
                            img[i].to_bits(),
                            full[k].0[i].to_bits(),
                            "{frame} {k}: pixel {i}"
                        );
                    }
                    assert_eq!(img[i].to_bits(), alone[k].0[i].to_bits(), "{frame} {k}");
                }
                // the mask took out pixels that had light (a row, a column, a run and single
                // pixels, less the module gaps they cross), and their solid angle
                assert!(left_out >= 40, "{frame} {k}: {left_out}");
                assert!(omega < full[k].1, "{frame} {k}: {omega} {}", full[k].1);
                assert_eq!(omega.to_bits(), alone[k].1.to_bits(), "{frame} {k}");
            }
        }
    }

    #[test]
    fn materials_rendered_together_are_the_images_rendered_alone() {
        let mut m = water();
        m.0.insert("one.stol".into(), b"0 1\n1 1\n2 1\n3 1\n".to_vec());
        let never = AtomicBool::new(false);
        for frame in [
            "-detpixels 24 -pixel 0.2 -distance 40 -oversample 2 -divergence 0.4 -divsteps 2",
            "-detector pilatus6m -roi 1200 1300 1250 1330 -distance 200",
        ] {
            let a = setup(&format!("-stol w.stol -thickness 1 {frame}"), &m).unwrap();
            let b = setup(
                &format!("-stol one.stol -MW 29 -density 0.0012 {frame}"),
                &m,
            )
            .unwrap();
            assert!(same_frame(&a, &b));
            let both = render_shared(&[&a, &b], &|_| {}, &never).unwrap();
            assert_eq!(both[0], render(&a, &|_| {}, &never).unwrap(), "{frame}");
            assert_eq!(both[1], render(&b, &|_| {}, &never).unwrap(), "{frame}");
            assert!(both[0].0.iter().any(|&v| v > 0.0));
        }
        // another frame: rendered one after the other, each its own image
        let a = setup("-stol w.stol -detpixels 16 -distance 40", &m).unwrap();
        let b = setup("-stol w.stol -detpixels 16 -distance 41", &m).unwrap();
        assert!(!same_frame(&a, &b));
        let both = render_shared(&[&a, &b], &|_| {}, &never).unwrap();
        assert_eq!(both[1], render(&b, &|_| {}, &never).unwrap());
        assert_ne!(both[0].0, both[1].0);
    }
}
