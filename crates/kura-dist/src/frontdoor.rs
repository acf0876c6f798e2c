//! The cluster's front door: kura's PostgreSQL-wire server in front of a [`Cluster`], so psql,
//! psycopg and JDBC reach the shared-nothing configuration (paper 003 §2) unchanged.
//!
//! Each client statement runs on the cluster's own async runtime; its Arrow batches become
//! rows of kura values for the wire. The cluster is read-only from here: statements are
//! DataFusion's SQL over the shards' tables (and views a session creates, each connection
//! in a DataFusion session of its own).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType as ArrowType, Schema, TimeUnit};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::IntervalMonthDayNano;
use datafusion::arrow::datatypes::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt8Type,
};
use datafusion::common::ScalarValue;
use kura_common::{DataType, Value};
use kura_server::engine::{rows_of, Canceller, Column, Engine, EngineError, EngineSession};
use kura_server::{serve_until_signal, Outcome, ServerConfig, ServerSummary, Shape};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::cluster::Cluster;
use crate::error::{DistError, DistResult};
use crate::prepared::Prepared;

/// A connected cluster served over the wire.
pub struct ClusterEngine {
    cluster: Arc<Cluster>,
    runtime: Handle,
}

impl ClusterEngine {
    /// Serves `cluster`, whose queries run on `runtime` (the one it was connected on; its
    /// owner keeps it until the server is done — a runtime may not be dropped by the
    /// server's own tasks).
    pub fn new(cluster: Cluster, runtime: Handle) -> Self {
        ClusterEngine {
            cluster: Arc::new(cluster),
            runtime,
        }
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }
}

impl Engine for ClusterEngine {
    type Session = ClusterSession;

    fn session(&self) -> ClusterSession {
        // A session of its own for each client; registering the tables cannot fail once the
        // cluster's own session has them, but if it did the shared one still answers.
        let cluster = self
            .cluster
            .new_session()
            .map(Arc::new)
            .unwrap_or_else(|_| self.cluster.clone());
        ClusterSession {
            cluster,
            runtime: self.runtime.clone(),
            running: Arc::new(Mutex::new(None)),
        }
    }

    fn version(&self) -> String {
        crate::cluster::version_text(self.cluster.name(), self.cluster.workers().len())
    }
}

/// `kura cluster serve`: connects to `workers` and serves the cluster over the PostgreSQL
/// wire protocol until SIGINT or SIGTERM; `on_ready` is told the address and the cluster.
pub fn serve_blocking(
    workers: &[String],
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr, &Cluster),
) -> DistResult<ServerSummary> {
    let runtime = crate::runtime()?;
    let cluster = runtime.block_on(Cluster::connect(workers))?;
    let engine = Arc::new(ClusterEngine::new(cluster, runtime.handle().clone()));
    let ready = engine.clone();
    let summary = serve_until_signal(engine, config, move |addr| on_ready(addr, ready.cluster()))?;
    // Queries still winding down after the grace period stop here, outside the server.
    runtime.shutdown_background();
    Ok(summary)
}

/// One client's session on the cluster.
pub struct ClusterSession {
    cluster: Arc<Cluster>,
    runtime: Handle,
    /// The statement running now, for the canceller.
    running: Arc<Mutex<Option<AbortHandle>>>,
}

/// A statement the extended protocol prepared: a transaction's bound (answered without the
/// cluster), or a statement the cluster planned with its `$n` parameters.
pub enum ClusterPrepared {
    Bound(String),
    Statement(Prepared),
}

/// A transaction's bound, answered as such: the cluster only reads, each statement on what
/// the shards hold when it runs, so a transaction has nothing to keep or undo (clients wrap
/// statements in them: psycopg unless told otherwise, JDBC with autocommit off).
fn transaction_bound(sql: &str) -> Option<&'static str> {
    let first = sql
        .split_whitespace()
        .next()?
        .trim_end_matches(';')
        .to_ascii_uppercase();
    match first.as_str() {
        "BEGIN" | "START" => Some("BEGIN"),
        "COMMIT" | "END" => Some("COMMIT"),
        "ROLLBACK" | "ABORT" => Some("ROLLBACK"),
        _ => None,
    }
}

