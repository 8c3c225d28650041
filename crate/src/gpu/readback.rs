//! Reading the output buffer (the image, then any tangent planes) back to the host.
//!
//! The GPU copies the storage buffer into a mappable staging buffer (kept by the renderer
//! between renders: [`Staging`]), the host maps it and copies the values out into fresh
//! vectors: the image (f32) and the planes after it (f32, or widened to f64 on the way for the
//! tangent images of `api`, so they are copied once). How, is a [`Readback`]:
//!
//! * `plain`: one staging buffer, one thread copies (what the renderer always did);
//! * `parallel`: one staging buffer, the copy split into pieces over rayon's threads (page
//!   faults of the fresh vectors and the copy itself in parallel);
//! * `chunked:N`: N staging buffers, one GPU copy submitted per chunk, each chunk mapped and
//!   copied out (in parallel) as soon as its copy is done, while the GPU copies the next;
//! * `+huge` (with any of them): the fresh vectors advised as transparent huge pages
//!   (`madvise(MADV_HUGEPAGE)`, Linux; where the kernel's THP setting is `madvise`, 2 MiB page
//!   faults instead of 4 KiB ones).
//!
//! The environment variable [`READBACK_ENV`] picks one (natively; the browser build always
//! reads back `plain`: WebGPU's map is asynchronous and the plain module has no threads), so
//! strategies can be compared on one machine without rebuilding; every strategy gives the same
//! bits. `nanobragg-bench --gpu-readback` times the steps one by one (`docs/benchmarks.md`).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::pages::Sample;

/// The environment variable that picks the read-back strategy: `plain`, `parallel`,
/// `chunked` or `chunked:N` (2 ≤ N ≤ 64), each optionally followed by `+huge`.
pub const READBACK_ENV: &str = "NANOBRAGG_GPU_READBACK";

/// How the staging buffer is read (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Plain,
    Parallel,
    /// The number of chunks.
    Chunked(usize),
}

/// A read-back strategy and whether the fresh vectors are advised as huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readback {
    pub strategy: Strategy,
    pub huge_pages: bool,
}

impl Default for Readback {
    /// `parallel+huge` natively, `plain` in the browser build. On lavapipe (a 2-core VM) the
    /// read-back of a 64 MiB image took 52 ms plain, 35 ms parallel and 21 ms parallel+huge:
    /// the fresh vectors' page faults cost more than the copy (`docs/benchmarks.md`).
    fn default() -> Self {
        let native = !cfg!(target_arch = "wasm32");
        Readback {
            strategy: if native {
                Strategy::Parallel
            } else {
                Strategy::Plain
            },
            huge_pages: native,
        }
    }
}

impl std::fmt::Display for Readback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.strategy {
            Strategy::Plain => write!(f, "plain")?,
            Strategy::Parallel => write!(f, "parallel")?,
            Strategy::Chunked(n) => write!(f, "chunked:{n}")?,
        }
        if self.huge_pages {
            write!(f, "+huge")?;
        }
        Ok(())
    }
}

impl Readback {
    /// Chunks of `chunked` without a count.
    pub const DEFAULT_CHUNKS: usize = 4;

    /// Parse `plain`, `parallel`, `chunked[:N]`, each with an optional `+huge`.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || {
            Error::usage(format!(
                "{READBACK_ENV}={text}: expected plain, parallel, chunked or chunked:N \
                 (N from 2 to 64), optionally followed by +huge"
            ))
        };
        let t = text.trim().to_ascii_lowercase();
        let (name, huge_pages) = match t.strip_suffix("+huge") {
            Some(n) => (n, true),
            None => (t.as_str(), false),
        };
        let strategy = match name {
            "plain" => Strategy::Plain,
            "parallel" => Strategy::Parallel,
            "chunked" => Strategy::Chunked(Self::DEFAULT_CHUNKS),
            n => match n.strip_prefix("chunked:").map(str::parse::<usize>) {
                Some(Ok(k)) if (2..=64).contains(&k) => Strategy::Chunked(k),
                _ => return Err(bad()),
            },
        };
        Ok(Readback {
            strategy,
            huge_pages,
        })
    }

    /// The strategy [`READBACK_ENV`] names, else the default (always the default on wasm32).
    pub fn from_env() -> Result<Self> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Ok(v) = std::env::var(READBACK_ENV) {
            if !v.trim().is_empty() {
                return Self::parse(&v);
            }
        }
        Ok(Self::default())
    }

    fn chunks(&self) -> usize {
        match self.strategy {
            Strategy::Chunked(n) => n,
            _ => 1,
        }
    }

    fn parallel(&self) -> bool {
        self.strategy != Strategy::Plain
    }
}

/// Below this many values a copy is not split over threads.
const PAR_MIN: usize = 1 << 16;

fn copy_seq<T: Sample>(dst: &mut [MaybeUninit<T>], src: &[f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        d.write(T::from_f32(s));
    }
}

