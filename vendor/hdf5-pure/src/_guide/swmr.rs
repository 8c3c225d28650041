//! Appending to an unlimited dataset while other processes read it.
//!
#![doc = include_str!("../../docs/guide/swmr.md")]
