//! Device acquisition and small helpers shared by the renderer and the self-test: the kernels'
//! bind group and pipeline layouts and compute pipelines, buffer read-back, waiting for submitted
//! work, error scopes, a wall clock that also builds on wasm32.

use crate::error::{Error, Result};

/// Limits this crate requests: the WebGPU defaults (8 storage buffers per stage, 16 KiB
/// workgroup storage, 256 invocations per workgroup), with the storage-buffer binding size and
/// the maximum buffer size raised to whatever the adapter offers (the HKL table and the image
/// can be large). The kernels bind 8 storage buffers and 2 uniform buffers (the tangent
/// kernel's parameters are the second uniform, its term tangents follow the terms and its
/// tangent images the image in their buffers, to stay within the defaults).
pub fn required_limits(adapter: &wgpu::Adapter) -> wgpu::Limits {
    let have = adapter.limits();
    wgpu::Limits {
        max_storage_buffer_binding_size: have.max_storage_buffer_binding_size,
        max_buffer_size: have.max_buffer_size,
        ..wgpu::Limits::default()
    }
}

/// The environment variable that picks the adapter (native only): `pci:<bus id>` (as
/// `nvidia-smi --query-gpu=pci.bus_id` prints it or as Vulkan reports it; the domain's leading
/// zeros and the case do not matter), an index into the adapters wgpu lists, or a part of the
/// adapter's name. Vulkan ignores `CUDA_VISIBLE_DEVICES`: the dataset tool's Ray engine sets
/// this from the GPU Ray assigned.
pub const ADAPTER_ENV: &str = "NANOBRAGG_GPU_ADAPTER";

/// `0000:3B:00.0`, `00000000:3b:00.0` -> `3b:00.0` (bus:device.function, lower case).
#[cfg(not(target_arch = "wasm32"))]
fn pci_key(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let parts: Vec<&str> = id.split(':').collect();
    match parts.len() {
        3 => format!("{}:{}", parts[1], parts[2]),
        _ => id,
    }
}

#[cfg(not(target_arch = "wasm32"))]
async fn pick_adapter(instance: &wgpu::Instance, want: &str) -> Result<wgpu::Adapter> {
    let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(|a| a.get_info()).collect();
    let found = if let Some(bus) = want.strip_prefix("pci:") {
        let key = pci_key(bus);
        infos
            .iter()
            .position(|i| !i.device_pci_bus_id.is_empty() && pci_key(&i.device_pci_bus_id) == key)
    } else if let Ok(k) = want.parse::<usize>() {
        (k < infos.len()).then_some(k)
    } else {
        let w = want.to_ascii_lowercase();
        infos
            .iter()
            .position(|i| i.name.to_ascii_lowercase().contains(&w))
    };
    match found {
        Some(k) => Ok(adapters.into_iter().nth(k).expect("index in range")),
        None => {
            let list: Vec<String> = infos
                .iter()
                .enumerate()
                .map(|(k, i)| format!("{k}: {} (pci {:?})", i.name, i.device_pci_bus_id))
                .collect();
            Err(Error::gpu(format!(
                "{ADAPTER_ENV}={want}: no GPU adapter matches (adapters: {})",
                if list.is_empty() {
                    "none".to_string()
                } else {
                    list.join("; ")
                }
            )))
        }
    }
}

/// Request an adapter (high performance preferred, or the one [`ADAPTER_ENV`] names) and a
/// device with [`required_limits`].
pub async fn request_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo)> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    #[cfg(not(target_arch = "wasm32"))]
    let chosen = match std::env::var(ADAPTER_ENV) {
        Ok(want) if !want.trim().is_empty() => Some(pick_adapter(&instance, want.trim()).await?),
        _ => None,
    };
    #[cfg(target_arch = "wasm32")]
    let chosen: Option<wgpu::Adapter> = None;
    let adapter = match chosen {
        Some(a) => a,
        None => instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::gpu(no_adapter(&e)))?,
    };
    let info = adapter.get_info();
    let limits = required_limits(&adapter);
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("nanobragg"),
            required_features: wgpu::Features::empty(),
            required_limits: limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        })
        .await
        .map_err(|e| Error::gpu(format!("could not open GPU device on {}: {e}", info.name)))?;
    Ok((device, queue, info))
}

/// Why no adapter opened, with what the user can do where they are: natively, install a
/// Vulkan driver (Mesa's lavapipe without a GPU); in the browser, it is the browser's WebGPU.
fn no_adapter(e: &dyn std::fmt::Display) -> String {
    if cfg!(target_arch = "wasm32") {
        format!(
            "no WebGPU adapter in this browser ({e}): WebGPU may be off or unsupported here; \
             the CPU backend renders the same image"
        )
    } else {
        format!(
            "no GPU adapter found ({e}); on Linux without a GPU install Mesa's lavapipe \
             (mesa-vulkan-drivers), or use the CPU backend"
        )
    }
}

