//! Progress and cancel inside a render. The kernels count the terms they have evaluated and look
//! at the cancel flag every [`POLL_TERMS`] terms (a relaxed load), so a render stops within a
//! few milliseconds of the flag being raised, however long its rows or pixels are; progress is
//! counted in terms and reported in steps of 1/1000, so it moves during any render longer than
//! a few milliseconds. Counting is local to a worker (a plain add) and reaches the shared
//! counter once per [`FLUSH_TERMS`] terms: no per-pixel atomics in the hot loops.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Terms between two looks at the cancel flag (about 10–50 µs of work).
pub const POLL_TERMS: usize = 1024;
/// Terms counted locally before they are added to the shared progress counter.
pub const FLUSH_TERMS: u64 = 1 << 16;
/// Progress is reported in steps of 1/`STEPS`.
const STEPS: u64 = 1000;

/// The shared progress counter of one render.
pub struct Meter<'a> {
    done: AtomicU64,
    total: f64,
    shown: AtomicU32,
    report: &'a (dyn Fn(f32) + Sync),
}

impl<'a> Meter<'a> {
    /// A meter for `total` terms reporting fractions to `report`.
    pub fn new(total: u64, report: &'a (dyn Fn(f32) + Sync)) -> Self {
        Meter {
            done: AtomicU64::new(0),
            total: total.max(1) as f64,
            shown: AtomicU32::new(0),
            report,
        }
    }

    fn add(&self, terms: u64) {
        let done = self.done.fetch_add(terms, Ordering::Relaxed) + terms;
        let step = ((done as f64 / self.total).min(1.0) * STEPS as f64) as u32;
        if step > self.shown.fetch_max(step, Ordering::Relaxed) {
            (self.report)(step as f32 / STEPS as f32);
        }
    }
}

/// A worker's view of the cancel flag and the meter (one per rayon task: not `Sync`).
pub struct Poll<'a> {
    cancel: &'a AtomicBool,
    meter: Option<&'a Meter<'a>>,
    local: Cell<u64>,
}

static NEVER: AtomicBool = AtomicBool::new(false);

impl<'a> Poll<'a> {
    pub fn new(cancel: &'a AtomicBool, meter: Option<&'a Meter<'a>>) -> Self {
        Poll {
            cancel,
            meter,
            local: Cell::new(0),
        }
    }

    /// A poll that never cancels and counts nothing (single pixels rendered outside a render).
    pub fn none() -> Poll<'static> {
        Poll::new(&NEVER, None)
    }

    #[inline(always)]
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Count `terms` evaluated terms; returns true when the render is cancelled.
    #[inline(always)]
    pub fn tick(&self, terms: u64) -> bool {
        let l = self.local.get() + terms;
        if l >= FLUSH_TERMS {
            self.flush_n(l);
            self.local.set(0);
        } else {
            self.local.set(l);
        }
        self.cancelled()
    }

    #[cold]
    fn flush_n(&self, n: u64) {
        if let Some(m) = self.meter {
            m.add(n);
        }
    }
}

impl Drop for Poll<'_> {
    fn drop(&mut self) {
        let l = self.local.get();
        if l > 0 {
            self.flush_n(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn meter_reports_fractions_in_order_and_reaches_one() {
        let seen = Mutex::new(Vec::new());
        let report = |f: f32| seen.lock().unwrap().push(f);
        let meter = Meter::new(10 * FLUSH_TERMS, &report);
        let cancel = AtomicBool::new(false);
        {
            let poll = Poll::new(&cancel, Some(&meter));
            for _ in 0..10 * FLUSH_TERMS / 1024 {
                assert!(!poll.tick(1024));
            }
        }
        let seen = seen.into_inner().unwrap();
        assert!(seen.len() >= 9, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*seen.last().unwrap(), 1.0);
        cancel.store(true, Ordering::Relaxed);
        assert!(Poll::new(&cancel, None).tick(1));
        assert!(!Poll::none().tick(1));
    }
}
