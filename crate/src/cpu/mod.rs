//! CPU renderer: rows of pixels in parallel (rayon), in two precisions, with progress, cancel
//! and upstream's raster-order semantics for the two pieces of sequential state (MODEL §9.6):
//! the first phi sequence of the run (stale-phi rule) and the global tricubic switch-off.

pub mod pixel;
pub mod pixel32;
pub mod pixel64;
pub mod poll;
pub mod row32;
pub mod tangent;
pub mod tangent32;
pub mod tangent_row32;

use crate::error::{Error, Result};
pub use crate::plan::Precision;
use crate::plan::{ExactFixup, Interpolation, Plan};
use poll::{Meter, Poll};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, Default)]
pub struct PixelOut {
    pub value: f32,
    /// A tricubic lookup left the table in this pixel (interpolation switched off there).
    pub triggered: bool,
    /// The pixel falls under the exact-Bragg rule (`terms::EXACT_BRAGG`): a fast kernel's value
    /// is not upstream's, the f64 kernel must render it (the renderer reports it).
    pub exact: bool,
}

/// Index (raster order) of the first pixel that is rendered, if any.
pub fn first_rendered_pixel(p: &Plan) -> Option<usize> {
    (0..p.spixels)
        .flat_map(|s| (0..p.fpixels).map(move |f| (f, s)))
        .find(|&(f, s)| p.renders(f, s))
        .map(|(f, s)| s * p.fpixels + f)
}

enum Kernel<'a> {
    F64(pixel64::ExactCtx<'a>),
    /// The fast kernel: pixels under the exact-Bragg rule come back flagged `exact` and are
    /// reported, not rendered here.
    F32(Box<pixel32::FastCtx<'a>>),
}

impl Kernel<'_> {
    /// The vectorised row-block kernel, when it applies.
    fn row_block(&self) -> Option<(&pixel32::FastCtx<'_>, row32::BlockFn)> {
        match self {
            Kernel::F32(fc) => fc.row_block.map(|b| (&**fc, b)),
            Kernel::F64(_) => None,
        }
    }

    /// One pixel (None when cancelled).
    #[inline]
    fn pixel(
        &self,
        f: usize,
        s: usize,
        first: bool,
        interp: bool,
        poll: &Poll,
    ) -> Option<PixelOut> {
        match self {
            Kernel::F64(ep) => pixel64::render_pixel_polled(ep, f, s, first, interp, poll),
            Kernel::F32(fc) => pixel32::render_pixel(fc, f, s, first, interp, poll),
        }
    }
}

/// Renders the pixels a fast backend reported (`plan::ExactFixup`) again with the f64 kernel,
/// in place.
pub fn apply_exact_fixup(plan: &Plan, image: &mut [f32], fixup: &ExactFixup) {
    if fixup.pixels.is_empty() {
        return;
    }
    let ep = pixel64::ExactCtx::new(plan);
    for &i in &fixup.pixels {
        let (f, s) = (i % plan.fpixels, i / plan.fpixels);
        let interp = fixup.tricubic && fixup.interp_switch.is_none_or(|p| i <= p);
        let first = Some(i) == fixup.first_pixel;
        image[i] = pixel64::render_pixel(&ep, f, s, first, interp).value;
    }
}

/// Render the float image (photons per pixel, fast-major) and report the pixels under the
/// exact-Bragg rule (`plan::ExactFixup`: none in f64; in f32 their values are the fast
/// kernel's, not upstream's, until `apply_exact_fixup` renders them, as `api` does for both
/// backends). `progress` receives the fraction done (0..1, in steps of 1/1000, counted in terms)
/// from worker threads; `cancel` is polled every `poll::POLL_TERMS` terms, inside rows and
/// inside long pixels.
pub fn render(
    plan: &Plan,
    precision: Precision,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, ExactFixup)> {
    render_with(plan, precision, true, progress, cancel)
}

/// `render`, optionally without the f32 row-block path (tests compare the two paths).
pub fn render_with(
    plan: &Plan,
    precision: Precision,
    row_path: bool,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, ExactFixup)> {
    render_paths(plan, precision, row_path, true, progress, cancel)
}

