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
///   CPU with a notice.
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
