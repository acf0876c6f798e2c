//! Statements with `$n` parameters on a cluster — what the extended protocol's Parse, Describe
//! and Bind ask of it (pgjdbc sends every statement so): a statement is planned once to learn
//! its parameters' and columns' types, and planned again with the values each time it runs,
//! so a view dropped or created in between is seen as it is then.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use datafusion::arrow::compute::cast;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DFStatement;

use crate::cluster::Cluster;
use crate::error::{DistError, DistResult};

/// A statement prepared on a cluster.
#[derive(Debug, Clone)]
pub struct Prepared {
    text: String,
    /// The type DataFusion infers for each of `$1..$n` (`None` where nothing in the
    /// statement fixes it: the value is taken as the client sends it).
    pub params: Vec<Option<ArrowType>>,
    /// The columns of its result (none for a statement that returns no rows); `None` when
    /// only running it tells (a text of several statements, `EXPLAIN`).
    pub columns: Option<SchemaRef>,
}

impl Prepared {
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl Cluster {
    /// Plans the statement `sql` (with `$1..$n` placeholders) without running it.
    pub async fn prepare(&self, sql: &str) -> DistResult<Prepared> {
        let mut statements = self.parse(sql)?;
        if statements.len() != 1 {
            if !statements.is_empty() && kura_server::sql_scan::placeholder_count(sql) > 0 {
                return Err(DistError::Syntax(
                    "cannot insert multiple commands into a prepared statement".into(),
                ));
            }
            return Ok(Prepared {
                text: sql.to_string(),
                params: Vec::new(),
                columns: None,
            });
        }
        let statement = statements.pop_front().expect("one statement");
        let explain = matches!(statement, DFStatement::Explain(_));
        let plan = self.context().state().statement_to_plan(statement).await?;
        let params = positional(plan.get_parameter_types()?)?;
        let columns = match &plan {
            _ if explain => None,
            LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Statement(_) => {
                Some(Arc::new(Schema::empty()))
            }
            query => Some(described(query.schema().as_arrow())),
        };
        Ok(Prepared {
            text: sql.to_string(),
            params,
            columns,
        })
    }

    /// Runs `prepared` with `values` for its parameters; its batches have the columns
    /// [`Cluster::prepare`] described, and the flag says whether it is a query.
    pub async fn run_prepared(
        &self,
        prepared: &Prepared,
        values: Vec<ScalarValue>,
    ) -> DistResult<(Vec<RecordBatch>, bool)> {
        let (batches, query) = if prepared.params.is_empty() && values.is_empty() {
            // Without parameters the text runs as any other (routed to one shard when one
            // answers it whole).
            self.sql_outcome(&prepared.text).await?
        } else {
            match self.run_with_values(prepared, values).await {
                Ok(r) => r,
                Err(e) => return Err(self.diagnose(e).await),
            }
        };
        let batches = match &prepared.columns {
            Some(schema) if query => conform(batches, schema)?,
            _ => batches,
        };
        Ok((batches, query))
    }

    async fn run_with_values(
        &self,
        prepared: &Prepared,
        values: Vec<ScalarValue>,
    ) -> DistResult<(Vec<RecordBatch>, bool)> {
        if values.len() < prepared.params.len() {
            return Err(DistError::Protocol(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                values.len(),
                prepared.params.len()
            )));
        }
        let values: Vec<ScalarValue> = values
            .into_iter()
            .enumerate()
            .map(|(i, v)| as_expected(v, prepared.params.get(i).cloned().flatten()))
            .collect();
        let mut statements = self.parse(&prepared.text)?;
        let statement = statements
            .pop_front()
            .ok_or_else(|| DistError::Cluster("no SQL statement given".into()))?;
        let plan = self.context().state().statement_to_plan(statement).await?;
        let plan = plan.with_param_values(values)?;
        match plan {
            LogicalPlan::Ddl(_) | LogicalPlan::Dml(_) | LogicalPlan::Statement(_) => {
                self.context()
                    .execute_logical_plan(plan)
                    .await?
                    .collect()
                    .await?;
                Ok((Vec::new(), false))
            }
            query => {
                // Routing runs a statement's text, which has placeholders, not values:
                // DataFusion plans it with the values in place.
                let batches = self.execute_planned(&query).await?;
                Ok((batches, true))
            }
        }
    }
}

