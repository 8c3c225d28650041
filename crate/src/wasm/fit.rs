//! The fit for the page's "Fit to image" (issue 20 §3): `api::fit` on the words' set-up and a
//! target image, each accepted step handed to a JavaScript callback with the values as the
//! user's flags (`api::fitted_values`) and, when asked, the model image there; and
//! `fitted_values` alone (the page's "perturb": the set-up moved by chosen offsets, as flags);
//! `find_spots`, a target's spots as the fit finds them (`api::find_spots`: the page rings them).
//! Both take the target's mask (a measured image's flagged pixels: `MeasuredInfo.mask`, made by
//! the crate's `Pixels::mask` when the file was read), one byte per pixel, 0 = excluded.
//! Words naming the atomic model the realistic chain read (`-pdb NAME`) are the model's crystal
//! with its cached structure factors (`realistic::prepare_for_fit`): a fit to the realistic still.
//! Cancel is the module's flag (`set_cancel`, or the shared memory the page writes).

use super::{js_err, to_js, CANCEL, STATE};
use crate::api;
use serde::Serialize;
use std::sync::atomic::Ordering;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_FIT: &str = r#"
/** The set-up moved by offsets as the values of its flags (`resolve::fitted::Fitted`): absent
 * (null) where no fitted parameter moves it. Degrees, Å, mm, photons/m². */
export interface Fitted {
  misset: [number, number, number] | null;
  cell: [number, number, number, number, number, number] | null;
  /** [flag, mm]: "-distance" or "-close_distance". */
  distance: [string, number] | null;
  xbeam: number | null;
  ybeam: number | null;
  fluence: number | null;
  lambda: number | null;
  mosaic: number | null;
  n: [number, number, number] | null;
  detector_rot: [number, number, number] | null;
  default_f: number | null;
}
/** One accepted step of a fit, as `fit`'s callback sees it. */
export interface FitStepInfo {
  /** Evaluations of the model in this cycle so far (0: the start). */
  iteration: number;
  cycle: number;
  /** Accepted steps so far over all cycles (0: the start). */
  step: number;
  /** Cost per selected pixel (Σρ(r)/n); NaN at the start. */
  cost: number;
  /** Offsets from the set-up's values, one per parameter (public units: rad, Å, mm, …). */
  values: number[];
  fitted: Fitted;
  /** The model image at these values (f32 kernel), when asked for. */
  image: Float32Array | null;
}
/** A finished fit (`api::Fit`). */
export interface FitInfo {
  params: string[];
  values: number[];
  fitted: Fitted;
  history: number[];
  iterations: number;
  cycles: number;
  /** Whether the fit ended at a minimum near the target (`api::Fit::converged`): the solver
   * ended on its tolerance and the target's strongest spots have the model's spots on them. */
  converged: boolean;
  /** Why it did not converge (empty when it did), a sentence for the user. */
  verdict: string;
  /** The target's strongest spots checked, and how many the fitted model has a spot on. */
  spotsChecked: number;
  spotsFound: number;
  pixels: number;
  /** Pixels of the target the mask excluded (0 without a mask). */
  excluded: number;
  /** The model image at the fitted values (f32 of the f64 image). */
  image: Float32Array;
  ms: number;
}
/** A spot of an image (`api::Spot`): connected pixels above the threshold over the
 * background. */
export interface Spot {
  /** The centroid weighted by the signal (pixels; pixel (f, s)'s centre is at f + 0.5, s + 0.5). */
  fast: number;
  slow: number;
  /** The signal: its pixels (photons, less the background when one is modelled), summed. */
  intensity: number;
  /** Its pixels. */
  pixels: number;
}
"#;

#[derive(Serialize)]
struct Step<'a> {
    iteration: usize,
    cycle: usize,
    step: usize,
    cost: f64,
    values: &'a [f64],
    fitted: &'a api::Fitted,
}

