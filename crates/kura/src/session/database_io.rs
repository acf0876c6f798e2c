//! `EXPORT DATABASE` and `IMPORT DATABASE` in a session: the export reads every table
//! from one snapshot, the import runs `schema.sql` and `load.sql` as one transaction —
//! all of it lands, or none (see `crate::export` for what the files hold).

use std::path::Path;

use super::*;

impl Session {
    /// `EXPORT DATABASE 'dir' [(FORMAT ...)]`: the data files first, then `schema.sql` and
    /// `load.sql`, so a directory with both is a whole export.
    pub(super) fn export_database(
        &mut self,
        dir: &str,
        options: &[sqlparser::ast::CopyOption],
        legacy: &[sqlparser::ast::CopyLegacyOption],
    ) -> KuraResult<QueryResult> {
        if self.file_access != crate::file_access::FileAccess::Any {
            return Err(KuraError::PermissionDenied(format!(
                "EXPORT DATABASE writes files on the server, which its clients may not \
                 (export with the embedded database or the shell: kura --db FILE -c \
                 \"EXPORT DATABASE '{dir}'\")"
            )));
        }
        let options = crate::export::ExportOptions::parse(options, legacy)?;
        self.in_own_transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", |s| {
            s.export_in_snapshot(dir, options)
        })
    }

    fn export_in_snapshot(
        &mut self,
        dir: &str,
        options: crate::export::ExportOptions,
    ) -> KuraResult<QueryResult> {
        let plan = crate::export::plan(&self.catalog(), &self.storage, dir, options)?;
        let io = |path: &Path, op: &'static str, source: std::io::Error| {
            KuraError::Storage(kura_storage::StorageError::Io {
                path: path.to_path_buf(),
                op,
                source,
            })
        };
        let root = Path::new(dir);
        std::fs::create_dir_all(root).map_err(|e| io(root, "create directory", e))?;
        let total = plan.copies.len() as u64;
        for (i, copy) in plan.copies.iter().enumerate() {
            if let Some(p) = &self.progress {
                p(&format!("export {}", copy.table), i as u64, total);
            }
            for stmt in parse(&copy.copy_to)? {
                self.check_transaction(&stmt)?;
                self.dispatch(&stmt)?;
            }
        }
        for (name, text) in [
            ("schema.sql", plan.script.schema.clone()),
            ("load.sql", plan.load_sql()),
        ] {
            let path = root.join(name);
            std::fs::write(&path, text).map_err(|e| io(&path, "write", e))?;
        }
        if let Some(p) = &self.progress {
            p("export", total, total);
        }
        Ok(QueryResult::command("EXPORT DATABASE"))
    }

    /// `IMPORT DATABASE 'dir'`: `schema.sql` then `load.sql` of an export (kura's or
    /// DuckDB's), in one transaction.
    pub(super) fn import_database(&mut self, dir: &str) -> KuraResult<QueryResult> {
        let root = self.file_access.resolve(dir)?;
        let read = |name: &str| -> KuraResult<String> {
            let path = root.join(name);
            std::fs::read_to_string(&path).map_err(|e| {
                KuraError::Invalid(format!(
                    "IMPORT DATABASE: cannot read {} ({e}); an exported database's \
                     directory holds schema.sql and load.sql",
                    path.display()
                ))
            })
        };
        let schema = read("schema.sql")?;
        let load = read("load.sql")?;
        let mut statements = Vec::new();
        let mut indexes = Vec::new();
        for (file, text) in [("schema.sql", &schema), ("load.sql", &load)] {
            for (n, sql) in crate::export::load::statements(text)?
                .into_iter()
                .enumerate()
            {
                match file {
                    "load.sql" => statements.push((
                        file,
                        n + 1,
                        crate::export::load::import_statement(&sql, &root),
                    )),
                    _ if crate::export::load::deferred(&sql) => {
                        indexes.push((file, n + 1, Ok(sql)))
                    }
                    _ => statements.push((file, n + 1, Ok(sql))),
                }
            }
        }
        statements.extend(indexes);
        let total = statements.len() as u64;
        self.in_own_transaction("BEGIN", |s| {
            for (i, (file, n, sql)) in statements.iter().enumerate() {
                if let Some(p) = &s.progress {
                    p("import", i as u64, total);
                }
                let ran = sql.as_ref().map_err(clone_error).and_then(|sql| {
                    for stmt in parse(sql)? {
                        s.check_transaction(&stmt)?;
                        s.dispatch(&stmt)?;
                    }
                    Ok(())
                });
                ran.map_err(|e| KuraError::State {
                    sqlstate: e.sqlstate(),
                    message: format!(
                        "IMPORT DATABASE {dir}: {file}, statement {n}: {e} (nothing was imported)"
                    ),
                })?;
            }
            if let Some(p) = &s.progress {
                p("import", total, total);
            }
            Ok(QueryResult::command("IMPORT DATABASE"))
        })
    }

    /// Runs `f` in the open transaction, or in one begun with `begin` and ended when
    /// `f` is (committed when it succeeds, rolled back when it fails).
    fn in_own_transaction<T>(
        &mut self,
        begin: &str,
        f: impl FnOnce(&mut Self) -> KuraResult<T>,
    ) -> KuraResult<T> {
        if self.in_transaction() {
            return f(self);
        }
        let one = |sql: &str| -> KuraResult<Statement> {
            parse(sql)?
                .pop()
                .ok_or_else(|| KuraError::Internal(format!("{sql} did not parse")))
        };
        self.transaction_control(&one(begin)?)?;
        let r = f(self);
        let end = self.transaction_control(&one(if r.is_ok() { "COMMIT" } else { "ROLLBACK" })?);
        let value = r?;
        match end?.tag.as_str() {
            "COMMIT" => Ok(value),
            tag => Err(KuraError::Internal(format!(
                "the transaction ended in {tag}"
            ))),
        }
    }
}

/// An error kept for the statement it belongs to, reported when that statement's turn
/// comes (its text could not be read as kura's).
fn clone_error(e: &KuraError) -> KuraError {
    KuraError::State {
        sqlstate: e.sqlstate(),
        message: e.to_string(),
    }
}
