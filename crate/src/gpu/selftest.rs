//! Runs the df64 building blocks and the term functions through the real compiled shader
//! (`shaders/selftest.wgsl`). Used at device creation to detect an unfused `fma` (then Dekker's
//! split is used) and to refuse devices that break the error-free transforms (reassociation,
//! flushed low words), and by `crate/tests/gpu_selftest.rs` to test every trick and every term
//! function against its Rust twin (`crate::terms`).

use super::context::{
    buffer_layouts, compute_pipeline, read_buffer, scope_error, READ, UNIFORM, WRITE,
};
use super::layout::SelfTestParams;
use super::shaders;
use crate::error::{Error, Result};

/// Operation codes of `selftest.wgsl` (`OP_*`; the names in [`Op::ALL`] are checked against the
/// WGSL by `crate/tests/gpu_layout.rs`). The inputs and outputs of each are documented at its
/// `case` in the WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    TwoSum = 0,
    TwoProdFma = 1,
    TwoProdSplit = 2,
    TwoProd = 3,
    DfAdd = 4,
    DfMul = 5,
    DfDiv = 6,
    DfSqrt = 7,
    DfDot3Sub = 8,
    SinpiCospi = 9,
    DfSincos = 10,
    QuickTwoSum = 11,
    /// `two_sum(-a, b*c)` with a raw product (contraction guard).
    TwoSumNegProduct = 12,
    /// `two_sum(-a, two_prod(b, c).hi)`, also returning the product pair.
    TwoSumNegTwoProd = 13,
    /// `grating_parts`, `sincg_delta`, `sinc3_pi`.
    Grating = 14,
    LatticeSquare = 15,
    LatticeRound = 16,
    /// `shape_r2`, `lattice_gauss`, `gauss_underflows`, `lattice_tophat`.
    ShapeR2 = 17,
    Polarization = 18,
    /// `capture_fraction`, `one_minus_exp_neg`, `solid_angle`.
    CaptureSolidAngle = 19,
    /// `index_ok`, `is_exact_bragg`, `round_even`, `sinpi`.
    Guards = 20,
    FNearest = 21,
    /// `stencil_leaves_table`, `f_tricubic` on df64 indices.
    FTricubic = 22,
    Polint4 = 23,
    /// `sincg_delta_d`, `sinc3_pi_d_over_x` (MODEL §10.5: the derivative twins).
    GratingD = 24,
    /// `lattice_square_d`, one part of its result per case (`d.w`: 0 d/dδ, 1 d/dN); `d.z` = 1:
    /// `lattice_square_d_with` without d/dN.
    LatticeSquareD = 25,
    /// `lattice_round_d`, parts as [`Op::LatticeSquareD`].
    LatticeRoundD = 26,
    /// `shape_r2_d`, one part per case (`a.w`: 0 d/dδ, 1 d/dN, 2–4 d/da*, d/db*, d/dc*).
    ShapeR2D = 27,
    /// `lattice_gauss_d` (`a.w` = 0) or `lattice_tophat_d` (1).
    GaussTophatD = 28,
    PolarizationD = 29,
    /// `capture_fraction_d` (`a.w` = 0) or `solid_angle_d` (1).
    CaptureSolidAngleD = 30,
    /// `f_tricubic_d` on df64 indices.
    FTricubicD = 31,
    Polint4D = 32,
}

impl Op {
    /// Every op with the name of its WGSL constant.
    pub const ALL: &'static [(Op, &'static str)] = &[
        (Op::TwoSum, "OP_TWO_SUM"),
        (Op::TwoProdFma, "OP_TWO_PROD_FMA"),
        (Op::TwoProdSplit, "OP_TWO_PROD_SPLIT"),
        (Op::TwoProd, "OP_TWO_PROD"),
        (Op::DfAdd, "OP_DF_ADD"),
        (Op::DfMul, "OP_DF_MUL"),
        (Op::DfDiv, "OP_DF_DIV"),
        (Op::DfSqrt, "OP_DF_SQRT"),
        (Op::DfDot3Sub, "OP_DF_DOT3_SUB"),
        (Op::SinpiCospi, "OP_SINPI_COSPI"),
        (Op::DfSincos, "OP_DF_SINCOS"),
        (Op::QuickTwoSum, "OP_QUICK_TWO_SUM"),
        (Op::TwoSumNegProduct, "OP_TWO_SUM_NEG_PRODUCT"),
        (Op::TwoSumNegTwoProd, "OP_TWO_SUM_NEG_TWO_PROD"),
        (Op::Grating, "OP_GRATING"),
        (Op::LatticeSquare, "OP_LATTICE_SQUARE"),
        (Op::LatticeRound, "OP_LATTICE_ROUND"),
        (Op::ShapeR2, "OP_SHAPE_R2"),
        (Op::Polarization, "OP_POLARIZATION"),
        (Op::CaptureSolidAngle, "OP_CAPTURE_SOLID_ANGLE"),
        (Op::Guards, "OP_GUARDS"),
        (Op::FNearest, "OP_F_NEAREST"),
        (Op::FTricubic, "OP_F_TRICUBIC"),
        (Op::Polint4, "OP_POLINT4"),
        (Op::GratingD, "OP_GRATING_D"),
        (Op::LatticeSquareD, "OP_LATTICE_SQUARE_D"),
        (Op::LatticeRoundD, "OP_LATTICE_ROUND_D"),
        (Op::ShapeR2D, "OP_SHAPE_R2_D"),
        (Op::GaussTophatD, "OP_GAUSS_TOPHAT_D"),
        (Op::PolarizationD, "OP_POLARIZATION_D"),
        (Op::CaptureSolidAngleD, "OP_CAPTURE_SOLID_ANGLE_D"),
        (Op::FTricubicD, "OP_F_TRICUBIC_D"),
        (Op::Polint4D, "OP_POLINT4_D"),
    ];
}

