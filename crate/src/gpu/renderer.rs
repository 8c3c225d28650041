//! [`GpuRenderer`]: owns the device, the cached compute pipeline and the plan-shaped buffers;
//! renders a [`Plan`] in tiles of pixels and reads back the float image.
//!
//! Tiles are sized by time: each submission aims at [`GpuRenderer::CHUNK_TARGET_S`], or at 8×
//! the fixed cost of a submission where that is longer (the work per submission is rescaled
//! after each one, at most 4× either way, kept across renders, between
//! [`GpuRenderer::MIN_CHUNK`] and the chunk budget; the first tile of a render takes a quarter,
//! in case the new plan costs more per term). So progress moves and cancel acts within about
//! 0.1 s on a GPU; on emulations whose every submission costs 30-50 ms (lavapipe) within about
//! 0.5 s. A pixel is never split across submissions: one pixel whose terms alone
//! take longer than that (hundreds of millions of terms on a real GPU) makes its submission
//! longer, and cancel waits for it. Splitting a pixel would need per-pixel df64 accumulators and
//! a separate pass for the first-value factors (MODEL §9.6), and is impossible with the
//! `-oversample_*` running sums; it is not done.

use std::hash::{Hash, Hasher};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::context::{
    buffer_layouts, compute_pipeline, new_buffer, read_buffer, request_device, scope_error,
    wait_for, Clock, READ, UNIFORM, WRITE,
};
use super::layout::{
    self, Chunk, GpuPanel, GpuSource, GpuTerm, Params, ReduceParams, TanParams, FLAGS_HEADER_WORDS,
    NO_PIXEL,
};
use super::readback::{self, Fresh, Readback, Sink, Staging};
use super::selftest;
use super::shaders;
use crate::error::{Error, Result};
use crate::pages::Sample;
use crate::plan::{ExactFixup, Plan};

/// Wall-clock seconds spent in each phase of the last render (see `context::Clock`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuTimings {
    /// Start-up self-test plus compute-pipeline creation (paid once, in `new`).
    pub pipeline_s: f64,
    /// Packing the plan on the host, (re)creating plan-shaped buffers when shapes changed, and
    /// writing the changed data to the GPU.
    pub upload_s: f64,
    /// All kernel dispatches, waited for chunk by chunk.
    pub dispatch_s: f64,
    /// Copy of the image (and the tangent planes read) to the mappable staging buffers and
    /// their read-back (`gpu::readback`): the two parts below and the rest (submissions).
    pub readback_s: f64,
    /// Of `readback_s`: waiting for the GPU's copy and the map.
    pub readback_wait_s: f64,
    /// Of `readback_s`: copying out of the mapped staging buffers into the host's vectors.
    pub readback_copy_s: f64,
    /// Whole `render` call.
    pub total_s: f64,
    /// Number of tiles (submissions) of the main pass.
    pub chunks: u32,
    /// The render had to (re)create plan-shaped buffers.
    pub cold: bool,
}

/// Resource creation counters (the warm path must not move them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    pub pipelines_created: u32,
    pub buffers_created: u32,
    pub bind_groups_created: u32,
    pub renders: u32,
    /// Bytes written to the GPU by the last render.
    pub last_upload_bytes: u64,
    /// Pixels of the last render with an exact-Bragg term, re-rendered on the host in f64.
    pub last_exact_bragg_pixels: usize,
}

/// Buffer sizes that decide whether the cached buffers and bind group can be reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ShapeKey {
    sources: u64,
    terms: u64,
    hkl: u64,
    mask: u64,
    image: u64,
    flags: u64,
    panels: u64,
}

impl ShapeKey {
    /// Whether buffers made for `self` serve a render that needs `need`: the same sizes, except
    /// the output (image, then any tangent planes) and the terms (the image's, then any
    /// tangent blocks), which may be larger, so that a renderer alternating images and tangent
    /// passes of one detector keeps one set of buffers.
    fn serves(&self, need: &ShapeKey) -> bool {
        self.image >= need.image
            && self.terms >= need.terms
            && ShapeKey {
                image: need.image,
                terms: need.terms,
                ..*self
            } == *need
    }
}

/// The VJP reduction's buffers (`GpuRenderer::reduce_tangent_planes`).
struct ReduceBufs {
    weights: wgpu::Buffer,
    partials: wgpu::Buffer,
    readback: wgpu::Buffer,
}

struct Resources {
    key: ShapeKey,
    sources: wgpu::Buffer,
    terms: wgpu::Buffer,
    hkl: wgpu::Buffer,
    mask: wgpu::Buffer,
    image: wgpu::Buffer,
    /// Tricubic switch pixel and exact-Bragg bits (`layout::FLAGS_*`).
    flags: wgpu::Buffer,
    flags_readback: wgpu::Buffer,
    panels: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    /// Hashes of the last uploaded params, sources, terms, hkl, mask, panels, tangent params.
    uploaded: [Option<u64>; 7],
}

