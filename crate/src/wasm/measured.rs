//! Binding of the measured-image reader (`io::measured`): the page's measured-image worker
//! (`www/src/measured/worker.ts`) hands it a dropped file (and, for an EIGER master, its data
//! files) and gets back frame 0 as f32 for display, the file's geometry as the simulation's
//! flags and what the file did not say.

use super::{js_err, to_js};
use crate::io::measured::read_measured;
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_MEASURED: &str = r#"
/** A measured image read by `measured_read`. `pixels`: frame 0 as f32, fast index first
 * (flagged pixels — gaps, bad pixels: the all-ones value of an unsigned type, negative
 * integers — are −1, `untrusted` of them). `mask`: the pixels a fit or a spot search may use
 * (1 = use, 0 = flagged; the crate's `Pixels::mask`), null when none is flagged. `words`: the
 * simulation's flags for the file's geometry ([flag, value]); `missing`: what the file did not
 * say; `notes`: remarks. */
export interface MeasuredInfo {
  name: string;
  format: string;
  width: number;
  height: number;
  frames: number;
  dtype: string;
  untrusted: number;
  max: number;
  words: [string, string][];
  missing: string[];
  notes: string[];
  pixels: Float32Array;
  mask: Uint8Array | null;
}
"#;

#[derive(Serialize)]
struct Info {
    name: String,
    format: &'static str,
    width: usize,
    height: usize,
    frames: usize,
    dtype: &'static str,
    untrusted: usize,
    max: f32,
    words: Vec<(String, String)>,
    missing: Vec<String>,
    notes: Vec<String>,
}

/// Reads a measured image (SMV, miniCBF, NeXus/HDF5). `others` are files given with it, named
/// by `other_names` (an EIGER master's data files). Errors name the file.
#[wasm_bindgen(unchecked_return_type = "MeasuredInfo")]
pub fn measured_read(
    name: &str,
    bytes: Vec<u8>,
    other_names: Vec<String>,
    others: Vec<js_sys::Uint8Array>,
) -> Result<JsValue, JsValue> {
    let data: Vec<Vec<u8>> = others.iter().map(|a| a.to_vec()).collect();
    let given: Vec<(&str, &[u8])> = other_names
        .iter()
        .map(String::as_str)
        .zip(data.iter().map(Vec::as_slice))
        .collect();
    let img = read_measured(name, &bytes, &given).map_err(js_err)?;
    drop(bytes);
    let (pixels, untrusted) = img.pixels.to_display();
    let mask: JsValue = match img.pixels.mask() {
        Some(m) => {
            let bytes: Vec<u8> = m.iter().map(|&u| u as u8).collect();
            js_sys::Uint8Array::from(bytes.as_slice()).into()
        }
        None => JsValue::NULL,
    };
    let max = pixels.iter().copied().fold(0.0f32, f32::max);
    let (words, missing) = img.geometry.words(img.width, img.height);
    let info = Info {
        name: name.to_string(),
        format: img.format,
        width: img.width,
        height: img.height,
        frames: img.frames,
        dtype: img.pixels.dtype(),
        untrusted,
        max,
        words,
        missing,
        notes: img.geometry.notes.clone(),
    };
    let obj = to_js(&info)?;
    let arr = js_sys::Float32Array::from(pixels.as_slice());
    js_sys::Reflect::set(&obj, &JsValue::from_str("pixels"), &arr)?;
    js_sys::Reflect::set(&obj, &JsValue::from_str("mask"), &mask)?;
    Ok(obj)
}
