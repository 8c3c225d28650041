//! `nanobragg._nanobragg`: the compiled half of the Python package (`python/nanobragg/`).
//!
//! A face like the CLI and the wasm bindings: it turns Python values into the crate's inputs,
//! calls the crate's library API (`session`, `api`, `predict`, `io`, `sf`, `noisify`, `nonbragg`,
//! `realistic`) and hands images back to NumPy without a copy. No physics lives here. Long work
//! runs with the GIL released, on a helper thread, while the calling thread watches for Ctrl-C
//! and sets the kernels' cancel flag.

use nanobragg::error::Error as NbError;
use nanobragg::session::{self, CachedFiles, Session};
use nanobragg::{api, io, noisify, nonbragg, predict, realistic, sf};
use numpy::ndarray::Array3;
use numpy::{
    IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadwriteArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

mod errors;
use errors::to_py;

/// Runs `f` with the GIL released on a helper thread; the calling thread checks for signals
/// (Ctrl-C) every 50 ms and, on one, sets the cancel flag that the kernels poll, waits for the
/// helper to stop and raises the signal's exception.
fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&AtomicBool) -> Result<T, NbError> + Send,
) -> PyResult<T> {
    let cancel = AtomicBool::new(false);
    let mut signal: Option<PyErr> = None;
    let out = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel::<()>();
            let cancel = &cancel;
            let h = s.spawn(move || {
                let r = f(cancel);
                let _ = tx.send(());
                r
            });
            loop {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if signal.is_none() {
                            if let Err(e) = Python::attach(|py| py.check_signals()) {
                                signal = Some(e);
                                cancel.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            }
            h.join()
        })
    });
    if let Some(e) = signal {
        return Err(e);
    }
    finished(py, out)
}

/// The result of a helper's `f`: its error as Python's, a panic as a `RuntimeError` that says
/// so with the panic's message (never `KeyboardInterrupt`: a script that catches Ctrl-C would
/// take it for the user quitting).
fn finished<T>(py: Python<'_>, out: std::thread::Result<Result<T, NbError>>) -> PyResult<T> {
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(py, e)),
        Err(payload) => Err(PyRuntimeError::new_err(panic_message(payload.as_ref()))),
    }
}

/// What a helper thread's panic says to Python: its message (a `&str` or `String` payload).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    format!(
        "nanobragg: internal error, a helper thread panicked: {what} (please report the inputs)"
    )
}

/// [`interruptible`] when `long`, else `f` with the GIL released and no watcher (a call of a
/// few milliseconds: a Ctrl-C raises when it returns, and a helper thread's start would cost
/// as much as a small image's work). `f` runs on a worker of rayon's global pool (the calling
/// thread waits): its parallel loops start from inside the pool, and its outputs come from
/// that worker's allocator arena, whose memory the next call reuses (the calling thread's own
/// arena returns freed images to the system, and every call would fault fresh pages in).
fn interruptible_if<T: Send>(
    py: Python<'_>,
    long: bool,
    f: impl FnOnce(&AtomicBool) -> Result<T, NbError> + Send,
) -> PyResult<T> {
    if long {
        return interruptible(py, f);
    }
    let out = py.detach(|| {
        let cancel = AtomicBool::new(false);
        // `rayon::scope` from outside the pool runs its closure on a worker
        rayon::scope(|_| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&cancel))))
    });
    finished(py, out)
}

fn noop(_: f32) {}

/// Parameter names (`gradients=`) and offsets by name, checked by the crate (an unknown name
/// names `gradients` and the nearest parameter).
fn params_and_offsets(
    py: Python<'_>,
    names: &[String],
    offsets: &[(String, f64)],
) -> PyResult<(Vec<api::Param>, Vec<api::Offset>)> {
    let params = if names.is_empty() {
        Vec::new()
    } else {
        api::parse_params(&names.join(","), "gradients").map_err(|e| to_py(py, e))?
    };
    let offs = offsets
        .iter()
        .map(|(n, v)| {
            Ok((
                api::Param::parse(n, "offsets").map_err(|e| to_py(py, e))?,
                *v,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((params, offs))
}

/// What `Session.fit` returns: offsets, cost history, iterations, cycles, the verdict
/// (converged, why not, spots checked, spots found), pixels, the model image at the fit.
type FitOut<'py> = (
    Bound<'py, numpy::PyArray1<f64>>,
    Vec<f64>,
    usize,
    usize,
    FitVerdict,
    usize,
    Bound<'py, PyArray2<f64>>,
    Vec<String>,
);

/// The crate's decision on a fit: converged, verdict, spots checked, spots found, correlation
/// on the spot pixels, the noise's ceiling of it, spots the centroid stage used.
type FitVerdict = (bool, String, usize, usize, f64, f64, usize);

/// a, b, c (Å), α, β, γ (degrees).
type Cell = (f64, f64, f64, f64, f64, f64);

/// An f64 image (slow, fast), a second array, the engine ("cpu" or "gpu") and the notices.
type WithEngine<'py, T> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, T>,
    String,
    Vec<String>,
);

/// noisify's outputs: noiseless ADU, noisy ADU (or none), SMV header bytes, log lines.
type Noisified<'py> = (
    Bound<'py, PyArray2<u32>>,
    Option<Bound<'py, PyArray2<u32>>>,
    Bound<'py, PyBytes>,
    Vec<String>,
);

/// A resolved configuration with a warm renderer (`nanobragg.Simulator` wraps it).
#[pyclass(name = "Session", module = "nanobragg._nanobragg", frozen)]
struct PySession {
    inner: Mutex<Session>,
    /// Seconds the last `render` spent in the crate's `Session::render` (f64 bits), for the
    /// benchmark's measure of the binding's own cost per call.
    last_render_s: AtomicU64,
    fpixels: usize,
    spixels: usize,
    /// A pool of the words' `-threads` threads for the dataset tool's noise pass
    /// (`render_counts`), built at its first image (None: rayon's global pool).
    pool: std::sync::OnceLock<Option<rayon::ThreadPool>>,
}

impl PySession {
    fn lock(&self) -> std::sync::MutexGuard<'_, Session> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A (slow, fast) map of this detector (`name`: weights, target, mask; `kind`: "array",
    /// "bool array") as a fast-major vector: an error naming `name` on another shape.
    fn per_pixel<T: numpy::Element + Copy>(
        &self,
        py: Python<'_>,
        name: &str,
        kind: &str,
        a: &PyReadonlyArray2<'_, T>,
    ) -> PyResult<Vec<T>> {
        let (h, w) = (a.shape()[0], a.shape()[1]);
        if (h, w) != (self.spixels, self.fpixels) {
            return Err(to_py(
                py,
                NbError::usage(format!(
                    "{name}: expected a ({}, {}) {kind} (slow, fast), got ({h}, {w})",
                    self.spixels, self.fpixels
                )),
            ));
        }
        Ok(a.as_array().iter().copied().collect())
    }

    /// A fast-major image of this detector as a (slow, fast) array.
    fn image<'py, T: numpy::Element>(
        &self,
        py: Python<'py>,
        image: Vec<T>,
    ) -> PyResult<Bound<'py, PyArray2<T>>> {
        image_2d(py, image, self.spixels, self.fpixels)
    }

    /// The noiseless or noisy SMV file (`api::int_image_smv`, `api::noise_image_smv`) of `image`.
    fn smv<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray1<'py, f32>,
        file: fn(&api::Prepared, &[f32]) -> nanobragg::error::Result<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let img = image.as_slice()?;
        let s = self.lock();
        let b = file(s.prepared(), img).map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &b))
    }
}

