//! Reading and writing files too large to buffer, and the caches that bound them.
//!
#![doc = include_str!("../../docs/guide/streaming.md")]
