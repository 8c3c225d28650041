//! The WGSL kernels parse and validate with naga, every Rust mirror struct in `gpu::layout` has
//! exactly the members, offsets and sizes naga computes for its WGSL twin, and every constant
//! shared by the two sides (flag bits, shapes, the flags-buffer layout, the term rules of
//! `crate::terms`, the self-test op codes, the `FMA_FUSED` override) has the same value in both.
#![cfg(feature = "gpu")]

use nanobragg::gpu::layout::{
    self, Chunk, GpuPanel, GpuSource, GpuStruct, GpuTanParam, GpuTerm, Params, SelfTestParams,
    TanParams,
};
use nanobragg::gpu::selftest::Op;
use nanobragg::gpu::shaders;
use nanobragg::plan::Shape;
use nanobragg::terms;

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

/// The value of the WGSL `const` named `name`.
fn constant(m: &naga::Module, name: &str) -> naga::Literal {
    let (_, c) = m
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("const {name} not found in WGSL"));
    match m.global_expressions[c.init] {
        naga::Expression::Literal(l) => l,
        ref e => panic!("const {name} is not a literal: {e:?}"),
    }
}

fn check_u32(m: &naga::Module, name: &str, want: u32) {
    assert_eq!(
        constant(m, name),
        naga::Literal::U32(want),
        "WGSL {name} differs from the Rust value {want}"
    );
}

fn check_f32(m: &naga::Module, name: &str, want: f32) {
    assert_eq!(
        constant(m, name),
        naga::Literal::F32(want),
        "WGSL {name} differs from the Rust value {want:e}"
    );
}

/// The constants of `shared/terms.wgsl` against `crate::terms`, and the `FMA_FUSED` override.
fn check_shared_constants(m: &naga::Module) {
    check_f32(m, "EXACT_BRAGG", terms::EXACT_BRAGG as f32);
    check_f32(m, "INDEX_LIMIT", terms::INDEX_LIMIT as f32);
    check_u32(m, "INDEX_LIMIT_BITS", (terms::INDEX_LIMIT as f32).to_bits());
    check_f32(m, "GRATING_SMALL", terms::GRATING_SMALL);
    check_f32(m, "GAUSS_F64_UNDERFLOW", terms::GAUSS_F64_UNDERFLOW);
    let o = m
        .overrides
        .iter()
        .find(|(_, o)| o.name.as_deref() == Some(shaders::FMA_FUSED))
        .map(|(_, o)| o)
        .expect("override FMA_FUSED");
    assert!(o.id.is_none(), "the host sets FMA_FUSED by name");
}

#[test]
fn kernel_validates_and_matches_rust_layout() {
    let src = shaders::kernel_source();
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
    check_struct::<GpuPanel>(&m);
}

#[test]
fn kernel_constants_match_rust() {
    let (m, _) = module(&shaders::kernel_source());
    for &(name, bit) in layout::FLAGS {
        check_u32(&m, name, bit);
    }
    let mut bits: Vec<u32> = layout::FLAGS.iter().map(|f| f.1).collect();
    bits.sort();
    bits.dedup();
    assert_eq!(
        bits.len(),
        layout::FLAGS.len(),
        "flag bits must be distinct"
    );
    assert!(bits.iter().all(|b| b.is_power_of_two()));
    for (name, shape) in [
        ("SHAPE_SQUARE", Shape::Square),
        ("SHAPE_ROUND", Shape::Round),
        ("SHAPE_GAUSS", Shape::Gauss),
        ("SHAPE_TOPHAT", Shape::Tophat),
    ] {
        check_u32(&m, name, shape as u32);
    }
    assert_eq!(layout::SHAPE_TOPHAT, Shape::Tophat as u32);
    check_u32(&m, "INTERP_NEAREST", layout::INTERP_NEAREST);
    check_u32(&m, "INTERP_TRICUBIC", layout::INTERP_TRICUBIC);
    check_u32(&m, "NO_PIXEL", layout::NO_PIXEL);
    check_u32(&m, "FLAGS_SWITCH", layout::FLAGS_SWITCH as u32);
    check_u32(&m, "FLAGS_HEADER_WORDS", layout::FLAGS_HEADER_WORDS as u32);
    check_shared_constants(&m);
}

/// The tangent kernel (`shaders/nanobragg.wgsl` read with `TANGENT`) validates, its structs match
/// `layout`'s, and its constants the Rust values.
#[test]
fn tangent_kernel_validates_and_matches_rust_layout() {
    let (m, _) = module(&shaders::tangent_source());
    let ep = m
        .entry_points
        .iter()
        .find(|e| e.name == shaders::TANGENT_ENTRY)
        .expect("tangent entry point");
    assert_eq!(&ep.workgroup_size[..2], &shaders::KERNEL_WORKGROUP[..]);
    check_struct::<GpuTanParam>(&m);
    check_struct::<TanParams>(&m);
    check_struct::<Params>(&m);
    check_struct::<GpuTerm>(&m);
    check_u32(&m, "MAX_TAN_PARAMS", layout::MAX_TAN_PARAMS as u32);
    for &(name, bit) in layout::TAN_BITS {
        check_u32(&m, name, bit);
    }
    // the params array's length is MAX_TAN_PARAMS (its size is checked by check_struct)
    assert_eq!(
        TanParams::FIELDS[4].2,
        layout::MAX_TAN_PARAMS * size_of::<GpuTanParam>()
    );
}

