//! The prediction as columns for the browser: one little-endian byte column per quantity
//! (serde-wasm-bindgen hands each to JavaScript as a `Uint8Array`), instead of 10⁵ objects.

use super::{Prediction, Reflection};
use crate::vec3::V3;
use serde::Serialize;

/// A numeric column as little-endian bytes: `serialize_bytes`, which serde-wasm-bindgen turns
/// into a `Uint8Array` (one copy) that JavaScript views as an `Int32Array` or `Float32Array`,
/// instead of 10⁵ objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column(pub Vec<u8>);

impl Serialize for Column {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl Column {
    fn f32s(values: impl Iterator<Item = f64>) -> Self {
        Column(values.flat_map(|x| (x as f32).to_le_bytes()).collect())
    }
    fn i32s(values: impl Iterator<Item = i32>) -> Self {
        Column(values.flat_map(|x| x.to_le_bytes()).collect())
    }
}

/// The reflections as columns, in the records' order: `hkl`, `r`, `direction` hold 3 values per
/// point (i32, f32, f32); the others one f32 (`fast`, `slow`: NaN where the ray misses);
/// `flags` one byte: 1 = in condition, 2 = on the detector.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Columns {
    pub count: usize,
    pub hkl: Column,
    pub r: Column,
    pub d: Column,
    pub f: Column,
    pub phi: Column,
    pub excitation_error: Column,
    pub tolerance: Column,
    pub direction: Column,
    pub two_theta: Column,
    pub fast: Column,
    pub slow: Column,
    pub intensity: Column,
    pub peak: Column,
    pub partiality: Column,
    pub flags: Column,
}

/// A prediction whose reflections travel as `columns` (its `reflections` list is empty).
#[derive(Clone, Debug, Serialize)]
pub struct ColumnarPrediction {
    #[serde(flatten)]
    pub prediction: Prediction,
    pub columns: Columns,
}

impl Prediction {
    /// The records as columns (f32 values).
    pub fn columns(&self) -> Columns {
        let rs = &self.reflections;
        let one = |f: fn(&Reflection) -> f64| Column::f32s(rs.iter().map(f));
        let three = |f: fn(&Reflection) -> V3| Column::f32s(rs.iter().flat_map(f));
        Columns {
            count: rs.len(),
            hkl: Column::i32s(rs.iter().flat_map(|r| [r.h, r.k, r.l])),
            r: three(|r| r.r),
            d: one(|r| r.d),
            f: one(|r| r.f),
            phi: one(|r| r.phi),
            excitation_error: one(|r| r.excitation_error),
            tolerance: one(|r| r.tolerance),
            direction: three(|r| r.direction),
            two_theta: one(|r| r.two_theta),
            fast: one(|r| r.fast.unwrap_or(f64::NAN)),
            slow: one(|r| r.slow.unwrap_or(f64::NAN)),
            intensity: one(|r| r.intensity),
            peak: one(|r| r.peak),
            partiality: one(|r| r.partiality),
            flags: Column(
                rs.iter()
                    .map(|r| r.in_condition as u8 | (r.on_detector as u8) << 1)
                    .collect(),
            ),
        }
    }

    /// This prediction with its reflections as columns.
    pub fn into_columnar(mut self) -> ColumnarPrediction {
        let columns = self.columns();
        self.reflections = Vec::new();
        ColumnarPrediction {
            prediction: self,
            columns,
        }
    }
}