fn image_2d<T: numpy::Element>(
    py: Python<'_>,
    image: Vec<T>,
    s: usize,
    f: usize,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    image.into_pyarray(py).reshape([s, f])
}

/// Parameter-major planes (P, slow, fast) as an array.
fn planes<T: numpy::Element>(
    py: Python<'_>,
    v: Vec<T>,
    shape: (usize, usize, usize),
) -> PyResult<Bound<'_, PyAny>> {
    let a = Array3::from_shape_vec(shape, v)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py).into_any())
}

#[pymethods]
impl PySession {
    /// `words`: upstream's flags; `files`: in-memory files by name (they shadow the disk).
    #[new]
    #[pyo3(signature = (words, files=None))]
    fn new(
        py: Python<'_>,
        words: Vec<String>,
        files: Option<HashMap<String, Vec<u8>>>,
    ) -> PyResult<Self> {
        let files = CachedFiles::new(files.unwrap_or_default());
        let s = interruptible(py, |_| Session::new(words, files))?;
        let (fpixels, spixels) = (s.prepared().plan().fpixels, s.prepared().plan().spixels);
        Ok(PySession {
            inner: Mutex::new(s),
            last_render_s: AtomicU64::new(0),
            fpixels,
            spixels,
            pool: std::sync::OnceLock::new(),
        })
    }

    fn words(&self) -> Vec<String> {
        self.lock().words().to_vec()
    }