/// The VJP's reduction (`shaders/reduce.wgsl`) validates, its uniform matches
/// `layout::ReduceParams` and its workgroup size the driver's.
#[test]
fn reduce_kernel_validates_and_matches_rust_layout() {
    let (m, _) = module(shaders::REDUCE);
    let ep = m
        .entry_points
        .iter()
        .find(|e| e.name == shaders::REDUCE_ENTRY)
        .expect("reduce entry point");
    assert_eq!(ep.workgroup_size, [shaders::REDUCE_WORKGROUP, 1, 1]);
    check_struct::<layout::ReduceParams>(&m);
    check_u32(&m, "REDUCE_WG", shaders::REDUCE_WORKGROUP);
}

/// The tangent pass's packing: a parameter that moves the term records by one matrix carries
/// it in the uniform (rotations and the wavelength: K on the right; the cell: C on the left), one
/// that does not (the mosaic spread) gets a block of term tangents laid out as the image's
/// terms; either way the term records' tangent it stands for equals the central difference of
/// `pack_terms` (the term records as functions of the plan), and the uniform carries the plan
/// tangent's fields.
#[test]
fn tangent_packing_is_the_terms_derivative() {
    use nanobragg::api;
    use nanobragg::files::MemFiles;
    use nanobragg::tangent::Param;
    let words = api::split_args(
        "-cell 70 80 90 75 85 95 -misset 15 25 35 -N 5 -lambda 1.2 -distance 120 -detpixels 16 \
         -default_F 100 -dispersion 4 -dispsteps 2 -mosaic 0.3 -mosaic_dom 3",
    );
    let prep = api::prepare(&words, &MemFiles::default()).unwrap();
    let params = [
        Param::RotX,
        Param::Lambda,
        Param::Distance,
        Param::NCells,
        Param::Mosaic,
        Param::CellA,
        Param::CellGamma,
    ];
    let (moved, t) = nanobragg::resolve::tangent::plan_tangent_at(
        &prep.setup,
        &MemFiles::default(),
        &params,
        &[],
    )
    .unwrap();
    let plan = &moved.plan;
    let which: Vec<usize> = (0..params.len()).collect();
    let (u, blocks) = layout::pack_tangent(plan, &t, &which, false);
    let block = plan.sources.len() * plan.orientations.len();
    assert_eq!((u.count, u.block as usize), (params.len() as u32, block));
    // rot_x (the terms on the right, and a*), lambda (on the right: K = −δλ/λ·1), distance the
    // detector, n_cells N, the mosaic spread per term (block 0), the cell on the left
    assert_eq!(blocks.len(), block);
    let k = |i: usize| u.params[i].kind;
    assert_eq!(
        k(0)[0],
        layout::TAN_RIGHT | layout::TAN_MOVES_RECIPROCAL,
        "rot_x"
    );
    assert_eq!(k(1)[0], layout::TAN_RIGHT, "lambda");
    assert_eq!(k(2)[0], layout::TAN_MOVES_DETECTOR);
    assert_eq!(k(3)[0], layout::TAN_MOVES_N);
    assert_eq!(k(4)[..2], [layout::TAN_MOVES_TERMS, 0], "mosaic");
    assert_eq!(k(5)[0] & layout::TAN_LEFT, layout::TAN_LEFT, "cell_a");
    assert_eq!(k(6)[0] & layout::TAN_LEFT, layout::TAN_LEFT, "cell_gamma");
    assert_eq!(u.params[3].dn, [1.0, 1.0, 1.0, 0.0]);
    assert_eq!(u.params[2].dpix0, {
        let d = &t.deltas[2].pix0;
        [d[0] as f32, d[1] as f32, d[2] as f32, 0.0]
    });
    // a term record as 12 numbers: the rows A_h, A_k, A_l and c = A·i beside each
    let val = |t: &GpuTerm| -> [f64; 12] {
        let v = |hi: [f32; 4], lo: [f32; 4]| -> [f64; 4] {
            std::array::from_fn(|c| hi[c] as f64 + lo[c] as f64)
        };
        let (a, b, c) = (v(t.h_hi, t.h_lo), v(t.k_hi, t.k_lo), v(t.l_hi, t.l_lo));
        std::array::from_fn(|i| [a, b, c][i / 4][i % 4])
    };
    let terms = layout::pack_terms(plan, false);
    // the tangent of term e that parameter slot j stands for
    let implied = |j: usize, e: usize| -> [f64; 12] {
        let p = &u.params[j];
        let m = [p.m0, p.m1, p.m2].map(|r| r.map(|x| x as f64));
        let a = val(&terms[e]);
        let row = |r: usize| [a[4 * r], a[4 * r + 1], a[4 * r + 2]];
        let s = &plan.sources[e / plan.orientations.len()];
        let mut out = [0f64; 12];
        for r in 0..3 {
            let d: [f64; 3] = if p.kind[0] & layout::TAN_RIGHT != 0 {
                // row r of A·K: Σ_n A[r][n] K[n][:]; m holds K's rows
                std::array::from_fn(|x| (0..3).map(|n| row(r)[n] * m[n][x]).sum())
            } else if p.kind[0] & layout::TAN_LEFT != 0 {
                // row r of C·A: Σ_n C[r][n] A[n][:]; m holds C's columns
                std::array::from_fn(|x| (0..3).map(|n| m[n][r] * row(n)[x]).sum())
            } else {
                // the packed record itself, c included
                let g = val(&blocks[p.kind[1] as usize * block + e]);
                out[4 * r..4 * r + 4].copy_from_slice(&g[4 * r..4 * r + 4]);
                continue;
            };
            out[4 * r..4 * r + 3].copy_from_slice(&d);
            out[4 * r + 3] = (0..3).map(|x| d[x] * s.incident[x]).sum();
        }
        out
    };
    // the mosaic spread's block: the plan tangent's moved domains, dA = δaxis/λ, dc = dA·i
    // (its finite difference is not the analytic tangent's: upstream's domains are redrawn)
    let d = &t.deltas[4];
    for e in 0..block {
        let (si, oi) = (e / plan.orientations.len(), e % plan.orientations.len());
        let s = &plan.sources[si];
        let o = d.orientations[oi];
        let got = implied(4, e);
        for (r, axis) in [o.a, o.b, o.c].iter().enumerate() {
            let da: [f64; 3] = std::array::from_fn(|x| axis[x] / s.lambda);
            let dc: f64 = (0..3).map(|x| da[x] * s.incident[x]).sum();
            for (c, want) in [da[0], da[1], da[2], dc].into_iter().enumerate() {
                let scale = want
                    .abs()
                    .max(1e-3 * da.iter().fold(0f64, |m, v| m.max(v.abs())));
                assert!(
                    (got[4 * r + c] - want).abs() <= 1e-6 * scale,
                    "mosaic term {e} row {r} component {c}: {} vs {want}",
                    got[4 * r + c]
                );
            }
        }
    }
    for (param, h) in [
        (Param::RotX, 1e-6),
        (Param::Lambda, 1e-6),
        (Param::CellA, 1e-4),
        (Param::CellGamma, 1e-4),
    ] {
        let slot = params.iter().position(|&p| p == param).unwrap();
        let moved_terms = |x: f64| {
            let p = api::moved_plan(&prep, &MemFiles::default(), &[(param, x)]).unwrap();
            layout::pack_terms(&p, false)
        };
        let (plus, minus) = (moved_terms(h), moved_terms(-h));
        for e in 0..block {
            let (p, m, got) = (val(&plus[e]), val(&minus[e]), implied(slot, e));
            for c in 0..12 {
                let fd = (p[c] - m[c]) / (2.0 * h);
                let scale = p[c].abs().max(1.0);
                assert!(
                    (fd - got[c]).abs() <= 1e-5 * scale,
                    "{} term {e} component {c}: {} vs finite difference {fd}",
                    param.name(),
                    got[c]
                );
            }
        }
    }
}

