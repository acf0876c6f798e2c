//! COPY in a session: FROM STDIN and files, TO STDOUT and files, with the server's file-
//! access rules.

use super::*;
use crate::copy_arrow::{ArrowFileOutput, ArrowFormat};

impl Session {
    /// Runs one `COPY t [(columns)] FROM STDIN` statement, reading its data
    /// from `input` (a client's; see `kura serve`).
    pub fn copy_in(
        &mut self,
        sql: &str,
        input: &mut dyn crate::copy::CopyInput,
    ) -> KuraResult<QueryResult> {
        self.run_copy(sql, false, |s, stmt| match stmt {
            Statement::Copy {
                source,
                options,
                legacy_options,
                ..
            } => crate::copy::copy_from_input(
                &s.query_context(),
                source,
                options,
                legacy_options,
                input,
            ),
            _ => unreachable!("run_copy passes COPY statements only"),
        })
    }

    /// Checks a `COPY ... FROM STDIN` statement without running it (its
    /// table, columns and options); any other statement passes.
    pub fn check_copy(&mut self, sql: &str) -> KuraResult<()> {
        match parse(sql)?.as_slice() {
            [Statement::Copy {
                source,
                options,
                legacy_options,
                to: false,
                ..
            }] => {
                crate::copy::check_copy_from(&self.query_context(), source, options, legacy_options)
            }
            _ => Ok(()),
        }
    }

    /// `COPY t [(columns)] FROM 'file'`: a Parquet or JSON file as `copy_from_arrow_file`,
    /// any other through the text loader.
    pub(super) fn copy_from(
        &mut self,
        source: &sqlparser::ast::CopySource,
        target: &sqlparser::ast::CopyTarget,
        options: &[sqlparser::ast::CopyOption],
        legacy_options: &[sqlparser::ast::CopyLegacyOption],
    ) -> KuraResult<QueryResult> {
        if let sqlparser::ast::CopyTarget::File { filename } = target {
            let opts = crate::copy::Options::parse(options, legacy_options)?;
            if let Some(format) = opts.arrow_file(filename)? {
                return self.copy_from_arrow_file(source, filename, format);
            }
        }
        crate::copy::copy_from(
            &self.query_context(),
            source,
            target,
            options,
            legacy_options,
            &self.file_access,
            self.progress.as_deref(),
        )
    }

    /// `COPY t [(columns)] FROM 'f.parquet' | 'f.json'`: the rows of `read_parquet` /
    /// `read_json` inserted as `INSERT INTO t [(columns)] SELECT * FROM read_…('f')` would
    /// (defaults, constraints and the transaction as for any insert; an identity column
    /// `GENERATED ALWAYS` takes the file's values, as in PostgreSQL), tagged `COPY n`.
    fn copy_from_arrow_file(
        &mut self,
        source: &sqlparser::ast::CopySource,
        filename: &str,
        format: ArrowFormat,
    ) -> KuraResult<QueryResult> {
        let sqlparser::ast::CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(KuraError::Unsupported("COPY (query) FROM".into()));
        };
        let reader = match format {
            ArrowFormat::Parquet => "read_parquet",
            ArrowFormat::Json => "read_json",
        };
        let listed = if columns.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            format!(" ({})", names.join(", "))
        };
        let sql = format!(
            "INSERT INTO {table_name}{listed} SELECT * FROM {reader}('{}')",
            filename.replace('\'', "''")
        );
        let insert = parse(&sql)?;
        let [stmt] = insert.as_slice() else {
            return Err(KuraError::Internal(format!("COPY FROM as {sql}")));
        };
        let mut ctx = self.query_context();
        ctx.copying = true;
        let done = crate::query::run_statement(&ctx, stmt)?;
        let rows = done.tag.rsplit(' ').next().unwrap_or("0").to_string();
        Ok(QueryResult::command(format!("COPY {rows}")))
    }

    /// Runs one `COPY t [(columns)] | (query) TO STDOUT` statement, its lines
    /// going to `output` as the query runs.
    pub fn copy_out(
        &mut self,
        sql: &str,
        output: &mut dyn crate::copy_out::CopyOutput,
    ) -> KuraResult<QueryResult> {
        self.run_copy(sql, true, |s, stmt| s.copy_to(stmt, output))
    }

    /// One COPY statement of the direction `to`, run as `execute_statement`
    /// runs statements (transaction state, time limit, contained panics).
    pub(super) fn run_copy(
        &mut self,
        sql: &str,
        to: bool,
        f: impl FnOnce(&Self, &Statement) -> KuraResult<QueryResult>,
    ) -> KuraResult<QueryResult> {
        on_statement_stack(|| {
            let statements = parse(sql);
            crate::txn::after_statement(&mut self.lock_txn(), &statements);
            let stmt = match statements?.as_slice() {
                [stmt @ Statement::Copy { to: t, .. }] if *t == to => stmt.clone(),
                _ => {
                    return Err(KuraError::Invalid(format!(
                        "expected one COPY ... {} statement",
                        if to { "TO" } else { "FROM" }
                    )))
                }
            };
            self.check_transaction(&stmt)?;
            self.cancel.start(self.settings.statement_timeout());
            let r = guard(|| f(self, &stmt));
            self.finish(r)
        })
    }

    /// `COPY ... TO`: the source query's rows as lines into `output`.
    pub(super) fn copy_to(
        &self,
        stmt: &Statement,
        output: &mut dyn crate::copy_out::CopyOutput,
    ) -> KuraResult<QueryResult> {
        let Statement::Copy {
            source,
            options,
            legacy_options,
            ..
        } = stmt
        else {
            return Err(KuraError::Internal("copy_to without COPY".into()));
        };
        let query = crate::copy_out::source_query(source)?;
        let format = crate::copy_out::OutFormat::new(options, legacy_options)?;
        let mut lines = crate::copy_out::Lines::new(format, output);
        crate::query::run_streaming(&self.query_context(), &query, None, &mut lines)?;
        let rows = lines.finish()?;
        Ok(QueryResult::command(format!("COPY {rows}")))
    }

    /// `COPY ... TO 'file'`: Parquet or JSON when `FORMAT parquet | json` says so or, without
    /// a format, the name ends in `.parquet` / `.json`, `.jsonl`, `.ndjson`; text or CSV
    /// otherwise.
    pub(super) fn copy_to_file(&self, stmt: &Statement, name: &str) -> KuraResult<QueryResult> {
        if let Statement::Copy {
            source,
            options,
            legacy_options,
            ..
        } = stmt
        {
            let opts = crate::copy::Options::parse(options, legacy_options)?;
            if let Some(format) = opts.arrow_file(name)? {
                let query = crate::copy_out::source_query(source)?;
                let mut out = ArrowFileOutput::create(&self.file_access, name, format)?;
                let ran =
                    crate::query::run_streaming(&self.query_context(), &query, None, &mut out);
                let rows = out.finish(ran.map(|_| ()))?;
                return Ok(QueryResult::command(format!("COPY {rows}")));
            }
        }
        let mut file = crate::copy_out::FileOutput::create(&self.file_access, name)?;
        let r = self.copy_to(stmt, &mut file)?;
        file.finish(name)?;
        Ok(r)
    }
}
