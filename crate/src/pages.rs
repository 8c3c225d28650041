//! Large fresh output vectors (a GPU read-back's image and planes, the CPU tangent planes, an
//! image widened to f64): advised as transparent huge pages before they are first written (Linux; elsewhere nothing).
//! A fresh vector's pages fault in on its first write; with the kernel's THP setting `madvise`
//! that is one 2 MiB fault instead of 512 4 KiB ones, which on a 2-core VM made a 64 MiB
//! read-back 1.7× faster and the 10 CPU tangent planes at 512² 20–30 % faster
//! (`docs/benchmarks.md`). `Sample` is their element type where it is either f32 or f64.
//! Images that come back when freed (the render's, noisify's counts) are reused instead:
//! `crate::spare`.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// A value of an output image or tangent plane: f32 or f64, stored from either (the GPU's f32
/// read back, a kernel's f64 rounded to an f32 plane).
pub trait Sample: Copy + Default + Send + Sync + 'static {
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
}

impl Sample for f32 {
    fn from_f32(v: f32) -> Self {
        v
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Sample for f64 {
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// Vectors of at least this many bytes are advised.
pub const HUGE_MIN_BYTES: usize = 4 << 20;

/// Advise `s` as transparent huge pages (the whole 2 MiB pages inside it), before it is first
/// written. Errors are ignored: it is advice.
pub fn advise_huge_pages<T>(s: &mut [MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = s.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(s);
        let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if b > a {
            // SAFETY: [a, b) lies inside the allocation `s` borrows; madvise changes no memory
            // contents (MADV_HUGEPAGE only sets how the pages are backed).
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = s;
}

/// `len` zeros; a large vector ([`HUGE_MIN_BYTES`]) advised as huge pages and zeroed in pieces
/// over rayon's threads (its pages fault in in parallel, as a calloc'd vector's would when the
/// threads first write it).
pub fn zeroed<T: Copy + Default + Send + Sync>(len: usize) -> Vec<T> {
    if len * size_of::<T>() < HUGE_MIN_BYTES {
        return vec![T::default(); len];
    }
    let mut v = Vec::with_capacity(len);
    let slots = &mut v.spare_capacity_mut()[..len];
    advise_huge_pages(slots);
    slots
        .par_chunks_mut(HUGE_MIN_BYTES / size_of::<T>().max(1))
        .for_each(|c| c.fill(MaybeUninit::new(T::default())));
    // SAFETY: the capacity is at least `len` and every slot below `len` was just written.
    unsafe { v.set_len(len) };
    v
}

/// `src` mapped by `f` into a fresh vector (an image widened to f64, weights narrowed to f32):
/// a large one ([`HUGE_MIN_BYTES`]) advised as huge pages and written in pieces over rayon's
/// threads (on 16 cores 10× faster than one thread for 16 MiB of f32 widened, where the fresh
/// vector's page faults cost more than the conversion).
pub fn map_collect<S: Copy + Sync, T: Copy + Send>(src: &[S], f: impl Fn(S) -> T + Sync) -> Vec<T> {
    let len = src.len();
    if len * size_of::<T>() < HUGE_MIN_BYTES {
        return src.iter().map(|&x| f(x)).collect();
    }
    let mut v = Vec::with_capacity(len);
    let slots = &mut v.spare_capacity_mut()[..len];
    advise_huge_pages(slots);
    let piece = (HUGE_MIN_BYTES / size_of::<T>().max(1)).max(1);
    slots
        .par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| {
            for (d, &x) in d.iter_mut().zip(s) {
                d.write(f(x));
            }
        });
    // SAFETY: the capacity is at least `len` and every slot below `len` was just written (the
    // pieces of `slots` and `src` pair up one for one).
    unsafe { v.set_len(len) };
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_collect_maps_every_value_in_order() {
        for n in [0, 7, (super::HUGE_MIN_BYTES / 8) + 999] {
            let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let v = super::map_collect(&src, |x| x as f64 + 1.0);
            assert_eq!(v.len(), n);
            assert!(v
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as f32 as f64 * 0.5 + 1.0));
        }
    }

    #[test]
    fn zeroed_is_zeros_of_the_length_asked() {
        for n in [0, 1, 1000, (super::HUGE_MIN_BYTES / 8) + 12345] {
            let v = super::zeroed::<f64>(n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 0.0));
        }
    }
}
