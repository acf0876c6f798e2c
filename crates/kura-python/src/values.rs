//! Values between kura and Python: a result's values as `int`, `Decimal`, `date`, `datetime`,
//! `timedelta`, `UUID`, `bytes`, `list` ...; a Python parameter as the value of the type the
//! statement gives it, through the same text decoder the PostgreSQL server uses.

use kura_common::{DataType, Value};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    IntoPyDict, PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};

use crate::errors::{db_error_with, ProgrammingError};

/// `date.fromordinal` of 1970-01-01, kura's day 0.
const EPOCH_ORDINAL: i64 = 719_163;

fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    module: &str,
    name: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, module, name)
}

static DATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UUID: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn epoch(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    EPOCH
        .get_or_try_init(py, || {
            class(py, &DATETIME, "datetime", "datetime")?
                .call1((1970, 1, 1))
                .map(Bound::unbind)
        })
        .map(|e| e.bind(py))
}

fn out_of_range(what: &str, shown: String) -> PyErr {
    db_error_with(
        "22008",
        format!("{what} {shown} is outside the range Python's datetime can hold"),
    )
}

/// A result value of column type `dt` as a Python object.
pub fn to_python<'py>(
    py: Python<'py>,
    value: &Value,
    dt: &DataType,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        Value::BigInt(i) => i.into_pyobject(py)?.into_any(),
        Value::Double(f) => PyFloat::new(py, *f).into_any(),
        Value::Decimal(v, s) => class(py, &DECIMAL, "decimal", "Decimal")?
            .call1((kura_common::decimal::format_decimal(*v, *s),))?,
        Value::Date(d) => class(py, &DATE, "datetime", "date")?
            .call_method1("fromordinal", (*d as i64 + EPOCH_ORDINAL,))
            .map_err(|_| out_of_range("date", kura_common::date::format_date(*d)))?,
        Value::Timestamp(us) => {
            let delta = class(py, &TIMEDELTA, "datetime", "timedelta")?.call1((0, 0, *us))?;
            epoch(py)?.add(delta).map_err(|_| {
                out_of_range("timestamp", kura_common::timestamp::format_timestamp(*us))
            })?
        }
        Value::Interval(packed) => {
            // Python's timedelta has no months: a month counts 30 days, as PostgreSQL's
            // interval comparisons count it.
            let iv = kura_common::interval::Interval::unpack(*packed);
            let days = iv.months as i64 * 30 + iv.days as i64;
            class(py, &TIMEDELTA, "datetime", "timedelta")?.call1((days, 0, iv.micros))?
        }
        Value::Text(s) => text_to_python(py, s, dt)?,
    })
}

/// A value kura holds as text (text, UUID, bytea, arrays, JSON) as Python's kind of it.
fn text_to_python<'py>(py: Python<'py>, s: &str, dt: &DataType) -> PyResult<Bound<'py, PyAny>> {
    Ok(match dt {
        DataType::Uuid => class(py, &UUID, "uuid", "UUID")?.call1((s,))?,
        DataType::Bytea => {
            let bytes = kura_common::binary::bytea_bytes(s).ok_or_else(|| {
                db_error_with("XX000", format!("bytea value {s:?} is not in hex form"))
            })?;
            PyBytes::new(py, &bytes).into_any()
        }
        DataType::Array(elem) => {
            let elems = kura_common::array::parse(s)
                .map_err(|e| db_error_with("XX000", format!("array value {s:?}: {e:?}")))?;
            let et = elem.data_type();
            let list = PyList::empty(py);
            for e in elems {
                let v = match e {
                    None => Value::Null,
                    Some(text) => kura::params::value_from_text(&text, Some(&et))
                        .map_err(|m| db_error_with("XX000", m))?,
                };
                list.append(to_python(py, &v, &et)?)?;
            }
            list.into_any()
        }
        _ => PyString::new(py, s).into_any(),
    })
}

/// A row as a tuple.
pub fn row_to_python<'py>(
    py: Python<'py>,
    row: &[Value],
    types: &[DataType],
) -> PyResult<Bound<'py, PyTuple>> {
    let items = row
        .iter()
        .zip(types)
        .map(|(v, t)| to_python(py, v, t))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// A Python parameter as a kura value: of the Python object's own type (`int` bigint, `float`
