//! Browser bindings of the realistic-image chain (`crate::realistic`): a model file whose
//! structure factors are computed once per model and resolution, the spots rendered with that
//! table, the amorphous background (nonBragg) on the same detector, and the detector's effects
//! (noisify) on the layers the page chooses. The worker calls, in order:
//!
//! `realistic_set_model` (when the model changes) → `realistic_prepare(words)` → (when
//! `sfCached` is false) `realistic_structure_factors()` → `realistic_render_spots` →
//! `realistic_background` → `realistic_compose(…)` (again for each layer toggle).
//!
//! Progress and cancel are the module's shared flags (`progress_ptr`, `cancel_flag_ptr`).

use super::{js_err, render_with, report_progress, to_js, CANCEL, STATE};
use crate::realistic::{self, SfCache};
use serde::Serialize;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use wasm_bindgen::prelude::*;

#[derive(Default)]
struct Layers {
    cache: Option<SfCache>,
    /// Resolution the prepared plan needs (Å).
    d_min: f64,
    spots: Option<Vec<f32>>,
    /// Whether `materials` holds the background of the prepared detector (its layers are
    /// added to the spots when the image is composed, not kept summed).
    background: bool,
    /// The materials' images of the last detector and beam, reused while only the crystal
    /// changes.
    materials: realistic::BackgroundCache,
    /// The spots' detector, kept apart from the module's plan (a prediction or another render
    /// may replace that plan while the page still shows this image).
    frame: Option<Frame>,
    /// The image shown (ADU, masked) and what composed it: the downloads save it.
    shown: Option<Vec<f32>>,
    composed: Option<(bool, bool, realistic::DetectorSettings)>,
    /// Whether the prepared spots take their structure factors from the model.
    with_model: bool,
}

struct Frame {
    w: usize,
    h: usize,
    pixel: f64,
    mask: Option<Vec<u8>>,
    header: crate::io::smv::SmvHeader,
    /// The miniCBF header of the same detector (its preset's name, sensor and largest count).
    cbf: crate::io::cbf::CbfInfo,
}

thread_local! {
    static RS: RefCell<Layers> = RefCell::new(Layers::default());
}

#[wasm_bindgen(typescript_custom_section)]
const TS_REALISTIC: &str = r#"
/** A model read by `realistic_set_model`. Cell in Å and degrees. */
export interface ModelInfo {
  name: string;
  format: string;
  atoms: number;
  cell: [number, number, number, number, number, number];
  spaceGroup: string;
  symops: number;
}

/** What `realistic_prepare` returns: the plan, the resolution it needs and whether the cached
 * structure factors already cover it. */
export interface RealisticPrepare {
  info: PrepareInfo;
  dMin: number;
  sfCached: boolean;
  sfComputations: number;
}

/** The structure-factor table in use. */
export interface SfInfo {
  computed: boolean;
  computations: number;
  reflections: number;
  dMin: number;
  atoms: number;
  cellAtoms: number;
  spaceGroup: string;
  ms: number;
}

/** A detector preset of the crate (`crate::presets`) and the effects of its kind. */
export interface DetectorChoice {
  name: string;
  label: string;
  kind: string;
  fast_pixels: number;
  slow_pixels: number;
  pixel_mm: number;
  saturation: number;
  sensor: string;
  sensor_thickness_um: number;
  effects: DetectorEffects;
}

/** Detector effects for `realistic_compose` (`realistic::DetectorSettings`, noisify's): read-out
 * noise (ADU rms), PSF FWHM (µm, 0 = none; Gaussian), gain (ADU/photon), ADC offset (ADU),
 * calibration error and flicker (fractions), noise seed (as `noisify -seed`). */
export interface DetectorEffects {
  readout: number;
  psfUm: number;
  gain: number;
  adc: number;
  calibration: number;
  flicker: number;
  seed: number;
}
"#;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelInfo {
    name: String,
    format: String,
    atoms: usize,
    cell: [f64; 6],
    space_group: String,
    symops: usize,
}