/// The WGSL kernel on a wgpu device. Create once ([`GpuRenderer::new`] or
/// [`GpuRenderer::new_with_device`]), then call [`GpuRenderer::render`] for each plan: the
/// pipeline is created once; buffers and the bind group are kept while the plan's array sizes do
/// not change, so a warm render only writes changed data and dispatches.
pub struct GpuRenderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: Option<wgpu::AdapterInfo>,
    fma_fused: bool,
    pipeline: wgpu::ComputePipeline,
    /// The tangent kernel's pipeline (`shaders/nanobragg.wgsl` with `TANGENT`), created on first
    /// use.
    pub(super) tangent_pipeline: Option<wgpu::ComputePipeline>,
    /// The VJP's reduction (`shaders/reduce.wgsl`): its pipeline and bind-group layout, created
    /// on first use.
    reduce_pipeline: Option<(wgpu::ComputePipeline, wgpu::BindGroupLayout)>,
    /// The reduction's weights, partials and partials' read-back buffers, kept between VJPs
    /// and only replaced by larger ones (a fit calls the VJP again and again).
    reduce_bufs: Option<ReduceBufs>,
    pipeline_layout: wgpu::PipelineLayout,
    bind_layout: wgpu::BindGroupLayout,
    params_buf: wgpu::Buffer,
    chunk_buf: wgpu::Buffer,
    /// `layout::TanParams` (binding 9; bound for both kernels, read by the tangent kernel).
    tan_buf: wgpu::Buffer,
    /// A cap on the parameters per tangent pass (tests of the split; `gpu::tangent`).
    pub(super) tan_per_pass: Option<usize>,
    res: Option<Resources>,
    /// The read-back's mappable buffers: kept across renders and shapes, replaced only by
    /// larger ones (or when the strategy's chunk count changes).
    staging: Option<Staging>,
    /// How the output is read back (`gpu::readback`; [`readback::READBACK_ENV`]).
    readback: Readback,
    lost: Arc<Mutex<Option<String>>>,
    chunk_budget: u64,
    /// Size tiles by time (off once `set_chunk_budget` fixes the budget).
    adaptive: bool,
    /// Work per submission aimed at the time target (terms; adaptive mode).
    aimed: u64,
    /// Shortest submission seen (s): an upper bound of the fixed cost of one submission.
    overhead_s: f64,
    pipeline_s: f64,
    timings: GpuTimings,
    stats: GpuStats,
    switch_pixel: Option<usize>,
    /// The last render's pixels for the f64 kernel (the exact-Bragg rule).
    fixup: ExactFixup,
}

fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

/// Storage buffers may not be empty: pad to at least 16 bytes.
fn storage_size(bytes: usize) -> u64 {
    (bytes.max(16) as u64).next_multiple_of(4)
}

impl GpuRenderer {
    /// Default largest work per submission, in inner-loop term evaluations (pixels x terms per
    /// pixel). About 10-50 ms on a discrete GPU, well below browser/OS watchdogs.
    pub const DEFAULT_CHUNK_BUDGET: u64 = 1 << 26;
    /// Time a submission aims at (submit to completion).
    pub const CHUNK_TARGET_S: f64 = 0.04;
    /// Work of the first submission of a renderer, before any time is measured.
    pub const FIRST_CHUNK: u64 = 1 << 16;
    /// Least work per submission in adaptive mode (fixed costs dominate below it).
    pub const MIN_CHUNK: u64 = 1 << 14;

    /// Open the default adapter (high performance preferred) and set up the kernel.
    pub async fn new() -> Result<Self> {
        // a bad read-back setting is reported whether or not an adapter opens
        Readback::from_env()?;
        let (device, queue, info) = request_device().await?;
        let mut r = Self::new_with_device(device, queue).await?;
        r.adapter = Some(info);
        Ok(r)
    }

    /// Set up the kernel on a caller's device (tests, the browser). The device should have
    /// [`super::required_limits`]; larger inputs are refused by `render` with `ErrorKind::Gpu`.
    pub async fn new_with_device(device: wgpu::Device, queue: wgpu::Queue) -> Result<Self> {
        Self::new_with_device_and_fma(device, queue, None).await
    }

