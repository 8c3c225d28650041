//! The tangent contract (MODEL §10): the parameters an image can be differentiated with respect
//! to, and the tangent of the plan, d(plan quantity)/d(parameter), that the tangent kernel
//! (`cpu::tangent`) reads beside the `Plan`. Resolved on the host in f64 by
//! `resolve::tangent`; kept out of `Plan` so the kernels' contract is unchanged.

use crate::error::{Error, Result};
use crate::plan::{Orientation, Plan};
use crate::vec3::{M3, V3};

/// A parameter of the model, by its public name (CLI `-gradients`, Python `gradients=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    RotX,
    RotY,
    RotZ,
    CellA,
    CellB,
    CellC,
    CellAlpha,
    CellBeta,
    CellGamma,
    NA,
    NB,
    NC,
    NCells,
    Mosaic,
    Distance,
    BeamX,
    BeamY,
    DetRotX,
    DetRotY,
    DetRotZ,
    Lambda,
    Fluence,
    Scale,
    DefaultF,
}

impl Param {
    pub const ALL: [Param; 24] = [
        Param::RotX,
        Param::RotY,
        Param::RotZ,
        Param::CellA,
        Param::CellB,
        Param::CellC,
        Param::CellAlpha,
        Param::CellBeta,
        Param::CellGamma,
        Param::NA,
        Param::NB,
        Param::NC,
        Param::NCells,
        Param::Mosaic,
        Param::Distance,
        Param::BeamX,
        Param::BeamY,
        Param::DetRotX,
        Param::DetRotY,
        Param::DetRotZ,
        Param::Lambda,
        Param::Fluence,
        Param::Scale,
        Param::DefaultF,
    ];

    /// The public name.
    pub fn name(self) -> &'static str {
        match self {
            Param::RotX => "rot_x",
            Param::RotY => "rot_y",
            Param::RotZ => "rot_z",
            Param::CellA => "cell_a",
            Param::CellB => "cell_b",
            Param::CellC => "cell_c",
            Param::CellAlpha => "cell_alpha",
            Param::CellBeta => "cell_beta",
            Param::CellGamma => "cell_gamma",
            Param::NA => "n_a",
            Param::NB => "n_b",
            Param::NC => "n_c",
            Param::NCells => "n_cells",
            Param::Mosaic => "mosaic",
            Param::Distance => "distance",
            Param::BeamX => "beam_x",
            Param::BeamY => "beam_y",
            Param::DetRotX => "det_rotx",
            Param::DetRotY => "det_roty",
            Param::DetRotZ => "det_rotz",
            Param::Lambda => "lambda",
            Param::Fluence => "fluence",
            Param::Scale => "scale",
            Param::DefaultF => "default_F",
        }
    }

    /// The unit the derivative is per (photons per pixel per this unit).
    pub fn unit(self) -> &'static str {
        match self {
            Param::RotX | Param::RotY | Param::RotZ => "rad",
            Param::CellA | Param::CellB | Param::CellC | Param::Lambda => "Å",
            Param::CellAlpha
            | Param::CellBeta
            | Param::CellGamma
            | Param::Mosaic
            | Param::DetRotX
            | Param::DetRotY
            | Param::DetRotZ => "deg",
            Param::NA | Param::NB | Param::NC | Param::NCells => "cells",
            Param::Distance | Param::BeamX | Param::BeamY => "mm",
            Param::Fluence => "photons/m²",
            Param::Scale => "relative",
            Param::DefaultF => "F",
        }
    }

    /// A parameter by name; an unknown name is an error naming `flag` and the nearest name.
    pub fn parse(name: &str, flag: &str) -> Result<Param> {
        let n = name.trim();
        if let Some(p) = Param::ALL.iter().find(|p| p.name() == n) {
            return Ok(*p);
        }
        // accepted spellings: case-insensitive, and `default_f`
        if let Some(p) = Param::ALL.iter().find(|p| p.name().eq_ignore_ascii_case(n)) {
            return Ok(*p);
        }
        let hint = match crate::flagwords::nearest(n, Param::ALL.iter().map(|p| p.name())) {
            Some(s) => format!(" (did you mean {s}?)"),
            None => String::new(),
        };
        let all: Vec<&str> = Param::ALL.iter().map(|p| p.name()).collect();
        Err(Error::usage(format!(
            "{flag}: unknown parameter '{n}'{hint}; the parameters are {}",
            all.join(", ")
        ))
        .with_flag(flag))
    }

    /// A comma- (or space-) separated list of names; duplicates are an error.
    pub fn parse_list(list: &str, flag: &str) -> Result<Vec<Param>> {
        let mut out: Vec<Param> = Vec::new();
        for w in list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
        {
            let p = Param::parse(w, flag)?;
            if out.contains(&p) {
                return Err(
                    Error::usage(format!("{flag}: parameter '{w}' given twice")).with_flag(flag)
                );
            }
            out.push(p);
        }
        if out.is_empty() {
            return Err(Error::usage(format!(
                "{flag}: expected a list of parameters, e.g. rot_x,cell_a,distance"
            ))
            .with_flag(flag));
        }
        Ok(out)
    }
}

