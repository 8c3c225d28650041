//! `Renderer`: renders plans with the backend policy, keeps the GPU warm, falls back to the
//! CPU, renders the exact-Bragg pixels both backends report with the f64 kernel (one place,
//! `with_exact_fixup`), and rejects non-finite images.

use super::*;
use crate::plan::ExactFixup;

/// A finished render.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// Photons per pixel, fast-major.
    pub image: Vec<f32>,
    /// Where it was rendered.
    pub engine: Engine,
    /// Why it was not rendered where asked (GPU unavailable under `auto`), or threads capped.
    pub notices: Vec<String>,
    /// The GPU's adapter and its timings (pipeline, upload, dispatch, read-back), when the GPU
    /// rendered.
    pub gpu_timings: Option<String>,
}

/// Renders plans with the backend policy of [`choose_backend`]. Keeps the GPU renderer (device,
/// pipeline, buffers) between renders, so a warm render only uploads what changed. The GPU is
/// opened on first use (or by [`Renderer::init_gpu`]); a GPU that failed is not tried again.
pub struct Renderer {
    threads: Option<usize>,
    notices: Vec<String>,
    #[cfg(feature = "gpu")]
    gpu: GpuSlot,
}

#[cfg(feature = "gpu")]
enum GpuSlot {
    Untried,
    Ready(Box<crate::gpu::GpuRenderer>),
    Failed(String),
}

impl Renderer {
    /// `threads`: CPU threads (`None`: all cores; capped by [`thread_count`]). The browser's
    /// pool is fixed when its workers start: pass `None` there.
    pub fn new(threads: Option<usize>) -> Self {
        let (threads, notice) = thread_count(threads);
        Renderer {
            threads,
            notices: notice.into_iter().collect(),
            #[cfg(feature = "gpu")]
            gpu: GpuSlot::Untried,
        }
    }

    /// Open the GPU now (the browser does this once, in its worker); returns the adapter's
    /// description. Errors are `ErrorKind::Gpu`.
    pub async fn init_gpu(&mut self) -> Result<String> {
        #[cfg(feature = "gpu")]
        {
            if let GpuSlot::Untried = self.gpu {
                self.gpu = match crate::gpu::GpuRenderer::new().await {
                    Ok(r) => GpuSlot::Ready(Box::new(r)),
                    // a bad setting (NANOBRAGG_GPU_READBACK) is the user's to mend, also where
                    // the policy would fall back to the CPU
                    Err(e) if e.kind == ErrorKind::Usage => return Err(e),
                    Err(e) => GpuSlot::Failed(e.message),
                };
            }
            match &self.gpu {
                GpuSlot::Ready(r) => Ok(adapter_name(r)),
                GpuSlot::Failed(m) => Err(Error::gpu(m.clone())),
                GpuSlot::Untried => unreachable!(),
            }
        }
        #[cfg(not(feature = "gpu"))]
        Err(Error::gpu("this build has no GPU kernel (the gpu feature)"))
    }

    /// Render `plan` where the policy says, falling back to the CPU where it allows. Progress
    /// (0..1) and cancellation work on both engines; a cancelled render is `ErrorKind::Cancelled`.
    /// An image with a non-finite pixel is an error, never a result.
    pub async fn render_async(
        &mut self,
        plan: &Plan,
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        let choice = choose_backend(backend, precision);
        let mut notices = std::mem::take(&mut self.notices);
        if self.use_gpu(choice, &mut notices).await {
            let gpu = self.render_gpu(plan, progress, cancel).await;
            if let Some((image, timings)) = gpu_or_fallback(choice, gpu, &mut notices)? {
                check_image(plan, &image)?;
                return Ok(Rendered {
                    image,
                    engine: Engine::Gpu,
                    notices,
                    gpu_timings: Some(timings),
                });
            }
        }
        let mut r = self.render_on_cpu(plan, precision, progress, cancel)?;
        notices.append(&mut r.notices);
        r.notices = notices;
        Ok(r)
    }

    /// The CPU engine alone, synchronously (the browser's CPU export blocks its worker thread).
    pub fn render_on_cpu(
        &mut self,
        plan: &Plan,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        let rendered = cpu::with_threads(self.threads, || {
            cpu::render(plan, precision, progress, cancel)
        })?;
        let image = with_exact_fixup(plan, rendered);
        check_image(plan, &image)?;
        Ok(Rendered {
            image,
            engine: Engine::Cpu,
            notices: std::mem::take(&mut self.notices),
            gpu_timings: None,
        })
    }

    /// Blocking [`Renderer::render_async`] (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn render(
        &mut self,
        plan: &Plan,
        backend: Backend,
        precision: Precision,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<Rendered> {
        block_on(self.render_async(plan, backend, precision, progress, cancel))
    }

