//! The interactive shell: rustyline with history saved as each statement runs, tab
//! completion, statements spanning lines until `;`, Ctrl-C cancelling the running
//! statement (twice at an idle prompt leaves), psql/sqlite meta-commands, a pager for
//! long results and a spinner for slow queries.

mod complete;
mod meta;
mod output;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};

use kura::{CancelHandle, Session};

use crate::error::{CliError, CliResult};
use crate::format::{Expanded, Format, Options};
use complete::SqlHelper;
use output::Output;

const QUERY_CANCELED: &str = "57014";

/// Rows the shell prints of one result before saying how many it left out.
const DEFAULT_MAX_ROWS: usize = 1000;
/// A query running longer than this gets a spinner with its elapsed time.
const SPINNER_AFTER: Duration = Duration::from_secs(1);

/// What the shell does after a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// The shell's state between lines.
pub struct Shell<'s> {
    session: &'s mut Session,
    pub opts: Options,
    pub timing: bool,
    out: Output,
    buffer: String,
    /// Set by the Ctrl-C handler while a statement runs.
    interrupted: Arc<AtomicBool>,
    /// True while a statement runs (Ctrl-C then cancels instead of being ignored).
    busy: Arc<AtomicBool>,
    cancel: CancelHandle,
}

pub fn run(session: &mut Session, opts: Options) -> CliResult<()> {
    let config = Config::builder()
        .max_history_size(10_000)?
        .auto_add_history(false)
        // As psql and bash: Tab completes the common prefix, a second Tab lists the
        // choices (cycling would pick WHEN for `whe` where WHERE was meant).
        .completion_type(CompletionType::List)
        .build();
    let mut rl: Editor<SqlHelper, FileHistory> = Editor::with_config(config)?;
    rl.set_helper(Some(SqlHelper::new(session.storage().clone())));
    let history = history_path();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut shell = Shell::new(session, opts);
    shell.install_ctrl_c()?;
    println!(
        "kura {} — SQL ending in ';', \\? for help, \\q or Ctrl-D to quit, Ctrl-C cancels",
        env!("CARGO_PKG_VERSION")
    );
    let mut idle_interrupts = 0;
    loop {
        let prompt = if shell.buffer.is_empty() {
            "kura> "
        } else {
            "  ... "
        };
        match rl.readline(prompt) {
            Ok(line) => {
                idle_interrupts = 0;
                let complete = shell.completes_entry(&line);
                if let Some(entry) = complete {
                    // Saved now, not at exit: a crash or kill keeps what was typed.
                    let _ = rl.add_history_entry(entry.as_str());
                    if let Some(h) = &history {
                        let _ = rl.append_history(h);
                    }
                }
                if shell.feed_line(&line) == Flow::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                if !shell.buffer.is_empty() {
                    shell.buffer.clear();
                    idle_interrupts = 0;
                    continue;
                }
                idle_interrupts += 1;
                if idle_interrupts >= 2 {
                    break;
                }
                eprintln!("(Ctrl-C again to exit, or \\q)");
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KURA_HISTORY") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kura_history"))
}

/// How the shell takes a line.
#[derive(Debug, PartialEq, Eq)]
enum LineKind {
    /// A meta-command: `\x`, `.mode`, or `exit`/`quit` typed alone at the prompt.
    Meta,
    /// `exit` or `quit` alone inside a statement: psql answers with a hint there, as
    /// the word may be meant as SQL; it is not added to the statement.
    ExitInStatement,
    Sql,
}

/// What `trimmed` is, given whether a statement is being typed. Backslash commands
/// and known dot-commands act even inside a statement (as `\q` does in psql).
fn line_kind(trimmed: &str, in_statement: bool) -> LineKind {
    let word = trimmed.trim_end_matches(';').trim().to_ascii_lowercase();
    let first = word.split_whitespace().next().unwrap_or("");
    if trimmed.starts_with('\\') || meta::DOT_COMMANDS.contains(&first) {
        return LineKind::Meta;
    }
    match (in_statement, word.as_str()) {
        (false, "exit" | "quit") => LineKind::Meta,
        (true, "exit" | "quit") => LineKind::ExitInStatement,
        // Unknown dot-commands at the prompt get meta's "unknown command" answer.
        (false, _) if trimmed.starts_with('.') => LineKind::Meta,
        _ => LineKind::Sql,
    }
}

impl<'s> Shell<'s> {
    pub fn new(session: &'s mut Session, opts: Options) -> Self {
        let cancel = session.cancel_handle();
        Shell {
            session,
            opts,
            timing: true,
            out: Output::stdout(),
            buffer: String::new(),
            interrupted: Arc::new(AtomicBool::new(false)),
            busy: Arc::new(AtomicBool::new(false)),
            cancel,
        }
    }

    /// Ctrl-C while a statement runs cancels it; at the prompt rustyline reads the
    /// key itself (the terminal is in raw mode), so the handler sees only the former.
    fn install_ctrl_c(&self) -> CliResult<()> {
        let (busy, interrupted, cancel) = (
            self.busy.clone(),
            self.interrupted.clone(),
            self.cancel.clone(),
        );
        ctrlc::set_handler(move || {
            if busy.load(Ordering::Acquire) {
                interrupted.store(true, Ordering::Release);
                cancel.cancel();
            }
        })
        .map_err(CliError::CtrlC)
    }

    /// The history entry `line` completes, if any: a meta-command on its own, or
    /// the whole statement once its `;` is typed.
    fn completes_entry(&self, line: &str) -> Option<String> {
        let trimmed = line.trim();
        match line_kind(trimmed, !self.buffer.is_empty()) {
            LineKind::Meta => return Some(trimmed.to_string()),
            LineKind::ExitInStatement => return None,
            LineKind::Sql => {}
        }
        if trimmed.ends_with(';') {
            let mut sql = self.buffer.clone();
            sql.push_str(line);
            return Some(sql.trim().to_string());
        }
        None
    }

    /// Takes one input line: a meta-command, or SQL to gather until `;`.
    pub fn feed_line(&mut self, line: &str) -> Flow {
        let trimmed = line.trim();
        match line_kind(trimmed, !self.buffer.is_empty()) {
            LineKind::Meta => {
                return match meta::run(self, trimmed) {
                    Ok(flow) => flow,
                    Err(e) => {
                        eprintln!("ERROR: {e}");
                        Flow::Continue
                    }
                }
            }
            LineKind::ExitInStatement => {
                eprintln!(
                    "(inside a statement: \\q quits, \\r or Ctrl-C clears the statement, ';' ends it)"
                );
                return Flow::Continue;
            }
            LineKind::Sql => {}
        }
        if self.buffer.is_empty() && trimmed.is_empty() {
            return Flow::Continue;
        }
        self.buffer.push_str(line);
        self.buffer.push('\n');
        if trimmed.ends_with(';') {
            let sql = std::mem::take(&mut self.buffer);
            self.run_sql(&sql);
        }
        Flow::Continue
    }

    /// Runs each statement of `sql`, printing results; stops at the first error or
    /// cancellation.
    pub fn run_sql(&mut self, sql: &str) {
        // The parsed statements may be too deep for this thread's stack to drop.
        kura::stack::on_statement_stack(|| self.run_sql_on_stack(sql))
    }

    fn run_sql_on_stack(&mut self, sql: &str) {
        let statements = match kura::session::parse(sql) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ERROR: {e}");
                return;
            }
        };
        self.interrupted.store(false, Ordering::Release);
        for stmt in &statements {
            let start = Instant::now();
            let result = self.with_spinner(|session| session.execute_statement(stmt));
            let elapsed = start.elapsed();
            let interrupted = self.interrupted.swap(false, Ordering::AcqRel);
            match result {
                Ok(r) => {
                    if let Err(e) = self.out.print(&r, &self.opts) {
                        eprintln!("ERROR: writing the result: {e}");
                    }
                }
                // 57014: query_canceled, however deep in the engine it was noticed.
                Err(e) if e.sqlstate() == QUERY_CANCELED => {
                    eprintln!("Cancelled after {:.3} s.", elapsed.as_secs_f64());
                    return;
                }
                Err(e) => {
                    eprintln!("ERROR: {e}");
                    return;
                }
            }
            if self.timing {
                eprintln!("Time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
            }
            if interrupted {
                // Ctrl-C arrived after the statement had done its work: skip the rest.
                eprintln!("Cancelled.");
                return;
            }
        }
    }

    /// Runs `f` marked busy (so Ctrl-C cancels it), with a spinner on stderr once it
    /// has taken longer than a second.
    fn with_spinner<T>(&mut self, f: impl FnOnce(&mut Session) -> T) -> T {
        self.busy.store(true, Ordering::Release);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let spinner = crate::progress::on_terminal().then(|| {
            std::thread::spawn(move || {
                // Done (the sender dropped) before the second is up: no spinner.
                if done_rx.recv_timeout(SPINNER_AFTER) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return;
                }
                let bar = crate::progress::spinner("running (Ctrl-C cancels)")
                    .with_elapsed(SPINNER_AFTER);
                let _ = done_rx.recv();
                bar.finish_and_clear();
            })
        });
        let result = f(self.session);
        drop(done_tx);
        if let Some(s) = spinner {
            let _ = s.join();
        }
        self.busy.store(false, Ordering::Release);
        result
    }

    pub fn session(&mut self) -> &mut Session {
        self.session
    }

    pub fn output(&mut self) -> &mut Output {
        &mut self.out
    }

    pub fn reset_buffer(&mut self) {
        self.buffer.clear();
    }

    pub fn set_expanded(&mut self, e: Expanded) {
        self.opts.expanded = e;
    }

    pub fn set_format(&mut self, f: Format) {
        self.opts.format = f;
    }
}

/// The shell's default printing options on top of the command line's.
pub fn shell_options(mut opts: Options) -> Options {
    opts.expanded = Expanded::Auto;
    opts.max_rows = Some(DEFAULT_MAX_ROWS);
    // Visibly not a string: 'NULL' the text prints as NULL.
    opts.table_null = "∅";
    opts
}