    /// As [`Self::new_with_device`], but `force_fma = Some(false)` selects Dekker's split for
    /// `two_prod` even where `fma` is fused (tests of the fallback path); `Some(true)` trusts
    /// `fma` without asking the probe. The probe's other checks always run.
    pub async fn new_with_device_and_fma(
        device: wgpu::Device,
        queue: wgpu::Queue,
        force_fma: Option<bool>,
    ) -> Result<Self> {
        let clock = Clock::start();
        let readback = Readback::from_env()?;
        let lost = Arc::new(Mutex::new(None));
        {
            let lost = lost.clone();
            device.set_device_lost_callback(move |reason, msg| {
                if let Ok(mut l) = lost.lock() {
                    *l = Some(format!("GPU device lost ({reason:?}): {msg}"));
                }
            });
        }
        let mut probe = selftest::probe(&device, &queue).await?;
        if let Some(f) = force_fma {
            probe.fma_fused = f;
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bindings = [
            UNIFORM, READ, READ, READ, READ, READ, WRITE, WRITE, READ, UNIFORM,
        ];
        let (bind_layout, pl) = buffer_layouts(&device, "nanobragg kernel", &bindings);
        let pipeline = compute_pipeline(
            &device,
            "nanobragg kernel",
            &shaders::kernel_source(),
            shaders::KERNEL_ENTRY,
            &pl,
            &shaders::constants(probe.fma_fused),
        );
        let buf = |label, size, usage| new_buffer(&device, label, size, usage);
        use wgpu::BufferUsages as U;
        let params_buf = buf(
            "params",
            size_of::<Params>() as u64,
            U::UNIFORM | U::COPY_DST,
        );
        let chunk_buf = buf("chunk", size_of::<Chunk>() as u64, U::STORAGE | U::COPY_DST);
        let tan_buf = buf(
            "tangent params",
            size_of::<TanParams>() as u64,
            U::UNIFORM | U::COPY_DST,
        );
        scope_error(scope.pop().await, "pipeline creation")?;
        // Make sure the pipeline is really compiled before the clock stops.
        let idx = queue.submit([]);
        wait_for(&device, &queue, idx).await?;
        let pipeline_s = clock.seconds();
        Ok(GpuRenderer {
            device,
            queue,
            adapter: None,
            fma_fused: probe.fma_fused,
            pipeline,
            tangent_pipeline: None,
            reduce_pipeline: None,
            reduce_bufs: None,
            pipeline_layout: pl,
            bind_layout,
            params_buf,
            chunk_buf,
            tan_buf,
            tan_per_pass: None,
            res: None,
            staging: None,
            readback,
            lost,
            chunk_budget: Self::DEFAULT_CHUNK_BUDGET,
            adaptive: true,
            aimed: Self::FIRST_CHUNK,
            overhead_s: f64::INFINITY,
            pipeline_s,
            timings: GpuTimings {
                pipeline_s,
                ..Default::default()
            },
            stats: GpuStats {
                pipelines_created: 1,
                buffers_created: 3,
                ..Default::default()
            },
            switch_pixel: None,
            fixup: ExactFixup::default(),
        })
    }

    /// Adapter description when the renderer opened its own device.
    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.adapter.as_ref()
    }

    /// Whether `fma` was found fused on this device (else Dekker's split is used).
    pub fn fma_fused(&self) -> bool {
        self.fma_fused
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Timings of the last render (`pipeline_s` is the one-off set-up cost).
    pub fn timings(&self) -> GpuTimings {
        self.timings
    }

    /// How the output is read back (from [`readback::READBACK_ENV`] at creation).
    pub fn readback(&self) -> Readback {
        self.readback
    }

    /// Read back with `mode` from now on (tests and benchmarks compare the strategies).
    pub fn set_readback(&mut self, mode: Readback) {
        self.readback = mode;
    }

    /// Creation counters.
    pub fn stats(&self) -> GpuStats {
        self.stats
    }

    /// Fixed work per submission in term evaluations (see [`Self::DEFAULT_CHUNK_BUDGET`]); turns
    /// off sizing tiles by time (tests that count tiles; callers that cannot cancel and want
    /// throughput, like the CLI).
    pub fn set_chunk_budget(&mut self, terms: u64) {
        self.chunk_budget = terms.max(1);
        self.adaptive = false;
    }

    /// Work for the next submission: the fixed budget, or (adaptive) the aimed work, a quarter
    /// of it for the first tile of a render.
    fn next_budget(&self, first_tile: bool) -> u64 {
        if !self.adaptive {
            return self.chunk_budget;
        }
        let aimed = if first_tile {
            self.aimed / 4
        } else {
            self.aimed
        };
        aimed.clamp(Self::MIN_CHUNK.min(self.chunk_budget), self.chunk_budget)
    }

    /// Learn from a submission of `terms` terms that took `seconds` (submit to completion),
    /// modelled as a fixed cost (bounded by the shortest submission seen) plus work: scale the
    /// aimed work so that a submission takes the target, or 8× the fixed cost where that is
    /// longer (emulated devices: lavapipe spends 30-50 ms per submission whatever its size, and
    /// smaller tiles would only multiply that), at most 4× either way. A fast submission never
    /// lowers the aim (a short tile at the end of the image says nothing about the device).
    fn learn_time(&mut self, terms: u64, seconds: f64) {
        if !self.adaptive || seconds <= 0.0 {
            return; // no clock (wasm32 without js-sys)
        }
        self.overhead_s = self.overhead_s.min(seconds);
        let target = Self::CHUNK_TARGET_S.max(8.0 * self.overhead_s);
        let work = seconds - self.overhead_s;
        let factor = if work <= 0.1 * seconds {
            4.0
        } else {
            ((target - self.overhead_s) / work).clamp(0.25, 4.0)
        };
        let scaled = (terms as f64 * factor) as u64;
        self.aimed = if factor >= 1.0 {
            self.aimed.max(scaled)
        } else {
            scaled
        }
        .clamp(Self::MIN_CHUNK, self.chunk_budget.max(Self::MIN_CHUNK));
    }

    /// The last render's pixels under the exact-Bragg rule, left as the GPU computed them: the
    /// caller renders them with the f64 kernel (`cpu::apply_exact_fixup`, as `api::Renderer`
    /// does); the GPU driver does not depend on the CPU kernel.
    pub fn exact_fixup(&self) -> &ExactFixup {
        &self.fixup
    }

    pub(super) fn set_exact_fixup(&mut self, f: ExactFixup) {
        self.fixup = f;
    }

    /// Run `f` with tiles of the fixed chunk budget (nothing to cancel), then restore.
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn without_adaptive_tiles<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let adaptive = std::mem::replace(&mut self.adaptive, false);
        let out = f(self);
        self.adaptive = adaptive;
        out
    }

