//! Building a nested group hierarchy and attaching typed metadata to its objects.
//!
#![doc = include_str!("../../docs/guide/groups-attributes.md")]
