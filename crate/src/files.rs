//! Where input files come from: the disk for the CLI, a name -> bytes map in the browser.

use crate::error::{Error, Result};
use std::collections::HashMap;

pub trait FileSource {
    /// Read a whole file. The error message names the file.
    fn read(&self, name: &str) -> Result<Vec<u8>>;
    /// True when the file exists (used for upstream's silent `Fdump.bin` lookup).
    fn exists(&self, name: &str) -> bool;
}

/// Files on disk, relative to the current directory.
pub struct DiskFiles;

impl FileSource for DiskFiles {
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        std::fs::read(name).map_err(|e| Error::input(format!("cannot read file '{name}': {e}")))
    }
    fn exists(&self, name: &str) -> bool {
        std::path::Path::new(name).is_file()
    }
}

/// Files held in memory (browser uploads, tests).
#[derive(Default, Clone)]
pub struct MemFiles(pub HashMap<String, Vec<u8>>);

impl FileSource for MemFiles {
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.0.get(name).cloned().ok_or_else(|| {
            Error::input(format!(
                "cannot read file '{name}': no such file was provided"
            ))
        })
    }
    fn exists(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}
