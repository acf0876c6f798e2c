//! kura in Python (`import kura`): the database embedded in the Python process — no server, no
//! socket — behind PEP 249's interface, with results as tuples or as pyarrow Tables. This
//! native module (`kura._kura`) is the engine's side; `python/kura` is the Python API on it.

mod arrow_out;
mod connection;
mod errors;
mod qmark;
mod result;
mod running;
mod sigint;
mod stream;
mod values;

use pyo3::prelude::*;

#[pymodule]
fn _kura(m: &Bound<'_, PyModule>) -> PyResult<()> {
    kura_common::allocator::keep_freed_memory();
    m.add_class::<connection::PyConnection>()?;
    m.add_class::<result::PyQueryResult>()?;
    errors::add_to(m)?;
    m.add_function(wrap_pyfunction!(number_placeholders, m)?)?;
    m.add_function(wrap_pyfunction!(shift_placeholders, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// `sql` with its `?` placeholders numbered `$1, $2, ...`, and the parameters it takes.
#[pyfunction]
fn number_placeholders(sql: &str) -> PyResult<(String, usize)> {
    qmark::number_placeholders(sql).map_err(|m| errors::db_error_with("42601", m))
}

/// `sql` with each `$n` placeholder renumbered `$(n + by)`.
#[pyfunction]
fn shift_placeholders(sql: &str, by: usize) -> PyResult<String> {
    qmark::shift_placeholders(sql, by).map_err(|m| errors::db_error_with("42601", m))
}
