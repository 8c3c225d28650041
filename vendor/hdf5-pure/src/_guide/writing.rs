//! Building a file with [`FileBuilder`](crate::FileBuilder): datasets, attributes, groups and
//! serialization.
//!
#![doc = include_str!("../../docs/guide/writing.md")]