    /// The GPU's adapter, once opened.
    pub fn gpu_adapter(&self) -> Option<String> {
        #[cfg(feature = "gpu")]
        if let GpuSlot::Ready(r) = &self.gpu {
            return Some(adapter_name(r));
        }
        None
    }

    /// The opened adapter's name when it is a software renderer ([`software_gpu`]).
    pub fn gpu_software(&self) -> Option<String> {
        #[cfg(feature = "gpu")]
        if let GpuSlot::Ready(r) = &self.gpu {
            let i = r.adapter_info()?;
            return software_gpu(
                i.device_type == wgpu::DeviceType::Cpu,
                &[&i.name, &i.driver, &i.driver_info],
            );
        }
        None
    }

    /// Whether a render of `choice` goes to the GPU, now that the adapter can be known: under
    /// `auto` (a choice that may fall back) a software adapter is passed over for the CPU, with
    /// the notice that says so. An adapter that does not open is left to the render's own
    /// fall-back (and its notice).
    pub(super) async fn use_gpu(&mut self, choice: Choice, notices: &mut Vec<String>) -> bool {
        if choice.engine != Engine::Gpu {
            return false;
        }
        if choice.fallback_to_cpu && self.init_gpu().await.is_ok() {
            if let Some(name) = self.gpu_software() {
                notices.push(software_gpu_notice(&name));
                return false;
            }
        }
        true
    }

    /// Why a computation the policy put on the GPU ran on the CPU: the software adapter `auto`
    /// passed over, or the GPU's failure.
    pub fn cpu_fallback_notice(&self) -> String {
        match self.gpu_software() {
            Some(name) => software_gpu_notice(&name),
            None => gpu_unavailable_notice(&self.gpu_error().unwrap_or_default()),
        }
    }

    /// Why the GPU could not be opened or failed (it is then not tried again), once it did.
    pub fn gpu_error(&self) -> Option<String> {
        #[cfg(feature = "gpu")]
        if let GpuSlot::Failed(m) = &self.gpu {
            return Some(m.clone());
        }
        None
    }

    /// The opened GPU renderer (opening it on first use), for the other GPU kernels of `api`
    /// (the tangent kernel, `api::gradients`).
    #[cfg(feature = "gpu")]
    pub(super) async fn gpu_renderer(&mut self) -> Result<&mut crate::gpu::GpuRenderer> {
        self.init_gpu().await?;
        match &mut self.gpu {
            GpuSlot::Ready(r) => Ok(r),
            _ => unreachable!(),
        }
    }

    /// A GPU kernel's result, passed on: a device lost or a kernel failure (`ErrorKind::Gpu`)
    /// means this GPU is not tried again.
    #[cfg(feature = "gpu")]
    pub(super) fn gpu_result<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            if e.kind == ErrorKind::Gpu {
                self.gpu = GpuSlot::Failed(e.message.clone());
            }
        }
        r
    }

    /// Notices waiting to be reported (threads capped), taken.
    pub(super) fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// The CPU thread count of this renderer.
    pub(super) fn threads(&self) -> Option<usize> {
        self.threads
    }

    #[cfg(feature = "gpu")]
    async fn render_gpu(
        &mut self,
        plan: &Plan,
        progress: &(dyn Fn(f32) + Sync),
        cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, String)> {
        self.init_gpu().await?;
        let GpuSlot::Ready(r) = &mut self.gpu else {
            unreachable!()
        };
        let out = r.render(plan, &mut |p| progress(p), cancel).await;
        let image = self.gpu_result(out)?;
        let GpuSlot::Ready(r) = &self.gpu else {
            unreachable!()
        };
        let image = with_exact_fixup(plan, (image, r.exact_fixup().clone()));
        let t = r.timings();
        let timings = format!(
            "gpu timings ({}): pipeline {:.1} ms, upload {:.1} ms, dispatch {:.1} ms ({} chunks), readback {:.1} ms (wait {:.1}, copy {:.1}; {})",
            adapter_name(r),
            t.pipeline_s * 1e3,
            t.upload_s * 1e3,
            t.dispatch_s * 1e3,
            t.chunks,
            t.readback_s * 1e3,
            t.readback_wait_s * 1e3,
            t.readback_copy_s * 1e3,
            r.readback()
        );
        Ok((image, timings))
    }

    #[cfg(not(feature = "gpu"))]
    async fn render_gpu(
        &mut self,
        _plan: &Plan,
        _progress: &(dyn Fn(f32) + Sync),
        _cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, String)> {
        Err(Error::gpu(
            "-backend gpu: this nanobragg was built without the gpu feature",
        ))
    }
}

