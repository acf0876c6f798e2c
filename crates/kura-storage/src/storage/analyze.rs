//! `ANALYZE` inside a write transaction: reads a table's pages of integer,
//! date, timestamp and decimal columns that carry no order marks and marks
//! those whose values ascend, or strictly increase (format 9) — what a table
//! written by an older build lacks, and what ordered aggregation and unique
//! keys rely on.

use super::*;
use crate::table::writer::{orderable, page_order};

impl WriteTxn {
    /// Marks the sorted pages of table `name` (see the module documentation);
    /// returns how many pages it read. A table this transaction appended to
    /// is refused: its rows are not all on final pages yet.
    pub fn analyze(&mut self, name: &str) -> StorageResult<u64> {
        let key = name.to_string();
        let t = self
            .tables
            .get_mut(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        if t.appender.is_some() {
            return Err(StorageError::Invalid(format!(
                "ANALYZE of table \"{name}\" after rows were added to it in the same transaction: commit them first"
            )));
        }
        let table = t.current().ok_or_else(|| {
            StorageError::Invalid(format!("table \"{name}\" has no readable state"))
        })?;
        let mut meta = (*t.meta).clone();
        let mut read = 0u64;
        for (c, col) in meta.columns.iter_mut().enumerate() {
            if !orderable(t.schema.columns[c].data_type) {
                continue;
            }
            for z in col.zones.iter_mut() {
                // A page marked sorted was written by a build that also
                // judged it strictly so; one with NULLs is neither.
                if z.sorted || z.null_count > 0 {
                    continue;
                }
                let values = table.read_range(c, z.first_row, z.row_count as usize)?;
                read += 1;
                (z.sorted, z.strict) = page_order(&values);
            }
        }
        if read > 0 {
            t.meta = Arc::new(meta);
            // Written again at the commit; the next statement reads the new marks.
            t.committed = None;
            t.view = None;
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ColumnDef, Schema};
    use kura_common::{Batch, DataType, Value, Vector};

    fn column(name: &str, data_type: DataType) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            data_type,
            nullable: false,
        }
    }

    fn ints(v: impl Iterator<Item = i64>) -> Vector {
        let values: Vec<Value> = v.map(Value::BigInt).collect();
        Vector::from_values(DataType::BigInt, &values).unwrap()
    }

    #[test]
    fn a_table_without_marks_gets_them_from_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.kura");
        let rows = 100_000i64;
        {
            let storage = Storage::open(&path, StorageOptions::default()).unwrap();
            let mut txn = storage.begin().unwrap();
            let schema = Schema::new(vec![
                column("id", DataType::BigInt),
                column("run", DataType::BigInt),
                column("down", DataType::BigInt),
            ]);
            txn.create_table("t", schema).unwrap();
            let batch = Batch::new(vec![
                ints(0..rows),
                ints((0..rows).map(|i| i / 5)),
                ints((0..rows).map(|i| rows - i)),
            ]);
            txn.append("t", &batch).unwrap();
            txn.commit().unwrap();
            // As an older build wrote it: no page marked.
            let mut txn = storage.begin().unwrap();
            let t = txn.tables.get_mut("t").unwrap();
            let mut meta = (*t.meta).clone();
            for c in &mut meta.columns {
                for z in &mut c.zones {
                    (z.sorted, z.strict) = (false, false);
                }
            }
            t.meta = Arc::new(meta);
            t.committed = None;
            txn.commit().unwrap();
        }
        let storage = Storage::open(&path, StorageOptions::default()).unwrap();
        let table = storage.catalog().table("t").unwrap();
        assert!(!table.ascending(0) && !table.unique(0));
        let pages: u64 = (0..3).map(|c| table.zones(c).len() as u64).sum();
        drop(table);
        let mut txn = storage.begin().unwrap();
        assert_eq!(txn.analyze("t").unwrap(), pages, "every page read once");
        txn.commit().unwrap();
        drop(storage);
        let storage = Storage::open(&path, StorageOptions::default()).unwrap();
        let table = storage.catalog().table("t").unwrap();
        assert!(table.ascending(0) && table.unique(0));
        assert!(table.ascending(1) && !table.unique(1));
        assert!(!table.ascending(2));
        drop(table);
        // Marked pages are not read again; unsorted ones are.
        let mut txn = storage.begin().unwrap();
        let down_pages = storage.catalog().table("t").unwrap().zones(2).len() as u64;
        assert_eq!(txn.analyze("t").unwrap(), down_pages);
        drop(txn);
    }
}
