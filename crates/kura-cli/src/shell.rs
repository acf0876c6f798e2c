//! The interactive shell: rustyline with history, statements spanning lines until
//! `;`, and a few backslash commands (`\q`, `\dt`, `\d table`, `\timing`).

use std::time::Instant;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use kura::Session;

use crate::format::{print, Format};

pub fn run(session: &mut Session, format: Format) -> Result<(), String> {
    let mut rl = DefaultEditor::new().map_err(|e| e.to_string())?;
    let history =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".kura_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    println!(
        "kura {} — type SQL ending in ';', \\? for help, \\q to quit",
        env!("CARGO_PKG_VERSION")
    );
    let mut buffer = String::new();
    let mut timing = true;
    loop {
        let prompt = if buffer.is_empty() {
            "kura> "
        } else {
            "  ... "
        };
        match rl.readline(prompt) {
            Ok(line) => {
                let trimmed = line.trim();
                if buffer.is_empty() && trimmed.starts_with('\\') {
                    let _ = rl.add_history_entry(trimmed);
                    match meta(session, trimmed, format, &mut timing) {
                        Ok(true) => break,
                        Ok(false) => {}
                        Err(e) => eprintln!("ERROR: {e}"),
                    }
                    continue;
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if !trimmed.ends_with(';') {
                    continue;
                }
                let sql = std::mem::take(&mut buffer);
                let _ = rl.add_history_entry(sql.trim());
                run_sql(session, &sql, format, timing);
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}

fn run_sql(session: &mut Session, sql: &str, format: Format, timing: bool) {
    let start = Instant::now();
    match session.execute_all(sql) {
        Ok(results) => {
            let mut out = std::io::stdout().lock();
            for r in &results {
                let _ = print(&mut out, r, format);
            }
            if timing {
                println!("Time: {:.3} ms", start.elapsed().as_secs_f64() * 1e3);
            }
        }
        Err(e) => eprintln!("ERROR: {e}"),
    }
}

/// Runs a backslash command; `Ok(true)` means quit.
fn meta(
    session: &mut Session,
    cmd: &str,
    format: Format,
    timing: &mut bool,
) -> Result<bool, String> {
    let mut parts = cmd.split_whitespace();
    match parts.next().unwrap_or("") {
        "\\q" | "\\quit" => return Ok(true),
        "\\?" | "\\h" => println!(
            "\\dt            list tables\n\\d TABLE       describe a table\n\\timing        toggle timing\n\\q             quit"
        ),
        "\\timing" => {
            *timing = !*timing;
            println!("Timing is {}.", if *timing { "on" } else { "off" });
        }
        "\\dt" => {
            let catalog = session.storage().catalog();
            for name in catalog.table_names() {
                let rows = catalog.table(&name).map_or(0, |t| t.row_count());
                println!("{name:<24} {rows:>12} rows");
            }
            for name in catalog.view_names() {
                println!("{name:<24} (view)");
            }
        }
        "\\d" => {
            let name = parts.next().ok_or("usage: \\d TABLE")?;
            let catalog = session.storage().catalog();
            let table = catalog.table(name).ok_or_else(|| format!("table \"{name}\" does not exist"))?;
            for c in &table.schema().columns {
                let null = if c.nullable { "" } else { " NOT NULL" };
                println!("{:<24} {}{null}", c.name, c.data_type);
            }
            let _ = format;
        }
        other => return Err(format!("unknown command {other} (\\? for help)")),
    }
    Ok(false)
}