/// double, `Decimal` numeric, `date`, `datetime` timestamp, `bytes` bytea ...), which the
/// engine binds as a literal of that type and coerces where the statement wants another, as
/// it does for a PostgreSQL client's typed parameter; a `str` is decoded as `dt`, the type
/// the statement gives the placeholder (text where it gives none), like an untyped literal.
pub fn from_python(obj: &Bound<'_, PyAny>, dt: Option<&DataType>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    let (text, natural) = text_form(obj)?;
    let ty = natural.or(dt.copied());
    kura::params::value_from_text(&text, ty.as_ref()).map_err(|m| db_error_with("22P02", m))
}

/// A Python object's PostgreSQL text form and the type it stands for (`None`: text).
fn text_form(obj: &Bound<'_, PyAny>) -> PyResult<(String, Option<DataType>)> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok((
            if b.is_true() { "t" } else { "f" }.into(),
            Some(DataType::Boolean),
        ));
    }
    if obj.is_instance_of::<PyInt>() {
        let text = obj.str()?.to_string();
        let fits = obj.extract::<i64>().is_ok();
        let natural = if fits {
            DataType::BigInt
        } else {
            DataType::Decimal {
                precision: 38,
                scale: 0,
            }
        };
        return Ok((text, Some(natural)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok((obj.repr()?.to_string(), Some(DataType::Double)));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok((s.to_string(), None));
    }
    if obj.is_instance(class(py, &DECIMAL, "decimal", "Decimal")?)? {
        let text = obj.str()?.to_string();
        let scale = text.split_once('.').map_or(0, |(_, f)| f.len()).min(38) as u8;
        return Ok((
            text,
            Some(DataType::Decimal {
                precision: 38,
                scale,
            }),
        ));
    }
    // A datetime is a date too: ask for it first.
    if obj.is_instance(class(py, &DATETIME, "datetime", "datetime")?)? {
        let naive = if obj.getattr("tzinfo")?.is_none() {
            obj.clone()
        } else {
            // kura's TIMESTAMP has no zone: an aware time is stored as its UTC time.
            let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
            obj.call_method1("astimezone", (utc,))?.call_method(
                "replace",
                (),
                Some(&[("tzinfo", py.None())].into_py_dict(py)?),
            )?
        };
        let text = naive.call_method1("isoformat", (" ",))?.to_string();
        return Ok((text, Some(DataType::Timestamp)));
    }
    if obj.is_instance(class(py, &DATE, "datetime", "date")?)? {
        return Ok((
            obj.call_method0("isoformat")?.to_string(),
            Some(DataType::Date),
        ));
    }
    if obj.is_instance(class(py, &TIMEDELTA, "datetime", "timedelta")?)? {
        let days: i64 = obj.getattr("days")?.extract()?;
        let seconds: i64 = obj.getattr("seconds")?.extract()?;
        let micros: i64 = obj.getattr("microseconds")?.extract()?;
        return Ok((
            format!("{days} days {seconds} seconds {micros} microseconds"),
            Some(DataType::Interval),
        ));
    }
    if obj.is_instance(class(py, &UUID, "uuid", "UUID")?)? {
        return Ok((obj.str()?.to_string(), Some(DataType::Uuid)));
    }
    if obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
        || obj.get_type().name()? == "memoryview"
    {
        let bytes = py.get_type::<PyBytes>().call1((obj,))?;
        let bytes = bytes.cast::<PyBytes>()?.as_bytes();
        return Ok((
            kura_common::binary::bytea_from_bytes(bytes),
            Some(DataType::Bytea),
        ));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut elems: Vec<Option<String>> = Vec::new();
        for item in obj.try_iter()? {
            let item = item?;
            elems.push(if item.is_none() {
                None
            } else {
                Some(text_form(&item)?.0)
            });
        }
        let text = kura_common::array::format(elems.iter().map(|e| e.as_deref()));
        return Ok((text, None));
    }
    if obj.is_instance_of::<pyo3::types::PyDict>() {
        let text = py
            .import("json")?
            .call_method1("dumps", (obj,))?
            .to_string();
        return Ok((text, Some(DataType::Jsonb)));
    }
    Err(ProgrammingError::new_err(format!(
        "kura cannot pass a Python {} as a parameter",
        obj.get_type().name()?
    )))
}