/// `dst[i] = src[i]` (widened), on one thread or split over rayon's threads in pieces of at
/// least [`PAR_MIN`] values.
pub fn copy_into<T: Sample>(dst: &mut [MaybeUninit<T>], src: &[f32], parallel: bool) {
    assert_eq!(dst.len(), src.len(), "read-back copy of unequal lengths");
    if parallel && src.len() >= 2 * PAR_MIN {
        let pieces = (rayon::current_num_threads() * 4).max(1);
        let piece = src.len().div_ceil(pieces).max(PAR_MIN);
        dst.par_chunks_mut(piece)
            .zip(src.par_chunks(piece))
            .for_each(|(d, s)| copy_seq(d, s));
    } else {
        copy_seq(dst, src);
    }
}

/// A fresh vector of `len` values to be written once each through [`Fresh::slots`] before
/// [`Fresh::finish`] (no zeroing pass: its pages are first touched by the copy).
pub struct Fresh<T> {
    v: Vec<T>,
    len: usize,
}

impl<T: Copy> Fresh<T> {
    /// Vectors of at least this many bytes are advised as huge pages under `+huge`.
    pub const HUGE_MIN_BYTES: usize = crate::pages::HUGE_MIN_BYTES;

    pub fn new(len: usize, huge_pages: bool) -> Self {
        let mut v = Vec::with_capacity(len);
        if huge_pages && len * size_of::<T>() >= Self::HUGE_MIN_BYTES {
            crate::pages::advise_huge_pages(&mut v.spare_capacity_mut()[..len]);
        }
        Fresh { v, len }
    }

    pub fn slots(&mut self) -> &mut [MaybeUninit<T>] {
        &mut self.v.spare_capacity_mut()[..self.len]
    }

    /// The vector.
    ///
    /// # Safety
    /// Every slot of [`Fresh::slots`] has been written.
    pub unsafe fn finish(mut self) -> Vec<T> {
        // SAFETY: capacity ≥ len, and the caller wrote every slot below len.
        unsafe { self.v.set_len(self.len) };
        self.v
    }
}

/// Where the values read back go: the first `head.len()` into `head` (the image), the rest
/// into `tail` (tangent planes).
pub struct Sink<'a, T> {
    pub head: &'a mut [MaybeUninit<f32>],
    pub tail: &'a mut [MaybeUninit<T>],
}

impl<T: Sample> Sink<'_, T> {
    fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Values `at..at + src.len()` of the whole read.
    fn put(&mut self, at: usize, src: &[f32], parallel: bool) {
        let h = self.head.len();
        let split = h.saturating_sub(at).min(src.len());
        if split > 0 {
            copy_into(&mut self.head[at..at + split], &src[..split], parallel);
        }
        if split < src.len() {
            let t0 = at + split - h;
            let rest = &src[split..];
            copy_into(&mut self.tail[t0..t0 + rest.len()], rest, parallel);
        }
    }
}

/// Mappable buffers the output is copied into: one, or one per chunk. Kept by the renderer and
/// only replaced by larger ones (a render that reads less uses a prefix of each).
pub struct Staging {
    buffers: Vec<wgpu::Buffer>,
    /// Bytes of each buffer.
    each: u64,
}

/// Chunk sizes are multiples of this (copy and map alignment are 4 and 8 bytes).
const CHUNK_ALIGN: u64 = 256;

impl Staging {
    /// The buffers `mode` reads through (one, or one per chunk), holding `bytes` together.
    pub fn new(device: &wgpu::Device, bytes: u64, mode: Readback) -> Self {
        let chunks = mode.chunks();
        let each = bytes
            .div_ceil(chunks as u64)
            .next_multiple_of(CHUNK_ALIGN)
            .max(CHUNK_ALIGN);
        let buffers = (0..chunks)
            .map(|_| {
                super::context::new_buffer(
                    device,
                    "output readback",
                    each,
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                )
            })
            .collect();
        Staging { buffers, each }
    }

    /// Whether these buffers serve a read of `bytes` with `mode`.
    pub fn fits(&self, bytes: u64, mode: Readback) -> bool {
        self.buffers.len() == mode.chunks()
            && bytes
                .div_ceil(mode.chunks() as u64)
                .next_multiple_of(CHUNK_ALIGN)
                <= self.each
    }

    pub fn buffer_count(&self) -> usize {
        self.buffers.len()
    }

    /// Bytes the buffers hold together.
    pub fn bytes(&self) -> u64 {
        self.each * self.buffers.len() as u64
    }
}

/// Seconds of a read-back: waiting (the GPU's copy and the map) and copying out on the host.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadTimes {
    pub wait_s: f64,
    pub copy_s: f64,
}

