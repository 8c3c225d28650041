//! N-dimensional dataset input and output through the `ndarray` crate.
//!
#![doc = include_str!("../../docs/guide/ndarray.md")]
