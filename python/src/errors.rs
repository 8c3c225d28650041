//! The crate's errors as Python exceptions: `nanobragg.errors.from_kind` builds the class for
//! the error's kind (`nanobragg.Error` subclasses, bad values also `ValueError`), with the
//! message and the fields that locate it.

use nanobragg::error::Error as NbError;
use pyo3::prelude::*;

/// The Python exception for `e`: `nanobragg.errors.from_kind(kind, message, flag, file, line,
/// key)`, the locations taken from the crate's structured error.
pub fn to_py(py: Python<'_>, e: NbError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let m = py.import("nanobragg.errors")?;
        let exc = m.getattr("from_kind")?.call1((
            e.kind.name(),
            e.message.as_str(),
            e.flag.as_deref(),
            e.file.as_deref(),
            e.line,
            e.key.as_deref(),
        ))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}
