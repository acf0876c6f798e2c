//! Where the shell's results go: the terminal (through `$PAGER` when a result is
//! taller than the screen), or a file chosen with `\o`.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use kura::QueryResult;

use crate::format::{print, Options};

/// The pager when `$PAGER` is unset: quit if one screen, keep colours, chop long lines.
const DEFAULT_PAGER: &str = "less -FRSX";

pub struct Output {
    file: Option<(PathBuf, File)>,
    /// `\pset pager on|off`; the pager is used only on a terminal regardless.
    pub pager: bool,
}

impl Output {
    pub fn stdout() -> Self {
        Output {
            file: None,
            pager: true,
        }
    }

    /// `\o FILE` sends results to `FILE`; `\o` alone back to the terminal.
    pub fn redirect(&mut self, path: Option<PathBuf>) -> io::Result<()> {
        self.file = match path {
            Some(p) => {
                let f = File::create(&p)?;
                Some((p, f))
            }
            None => None,
        };
        Ok(())
    }

    pub fn target(&self) -> String {
        match &self.file {
            Some((p, _)) => p.display().to_string(),
            None => "standard output".into(),
        }
    }

    /// Writes `text` where results go (the `\o` file or the terminal), so a `\d`
    /// heading lands beside the table it heads.
    pub fn write_text(&mut self, text: &str) -> io::Result<()> {
        match &mut self.file {
            Some((_, f)) => f.write_all(text.as_bytes()),
            None => {
                let mut lock = io::stdout().lock();
                lock.write_all(text.as_bytes())?;
                lock.flush()
            }
        }
    }

    /// Prints one result, through the pager when it does not fit the screen.
    pub fn print(&mut self, r: &QueryResult, opts: &Options) -> io::Result<()> {
        if let Some((_, f)) = &mut self.file {
            return print(f, r, opts);
        }
        let stdout = io::stdout();
        let on_terminal = stdout.is_terminal();
        let size = on_terminal.then(|| console::Term::stdout().size());
        let mut opts = opts.clone();
        opts.width = size.map(|(_, cols)| cols as usize);
        let mut text = Vec::new();
        print(&mut text, r, &opts)?;
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        if let Some((rows, _)) = size {
            if self.pager && lines + 2 > rows as usize {
                let pager = std::env::var("PAGER")
                    .ok()
                    .filter(|p| !p.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_PAGER.to_string());
                match page(&pager, &text) {
                    Ok(()) => return Ok(()),
                    Err(e) => eprintln!("(pager '{pager}' failed: {e}; printing directly)"),
                }
            }
        }
        let mut lock = stdout.lock();
        lock.write_all(&text)?;
        lock.flush()
    }
}

/// Pipes `text` through `pager` (a shell command line) and waits for it to quit.
fn page(pager: &str, text: &[u8]) -> io::Result<()> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(pager)
        .stdin(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // The reader may quit before reading everything (q in less): not an error.
        match stdin.write_all(text) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => return Err(e),
            _ => {}
        }
    }
    let status = child.wait()?;
    // 126/127: the shell could not run the pager (not installed): print directly.
    if matches!(status.code(), Some(126 | 127)) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the pager could not be run",
        ));
    }
    Ok(())
}