    /// Raster index of the pixel where tricubic interpolation was switched off in the last
    /// render (MODEL §6.4: upstream prints a warning once), if it was.
    pub fn interpolation_switch_pixel(&self) -> Option<usize> {
        self.switch_pixel
    }

    fn check_lost(&self) -> Result<()> {
        match self.lost.lock().ok().and_then(|l| l.clone()) {
            Some(msg) => Err(Error::gpu(msg)),
            None => Ok(()),
        }
    }

    /// Check that the plan's arrays fit this device; the caller can fall back to the CPU.
    fn check_fits(&self, what: &str, bytes: u64) -> Result<()> {
        let limits = self.device.limits();
        let max = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        if bytes > max {
            return Err(Error::gpu(format!(
                "{what} needs {bytes} bytes, more than this GPU's storage-buffer limit of {max} \
                 bytes; use the CPU backend"
            )));
        }
        Ok(())
    }

    fn ensure_resources(&mut self, key: ShapeKey) {
        let key = match self.res.as_ref() {
            Some(r) if r.key.serves(&key) => return,
            // the same detector: the output and terms buffers only grow (see `ShapeKey::serves`)
            Some(r) if r.key.flags == key.flags => ShapeKey {
                image: key.image.max(r.key.image),
                terms: key.terms.max(r.key.terms),
                ..key
            },
            _ => key,
        };
        use wgpu::BufferUsages as U;
        let dev = &self.device;
        let mut created = 0;
        let mut buf = |label, size, usage| {
            created += 1;
            new_buffer(dev, label, size, usage)
        };
        let sources = buf("sources", key.sources, U::STORAGE | U::COPY_DST);
        let terms = buf("terms", key.terms, U::STORAGE | U::COPY_DST);
        let hkl = buf("hkl", key.hkl, U::STORAGE | U::COPY_DST);
        let mask = buf("mask", key.mask, U::STORAGE | U::COPY_DST);
        let image = buf("image", key.image, U::STORAGE | U::COPY_SRC);
        let flags = buf("flags", key.flags, U::STORAGE | U::COPY_DST | U::COPY_SRC);
        let flags_readback = buf("flags readback", key.flags, U::MAP_READ | U::COPY_DST);
        let panels = buf("panels", key.panels, U::STORAGE | U::COPY_DST);
        let bind_group = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("nanobragg kernel"),
            layout: &self.bind_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.params_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: self.chunk_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: sources.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: terms.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: hkl.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 5,
                    resource: mask.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: image.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 7,
                    resource: flags.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 8,
                    resource: panels.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 9,
                    resource: self.tan_buf.as_entire_binding(),
                },
            ],
        });
        self.stats.buffers_created += created;
        self.stats.bind_groups_created += 1;
        self.res = Some(Resources {
            key,
            sources,
            terms,
            hkl,
            mask,
            image,
            flags,
            flags_readback,
            panels,
            bind_group,
            uploaded: [None; 7],
        });
    }

    /// Render `plan`; returns the float image (`fpixels * spixels`, fast index fastest), whose
    /// pixels under the exact-Bragg rule ([`GpuRenderer::exact_fixup`]) still need the f64 kernel.
    /// `progress` receives the finished fraction after each tile; `cancel` is checked before
    /// each tile (then the result is `ErrorKind::Cancelled`).
    pub async fn render(
        &mut self,
        plan: &Plan,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        let no_planes: &mut [MaybeUninit<f32>] = &mut [];
        self.render_pass(plan, None, 1, no_planes, progress, cancel)
            .await
    }

    /// The tangent kernel's pipeline, created on first use (same layout and constants as the
    /// image kernel's).
    pub(super) async fn ensure_tangent_pipeline(&mut self) -> Result<()> {
        if self.tangent_pipeline.is_some() {
            return Ok(());
        }
        let clock = Clock::start();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = compute_pipeline(
            &self.device,
            "nanobragg tangent kernel",
            &shaders::tangent_source(),
            shaders::TANGENT_ENTRY,
            &self.pipeline_layout,
            &shaders::constants(self.fma_fused),
        );
        scope_error(scope.pop().await, "tangent pipeline creation")?;
        let idx = self.queue.submit([]);
        wait_for(&self.device, &self.queue, idx).await?;
        self.stats.pipelines_created += 1;
        self.pipeline_s += clock.seconds();
        self.tangent_pipeline = Some(pipeline);
        Ok(())
    }

    /// One pass of the image kernel (`tan` = None: returns the image) or of the tangent kernel
    /// (writes `1 + tan.params.count` planes of `pixels` values: the image, then one tangent
    /// image per parameter), of which the first `read_planes` are read back and returned: the
    /// image, returned, and the planes after it, written into `out_planes` (`read_planes - 1`
    /// planes; the others stay in the output buffer, for [`Self::reduce_tangent_planes`]). The
    /// pixels under the exact-Bragg rule are reported as for [`Self::render`].
    pub(super) async fn render_pass<T: Sample>(
        &mut self,
        plan: &Plan,
        tan: Option<&TangentPass>,
        read_planes: usize,
        out_planes: &mut [MaybeUninit<T>],
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        let total = Clock::start();
        self.check_lost()?;
        if plan.hkl.hkls != 0 {
            let h = &plan.hkl;
            let entries =
                (h.h_range() as u64 + 1) * (h.k_range() as u64 + 1) * (h.l_range() as u64 + 1);
            self.check_fits("the HKL table", entries * 4)?;
        }
        validate(plan)?;

        // ---- pack and upload ----
        let first_pixel = layout::first_sequence_pixel(plan);
        let params = layout::pack_params(plan, first_pixel);
        let sources: Vec<GpuSource> = layout::pack_sources(plan);
        let mut terms: Vec<GpuTerm> = layout::pack_terms(plan, first_pixel != NO_PIXEL);
        let planes = tan.map_or(1, |t| 1 + t.params.count as usize);
        if let Some(t) = tan {
            terms.extend_from_slice(&t.terms);
        }
        let hkl: Vec<f32> = if params.flags & layout::FLAG_HKL != 0 {
            layout::pack_hkl(plan)
        } else {
            Vec::new()
        };
        let mask: Vec<u32> = layout::pack_mask(plan).unwrap_or_default();
        let panels: Vec<GpuPanel> = layout::pack_panels(plan);
        let pixels = plan.pixel_count();
        let image_bytes = (planes * pixels * size_of::<f32>()) as u64;
        let bytes = |v: usize| v as u64;
        self.check_fits("the HKL table", bytes(size_of_val(&hkl[..])))?;
        self.check_fits(
            "the orientation x source table",
            bytes(size_of_val(&terms[..])),
        )?;
        self.check_fits("the source table", bytes(size_of_val(&sources[..])))?;
        self.check_fits("the mask", bytes(size_of_val(&mask[..])))?;
        self.check_fits(
            if planes > 1 {
                "the image and its tangents"
            } else {
                "the image"
            },
            image_bytes,
        )?;
        if plan.spixels > (u32::MAX / 8) as usize || plan.fpixels.div_ceil(8) > 65535 {
            return Err(Error::gpu(
                "detector too large for one GPU dispatch grid; use the CPU backend",
            ));
        }
        let key = ShapeKey {
            sources: storage_size(size_of_val(&sources[..])),
            terms: storage_size(size_of_val(&terms[..])),
            hkl: storage_size(size_of_val(&hkl[..])),
            mask: storage_size(size_of_val(&mask[..])),
            image: storage_size(planes * pixels * size_of::<f32>()),
            flags: (layout::flags_words(pixels) * size_of::<u32>()) as u64,
            panels: storage_size(size_of_val(&panels[..])),
        };
        let cold = self.res.as_ref().is_none_or(|r| !r.key.serves(&key));
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        self.ensure_resources(key);
        let res = self.res.as_mut().expect("resources");
        let mut uploaded = 0u64;
        {
            let queue = &self.queue;
            let mut upload = |slot: usize, buffer: &wgpu::Buffer, bytes: &[u8]| {
                let h = hash_bytes(bytes);
                if res.uploaded[slot] != Some(h) && !bytes.is_empty() {
                    queue.write_buffer(buffer, 0, bytes);
                    uploaded += bytes.len() as u64;
                }
                res.uploaded[slot] = Some(h);
            };
            upload(0, &self.params_buf, bytemuck::bytes_of(&params));
            upload(1, &res.sources, bytemuck::cast_slice(&sources));
            upload(2, &res.terms, bytemuck::cast_slice(&terms));
            upload(3, &res.hkl, bytemuck::cast_slice(&hkl));
            upload(4, &res.mask, bytemuck::cast_slice(&mask));
            upload(5, &res.panels, bytemuck::cast_slice(&panels));
            if let Some(t) = tan {
                upload(6, &self.tan_buf, bytemuck::bytes_of(&t.params));
            }
            queue.write_buffer(&res.flags, 0, bytemuck::cast_slice(&layout::flags_header()));
        }
        let header_bytes = (FLAGS_HEADER_WORDS * size_of::<u32>()) as u64;
        {
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.clear_buffer(&res.flags, header_bytes, None);
            self.queue.submit([enc.finish()]);
        }
        self.stats.last_upload_bytes = uploaded + header_bytes;
        let upload_s = total.seconds();

        // ---- dispatch in tiles ----
        let dispatch = Clock::start();
        // a tangent costs about what the term it follows costs (budget in image terms)
        let tpp = plan.terms_per_pixel().max(1) * planes as u64;
        let mut tiles: Vec<Tile> = Vec::new();
        let tricubic = params.interp == layout::INTERP_TRICUBIC;
        self.switch_pixel = None;
        let total_px = pixels.max(1) as f64;
        let mut done = 0usize;
        let mut at = Cursor::default();
        while at.row < plan.spixels {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::cancelled());
            }
            let budget = self.next_budget(tiles.is_empty());
            let (t, next) = next_tile(at, plan.fpixels, plan.spixels, tpp, budget);
            let clock = Clock::start();
            self.run_chunk(&t, NO_PIXEL, tan.is_some()).await?;
            self.learn_time(t.pixels() as u64 * tpp, clock.seconds());
            tiles.push(t);
            done += t.pixels();
            progress((done as f64 / total_px) as f32);
            at = next;
        }
        let chunks = tiles.len() as u32;
        if tricubic {
            // MODEL §6.4/§9.6: the first pixel (raster order) with an out-of-range tricubic term
            // switches interpolation off for itself (from that term on) and every later pixel.
            // Re-render from that pixel's row with the switch point known.
            let bytes = self.read_flags(header_bytes).await?;
            let p = bytemuck::cast_slice::<u8, u32>(&bytes)[layout::FLAGS_SWITCH];
            if p != NO_PIXEL {
                self.switch_pixel = Some(p as usize);
                let row = p as usize / plan.fpixels;
                for t in tiles.iter().filter(|t| t.row0 + t.rows > row) {
                    if cancel.load(Ordering::Relaxed) {
                        return Err(Error::cancelled());
                    }
                    self.run_chunk(t, p, tan.is_some()).await?;
                }
            }
        }
        let dispatch_s = dispatch.seconds();

        // Pixels under the exact-Bragg rule (crate::terms::EXACT_BRAGG): upstream's value there is
        // an f64 rounding artefact that only the f64 kernel reproduces.
        let flag_bytes = self.read_flags(key.flags).await?;
        let exact = layout::exact_bragg_pixels(bytemuck::cast_slice(&flag_bytes), pixels);
        // ---- read back ----
        let rb = Clock::start();
        let read_planes = read_planes.clamp(1, planes);
        assert_eq!(
            out_planes.len(),
            (read_planes - 1) * pixels,
            "planes to read back"
        );
        let read_bytes = (read_planes * pixels * size_of::<f32>()) as u64;
        let mode = self.readback;
        if !self
            .staging
            .as_ref()
            .is_some_and(|s| s.fits(read_bytes, mode))
        {
            // only ever larger: a render that reads less uses a prefix
            let held = self.staging.as_ref().map_or(0, Staging::bytes);
            let staging = Staging::new(&self.device, read_bytes.max(held), mode);
            self.stats.buffers_created += staging.buffer_count() as u32;
            self.staging = Some(staging);
        }
        let res = self.res.as_ref().expect("resources");
        let staging = self.staging.as_ref().expect("staging buffers");
        let mut image = Fresh::<f32>::new(pixels, mode.huge_pages);
        let times = readback::read(
            &self.device,
            &self.queue,
            &res.image,
            staging,
            &mut Sink {
                head: image.slots(),
                tail: out_planes,
            },
            mode,
        )
        .await?;
        // SAFETY: `read` wrote every value of its sink (image and planes) or failed above.
        let image = unsafe { image.finish() };
        scope_error(oom.pop().await, "render (out of GPU memory)")?;
        scope_error(scope.pop().await, "render")?;
        self.check_lost()?;
        let readback_s = rb.seconds();
        self.stats.last_exact_bragg_pixels = exact.len();
        self.fixup = ExactFixup {
            pixels: exact,
            tricubic,
            interp_switch: self.switch_pixel,
            first_pixel: (first_pixel != NO_PIXEL).then_some(first_pixel as usize),
        };
        self.stats.renders += 1;
        self.timings = GpuTimings {
            pipeline_s: self.pipeline_s,
            upload_s,
            dispatch_s,
            readback_s,
            readback_wait_s: times.wait_s,
            readback_copy_s: times.copy_s,
            total_s: total.seconds(),
            chunks,
            cold,
        };
        Ok(image)
    }

    /// The vector–Jacobian product of the last tangent pass (`shaders/reduce.wgsl`): for each
    /// of its `count` parameters Σ_i weights_i · tangent(i), from the planes left in the output
    /// buffer, as partial sums per workgroup (f32, 256 × `per` pixels each, `per` ≥ 8, in a
    /// fixed order: the same bits whatever the scheduling) added here in f64 in index order. Only the partials
    /// are read back.
    pub(super) async fn reduce_tangent_planes(
        &mut self,
        count: usize,
        weights: &[f32],
    ) -> Result<Vec<f64>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        self.check_lost()?;
        let pixels = weights.len();
        let wg = shaders::REDUCE_WORKGROUP as usize;
        // at least 8 pixels per invocation (fewer workgroups and barriers), and at most 65535
        // workgroups per dimension
        let per = pixels.div_ceil(wg * 65535).max(8);
        let groups = pixels.div_ceil(wg * per).max(1);
        if count > 65535 {
            return Err(Error::gpu("too many parameters for one reduction"));
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        if self.reduce_pipeline.is_none() {
            let label = "nanobragg vjp reduction";
            let bindings = [UNIFORM, READ, READ, WRITE];
            let (bl, pl) = buffer_layouts(&self.device, label, &bindings);
            let pipeline = compute_pipeline(
                &self.device,
                label,
                shaders::REDUCE,
                shaders::REDUCE_ENTRY,
                &pl,
                &[],
            );
            self.stats.pipelines_created += 1;
            self.reduce_pipeline = Some((pipeline, bl));
        }
        let (pipeline, bl) = self.reduce_pipeline.as_ref().expect("reduce pipeline");
        let res = self
            .res
            .as_ref()
            .expect("a tangent pass before the reduction");
        let dev = &self.device;
        use wgpu::util::DeviceExt;
        use wgpu::BufferUsages as U;
        let params = ReduceParams {
            pixels: pixels as u32,
            per: per as u32,
            groups: groups as u32,
            _pad: 0,
        };
        let ubuf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("reduce params"),
            contents: bytemuck::bytes_of(&params),
            usage: U::UNIFORM,
        });
        let part_bytes = (count * groups * size_of::<f32>()) as u64;
        let weight_bytes = storage_size(size_of_val(weights));
        let mut created = 1;
        let keep = self
            .reduce_bufs
            .take()
            .filter(|b| b.weights.size() >= weight_bytes && b.partials.size() >= part_bytes);
        let bufs = keep.unwrap_or_else(|| {
            created += 3;
            let buf = |label, size, usage| new_buffer(dev, label, size, usage);
            ReduceBufs {
                weights: buf("vjp weights", weight_bytes, U::STORAGE | U::COPY_DST),
                partials: buf("vjp partials", part_bytes, U::STORAGE | U::COPY_SRC),
                readback: buf(
                    "vjp partials readback",
                    part_bytes,
                    U::MAP_READ | U::COPY_DST,
                ),
            }
        });
        self.stats.buffers_created += created;
        self.queue
            .write_buffer(&bufs.weights, 0, bytemuck::cast_slice(weights));
        let (wbuf, pbuf, rbuf) = (&bufs.weights, &bufs.partials, &bufs.readback);
        let planes_bytes = ((1 + count) * pixels * size_of::<f32>()) as u64;
        let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("nanobragg vjp reduction"),
            layout: bl,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: ubuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &res.image,
                        offset: 0,
                        size: std::num::NonZeroU64::new(planes_bytes),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: wbuf,
                        offset: 0,
                        size: std::num::NonZeroU64::new(weight_bytes),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: pbuf,
                        offset: 0,
                        size: std::num::NonZeroU64::new(part_bytes),
                    }),
                },
            ],
        });
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("nanobragg vjp reduction"),
        });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("nanobragg vjp reduction"),
                timestamp_writes: None,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(groups as u32, count as u32, 1);
        }
        enc.copy_buffer_to_buffer(pbuf, 0, rbuf, 0, part_bytes);
        self.queue.submit([enc.finish()]);
        let bytes = read_buffer(&self.device, rbuf, part_bytes).await;
        self.reduce_bufs = Some(bufs);
        let bytes = bytes?;
        scope_error(scope.pop().await, "vjp reduction")?;
        self.check_lost()?;
        let partials: &[f32] = bytemuck::cast_slice(&bytes);
        Ok(partials
            .chunks(groups)
            .map(|c| c.iter().map(|&v| v as f64).sum())
            .collect())
    }

    async fn run_chunk(&mut self, t: &Tile, switch_pixel: u32, tangent: bool) -> Result<()> {
        let res = self.res.as_ref().expect("resources");
        let pipeline = if tangent {
            self.tangent_pipeline.as_ref().expect("tangent pipeline")
        } else {
            &self.pipeline
        };
        let chunk = Chunk {
            row0: t.row0 as u32,
            rows: t.rows as u32,
            col0: t.col0 as u32,
            cols: t.cols as u32,
            switch_pixel,
            ..Default::default()
        };
        self.queue
            .write_buffer(&self.chunk_buf, 0, bytemuck::bytes_of(&chunk));
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("nanobragg chunk"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("nanobragg"),
                timestamp_writes: None,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &res.bind_group, &[]);
            let [wx, wy] = shaders::KERNEL_WORKGROUP;
            pass.dispatch_workgroups(
                (t.cols as u32).div_ceil(wx),
                (t.rows as u32).div_ceil(wy),
                1,
            );
        }
        let idx = self.queue.submit([enc.finish()]);
        wait_for(&self.device, &self.queue, idx).await?;
        self.check_lost()
    }

    async fn read_flags(&self, size: u64) -> Result<Vec<u8>> {
        let res = self.res.as_ref().expect("resources");
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&res.flags, 0, &res.flags_readback, 0, size);
        self.queue.submit([enc.finish()]);
        read_buffer(&self.device, &res.flags_readback, size).await
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl GpuRenderer {
    /// Blocking [`GpuRenderer::new`] (native only).
    pub fn new_blocking() -> Result<Self> {
        pollster::block_on(Self::new())
    }

    /// Blocking [`GpuRenderer::render`] without progress or cancellation (native only).
    /// With nothing to cancel, tiles are not sized by time: each submission takes the chunk
    /// budget (on emulated devices many small submissions cost throughput).
    pub fn render_blocking(&mut self, plan: &Plan) -> Result<Vec<f32>> {
        let cancel = AtomicBool::new(false);
        let adaptive = std::mem::replace(&mut self.adaptive, false);
        let out = pollster::block_on(self.render(plan, &mut |_| {}, &cancel));
        self.adaptive = adaptive;
        out
    }

    /// Blocking render with progress and cancel (native only).
    pub fn render_blocking_with(
        &mut self,
        plan: &Plan,
        progress: &mut dyn FnMut(f32),
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        pollster::block_on(self.render(plan, progress, cancel))
    }
}