/// `render_with`, optionally without the row path's hybrid Miller indices (`hybrid` false:
/// the f64 indices whatever the plan's orientations; true: the per-render decision,
/// `row32::HybridIndices::new`). Tests compare the two.
pub fn render_paths(
    plan: &Plan,
    precision: Precision,
    row_path: bool,
    hybrid: bool,
    progress: &(dyn Fn(f32) + Sync),
    cancel: &AtomicBool,
) -> Result<(Vec<f32>, ExactFixup)> {
    let kernel = match precision {
        Precision::F64 => Kernel::F64(pixel64::ExactCtx::new(plan)),
        Precision::F32 => {
            let mut fc = pixel32::FastCtx::new(plan);
            if !row_path {
                fc.row_block = None;
            }
            if !hybrid {
                fc.hybrid = None;
            }
            Kernel::F32(Box::new(fc))
        }
    };
    let (fp, sp) = (plan.fpixels, plan.spixels);
    let first = first_rendered_pixel(plan);
    let interp = plan.interpolation == Interpolation::Tricubic;
    let mut image = crate::spare::zeroed_f32(fp * sp);
    let mut flags = vec![false; if interp { fp * sp } else { 0 }];
    // pixels under the exact-Bragg rule (a handful, in symmetric set-ups), in any order
    let exact = Mutex::new(Vec::new());
    let report = |idx: usize| exact.lock().unwrap_or_else(|e| e.into_inner()).push(idx);
    let tpp = plan.terms_per_pixel().max(1);
    let passes = if interp { 2 } else { 1 };
    let meter = Meter::new(
        (passes * plan.pixel_count() as u64).saturating_mul(tpp),
        progress,
    );

    let row_pass = |image: &mut [f32],
                    flags: &mut [bool],
                    only_after: Option<usize>,
                    interp_on: bool|
     -> Result<()> {
        let body = |(s, row): (usize, &mut [f32]), mut frow: Option<&mut [bool]>| -> Result<()> {
            let poll = Poll::new(cancel, Some(&meter));
            if poll.cancelled() {
                return Err(Error::cancelled());
            }
            if let (Some((fck, block)), None) = (kernel.row_block(), only_after) {
                let quiet = Poll::new(cancel, None);
                let mut exact = [false; row32::BLOCK];
                let mut lanes = row32::Lanes::new();
                // blocks within each run of one panel's pixels (a run of no panel stays 0),
                // cut at the pixels not rendered (outside the ROI, masked), which stay 0 too:
                // none of their terms is computed (rendered and then zeroed, a region of
                // 200² pixels on a 4M detector took as long as the whole image)
                let mut blocks = Vec::new();
                for (a, b, panel) in plan.row_segments(s) {
                    if let Some(i) = panel {
                        blocks.extend(
                            (a..b)
                                .step_by(row32::BLOCK)
                                .map(|f0| (i, f0, row32::BLOCK.min(b - f0))),
                        );
                    }
                }
                // the pixels left out count as done (the meter's total is the whole image)
                let skipped = fp - blocks.iter().map(|b| b.2).sum::<usize>();
                if poll.tick(skipped as u64 * tpp) {
                    return Err(Error::cancelled());
                }
                for (i, f0, len) in blocks {
                    let pan = &plan.panels[i];
                    if !block(
                        fck,
                        pan,
                        s,
                        f0,
                        len,
                        &mut lanes,
                        &mut row[f0..f0 + len],
                        &mut exact,
                        &poll,
                    ) {
                        return Err(Error::cancelled());
                    }
                    // a block wholly rendered (no mask, inside the ROI: the block is on one
                    // panel's run) without the first pixel: only its reports
                    let row0 = s * fp + f0;
                    if plan.unmasked_in_roi(f0, len, s)
                        && first.is_none_or(|i| i < row0 || i >= row0 + len)
                    {
                        if exact[..len].contains(&true) {
                            (0..len)
                                .filter(|&j| exact[j])
                                .for_each(|j| report(row0 + j));
                        }
                        continue;
                    }
                    for j in 0..len {
                        let f = f0 + j;
                        let idx = s * fp + f;
                        if !plan.renders(f, s) {
                            row[f] = 0.0;
                            continue;
                        }
                        // the pixel of the run's first phi sequence: the per-pixel kernel
                        let out = if Some(idx) == first {
                            let out = kernel
                                .pixel(f, s, true, interp_on, &quiet)
                                .ok_or_else(Error::cancelled)?;
                            row[f] = out.value;
                            out.exact
                        } else {
                            exact[j]
                        };
                        if out {
                            report(idx);
                        }
                    }
                }
                return Ok(());
            }
            for (f, px) in row.iter_mut().enumerate() {
                let idx = s * fp + f;
                if only_after.is_some_and(|a| idx <= a) || !plan.renders(f, s) {
                    if poll.tick(tpp) {
                        return Err(Error::cancelled());
                    }
                    continue;
                }
                let out = kernel
                    .pixel(f, s, Some(idx) == first, interp_on, &poll)
                    .ok_or_else(Error::cancelled)?;
                *px = out.value;
                if out.exact {
                    report(idx);
                }
                if let Some(fr) = frow.as_deref_mut() {
                    fr[f] = out.triggered;
                }
            }
            Ok(())
        };
        if flags.is_empty() {
            image
                .par_chunks_mut(fp)
                .enumerate()
                .try_for_each(|r| body(r, None))
        } else {
            image
                .par_chunks_mut(fp)
                .zip(flags.par_chunks_mut(fp))
                .enumerate()
                .try_for_each(|(s, (row, fr))| body((s, row), Some(fr)))
        }
    };

    row_pass(&mut image, &mut flags, None, interp)?;
    let mut interp_switch = None;
    if interp {
        // upstream switches interpolation off for the rest of the run at the first pixel (in
        // raster order) whose stencil leaves the table; pixels after it use nearest lookups
        interp_switch = flags.iter().position(|&t| t);
        if let Some(star) = interp_switch {
            let mut none: Vec<bool> = Vec::new();
            row_pass(&mut image, &mut none, Some(star), false)?;
        }
    }
    progress(1.0);
    let mut pixels = exact.into_inner().unwrap_or_else(|e| e.into_inner());
    pixels.sort_unstable();
    // the second pass reports again what the first reported after the switch
    pixels.dedup();
    Ok((
        image,
        ExactFixup {
            pixels,
            tricubic: interp,
            interp_switch,
            first_pixel: first,
        },
    ))
}