    /// (slow, fast) pixels.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.spixels, self.fpixels)
    }

    /// Seconds the last `render` spent inside the crate (`Session::render`).
    fn last_render_seconds(&self) -> f64 {
        f64::from_bits(self.last_render_s.load(Ordering::Relaxed))
    }

    fn warnings(&self) -> Vec<String> {
        self.lock().prepared().setup.warnings.clone()
    }

    fn gpu_adapter(&self) -> Option<String> {
        self.lock().gpu_adapter()
    }

    /// Facts of the resolved setup, for `Simulator.info()`.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.lock();
        let p = s.prepared();
        let plan = p.plan();
        let o = p.options();
        let d = PyDict::new(py);
        d.set_item("fast_pixels", plan.fpixels)?;
        d.set_item("slow_pixels", plan.spixels)?;
        d.set_item("pixel_mm", plan.pixel * 1e3)?;
        d.set_item("sources", plan.sources.len())?;
        d.set_item("orientations", plan.orientations.len())?;
        d.set_item("precision", format!("{:?}", o.precision).to_lowercase())?;
        d.set_item("backend", format!("{:?}", o.backend).to_lowercase())?;
        d.set_item("hkl_source", p.setup.hkl_source.clone())?;
        d.set_item("N", (plan.na, plan.nb, plan.nc))?;
        // sub-pixels per pixel side, and whether the crate chose it (upstream's rule: a small
        // crystal gets many, each a full render's cost)
        d.set_item("oversample", plan.oversample)?;
        d.set_item("oversample_auto", o.oversample <= 0)?;
        Ok(d)
    }

    /// The crate's NXmx file (`io::nexus::write_nxmx`, the CLI's `-nexus` layout) of `frames`
    /// ((n, slow, fast) int32 counts) with this setup's geometry (`cli::nexus_geometry`),
    /// frame k at φ = `phi_start_deg` + k·`osc_deg`, `saturation` the largest trusted count
    /// (None: the CLI's 65535), for the dataset tool (`nanobragg.dataset`); `still`: no rotation
    /// scan (`io::nexus::NxFrames`), `wavelengths`: one λ (Å) per frame, `compression` the
    /// frames' filters: "deflate" (shuffle + deflate 4) or "bslz4" (bitshuffle + LZ4).
    #[pyo3(signature = (frames, phi_start_deg, osc_deg, saturation=None, still=false, wavelengths=None, compression="deflate"))]
    #[allow(clippy::too_many_arguments)]
    fn nxmx<'py>(
        &self,
        py: Python<'py>,
        frames: numpy::PyReadonlyArray3<'py, i32>,
        phi_start_deg: f64,
        osc_deg: f64,
        saturation: Option<i64>,
        still: bool,
        wavelengths: Option<Vec<f64>>,
        compression: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let Some(compression) = io::nexus::NxCompression::from_name(compression) else {
            return Err(to_py(
                py,
                NbError::input(format!(
                    "NeXus writer: compression {compression:?} is not one of {}",
                    io::nexus::NxCompression::NAMES.join(", ")
                )),
            ));
        };
        let (mut g, threads) = {
            let guard = self.lock();
            let prep = guard.prepared();
            (nanobragg::cli::nexus_geometry(prep), prep.options().threads)
        };
        g.phi_start = phi_start_deg;
        g.osc = osc_deg;
        if let Some(v) = saturation {
            g.saturation = v;
        }
        let a = frames.as_array();
        let (n, h, w) = a.dim();
        if (w, h) != g.image_size {
            return Err(to_py(
                py,
                NbError::input(format!(
                    "NeXus writer: frames of {w}x{h} pixels, the detector has {}x{}",
                    g.image_size.0, g.image_size.1
                )),
            ));
        }
        // the frames as they lie in a C-ordered array (the dataset tool's), else in one copy
        let owned;
        let data: &[i32] = match a.as_slice() {
            Some(v) => v,
            None => {
                owned = a.iter().copied().collect::<Vec<i32>>();
                &owned
            }
        };
        let bytes = py
            .detach(|| {
                let frames = io::nexus::NxFrames {
                    still,
                    wavelengths,
                    compression,
                };
                // the chunks are compressed on rayon's pool: the words' -threads bound it too
                nanobragg::cpu::with_threads(threads, || {
                    io::nexus::write_nxmx_series(&g, data, n, &frames)
                })
            })
            .map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Renders with `extra` words appended; returns (image (slow, fast) float32, engine,
    /// notices).
    #[pyo3(signature = (extra=Vec::new()))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, String, Vec<String>)> {
        let r = interruptible(py, |cancel| {
            let mut s = self.lock();
            let t = Instant::now();
            let r = s.render(&extra, &noop, cancel);
            self.last_render_s
                .store(t.elapsed().as_secs_f64().to_bits(), Ordering::Relaxed);
            r
        })?;
        let img = recycled_2d(py, r.rendered.image, r.spixels, r.fpixels)?;
        Ok((
            img,
            r.rendered.engine.name().to_string(),
            r.rendered.notices,
        ))
    }

    /// The dataset tool's image (`nanobragg.dataset.Renderer`) in one call, the GIL released
    /// and no copy of the image between the stages: renders with `extra` words, adds
    /// `background` (photons/pixel, (slow, fast) float32, as NumPy's float32 `+`) and writes
    /// the stored int32 counts into `out` ((slow, fast), C order): with `noise` (noisify's flag
    /// words, the seed among them) noisify's noisy ADU from the counter generator, as
    /// `noisify_image` makes them (its noiseless ADU where the words say `-nonoise`), clipped at
    /// 2^31 - 1; without, round-half-even(photons · `scale`) clipped to [0, 2^31 - 1]. The
    /// render, the noise and the conversion run on a pool of `-threads` threads kept by the
    /// session (the image does not depend on their number). Returns (engine, notices).
    #[pyo3(signature = (extra, out, background=None, noise=None, scale=1.0))]
    fn render_counts<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        mut out: PyReadwriteArray2<'py, i32>,
        background: Option<PyReadonlyArray2<'py, f32>>,
        noise: Option<Vec<String>>,
        scale: f64,
    ) -> PyResult<(String, Vec<String>)> {
        let (s, f) = (self.spixels, self.fpixels);
        let shape_error = |name: &str, got: &[usize]| {
            to_py(
                py,
                NbError::usage(format!(
                    "render_counts: {name} must be a ({s}, {f}) C-ordered array (slow, fast), got {got:?}"
                )),
            )
        };
        if out.shape() != [s, f] || !out.is_c_contiguous() {
            return Err(shape_error("out", out.shape()));
        }
        let bg = match &background {
            Some(b) if b.shape() != [s, f] || !b.is_c_contiguous() => {
                return Err(shape_error("background", b.shape()))
            }
            Some(b) => Some(b.as_slice()?),
            None => None,
        };
        let counts = out.as_slice_mut()?;
        let (engine, notices) = interruptible(py, |cancel| {
            let mut guard = self.lock();
            let threads = guard.prepared().options().threads;
            let session: &mut Session = &mut guard;
            // render, noise and conversion all on the session's pool of -threads threads: the
            // crate's CPU render finds itself on a pool of its size and builds none of its
            // own (`cpu::with_threads`), so no threads are started per image and no second
            // pool spins beside the one at work
            let pool = self.pool.get_or_init(|| {
                threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok())
            });
            let work = move || -> Result<(String, Vec<String>), NbError> {
                let t = Instant::now();
                let r = session.render(&extra, &noop, cancel)?;
                self.last_render_s
                    .store(t.elapsed().as_secs_f64().to_bits(), Ordering::Relaxed);
                let mut image = r.rendered.image;
                if image.len() != counts.len() {
                    return Err(NbError::input(format!(
                        "render_counts: the render has {} pixels, the detector {}",
                        image.len(),
                        counts.len()
                    )));
                }
                if let Some(bg) = bg {
                    image.iter_mut().zip(bg).for_each(|(v, b)| *v += b);
                }
                match noise {
                    Some(words) => {
                        let adu = dataset_noise(image, s, f, words, cancel)?;
                        // NumPy's minimum(adu, 2^31 - 1).astype(int32)
                        counts
                            .iter_mut()
                            .zip(&adu)
                            .for_each(|(c, &a)| *c = a.min(i32::MAX as u32) as i32);
                        // its memory for the next image's counts (`spare`)
                        nanobragg::spare::give(adu);
                    }
                    None => {
                        use rayon::prelude::*;
                        counts
                            .par_chunks_mut(1 << 15)
                            .zip(image.par_chunks(1 << 15))
                            .for_each(|(c, v)| {
                                c.iter_mut()
                                    .zip(v)
                                    .for_each(|(c, &v)| *c = stored_count(v, scale))
                            });
                        // its memory for the next image's render (`spare`)
                        nanobragg::spare::give_f32(image);
                    }
                }
                Ok((r.rendered.engine.name().to_string(), r.rendered.notices))
            };
            match pool {
                Some(p) => p.install(work),
                None => work(),
            }
        })?;
        Ok((engine, notices))
    }

    /// The image (float64, (slow, fast)) at the setup with `extra` words moved by `offsets`
    /// ((name, offset) pairs), and its derivatives with respect to `names` there ((P, slow,
    /// fast), float64 from the f64 kernel, float32 from the f32 and GPU ones), on the session's backend (the crate's `Session::gradients`); with the
    /// engine that computed them ("cpu" or "gpu") and the notices.
    #[pyo3(signature = (extra, names, offsets=Vec::new()))]
    fn gradients<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        names: Vec<String>,
        offsets: Vec<(String, f64)>,
    ) -> PyResult<WithEngine<'py, PyAny>> {
        let (params, offs) = params_and_offsets(py, &names, &offsets)?;
        let r = interruptible(py, |cancel| {
            self.lock().gradients(&extra, &params, &offs, cancel)
        })?;
        let g = r.gradients;
        let (s_, f_, n) = (g.spixels, g.fpixels, params.len());
        let img = image_2d(py, g.image_f64, s_, f_)?;
        // in the precision they were computed in: f64, or f32 (the f32 kernel, the GPU's)
        let t = match g.tangents {
            api::Planes::F64(v) => planes(py, v, (n, s_, f_))?,
            api::Planes::F32(v) => planes(py, v, (n, s_, f_))?,
        };
        Ok((img, t, r.engine.name().to_string(), r.notices))
    }

    /// The vector–Jacobian product of `weights` ((slow, fast) float64) with respect to `names`
    /// at the setup moved by `offsets`, on the session's backend; returns (image float64,
    /// products (P,) float64, engine, notices).
    #[pyo3(signature = (extra, names, weights, offsets=Vec::new()))]
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        names: Vec<String>,
        weights: PyReadonlyArray2<'py, f64>,
        offsets: Vec<(String, f64)>,
    ) -> PyResult<WithEngine<'py, numpy::PyArray1<f64>>> {
        let (params, offs) = params_and_offsets(py, &names, &offsets)?;
        let wv = self.per_pixel(py, "weights", "array", &weights)?;
        let r = interruptible(py, |cancel| {
            self.lock().vjp(&extra, &params, &offs, &wv, cancel)
        })?;
        Ok((
            self.image(py, r.image)?,
            r.products.into_pyarray(py),
            r.engine.name().to_string(),
            r.notices,
        ))
    }

    /// The gradient of Σ weights·image with respect to the structure factors of the set-up's
    /// table (the crate's `api::vjp_structure_factors`, f64 CPU): (image (slow, fast) float64,
    /// Miller indices (R, 3) int32, F (R,) float64, gradient (R,) float64) for the R
    /// reflections some term reads.
    #[allow(clippy::type_complexity)]
    fn vjp_structure_factors<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        weights: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<(
        Bound<'py, numpy::PyArray2<f64>>,
        Bound<'py, numpy::PyArray2<i32>>,
        Bound<'py, numpy::PyArray1<f64>>,
        Bound<'py, numpy::PyArray1<f64>>,
    )> {
        let wv = self.per_pixel(py, "weights", "array", &weights)?;
        let r = interruptible(py, |cancel| {
            self.lock().vjp_structure_factors(&extra, &[], &wv, cancel)
        })?;
        let n = r.hkl.len();
        let hkl: Vec<i32> = r.hkl.iter().flatten().copied().collect();
        Ok((
            self.image(py, r.image)?,
            hkl.into_pyarray(py).reshape([n, 3])?,
            r.f.into_pyarray(py),
            r.grad.into_pyarray(py),
        ))
    }

    /// Fits the parameters `names` to `target` ((slow, fast) float64) at the setup with `extra`
    /// words (the crate's `api::fit`; `mask`: (slow, fast) bool, true = use the pixel); returns (offsets (P,) float64, cost history, iterations,
    /// cycles, the verdict (`FitVerdict`), selected pixels, model image at the fit (slow, fast) float64, the fitted
    /// set-up as flag words: `-misset x y z -cell …`).
    #[pyo3(signature = (extra, names, target, start=Vec::new(), loss="huber".to_string(), loss_scale=3.0, max_iterations=100, cycles=3, spot_radius=2, spot_threshold=0.01, tolerance=1e-8, background="none".to_string(), background_block=32, gain=1.0, adc=0.0, centroids=false, mask=None))]
    #[allow(clippy::too_many_arguments)]
    fn fit<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        names: Vec<String>,
        target: PyReadonlyArray2<'py, f64>,
        start: Vec<(String, f64)>,
        loss: String,
        loss_scale: f64,
        max_iterations: i64,
        cycles: i64,
        spot_radius: i64,
        spot_threshold: f64,
        tolerance: f64,
        background: String,
        background_block: i64,
        gain: f64,
        adc: f64,
        centroids: bool,
        mask: Option<PyReadonlyArray2<'py, bool>>,
    ) -> PyResult<FitOut<'py>> {
        let params = api::parse_params(&names.join(","), "params").map_err(|e| to_py(py, e))?;
        let start = start
            .iter()
            .map(|(n, v)| Ok((api::Param::parse(n, "start").map_err(|e| to_py(py, e))?, *v)))
            .collect::<PyResult<Vec<_>>>()?;
        let t = self.per_pixel(py, "target", "array", &target)?;
        let mut o = api::FitOptions::new(&params);
        o.start = start;
        o.loss = api::Loss::parse(&loss, loss_scale).map_err(|e| to_py(py, e))?;
        // Python's signed ints by the crate's rule of each count (a negative one named too)
        let count = |name: &str, v: i64| api::FitOptions::count(name, v).map_err(|e| to_py(py, e));
        o.max_iterations = count("max_iterations", max_iterations)?;
        o.cycles = count("cycles", cycles)?;
        o.spot_radius = count("spot_radius", spot_radius)?;
        o.spot_threshold = spot_threshold;
        o.tolerance = tolerance;
        o.background = api::Background::parse(&background).map_err(|e| to_py(py, e))?;
        o.background_block = count("background_block", background_block)?;
        o.gain = gain;
        o.adc = adc;
        o.centroids = centroids;
        if let Some(m) = &mask {
            o.mask = Some(self.per_pixel(py, "mask", "bool array", m)?);
        }
        let f = interruptible(py, |cancel| {
            self.lock().fit(&extra, &t, &o, &mut |_| {}, cancel)
        })?;
        // the fitted set-up as the values of its flags (`api::fitted_values`)
        let words = self
            .lock()
            .fitted_values(&extra, &f.params, &f.values)
            .map_err(|e| to_py(py, e))?
            .words();
        Ok((
            f.values.into_pyarray(py),
            f.history,
            f.iterations,
            f.cycles,
            (
                f.converged,
                f.verdict,
                f.spots_checked,
                f.spots_found,
                f.correlation,
                f.correlation_ceiling,
                f.centroid_spots,
            ),
            f.pixels,
            self.image(py, f.image)?,
            words,
        ))
    }

    /// Renders each word list of `extras` in turn into one (N, slow, fast) array.
    fn render_many<'py>(
        &self,
        py: Python<'py>,
        extras: Vec<Vec<String>>,
    ) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let (s_, f_) = (self.spixels, self.fpixels);
        let n = extras.len();
        let out = interruptible(py, |cancel| {
            let mut s = self.lock();
            let mut out = vec![0f32; n * s_ * f_];
            for (i, extra) in extras.iter().enumerate() {
                let r = s.render(extra, &noop, cancel)?;
                if (r.fpixels, r.spixels) != (f_, s_) {
                    return Err(NbError::usage(format!(
                        "render_many: item {i} changes the detector to {}x{} pixels (the batch is {f_}x{s_})",
                        r.fpixels, r.spixels
                    )));
                }
                out[i * s_ * f_..(i + 1) * s_ * f_].copy_from_slice(&r.rendered.image);
            }
            Ok(out)
        })?;
        let a = Array3::from_shape_vec((n, s_, f_), out)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    }

    /// The prediction's columns: a dict name -> 1-D array (with `extra` words appended); with
    /// `on_image` what is on the image (the `-predict` table's reflections), else every lattice
    /// point within the resolution limit.
    #[pyo3(signature = (extra=Vec::new(), on_image=false))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        extra: Vec<String>,
        on_image: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let cols = interruptible(py, |_| {
            let s = self.lock();
            let prep = s.prepare_with(&extra)?;
            let opts = predict::PredictOptions {
                on_image,
                ..Default::default()
            };
            let pred = predict::predict(&prep.setup, &opts)?;
            Ok(prediction_columns(&pred))
        })?;
        let d = PyDict::new(py);
        for (name, c) in cols {
            match c {
                Col::I(v) => d.set_item(name, v.into_pyarray(py))?,
                Col::F(v) => d.set_item(name, v.into_pyarray(py))?,
                Col::B(v) => d.set_item(name, v.into_pyarray(py))?,
            }
        }
        Ok(d)
    }

    /// The noiseless SMV file (`-intfile`) of `image` as bytes.
    fn int_image_smv<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.smv(py, image, api::int_image_smv)
    }

    /// The noisy SMV file (`-noisefile`, Poisson noise seeded by `-seed`) of `image` as bytes.
    #[pyo3(signature = (image, seed=None))]
    fn noise_image_smv<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray1<'py, f32>,
        seed: Option<i64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let img = image.as_slice()?;
        let s = self.lock();
        let prep = s.prepared();
        // a given seed as `-seed` stores it; else the words' `-seed`, else a new one per call
        let stored = match seed {
            Some(n) => n.checked_neg().ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "noise_image: seed {n} is out of range"
                ))
            })?,
            None if prep.options().seed.is_some() => prep.setup.noise_seed,
            None => nanobragg::session::fresh_noise_seed(),
        };
        let b = api::noise_image_smv_seeded(prep, img, stored).map_err(|e| to_py(py, e))?;
        Ok(PyBytes::new(py, &b))
    }

    /// The CLI's statistics of `image`: dict of max, mean, rms, ...
    fn statistics<'py>(
        &self,
        py: Python<'py>,
        image: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let img = image.as_slice()?;
        let s = self.lock();
        let st = api::statistics(s.prepared(), img);
        let d = PyDict::new(py);
        d.set_item("max", st.max_i)?;
        d.set_item("mean", st.mean)?;
        d.set_item("rms", st.rms)?;
        d.set_item("rmsd", st.rmsd)?;
        Ok(d)
    }
}