/// What a tangent pass adds to an image pass (`gpu::tangent`): the uniform and the term
/// tangents appended to the terms buffer (`layout::pack_tangent`).
pub(super) struct TangentPass {
    pub params: TanParams,
    pub terms: Vec<GpuTerm>,
}

/// A rectangle of pixels dispatched in one submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tile {
    row0: usize,
    rows: usize,
    col0: usize,
    cols: usize,
}

impl Tile {
    fn pixels(&self) -> usize {
        self.rows * self.cols
    }
}

/// Where the next tile starts, and the height of the band of rows being cut into pieces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cursor {
    row: usize,
    col: usize,
    band: usize,
}

/// The next tile at `at` with at most `budget` term evaluations where possible: whole rows
/// when `at` starts a row and a row fits; otherwise a band of rows, chosen at its first piece,
/// cut into pieces a whole number of workgroups (`shaders::KERNEL_WORKGROUP`) wide: bands of a
/// workgroup's height when the budget holds a workgroup, else of as many rows as it holds
/// workgroup-wide pieces of (so an emulated device that runs a workgroup's rows one after the
/// other still finishes a piece quickly). The least piece is one row of a workgroup's width.
/// Returns the tile and the cursor after it.
fn next_tile(at: Cursor, fpixels: usize, spixels: usize, tpp: u64, budget: u64) -> (Tile, Cursor) {
    let [wx, wy] = shaders::KERNEL_WORKGROUP.map(|w| w as usize);
    let row_cost = (fpixels as u64).max(1).saturating_mul(tpp);
    if at.col == 0 && row_cost <= budget {
        let rows = ((budget / row_cost) as usize).clamp(1, spixels - at.row);
        let t = Tile {
            row0: at.row,
            rows,
            col0: 0,
            cols: fpixels,
        };
        let next = Cursor {
            row: at.row + rows,
            ..Cursor::default()
        };
        return (t, next);
    }
    let px = (budget / tpp.max(1)).max(1) as usize;
    let band = if at.col == 0 {
        let rows = if px >= wx * wy {
            wy
        } else {
            (px / wx).clamp(1, wy)
        };
        rows.min(spixels - at.row)
    } else {
        at.band
    };
    let cols = (px / band / wx * wx).max(wx).min(fpixels - at.col);
    let t = Tile {
        row0: at.row,
        rows: band,
        col0: at.col,
        cols,
    };
    let next = if at.col + cols >= fpixels {
        Cursor {
            row: at.row + band,
            ..Cursor::default()
        }
    } else {
        Cursor {
            col: at.col + cols,
            band,
            ..at
        }
    };
    (t, next)
}

