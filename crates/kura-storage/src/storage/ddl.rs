//! Schema changes inside a write transaction: tables, indexes (plain, covering, unique),
//! views, truncation, and defaults and constraints.

use super::*;

impl WriteTxn {
    /// Replaces the defaults and constraints of `table` (which must exist).
    /// The indexes of its key constraints are created separately.
    pub fn set_rules(&mut self, table: &str, mut rules: TableRules) -> StorageResult<()> {
        let key = table.to_string();
        if !self.tables.contains_key(&key) {
            return Err(StorageError::NoSuchTable(key));
        }
        rules.table = key.clone();
        if rules.is_empty() {
            self.rules.remove(&key);
        } else {
            self.rules.insert(key, rules);
        }
        Ok(())
    }

    pub fn create_table(&mut self, name: &str, schema: Schema) -> StorageResult<()> {
        let key = name.to_string();
        if self.tables.contains_key(&key) {
            return Err(StorageError::TableExists(key));
        }
        // One namespace for every relation, as PostgreSQL's pg_class.
        if self.views.contains_key(&key)
            || self.indexes.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        if schema.is_empty() {
            return Err(StorageError::Invalid(format!(
                "table \"{key}\" must have at least one column"
            )));
        }
        let mut seen = BTreeSet::new();
        for c in &schema.columns {
            if !seen.insert(c.name.clone()) {
                return Err(StorageError::Invalid(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
        }
        let meta = Arc::new(TableMeta::empty(schema.len()));
        self.tables.insert(
            key,
            TxnTable {
                schema,
                meta,
                committed: None,
                view: None,
                appender: None,
            },
        );
        Ok(())
    }

    pub fn drop_table(&mut self, name: &str) -> StorageResult<()> {
        let key = name.to_string();
        if let Some((other, fk)) = referencing(&self.rules, &key)
            .into_iter()
            .find(|(other, _)| *other != key)
        {
            return Err(StorageError::DependentObjects(format!(
                "cannot drop table {key} because constraint {} on table {other} depends on it",
                fk.name
            )));
        }
        let mut t = self
            .tables
            .remove(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        self.rules.remove(&key);
        // A table's serial and identity sequences go with it.
        for seq in self.sequences.owned_by(&key) {
            self.sequences.remove(&seq);
        }
        let on_table: Vec<String> = self
            .indexes
            .iter()
            .filter(|(_, (d, _))| d.table == key)
            .map(|(n, _)| n.clone())
            .collect();
        for name in on_table {
            self.drop_index_of_dropped_table(&name)?;
        }
        self.freed.extend(all_pages(&mut self.io, &mut t)?);
        if let Some(table) = &t.committed {
            self.dropped.push(Arc::downgrade(table));
        }
        if let Some(blob) = self.blobs.remove(&key) {
            self.freed.extend(blob);
        }
        Ok(())
    }

    /// Empties a table, keeping its schema and its indexes (rebuilt from what
    /// is appended next). UPDATE and DELETE rewrite a table this way.
    pub fn truncate(&mut self, name: &str) -> StorageResult<()> {
        let key = name.to_string();
        let t = self
            .tables
            .get_mut(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        self.freed.extend(all_pages(&mut self.io, t)?);
        t.appender = None;
        if let Some(table) = t.committed.take() {
            // Readers may still scan it; its pages wait in quarantine.
            self.dropped.push(Arc::downgrade(&table));
        }
        t.meta = Arc::new(TableMeta::empty(t.schema.len()));
        self.outdate_indexes(&key)
    }

    /// Frees the trees of a table's indexes: they are rebuilt at commit (bulk
    /// loading keeps them compact).
    pub(super) fn outdate_indexes(&mut self, table: &str) -> StorageResult<()> {
        let bm = self.storage.bm.clone();
        for (def, tree) in self.indexes.values_mut() {
            if def.table == table {
                if let Some(old) = tree.take() {
                    self.freed.extend(old.pages(&bm)?);
                }
            }
        }
        Ok(())
    }

    /// Creates index `name` on `columns` of `table` (`unique`: no two rows with
    /// equal keys free of NULLs). Built now from the committed rows when the table
    /// is unchanged in this transaction, else at commit; `progress(rows_done,
    /// rows_total)` reports the build as it goes.
    pub fn create_index(
        &mut self,
        name: &str,
        table: &str,
        columns: &[String],
        unique: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> StorageResult<()> {
        self.create_covering_index(name, table, columns, &[], unique, progress)
    }

    /// [`Self::create_index`] for a covering index: its entries also store the
    /// columns `include` (`CREATE INDEX ... INCLUDE (...)`), so plans that need
    /// only key and included columns read no table page. Uniqueness is checked
    /// on the key columns alone.
    pub fn create_covering_index(
        &mut self,
        name: &str,
        table: &str,
        columns: &[String],
        include: &[String],
        unique: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> StorageResult<()> {
        let key = name.to_string();
        if self.indexes.contains_key(&key)
            || self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        let tkey = table.to_string();
        let t = self
            .tables
            .get(&tkey)
            .ok_or_else(|| StorageError::NoSuchTable(tkey.clone()))?;
        // Interval keys would order by span but compare by their three fields:
        // refused until the key encoding gives equal spans equal keys.
        for c in columns {
            if let Some(col) = t.schema.index_of(c).map(|i| &t.schema.columns[i]) {
                if col.data_type == kura_common::DataType::Interval {
                    return Err(StorageError::Unsupported(format!(
                        "an index or key on interval column \"{c}\""
                    )));
                }
            }
        }
        let def = TxnIndex {
            table: tkey,
            columns: columns.to_vec(),
            include: include.to_vec(),
            unique,
        };
        let tree = match (&t.committed, &t.appender) {
            (Some(committed), None) => Some(build_covering_for_table(
                committed,
                &key,
                columns,
                include,
                unique,
                &mut self.io,
                progress,
            )?),
            _ => {
                for c in columns {
                    if t.schema.index_of(c).is_none() {
                        return Err(StorageError::Invalid(format!(
                            "column \"{c}\" does not exist in table \"{}\"",
                            def.table
                        )));
                    }
                }
                let mut seen = Vec::new();
                for c in include {
                    let Some(i) = t.schema.index_of(c) else {
                        return Err(StorageError::Invalid(format!(
                            "included column \"{c}\" does not exist in table \"{}\"",
                            def.table
                        )));
                    };
                    if seen.contains(&i) {
                        return Err(StorageError::Invalid(format!(
                            "column \"{c}\" is included twice"
                        )));
                    }
                    seen.push(i);
                }
                None
            }
        };
        self.indexes.insert(key, (def, tree));
        Ok(())
    }

    /// Drops an index; one that backs a PRIMARY KEY or UNIQUE constraint is
    /// dropped only with its table.
    pub fn drop_index(&mut self, name: &str) -> StorageResult<()> {
        let key = name.to_string();
        if let Some(rules) = self
            .indexes
            .get(&key)
            .and_then(|(def, _)| self.rules.get(&def.table))
        {
            if rules.keys.iter().any(|k| k.name == key) {
                return Err(StorageError::DependentObjects(format!(
                    "cannot drop index {key} because constraint {key} on table {} requires it",
                    rules.table
                )));
            }
        }
        self.drop_index_of_dropped_table(&key)
    }

    pub(super) fn drop_index_of_dropped_table(&mut self, key: &str) -> StorageResult<()> {
        let key = key.to_string();
        let (_, tree) = self
            .indexes
            .remove(&key)
            .ok_or_else(|| StorageError::NoSuchIndex(key.clone()))?;
        if let Some(tree) = tree {
            self.freed.extend(tree.pages(&self.storage.bm)?);
        }
        Ok(())
    }

    pub fn create_view(
        &mut self,
        name: &str,
        sql: &str,
        columns: Vec<String>,
    ) -> StorageResult<()> {
        let key = name.to_string();
        if self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        self.views.insert(
            key.clone(),
            ViewDef {
                name: key,
                sql: sql.to_string(),
                columns,
            },
        );
        Ok(())
    }

    pub fn drop_view(&mut self, name: &str) -> StorageResult<()> {
        let key = name.to_string();
        self.views
            .remove(&key)
            .map(|_| ())
            .ok_or(StorageError::NoSuchView(key))
    }
}