enum Col {
    I(Vec<i32>),
    F(Vec<f64>),
    B(Vec<bool>),
}

fn prediction_columns(p: &predict::Prediction) -> Vec<(&'static str, Col)> {
    let r = &p.reflections;
    let i = |f: &dyn Fn(&predict::Reflection) -> i32| Col::I(r.iter().map(f).collect());
    let f = |f: &dyn Fn(&predict::Reflection) -> f64| Col::F(r.iter().map(f).collect());
    let b = |f: &dyn Fn(&predict::Reflection) -> bool| Col::B(r.iter().map(f).collect());
    vec![
        ("h", i(&|x| x.h)),
        ("k", i(&|x| x.k)),
        ("l", i(&|x| x.l)),
        ("fast", f(&|x| x.fast.unwrap_or(f64::NAN))),
        ("slow", f(&|x| x.slow.unwrap_or(f64::NAN))),
        ("d_A", f(&|x| x.d)),
        ("two_theta_deg", f(&|x| x.two_theta)),
        ("excitation_error_per_A", f(&|x| x.excitation_error)),
        ("F", f(&|x| x.f)),
        ("intensity", f(&|x| x.intensity)),
        ("partiality", f(&|x| x.partiality)),
        ("phi_deg", f(&|x| x.phi)),
        ("on_detector", b(&|x| x.on_detector)),
        ("in_condition", b(&|x| x.in_condition)),
    ]
}