/// What the policy does with a GPU computation's result: `Ok(Some(_))` when it ran, `Ok(None)`
/// when `choice` falls back to the CPU on its failure (`ErrorKind::Gpu`; the notice pushed to
/// `notices`), else its error.
pub(super) fn gpu_or_fallback<T>(
    choice: Choice,
    r: Result<T>,
    notices: &mut Vec<String>,
) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if choice.fallback_to_cpu && e.kind == ErrorKind::Gpu => {
            notices.push(gpu_unavailable_notice(&e.message));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The notice of a computation the GPU did not run (`why`) done on the CPU.
fn gpu_unavailable_notice(why: &str) -> String {
    format!("GPU backend unavailable ({why}); rendering on the CPU")
}

/// The one exact-Bragg fix-up, for both backends: the pixels a fast kernel reported
/// (`plan::ExactFixup`: the CPU's f32 kernels and the GPU alike) rendered again by the f64
/// kernel, whose arithmetic alone reproduces upstream's value there (MODEL: the exact-Bragg
/// rule).
pub(super) fn with_exact_fixup(
    plan: &Plan,
    (mut image, fixup): (Vec<f32>, ExactFixup),
) -> Vec<f32> {
    cpu::apply_exact_fixup(plan, &mut image, &fixup);
    image
}

/// The adapter as a person would name it: name, driver and driver details, else the backend.
#[cfg(feature = "gpu")]
fn adapter_name(r: &crate::gpu::GpuRenderer) -> String {
    r.adapter_info()
        .map(|i| {
            let n = [i.name.as_str(), i.driver.as_str(), i.driver_info.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            if n.is_empty() {
                format!("{:?}", i.backend)
            } else {
                n
            }
        })
        .unwrap_or_else(|| "GPU".to_string())
}

#[cfg(not(target_arch = "wasm32"))]
pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    #[cfg(feature = "gpu")]
    {
        pollster::block_on(f)
    }
    #[cfg(not(feature = "gpu"))]
    {
        // without the GPU nothing in a render awaits: one poll finishes it
        use std::task::{Context, Poll, Waker};
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::yield_now();
        }
    }
}

/// Every pixel of a rendered image is finite: a NaN or infinite pixel is an error naming the
/// first one, never an image. (One parallel pass over the image, bandwidth-bound: a float is not
/// finite when its exponent bits are all ones, and an integer max over the bits vectorises.)
pub fn check_image(plan: &Plan, image: &[f32]) -> Result<()> {
    check_image_with(plan, image, "-fluence/-flux, -N or -default_F")
}

/// An upper bound on every product the kernels form for a pixel (MODEL §6): the largest |F|², the
/// lattice factor's peak ((Na·Nb·Nc)², times the fudge), the steps summed, r_e²·fluence, the
/// solid angle's largest value (pixel² over the closest distance²) and the water background,
/// each taken as at least 1 so that the bound holds for every partial product, whatever the
/// order. Every other factor (polarisation, capture fraction, the lattice factor off its peak)
/// is at most 1. Beyond single precision's range, a pixel may be infinite, or NaN where an
/// infinite partial product meets a factor of 0.
pub fn magnitude_bound(plan: &Plan) -> f64 {
    let f_max = plan
        .hkl
        .data
        .iter()
        .fold(plan.default_f.abs(), |m, f| m.max(f.abs()));
    let cells = plan.na * plan.nb * plan.nc;
    let close = plan.close_distance.abs();
    let omega = if close > 0.0 {
        plan.pixel * plan.pixel / (close * close)
    } else {
        f64::INFINITY
    };
    [
        f_max * f_max,
        cells * cells * plan.fudge.abs().max(1.0),
        plan.terms_per_pixel() as f64,
        plan.r_e_sqr_fluence,
        omega,
        plan.i_bg.abs(),
    ]
    .iter()
    .fold(1.0, |b, x| {
        if x.is_nan() {
            f64::INFINITY
        } else {
            b * x.max(1.0)
        }
    })
}

/// [`check_image`], naming `what` as the inputs to lower when a pixel overflows.
pub fn check_image_with(plan: &Plan, image: &[f32], what: &str) -> Result<()> {
    use rayon::prelude::*;
    let not_finite =
        |c: &[f32]| c.iter().fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff)) >= 0x7f80_0000;
    if !image.par_chunks(1 << 16).any(not_finite) {
        return Ok(());
    }
    let i = image.iter().position(|v| !v.is_finite()).unwrap_or(0);
    let bad = image.iter().filter(|v| !v.is_finite()).count();
    // a NaN where the inputs' magnitudes overflow: an infinite term times a factor of 0 (a
    // capture fraction or solid angle of 0), the same overflow as an infinite pixel
    let overflow = !image[i].is_nan() || magnitude_bound(plan) >= f32::MAX as f64;
    let why = if overflow {
        "an intensity beyond single precision: lower "
    } else {
        "a NaN pixel (please report the command line)"
    };
    let what = if overflow { what } else { "" };
    Err(Error::geometry(format!(
        "the rendered image has {bad} pixels that are not finite, the first at fast {} slow {}: {why}{what}",
        i % plan.fpixels.max(1),
        i / plan.fpixels.max(1)
    )))
}
