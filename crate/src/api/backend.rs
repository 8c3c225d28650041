//! The one backend policy: which engine renders, and how many CPU threads.

use super::*;

/// The engine that renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Cpu,
    Gpu,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cpu => "cpu",
            Engine::Gpu => "gpu",
        }
    }
}

/// What [`choose_backend`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub engine: Engine,
    /// When the GPU is unavailable or fails, render on the CPU (with a notice) instead of
    /// failing.
    pub fallback_to_cpu: bool,
}

/// The one backend policy, for the CLI, the bench and the browser alike:
///
/// * `cpu`: the CPU;
/// * `gpu`: the GPU, or an error when none can be opened (no fallback);
/// * `auto` with `f64`: the CPU, because only the CPU kernel is bit-exact with upstream (the GPU
///   kernel computes in double-float pairs of f32);
/// * `auto` with `f32`: the GPU when this build has the GPU kernel and an adapter opens, else the
///   CPU with a notice. A software adapter (the CPU emulating a GPU: see [`software_gpu`]) is
///   passed over for the CPU kernels, which are many times faster, with a notice
///   ([`Renderer`] decides that once the adapter is open); `gpu` still uses it.
pub fn choose_backend(backend: Backend, precision: Precision) -> Choice {
    let gpu_built = cfg!(feature = "gpu");
    match (backend, precision) {
        (Backend::Cpu, _) | (Backend::Auto, Precision::F64) => Choice {
            engine: Engine::Cpu,
            fallback_to_cpu: false,
        },
        (Backend::Gpu, _) => Choice {
            engine: Engine::Gpu,
            fallback_to_cpu: false,
        },
        (Backend::Auto, Precision::F32) => Choice {
            engine: if gpu_built { Engine::Gpu } else { Engine::Cpu },
            fallback_to_cpu: true,
        },
    }
}

/// Whether an adapter is a software renderer, the CPU emulating a GPU: wgpu's
/// `DeviceType::Cpu` (Mesa's llvmpipe/lavapipe natively; in the browser WebGPU's
/// `isFallbackAdapter`, which SwiftShader sets), or a name of one (for drivers that report
/// another type). Returns the name to show.
pub fn software_gpu(device_type_is_cpu: bool, names: &[&str]) -> Option<String> {
    // words of the adapter's name or driver that mean a software renderer
    const WORDS: [&str; 5] = ["llvmpipe", "lavapipe", "swiftshader", "softpipe", "warp"];
    let joined = names
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let lower = joined.to_ascii_lowercase();
    let by_name = lower.contains("microsoft basic render")
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| WORDS.contains(&w));
    (device_type_is_cpu || by_name).then(|| {
        if joined.is_empty() {
            "a software adapter".to_string()
        } else {
            joined
        }
    })
}

/// The notice of a render that `auto` moved from a software GPU to the CPU.
pub fn software_gpu_notice(name: &str) -> String {
    format!(
        "the GPU adapter ({name}) is a software renderer: auto renders on the CPU kernel, which \
         is faster (-backend gpu uses the adapter anyway)"
    )
}

/// Most CPU threads per core that `-threads` may ask for.
pub const MAX_THREADS_PER_CORE: usize = 4;

/// The thread count to use for a request: at most [`MAX_THREADS_PER_CORE`] per core, with a
/// notice when the request was capped. `None`: the pool's default (all cores).
pub fn thread_count(requested: Option<usize>) -> (Option<usize>, Option<String>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = MAX_THREADS_PER_CORE * cores;
    match requested {
        Some(n) if n > max => (
            Some(max),
            Some(format!(
                "-threads {n}: capped at {max} ({MAX_THREADS_PER_CORE} per core on {cores} cores)"
            )),
        ),
        r => (r, None),
    }
}
