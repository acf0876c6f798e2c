//! Meta-commands of the shell: psql's backslash commands (`\d`, `\dt`, `\di`, `\dv`,
//! `\x`, `\pset`, `\i`, `\o`, `\timing`, `\q`, ...) and the sqlite/DuckDB dot
//! commands as aliases (`.help`, `.tables`, `.schema`, `.mode`, `.exit`).

use std::path::PathBuf;

use kura::{Batch, DataType, QueryResult, ResultColumn, Value};
use kura_common::Vector;

use super::{Flow, Shell};
use crate::error::{CliError, CliResult};
use crate::format::{Expanded, Format};

const HELP: &str = "\
General
  \\q, \\quit, .exit, exit, quit   leave the shell (also Ctrl-D, or Ctrl-C twice at an empty prompt)
  \\?, .help                     this help
  \\r                            clear the statement being typed
  Ctrl-C                        cancel the running statement
Informational (PATTERN may use * and ?)
  \\d [PATTERN], .schema [T]     list relations, or describe the matching ones (columns, indexes, view query)
  \\dt [PATTERN], .tables        tables
  \\di [PATTERN], .indexes       indexes
  \\dv [PATTERN]                 views
  DESCRIBE T, SHOW TABLES       the same as SQL statements
Input/Output
  \\i FILE, .read FILE           run commands from FILE
  \\o [FILE], .output [FILE]     send results to FILE (or back to the terminal)
Formatting
  \\x [on|off|auto]              expanded display (one block per record); auto: when too wide
  \\pset format F, .mode F       table, csv, tsv, json, json-arrays, jsonl, markdown
  \\pset null TEXT, .nullvalue   how NULL is shown (default ∅ in tables; JSON keeps null)
  \\pset delimiter C             CSV field delimiter
  \\pset maxrows N               print at most N rows of a result (0: all)
  \\pset pager on|off            page results taller than the screen ($PAGER, default less)
  \\timing [on|off], .timer      show each statement's time";

/// The sqlite/DuckDB dot-commands kura knows (completed, and taken even inside a
/// statement, where no SQL line starts with one of them).
pub const DOT_COMMANDS: &[&str] = &[
    ".exit",
    ".help",
    ".indexes",
    ".mode",
    ".nullvalue",
    ".output",
    ".quit",
    ".read",
    ".schema",
    ".tables",
    ".timer",
];

/// Runs one meta-command line.
pub fn run(shell: &mut Shell, line: &str) -> CliResult<Flow> {
    let line = line.trim().trim_end_matches(';').trim();
    let (cmd, arg) = match line.split_once(char::is_whitespace) {
        Some((c, a)) => (c, a.trim()),
        None => (line, ""),
    };
    let arg = (!arg.is_empty()).then_some(arg);
    match cmd.to_ascii_lowercase().as_str() {
        "\\q" | "\\quit" | ".exit" | ".quit" | "exit" | "quit" => return Ok(Flow::Quit),
        "\\?" | "\\h" | "\\help" | ".help" => println!("{HELP}"),
        "\\r" | "\\reset" => shell.reset_buffer(),
        "\\timing" | ".timer" => {
            shell.timing = on_off(arg, !shell.timing)?;
            println!("Timing is {}.", if shell.timing { "on" } else { "off" });
        }
        "\\x" => {
            let e = match arg.map(str::to_ascii_lowercase).as_deref() {
                None if shell.opts.expanded == Expanded::On => Expanded::Off,
                None => Expanded::On,
                Some("auto") => Expanded::Auto,
                Some(other) => {
                    if on_off(Some(other), false)? {
                        Expanded::On
                    } else {
                        Expanded::Off
                    }
                }
            };
            shell.set_expanded(e);
            println!(
                "Expanded display is {}.",
                match e {
                    Expanded::On => "on",
                    Expanded::Off => "off",
                    Expanded::Auto => "used automatically",
                }
            );
        }
        "\\pset" => pset(shell, arg)?,
        ".mode" => pset(shell, Some(&format!("format {}", arg.unwrap_or(""))))?,
        ".nullvalue" => pset(shell, Some(&format!("null {}", arg.unwrap_or(""))))?,
        "\\i" | "\\include" | ".read" => {
            let path = arg.ok_or_else(|| CliError::Usage("usage: \\i FILE".into()))?;
            let text = std::fs::read_to_string(path).map_err(CliError::io_in(path))?;
            for l in text.lines() {
                if shell.feed_line(l) == Flow::Quit {
                    return Ok(Flow::Quit);
                }
            }
            shell.reset_buffer();
        }
        "\\o" | "\\out" | ".output" => {
            let path = arg.map(PathBuf::from);
            shell
                .output()
                .redirect(path.clone())
                .map_err(|e| CliError::IoIn {
                    context: path.unwrap_or_default().display().to_string(),
                    source: e,
                })?;
            eprintln!("Results go to {}.", shell.output().target());
        }
        "\\d" | ".schema" => match arg {
            None if cmd == "\\d" => list(shell, &["table", "view", "index"], None)?,
            _ => describe(shell, arg.unwrap_or("*"))?,
        },
        "\\dt" | ".tables" => list(shell, &["table"], arg)?,
        "\\di" | ".indexes" => list(shell, &["index"], arg)?,
        "\\dv" => list(shell, &["view"], arg)?,
        other => {
            return Err(CliError::Usage(format!(
                "unknown command {other} (\\? for help)"
            )))
        }
    }
    Ok(Flow::Continue)
}