/// Read a model (PDB or mmCIF, by content). The cached table is kept when the same bytes come
/// again; a bad file is an error naming the file and line (the previous model stays).
#[wasm_bindgen(unchecked_return_type = "ModelInfo")]
pub fn realistic_set_model(name: &str, bytes: Vec<u8>) -> Result<JsValue, JsValue> {
    RS.with(|rs| {
        let mut rs = rs.borrow_mut();
        SfCache::load(&mut rs.cache, name, &bytes).map_err(js_err)?;
        let c = rs.cache.as_ref().expect("loaded");
        let m = &c.model;
        let cl = &m.cell;
        to_js(&ModelInfo {
            name: c.name.clone(),
            format: m.format.name().to_string(),
            atoms: m.atoms.len(),
            cell: [cl.a, cl.b, cl.c, cl.alpha, cl.beta, cl.gamma],
            space_group: m.space_group.name.clone(),
            symops: m.space_group.ops.len(),
        })
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RealisticPrepare {
    info: super::PrepareInfo,
    d_min: f64,
    sf_cached: bool,
    sf_computations: usize,
}

/// Prepare the spots' plan from the page's words plus (`with_model`) the model's cell; when the
/// cached table reaches the detector's resolution it is installed at once (`sfCached`). Without
/// a model the words' own structure factors (`-default_F`, `-hkl`) are used.
#[wasm_bindgen(unchecked_return_type = "RealisticPrepare")]
pub fn realistic_prepare(mut args: Vec<String>, with_model: bool) -> Result<JsValue, JsValue> {
    if with_model {
        let words = RS.with(|rs| rs.borrow().cache.as_ref().map(|c| c.crystal_words()));
        let words = words.ok_or_else(|| js_err("no model: choose or drop a PDB/mmCIF file"))?;
        args.extend(words);
    }
    super::prepare(args)?;
    let (d_min, frame) = STATE.with(|st| {
        let st = st.borrow();
        let prep = st.prepared.as_ref().expect("prepared");
        let p = prep.plan();
        let s = &prep.setup;
        let rtd = crate::args::RTD;
        let frame = Frame {
            w: p.fpixels,
            h: p.spixels,
            pixel: p.pixel,
            mask: p.mask.clone(),
            header: crate::output::smv_header(s),
            cbf: {
                let mut info = crate::output::cbf_info(
                    &s.det,
                    s.opts.preset,
                    "nanoBragg simulation",
                    s.lambda0 * 1e10,
                    s.opts.exposure,
                    s.phi0 * rtd,
                    s.osc * rtd,
                    p.thick,
                );
                crate::output::cbf_beam(&mut info, &s.opts);
                info
            },
        };
        let d = if with_model {
            realistic::needed_d_min(prep).map_err(js_err)?
        } else {
            0.0
        };
        Ok::<_, JsValue>((d, frame))
    })?;
    let (cached, computations) = RS.with(|rs| {
        let mut rs = rs.borrow_mut();
        rs.d_min = d_min;
        rs.spots = None;
        rs.background = false;
        rs.shown = None;
        rs.frame = Some(frame);
        rs.with_model = with_model;
        // without a model the words hold the structure factors (-default_F, -hkl): nothing to compute
        let c = rs.cache.as_ref().filter(|_| with_model);
        (
            c.is_none_or(|c| c.covers(d_min)),
            c.map_or(0, |c| c.computations),
        )
    });
    if cached && with_model {
        install()?;
    }
    let info = STATE.with(|st| super::PrepareInfo::of(st.borrow().prepared.as_ref().unwrap()));
    to_js(&RealisticPrepare {
        info,
        d_min,
        sf_cached: cached,
        sf_computations: computations,
    })
}

/// Prepare words that name an atomic model (`-pdb NAME`) for a prediction of the crystal the
/// realistic chain shows: when NAME is the model read by `realistic_set_model`, its cell and
/// (when it reaches the detector's resolution) its structure-factor table, so that the predicted
/// intensities are the model's; otherwise the words' own cell and structure factors (the page
/// sends the model's cell and unit F as well). Returns whether the model's table is in the plan.
#[wasm_bindgen]
pub fn prepare_with_model(args: Vec<String>) -> Result<bool, JsValue> {
    let (words, cached) = split_model(args);
    let Some(model_words) = cached else {
        super::prepare(words)?;
        return Ok(false);
    };
    let mut words = words;
    words.extend(model_words);
    super::prepare(words)?;
    let d_min = STATE.with(|st| {
        realistic::needed_d_min(st.borrow().prepared.as_ref().expect("prepared")).map_err(js_err)
    })?;
    let covers = RS.with(|rs| rs.borrow().cache.as_ref().is_some_and(|c| c.covers(d_min)));
    if covers {
        install()?;
    }
    Ok(covers)
}

/// The words without `-pdb NAME`, and the crystal words of the model the chain read when NAME
/// is that model.
fn split_model(args: Vec<String>) -> (Vec<String>, Option<Vec<String>>) {
    let mut words = Vec::with_capacity(args.len());
    let mut name = None;
    let mut it = args.into_iter();
    while let Some(w) = it.next() {
        if w == "-pdb" {
            name = it.next();
        } else {
            words.push(w);
        }
    }
    let cached = RS.with(|rs| {
        rs.borrow()
            .cache
            .as_ref()
            .filter(|c| name.as_deref() == Some(c.name.as_str()))
            .map(|c| c.crystal_words())
    });
    (words, cached)
}

/// `-pdb NAME` replaced by the read model's crystal words (its cell), or dropped: the crystal
/// the page shows, for a geometry query.
pub(super) fn with_model_cell(args: Vec<String>) -> Vec<String> {
    let (mut words, cached) = split_model(args);
    words.extend(cached.unwrap_or_default());
    words
}

/// Put the cached table into the prepared plan.
fn install() -> Result<(), JsValue> {
    RS.with(|rs| {
        let rs = rs.borrow();
        let c = rs.cache.as_ref().ok_or_else(|| js_err("no model"))?;
        let (grid, s) = c
            .table
            .as_ref()
            .ok_or_else(|| js_err("no structure factors"))?;
        let description = format!(
            "{} ({} model, space group {}, {} reflections to {:.3} Å)",
            c.name,
            s.format.name(),
            s.space_group,
            grid.hkls,
            s.d_min
        );
        STATE.with(|st| {
            let mut st = st.borrow_mut();
            let prep = st
                .prepared
                .as_mut()
                .ok_or_else(|| js_err("no plan prepared"))?;
            realistic::install_table(prep, grid, &description);
            Ok(())
        })
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SfInfo {
    computed: bool,
    computations: usize,
    reflections: usize,
    d_min: f64,
    atoms: usize,
    cell_atoms: usize,
    space_group: String,
    ms: f64,
}

/// The structure factors for the prepared plan: computed (progress, cancel) unless the cached
/// table covers its resolution, then put into the plan; null when the spots were prepared
/// without a model.
#[wasm_bindgen(unchecked_return_type = "SfInfo | null")]
pub fn realistic_structure_factors() -> Result<JsValue, JsValue> {
    if !RS.with(|rs| rs.borrow().with_model) {
        return Ok(JsValue::NULL);
    }
    CANCEL.store(false, Ordering::SeqCst);
    report_progress(0.0);
    let t0 = js_sys::Date::now();
    let info = RS.with(|rs| {
        let mut rs = rs.borrow_mut();
        let d_min = rs.d_min;
        let c = rs.cache.as_mut().ok_or_else(|| js_err("no model"))?;
        let computed = c.ensure(d_min, &report_progress, &CANCEL).map_err(js_err)?;
        let (grid, s) = c.table.as_ref().expect("table");
        Ok::<_, JsValue>(SfInfo {
            computed,
            computations: c.computations,
            reflections: grid.hkls,
            d_min: s.d_min,
            atoms: s.atoms,
            cell_atoms: s.cell_atoms,
            space_group: s.space_group.clone(),
            ms: js_sys::Date::now() - t0,
        })
    })?;
    install()?;
    to_js(&info)
}

/// Render the spots of the prepared plan (the table installed) where the backend policy puts
/// it; kept as the spots layer (in the module: nothing is copied out).
#[wasm_bindgen]
pub async fn realistic_render_spots(backend: String, f64_precision: bool) -> Result<(), JsValue> {
    let img = render_with(
        super::parse_backend(&backend),
        super::precision_of(f64_precision),
    )
    .await?;
    RS.with(|rs| rs.borrow_mut().spots = Some(img));
    Ok(())
}

/// The amorphous background on the prepared plan's detector: one nonBragg material per word
/// list (`materials` holds the lists separated by a "--" word, e.g. `-stol water.stol
/// -thickness 0.02 -flux 1e12 … -- -stol air.stol …`); kept as the background layer. Each
/// material's image is rendered again only when its words or the detector and beam changed
/// (`realistic::BackgroundCache`; the materials not kept are rendered in one pass). Nothing is
/// copied out: `realistic_compose` adds the layers.
#[wasm_bindgen]
pub fn realistic_background(materials: Vec<String>) -> Result<(), JsValue> {
    CANCEL.store(false, Ordering::SeqCst);
    report_progress(0.0);
    let lists: Vec<&[String]> = materials
        .split(|w| w == "--")
        .filter(|l| !l.is_empty())
        .collect();
    let n = lists.len().max(1) as f32;
    STATE.with(|st| {
        let st = st.borrow();
        let prep = st
            .prepared
            .as_ref()
            .ok_or_else(|| js_err("no plan prepared"))?;
        let progress = |i: usize, p: f32| report_progress((i as f32 + p) / n);
        RS.with(|rs| {
            rs.borrow_mut()
                .materials
                .ensure(prep, &lists, &st.files, &progress, &CANCEL)
                .map_err(js_err)
        })
    })?;
    report_progress(1.0);
    RS.with(|rs| rs.borrow_mut().background = true);
    Ok(())
}

/// The image a detector would record from the chosen layers: noisify's effects (with `noise`:
/// flicker, calibration error, Poisson, PSF, gain, ADC offset, read-out noise; without: gain
/// and ADC offset only) in ADU, as f32. Masked pixels (module gaps) are 0. The image is kept
/// for the downloads; the page gets a copy.
#[wasm_bindgen]
pub fn realistic_compose(
    spots: bool,
    background: bool,
    noise: bool,
    #[wasm_bindgen(unchecked_param_type = "DetectorEffects")] effects: JsValue,
) -> Result<js_sys::Float32Array, JsValue> {
    CANCEL.store(false, Ordering::SeqCst);
    let fx: realistic::DetectorSettings =
        serde_wasm_bindgen::from_value(effects).map_err(js_err)?;
    let out = compose(spots, background, noise, &fx)?;
    let copy = js_sys::Float32Array::from(out.as_slice());
    RS.with(|rs| {
        let mut rs = rs.borrow_mut();
        rs.shown = Some(out);
        rs.composed = Some((spots, background, fx));
    });
    Ok(copy)
}

/// The image shown (the last `realistic_compose`) reduced by the largest value of each
/// `block` × `block` square (`realistic::block_maxima`): the worker sends it with the image, so
/// that the page's view draws the whole detector from it instead of reducing 4.5 M pixels on
/// the main thread.
#[wasm_bindgen]
pub fn realistic_block_maxima(block: usize) -> Result<js_sys::Float32Array, JsValue> {
    RS.with(|rs| {
        let rs = rs.borrow();
        let missing = || js_err("render the realistic image first");
        let f = rs.frame.as_ref().ok_or_else(missing)?;
        let shown = rs.shown.as_deref().ok_or_else(missing)?;
        let m = realistic::block_maxima(shown, f.w, f.h, block);
        Ok(js_sys::Float32Array::from(m.as_slice()))
    })
}

/// The realistic image's size (fast, slow pixels) once prepared; undefined before.
#[wasm_bindgen]
pub fn realistic_size() -> Option<Vec<u32>> {
    RS.with(|rs| {
        rs.borrow()
            .frame
            .as_ref()
            .map(|f| vec![f.w as u32, f.h as u32])
    })
}

/// The chosen layers summed (`realistic::compose_over`: one pass), the detector's effects, and
/// the ADU as f32 with the mask's pixels 0 (one pass); all passes over the pixels in parallel.
fn compose(
    spots: bool,
    background: bool,
    noise: bool,
    fx: &realistic::DetectorSettings,
) -> Result<Vec<f32>, JsValue> {
    use rayon::prelude::*;
    RS.with(|rs| {
        let rs = rs.borrow();
        let missing = || js_err("render the realistic image first");
        let f = rs.frame.as_ref().ok_or_else(missing)?;
        let (w, h) = (f.w, f.h);
        let spots = match spots {
            true => Some(rs.spots.as_deref().ok_or_else(missing)?),
            false => None,
        };
        let layers = match background {
            true if !rs.background => return Err(missing()),
            true => rs.materials.images(),
            false => Vec::new(),
        };
        let sum = realistic::compose_over(spots, &layers, w * h);
        let adu = realistic::detect(&sum, w, h, f.pixel, fx, noise, &report_progress, &CANCEL)
            .map_err(js_err)?;
        drop(sum);
        const CHUNK: usize = 1 << 16;
        let mut out = vec![0f32; adu.len()];
        out.par_chunks_mut(CHUNK)
            .zip(adu.par_chunks(CHUNK))
            .enumerate()
            .for_each(|(c, (o, a))| match &f.mask {
                Some(m) => {
                    let m = &m[c * CHUNK..c * CHUNK + o.len()];
                    for ((o, &v), &k) in o.iter_mut().zip(a).zip(m) {
                        *o = if k == 0 { 0.0 } else { v as f32 };
                    }
                }
                None => {
                    for (o, &v) in o.iter_mut().zip(a) {
                        *o = v as f32;
                    }
                }
            });
        Ok(out)
    })
}

/// The image shown, as a download: `int` an SMV image of its ADU (clipped to 0..=65535) with the
/// spots' detector header, `noise` the same with the detector's noise switched on (the image
/// the page shows with its noise layer), `float` its ADU as raw little-endian f32, `cbf` the
/// detector's own format: a miniCBF of its ADU as 32-bit integers (rounded, clipped to 0 and
/// the preset's largest count, not to 65535) with the module gaps and masked pixels −1, as
/// PILATUS and EIGER files mark them.
#[wasm_bindgen]
pub fn realistic_export(what: &str) -> Result<Vec<u8>, JsValue> {
    let missing = || js_err("render the realistic image first");
    let (shown, composed, header, cbf, mask, w, h) = RS.with(|rs| {
        let rs = rs.borrow();
        let f = rs.frame.as_ref().ok_or_else(missing)?;
        Ok::<_, JsValue>((
            rs.shown.clone(),
            rs.composed,
            f.header.clone(),
            f.cbf.clone(),
            f.mask.clone(),
            f.w,
            f.h,
        ))
    })?;
    let shown = shown.ok_or_else(missing)?;
    let smv = |img: &[f32]| {
        let px: Vec<u16> = img
            .iter()
            .map(|&v| v.round().clamp(0.0, 65535.0) as u16)
            .collect();
        crate::io::smv::write_smv(&header, &px).map_err(js_err)
    };
    match what {
        "int" => smv(&shown),
        "noise" => {
            let (spots, background, fx) = composed.ok_or_else(missing)?;
            CANCEL.store(false, Ordering::SeqCst);
            smv(&compose(spots, background, true, &fx)?)
        }
        "float" => Ok(crate::output::float_bytes(&shown)),
        "cbf" => Ok(minicbf(&shown, mask.as_deref(), cbf, w, h)),
        _ => Err(js_err(format!(
            "unknown export '{what}' (int, noise, float or cbf)"
        ))),
    }
}

/// A miniCBF of an ADU image: rounded, clipped to 0..=`info.count_cutoff` (at most i32::MAX),
/// masked pixels −1 (counted in `N_excluded_pixels`).
fn minicbf(
    adu: &[f32],
    mask: Option<&[u8]>,
    mut info: crate::io::cbf::CbfInfo,
    w: usize,
    h: usize,
) -> Vec<u8> {
    let top = info.count_cutoff.min(i32::MAX as u64) as f64;
    let px: Vec<i32> = adu
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if mask.is_some_and(|m| m[i] == 0) {
                -1
            } else {
                (v as f64).round().clamp(0.0, top) as i32
            }
        })
        .collect();
    info.excluded = px.iter().filter(|&&v| v == -1).count();
    crate::io::cbf::write_minicbf(&info, w, h, &px)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DetectorChoice {
    #[serde(flatten)]
    preset: &'static crate::presets::DetectorPreset,
    /// The detector effects of its kind: photon counting (no read-out noise, no PSF, gain 1)
    /// or a CCD (noisify's defaults: 46 µm PSF, 3 ADU read-out noise, ADC offset 40).
    effects: realistic::DetectorSettings,
}

/// The crate's detector presets (`-detector`) with the detector effects of their kind.
#[wasm_bindgen(unchecked_return_type = "DetectorChoice[]")]
pub fn detector_presets() -> Result<JsValue, JsValue> {
    let list: Vec<DetectorChoice> = crate::presets::PRESETS
        .iter()
        .map(|p| DetectorChoice {
            preset: p,
            effects: realistic::DetectorSettings::of_kind(p.kind == "CCD"),
        })
        .collect();
    to_js(&list)
}

/// Structure-factor tables computed for the current model (a debug hook for the tests).
#[wasm_bindgen]
pub fn realistic_sf_computations() -> usize {
    RS.with(|rs| rs.borrow().cache.as_ref().map_or(0, |c| c.computations))
}

/// Milliseconds to compute the structure factors of a model to `d_min` Å (nothing kept): the
/// benchmark hook of `docs/benchmarks.md`.
#[wasm_bindgen]
pub fn realistic_sf_benchmark(name: &str, bytes: Vec<u8>, d_min: f64) -> Result<f64, JsValue> {
    let t0 = js_sys::Date::now();
    let never = std::sync::atomic::AtomicBool::new(false);
    crate::sf::structure_factors(
        &bytes,
        name,
        &crate::sf::SfOptions::to_resolution(d_min),
        &|_| {},
        &never,
    )
    .map_err(js_err)?;
    Ok(js_sys::Date::now() - t0)
}

/// The set-up of words that may name the atomic model the chain read (`-pdb NAME`), for a fit
/// of the crystal the realistic chain shows: the model's cell in place of `-pdb NAME` and, when
/// its cached table covers the detector, the model's structure factors in the plan (the fit's
/// model then has the target's intensities; its moved set-ups keep the table). Other words are
/// prepared as they are (`-pdb` of another name dropped, as `with_model_cell` does).
pub(super) fn prepare_for_fit(
    args: Vec<String>,
    files: &dyn crate::files::FileSource,
) -> Result<crate::api::Prepared, JsValue> {
    let (mut words, cached) = split_model(args);
    let with_model = cached.is_some();
    words.extend(cached.unwrap_or_default());
    let mut prep = crate::api::prepare(&words, files).map_err(js_err)?;
    if with_model {
        let d_min = realistic::needed_d_min(&prep).map_err(js_err)?;
        RS.with(|rs| {
            let rs = rs.borrow();
            if let Some(c) = rs.cache.as_ref().filter(|c| c.covers(d_min)) {
                if let Some((grid, s)) = c.table.as_ref() {
                    let description = format!(
                        "{} ({} model, space group {}, {} reflections to {:.3} Å)",
                        c.name,
                        s.format.name(),
                        s.space_group,
                        grid.hkls,
                        s.d_min
                    );
                    realistic::install_table(&mut prep, grid, &description);
                }
            }
        });
    }
    Ok(prep)
}