/// A compiled self-test pipeline for one `FMA_FUSED` setting.
pub struct SelfTest {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

impl SelfTest {
    pub fn new(device: &wgpu::Device, fma_fused: bool) -> Self {
        let label = "nanobragg selftest";
        let (layout, pl) = buffer_layouts(device, label, &[UNIFORM, READ, WRITE, READ]);
        let pipeline = compute_pipeline(
            device,
            label,
            &shaders::selftest_source(),
            shaders::SELFTEST_ENTRY,
            &pl,
            &shaders::constants(fma_fused),
        );
        SelfTest { pipeline, layout }
    }

    /// Evaluate `op` on each case (four vec4 inputs per case); one vec4 output per case.
    pub async fn run(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        op: Op,
        cases: &[[[f32; 4]; 4]],
    ) -> Result<Vec<[f32; 4]>> {
        self.run_with_table(device, queue, op, cases, &[]).await
    }

    /// [`Self::run`] with a structure-factor table for the lookup ops.
    pub async fn run_with_table(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        op: Op,
        cases: &[[[f32; 4]; 4]],
        table: &[f32],
    ) -> Result<Vec<[f32; 4]>> {
        use wgpu::util::DeviceExt;
        if cases.is_empty() {
            return Ok(Vec::new());
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let params = SelfTestParams {
            op: op as u32,
            count: cases.len() as u32,
            zero_a: 0,
            zero_b: 0,
        };
        let ubuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("selftest params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let ibuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("selftest inputs"),
            contents: bytemuck::cast_slice(cases),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let mut table_bytes: Vec<u8> = bytemuck::cast_slice(table).to_vec();
        table_bytes.resize(table_bytes.len().max(16), 0);
        let tbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("selftest table"),
            contents: &table_bytes,
            usage: wgpu::BufferUsages::STORAGE,
        });
        let size = (cases.len() * std::mem::size_of::<[f32; 4]>()) as u64;
        let obuf = super::context::new_buffer(
            device,
            "selftest outputs",
            size,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let rbuf = super::context::new_buffer(
            device,
            "selftest readback",
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("selftest"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: ubuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: ibuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: obuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: tbuf.as_entire_binding(),
                },
            ],
        });
        let mut enc = device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bg, &[]);
            pass.dispatch_workgroups((cases.len() as u32).div_ceil(64), 1, 1);
        }
        enc.copy_buffer_to_buffer(&obuf, 0, &rbuf, 0, size);
        queue.submit([enc.finish()]);
        scope_error(scope.pop().await, "self-test")?;
        let bytes = read_buffer(device, &rbuf, size).await?;
        Ok(bytemuck::cast_slice(&bytes).to_vec())
    }
}

/// One scalar case: `a` in the first vec4's x, `b` in its y.
pub fn pair(a: f32, b: f32) -> [[f32; 4]; 4] {
    [[a, b, 0.0, 0.0], [0.0; 4], [0.0; 4], [0.0; 4]]
}

/// Result of the start-up probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// `fma` is fused on this device (two_prod uses it); otherwise Dekker's split is used.
    pub fma_fused: bool,
}

/// Start-up probe (MODEL §9.3): `fma(a, a, -a*a)` for `a = 1 + 2^-12` must give the exact
/// 2^-24 tail; `two_sum(1, 2^-30)` must keep 2^-30; the chosen `two_prod` must be exact.
pub async fn probe(device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Probe> {
    let a = 1.0 + 2f32.powi(-12);
    let fused = SelfTest::new(device, true);
    let r = fused
        .run(device, queue, Op::TwoProdFma, &[pair(a, a)])
        .await?;
    let fma_fused = r[0][0] == a * a && r[0][1] == 2f32.powi(-24);
    let st = if fma_fused {
        fused
    } else {
        SelfTest::new(device, false)
    };
    let r = st
        .run(device, queue, Op::TwoSum, &[pair(1.0, 2f32.powi(-30))])
        .await?;
    if r[0] != [1.0, 2f32.powi(-30), 0.0, 0.0] {
        return Err(Error::gpu(format!(
            "the GPU compiler breaks error-free additions (two_sum(1, 2^-30) = {:?}); \
             double-float arithmetic is impossible on this device, use the CPU backend",
            &r[0][..2]
        )));
    }
    let r = st.run(device, queue, Op::TwoProd, &[pair(a, a)]).await?;
    if r[0][1] != 2f32.powi(-24) {
        return Err(Error::gpu(format!(
            "neither fused fma nor Dekker's split gives exact products on this device \
             (two_prod tail {:e}); use the CPU backend",
            r[0][1]
        )));
    }
    Ok(Probe { fma_fused })
}
