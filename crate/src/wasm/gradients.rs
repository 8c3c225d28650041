//! Derivative images for the page's "∂I/∂" view (issue 20: derivatives from the page, on the
//! GPU in a browser): `api::Renderer::render_gradients_async` on the words' set-up for one
//! parameter, on the engine of the one backend policy (the WGSL tangent kernel on WebGPU where
//! the device opened, else the CPU tangent kernels), and the parameters the page may offer
//! (`tangent::Param`: names and units). The words are prepared apart from the rendered plan, so
//! that a derivative never replaces what the downloads export.

use super::{js_err, parse_backend, precision_of, put_renderer, take_renderer, to_js, CANCEL};
use super::{report_progress, STATE};
use crate::api;
use crate::tangent::Param;
use serde::Serialize;
use std::sync::atomic::Ordering;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_GRADIENTS: &str = r#"
/** A parameter the derivative images can be taken with respect to (`tangent::Param`). */
export interface GradientParam {
  /** The public name (`rot_x`, `cell_a`, `distance`, …). */
  name: string;
  /** The unit the derivative is per: photons per pixel per this unit. */
  unit: string;
}
/** ∂image/∂parameter at the set-up of the words (`render_tangent`). */
export interface TangentInfo {
  param: string;
  unit: string;
  /** The derivative image, photons per pixel per `unit`, fast-major, the detector's size. */
  tangent: Float32Array;
  /** The image rendered with it (photons per pixel). */
  image: Float32Array;
  width: number;
  height: number;
  /** The resolved geometry of the words (as `prepare`'s): rings, beam centre, readout. */
  geometry: Geometry;
  /** "gpu" (the WGSL tangent kernel) or "cpu". */
  engine: string;
  /** Why it did not run where asked (GPU unavailable under auto), one per line; empty if it did. */
  notice: string;
  ms: number;
}
"#;

#[derive(Serialize)]
struct ParamInfo {
    name: &'static str,
    unit: &'static str,
}

/// The parameters of `render_tangent`, in the crate's order, with their units.
#[wasm_bindgen(unchecked_return_type = "GradientParam[]")]
pub fn gradient_params() -> Result<JsValue, JsValue> {
    let all: Vec<ParamInfo> = Param::ALL
        .iter()
        .map(|p| ParamInfo {
            name: p.name(),
            unit: p.unit(),
        })
        .collect();
    to_js(&all)
}

#[derive(Serialize)]
struct Info<'a> {
    param: &'static str,
    unit: &'static str,
    width: usize,
    height: usize,
    geometry: super::Geometry,
    engine: &'static str,
    notice: &'a str,
    ms: f64,
}

/// The image of `args` (with the module's files) and its derivative with respect to `param`
/// (one name of `gradient_params`), rendered where `backend` ("cpu", "gpu", "auto") and the
/// precision put it by the library's backend policy (auto: f32 on the GPU when it opens, else
/// the CPU; f64 on the CPU). Progress and cancel: the module's (an error of kind "cancelled").
/// A parameter the set-up cannot take a derivative by (a mosaic spread without domains, …) is
/// the crate's error naming it.
#[wasm_bindgen(unchecked_return_type = "TangentInfo")]
pub async fn render_tangent(
    args: Vec<String>,
    param: String,
    backend: String,
    f64_precision: bool,
) -> Result<JsValue, JsValue> {
    let t0 = js_sys::Date::now();
    CANCEL.store(false, Ordering::SeqCst);
    report_progress(0.0);
    let p = Param::parse(&param, "derivative").map_err(js_err)?;
    let words = super::with_seed(args);
    // the files are copied out of the state: the render awaits the GPU
    let files = STATE.with(|st| st.borrow().files.clone());
    let prep = api::prepare(&words, &files).map_err(js_err)?;
    api::check_pixel_budget(&prep, api::BROWSER_MAX_PIXELS).map_err(js_err)?;
    let mut r = take_renderer();
    let out = r
        .render_gradients_async(
            &prep,
            &files,
            &[p],
            &[],
            parse_backend(&backend),
            precision_of(f64_precision),
            &report_progress,
            &CANCEL,
        )
        .await;
    put_renderer(r);
    let out = out.map_err(js_err)?;
    let g = &out.gradients;
    let notice = out.notices.join("\n");
    let info = to_js(&Info {
        param: p.name(),
        unit: p.unit(),
        width: g.fpixels,
        height: g.spixels,
        geometry: super::Geometry::of(&prep),
        engine: out.engine.name(),
        notice: &notice,
        ms: js_sys::Date::now() - t0,
    })?;
    let tangent = js_sys::Float32Array::from(g.tangent_f32(0).as_ref());
    let image = js_sys::Float32Array::from(g.image.as_slice());
    js_sys::Reflect::set(&info, &"tangent".into(), &tangent)?;
    js_sys::Reflect::set(&info, &"image".into(), &image)?;
    Ok(info)
}
