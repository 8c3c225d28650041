//! One error type for the whole crate: a message meant for a person, a kind that callers (the
//! CLI's exit status, the browser's fallback logic, the Python exception classes) can act on, and
//! where it points as data: the flag, the face's field (page attribute, Python keyword), the file,
//! its line and the header or table key.
//!
//! The `message` is always the full human text (the CLI prints exactly it); the location fields
//! repeat what the message already says so that a face can point at the right control without
//! parsing text. Serialized (serde) as `{kind, message, flag, field, file, line, key}`, `kind` in
//! snake case (`"usage"`, `"missing_input"`, ...) and absent locations as `null`; these names are
//! a stable contract with the wasm and Python faces.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
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
    /// budget); see `limits` and `api::estimate_cost`.
    Limit,
}

impl ErrorKind {
    /// Every kind, in declaration order (for faces that build one class per kind).
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Usage,
        ErrorKind::MissingInput,
        ErrorKind::Input,
        ErrorKind::Geometry,
        ErrorKind::Output,
        ErrorKind::Cancelled,
        ErrorKind::Gpu,
        ErrorKind::Limit,
    ];

    /// The kind's serialized name (`"usage"`, `"missing_input"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::MissingInput => "missing_input",
            ErrorKind::Input => "input",
            ErrorKind::Geometry => "geometry",
            ErrorKind::Output => "output",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Gpu => "gpu",
            ErrorKind::Limit => "limit",
        }
    }
}

/// Kept under clippy's 128-byte `result_large_err` bound: the locations are boxed strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Error {
    pub kind: ErrorKind,
    /// The full text for a person, as the CLI prints it.
    pub message: String,
    /// The command-line flag the error is about, with its dash (`"-cell"`).
    pub flag: Option<Box<str>>,
    /// The face's own name for the input (a page element's attribute, a Python keyword); the
    /// crate never sets it, faces do when they map a flag to their field.
    pub field: Option<Box<str>>,
    /// The input or output file the error is about, as the user named it.
    pub file: Option<Box<str>>,
    /// The 1-based line of `file` (or of its header).
    pub line: Option<u64>,
    /// The header keyword, table column or record the error is about (`"DISTANCE"`, `"CRYST1"`).
    pub key: Option<Box<str>>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            flag: None,
            field: None,
            file: None,
            line: None,
            key: None,
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

    /// Names the flag (kept if one is already set: the innermost cause knows best).
    pub fn with_flag(mut self, flag: impl Into<String>) -> Self {
        if self.flag.is_none() {
            self.flag = Some(flag.into().into_boxed_str());
        }
        self
    }
    /// Names the face's field (page attribute, Python keyword); replaces any earlier one.
    pub fn at_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into().into_boxed_str());
        self
    }
    /// Names the file (kept if one is already set).
    pub fn at_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into().into_boxed_str());
        }
        self
    }
    /// Names the 1-based line (kept if one is already set).
    pub fn at_line(mut self, line: impl TryInto<u64>) -> Self {
        if self.line.is_none() {
            self.line = line.try_into().ok();
        }
        self
    }
    /// Names the key (kept if one is already set).
    pub fn at_key(mut self, key: impl Into<String>) -> Self {
        if self.key.is_none() {
            self.key = Some(key.into().into_boxed_str());
        }
        self
    }
    /// The same error with `prefix` put before its message (location kept): for callers that add
    /// context such as `"-pdb model.cif: "`.
    pub fn prefixed(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_set_each_location_once() {
        let e = Error::input("x.hkl line 3: bad")
            .at_file("x.hkl")
            .at_line(3usize)
            .at_key("F")
            .with_flag("-hkl")
            .with_flag("-other")
            .at_file("y");
        assert_eq!(e.flag.as_deref(), Some("-hkl"));
        assert_eq!(e.file.as_deref(), Some("x.hkl"));
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key.as_deref(), Some("F"));
        assert_eq!(e.field, None);
        assert_eq!(e.to_string(), "x.hkl line 3: bad");
        let p = e.clone().prefixed("-hkl x.hkl: ");
        assert_eq!(p.message, "-hkl x.hkl: x.hkl line 3: bad");
        assert_eq!(p.line, Some(3));
    }

    #[test]
    fn kind_names_match_serde() {
        for k in ErrorKind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
        }
    }

    #[test]
    fn stays_small() {
        assert!(std::mem::size_of::<Error>() <= 128);
    }

    #[test]
    fn serializes_every_field() {
        let e = Error::usage("-cel: unknown").with_flag("-cel");
        let v: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "usage");
        assert_eq!(v["message"], "-cel: unknown");
        assert_eq!(v["flag"], "-cel");
        for k in ["field", "file", "line", "key"] {
            assert!(v[k].is_null(), "{k}");
        }
    }
}