fn on_off(arg: Option<&str>, toggled: bool) -> CliResult<bool> {
    match arg.map(str::to_ascii_lowercase).as_deref() {
        None => Ok(toggled),
        Some("on" | "true" | "1") => Ok(true),
        Some("off" | "false" | "0") => Ok(false),
        Some(other) => Err(CliError::Usage(format!(
            "expected on or off, got '{other}'"
        ))),
    }
}

/// `\pset NAME VALUE` (and `\pset` alone: the current settings).
fn pset(shell: &mut Shell, arg: Option<&str>) -> CliResult<()> {
    let Some(arg) = arg else {
        let o = &shell.opts;
        println!("format    {}", o.format.name());
        println!("null      '{}'", o.null_text());
        println!("delimiter '{}'", o.delimiter as char);
        println!("maxrows   {}", o.max_rows.unwrap_or(0));
        println!(
            "pager     {}",
            if shell.output().pager { "on" } else { "off" }
        );
        return Ok(());
    };
    let (name, value) = match arg.split_once(char::is_whitespace) {
        Some((n, v)) => (n, v.trim()),
        None => (arg, ""),
    };
    let value = value.trim_matches('\'');
    match name {
        "format" => {
            let f = Format::parse(value).ok_or_else(|| {
                CliError::Usage(format!(
                    "unknown format '{value}': table, csv, tsv, json, json-arrays, jsonl, markdown"
                ))
            })?;
            shell.set_format(f);
            println!("Output format is {}.", f.name());
        }
        "null" => {
            shell.opts.null = Some(value.to_string());
            println!("Null display is \"{value}\".");
        }
        "delimiter" | "fieldsep" => {
            let d = match value {
                "\\t" | "tab" => b'\t',
                v if v.len() == 1 => v.as_bytes()[0],
                _ => {
                    return Err(CliError::Usage(format!(
                        "the delimiter must be one character, got '{value}'"
                    )))
                }
            };
            shell.opts.delimiter = d;
            println!("Field separator is '{}'.", d as char);
        }
        "maxrows" => {
            let n: usize = value
                .parse()
                .map_err(|_| CliError::Usage(format!("maxrows takes a number, got '{value}'")))?;
            shell.opts.max_rows = (n > 0).then_some(n);
            println!(
                "Showing at most {} rows.",
                if n == 0 { "all".into() } else { n.to_string() }
            );
        }
        "pager" => {
            let on = on_off((!value.is_empty()).then_some(value), !shell.output().pager)?;
            shell.output().pager = on;
            println!("Pager usage is {}.", if on { "on" } else { "off" });
        }
        "expanded" => run(shell, &format!("\\x {value}")).map(|_| ())?,
        other => return Err(CliError::Usage(format!("unknown \\pset option '{other}'"))),
    }
    Ok(())
}

/// Whether `name` matches a psql-style pattern (`*` any run, `?` one character;
/// case-insensitive, since unquoted names are stored in lower case).
pub fn matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let n: Vec<char> = name.to_lowercase().chars().collect();
    go(&p, &n)
}

/// Prints `rows` as a result in the shell's format (so `\o` and `\pset` apply).
fn show(shell: &mut Shell, names: &[&str], rows: Vec<Vec<String>>) -> CliResult<()> {
    let text = DataType::Varchar(None);
    let columns = names
        .iter()
        .map(|n| ResultColumn {
            name: n.to_string(),
            data_type: text,
        })
        .collect();
    let vectors = (0..names.len())
        .map(|i| {
            let values: Vec<Value> = rows.iter().map(|r| Value::Text(r[i].clone())).collect();
            Vector::from_values(text, &values).expect("text vector")
        })
        .collect();
    let r = QueryResult::rows_of(columns, vec![Batch::new(vectors)]);
    let opts = shell.opts.clone();
    Ok(shell.output().print(&r, &opts)?)
}

/// One line of a meta-command's own text, where results go (`\o`).
fn say(shell: &mut Shell, line: &str) -> CliResult<()> {
    Ok(shell.output().write_text(&format!("{line}\n"))?)
}