/// Structure factors from an atomic model (PDB or mmCIF bytes) to `dmin` Å: the table as
/// `h k l F` text (`-hklout`'s format, exact), the model's cell, and a description.
#[pyfunction]
fn structure_factors<'py>(
    py: Python<'py>,
    name: String,
    data: Vec<u8>,
    dmin: f64,
) -> PyResult<(Bound<'py, PyBytes>, Cell, String)> {
    let (text, cell, desc) = interruptible(py, |cancel| {
        let opts = sf::SfOptions::to_resolution(dmin);
        let (grid, summary) = sf::structure_factors(&data, &name, &opts, &noop, cancel)?;
        let c = &summary.cell;
        Ok((
            io::hkl::write_hkl(&grid),
            (c.a, c.b, c.c, c.alpha, c.beta, c.gamma),
            summary.describe(),
        ))
    })?;
    Ok((PyBytes::new(py, &text), cell, desc))
}

/// nonBragg's amorphous background from its flag words: (image (slow, fast) photons/pixel,
/// solid angle of the detector in sr, warnings). Files come from `files`, else the disk.
#[pyfunction]
#[pyo3(signature = (words, files=None))]
fn nonbragg_render<'py>(
    py: Python<'py>,
    words: Vec<String>,
    files: Option<HashMap<String, Vec<u8>>>,
) -> PyResult<(Bound<'py, PyArray2<f32>>, f64, Vec<String>)> {
    let (image, omega, s, f, warnings) = interruptible(py, |cancel| {
        let o = nonbragg::options::parse(&words)?;
        let files = CachedFiles::new(files.unwrap_or_default());
        let st = nonbragg::prepare(&o, &files, session::clock_seed())?;
        let (image, omega) =
            nanobragg::cpu::with_threads(o.geo.threads, || nonbragg::render(&st, &noop, cancel))?;
        let p = st.plan();
        Ok((image, omega, p.spixels, p.fpixels, st.warnings.clone()))
    })?;
    Ok((image_2d(py, image, s, f)?, omega, warnings))
}

