//! Building an index over a stored table: the key columns are read one row group
//! at a time (row id = row number), handed to the bulk builder, and the tree is
//! written through the given page sink. Rebuilding this way after rows are
//! appended is how indexes stay consistent with their tables.

use super::build::IndexBuilder;
use super::sink::PageSink;
use super::BTreeIndex;
use crate::error::{StorageError, StorageResult};
use crate::table::Table;

/// Positions of `columns` in `table`'s schema (case-insensitive names).
pub fn key_columns(table: &Table, columns: &[String]) -> StorageResult<Vec<usize>> {
    if columns.is_empty() {
        return Err(StorageError::Invalid(
            "an index needs at least one key column".into(),
        ));
    }
    columns
        .iter()
        .map(|c| {
            table.schema().index_of(c).ok_or_else(|| {
                StorageError::Invalid(format!(
                    "column \"{c}\" does not exist in table \"{}\"",
                    table.name()
                ))
            })
        })
        .collect()
}

/// Positions of the included columns `include` of a covering index in `table`'s
/// schema: each must exist and be named once.
pub fn include_columns(table: &Table, include: &[String]) -> StorageResult<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(include.len());
    for c in include {
        let i = table.schema().index_of(c).ok_or_else(|| {
            StorageError::Invalid(format!(
                "included column \"{c}\" does not exist in table \"{}\"",
                table.name()
            ))
        })?;
        if out.contains(&i) {
            return Err(StorageError::Invalid(format!(
                "column \"{c}\" is included twice"
            )));
        }
        out.push(i);
    }
    Ok(out)
}

/// Builds index `name` on `columns` of `table`. `progress(rows_done, rows_total)`
/// is called after every row group and once more when the tree is written.
pub fn build_for_table(
    table: &Table,
    name: &str,
    columns: &[String],
    unique: bool,
    sink: &mut dyn PageSink,
    progress: &mut dyn FnMut(u64, u64),
) -> StorageResult<BTreeIndex> {
    build_covering_for_table(table, name, columns, &[], unique, sink, progress)
}

/// [`build_for_table`] for a covering index whose entries also store the
/// columns `include` after the key.
pub fn build_covering_for_table(
    table: &Table,
    name: &str,
    columns: &[String],
    include: &[String],
    unique: bool,
    sink: &mut dyn PageSink,
    progress: &mut dyn FnMut(u64, u64),
) -> StorageResult<BTreeIndex> {
    let cols = key_columns(table, columns)?;
    let inc = include_columns(table, include)?;
    let type_of = |c: &usize| table.schema().columns[*c].data_type;
    let names: Vec<String> = cols
        .iter()
        .map(|&c| table.schema().columns[c].name.clone())
        .collect();
    let mut builder = IndexBuilder::new(cols.iter().map(type_of).collect(), unique)?
        .with_include(inc.iter().map(type_of).collect())?
        .named(name, &names);
    let total = table.row_count();
    for group in table.row_groups() {
        let len = (group.end - group.start) as usize;
        let vectors = cols
            .iter()
            .chain(&inc)
            .map(|&c| table.read_range(c, group.start, len))
            .collect::<StorageResult<Vec<_>>>()?;
        builder.push_columns(&vectors.iter().collect::<Vec<_>>(), group.start)?;
        progress(group.end, total);
    }
    let index = builder.finish(sink)?;
    progress(total, total);
    Ok(index)
}