/// Wait until the GPU has finished the given submission (natively: a blocking poll; in the
/// browser: a promise on `onSubmittedWorkDone`).
pub async fn wait_for(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    index: wgpu::SubmissionIndex,
) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = queue;
        device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(index),
                timeout: None,
            })
            .map_err(|e| Error::gpu(format!("GPU wait failed: {e}")))?;
        Ok(())
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = (device, index);
        let (tx, rx) = futures_channel::oneshot::channel();
        queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        rx.await
            .map_err(|_| Error::gpu("GPU device lost while waiting for work"))
    }
}

/// Map `buffer[..size]` for reading and copy it out; the buffer is unmapped again.
pub async fn read_buffer(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>> {
    read_buffer_with(device, buffer, size, |b| b.to_vec()).await
}

/// A uniform buffer binding (`buffer_layouts`).
pub const UNIFORM: wgpu::BufferBindingType = wgpu::BufferBindingType::Uniform;
/// A read-only storage buffer binding.
pub const READ: wgpu::BufferBindingType = wgpu::BufferBindingType::Storage { read_only: true };
/// A read-write storage buffer binding.
pub const WRITE: wgpu::BufferBindingType = wgpu::BufferBindingType::Storage { read_only: false };

/// The bind group layout of buffers `bindings` (binding i of type `bindings[i]`, seen by the
/// compute stage) and the pipeline layout of that one group.
pub fn buffer_layouts(
    device: &wgpu::Device,
    label: &str,
    bindings: &[wgpu::BufferBindingType],
) -> (wgpu::BindGroupLayout, wgpu::PipelineLayout) {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = (0u32..)
        .zip(bindings)
        .map(|(binding, &ty)| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    });
    let pipeline = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &[Some(&group)],
        immediate_size: 0,
    });
    (group, pipeline)
}

/// The compute pipeline of `entry` in the WGSL `source` (module and pipeline named `label`) on
/// `layout`, with the pipeline-overridable `constants`.
pub fn compute_pipeline(
    device: &wgpu::Device,
    label: &str,
    source: &str,
    entry: &str,
    layout: &wgpu::PipelineLayout,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache: None,
    })
}

/// A buffer of `size` bytes, not mapped at creation.
pub fn new_buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: false,
    })
}

/// A read mapping asked for with `map_async` (its callback's answer on `rx`): wait for the
/// submission `index` (natively; `None`: for all work) and for the mapping.
pub async fn wait_mapped(
    device: &wgpu::Device,
    index: Option<wgpu::SubmissionIndex>,
    rx: futures_channel::oneshot::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    device
        .poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        })
        .map_err(|e| Error::gpu(format!("GPU wait failed: {e}")))?;
    #[cfg(target_arch = "wasm32")]
    let _ = (device, index);
    rx.await
        .map_err(|_| Error::gpu("GPU read-back cancelled (device lost?)"))?
        .map_err(|e| Error::gpu(format!("GPU read-back failed: {e}")))
}

/// Map `buffer[..size]` for reading and hand the bytes to `f`; the buffer is unmapped again.
async fn read_buffer_with<T>(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
    size: u64,
    f: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
    let slice = buffer.slice(..size);
    let (tx, rx) = futures_channel::oneshot::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    wait_mapped(device, None, rx).await?;
    let data = f(&slice
        .get_mapped_range()
        .map_err(|e| Error::gpu(format!("GPU read-back failed: {e}")))?);
    buffer.unmap();
    Ok(data)
}

/// Convert a popped error scope into our error type.
pub fn scope_error(e: Option<wgpu::Error>, what: &str) -> Result<()> {
    match e {
        None => Ok(()),
        Some(e) => Err(Error::gpu(format!("GPU error during {what}: {e}"))),
    }
}

/// Wall clock for [`super::GpuTimings`] and for sizing tiles by time: `Instant` natively,
/// `Date.now()` (millisecond resolution) in the browser build; on wasm32 without the `wasm`
/// feature (no js-sys) all durations read 0.
#[derive(Clone, Copy)]
pub struct Clock {
    #[cfg(not(target_arch = "wasm32"))]
    start: std::time::Instant,
    #[cfg(target_arch = "wasm32")]
    start_ms: f64,
}

#[cfg(all(target_arch = "wasm32", feature = "wasm"))]
fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[cfg(all(target_arch = "wasm32", not(feature = "wasm")))]
fn now_ms() -> f64 {
    0.0
}

impl Clock {
    pub fn start() -> Self {
        Clock {
            #[cfg(not(target_arch = "wasm32"))]
            start: std::time::Instant::now(),
            #[cfg(target_arch = "wasm32")]
            start_ms: now_ms(),
        }
    }
    pub fn seconds(&self) -> f64 {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.start.elapsed().as_secs_f64()
        }
        #[cfg(target_arch = "wasm32")]
        {
            (now_ms() - self.start_ms) * 1e-3
        }
    }
}