/// One of upstream's `.stol` tables carried in the library (`water.stol`, `air.stol`,
/// `ice.stol`), or None.
#[pyfunction]
fn bundled_stol<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyBytes>> {
    realistic::bundled_stol(name).map(|b| PyBytes::new(py, b))
}

/// noisify's detector effects on `image` (photons/pixel, (slow, fast)) with noisify's flag
/// words: (noiseless ADU (slow, fast) uint32, noisy ADU or None, SMV header bytes, log lines).
/// The noise's random numbers are the counter generator's (`-rng counter`: on all threads, the
/// same image for any number of threads) unless the words say `-rng upstream` (upstream's
/// sequence on one thread, the `noisify` program's default).
#[pyfunction]
#[pyo3(signature = (image, words, files=None))]
fn noisify_image<'py>(
    py: Python<'py>,
    image: PyReadonlyArray2<'py, f32>,
    words: Vec<String>,
    files: Option<HashMap<String, Vec<u8>>>,
) -> PyResult<Noisified<'py>> {
    let (s, f) = (image.shape()[0], image.shape()[1]);
    // the array's own pixels when contiguous (the Python wrapper makes them so), else one copy
    let pixels: Cow<'_, [f32]> = match image.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(image.as_array().iter().copied().collect()),
    };
    // a watcher thread only for work that may take long: a large image, or a PSF
    let long = s * f > 1 << 20 || words.iter().any(|w| w.starts_with("-psf"));
    let r = interruptible_if(py, long, |cancel| {
        run_noisify(pixels, s, f, words, files.unwrap_or_default(), true, cancel)
    })?;
    let (adu, noise, header, log) = (r.adu, r.noise, r.header, r.log);
    let adu = recycled_2d(py, adu, s, f)?;
    let noise = match noise {
        Some(n) => Some(recycled_2d(py, n, s, f)?),
        None => None,
    };
    Ok((adu, noise, PyBytes::new(py, &header), log))
}

/// The owner of an image lent to NumPy ([`recycled_2d`]): when NumPy frees the array, its
/// memory goes back to the crate for a later image (`nanobragg::spare`): the next render's, or
/// the next noise pass's counts. Held as the raw 4-byte values (`u32` counts or `f32` photons).
#[pyclass(module = "nanobragg._nanobragg", frozen)]
struct PooledImage(Vec<u32>);

impl Drop for PooledImage {
    fn drop(&mut self) {
        nanobragg::spare::give(std::mem::take(&mut self.0));
    }
}

/// The 4-byte values an image is lent to NumPy as ([`recycled_2d`]).
trait Pooled: numpy::Element {
    fn raw(v: Vec<Self>) -> Vec<u32>;
}

impl Pooled for u32 {
    fn raw(v: Vec<u32>) -> Vec<u32> {
        v
    }
}

impl Pooled for f32 {
    fn raw(v: Vec<f32>) -> Vec<u32> {
        nanobragg::spare::f32_as_u32(v)
    }
}

/// A (slow, fast) array of the image `v` (`s` x `f`), its memory recycled once freed.
fn recycled_2d<T: Pooled>(
    py: Python<'_>,
    v: Vec<T>,
    s: usize,
    f: usize,
) -> PyResult<Bound<'_, PyArray2<T>>> {
    assert_eq!(v.len(), s * f, "recycled_2d: image size");
    let ptr = v.as_ptr();
    let owner = Bound::new(py, PooledImage(T::raw(v)))?;
    // SAFETY: `ptr` is the start of the `s * f` values of the Vec that `owner` holds (moving
    // the Vec, or taking its allocation as u32 values, moved its handle, not its values), which
    // stay in place until `owner` is dropped; the array keeps `owner` as its base object
    unsafe {
        let view = numpy::ndarray::ArrayView2::from_shape_ptr((s, f), ptr);
        Ok(PyArray2::borrow_from_array(&view, owner.into_any()))
    }
}

/// What one noisify run from Python gives: the noiseless ADU (empty for the dataset tool's
/// pass when there is noise), the noisy ones (absent under `-nonoise`), and, when asked for,
/// the header and the log.
struct NoiseRun {
    adu: Vec<u32>,
    noise: Option<Vec<u32>>,
    header: Vec<u8>,
    log: Vec<String>,
}

