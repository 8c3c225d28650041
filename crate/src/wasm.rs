//! Browser bindings: a flat wasm-bindgen API that `www/src/worker.ts` drives from a dedicated
//! module Worker (squoosh / wasm-bindgen-rayon pattern: the page never runs the kernel).
//!
//! State (uploaded files, the last prepared plan and image) lives in a thread-local of the
//! worker's own thread; rayon's pool threads only ever run `render_cpu`'s row loop.
//!
//! Progress and cancellation are two atomics in linear memory. In the threaded build the memory
//! is a SharedArrayBuffer, so the page reads progress and raises the cancel flag directly
//! (`cancel_flag_ptr`, `progress_ptr`) while the worker's thread is blocked in a render. In the
//! plain build the worker polls them between GPU awaits.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use wasm_bindgen::prelude::*;

#[cfg(feature = "parallel")]
pub use wasm_bindgen_rayon::init_thread_pool;

static CANCEL: AtomicBool = AtomicBool::new(false);
/// Progress of the current render in 1/65536 steps (0..=65536).
static PROGRESS: AtomicU32 = AtomicU32::new(0);

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(s: &str);
}

struct State {
    files: crate::files::MemFiles,
    prepared: Option<stub::Prepared>,
    image: Option<Vec<f32>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        files: Default::default(),
        prepared: None,
        image: None,
    });
}

fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// Install a panic hook that prints the panic message to the console (the worker turns the
/// following `unreachable` trap into an error for the page).
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| console_error(&format!("nanobragg panicked: {info}"))));
}

/// "parallel" or "plain", and whether the kernel was compiled with wasm SIMD.
#[wasm_bindgen]
pub fn build_info() -> String {
    let kind = if cfg!(feature = "parallel") { "parallel" } else { "plain" };
    let simd = if cfg!(target_feature = "simd128") { "simd128" } else { "scalar" };
    format!("{kind} {simd} {}", env!("CARGO_PKG_VERSION"))
}

/// Threads in the rayon pool (1 in the plain build).
#[wasm_bindgen]
pub fn threads() -> usize {
    if cfg!(feature = "parallel") {
        rayon::current_num_threads()
    } else {
        1
    }
}

/// The module's linear memory (a shared memory in the threaded build).
#[wasm_bindgen]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

#[wasm_bindgen]
pub fn cancel_flag_ptr() -> u32 {
    &CANCEL as *const AtomicBool as u32
}

#[wasm_bindgen]
pub fn progress_ptr() -> u32 {
    &PROGRESS as *const AtomicU32 as u32
}

#[wasm_bindgen]
pub fn set_cancel(on: bool) {
    CANCEL.store(on, Ordering::SeqCst);
}

/// Progress of the current render, 0..1.
#[wasm_bindgen]
pub fn progress() -> f32 {
    PROGRESS.load(Ordering::Relaxed) as f32 / 65536.0
}

fn report_progress(p: f32) {
    PROGRESS.store((p.clamp(0.0, 1.0) * 65536.0) as u32, Ordering::Relaxed);
}

/// Shell-like word split of a command line (quotes group words).
#[wasm_bindgen]
pub fn split_args(s: &str) -> Vec<String> {
    stub::split_args(s)
}

/// Provide an input file (HKL, matrix, source list, mask) under the name the flags use.
#[wasm_bindgen]
pub fn set_file(name: &str, bytes: Vec<u8>) {
    STATE.with(|st| {
        st.borrow_mut().files.0.insert(name.to_string(), bytes);
    });
}

#[wasm_bindgen]
pub fn clear_files() {
    STATE.with(|st| st.borrow_mut().files.0.clear());
}

/// Parse and resolve the flags into a plan; returns the detector geometry as JSON (see
/// `geometry_json`). The previous plan and image are kept when this fails.
#[wasm_bindgen]
pub fn prepare(args: Vec<String>) -> Result<String, JsError> {
    STATE.with(|st| {
        let mut st = st.borrow_mut();
        let prep = stub::prepare(&args, &st.files).map_err(js_err)?;
        let geo = geometry_json(&prep);
        st.prepared = Some(prep);
        st.image = None;
        Ok(geo)
    })
}

fn geometry_json(prep: &stub::Prepared) -> String {
    prep.geometry_json()
}

/// Render the prepared plan on the CPU (rayon over rows; threaded in the parallel build).
#[wasm_bindgen]
pub fn render_cpu(f64_precision: bool) -> Result<Vec<f32>, JsError> {
    CANCEL.store(false, Ordering::SeqCst);
    report_progress(0.0);
    let prep = STATE.with(|st| st.borrow().prepared.clone()).ok_or_else(|| js_err("no plan prepared"))?;
    let img = stub::render_cpu(&prep, f64_precision, &report_progress, &CANCEL).map_err(js_err)?;
    STATE.with(|st| st.borrow_mut().image = Some(img.clone()));
    Ok(img)
}

