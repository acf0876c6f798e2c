//! kura in Python (`import kura`): the database embedded in the Python process — no server, no
//! socket — behind PEP 249's interface, with results as tuples or as pyarrow Tables. This
//! native module (`kura._kura`) is the engine's side; `python/kura` is the Python API on it.

mod connection;
mod errors;
mod qmark;
mod result;
mod running;
mod values;

use pyo3::prelude::*;

#[pymodule]
fn _kura(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<connection::PyConnection>()?;
    m.add_class::<result::PyQueryResult>()?;
    errors::add_to(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