/// noisify with `words` on the `w`·`h` image `pixels` (fast index first), the counter
/// generator unless the words choose another: the one set of steps behind `noisify_image` and
/// the dataset tool's noise pass ([`PySession::render_counts`], which skips the header, the
/// log and, with noise, the noiseless ADU it would drop: `describe` false).
fn run_noisify(
    pixels: Cow<'_, [f32]>,
    h: usize,
    w: usize,
    words: Vec<String>,
    files: HashMap<String, Vec<u8>>,
    describe: bool,
    cancel: &AtomicBool,
) -> Result<NoiseRun, NbError> {
    let mut all = vec![
        "-floatfile".to_string(),
        "<image>.bin".to_string(),
        "-detpixels_x".to_string(),
        w.to_string(),
        "-detpixels_y".to_string(),
        h.to_string(),
        "-rng".to_string(),
        "counter".to_string(),
    ];
    all.extend(words);
    let opts = noisify::options::parse(&all)?;
    // what the noisify command reads as upstream does (and warns of), Python refuses
    if let Some(c) = opts.clamps().first() {
        return Err(c.error());
    }
    let files = CachedFiles::new(files);
    let prep =
        noisify::options::prepare_with_image(&opts, &files, session::clock_seed(), Some(pixels))?;
    let d = noisify::detect_keeping(
        &prep.input,
        prep.width,
        prep.height,
        &prep.effects,
        opts.bits32,
        describe,
        &noop,
        cancel,
    )?;
    let (header, log) = if describe {
        let header = match &prep.header {
            Some(h) => h.clone(),
            None => noisify::options::own_header(&prep)?,
        };
        let mut log = opts.geo.warnings.clone();
        log.extend(prep.log.iter().cloned());
        (header, log)
    } else {
        (Vec::new(), Vec::new())
    };
    // an image of the caller's it was given to keep (the dataset pass's render): back to the
    // pool for the next render
    if let Cow::Owned(v) = prep.input {
        nanobragg::spare::give_f32(v);
    }
    Ok(NoiseRun {
        adu: d.adu,
        noise: d.noise.map(|n| n.adu),
        header,
        log,
    })
}

/// A noiseless dataset's stored count of `v` photons: NumPy's
/// `rint(v · scale).clip(0, 2^31 - 1).astype(int32)`, NaN (never rendered) as its x86 cast
/// makes it (i32::MIN). Clipped first, then rounded half to even by adding and subtracting
/// 2^52 (exact in f64 for values in [0, 2^31)): the same integers as rounding first, without
/// a call to `rint` a pixel, so the loop vectorises.
#[inline(always)]
fn stored_count(v: f32, scale: f64) -> i32 {
    const TWO52: f64 = 4503599627370496.0;
    let x = v as f64 * scale;
    // comparisons, not `clamp`: a NaN goes to 0 here and is told apart below
    let c = if x > 0.0 { x } else { 0.0 };
    let c = if c < i32::MAX as f64 {
        c
    } else {
        i32::MAX as f64
    };
    // SAFETY: `c` is in [0, 2^31 - 1] (not NaN), and so is its rounding: the conversion is
    // exact (`as` would add a saturating, NaN-checking sequence a pixel: no vector code)
    let r = unsafe { ((c + TWO52) - TWO52).to_int_unchecked::<i32>() };
    #[allow(clippy::eq_op)] // x != x: NaN, in a form that vectorises
    if x != x {
        i32::MIN
    } else {
        r
    }
}

/// The dataset tool's noise pass: [`run_noisify`]'s noisy ADU (the noiseless ones under
/// `-nonoise`), without header and log.
fn dataset_noise(
    pixels: Vec<f32>,
    h: usize,
    w: usize,
    words: Vec<String>,
    cancel: &AtomicBool,
) -> Result<Vec<u32>, NbError> {
    let r = run_noisify(
        Cow::Owned(pixels),
        h,
        w,
        words,
        HashMap::new(),
        false,
        cancel,
    )?;
    Ok(r.noise.unwrap_or(r.adu))
}

/// An SMV file's bytes: (header text, pixels (slow, fast) uint16).
#[pyfunction]
fn read_smv<'py>(
    py: Python<'py>,
    name: &str,
    data: &[u8],
) -> PyResult<(String, Bound<'py, PyArray2<u16>>)> {
    let head = io::smv::read_head(name, data).map_err(|e| to_py(py, e))?;
    let file = io::smv::read_smv(name, data).map_err(|e| to_py(py, e))?;
    let (f, s) = head.dimensions().unwrap_or((file.data.len(), 1));
    if f * s != file.data.len() {
        return Err(to_py(
            py,
            NbError::input(format!(
                "{name}: {} pixels for SIZE1={f} x SIZE2={s}",
                file.data.len()
            )),
        ));
    }
    Ok((
        file.header_text,
        file.data.into_pyarray(py).reshape([s, f])?,
    ))
}

/// An SMV file from header lines (`KEY=VALUE;` text between the opening lines and the
/// closing ones, as upstream writes them) and uint16 pixels.
#[pyfunction]
fn smv_bytes<'py>(
    py: Python<'py>,
    header_body: &str,
    pixels: PyReadonlyArray2<'py, u16>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (s, f) = (pixels.shape()[0], pixels.shape()[1]);
    let mut text = io::smv::header_open(io::smv::SmvType::U16);
    text.push_str(&format!("SIZE1={f};\nSIZE2={s};\n"));
    text.push_str(header_body);
    text.push_str(io::smv::HEADER_CLOSE);
    let mut out = io::smv::pad_header(text).map_err(|e| to_py(py, e))?;
    out.reserve(2 * s * f);
    for p in pixels.as_array().iter() {
        out.extend_from_slice(&p.to_le_bytes());
    }
    Ok(PyBytes::new(py, &out))
}

