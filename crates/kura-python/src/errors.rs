//! Python's DB-API 2.0 exceptions (PEP 249), raised for kura's errors by their SQLSTATE class,
//! each carrying the code as `sqlstate`.

use kura::KuraError;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyWarning};
use pyo3::prelude::*;

create_exception!(kura, Warning, PyWarning, "A warning (PEP 249).");
create_exception!(kura, Error, PyException, "Every kura error (PEP 249).");
create_exception!(
    kura,
    InterfaceError,
    Error,
    "A misuse of the Python interface."
);
create_exception!(
    kura,
    DatabaseError,
    Error,
    "An error the database reported."
);
create_exception!(
    kura,
    DataError,
    DatabaseError,
    "A bad value (SQLSTATE class 22)."
);
create_exception!(
    kura,
    OperationalError,
    DatabaseError,
    "The database could not do it now: memory, disk, cancel, conflict (classes 08, 25, 40, 53-58)."
);
create_exception!(
    kura,
    IntegrityError,
    DatabaseError,
    "A constraint was violated (class 23)."
);
create_exception!(
    kura,
    InternalError,
    DatabaseError,
    "A fault inside kura (class XX)."
);
create_exception!(
    kura,
    ProgrammingError,
    DatabaseError,
    "A wrong statement: syntax, unknown name, wrong type (class 42 and kin)."
);
create_exception!(
    kura,
    NotSupportedError,
    DatabaseError,
    "Valid SQL kura does not do (class 0A)."
);

/// The exception class of a SQLSTATE.
fn class_of<'py>(py: Python<'py>, sqlstate: &str) -> Bound<'py, pyo3::types::PyType> {
    use pyo3::PyTypeInfo;
    match sqlstate.get(..2).unwrap_or("") {
        "22" => DataError::type_object(py),
        "23" => IntegrityError::type_object(py),
        "0A" => NotSupportedError::type_object(py),
        "XX" => InternalError::type_object(py),
        "08" | "25" | "40" | "53" | "54" | "55" | "57" | "58" => OperationalError::type_object(py),
        "42" | "26" | "34" | "3D" | "3F" | "2B" | "0L" | "0P" | "28" => {
            ProgrammingError::type_object(py)
        }
        _ => DatabaseError::type_object(py),
    }
}

/// A kura error as the Python exception of its class, with `sqlstate` set.
pub fn db_error(e: KuraError) -> PyErr {
    db_error_with(e.sqlstate(), e.to_string())
}

/// An error of `sqlstate` with `message`.
pub fn db_error_with(sqlstate: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let class = class_of(py, sqlstate);
        match class.call1((message.clone(),)) {
            Ok(value) => {
                let _ = value.setattr("sqlstate", sqlstate);
                PyErr::from_value(value)
            }
            Err(e) => e,
        }
    })
}

/// The module's exception classes, by name.
pub fn add_to(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Warning", py.get_type::<Warning>())?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("InterfaceError", py.get_type::<InterfaceError>())?;
    m.add("DatabaseError", py.get_type::<DatabaseError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("OperationalError", py.get_type::<OperationalError>())?;
    m.add("IntegrityError", py.get_type::<IntegrityError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("ProgrammingError", py.get_type::<ProgrammingError>())?;
    m.add("NotSupportedError", py.get_type::<NotSupportedError>())?;
    Ok(())
}