#[derive(Serialize)]
struct Done<'a> {
    params: Vec<&'static str>,
    values: &'a [f64],
    fitted: &'a api::Fitted,
    history: &'a [f64],
    iterations: usize,
    cycles: usize,
    converged: bool,
    verdict: &'a str,
    #[serde(rename = "spotsChecked")]
    spots_checked: usize,
    #[serde(rename = "spotsFound")]
    spots_found: usize,
    pixels: usize,
    excluded: usize,
    ms: f64,
}

fn set_image(obj: &JsValue, image: Option<Vec<f32>>) {
    let v: JsValue = match image {
        Some(i) => js_sys::Float32Array::from(i.as_slice()).into(),
        None => JsValue::NULL,
    };
    let _ = js_sys::Reflect::set(obj, &"image".into(), &v);
}

/// The fast f32 image of `prep` moved by `offsets` (the page's live view of a fit).
fn image_at(
    prep: &api::Prepared,
    files: &dyn crate::files::FileSource,
    offsets: &[api::Offset],
) -> Option<Vec<f32>> {
    let plan = api::moved_plan(prep, files, offsets).ok()?;
    let mut r = api::Renderer::new(None);
    let never = std::sync::atomic::AtomicBool::new(false);
    r.render_on_cpu(&plan, api::Precision::F32, &|_| {}, &never)
        .ok()
        .map(|x| x.image)
}

/// Fits `params` (comma-separated names: `rot_x,rot_y,rot_z,cell_a,…`) of the set-up of `args`
/// (with the module's files) to `target` (the detector's size, fast-major; ADU = `gain`·photons
/// + `adc`, photons for 1 and 0; `centroids`: start with the spot-centroid stage,
/// `FitOptions::centroids`; `mask`: the pixels to use, 1 byte each, 0 = excluded, as
/// `FitOptions::mask`; absent: all), with the `background` model under the spots (`none`,
/// `local`: `api::Background`), starting from the offsets `start` (one per parameter, or empty), in at
/// most `max_iterations` evaluations. `on_step(FitStepInfo)` is called at the start and at every accepted step (with
/// the model image when `images`). Cancel: the module's cancel flag (an error of kind
/// "cancelled").
#[allow(clippy::too_many_arguments)] // the binding's flat JavaScript arguments
#[wasm_bindgen(unchecked_return_type = "FitInfo")]
pub fn fit(
    args: Vec<String>,
    target: Vec<f32>,
    mask: Option<Vec<u8>>,
    params: &str,
    start: Vec<f64>,
    background: &str,
    gain: f64,
    adc: f64,
    centroids: bool,
    max_iterations: usize,
    images: bool,
    #[wasm_bindgen(unchecked_param_type = "(step: FitStepInfo) => void")]
    on_step: &js_sys::Function,
) -> Result<JsValue, JsValue> {
    let t0 = js_sys::Date::now();
    CANCEL.store(false, Ordering::SeqCst);
    let params = api::parse_params(params, "fit").map_err(js_err)?;
    let background = api::Background::parse(background).map_err(js_err)?;
    if !start.is_empty() && start.len() != params.len() {
        return Err(js_err(format!(
            "fit: {} start values for {} parameters",
            start.len(),
            params.len()
        )));
    }
    STATE.with(|st| {
        let st = st.borrow();
        let files = &st.files;
        let prep = super::realistic::prepare_for_fit(args, files)?;
        api::check_pixel_budget(&prep, api::BROWSER_MAX_PIXELS).map_err(js_err)?;
        let target: Vec<f64> = target.iter().map(|&v| v as f64).collect();
        let mut options = api::FitOptions::new(&params);
        options.max_iterations = max_iterations.max(2);
        options.start = params.iter().copied().zip(start.iter().copied()).collect();
        options.background = background;
        options.gain = gain;
        options.adc = adc;
        options.centroids = centroids;
        options.mask = mask.map(|m| m.iter().map(|&b| b != 0).collect());
        let excluded = options
            .mask
            .as_ref()
            .map_or(0, |m| m.iter().filter(|&&u| !u).count());
        let x0: Vec<f64> = if start.is_empty() {
            vec![0.0; params.len()]
        } else {
            start.clone()
        };
        let call = |it: usize,
                    cycle: usize,
                    step: usize,
                    cost: f64,
                    values: &[f64]|
         -> Result<(), JsValue> {
            let fitted = api::fitted_values(&prep, &params, values).map_err(js_err)?;
            let step = to_js(&Step {
                iteration: it,
                cycle,
                step,
                cost,
                values,
                fitted: &fitted,
            })?;
            if images {
                let offsets: Vec<api::Offset> =
                    params.iter().copied().zip(values.iter().copied()).collect();
                set_image(&step, image_at(&prep, files, &offsets));
            } else {
                set_image(&step, None);
            }
            on_step.call1(&JsValue::NULL, &step).map(|_| ())
        };
        call(0, 0, 0, f64::NAN, &x0)?;
        let mut steps = 0usize;
        let mut js_error: Option<JsValue> = None;
        let out = api::fit(
            &prep,
            files,
            &target,
            &options,
            &mut |s: &api::FitStep| {
                if js_error.is_some() {
                    return;
                }
                steps += 1;
                if let Err(e) = call(s.iteration, s.cycle, steps, s.cost, &s.values) {
                    js_error = Some(e);
                    CANCEL.store(true, Ordering::SeqCst);
                }
            },
            &CANCEL,
        );
        if let Some(e) = js_error {
            return Err(e);
        }
        let f = out.map_err(js_err)?;
        let fitted = api::fitted_values(&prep, &f.params, &f.values).map_err(js_err)?;
        let done = to_js(&Done {
            params: f.params.iter().map(|p| p.name()).collect(),
            values: &f.values,
            fitted: &fitted,
            history: &f.history,
            iterations: f.iterations,
            cycles: f.cycles,
            converged: f.converged,
            verdict: &f.verdict,
            spots_checked: f.spots_checked,
            spots_found: f.spots_found,
            pixels: f.pixels,
            excluded,
            ms: js_sys::Date::now() - t0,
        })?;
        set_image(&done, Some(f.image.iter().map(|&v| v as f32).collect()));
        Ok(done)
    })
}