/// Copy `src[..4·sink.len()]` (f32 values) into `sink` through `staging` (which
/// [`Staging::fits`] the read), as `mode` says. Natively the GPU work submitted before is
/// waited for here.
pub async fn read(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    src: &wgpu::Buffer,
    staging: &Staging,
    sink: &mut Sink<'_, impl Sample>,
    mode: Readback,
) -> Result<ReadTimes> {
    let values = sink.len();
    let bytes = (values * size_of::<f32>()) as u64;
    let mut times = ReadTimes::default();
    if bytes == 0 {
        return Ok(times);
    }
    let chunks = mode.chunks();
    assert!(staging.fits(bytes, mode), "staging buffers too small");
    let each = bytes
        .div_ceil(chunks as u64)
        .next_multiple_of(CHUNK_ALIGN)
        .min(bytes);
    // one submission per chunk: each completes (and its chunk can be mapped) on its own
    let mut pending = Vec::new();
    let mut offset = 0u64;
    for buffer in &staging.buffers {
        if offset >= bytes {
            break;
        }
        let len = each.min(bytes - offset);
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("nanobragg readback"),
        });
        enc.copy_buffer_to_buffer(src, offset, buffer, 0, len);
        let index = queue.submit([enc.finish()]);
        let slice = buffer.slice(..len);
        let (tx, rx) = futures_channel::oneshot::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        pending.push((buffer, offset, len, index, rx));
        offset += len;
    }
    for (buffer, offset, len, index, rx) in pending {
        let wait = super::context::Clock::start();
        super::context::wait_mapped(device, Some(index), rx).await?;
        times.wait_s += wait.seconds();
        let copy = super::context::Clock::start();
        {
            let mapped = buffer
                .slice(..len)
                .get_mapped_range()
                .map_err(|e| Error::gpu(format!("GPU read-back failed: {e}")))?;
            let at = (offset / size_of::<f32>() as u64) as usize;
            match bytemuck::try_cast_slice::<u8, f32>(&mapped) {
                Ok(v) => sink.put(at, v, mode.parallel()),
                // a mapped range is aligned (wgpu::MAP_ALIGNMENT); should it not be, copy once more
                Err(_) => sink.put(
                    at,
                    &bytemuck::pod_collect_to_vec::<u8, f32>(&mapped),
                    mode.parallel(),
                ),
            }
        }
        buffer.unmap();
        times.copy_s += copy.seconds();
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copies split over threads and the sink's split between image and planes put every
    /// value where the plain copy does (pure host code: no device).
    #[test]
    fn copies_and_sink_put_every_value_in_its_place() {
        let n = 5 * PAR_MIN + 123;
        let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        for parallel in [false, true] {
            let mut a = Fresh::<f32>::new(n, true);
            copy_into(a.slots(), &src, parallel);
            // SAFETY: copy_into wrote all n slots
            assert_eq!(unsafe { a.finish() }, src);
            let mut b = Fresh::<f64>::new(n, false);
            copy_into(b.slots(), &src, parallel);
            // SAFETY: as above
            let b = unsafe { b.finish() };
            assert!(b.iter().zip(&src).all(|(&x, &y)| x == y as f64));
            // image of 1000 values, the rest planes; pieces that straddle the boundary
            let head = 1000;
            let mut img = Fresh::<f32>::new(head, false);
            let mut planes = Fresh::<f64>::new(n - head, false);
            {
                let mut sink = Sink {
                    head: img.slots(),
                    tail: planes.slots(),
                };
                let mut at = 0;
                for piece in [7, 990, 2 * PAR_MIN + 3, n] {
                    let end = (at + piece).min(n);
                    sink.put(at, &src[at..end], parallel);
                    at = end;
                }
                assert_eq!(at, n);
            }
            // SAFETY: the pieces covered 0..n
            let (img, planes) = unsafe { (img.finish(), planes.finish()) };
            assert_eq!(img, src[..head]);
            assert!(planes
                .iter()
                .zip(&src[head..])
                .all(|(&x, &y)| x == y as f64));
        }
    }

    #[test]
    fn strategies_parse_and_print() {
        for (text, want) in [
            ("plain", Strategy::Plain),
            (" Parallel ", Strategy::Parallel),
            ("chunked", Strategy::Chunked(4)),
            ("chunked:16", Strategy::Chunked(16)),
        ] {
            let m = Readback::parse(text).unwrap();
            assert_eq!((m.strategy, m.huge_pages), (want, false));
            let h = Readback::parse(&format!("{}+huge", text.trim())).unwrap();
            assert_eq!((h.strategy, h.huge_pages), (want, true));
            assert_eq!(Readback::parse(&h.to_string()).unwrap(), h);
        }
        for bad in [
            "",
            "huge",
            "chunked:",
            "chunked:x",
            "chunked:0",
            "chunked:99",
            "plain+hug",
        ] {
            assert!(Readback::parse(bad).is_err(), "{bad}");
        }
    }
}