/// A miniCBF file's bytes: (header text, pixels (slow, fast) int32).
#[pyfunction]
fn read_cbf<'py>(
    py: Python<'py>,
    name: &str,
    data: &[u8],
) -> PyResult<(String, Bound<'py, PyArray2<i32>>)> {
    let img = io::cbf_read::read_minicbf(name, data).map_err(|e| to_py(py, e))?;
    Ok((
        img.header,
        img.pixels
            .into_pyarray(py)
            .reshape([img.height, img.width])?,
    ))
}

/// A miniCBF file (byte-offset, PILATUS header lines) of int32 pixels (slow, fast).
#[pyfunction]
#[allow(non_snake_case)]
#[pyo3(signature = (pixels, pixel_m, wavelength_A, distance_m, beam_xy_px, exposure_s=1.0, detector="nanoBragg simulation".to_string(), start_angle_deg=0.0, angle_increment_deg=0.0, count_cutoff=1048576))]
fn cbf_bytes<'py>(
    py: Python<'py>,
    pixels: PyReadonlyArray2<'py, i32>,
    pixel_m: f64,
    wavelength_A: f64,
    distance_m: f64,
    beam_xy_px: (f64, f64),
    exposure_s: f64,
    detector: String,
    start_angle_deg: f64,
    angle_increment_deg: f64,
    count_cutoff: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let (s, f) = (pixels.shape()[0], pixels.shape()[1]);
    let px: Vec<i32> = pixels.as_array().iter().copied().collect();
    let info = io::cbf::CbfInfo {
        detector,
        pixel: pixel_m,
        sensor: None,
        exposure: exposure_s,
        count_cutoff,
        wavelength: wavelength_A,
        distance: distance_m,
        beam_xy: beam_xy_px,
        start_angle: start_angle_deg,
        angle_increment: angle_increment_deg,
        excluded: px.iter().filter(|&&v| v < 0).count(),
        two_theta: 0.0,
        polarization: None,
        flux: 0.0,
    };
    Ok(PyBytes::new(py, &io::cbf::write_minicbf(&info, f, s, &px)))
}

/// Writes `data` to `path` atomically (a temporary file renamed into place: never a
/// half-written file).
#[pyfunction]
fn write_file_atomic(py: Python<'_>, path: std::path::PathBuf, data: &[u8]) -> PyResult<()> {
    io::atomic::write_atomic(&path, data).map_err(|e| to_py(py, e))
}

/// Flags of the simulator: a list of dicts (name, aliases, values, help, group, kind).
#[pyfunction]
fn flag_table<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    api::flag_table()
        .into_iter()
        .map(|f| {
            let d = PyDict::new(py);
            d.set_item("name", f.name)?;
            d.set_item("aliases", f.aliases.to_vec())?;
            d.set_item("values", f.values)?;
            d.set_item("min_values", f.min_values)?;
            d.set_item("max_values", f.max_values)?;
            d.set_item("help", f.help)?;
            d.set_item("group", format!("{:?}", f.group).to_lowercase())?;
            d.set_item("kind", format!("{:?}", f.kind))?;
            Ok(d)
        })
        .collect()
}

/// Misset angles (degrees) of a rotation matrix (`U = Rz·Ry·Rx`, upstream's `umat2misset`).
#[pyfunction]
fn misset_from_rotation(u: [[f64; 3]; 3]) -> [f64; 3] {
    session::misset_deg_from_rotation(u)
}

/// MOSFLM `-mat` text for reciprocal vectors a*, b*, c* (rows, Å⁻¹) at `wavelength_A`.
#[pyfunction]
#[allow(non_snake_case)]
fn mat_text(a_star: [[f64; 3]; 3], wavelength_A: f64) -> String {
    session::mat_text(a_star, wavelength_A)
}

/// The crate's error kinds (`ErrorKind::ALL`), as `nanobragg.errors` names them.
#[pyfunction]
fn error_kinds() -> Vec<&'static str> {
    nanobragg::error::ErrorKind::ALL
        .iter()
        .map(|k| k.name())
        .collect()
}

/// The test suite's panic in a helper thread (`python/tests/test_errors.py`): panics with
/// `message` inside [`interruptible`] (`watched`) or [`interruptible_if`]'s short path, as a bug
/// of the crate would, to show how it reaches Python.
#[pyfunction]
fn _helper_panic(py: Python<'_>, message: String, watched: bool) -> PyResult<()> {
    interruptible_if(py, watched, |_| -> Result<(), NbError> {
        panic!("{message}")
    })
}

/// The typed configuration's check of a cell of six words (`Crystal.cell_A_deg`): the crate's
/// cell rule (`args::check_cell`), a usage error naming `-cell` and the entry.
#[pyfunction]
fn check_cell(py: Python<'_>, words: Vec<String>) -> PyResult<()> {
    nanobragg::args::check_cell(&words).map_err(|e| to_py(py, e))
}

/// Split a command line into words as the CLI does.
#[pyfunction]
fn split_args(s: &str) -> Vec<String> {
    api::split_args(s)
}

#[pymodule]
fn _nanobragg(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    m.add_function(wrap_pyfunction!(structure_factors, m)?)?;
    m.add_function(wrap_pyfunction!(flag_table, m)?)?;
    m.add_function(wrap_pyfunction!(split_args, m)?)?;
    m.add_function(wrap_pyfunction!(check_cell, m)?)?;
    m.add_function(wrap_pyfunction!(_helper_panic, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(nonbragg_render, m)?)?;
    m.add_function(wrap_pyfunction!(misset_from_rotation, m)?)?;
    m.add_function(wrap_pyfunction!(mat_text, m)?)?;
    m.add_function(wrap_pyfunction!(bundled_stol, m)?)?;
    m.add_function(wrap_pyfunction!(noisify_image, m)?)?;
    m.add_function(wrap_pyfunction!(read_smv, m)?)?;
    m.add_function(wrap_pyfunction!(smv_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(read_cbf, m)?)?;
    m.add_function(wrap_pyfunction!(cbf_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(write_file_atomic, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("COUNTER_SEQUENCE", noisify::COUNTER_SEQUENCE)?;
    Ok(())
}
