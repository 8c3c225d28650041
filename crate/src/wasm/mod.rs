//! Browser bindings: a flat wasm-bindgen API that `www/src/worker.ts` drives from a dedicated
//! module Worker (squoosh / wasm-bindgen-rayon pattern: the page never runs the kernel).
//!
//! State (uploaded files, the last prepared plan and image) lives in a thread-local of the
//! worker's own thread; rayon's pool threads only run parallel loops over borrowed data (the
//! render's rows, the structure factors, the realistic chain's background, detector effects and
//! passes over its layers), never the state.
//!
//! Progress and cancellation are two atomics in linear memory. In the threaded build the memory
//! is a SharedArrayBuffer, so the page reads progress and raises the cancel flag directly
//! (`cancel_flag_ptr`, `progress_ptr`) while the worker's thread is blocked in a render. In the
//! plain build the worker polls them between GPU awaits.
//!
//! Structured values (geometry, summaries) are `serde` structs turned into plain JS objects by
//! `serde-wasm-bindgen`; their TypeScript shapes are declared next to them (`typescript_custom_section`)
//! so that the generated `nanobragg.d.ts` types the whole surface.
//!
//! Sections: module info · progress and cancel · files and prepare · render · export ·
//! structured values (serde) · reflection prediction. New exports go in the section they
//! belong to.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use crate::api::{self, Precision, Prepared};
use serde::Serialize;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use wasm_bindgen::prelude::*;

mod fit; // the fit to an image (api::fit) and the fitted values as flags
mod gradients; // derivative images (api::Renderer::render_gradients_async) for the page's ∂I/∂ view
mod measured; // measured images read for the overlay (io::measured)
mod realistic; // the realistic-image chain: model → structure factors, background, detector

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
    prepared: Option<Prepared>,
    image: Option<Vec<f32>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        files: Default::default(),
        prepared: None,
        image: None,
    });
}

/// An error as the page receives it: a JS `Error` whose message is the crate's, and for the
/// crate's own errors their structure as properties (`crate::error::Error`'s serde form: `kind`
/// "usage", "missing_input", "input", "geometry", "output", "cancelled", "gpu", "limit"; `flag`,
/// `file`, `line`, `key`, null when absent), so that the page never parses the text.
fn js_err(e: impl IntoJsErr) -> JsValue {
    e.into_js()
}

trait IntoJsErr {
    fn into_js(self) -> JsValue;
}

fn plain_error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}

impl IntoJsErr for crate::error::Error {
    fn into_js(self) -> JsValue {
        let err = plain_error(&self.message);
        // {kind, message, flag, field, file, line, key}: the crate's serde contract
        if let Ok(fields) = to_js(&self) {
            if let (Some(target), Some(src)) = (
                err.dyn_ref::<js_sys::Object>(),
                fields.dyn_ref::<js_sys::Object>(),
            ) {
                js_sys::Object::assign(target, src);
            }
        }
        err
    }
}

impl IntoJsErr for &str {
    fn into_js(self) -> JsValue {
        plain_error(self)
    }
}

impl IntoJsErr for String {
    fn into_js(self) -> JsValue {
        plain_error(&self)
    }
}

impl IntoJsErr for serde_wasm_bindgen::Error {
    fn into_js(self) -> JsValue {
        plain_error(&self.to_string())
    }
}

fn to_js<T: Serialize>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_err)
}

// ---- module info ---------------------------------------------------------------------------

thread_local! {
    /// The message of the last panic on this thread (`take_panic`).
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Install a panic hook that prints the panic message to the console and keeps it for
/// `take_panic` (the worker turns the following `unreachable` trap into an error for the page
/// that names the file it was reading).
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("nanobragg panicked: {info}");
        console_error(&msg);
        LAST_PANIC.with(|p| *p.borrow_mut() = msg);
    }));
}