#[test]
fn flags_buffer_layout_round_trips() {
    // a read-back buffer with the switch word and three exact-Bragg pixels set
    let pixels = 70;
    let mut words = vec![0u32; layout::flags_words(pixels)];
    assert_eq!(words.len(), layout::FLAGS_HEADER_WORDS + 3);
    words[..layout::FLAGS_HEADER_WORDS].copy_from_slice(&layout::flags_header());
    assert_eq!(words[layout::FLAGS_SWITCH], layout::NO_PIXEL);
    for idx in [0usize, 33, 69] {
        words[layout::FLAGS_HEADER_WORDS + idx / 32] |= 1 << (idx % 32);
    }
    assert_eq!(layout::exact_bragg_pixels(&words, pixels), vec![0, 33, 69]);
}

#[test]
fn selftest_validates_and_matches_rust_layout() {
    let src = shaders::selftest_source();
    let (m, _) = module(&src);
    assert!(m
        .entry_points
        .iter()
        .any(|e| e.name == shaders::SELFTEST_ENTRY));
    check_struct::<SelfTestParams>(&m);
    check_shared_constants(&m);
    for &(op, name) in Op::ALL {
        check_u32(&m, name, op as u32);
    }
    let ops = m
        .constants
        .iter()
        .filter(|(_, c)| c.name.as_deref().is_some_and(|n| n.starts_with("OP_")))
        .count();
    assert_eq!(ops, Op::ALL.len(), "every WGSL op has a Rust Op");
}