/// `\dt`, `\di`, `\dv`, `\d`: the relations of the given kinds matching `pattern`.
fn list(shell: &mut Shell, kinds: &[&str], pattern: Option<&str>) -> CliResult<()> {
    let catalog = shell.session().storage().catalog();
    let pattern = pattern.unwrap_or("*");
    let mut rows = Vec::new();
    if kinds.contains(&"table") {
        // The session's temporary tables first: they hide tables of their names.
        if let Some(temp) = shell.session().temp_catalog() {
            for name in temp.table_names() {
                if matches(pattern, &name) {
                    let n = temp.table(&name).map_or(0, |t| t.row_count());
                    rows.push(vec![
                        name,
                        "temporary table".into(),
                        n.to_string(),
                        String::new(),
                    ]);
                }
            }
        }
        for name in catalog.table_names() {
            if matches(pattern, &name) {
                let n = catalog.table(&name).map_or(0, |t| t.row_count());
                rows.push(vec![name, "table".into(), n.to_string(), String::new()]);
            }
        }
    }
    if kinds.contains(&"view") {
        for name in catalog.view_names() {
            if matches(pattern, &name) {
                rows.push(vec![name, "view".into(), String::new(), String::new()]);
            }
        }
    }
    if kinds.contains(&"index") {
        for name in catalog.index_names() {
            if let Some(ix) = catalog.index(&name).filter(|_| matches(pattern, &name)) {
                let what = format!(
                    "{}{} ({}){}",
                    if ix.unique { "unique on " } else { "on " },
                    ix.table,
                    ix.columns.join(", "),
                    include_clause(&ix.include)
                );
                rows.push(vec![name, "index".into(), String::new(), what]);
            }
        }
    }
    if rows.is_empty() {
        eprintln!("Did not find any relation named \"{pattern}\".");
        return Ok(());
    }
    show(shell, &["name", "type", "rows", "details"], rows)
}

/// `\d PATTERN`: columns and indexes of each matching table, columns and query of
/// each matching view.
fn describe(shell: &mut Shell, pattern: &str) -> CliResult<()> {
    let catalog = shell.session().storage().catalog();
    let mut found = false;
    // The session's temporary tables first, then the database's.
    let catalogs: Vec<_> = shell
        .session()
        .temp_catalog()
        .into_iter()
        .chain(std::iter::once(catalog.clone()))
        .collect();
    for (catalog, name) in catalogs
        .iter()
        .flat_map(|c| c.table_names().into_iter().map(move |n| (c, n)))
    {
        if !matches(pattern, &name) {
            continue;
        }
        found = true;
        let Some(table) = catalog.table(&name) else {
            continue;
        };
        let n = table.row_count();
        let rows = format!("{n} row{}", if n == 1 { "" } else { "s" });
        say(shell, &format!("Table \"{name}\" ({rows})"))?;
        let rows = table
            .schema()
            .columns
            .iter()
            .map(|c| {
                let null = if c.nullable { "" } else { "not null" };
                vec![c.name.clone(), c.data_type.to_string(), null.to_string()]
            })
            .collect();
        show(shell, &["column", "type", "nullable"], rows)?;
        let indexes = catalog.indexes_on(&name);
        if !indexes.is_empty() {
            say(shell, "Indexes:")?;
            for ix in indexes {
                let unique = if ix.unique { " UNIQUE" } else { "" };
                let line = format!(
                    "    \"{}\"{unique} btree ({}){}",
                    ix.name,
                    ix.columns.join(", "),
                    include_clause(&ix.include)
                );
                say(shell, &line)?;
            }
        }
    }
    for name in catalog.view_names() {
        if !matches(pattern, &name) {
            continue;
        }
        found = true;
        say(shell, &format!("View \"{name}\""))?;
        let described = shell.session().execute(&format!("DESCRIBE \"{name}\""))?;
        let rows = described
            .rows()
            .into_iter()
            .map(|r| vec![r[0].to_string(), r[1].to_string()])
            .collect();
        show(shell, &["column", "type"], rows)?;
        if let Some(v) = catalog.view(&name) {
            say(shell, &format!("View definition:\n    {}", v.sql.trim()))?;
        }
    }
    if !found {
        return Err(CliError::Failed(format!(
            "Did not find any relation named \"{pattern}\"."
        )));
    }
    Ok(())
}

/// ` INCLUDE (a, b)` for a covering index's included columns, as psql shows them.
fn include_clause(include: &[String]) -> String {
    if include.is_empty() {
        String::new()
    } else {
        format!(" INCLUDE ({})", include.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_like_psql() {
        assert!(matches("line*", "lineitem"));
        assert!(matches("*item", "lineitem"));
        assert!(matches("l?neitem", "LINEITEM"));
        assert!(matches("*", "x"));
        assert!(!matches("line", "lineitem"));
        assert!(!matches("?", ""));
    }
}