/// The message of the last panic (empty when none), taken: after a trap (`RuntimeError:
/// unreachable`) the worker reports it and is replaced, since a module that trapped may hold
/// half-updated state and keeps the memory it grew. An allocation failure aborts without a
/// panic: then this is empty and the trap itself is the report.
#[wasm_bindgen]
pub fn take_panic() -> String {
    LAST_PANIC.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// "parallel" or "plain", and whether the kernel was compiled with wasm SIMD.
#[wasm_bindgen]
pub fn build_info() -> String {
    let kind = if cfg!(feature = "parallel") {
        "parallel"
    } else {
        "plain"
    };
    let simd = if cfg!(target_feature = "simd128") {
        "simd128"
    } else {
        "scalar"
    };
    format!("{kind} {simd} {}", env!("CARGO_PKG_VERSION"))
}

/// The f32 row kernel's term loops for the renders that follow: the hand-written simd128 lanes
/// (`true`, the default) or the portable scalar loops of the same binary (`false`), the same
/// bits (`cpu::row32::set_hand_lanes`; the browser's guard of the hand lanes). Returns whether
/// this build has hand lanes (a simd128 build).
#[wasm_bindgen]
pub fn set_hand_lanes(on: bool) -> bool {
    crate::cpu::row32::set_hand_lanes(on)
}

/// The f32 row kernel's blocks rendered in the hand simd128 lanes since the last call
/// (`cpu::row32::hand_lane_blocks`): the browser's guard checks that they ran.
#[wasm_bindgen]
pub fn hand_lane_blocks() -> u32 {
    crate::cpu::row32::hand_lane_blocks()
}

/// Allows (the default) or forbids the row kernel's hybrid Miller indices for the renders that
/// follow (`cpu::row32::set_hybrid_indices`): the f64 indices against the hybrid in one binary
/// (the hand lanes' guard, benchmarks). Returns true (the switch exists on wasm32).
#[wasm_bindgen]
pub fn set_hybrid_indices(on: bool) -> bool {
    crate::cpu::row32::set_hybrid_indices(on)
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
#[wasm_bindgen(unchecked_return_type = "WebAssembly.Memory")]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// Shell-like word split of a command line: whitespace separates words, '…' and "…" group
/// (quotes may start inside a word: `a"b c"` is one word `ab c`). The page uses this one.
#[wasm_bindgen]
pub fn split_args(s: &str) -> Vec<String> {
    api::split_args(s)
}

// ---- progress and cancel ---------------------------------------------------------------------

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

// ---- files and prepare -------------------------------------------------------------------------

/// Provide an input file (HKL, matrix, source list, mask) under the name the flags use.
#[wasm_bindgen]
pub fn set_file(name: &str, bytes: Vec<u8>) {
    STATE.with(|st| {
        st.borrow_mut().files.0.insert(name.to_string(), bytes);
    });
    FILES_GEN.with(|g| g.set(g.get() + 1));
}

#[wasm_bindgen]
pub fn clear_files() {
    STATE.with(|st| st.borrow_mut().files.0.clear());
    FILES_GEN.with(|g| g.set(g.get() + 1));
}

/// Parse and resolve the flags into a plan; returns the resolved geometry and the plan's size
/// (`PrepareInfo`). The previous plan and image are kept when this fails.
#[wasm_bindgen(unchecked_return_type = "PrepareInfo")]
pub fn prepare(args: Vec<String>) -> Result<JsValue, JsValue> {
    let args = with_seed(args);
    STATE.with(|st| {
        let mut st = st.borrow_mut();
        let prep = api::prepare(&args, &st.files).map_err(js_err)?;
        api::check_pixel_budget(&prep, api::BROWSER_MAX_PIXELS).map_err(js_err)?;
        let info = PrepareInfo::of(&prep);
        st.prepared = Some(prep);
        st.image = None;
        to_js(&info)
    })
}

/// The words with a `-seed` when they have none. Upstream seeds the noise from the clock when
/// -seed is absent; std's clock panics on wasm32-unknown-unknown, so pass the same default
/// (seconds since the epoch) explicitly. Put first, so that a message about a missing value at
/// the end still names the user's flag.
fn with_seed(mut args: Vec<String>) -> Vec<String> {
    if !args.iter().any(|a| a == "-seed") {
        let now = (js_sys::Date::now() / 1000.0) as i64;
        args.splice(0..0, ["-seed".to_string(), now.to_string()]);
    }
    args
}

thread_local! {
    /// Changes of the input files (`set_file`, `clear_files`): a kept query plan is stale after one.
    static FILES_GEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The plan `pixel_geometry` answers from: its words, the files' generation, the plan. Kept
    /// apart from the rendered plan, so that a readout never replaces what the downloads export.
    static QUERY: RefCell<Option<(Vec<String>, u64, Prepared)>> = const { RefCell::new(None) };
}

/// The detector's geometry at points `[f0, s0, f1, s1, …]` (continuous pixel coordinates, pixel
/// centres at index + 0.5) for the crystal and detector of `args` (`-pdb NAME`: the cell of the
/// model the realistic chain read): `crate::predict::pixel_geometry`, one record per point
/// (`PixelGeometry`: lab position, d, 2θ, fractional and nearest hkl). The page's cursor readout.
/// The words are resolved once and kept until other words or other files come.
#[wasm_bindgen(unchecked_return_type = "PixelGeometry[]")]
pub fn pixel_geometry(args: Vec<String>, points: Vec<f64>) -> Result<JsValue, JsValue> {
    let mut words = realistic::with_model_cell(args);
    if !words.iter().any(|a| a == "-seed") {
        // as `prepare`: a `-misset random` needs a seed; geometry does not depend on it otherwise
        words.splice(0..0, ["-seed".to_string(), "1".to_string()]);
    }
    let gen = FILES_GEN.with(|g| g.get());
    QUERY.with(|q| {
        let mut q = q.borrow_mut();
        if !q.as_ref().is_some_and(|(w, g, _)| *w == words && *g == gen) {
            let prep = STATE
                .with(|st| api::prepare(&words, &st.borrow().files))
                .map_err(js_err)?;
            *q = Some((words, gen, prep));
        }
        let prep = &q.as_ref().expect("kept").2;
        let pts: Vec<[f64; 2]> = points.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        let (at, _) = crate::predict::pixel_geometry(&prep.setup, &pts).map_err(js_err)?;
        to_js(&at)
    })
}

/// Reflections read from the `-hkl` file of the prepared plan, their index ranges and their
/// resolution range (null when the structure factors do not come from an `h k l F` file).
#[wasm_bindgen(unchecked_return_type = "HklSummary | null")]
pub fn hkl_summary() -> Result<JsValue, JsValue> {
    STATE.with(|st| {
        let st = st.borrow();
        let Some(prep) = st.prepared.as_ref() else {
            return Err(js_err("no plan prepared"));
        };
        match HklSummary::of(prep, &st.files)? {
            Some(s) => to_js(&s),
            None => Ok(JsValue::NULL),
        }
    })
}

// ---- render ------------------------------------------------------------------------------------

thread_local! {
    /// The library's renderer (`api::Renderer`: the backend policy, and the WGSL renderer with
    /// its device once opened). It lives in the worker's thread (wgpu's browser types are !Send
    /// under atomics) and is taken out of this cell across an await.
    static RENDERER: RefCell<Option<api::Renderer>> = const { RefCell::new(None) };
    /// Where the last render ran ("cpu" or "gpu") and its notices (GPU fallback), one per line.
    static LAST: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
}

fn take_renderer() -> api::Renderer {
    RENDERER
        .with(|r| r.borrow_mut().take())
        .unwrap_or_else(|| api::Renderer::new(None))
}

fn put_renderer(r: api::Renderer) {
    RENDERER.with(|c| *c.borrow_mut() = Some(r));
}

/// Take the prepared plan out of the state for a render (reset cancel and progress first).
fn start_render() -> Result<Prepared, JsValue> {
    CANCEL.store(false, Ordering::SeqCst);
    report_progress(0.0);
    STATE
        .with(|st| st.borrow_mut().prepared.take())
        .ok_or_else(|| js_err("no plan prepared"))
}

/// Put the plan and the renderer back; keep the image and say where it ran.
fn finish_render(
    prep: Prepared,
    r: api::Renderer,
    out: crate::error::Result<api::Rendered>,
) -> Result<Vec<f32>, JsValue> {
    put_renderer(r);
    STATE.with(|st| st.borrow_mut().prepared = Some(prep));
    let out = out.map_err(js_err)?;
    LAST.with(|l| *l.borrow_mut() = (out.engine.name().to_string(), out.notices.join("\n")));
    STATE.with(|st| st.borrow_mut().image = Some(out.image.clone()));
    Ok(out.image)
}

/// Render the prepared plan through `api::Renderer`.
async fn render_with(backend: api::Backend, precision: Precision) -> Result<Vec<f32>, JsValue> {
    let prep = start_render()?;
    let mut r = take_renderer();
    let progress = |p: f32| report_progress(p);
    let out = r
        .render_async(prep.plan(), backend, precision, &progress, &CANCEL)
        .await;
    finish_render(prep, r, out)
}

/// Render the prepared plan where the library's backend policy puts it (`api::choose_backend`):
/// `backend` is "cpu", "gpu" or "auto" (auto: f64 on the CPU, the only bit-exact engine; f32 on
/// the GPU when it opens and is not a software renderer, else the CPU). `last_engine()` and `last_notice()` say what happened.
#[wasm_bindgen]
pub async fn render(backend: String, f64_precision: bool) -> Result<Vec<f32>, JsValue> {
    render_with(parse_backend(&backend), precision_of(f64_precision)).await
}

fn parse_backend(backend: &str) -> api::Backend {
    match backend {
        "cpu" => api::Backend::Cpu,
        "gpu" | "webgpu" => api::Backend::Gpu,
        _ => api::Backend::Auto,
    }
}

fn precision_of(f64_precision: bool) -> Precision {
    if f64_precision {
        Precision::F64
    } else {
        Precision::F32
    }
}

/// "gpu" or "cpu": where `render` will run with these choices, by the library's backend policy
/// (`api::choose_backend`; auto passes a software adapter over), given whether the WebGPU
/// device opened (`gpu_open`): the worker's
/// time estimate before a render uses it.
#[wasm_bindgen]
pub fn likely_engine(backend: &str, f64_precision: bool, gpu_open: bool) -> String {
    let c = api::choose_backend(parse_backend(backend), precision_of(f64_precision));
    // auto passes a software adapter over (api::Renderer::use_gpu)
    let software = RENDERER.with(|r| {
        r.borrow()
            .as_ref()
            .is_some_and(|r| r.gpu_software().is_some())
    });
    let gpu =
        matches!(c.engine, api::Engine::Gpu) && (!c.fallback_to_cpu || (gpu_open && !software));
    if gpu { "gpu" } else { "cpu" }.to_string()
}

/// "cpu" or "gpu": where the last render ran.
#[wasm_bindgen]
pub fn last_engine() -> String {
    LAST.with(|l| l.borrow().0.clone())
}

/// Why the last render did not run where asked (empty when it did).
#[wasm_bindgen]
pub fn last_notice() -> String {
    LAST.with(|l| l.borrow().1.clone())
}

/// The prepared plan's cost (`api::estimate_cost`) on `threads` CPU threads: pixels, terms,
/// memory and rough CPU seconds, for a warning before a long render.
#[wasm_bindgen]
pub fn estimate_cost(threads: usize) -> Result<api::Cost, JsValue> {
    STATE.with(|st| match &st.borrow().prepared {
        Some(p) => Ok(api::estimate_cost(p, threads)),
        None => Err(js_err("no plan prepared")),
    })
}

/// Render the prepared plan on the CPU (rayon over rows; threaded in the parallel build).
#[wasm_bindgen]
pub fn render_cpu(f64_precision: bool) -> Result<Vec<f32>, JsValue> {
    let precision = if f64_precision {
        Precision::F64
    } else {
        Precision::F32
    };
    let prep = start_render()?;
    let mut r = take_renderer();
    let out = r.render_on_cpu(prep.plan(), precision, &report_progress, &CANCEL);
    finish_render(prep, r, out)
}

/// Open the WebGPU device (in this worker) and return the adapter's description.
#[wasm_bindgen]
pub async fn gpu_init() -> Result<String, JsValue> {
    let mut r = take_renderer();
    let out = r.init_gpu().await;
    put_renderer(r);
    out.map_err(js_err)
}

/// Render the prepared plan with the WGSL kernel (no fallback).
#[wasm_bindgen]
pub async fn render_gpu() -> Result<Vec<f32>, JsValue> {
    render_with(api::Backend::Gpu, Precision::F32).await
}

// ---- export --------------------------------------------------------------------------------------

fn with_result<T>(f: impl FnOnce(&Prepared, &[f32]) -> T) -> Result<T, JsValue> {
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
pub fn export_int_smv() -> Result<Vec<u8>, JsValue> {
    with_result(api::int_image_smv)?.map_err(js_err)
}

/// SMV Poisson-noise image of the last render (seed from `-seed`).
#[wasm_bindgen]
pub fn export_noise_smv() -> Result<Vec<u8>, JsValue> {
    with_result(api::noise_image_smv)?.map_err(js_err)
}

/// Raw little-endian f32 image of the last render (upstream `-floatfile` format).
#[wasm_bindgen]
pub fn export_float() -> Result<Vec<u8>, JsValue> {
    with_result(|_, img| api::float_image_bytes(img))
}

// ---- structured values (serde) ---------------------------------------------------------------------

#[wasm_bindgen(typescript_custom_section)]
const TS_STRUCTS: &str = r#"
/** Lab-frame vector (metres unless stated). */
export type V3 = [number, number, number];

/** Resolved detector and crystal geometry of a prepared plan (SI units), for the page's
 * overlays and cursor readout. Pixel coordinates are continuous: pixel index i spans [i, i+1),
 * its centre is at i + 0.5. */
export interface Geometry {
  width: number;
  height: number;
  /** Pixel pitch (m). */
  pixel: number;
  /** Crystal to the outer corner of pixel (0,0) (m), and the detector's unit axes. */
  pix0: V3;
  fdet: V3;
  sdet: V3;
  odet: V3;
  /** Beam propagation direction of the first source (unit). */
  beam: V3;
  /** Wavelength of the first source (m). */
  lambda: number;
  /** Real-space cell vectors of the first orientation (m). */
  a: V3;
  b: V3;
  c: V3;
  curved: boolean;
  /** Sample to beam spot along the beam (m). */
  distance: number;
  /** The spindle (φ) axis (unit): the convention's, or `-spindle_axis`. */
  spindle: V3;
  /** The misset angles (degrees, x y z) that `-misset random` drew, as `-misset` takes them;
   * null when the orientation was not random. */
  randomMisset: V3 | null;
  /** Lab positions (m) of sensor-surface points computed by the kernel's own pixel-position
   * function (tilts, two-theta and the curved detector included), on a grid of continuous
   * pixel coordinates `f[i]`, `s[j]`; `pos` holds x,y,z of node (i, j) at 3*(j*f.length + i);
   * `twoTheta` (degrees) and `d` (Å) at the same nodes (index j*f.length + i) come from
   * `predict::pixel_geometry` (empty when the plan has no orientation). */
  grid: { f: number[]; s: number[]; pos: number[]; twoTheta: number[]; d: number[] };
  /** Where the direct beam meets the detector (pixels, may lie outside it), null when it misses
   * (`crate::predict::pixel_geometry`). */
  beamCentre: [number, number] | null;
}

/** The detector at a point (`crate::predict::PixelHkl`): fractional and nearest Miller indices
 * (first orientation, nominal beam), scattering vector (1/Å), d (Å; Infinity at the beam), 2θ
 * (degrees), lab position (m). */
export interface PixelGeometry {
  hkl: V3;
  nearest: [number, number, number];
  q: V3;
  d: number;
  two_theta: number;
  position: V3;
}

/** What `prepare` returns. */
export interface PrepareInfo {
  geometry: Geometry;
  /** Pixels to render times inner-loop terms per pixel: the render's cost in kernel terms. */
  work: number;
  /** Informational warnings of the resolution step. */
  warnings: string[];
}

/** Reflections read from the `-hkl` file. `dMin`/`dMax` in Å. */
export interface HklSummary {
  file: string;
  reflections: number;
  h: [number, number];
  k: [number, number];
  l: [number, number];
  dMin: number;
  dMax: number;
}
"#;

#[derive(Serialize)]
struct Grid {
    f: Vec<f64>,
    s: Vec<f64>,
    pos: Vec<f64>,
    /// 2θ (degrees) at each node, from `predict::pixel_geometry` (the rings are its contours).
    #[serde(rename = "twoTheta")]
    two_theta: Vec<f64>,
    /// Resolution (Å) at each node (the rings are its contours; infinite at the beam).
    d: Vec<f64>,
}

#[derive(Serialize)]
struct Geometry {
    width: usize,
    height: usize,
    pixel: f64,
    pix0: [f64; 3],
    fdet: [f64; 3],
    sdet: [f64; 3],
    odet: [f64; 3],
    beam: [f64; 3],
    lambda: f64,
    a: [f64; 3],
    b: [f64; 3],
    c: [f64; 3],
    curved: bool,
    distance: f64,
    spindle: [f64; 3],
    #[serde(rename = "randomMisset")]
    random_misset: Option<[f64; 3]>,
    grid: Grid,
    #[serde(rename = "beamCentre")]
    beam_centre: Option<[f64; 2]>,
}

/// Cells per detector axis of the position grid (the page interpolates bilinearly inside a
/// cell: exact for a flat detector, far below a pixel for the curved one).
const GRID_CELLS: usize = 48;

/// Node coordinates (continuous pixel units, sub-pixel centres) along an axis of `n` pixels.
fn grid_nodes(n: usize, oversample: usize) -> Vec<(usize, f64)> {
    let subs = n * oversample;
    let cells = GRID_CELLS.min(subs.saturating_sub(1)).max(1);
    let mut out: Vec<(usize, f64)> = (0..=cells)
        .map(|i| (i * (subs - 1)) / cells)
        .map(|k| (k, (k as f64 + 0.5) / oversample as f64))
        .collect();
    out.dedup_by_key(|n| n.0);
    out
}

impl Geometry {
    fn of(prep: &Prepared) -> Self {
        let p = prep.plan();
        let (beam, lambda) = p
            .sources
            .first()
            .map(|s| (s.incident, s.lambda))
            .unwrap_or((p.beam, 1e-10));
        let o = p
            .orientations
            .first()
            .copied()
            .unwrap_or(crate::plan::Orientation {
                a: [0.0; 3],
                b: [0.0; 3],
                c: [0.0; 3],
            });
        let os = p.oversample.max(1) as usize;
        let fnodes = grid_nodes(p.fpixels.max(1), os);
        let snodes = grid_nodes(p.spixels.max(1), os);
        let mut pos = Vec::with_capacity(fnodes.len() * snodes.len() * 3);
        let mut nodes = Vec::with_capacity(fnodes.len() * snodes.len());
        for &(ks, s) in &snodes {
            for &(kf, f) in &fnodes {
                pos.extend_from_slice(&p.subpixel_position(kf, ks, 0.0));
                nodes.push([f, s]);
            }
        }
        // a plan without an orientation has no readout: no rings, no beam centre
        let (at, beam_centre) =
            crate::predict::pixel_geometry(&prep.setup, &nodes).unwrap_or((Vec::new(), None));
        let two_theta = at.iter().map(|x| x.two_theta).collect();
        let d = at.iter().map(|x| x.d).collect();
        Geometry {
            width: p.fpixels,
            height: p.spixels,
            pixel: p.pixel,
            pix0: p.pix0,
            fdet: p.fdet,
            sdet: p.sdet,
            odet: p.odet,
            beam,
            lambda,
            a: o.a,
            b: o.b,
            c: o.c,
            curved: p.curved,
            distance: p.distance,
            spindle: prep.setup.det.spindle,
            random_misset: prep.setup.crystal.random_misset,
            grid: Grid {
                f: fnodes.iter().map(|n| n.1).collect(),
                s: snodes.iter().map(|n| n.1).collect(),
                pos,
                two_theta,
                d,
            },
            beam_centre,
        }
    }
}

#[derive(Serialize)]
struct PrepareInfo {
    geometry: Geometry,
    work: f64,
    warnings: Vec<String>,
}

impl PrepareInfo {
    fn of(prep: &Prepared) -> Self {
        let p = prep.plan();
        let pixels = (p.roi.xmax.saturating_sub(p.roi.xmin) + 1)
            .min(p.fpixels)
            .saturating_mul((p.roi.ymax.saturating_sub(p.roi.ymin) + 1).min(p.spixels));
        PrepareInfo {
            geometry: Geometry::of(prep),
            work: pixels as f64 * p.terms_per_pixel() as f64,
            warnings: prep.setup.warnings.clone(),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HklSummary {
    file: String,
    reflections: usize,
    h: [i32; 2],
    k: [i32; 2],
    l: [i32; 2],
    d_min: f64,
    d_max: f64,
}

impl HklSummary {
    /// Re-reads the plan's `-hkl` file with NaN as the default F, so that the table's read
    /// entries are the non-NaN ones, and takes their resolution from the static reciprocal cell.
    fn of(prep: &Prepared, files: &crate::files::MemFiles) -> Result<Option<Self>, JsValue> {
        let Some(name) = prep.options().hkl.clone() else {
            return Ok(None);
        };
        let Some(bytes) = files.0.get(&name) else {
            return Ok(None);
        };
        let g = crate::io::hkl::parse_hkl(&name, bytes, f64::NAN).map_err(js_err)?;
        let p = prep.plan();
        let (kd, ld) = ((g.k_range() + 1) as usize, (g.l_range() + 1) as usize);
        let (mut q_min, mut q_max) = (f64::INFINITY, 0.0f64);
        for ih in 0..g.h_range() as usize {
            for ik in 0..g.k_range() as usize {
                for il in 0..g.l_range() as usize {
                    if g.data[(ih * kd + ik) * ld + il].is_nan() {
                        continue;
                    }
                    let (h, k, l) = (
                        (ih as i32 + g.h_min) as f64,
                        (ik as i32 + g.k_min) as f64,
                        (il as i32 + g.l_min) as f64,
                    );
                    let mut q = [0.0; 3];
                    for c in 0..3 {
                        q[c] = h * p.a_star[c] + k * p.b_star[c] + l * p.c_star[c];
                    }
                    let q = crate::vec3::mag(q);
                    if q > 0.0 {
                        q_min = q_min.min(q);
                        q_max = q_max.max(q);
                    }
                }
            }
        }
        Ok(Some(HklSummary {
            file: name,
            reflections: g.hkls,
            h: [g.h_min, g.h_max],
            k: [g.k_min, g.k_max],
            l: [g.l_min, g.l_max],
            d_min: if q_max > 0.0 {
                1.0 / q_max
            } else {
                f64::INFINITY
            },
            d_max: if q_min.is_finite() {
                1.0 / q_min
            } else {
                f64::INFINITY
            },
        }))
    }
}

// ---- reflection prediction ------------------------------------------------------------------------

/// Reflection prediction for the prepared plan (`crate::predict`), as a plain object
/// `{ wavelength, s0, a_star, …, reflections: [{ h, k, l, r, excitation_error, in_condition,
/// fast, slow, d, two_theta, f, intensity, … }] }`: fast/slow in pixels with pixel centres at
/// index + 0.5, `null` where the ray misses the detector. `max_excitation_error` (1/Å) lists
/// only the points near the Ewald sphere. With `columns` the reflections come as typed-array
/// bytes instead (`columns: { count, hkl, r, …, flags }`, `Prediction::columns`): 10⁵ points
/// without 10⁵ objects. `on_image`: what is on the image only (`PredictOptions::on_image`: the
/// spots of a still, the crossings of an oscillation; any cell size).
#[wasm_bindgen]
pub fn predict(
    max_excitation_error: Option<f64>,
    columns: bool,
    on_image: Option<bool>,
) -> Result<JsValue, JsValue> {
    STATE.with(|st| {
        let st = st.borrow();
        let prep = st
            .prepared
            .as_ref()
            .ok_or_else(|| js_err("no plan prepared"))?;
        let opts = crate::predict::PredictOptions {
            max_excitation_error,
            on_image: on_image.unwrap_or(false),
            ..Default::default()
        };
        let pred = crate::predict::predict(&prep.setup, &opts).map_err(js_err)?;
        // None as null, maps as objects, and the columns' bytes as Uint8Arrays
        let ser =
            serde_wasm_bindgen::Serializer::json_compatible().serialize_bytes_as_arrays(false);
        if columns {
            pred.into_columnar().serialize(&ser).map_err(js_err)
        } else {
            pred.serialize(&ser).map_err(js_err)
        }
    })
}