/// `$1..$n` in order from DataFusion's map of placeholder ids; named ones (`$name`) are
/// not PostgreSQL's and are refused.
fn positional(types: HashMap<String, Option<ArrowType>>) -> DistResult<Vec<Option<ArrowType>>> {
    let mut numbered = Vec::with_capacity(types.len());
    for (id, t) in types {
        let n: usize = id
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                DistError::Syntax(format!("parameter {id} is not of the form $1, $2, ..."))
            })?;
        numbered.push((n, t));
    }
    let count = numbered.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let mut params = vec![None; count];
    for (n, t) in numbered {
        params[n - 1] = t;
    }
    Ok(params)
}

/// The columns a client is told: a column whose type nothing fixes (`SELECT $1`) is text.
fn described(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            ArrowType::Null => Field::new(f.name(), ArrowType::Utf8, true),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// A parameter's value in the type the statement expects there, when the client sent it as
/// text or NULL; numbers stay as sent (DataFusion widens them exactly: 0.055 compared with
/// a DECIMAL(15,2) column is not rounded to 0.06 first).
fn as_expected(value: ScalarValue, expected: Option<ArrowType>) -> ScalarValue {
    let Some(expected) = expected else {
        return value;
    };
    let from_text = matches!(value.data_type(), ArrowType::Utf8 | ArrowType::Null);
    if !from_text || value.data_type() == expected {
        return value;
    }
    // A text DataFusion cannot read as the type stays text: its own coercion, or its
    // error, then says what is wrong with it.
    value.cast_to(&expected).unwrap_or(value)
}

/// `batches` with the columns of `schema` (a column whose type the values decided is cast to
/// the type the client was told).
fn conform(batches: Vec<RecordBatch>, schema: &SchemaRef) -> DistResult<Vec<RecordBatch>> {
    let arrow = |e: arrow_schema::ArrowError| DistError::DataFusion(e.into());
    // Nullable whatever the plan said: a value cast or a parameter may be NULL.
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    let out = Arc::new(Schema::new(fields));
    batches
        .into_iter()
        .map(|b| {
            if b.num_columns() != out.fields().len() {
                return Err(DistError::Cluster(format!(
                    "the statement returned {} columns where {} were described",
                    b.num_columns(),
                    out.fields().len()
                )));
            }
            let columns = b
                .columns()
                .iter()
                .zip(out.fields())
                .map(|(c, f)| match c.data_type() == f.data_type() {
                    true => Ok(c.clone()),
                    false => cast(c, f.data_type()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(arrow)?;
            RecordBatch::try_new(out.clone(), columns).map_err(arrow)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_in_order_and_named_ones_refused() {
        let types = HashMap::from([
            ("$2".to_string(), Some(ArrowType::Date32)),
            ("$1".to_string(), None),
        ]);
        assert_eq!(
            positional(types).unwrap(),
            vec![None, Some(ArrowType::Date32)]
        );
        let named = HashMap::from([("$name".to_string(), None)]);
        assert!(positional(named).is_err());
    }

    #[test]
    fn text_values_take_the_expected_type_and_numbers_stay() {
        let d = as_expected(
            ScalarValue::Utf8(Some("1994-01-01".into())),
            Some(ArrowType::Date32),
        );
        assert_eq!(d.data_type(), ArrowType::Date32);
        let exact = ScalarValue::Decimal128(Some(55), 38, 3);
        assert_eq!(
            as_expected(exact.clone(), Some(ArrowType::Decimal128(15, 2))),
            exact
        );
        let null = as_expected(ScalarValue::Null, Some(ArrowType::Int32));
        assert_eq!(null, ScalarValue::Int32(None));
    }
}
