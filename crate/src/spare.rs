//! Image buffers handed back by their last user, for the next image's outputs: the Python
//! binding hands back a count image when NumPy frees it, the dataset pass its render and its
//! counts after each image. Reused memory is already mapped and warm, where a fresh allocation
//! of an image's size may be returned to the system when freed and fault its pages in again
//! (`docs/benchmarks.md`, command 132: a Python loop of renders).
//! One pool of 4-byte values (`u32` counts and `f32` images share it), at most 64 MB.
//! Outputs that never come back (read-backs, tangent planes) are fresh vectors in huge pages:
//! `crate::pages`.

use std::mem::ManuallyDrop;
use std::sync::Mutex;

static SPARE: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
/// The most the pool keeps.
const SPARE_BYTES: usize = 64 << 20;

/// Hands a count image (or any `u32` buffer) back for a later image.
pub fn give(mut v: Vec<u32>) {
    v.clear();
    let bytes = v.capacity() * 4;
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let kept: usize = s.iter().map(|v| v.capacity() * 4).sum();
    if bytes > 0 && kept + bytes <= SPARE_BYTES {
        s.push(v);
    }
}

/// Hands an `f32` image back for a later image ([`give`]).
pub fn give_f32(v: Vec<f32>) {
    give(f32_as_u32(v))
}

/// An `f32` image's allocation as `u32` values (each value's bits), for the pool.
pub fn f32_as_u32(v: Vec<f32>) -> Vec<u32> {
    let mut v = ManuallyDrop::new(v);
    // SAFETY: u32 and f32 have the same size and alignment, so the allocation's layout is
    // that of `capacity` u32 values, and every f32 bit pattern is a valid u32
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut u32, v.len(), v.capacity()) }
}

/// An empty buffer with room for at least `n` values (at most `2n`: a far larger one stays
/// for its own size) from the pool, if it holds one: the one handed back last (the warmest).
pub fn take(n: usize) -> Option<Vec<u32>> {
    if n == 0 {
        return None;
    }
    let mut s = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let i = s
        .iter()
        .rposition(|v| v.capacity() >= n && v.capacity() <= 2 * n)?;
    Some(s.remove(i))
}

/// `n` zeros as an `f32` image: a buffer from the pool, filled, or a fresh one.
pub fn zeroed_f32(n: usize) -> Vec<f32> {
    match take(n) {
        Some(v) => {
            let mut v = ManuallyDrop::new(v);
            // SAFETY: as in `give_f32`: the same layout; the Vec is empty, then filled
            let mut f = unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut f32, 0, v.capacity()) };
            f.resize(n, 0.0);
            f
        }
        None => vec![0f32; n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_come_back_zeroed_at_their_size_and_the_pool_is_bounded() {
        // (other tests share the pool: a size none of theirs takes, 13 MB; nothing else in
        // the library's tests hands buffers back)
        let n = 3_333_331;
        give_f32(vec![7.5f32; n]);
        let z = zeroed_f32(n - 10);
        assert_eq!(z.len(), n - 10);
        assert!(z.iter().all(|&v| v == 0.0), "a recycled image is zeroed");
        assert!(z.capacity() >= n, "the buffer handed back was reused");
        give_f32(z);
        // a buffer more than twice the size asked for stays in the pool
        assert!(take(n / 3).is_none_or(|v| v.capacity() <= 2 * (n / 3)));
        let v = take(n).expect("the buffer is in the pool");
        assert!(v.is_empty() && v.capacity() >= n);
        // the last handed back is taken first
        let (a, b) = (
            Vec::<u32>::with_capacity(n + 1),
            Vec::<u32>::with_capacity(n + 2),
        );
        let pb = b.as_ptr();
        give(a);
        give(b);
        let last = take(n).unwrap();
        assert_eq!(last.as_ptr(), pb);
        // nothing beyond the bound is kept
        let big = SPARE_BYTES / 4 + 1;
        give(Vec::with_capacity(big));
        assert!(
            take(big).is_none(),
            "a buffer over the pool's bound is dropped"
        );
    }
}