/// Structural checks of the plan (the resolver guarantees these; a hand-built plan may not).
fn validate(plan: &Plan) -> Result<()> {
    let n_orient = plan.phisteps as usize * plan.mosaic_domains as usize;
    if plan.orientations.len() != n_orient {
        return Err(Error::gpu(format!(
            "plan has {} orientations, expected phisteps*domains = {n_orient}",
            plan.orientations.len()
        )));
    }
    if !plan.orientations_first.is_empty() && plan.orientations_first.len() != n_orient {
        return Err(Error::gpu("plan.orientations_first has the wrong length"));
    }
    if plan.sources.is_empty() || plan.oversample == 0 || plan.thicksteps == 0 {
        return Err(Error::gpu(
            "plan has no sources, oversample 0 or no detector layers",
        ));
    }
    if let Some(m) = &plan.mask {
        if m.len() < plan.pixel_count() {
            return Err(Error::gpu("mask is smaller than the detector"));
        }
    }
    let hkl = &plan.hkl;
    if hkl.hkls != 0 && !hkl.data.is_empty() {
        let want = (hkl.h_range() + 1) as usize
            * (hkl.k_range() + 1) as usize
            * (hkl.l_range() + 1) as usize;
        if hkl.data.len() != want {
            return Err(Error::gpu(format!(
                "HKL table has {} entries, expected {want}",
                hkl.data.len()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiles cover every pixel exactly once, whatever the budget.
    #[test]
    fn tiles_cover_the_image_once() {
        for (fp, sp, tpp, budgets) in [
            (64usize, 64usize, 4u64, vec![1u64, 100, 1000, 1 << 20]),
            (100, 37, 20000, vec![1, 20000, 1 << 22, 1 << 30]),
            (5, 3, 1, vec![1, 2, 7]),
        ] {
            for (i, budget) in budgets.iter().enumerate() {
                let mut seen = vec![0u8; fp * sp];
                let mut at = Cursor::default();
                let mut n = 0;
                while at.row < sp {
                    // budgets that change from tile to tile, as in adaptive mode
                    let b = if n % 2 == 0 {
                        *budget
                    } else {
                        budgets[(i + 1) % budgets.len()]
                    };
                    let (t, next) = next_tile(at, fp, sp, tpp, b);
                    for r in t.row0..t.row0 + t.rows {
                        for c in t.col0..t.col0 + t.cols {
                            seen[r * fp + c] += 1;
                        }
                    }
                    at = next;
                    n += 1;
                }
                assert!(seen.iter().all(|&v| v == 1), "{fp}x{sp} budget {budget}");
            }
        }
    }
}
