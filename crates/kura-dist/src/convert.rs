//! kura batches as Arrow batches of types DataFusion chose: a partial aggregation's states
//! (a sum of DECIMAL(15,2) is DataFusion's `Decimal128(25, 2)`, a count of an average
//! `UInt64`) are kura's values cast, never rounded.

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType as ArrowType, SchemaRef};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use kura::Batch;
use kura_common::DataType;

use crate::error::{DistError, DistResult};

/// `batch` (columns of `types`) as a `RecordBatch` of `schema`: each column converted to
/// kura's own Arrow type, then cast when `schema` has another. A cast that could change a
/// value (fewer decimal places, a value out of range) is an error, not a rounding — but
/// with `may_round` (a routed query's result) decimals round to the output's scale.
pub fn batch_to_arrow_cast(
    batch: Batch,
    types: &[DataType],
    schema: &SchemaRef,
    may_round: bool,
) -> DistResult<RecordBatch> {
    if batch.columns.len() != schema.fields().len() || types.len() != schema.fields().len() {
        return Err(DistError::Cluster(format!(
            "a shard's partial aggregation gave {} columns for {} expected",
            batch.columns.len(),
            schema.fields().len()
        )));
    }
    let batch = batch.compact();
    let rows = batch.num_rows;
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let columns = batch
        .columns
        .into_iter()
        .zip(types)
        .zip(schema.fields())
        .map(|((v, &t), field)| {
            let native = kura_exec::arrow::arrow_type(t);
            let array = kura_exec::arrow::vector_to_arrow(v, &native, field.name())?;
            if &native == field.data_type() {
                return Ok(array);
            }
            if let (ArrowType::Decimal128(_, from), ArrowType::Decimal128(_, to)) =
                (&native, field.data_type())
            {
                if from > to && !may_round {
                    return Err(DistError::Cluster(format!(
                        "{}: kura computed {native} where DataFusion expects {}; casting would round",
                        field.name(),
                        field.data_type()
                    )));
                }
            }
            let cast: ArrayRef = cast_with_options(&array, field.data_type(), &strict)
                .map_err(|e| DistError::Cluster(format!("{}: {e}", field.name())))?;
            Ok(cast)
        })
        .collect::<DistResult<Vec<_>>>()?;
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| DistError::Cluster(format!("building a partial aggregation's batch: {e}")))
}