impl ClusterSession {
    /// Runs `work` on the cluster's runtime as the statement the canceller stops.
    fn block<F>(&self, work: F) -> Result<F::Output, EngineError>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let task = self.runtime.spawn(work);
        *self.running.lock().unwrap() = Some(task.abort_handle());
        let joined = self.runtime.block_on(task);
        *self.running.lock().unwrap() = None;
        match joined {
            Ok(r) => Ok(r),
            Err(e) if e.is_cancelled() => Err(EngineError::new(
                "57014",
                "canceling statement due to user request",
            )),
            Err(e) => Err(EngineError::new("XX000", format!("cluster query: {e}"))),
        }
    }

    fn run(&mut self, sql: &str) -> Result<Outcome, EngineError> {
        if let Some(tag) = transaction_bound(sql) {
            return Ok(tag_only(tag));
        }
        let cluster = self.cluster.clone();
        let text = sql.to_string();
        let (batches, returned_rows) = self
            .block(async move { cluster.sql_outcome(&text).await })?
            .map_err(engine_error)?;
        if !returned_rows {
            return Ok(tag_only("OK"));
        }
        outcome(&batches)
    }
}

fn tag_only(tag: &str) -> Outcome {
    Outcome {
        columns: Vec::new(),
        rows: rows_of(std::iter::empty()),
        tag: tag.to_string(),
    }
}

/// A cluster error as the client sees it, with its SQLSTATE ([`DistError::sqlstate`]).
fn engine_error(e: DistError) -> EngineError {
    EngineError::new(e.sqlstate(), e.to_string())
}

impl EngineSession for ClusterSession {
    type Prepared = ClusterPrepared;

    fn execute(&mut self, sql: &str) -> Result<Outcome, EngineError> {
        self.run(sql)
    }

    fn prepare(&mut self, sql: &str) -> Result<(ClusterPrepared, Shape), EngineError> {
        if transaction_bound(sql).is_some() {
            let shape = Shape {
                params: Vec::new(),
                columns: Some(Vec::new()),
            };
            return Ok((ClusterPrepared::Bound(sql.to_string()), shape));
        }
        let cluster = self.cluster.clone();
        let text = sql.to_string();
        let prepared = self
            .block(async move { cluster.prepare(&text).await })?
            .map_err(engine_error)?;
        let shape = Shape {
            params: prepared
                .params
                .iter()
                .map(|t| t.as_ref().map(kura_type))
                .collect(),
            columns: prepared.columns.as_ref().map(|s| columns_of(s)),
        };
        Ok((ClusterPrepared::Statement(prepared), shape))
    }

    fn execute_prepared(
        &mut self,
        prepared: &ClusterPrepared,
        params: &[Value],
    ) -> Result<Outcome, EngineError> {
        let prepared = match prepared {
            ClusterPrepared::Bound(sql) => return self.run(sql),
            ClusterPrepared::Statement(p) => p.clone(),
        };
        let values = params.iter().map(scalar).collect::<Result<Vec<_>, _>>()?;
        let cluster = self.cluster.clone();
        let (batches, returned_rows) = self
            .block(async move { cluster.run_prepared(&prepared, values).await })?
            .map_err(engine_error)?;
        if !returned_rows {
            return Ok(tag_only("OK"));
        }
        outcome(&batches)
    }

    fn describe(&mut self, prepared: &ClusterPrepared) -> Result<Vec<Column>, EngineError> {
        match prepared {
            ClusterPrepared::Bound(_) => Ok(Vec::new()),
            ClusterPrepared::Statement(p) => match &p.columns {
                Some(schema) => Ok(columns_of(schema)),
                // Only running it tells (a text of several statements, EXPLAIN).
                None => Ok(self.run(p.text())?.columns),
            },
        }
    }

