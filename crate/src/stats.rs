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

pub fn compute(plan: &Plan, image: &[f32]) -> Stats {
    let (fp, sp) = (plan.fpixels, plan.spixels);
    let n_os = plan.oversample as f64;
    let sub = plan.pixel / n_os;
    let mut st = Stats::default();
    let (mut sum, mut sumsqr, mut n) = (0.0f64, 0.0f64, 0usize);
    let mut n_roi = 0usize;
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
                st.max_fdet = sub
                    * ((f * plan.oversample as usize + plan.oversample as usize - 1) as f64)
                    + sub / 2.0;
                st.max_sdet = sub
                    * ((s * plan.oversample as usize + plan.oversample as usize - 1) as f64)
                    + sub / 2.0;
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
    let mut dev = 0.0f64;
    for s in 0..sp {
        for f in 0..fp {
            if plan.roi.contains(f, s) {
                let d = image[s * fp + f] as f64 - st.mean;
                dev += d * d;
            }
        }
    }
    let nr = if n_roi <= 1 { 2 } else { n_roi };
    st.rmsd = (dev / (nr - 1) as f64).sqrt();
    st.sum = sum;
    st.rendered = n;
    st
}