/// Open the WebGPU device (in this worker) and return the adapter's description.
#[wasm_bindgen]
pub async fn gpu_init() -> Result<String, JsError> {
    Err(js_err("GPU kernel not available in this build"))
}

/// Render the prepared plan with the WGSL kernel.
#[wasm_bindgen]
pub async fn render_gpu() -> Result<Vec<f32>, JsError> {
    Err(js_err("GPU kernel not available in this build"))
}

fn with_result<T>(f: impl FnOnce(&stub::Prepared, &[f32]) -> T) -> Result<T, JsError> {
    STATE.with(|st| {
        let st = st.borrow();
        match (&st.prepared, &st.image) {
            (Some(p), Some(i)) => Ok(f(p, i)),
            _ => Err(js_err("no image rendered yet")),
        }
    })
}

/// SMV noiseless image of the last render.
#[wasm_bindgen]
pub fn export_int_smv() -> Result<Vec<u8>, JsError> {
    with_result(stub::int_image_smv)
}

/// SMV Poisson-noise image of the last render (seed from `-seed`).
#[wasm_bindgen]
pub fn export_noise_smv() -> Result<Vec<u8>, JsError> {
    with_result(stub::noise_image_smv)
}

/// Raw little-endian f32 image of the last render (upstream `-floatfile` format).
#[wasm_bindgen]
pub fn export_float() -> Result<Vec<u8>, JsError> {
    with_result(|_, img| stub::float_image_bytes(img))
}

/// Temporary stand-in for `crate::api` (test pattern) until the core API lands.
mod stub {
    use std::sync::atomic::{AtomicBool, Ordering};
    #[derive(Clone)]
    pub struct Prepared {
        pub w: usize,
        pub h: usize,
    }
    impl Prepared {
        pub fn geometry_json(&self) -> String {
            format!(
                "{{\"width\":{},\"height\":{},\"pixel\":0.0001,\"pix0\":[0.1,{},{}],\"fdet\":[0,0,1],\"sdet\":[0,-1,0],\"odet\":[1,0,0],\"beam\":[1,0,0],\"lambda\":6.2e-10,\"a\":[1e-8,0,0],\"b\":[0,1e-8,0],\"c\":[0,0,1e-8],\"curved\":false}}",
                self.w, self.h, self.h as f64 * 0.00005, -(self.w as f64) * 0.00005
            )
        }
    }
    pub fn split_args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }
    pub fn prepare(args: &[String], _f: &crate::files::MemFiles) -> Result<Prepared, String> {
        let mut n = 1024;
        for (i, a) in args.iter().enumerate() {
            if a == "-detpixels" {
                n = args.get(i + 1).and_then(|v| v.parse().ok()).ok_or("-detpixels: bad value")?;
            } else if a.starts_with('-') && a.contains("bad") {
                return Err(format!("unknown flag {a}"));
            }
        }
        Ok(Prepared { w: n, h: n })
    }
    pub fn render_cpu(p: &Prepared, _f64: bool, progress: &(dyn Fn(f32) + Sync), cancel: &AtomicBool) -> Result<Vec<f32>, String> {
        use rayon::prelude::*;
        let mut img = vec![0f32; p.w * p.h];
        img.par_chunks_mut(p.w).enumerate().for_each(|(s, row)| {
            if cancel.load(Ordering::Relaxed) {
                return;
            }
            for (f, v) in row.iter_mut().enumerate() {
                let x = f as f32 - p.w as f32 / 2.0;
                let y = s as f32 - p.h as f32 / 2.0;
                let r = (x * x + y * y).sqrt();
                let mut acc = 0.0f32;
                for k in 0..50 {
                    acc += ((r + k as f32) * 0.1).sin().abs();
                }
                *v = acc * (1.0 + (x * 0.3).sin() * (y * 0.3).sin()).powi(8);
            }
            if s % 64 == 0 {
                progress(s as f32 / p.h as f32);
            }
        });
        if cancel.load(Ordering::Relaxed) {
            return Err("render cancelled".into());
        }
        progress(1.0);
        Ok(img)
    }
    pub fn int_image_smv(_p: &Prepared, img: &[f32]) -> Vec<u8> {
        let mut v = b"{\nHEADER_BYTES=512;\n}\x0c".to_vec();
        v.resize(512, b' ');
        v.extend(img.iter().flat_map(|x| (*x as u16).to_le_bytes()));
        v
    }
    pub fn noise_image_smv(p: &Prepared, img: &[f32]) -> Vec<u8> {
        int_image_smv(p, img)
    }
    pub fn float_image_bytes(img: &[f32]) -> Vec<u8> {
        img.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}