    fn canceller(&self) -> Canceller {
        let running = self.running.clone();
        Arc::new(move || {
            if let Some(task) = running.lock().unwrap().as_ref() {
                task.abort();
            }
        })
    }
}

/// A parameter's kura value as DataFusion's.
fn scalar(v: &Value) -> Result<ScalarValue, EngineError> {
    Ok(match v {
        Value::Null => ScalarValue::Null,
        Value::Boolean(b) => ScalarValue::Boolean(Some(*b)),
        Value::Integer(i) => ScalarValue::Int32(Some(*i)),
        Value::BigInt(i) => ScalarValue::Int64(Some(*i)),
        Value::Double(f) => ScalarValue::Float64(Some(*f)),
        Value::Decimal(d, s) => ScalarValue::Decimal128(Some(*d), 38, *s as i8),
        Value::Date(d) => ScalarValue::Date32(Some(*d)),
        Value::Text(t) => ScalarValue::Utf8(Some(t.clone())),
        Value::Timestamp(t) => ScalarValue::TimestampMicrosecond(Some(*t), None),
        Value::Interval(packed) => {
            let i = kura_common::interval::Interval::unpack(*packed);
            let nanos = i
                .micros
                .checked_mul(1_000)
                .ok_or_else(|| EngineError::new("22008", "interval parameter out of range"))?;
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                i.months, i.days, nanos,
            )))
        }
    })
}

/// The columns a client is told for an Arrow schema.
fn columns_of(schema: &Schema) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .map(|f| Column {
            name: f.name().clone(),
            data_type: kura_type(f.data_type()),
        })
        .collect()
}

/// The rows of `batches` as the wire's outcome: kura types for the columns, values row by
/// row (the wire writes them as text one row at a time anyway).
pub fn outcome(batches: &[RecordBatch]) -> Result<Outcome, EngineError> {
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => {
            return Ok(Outcome {
                columns: Vec::new(),
                rows: rows_of(std::iter::empty()),
                tag: "SELECT 0".into(),
            })
        }
    };
    let columns = columns_of(&schema);
    let mut rows = Vec::new();
    for b in batches {
        let cols: Vec<Vec<Value>> = b
            .columns()
            .iter()
            .map(|a| values(a.as_ref()))
            .collect::<Result<_, _>>()?;
        for i in 0..b.num_rows() {
            rows.push(cols.iter().map(|c| c[i].clone()).collect::<Vec<_>>());
        }
    }
    let tag = format!("SELECT {}", rows.len());
    Ok(Outcome {
        columns,
        rows: rows_of(rows.into_iter()),
        tag,
    })
}

/// The kura type a client is told for an Arrow column (types kura has no column form of are
/// sent as text).
pub fn kura_type(t: &ArrowType) -> DataType {
    match t {
        ArrowType::Boolean => DataType::Boolean,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::UInt8 => DataType::SmallInt,
        ArrowType::Int32 | ArrowType::UInt16 => DataType::Integer,
        ArrowType::Int64 | ArrowType::UInt32 => DataType::BigInt,
        ArrowType::Float32 | ArrowType::Float64 => DataType::Double,
        ArrowType::Decimal128(p, s) if *s >= 0 => DataType::Decimal {
            precision: *p,
            scale: *s as u8,
        },
        ArrowType::Date32 => DataType::Date,
        ArrowType::Timestamp(_, None) => DataType::Timestamp,
        _ => DataType::Varchar(None),
    }
}