/// One parameter's tangent of the plan: d(quantity)/d(parameter) for every quantity of the
/// plan that a parameter can move (the rest are held constant). Units: the plan's per the
/// parameter's public unit ([`Param::unit`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanDelta {
    pub pix0: V3,
    pub fdet: V3,
    pub sdet: V3,
    pub odet: V3,
    pub close_distance: f64,
    /// Per source (m per unit).
    pub lambda: Vec<f64>,
    /// Per entry of `Plan::orientations` / `orientations_first` (empty when all zero).
    pub orientations: Vec<Orientation>,
    pub orientations_first: Vec<Orientation>,
    pub n: [f64; 3],
    pub a_star: V3,
    pub b_star: V3,
    pub c_star: V3,
    pub default_f: f64,
    pub r_e_sqr_fluence: f64,
    pub i_bg: f64,
}

fn nz(v: V3) -> bool {
    v.iter().any(|&x| x != 0.0)
}

impl PlanDelta {
    /// The zero tangent for `plan`.
    pub fn zero(plan: &Plan) -> Self {
        PlanDelta {
            lambda: vec![0.0; plan.sources.len()],
            ..Default::default()
        }
    }
    /// Moves the pixel positions (detector basis, `pix0`, close distance).
    pub fn moves_detector(&self) -> bool {
        nz(self.pix0)
            || nz(self.fdet)
            || nz(self.sdet)
            || nz(self.odet)
            || self.close_distance != 0.0
    }
    pub fn moves_lambda(&self) -> bool {
        self.lambda.iter().any(|&x| x != 0.0)
    }
    pub fn moves_orientations(&self) -> bool {
        let any = |t: &[Orientation]| t.iter().any(|o| nz(o.a) || nz(o.b) || nz(o.c));
        any(&self.orientations) || any(&self.orientations_first)
    }
    pub fn moves_reciprocal(&self) -> bool {
        nz(self.a_star) || nz(self.b_star) || nz(self.c_star)
    }
    pub fn moves_n(&self) -> bool {
        nz(self.n)
    }
}

/// How one parameter moves every orientation of the tables, when one matrix does it
/// (MODEL §10.5): the kernels then contract its tangent once per pixel instead of per term
/// (`cpu::tangent::OriForm`, `gpu::layout::TermForm`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OrientationMove {
    /// dM_o = M_o·K for every o (a rotation about a lab axis u: K q = q × u).
    Right(M3),
    /// dM_o = C·M_o for every o (the cell: C = dM₀·M₀⁻¹).
    Left(M3),
}

fn mat_mul(a: &M3, b: &M3) -> M3 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

fn mat_inverse(m: &M3) -> Option<M3> {
    let c = |r: usize, k: usize| {
        let (r1, r2, k1, k2) = ((r + 1) % 3, (r + 2) % 3, (k + 1) % 3, (k + 2) % 3);
        m[r1][k1] * m[r2][k2] - m[r1][k2] * m[r2][k1]
    };
    let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
    (det != 0.0 && det.is_finite())
        .then(|| std::array::from_fn(|i| std::array::from_fn(|j| c(j, i) / det)))
}

/// The orientation matrix M (rows a, b, c) of an orientation.
pub fn rows(o: &Orientation) -> M3 {
    [o.a, o.b, o.c]
}

/// The one matrix that moves every pair (M_o, dM_o) of `pairs` (see [`OrientationMove`]): K or
/// C from the first pair (in f64), accepted when it gives every dM_o within 1e-9 of the
/// largest moved component; K preferred. None when neither fits, M₀ is singular or there are
/// no pairs.
pub fn orientation_move(pairs: &[(M3, M3)]) -> Option<OrientationMove> {
    let (m0, dm0) = pairs.first()?;
    let scale = pairs
        .iter()
        .flat_map(|(_, dm)| dm.iter().flatten())
        .fold(0f64, |s, &x| s.max(x.abs()));
    let inv = mat_inverse(m0)?;
    let fits = |f: &dyn Fn(&M3) -> M3| {
        pairs.iter().all(|(m, dm)| {
            let g = f(m);
            (0..3).all(|i| (0..3).all(|j| (g[i][j] - dm[i][j]).abs() <= 1e-9 * scale))
        })
    };
    let k = mat_mul(&inv, dm0);
    if fits(&|m| mat_mul(m, &k)) {
        return Some(OrientationMove::Right(k));
    }
    let c = mat_mul(dm0, &inv);
    fits(&|m| mat_mul(&c, m)).then_some(OrientationMove::Left(c))
}

/// The tangent of a plan for a list of parameters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanTangent {
    pub params: Vec<Param>,
    pub deltas: Vec<PlanDelta>,
}
