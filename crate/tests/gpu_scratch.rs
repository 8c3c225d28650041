#![cfg(feature = "gpu")]
mod gpu_support;
use nanobragg::api::{self, Precision};
use nanobragg::files::DiskFiles;
use std::sync::atomic::AtomicBool;
#[test]
fn scratch() {
    let words = api::split_args("-default_F 100 -cell 300 300 300 90 90 90 -N 50 -lambda 0.8 -distance 60 -pixel 0.125 -detpixels 256 -mosflm -Xbeam 6 -Ybeam 6 -oversample 1");
    let prep = api::prepare(&words, &DiskFiles).unwrap();
    let plan = prep.plan();
    let mut r = gpu_support::renderer();
    let g = r.render_blocking(plan).unwrap();
    let c = api::render_cpu(plan, Precision::F64, &|_| {}, &AtomicBool::new(false)).unwrap();
    let mut idx: Vec<usize> = (0..g.len()).collect();
    idx.sort_by(|&a, &b| {
        ((c[b] - g[b]).abs())
            .partial_cmp(&(c[a] - g[a]).abs())
            .unwrap()
    });
    for &i in &idx[..10] {
        eprintln!("pix f={} s={} gpu {} cpu {}", i % 256, i / 256, g[i], c[i]);
    }
    eprintln!("{:?}", plan.orientations[0]);
}