/// One Arrow column as kura values, in the types [`kura_type`] names.
fn values(a: &dyn Array) -> Result<Vec<Value>, EngineError> {
    let n = a.len();
    let each = |f: &dyn Fn(usize) -> Value| -> Vec<Value> {
        (0..n)
            .map(|i| if a.is_null(i) { Value::Null } else { f(i) })
            .collect()
    };
    Ok(match a.data_type() {
        ArrowType::Boolean => each(&|i| Value::Boolean(a.as_boolean().value(i))),
        ArrowType::Int8 => each(&|i| Value::Integer(a.as_primitive::<Int8Type>().value(i) as i32)),
        ArrowType::Int16 => {
            each(&|i| Value::Integer(a.as_primitive::<Int16Type>().value(i) as i32))
        }
        ArrowType::UInt8 => {
            each(&|i| Value::Integer(a.as_primitive::<UInt8Type>().value(i) as i32))
        }
        ArrowType::Int32 => each(&|i| Value::Integer(a.as_primitive::<Int32Type>().value(i))),
        ArrowType::UInt16 => {
            each(&|i| Value::Integer(a.as_primitive::<UInt16Type>().value(i) as i32))
        }
        ArrowType::Int64 => each(&|i| Value::BigInt(a.as_primitive::<Int64Type>().value(i))),
        ArrowType::UInt32 => {
            each(&|i| Value::BigInt(a.as_primitive::<UInt32Type>().value(i) as i64))
        }
        ArrowType::Float32 => {
            each(&|i| Value::Double(a.as_primitive::<Float32Type>().value(i) as f64))
        }
        ArrowType::Float64 => each(&|i| Value::Double(a.as_primitive::<Float64Type>().value(i))),
        ArrowType::Decimal128(_, s) if *s >= 0 => {
            let s = *s as u8;
            each(&|i| Value::Decimal(a.as_primitive::<Decimal128Type>().value(i), s))
        }
        ArrowType::Date32 => each(&|i| Value::Date(a.as_primitive::<Date32Type>().value(i))),
        ArrowType::Timestamp(unit, None) => {
            let micros = |i: usize| match unit {
                TimeUnit::Second => a.as_primitive::<TimestampSecondType>().value(i) * 1_000_000,
                TimeUnit::Millisecond => {
                    a.as_primitive::<TimestampMillisecondType>().value(i) * 1_000
                }
                TimeUnit::Microsecond => a.as_primitive::<TimestampMicrosecondType>().value(i),
                TimeUnit::Nanosecond => {
                    a.as_primitive::<TimestampNanosecondType>().value(i) / 1_000
                }
            };
            each(&|i| Value::Timestamp(micros(i)))
        }
        _ => {
            // Everything else (text in any of Arrow's layouts, intervals, UInt64, ...) goes
            // as the text Arrow's cast writes.
            let text = cast(a, &ArrowType::Utf8).map_err(|e| {
                EngineError::new(
                    "0A000",
                    format!(
                        "a result column of type {} cannot be sent: {e}",
                        a.data_type()
                    ),
                )
            })?;
            let text = text.as_string::<i32>();
            each(&|i| Value::Text(text.value(i).to_string()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_columns_become_kura_values() {
        use arrow_array::{Decimal128Array, Int64Array, StringArray};
        let dec = Decimal128Array::from(vec![Some(12345), None])
            .with_precision_and_scale(15, 2)
            .unwrap();
        let batch = RecordBatch::try_from_iter(vec![
            (
                "n",
                Arc::new(Int64Array::from(vec![1, 2])) as Arc<dyn Array>,
            ),
            ("d", Arc::new(dec) as Arc<dyn Array>),
            (
                "t",
                Arc::new(StringArray::from(vec!["a", "b"])) as Arc<dyn Array>,
            ),
        ])
        .unwrap();
        let out = outcome(&[batch]).unwrap();
        assert_eq!(out.tag, "SELECT 2");
        assert_eq!(
            out.columns[1].data_type,
            DataType::Decimal {
                precision: 15,
                scale: 2
            }
        );
        let rows: Vec<Vec<Value>> = futures::executor::block_on(async {
            use futures::StreamExt;
            out.rows.map(|r| r.unwrap()).collect().await
        });
        assert_eq!(
            rows[0],
            vec![
                Value::BigInt(1),
                Value::Decimal(12345, 2),
                Value::Text("a".into())
            ]
        );
        assert_eq!(rows[1][1], Value::Null);
    }
}
