//! The WGSL kernels parse and validate with naga, and every Rust mirror struct in
//! `gpu::layout` has exactly the members, offsets and sizes naga computes for its WGSL twin.
#![cfg(feature = "gpu")]

use nanobragg::gpu::layout::{Chunk, GpuSource, GpuStruct, GpuTerm, Params, SelfTestParams};
use nanobragg::gpu::shaders;

fn module(src: &str) -> (naga::Module, naga::valid::ModuleInfo) {
    let module = match naga::front::wgsl::parse_str(src) {
        Ok(m) => m,
        Err(e) => panic!("WGSL parse error:\n{}", e.emit_to_string(src)),
    };
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("WGSL validation error:\n{}", e.emit_to_string(src)));
    (module, info)
}

fn check_struct<T: GpuStruct>(module: &naga::Module) {
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(T::WGSL_NAME))
        .unwrap_or_else(|| panic!("struct {} not found in WGSL", T::WGSL_NAME));
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{} is not a struct", T::WGSL_NAME);
    };
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let wgsl: Vec<(String, usize, usize)> = members
        .iter()
        .map(|m| {
            let size = layouter[m.ty].size as usize;
            (m.name.clone().unwrap_or_default(), m.offset as usize, size)
        })
        .collect();
    let rust: Vec<(String, usize, usize)> = T::FIELDS
        .iter()
        .map(|&(n, o, s)| (n.to_string(), o, s))
        .collect();
    assert_eq!(
        wgsl,
        rust,
        "member layout of {} drifted between WGSL and Rust",
        T::WGSL_NAME
    );
    assert_eq!(
        *span as usize,
        std::mem::size_of::<T>(),
        "size of {}",
        T::WGSL_NAME
    );
}

#[test]
fn kernel_validates_and_matches_rust_layout() {
    for fused in [true, false] {
        let src = shaders::kernel_source(fused);
        let (m, _) = module(&src);
        let ep = m
            .entry_points
            .iter()
            .find(|e| e.name == shaders::KERNEL_ENTRY)
            .expect("kernel entry point");
        assert_eq!(&ep.workgroup_size[..2], &shaders::KERNEL_WORKGROUP[..]);
        check_struct::<Params>(&m);
        check_struct::<Chunk>(&m);
        check_struct::<GpuSource>(&m);
        check_struct::<GpuTerm>(&m);
    }
}

#[test]
fn selftest_validates_and_matches_rust_layout() {
    for fused in [true, false] {
        let src = shaders::selftest_source(fused);
        let (m, _) = module(&src);
        assert!(m
            .entry_points
            .iter()
            .any(|e| e.name == shaders::SELFTEST_ENTRY));
        check_struct::<SelfTestParams>(&m);
    }
}