/// The set-up of `args` moved by `values` (one offset per parameter of `params`, public units)
/// as the values of its flags (`api::fitted_values`): the page's "perturb".
#[wasm_bindgen(unchecked_return_type = "Fitted")]
pub fn fitted_values(
    args: Vec<String>,
    params: &str,
    values: Vec<f64>,
) -> Result<JsValue, JsValue> {
    let params = api::parse_params(params, "fit").map_err(js_err)?;
    STATE.with(|st| {
        let st = st.borrow();
        let prep = super::realistic::prepare_for_fit(args, &st.files)?;
        to_js(&api::fitted_values(&prep, &params, &values).map_err(js_err)?)
    })
}

/// The spots of `image` (the detector of the set-up of `args`, fast-major; ADU = `gain`·photons
/// + `adc`; `mask`: the pixels to use, as `fit`'s) as a fit with the `background` model (`none`, `local`) finds its target's spots
/// (`api::find_spots` with `api::FitOptions`' defaults): centroids, signal and pixel counts, in
/// the raster order of their first pixel.
#[wasm_bindgen(unchecked_return_type = "Spot[]")]
pub fn find_spots(
    args: Vec<String>,
    image: Vec<f32>,
    mask: Option<Vec<u8>>,
    background: &str,
    gain: f64,
    adc: f64,
) -> Result<JsValue, JsValue> {
    let background = api::Background::parse(background).map_err(js_err)?;
    STATE.with(|st| {
        let st = st.borrow();
        let prep =
            api::prepare(&super::realistic::with_model_cell(args), &st.files).map_err(js_err)?;
        api::check_pixel_budget(&prep, api::BROWSER_MAX_PIXELS).map_err(js_err)?;
        let image: Vec<f64> = image.iter().map(|&v| v as f64).collect();
        let options = api::SpotOptions {
            background,
            gain,
            adc,
            mask: mask.map(|m| m.iter().map(|&b| b != 0).collect()),
            ..api::SpotOptions::default()
        };
        to_js(&api::find_spots(&prep, &image, &options).map_err(js_err)?)
    })
}
