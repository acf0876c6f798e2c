//! `kura load TABLE FILE`: appends a file's rows to a table, or — when the table does not
//! exist and the file says its columns (`.parquet`, or `.csv`/`.tsv` through the sniffer) —
//! creates the table from them and says the types it chose.

use std::path::Path;

use crate::{DataType, KuraError, KuraResult, Session};

/// What the command line says of the file.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub delimiter: Option<u8>,
    /// `--header`: the first line is a header (otherwise COPY reads none and, for a new
    /// table, the sniffer decides).
    pub header: bool,
    /// `--csv`: CSV quoting rules.
    pub csv: bool,
    /// COPY's NULL text.
    pub null: Option<String>,
}

/// What a load did.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub rows: u64,
    /// The columns and types of the table it created, if it created one.
    pub created: Option<Vec<(String, DataType)>>,
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Loads `path` into `table` (see the module doc).
pub fn load_file(
    session: &mut Session,
    table: &str,
    path: &Path,
    opts: &LoadOptions,
) -> KuraResult<LoadReport> {
    let name = path.display().to_string();
    let lower = name.to_ascii_lowercase();
    let parquet = lower.ends_with(".parquet");
    let sniffable = lower.ends_with(".csv") || lower.ends_with(".tsv");
    let key = table.to_ascii_lowercase();
    let exists = session.catalog().table(&key).is_some()
        || session
            .temp_catalog()
            .is_some_and(|t| t.table(&key).is_some());
    let file = quoted(&name);
    let sql = if parquet {
        if opts.delimiter.is_some() || opts.header || opts.csv || opts.null.is_some() {
            return Err(KuraError::Invalid(format!(
                "{name}: a Parquet file takes no --delimiter, --header, --csv or --null"
            )));
        }
        if exists {
            format!("INSERT INTO {table} SELECT * FROM read_parquet({file})")
        } else {
            format!("CREATE TABLE {table} AS SELECT * FROM read_parquet({file})")
        }
    } else if exists {
        let mut with = vec![];
        if let Some(d) = opts.delimiter {
            with.push(format!("DELIMITER {}", quoted(&(d as char).to_string())));
        }
        if opts.header {
            with.push("HEADER true".into());
        }
        if opts.csv {
            with.push("FORMAT csv".into());
        }
        if let Some(n) = &opts.null {
            with.push(format!("NULL {}", quoted(n)));
        }
        let with = if with.is_empty() {
            String::new()
        } else {
            format!(" ({})", with.join(", "))
        };
        format!("COPY {table} FROM {file}{with}")
    } else if sniffable {
        if opts.null.is_some() {
            return Err(KuraError::Invalid(format!(
                "table \"{table}\" does not exist: --null applies to an existing table \
                 (a new table's NULLs are empty fields)"
            )));
        }
        let mut args = vec![file];
        if opts.header {
            args.push("header => true".into());
        }
        if let Some(d) = opts.delimiter {
            args.push(format!("delim => {}", quoted(&(d as char).to_string())));
        }
        format!(
            "CREATE TABLE {table} AS SELECT * FROM read_csv({})",
            args.join(", ")
        )
    } else {
        return Err(KuraError::Invalid(format!(
            "table \"{table}\" does not exist; create it first, or load a .csv, .tsv or \
             .parquet file, whose columns kura reads from the file"
        )));
    };
    let r = session.execute(&sql)?;
    let rows = r
        .tag
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let created = if exists {
        None
    } else {
        let described = session.execute(&format!("SELECT * FROM {table} LIMIT 0"))?;
        Some(
            described
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.data_type))
                .collect(),
        )
    };
    Ok(LoadReport { rows, created })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, OpenOptions, Value};

    #[test]
    fn a_new_table_takes_the_files_columns_and_an_old_one_is_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("t.db"), OpenOptions::default()).unwrap();
        let mut s = db.session();
        let csv = dir.path().join("people.csv");
        std::fs::write(&csv, "id,name,born\n1,ann,1990-01-02\n2,bo,\n").unwrap();
        let r = load_file(&mut s, "people", &csv, &LoadOptions::default()).unwrap();
        assert_eq!(r.rows, 2);
        let types: Vec<String> = r
            .created
            .unwrap()
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        assert_eq!(types, ["id BIGINT", "name VARCHAR", "born DATE"]);
        // Appended to with COPY's rules now that it exists.
        let more = dir.path().join("more.csv");
        std::fs::write(&more, "3,cy,2001-03-04\n").unwrap();
        let opts = LoadOptions {
            csv: true,
            ..Default::default()
        };
        let r = load_file(&mut s, "people", &more, &opts).unwrap();
        assert!(r.created.is_none());
        assert_eq!(r.rows, 1);
        let pq = dir.path().join("people.parquet");
        s.execute(&format!("COPY people TO '{}'", pq.display()))
            .unwrap();
        let r = load_file(&mut s, "people2", &pq, &LoadOptions::default()).unwrap();
        assert_eq!(r.rows, 3);
        let r = load_file(&mut s, "people2", &pq, &LoadOptions::default()).unwrap();
        assert!(r.created.is_none());
        let n = s.execute("SELECT count(*) FROM people2").unwrap();
        assert_eq!(n.rows()[0][0], Value::BigInt(6));
        let tbl = dir.path().join("x.tbl");
        std::fs::write(&tbl, "1|a|\n").unwrap();
        let e = load_file(&mut s, "nope", &tbl, &LoadOptions::default()).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }
}
