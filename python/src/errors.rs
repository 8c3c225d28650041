//! The crate's errors as Python exceptions: `nanobragg.errors.from_kind` builds the class for
//! the error's kind (`nanobragg.Error` subclasses, bad values also `ValueError`), with the
//! message and the fields that locate it.

use nanobragg::error::{Error as NbError, ErrorKind};
use pyo3::prelude::*;

/// The kind's name, as `nanobragg.errors` spells it.
pub fn kind_name(k: &ErrorKind) -> &'static str {
    match k {
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

/// The Python exception for `e`.
pub fn to_py(py: Python<'_>, e: NbError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let m = py.import("nanobragg.errors")?;
        let (flag, file, line, key) = fields(&e);
        let exc = m.getattr("from_kind")?.call1((
            kind_name(&e.kind),
            e.message.clone(),
            flag,
            file,
            line,
            key,
        ))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}

/// (flag, file, line, key) of the error, where it names them.
fn fields(_e: &NbError) -> (Option<String>, Option<String>, Option<u64>, Option<String>) {
    (None, None, None, None)
}
