//! One error type for the whole crate: a message meant for a person, plus a kind that callers
//! (the CLI's exit status, the browser's fallback logic) can act on.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad command line: unknown flag, missing or non-numeric value.
    Usage,
    /// Required input missing (no structure factors, no cell): upstream prints its usage text.
    MissingInput,
    /// An input file could not be read or parsed.
    Input,
    /// The configuration is physically impossible (zero wavelength, detector parallel to beam, ...).
    Geometry,
    /// Writing an output file failed.
    Output,
    /// The render was cancelled.
    Cancelled,
    /// The GPU backend is unavailable or failed; the caller may fall back to the CPU.
    Gpu,
    /// The request exceeds a documented limit (table sizes, detector pixels, the CLI's cost
    /// budget); see `resolve::limits` and `api::estimate_cost`.
    Limit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Input, message)
    }
    pub fn geometry(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Geometry, message)
    }
    pub fn output(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Output, message)
    }
    pub fn gpu(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Gpu, message)
    }
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "render cancelled")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
