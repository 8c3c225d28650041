//! WebAssembly, `no_std` and interoperability with the reference C library.
//!
#![doc = include_str!("../../docs/guide/portability.md")]
