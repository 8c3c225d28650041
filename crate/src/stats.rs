//! Image statistics as upstream prints them (MODEL §7.2): f64 sums over the stored f32 values in
//! raster order; max is the first maximum (strict >).

use crate::plan::Plan;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    pub max_i: f64,
    /// Detector coordinates (m) of the last sub-pixel of the max pixel, as upstream reports.
    pub max_fdet: f64,
    pub max_sdet: f64,
    pub max_index: usize,
    pub mean: f64,
    pub rms: f64,
    pub rmsd: f64,
    pub sum: f64,
    pub rendered: usize,
}

/// Rows and columns of the ROI inside the image: `(rows, columns)` as inclusive-exclusive
/// ranges (empty when the ROI lies outside).
pub fn roi_ranges(plan: &Plan) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let r = &plan.roi;
    let nonempty = |a: usize, b: usize| if a < b { a..b } else { 0..0 };
    let cols = nonempty(r.xmin, r.xmax.saturating_add(1).min(plan.fpixels));
    let rows = nonempty(r.ymin, r.ymax.saturating_add(1).min(plan.spixels));
    (rows, cols)
}

/// The first pass of upstream's statistics, in upstream's order: maximum (the first, strict >),
/// sum, mean and rms over the rendered pixels (inside the ROI and not masked) in raster order, so
/// every printed digit matches; `rmsd` is left 0 ([`with_rmsd`]). The loops walk the ROI's rows
/// and columns directly (no test per pixel of the whole image).
pub fn first_pass(plan: &Plan, image: &[f32]) -> Stats {
    let fp = plan.fpixels;
    let os = plan.oversample as usize;
    let sub = plan.pixel / plan.oversample as f64;
    let (rows, cols) = roi_ranges(plan);
    let mut st = Stats::default();
    let (mut sum, mut sumsqr, mut n) = (0.0f64, 0.0f64, 0usize);
    for s in rows {
        let row = &image[s * fp..(s + 1) * fp];
        let mask = plan.mask.as_deref().map(|m| &m[s * fp..(s + 1) * fp]);
        for f in cols.clone() {
            if mask.is_some_and(|m| m[f] == 0) {
                continue;
            }
            let v = row[f] as f64;
            if v > st.max_i {
                st.max_i = v;
                st.max_index = s * fp + f;
                st.max_fdet = sub * ((f * os + os - 1) as f64) + sub / 2.0;
                st.max_sdet = sub * ((s * os + os - 1) as f64) + sub / 2.0;
            }
            sum += v;
            sumsqr += v * v;
            n += 1;
        }
    }
    let nn = if n == 0 { 1 } else { n };
    st.mean = sum / nn as f64;
    let nr = if n <= 1 { 2 } else { n };
    st.rms = (sumsqr / (nr - 1) as f64).sqrt();
    st.sum = sum;
    st.rendered = n;
    st
}

/// Upstream's statistics (MODEL §7.2): [`first_pass`] then [`with_rmsd`].
pub fn compute(plan: &Plan, image: &[f32]) -> Stats {
    with_rmsd(plan, image, first_pass(plan, image))
}

/// The second pass: rmsd, the deviation from the mean over every pixel of the ROI (masked ones
/// included, as upstream), summed in raster order. Independent of anything made from the first
/// pass's maximum (the integer image), so the two can run side by side.
pub fn with_rmsd(plan: &Plan, image: &[f32], mut st: Stats) -> Stats {
    let fp = plan.fpixels;
    let (rows, cols) = roi_ranges(plan);
    let n_roi = rows.len() * cols.len();
    let mut dev = 0.0f64;
    for s in rows {
        let row = &image[s * fp..(s + 1) * fp];
        for &v in &row[cols.clone()] {
            let d = v as f64 - st.mean;
            dev += d * d;
        }
    }
    let nr = if n_roi <= 1 { 2 } else { n_roi };
    st.rmsd = (dev / (nr - 1) as f64).sqrt();
    st
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::MemFiles;
    use crate::plan::Roi;

    /// Upstream's loops as written (every pixel, a test each): the reference for the row walk.
    fn reference(plan: &Plan, image: &[f32]) -> Stats {
        let (fp, sp) = (plan.fpixels, plan.spixels);
        let os = plan.oversample as usize;
        let sub = plan.pixel / plan.oversample as f64;
        let mut st = Stats::default();
        let (mut sum, mut sumsqr, mut n, mut n_roi) = (0.0f64, 0.0f64, 0usize, 0usize);
        for s in 0..sp {
            for f in 0..fp {
                if !plan.roi.contains(f, s) {
                    continue;
                }
                n_roi += 1;
                if !plan.renders(f, s) {
                    continue;
                }
                let v = image[s * fp + f] as f64;
                if v > st.max_i {
                    st.max_i = v;
                    st.max_index = s * fp + f;
                    st.max_fdet = sub * ((f * os + os - 1) as f64) + sub / 2.0;
                    st.max_sdet = sub * ((s * os + os - 1) as f64) + sub / 2.0;
                }
                sum += v;
                sumsqr += v * v;
                n += 1;
            }
        }
        st.mean = sum / n.max(1) as f64;
        st.rms = (sumsqr / (n.max(2) - 1) as f64).sqrt();
        let mut dev = 0.0f64;
        for s in 0..sp {
            for f in 0..fp {
                if plan.roi.contains(f, s) {
                    let d = image[s * fp + f] as f64 - st.mean;
                    dev += d * d;
                }
            }
        }
        st.rmsd = (dev / (n_roi.max(2) - 1) as f64).sqrt();
        st.sum = sum;
        st.rendered = n;
        st
    }

    #[test]
    fn the_row_walk_equals_upstreams_loops_bit_for_bit() {
        let prep = crate::api::prepare(
            &crate::api::split_args(
                "-cell 100 100 100 90 90 90 -default_F 1 -N 2 -detpixels 37 -oversample 2",
            ),
            &MemFiles::default(),
        )
        .unwrap();
        let mut plan = prep.plan().clone();
        let n = plan.fpixels * plan.spixels;
        let mut x = 12345u64;
        let image: Vec<f32> = (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 40) as f32 / 1e3
            })
            .collect();
        let mask: Vec<u8> = (0..n).map(|i| (i % 7 != 3) as u8).collect();
        for roi in [
            Roi {
                xmin: 0,
                xmax: 36,
                ymin: 0,
                ymax: 36,
            },
            Roi {
                xmin: 3,
                xmax: 20,
                ymin: 5,
                ymax: 30,
            },
            Roi {
                xmin: 30,
                xmax: 99999,
                ymin: 0,
                ymax: 99999,
            },
            Roi {
                xmin: 20,
                xmax: 10,
                ymin: 0,
                ymax: 36,
            },
            Roi {
                xmin: 40,
                xmax: 50,
                ymin: 40,
                ymax: 50,
            },
        ] {
            for m in [None, Some(mask.clone())] {
                plan.roi = roi;
                plan.mask = m;
                assert_eq!(compute(&plan, &image), reference(&plan, &image), "{roi:?}");
            }
        }
    }
}
