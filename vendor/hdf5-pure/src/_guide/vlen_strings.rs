//! Reading fixed- and variable-length string datasets, and bounding what a read allocates.
//!
#![doc = include_str!("../../docs/guide/vlen-strings.md")]