/// Run `f` on a pool of `threads` threads (all cores when `None`): the current one when the
/// caller is already on a pool of that size (a pool it keeps, as the Python binding's dataset
/// renderer does), else a new one.
pub fn with_threads<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> T {
    match threads {
        Some(n) if rayon::current_thread_index().is_some() && rayon::current_num_threads() == n => {
            f()
        }
        Some(n) => match rayon::ThreadPoolBuilder::new().num_threads(n).build() {
            Ok(pool) => pool.install(f),
            Err(_) => f(),
        },
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;

    fn prepare(args: &str, files: &MemFiles) -> crate::api::Prepared {
        crate::api::prepare(&crate::api::split_args(args), files).unwrap()
    }

    /// A finished image: the render's reported exact-Bragg pixels rendered by the f64 kernel
    /// (what `api` does with it).
    fn finished(plan: &Plan, r: Result<(Vec<f32>, ExactFixup)>) -> Vec<f32> {
        let (mut image, fixup) = r.unwrap();
        apply_exact_fixup(plan, &mut image, &fixup);
        image
    }

    fn max_rel_diff(a: &[f32], b: &[f32]) -> f64 {
        let peak = a.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
        a.iter()
            .zip(b)
            .map(|(x, y)| (*x as f64 - *y as f64).abs())
            .fold(0.0, f64::max)
            / peak
    }

    /// `with_threads` runs on the caller's pool when it has the size asked for, else on a new
    /// pool of that size (outside any pool too).
    #[test]
    fn with_threads_keeps_a_pool_of_its_size() {
        let kept = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("kept-{i}"))
            .build()
            .unwrap();
        let on_kept = || {
            std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("kept-"))
        };
        let (same, other, size) = kept.install(|| {
            (
                with_threads(Some(2), on_kept),
                with_threads(Some(3), on_kept),
                with_threads(Some(3), rayon::current_num_threads),
            )
        });
        assert!(
            same,
            "a pool of 2 asked for on a pool of 2: the same threads"
        );
        assert!(
            !other && size == 3,
            "3 asked for on a pool of 2: a new pool of 3"
        );
        assert_eq!(with_threads(Some(3), rayon::current_num_threads), 3);
        assert!(
            !with_threads(Some(2), on_kept),
            "outside the kept pool: a new one"
        );
    }

    /// The row path renders only the pixels a render renders: with a region of interest and a
    /// mask inside it (a run of masked pixels across a block's edge, single masked pixels, a
    /// whole masked row), each rendered pixel has the bits of the whole detector's row render
    /// (the blocks start elsewhere; the first rendered pixel, the per-pixel kernel's, aside),
    /// agrees with the per-pixel path, the others are zero, and the progress still ends at 1
    /// (the pixels left out count as done).
    #[test]
    fn row_path_leaves_out_the_pixels_not_rendered() {
        let files = MemFiles::default();
        let args = "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.2 -N 6 -distance 90 \
                    -detpixels_f 150 -detpixels_s 40 -default_F 100 -mosaic 0.4 -mosaic_dom 3";
        let cancel = AtomicBool::new(false);
        let whole = prepare(args, &files).plan().clone();
        let whole = finished(
            &whole,
            render_with(&whole, Precision::F32, true, &|_| {}, &cancel),
        );
        for roi in ["", " -roi 3 140 5 33"] {
            let mut plan = prepare(&format!("{args}{roi}"), &files).plan().clone();
            let fp = plan.fpixels;
            let mut mask = vec![1u8; fp * plan.spixels];
            for f in 60..70 {
                mask[10 * fp + f] = 0; // across the edge of the block at 64
            }
            mask[11 * fp + 3] = 0;
            mask[11 * fp + 149] = 0;
            mask[20 * fp..21 * fp].fill(0);
            plan.mask = Some(mask);
            assert!(row32::applies(&plan));
            let last = std::sync::Mutex::new(0f32);
            let progress = |f: f32| *last.lock().unwrap() = f;
            let rows = finished(
                &plan,
                render_with(&plan, Precision::F32, true, &progress, &cancel),
            );
            assert_eq!(*last.lock().unwrap(), 1.0, "{roi}: progress");
            let pixels = finished(
                &plan,
                render_with(&plan, Precision::F32, false, &|_| {}, &cancel),
            );
            assert!(max_rel_diff(&rows, &pixels) < 1e-5, "{roi}: rows vs pixels");
            let first = [first_rendered_pixel(&plan), Some(0)];
            let mut rendered = 0;
            for (i, r) in rows.iter().enumerate() {
                let (f, s) = (i % fp, i / fp);
                if !plan.renders(f, s) {
                    assert_eq!(*r, 0.0, "{roi}: pixel {f},{s} not rendered");
                } else if !first.contains(&Some(i)) {
                    rendered += 1;
                    assert_eq!(r.to_bits(), whole[i].to_bits(), "{roi}: pixel {f},{s}");
                }
            }
            assert!(rendered > 1000 && rows.iter().any(|&v| v > 0.0), "{roi}");
        }
    }

    /// The vectorised row path and the per-pixel f32 kernel compute the same terms.
    #[test]
    fn row_path_matches_pixel_path() {
        let mut files = MemFiles::default();
        let mut hkl = String::new();
        for h in -12i32..=12 {
            for k in -12..=12 {
                for l in -12..=12 {
                    hkl.push_str(&format!(
                        "{h} {k} {l} {}\n",
                        10 + (h * 7 + k * 3 + l).rem_euclid(50)
                    ));
                }
            }
        }
        files.0.insert("t.hkl".into(), hkl.into_bytes());
        let base = "-cell 70 80 90 85 95 105 -misset 10 5 3 -lambda 1.2 -N 6 -distance 90 -detpixels_f 70 -detpixels_s 50";
        for extra in [
            "-default_F 100",
            "-default_F 100 -polar 0.9 -dmin 3",
            "-default_F 100 -mosaic 0.4 -mosaic_dom 5 -phi 0 -osc 1 -phisteps 3 -oversample 2",
            "-default_F 100 -divergence 0.4 -divsteps 3 -dispersion 1 -dispsteps 2",
            "-default_F 100 -detector_thick 300 -detector_abs 200 -thicksteps 3 -water 0.5",
            "-hkl t.hkl -nointerpolate -default_F 7 -roi 5 60 3 40",
        ] {
            let prep = prepare(&format!("{base} {extra}"), &files);
            let cancel = AtomicBool::new(false);
            assert!(row32::applies(prep.plan()), "{extra}");
            let p = prep.plan();
            let rows = finished(p, render_with(p, Precision::F32, true, &|_| {}, &cancel));
            let pixels = finished(p, render_with(p, Precision::F32, false, &|_| {}, &cancel));
            let exact = finished(p, render(p, Precision::F64, &|_| {}, &cancel));
            assert!(
                max_rel_diff(&rows, &pixels) < 1e-5,
                "{extra}: rows vs pixels {}",
                max_rel_diff(&rows, &pixels)
            );
            assert!(
                max_rel_diff(&exact, &rows) < 1e-4,
                "{extra}: f64 vs f32 {}",
                max_rel_diff(&exact, &rows)
            );
        }
    }

    #[test]
    fn cancel_stops_the_render() {
        let prep = prepare(
            "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 64",
            &MemFiles::default(),
        );
        let cancel = AtomicBool::new(true);
        let e = render(prep.plan(), Precision::F32, &|_| {}, &cancel).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Cancelled);
    }

    #[test]
    fn progress_reaches_one() {
        let prep = prepare(
            "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 64",
            &MemFiles::default(),
        );
        let last = std::sync::Mutex::new(0f32);
        let cancel = AtomicBool::new(false);
        render(
            prep.plan(),
            Precision::F64,
            &|f| *last.lock().unwrap() = f,
            &cancel,
        )
        .unwrap();
        assert_eq!(*last.lock().unwrap(), 1.0);
    }

    /// A plan whose orientation table holds the same orientation twice, and the same plan with
    /// the second copy's a-axis made NaN (so every h of that domain is NaN).
    fn doubled_and_nan(args: &str, files: &MemFiles) -> (Plan, Plan) {
        let mut dup = prepare(args, files).plan().clone();
        let o = dup.orientations[0];
        dup.orientations = vec![o, o];
        dup.orientations_first = dup.orientations.clone();
        dup.mosaic_domains = 2;
        dup.steps *= 2;
        let mut nan = dup.clone();
        nan.orientations[1].a = [f64::NAN, 0.0, 0.0];
        nan.orientations_first = nan.orientations.clone();
        (dup, nan)
    }

    /// Issue 10: a NaN Miller index reached `f_tricubic` with a table that does not cover
    /// index 0 and panicked. Every CPU kernel now drops a term with a non-finite index (it adds
    /// nothing and triggers nothing), so a domain of NaN indices halves the image of two
    /// identical domains, to the bit.
    #[test]
    fn nan_miller_index_is_dropped_by_every_cpu_kernel() {
        let mut files = MemFiles::default();
        files
            .0
            .insert("far.hkl".into(), b"5 5 5 50\n8 8 8 50\n".to_vec());
        let mut hkl = String::new();
        for h in -6i32..=6 {
            for k in -6..=6 {
                for l in -6..=6 {
                    hkl.push_str(&format!(
                        "{h} {k} {l} {}\n",
                        20 + (h * 3 + k - l).rem_euclid(13)
                    ));
                }
            }
        }
        files.0.insert("s.hkl".into(), hkl.into_bytes());
        let geo =
            "-cell 40 40 40 90 90 90 -lambda 1 -distance 30 -Xbeam 0.3 -Ybeam 0.3 -detpixels 24";
        // (arguments, precision, row path, which kernel it exercises)
        let cases = [
            (
                "-hkl far.hkl -N 2 -default_F 3",
                Precision::F64,
                true,
                "pixel64, tricubic, far table",
            ),
            ("-hkl s.hkl -N 2", Precision::F64, true, "pixel64, tricubic"),
            (
                "-hkl s.hkl -N 2",
                Precision::F32,
                false,
                "pixel32 vector path, tricubic",
            ),
            (
                "-hkl far.hkl -N 2 -default_F 3",
                Precision::F32,
                false,
                "pixel32 vector path, far table",
            ),
            (
                "-hkl s.hkl -N 3 -round_xtal",
                Precision::F32,
                false,
                "pixel32 term loop",
            ),
            (
                "-hkl s.hkl -N 3 -nointerpolate",
                Precision::F32,
                true,
                "row path",
            ),
            (
                "-hkl s.hkl -N 3 -nointerpolate -water 50",
                Precision::F32,
                true,
                "row path, water",
            ),
            (
                "-default_F 10 -N 3 -water 50",
                Precision::F32,
                false,
                "pixel32, water",
            ),
        ];
        let cancel = AtomicBool::new(false);
        for (extra, precision, rows, what) in cases {
            let (dup, nan) = doubled_and_nan(&format!("{geo} {extra}"), &files);
            assert_eq!(
                row32::applies(&nan) && rows,
                what.starts_with("row path"),
                "{what}"
            );
            let a = finished(&dup, render_with(&dup, precision, rows, &|_| {}, &cancel));
            let b = finished(&nan, render_with(&nan, precision, rows, &|_| {}, &cancel));
            assert!(b.iter().all(|v| v.is_finite()), "{what}: non-finite pixel");
            let bg = if extra.contains("water") { 1 } else { 0 };
            if bg == 0 {
                for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                    assert_eq!(*x, 2.0 * y, "{what}: pixel {i}");
                }
            }
            assert!(a.iter().any(|v| *v > 0.0), "{what}: empty image");
        }
    }

    /// Cancel acts within rows: a render of 20000 mosaic domains (20000 terms per pixel, seconds
    /// per row of 256 pixels on two cores) stops within a few milliseconds of the flag, and its
    /// progress has moved before that.
    #[test]
    fn cancel_acts_within_a_long_render_and_progress_moves() {
        let prep = prepare(
            "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -mosaic 1 -mosaic_dom 20000 -detpixels 256",
            &MemFiles::default(),
        );
        for precision in [Precision::F64, Precision::F32] {
            let cancel = AtomicBool::new(false);
            let seen = std::sync::atomic::AtomicU32::new(0);
            let t0 = std::time::Instant::now();
            let (res, latency, at, started) = std::thread::scope(|sc| {
                let h = sc.spawn(|| {
                    render(
                        prep.plan(),
                        precision,
                        &|f| seen.store(f.to_bits(), std::sync::atomic::Ordering::Relaxed),
                        &cancel,
                    )
                });
                while f32::from_bits(seen.load(std::sync::atomic::Ordering::Relaxed)) == 0.0 {
                    assert!(t0.elapsed().as_secs() < 60, "no progress after 60 s");
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                let at = f32::from_bits(seen.load(std::sync::atomic::Ordering::Relaxed));
                let t1 = std::time::Instant::now();
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                let res = h.join().unwrap();
                (res, t1.elapsed(), at, t1 - t0)
            });
            println!(
                "{precision:?}: progress {at} after {:.0} ms, render returned {:.1} ms after cancel",
                started.as_secs_f64() * 1e3,
                latency.as_secs_f64() * 1e3
            );
            assert_eq!(res.unwrap_err().kind, crate::error::ErrorKind::Cancelled);
            assert!(at > 0.0 && at < 1.0);
            assert!(latency.as_secs_f64() < 1.0, "cancel took {latency:?}");
        }
    }

    /// Issue 21 §2: the fast kernels report the pixels under the exact-Bragg rule instead of
    /// rendering them (the api fixes them up once, for both backends), and go on past the
    /// exact term so that the tricubic switch-off trigger covers the whole pixel. A 3-4-5
    /// triangle puts a pixel centre exactly on (h, k, l) = (-20, ±60, 0): 80 mm to the
    /// detector, 60 mm off the beam, λ = 1 Å, a = 100 Å.
    #[test]
    fn exact_bragg_pixels_are_reported_and_fixed_up_to_the_f64_kernel() {
        let mut files = MemFiles::default();
        let mut hkl = String::new();
        for h in -4i32..=4 {
            for k in -4..=4 {
                for l in -4..=4 {
                    hkl.push_str(&format!(
                        "{h} {k} {l} {}\n",
                        20 + (h * 3 + k - l).rem_euclid(7)
                    ));
                }
            }
        }
        files.0.insert("s.hkl".into(), hkl.into_bytes());
        let geo = "-cell 100 100 100 90 90 90 -lambda 1 -distance 80 -pixel 1 -detpixels 64 \
                   -Xbeam 0 -Ybeam 0 -mosflm -oversample 1";
        // (arguments, row path, the kernel it exercises)
        let cases = [
            ("-N 5 -default_F 100", true, "row path"),
            ("-N 5 -default_F 100", false, "pixel32 vector path"),
            // the running-sum flag: the shared loop term by term (the rule is the square's)
            (
                "-N 5 -default_F 100 -oversample_omega",
                false,
                "pixel32 term loop",
            ),
            // the table ends at |h| = 4: the first stencil outside switches lookups off
            (
                "-N 5 -hkl s.hkl -interpolate -default_F 10",
                false,
                "tricubic",
            ),
        ];
        let cancel = AtomicBool::new(false);
        for (extra, rows, what) in cases {
            let prep = prepare(&format!("{geo} {extra}"), &files);
            let p = prep.plan();
            let (f64_image, none) = render(p, Precision::F64, &|_| {}, &cancel).unwrap();
            assert!(
                none.pixels.is_empty(),
                "{what}: the f64 kernel reports nothing"
            );
            let (mut image, fixup) =
                render_with(p, Precision::F32, rows, &|_| {}, &cancel).unwrap();
            assert_eq!(row32::applies(p) && rows, what == "row path", "{what}");
            // pixel (60, 0) and (0, 60) sit on (-20, ±60, 0); their neighbours do not
            for i in [60, 60 * 64] {
                assert!(
                    fixup.pixels.contains(&i),
                    "{what}: pixel {i} not reported: {fixup:?}"
                );
            }
            assert!(fixup.pixels.len() < 16, "{what}: {fixup:?}");
            assert!(
                fixup.pixels.windows(2).all(|w| w[0] < w[1]),
                "{what}: sorted, once each"
            );
            assert_eq!(fixup.tricubic, what == "tricubic", "{what}");
            if what == "tricubic" {
                // the same switch as the f64 kernel's sequential run (previous test's reference)
                let ep = pixel64::ExactCtx::new(p);
                let first = first_rendered_pixel(p);
                let mut on = true;
                let mut switch = None;
                for i in 0..64 * 64 {
                    let out = pixel64::render_pixel(&ep, i % 64, i / 64, Some(i) == first, on);
                    if out.triggered && on {
                        on = false;
                        switch = Some(i);
                    }
                }
                assert!(switch.is_some(), "the table should be left");
                assert_eq!(fixup.interp_switch, switch, "{what}");
            }
            apply_exact_fixup(p, &mut image, &fixup);
            for &i in &fixup.pixels {
                assert_eq!(
                    image[i].to_bits(),
                    f64_image[i].to_bits(),
                    "{what}: pixel {i}"
                );
            }
            assert!(max_rel_diff(&f64_image, &image) < 1e-4, "{what}");
        }
    }

    /// Tricubic lookups switch off, in raster order, at the first pixel whose stencil leaves
    /// the table: a small table reached only by the lower rows.
    #[test]
    fn interpolation_switches_off_in_raster_order() {
        let mut files = MemFiles::default();
        let mut hkl = String::new();
        for h in -6..=6 {
            for k in -6..=6 {
                for l in -6..=6 {
                    hkl.push_str(&format!("{h} {k} {l} 30\n"));
                }
            }
        }
        files.0.insert("s.hkl".into(), hkl.into_bytes());
        let prep = prepare("-hkl s.hkl -interpolate -cell 40 40 40 90 90 90 -N 5 -lambda 1 -distance 30 -Xbeam 0.3 -Ybeam 0.3 -detpixels 48", &files);
        let cancel = AtomicBool::new(false);
        let (img, fixup) = render(prep.plan(), Precision::F64, &|_| {}, &cancel).unwrap();
        assert!(fixup.pixels.is_empty(), "the f64 kernel reports nothing");
        // sequential reference: one pixel after another, carrying the switch
        let ep = pixel64::ExactCtx::new(prep.plan());
        let mut interp = true;
        let first = first_rendered_pixel(prep.plan());
        let mut switched = false;
        for s in 0..48 {
            for f in 0..48 {
                let out = pixel64::render_pixel(&ep, f, s, Some(s * 48 + f) == first, interp);
                if out.triggered {
                    interp = false;
                    switched = true;
                }
                assert_eq!(out.value, img[s * 48 + f], "pixel {f},{s}");
            }
        }
        assert!(switched, "the test geometry should leave the table");
    }

    /// A structure-factor table over h, k in −25..=25 and l in −50..=50 (F from 10 to 59).
    fn table_files() -> MemFiles {
        let mut files = MemFiles::default();
        let mut hkl = String::new();
        for h in -25i32..=25 {
            for k in -25..=25 {
                for l in -50..=50 {
                    let f = 10 + (h * 7 + k * 3 + l).rem_euclid(50);
                    hkl.push_str(&format!("{h} {k} {l} {f}\n"));
                }
            }
        }
        files.0.insert("t.hkl".into(), hkl.into_bytes());
        files
    }

    /// Mosaic domains about one orientation (the page's realistic preset's kind) with large N, a
    /// structure-factor table and indices up to |l| ≈ 60 (2θ up to 45° on a 80 Å axis): the row
    /// path's hybrid indices (`row32::HybridIndices`: f64 once per pixel and source, an f32
    /// difference per orientation) against the f64 indices of the same f32 kernel and against
    /// the f64 kernel. Their δ differ by at most 4.2e-7 (`row32::HYBRID_EPS`; ≤ 8.4e-8 on a
    /// million random terms, `row32::tests`): with N = 40 a relative change of F_latt² up to
    /// 2πN·|Δδ|·|cot(πNδ)|, ~1e-4 at worst on a spot's pixel. Measured: 4.7e-7 of the peak, 2.9e-6
    /// relative on the pixels above 1 % of the peak; the bounds 2e-6 of the peak and 5e-5 on
    /// those pixels, and against the f64 kernel the f64 indices' own error (1.6e-7 of the peak
    /// here; `row_path_matches_pixel_path` bounds it by 1e-4) raised by at most 2e-6 of the peak.
    #[test]
    fn hybrid_indices_match_the_f64_indices() {
        let files = table_files();
        let prep = prepare(
            "-cell 40 40 80 90 90 120 -misset 10 25 5 -lambda 1 -distance 60 -detpixels 96 \
             -pixel 0.9 -N 40 -mosaic 0.3 -mosaic_dom 8 -oversample 2 -hkl t.hkl -nointerpolate \
             -default_F 5",
            &files,
        );
        let p = prep.plan();
        let hy = pixel32::FastCtx::new(p)
            .hybrid
            .expect("mosaic domains take the hybrid indices");
        assert!(
            hy.bound > 0.05 && hy.bound <= row32::HYBRID_MAX_DELTA,
            "bound {}",
            hy.bound
        );
        let cancel = AtomicBool::new(false);
        let none = &|_| {};
        let hybrid = finished(
            p,
            render_paths(p, Precision::F32, true, true, none, &cancel),
        );
        let today = finished(
            p,
            render_paths(p, Precision::F32, true, false, none, &cancel),
        );
        let exact = finished(p, render(p, Precision::F64, none, &cancel));
        let peak = exact.iter().fold(0f32, |m, v| m.max(*v)) as f64;
        let on_spots = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .filter(|(_, y)| **y as f64 >= 0.01 * peak)
                .map(|(x, y)| ((*x as f64 - *y as f64) / *y as f64).abs())
                .fold(0.0, f64::max)
        };
        let spots = exact.iter().filter(|v| **v as f64 >= 0.01 * peak).count();
        assert!(spots > 20, "{spots} pixels on spots");
        let (vs_today, vs_today_spots) = (max_rel_diff(&today, &hybrid), on_spots(&hybrid, &today));
        let (vs_f64, vs_f64_today) = (max_rel_diff(&exact, &hybrid), max_rel_diff(&exact, &today));
        eprintln!(
            "hybrid vs f64 indices: {vs_today:.2e} of the peak, {vs_today_spots:.2e} on spots; \
             vs the f64 kernel {vs_f64:.2e} (f64 indices {vs_f64_today:.2e}, spots {:.2e} / {:.2e})",
            on_spots(&hybrid, &exact),
            on_spots(&today, &exact)
        );
        assert!(hybrid != today, "the hybrid ran");
        assert!(vs_today < 2e-6, "{vs_today:e}");
        assert!(vs_today_spots < 5e-5, "{vs_today_spots:e}");
        assert!(
            vs_f64 <= vs_f64_today + 2e-6,
            "{vs_f64:e} vs {vs_f64_today:e}"
        );
    }

    /// The per-render decision (`row32::HybridIndices::new`): not for one orientation, nor for
    /// phi steps over a wide oscillation (|Δ| = |(M_o − M₀)·q| reaches whole indices); yes for
    /// mosaic domains and for a narrow phi range. `row32::q_max` bounds every pixel's |q|, and
    /// tightly (its corners are pixels' corners).
    #[test]
    fn hybrid_indices_only_for_close_orientations() {
        let base = "-cell 40 40 80 90 90 120 -misset 10 25 5 -lambda 1 -distance 60 \
                    -detpixels 96 -pixel 0.9 -N 40 -default_F 10";
        let decide = |extra: &str| {
            let prep = prepare(&format!("{base} {extra}"), &MemFiles::default());
            let p = prep.plan();
            assert!(row32::applies(p), "{extra}");
            let (_, bound) = row32::HybridIndices::delta_bound(p);
            (pixel32::FastCtx::new(p).hybrid.is_some(), bound)
        };
        assert!(!decide("").0, "one orientation");
        let (mosaic, b) = decide("-mosaic 0.3 -mosaic_dom 8");
        assert!(mosaic && b < 0.5, "mosaic domains: bound {b}");
        let (narrow, b) = decide("-phi 0 -osc 0.2 -phisteps 4");
        assert!(narrow && b < 0.5, "0.2° of phi: bound {b}");
        let (sweep, b) = decide("-phi 0 -osc 10 -phisteps 10");
        assert!(!sweep && b > 2.0, "10° of phi: bound {b}");
        let (far, b) = decide("-mosaic 20 -mosaic_dom 8");
        assert!(!far && b > 2.0, "20° mosaic: bound {b}");
        // every pixel centre's |q| is below the bound, the largest within a pixel of it
        let prep = prepare(base, &MemFiles::default());
        let p = prep.plan();
        let (pan, src) = (&p.panels[0], &p.sources[0]);
        let qmax = row32::q_max(p);
        let mut most = 0f64;
        for s in 0..p.spixels {
            for f in 0..p.fpixels {
                let (fc, sc) = ((f as f64 + 0.5) * p.pixel, (s as f64 + 0.5) * p.pixel);
                let x = [0, 1, 2].map(|k| fc * pan.fdet[k] + sc * pan.sdet[k] + pan.pix0[k]);
                let r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
                let d = [0, 1, 2].map(|k| x[k] / r - src.incident[k]);
                most = most.max((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() / src.lambda);
            }
        }
        assert!(most <= qmax && most > 0.99 * qmax, "{most} vs {qmax}");
    }

    /// The exact-Bragg rule under the hybrid indices: mosaic domains spread by 1e-10° keep the
    /// 3-4-5 triangle's pixels (60, 0) and (0, 60) within 1e-9 of (−20, ±60, 0) in every domain;
    /// the hybrid's f32 lanes flag them and decide them in f64, so the render reports exactly
    /// the pixels the f64 indices report (with a table too: the cells near δ = 0).
    #[test]
    fn hybrid_indices_report_the_exact_bragg_pixels_of_the_f64_indices() {
        let files = table_files();
        let geo = "-cell 100 100 100 90 90 90 -lambda 1 -distance 80 -pixel 1 -detpixels 64 \
                   -Xbeam 0 -Ybeam 0 -mosflm -oversample 1 -N 5 -mosaic 1e-10 -mosaic_dom 3";
        let cancel = AtomicBool::new(false);
        for extra in ["-default_F 100", "-hkl t.hkl -nointerpolate -default_F 7"] {
            let prep = prepare(&format!("{geo} {extra}"), &files);
            let p = prep.plan();
            assert!(pixel32::FastCtx::new(p).hybrid.is_some(), "{extra}");
            let (hybrid, hyb_fix) =
                render_paths(p, Precision::F32, true, true, &|_| {}, &cancel).unwrap();
            let (today, today_fix) =
                render_paths(p, Precision::F32, true, false, &|_| {}, &cancel).unwrap();
            assert!(
                today_fix.pixels.contains(&60) && today_fix.pixels.contains(&(60 * 64)),
                "{extra}: {today_fix:?}"
            );
            assert_eq!(hyb_fix, today_fix, "{extra}");
            assert!(max_rel_diff(&today, &hybrid) < 1e-6, "{extra}");
        }
    }
}
