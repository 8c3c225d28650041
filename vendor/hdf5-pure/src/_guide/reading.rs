//! Opening files, navigating groups, and reading datasets and attributes.
//!
#![doc = include_str!("../../docs/guide/reading.md")]
