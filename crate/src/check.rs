//! The range rule of a numeric value (`Check`) and its bound as a person reads it: one rule for
//! every program's flags (`args::table`) and for the values the file readers (`io`) take from a
//! user's file, so that a distance in a header is held to what `-distance` accepts.

/// Range check for every numeric value of a flag, in the units the user typed. Every number must
/// also be finite (NaN and ±inf are rejected for all flags except `-detector_abs inf`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "rule", content = "max")]
pub enum Check {
    /// Any finite number.
    Finite,
    /// `|v| <= max`.
    Within(f64),
    /// `0 < v <= max`.
    Positive(f64),
    /// `0 <= v <= max`.
    NonNegative(f64),
    /// `v != 0`, `|v| <= max`.
    NonZero(f64),
}

impl Check {
    /// `None` when `v` passes, else what was expected ("a number > 0 and ≤ 1000").
    pub fn violation(self, v: f64) -> Option<String> {
        self.violation_of(v, false)
    }

    /// [`Check::violation`] for a value read as an integer (`integer`: "an integer from …")
    /// or as a number. The bounds are written as a person reads them ([`bound`]): "an integer
    /// from -2147483647 to 2147483647", "a number ≥ 0 and ≤ 1e300", not C's `%g`.
    pub fn violation_of(self, v: f64, integer: bool) -> Option<String> {
        let noun = if integer { "integer" } else { "number" };
        let a = if integer { "an" } else { "a" };
        if !v.is_finite() {
            return Some(format!("a finite {noun}"));
        }
        let bounded = |m: f64| m < f64::MAX;
        let (ok, want) = match self {
            Check::Finite => (true, String::new()),
            Check::Within(m) => (
                v.abs() <= m,
                format!("{a} {noun} from -{} to {}", bound(m), bound(m)),
            ),
            Check::Positive(m) => (
                v > 0.0 && v <= m,
                if bounded(m) {
                    format!("{a} {noun} > 0 and ≤ {}", bound(m))
                } else {
                    format!("{a} {noun} > 0")
                },
            ),
            Check::NonNegative(m) => (
                v >= 0.0 && v <= m,
                if bounded(m) {
                    format!("{a} {noun} ≥ 0 and ≤ {}", bound(m))
                } else {
                    format!("{a} {noun} ≥ 0")
                },
            ),
            Check::NonZero(m) => (
                v != 0.0 && v.abs() <= m,
                if bounded(m) {
                    format!("a non-zero {noun} from -{} to {}", bound(m), bound(m))
                } else {
                    format!("a non-zero {noun}")
                },
            ),
        };
        (!ok).then_some(want)
    }
}

/// A range check's bound as a person reads it (shared by every program's range messages):
/// integers below 10⁷ and integers that are not a short power-of-ten form in full
/// ("1000000", "2147483647"), round large ones in Rust's shortest exponent form ("1e7",
/// "1e300"), other numbers in their shortest decimal form ("0.5").
pub fn bound(m: f64) -> String {
    let short = format!("{m:e}");
    if m.fract() == 0.0 && m.abs() < 1e16 {
        let mantissa = short.split('e').next().unwrap_or_default();
        if m.abs() < 1e7 || mantissa.trim_start_matches('-').len() > 3 {
            return format!("{}", m as i64);
        }
        return short;
    }
    if m != 0.0 && (m.abs() >= 1e16 || m.abs() < 1e-4) {
        short
    } else {
        format!("{m}")
    }
}

/// Largest angle in degrees (a million degrees: any rotation; beyond, upstream's f64 angles lose
/// their meaning and the f32 kernel its precision). Also bounds `-twotheta_axis`, whose first
/// component upstream also reads as two-theta.
pub const ANGLE: f64 = 1e6;
