//! The CPU's vector instructions, detected at run time: the CPU kernels' hot loops
//! (`simd_versions!`) are compiled once per level and the widest the CPU has is taken. Rust
//! neither reassociates nor contracts floating-point arithmetic, so every level computes the
//! same bits (`crate/tests/cli.rs` renders with each and compares); the wider ones only do more
//! lanes at once. `NANOBRAGG_SIMD` (`avx512`, `avx2` or `none`) caps the level, to compare them.

use crate::error::{Error, Result};
use std::sync::OnceLock;

/// The variable that caps the level.
pub const SIMD_ENV: &str = "NANOBRAGG_SIMD";

/// A level of vector instructions, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    /// The target's baseline (SSE2 on x86_64; simd128 on wasm32).
    None,
    /// AVX2: 4 × f64, 8 × f32.
    Avx2,
    /// AVX-512 (F, VL, DQ, BW): 8 × f64, 16 × f32.
    Avx512,
}

impl Simd {
    pub fn name(self) -> &'static str {
        match self {
            Simd::None => "none",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }

    /// A level by its name (`avx512`, `avx2`, `none`); an error naming [`SIMD_ENV`] otherwise.
    pub fn parse(v: &str) -> Result<Self> {
        match v.trim() {
            "none" => Ok(Simd::None),
            "avx2" => Ok(Simd::Avx2),
            "avx512" => Ok(Simd::Avx512),
            other => Err(Error::usage(format!(
                "{SIMD_ENV}={other:?}: expected avx512, avx2 or none (the widest vector \
                 instructions the CPU kernels may use)"
            ))),
        }
    }
}

/// The widest level this CPU has.
pub fn detected() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw") {
            return Simd::Avx512;
        }
        if has!("avx2") {
            return Simd::Avx2;
        }
    }
    Simd::None
}

/// The cap [`SIMD_ENV`] sets, if any; an error naming it for a value that is not a level.
pub fn setting() -> Result<Option<Simd>> {
    #[cfg(not(target_arch = "wasm32"))]
    if let Ok(v) = std::env::var(SIMD_ENV) {
        if !v.trim().is_empty() {
            return Simd::parse(&v).map(Some);
        }
    }
    Ok(None)
}

/// The level the kernels use: the detected one, capped by [`SIMD_ENV`] (read once; a bad value
/// is refused by `api::prepare` before any kernel runs, and ignored here).
pub fn level() -> Simd {
    static LEVEL: OnceLock<Simd> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cpu = detected();
        match setting() {
            Ok(Some(cap)) => cpu.min(cap),
            _ => cpu,
        }
    })
}

/// `fn $select() -> fn(..)`: `$body` compiled once per [`Simd`] level (as is; with AVX2; with
/// AVX-512, so that its loops vectorise 4 or 8 × f64, 8 or 16 × f32 wide), the one of
/// [`level`] returned. On other targets (wasm32 with simd128) the plain version.
macro_rules! simd_versions {
    ($(#[$m:meta])* $vis:vis fn $select:ident => $body:ident $(::<$gen:tt>)? ($($arg:ident: $ty:ty),*) $(-> $ret:ty)?) => {
        $(#[$m])*
        $vis fn $select() -> fn($($ty),*) $(-> $ret)? {
            fn plain($($arg: $ty),*) $(-> $ret)? {
                $body$(::<$gen>)?($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            unsafe fn avx2_inner($($arg: $ty),*) $(-> $ret)? {
                $body$(::<$gen>)?($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: only returned when the CPU reports AVX2 (`simd::level`)
                unsafe { avx2_inner($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2")]
            unsafe fn avx512_inner($($arg: $ty),*) $(-> $ret)? {
                $body$(::<$gen>)?($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            fn avx512($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: only returned when the CPU reports these features (`simd::level`)
                unsafe { avx512_inner($($arg),*) }
            }
            #[cfg(target_arch = "x86_64")]
            match $crate::simd::level() {
                $crate::simd::Simd::Avx512 => return avx512,
                $crate::simd::Simd::Avx2 => return avx2,
                $crate::simd::Simd::None => {}
            }
            plain
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Simd::parse("avx2").unwrap(), Simd::Avx2);
        assert_eq!(Simd::parse(" avx512 ").unwrap(), Simd::Avx512);
        assert_eq!(Simd::parse("none").unwrap(), Simd::None);
        let e = Simd::parse("avx-512").unwrap_err();
        assert!(
            e.message.contains(SIMD_ENV) && e.message.contains("avx2"),
            "{}",
            e.message
        );
        assert!(Simd::None < Simd::Avx2 && Simd::Avx2 < Simd::Avx512);
        assert!(level() <= detected());
    }
}
