//! Optional page-access tracing: the page ids the buffer manager is asked for and
//! the ids it reads from disk, one per line — the input format of `kura cachesim`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::error::{StorageError, StorageResult};

/// Which stream to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    /// Every fix (the reference stream a cache above the buffer would see).
    Requests,
    /// Every page read from disk (what a cache below the buffer sees).
    Reads,
}

#[derive(Default)]
pub(super) struct Tracer {
    on: AtomicBool,
    requests: Mutex<Option<BufWriter<File>>>,
    reads: Mutex<Option<BufWriter<File>>>,
}

impl Tracer {
    pub fn start(&self, kind: TraceKind, path: &Path) -> StorageResult<()> {
        let mut f = BufWriter::new(
            File::create(path).map_err(|e| StorageError::io(path, "create trace", e))?,
        );
        let _ = writeln!(f, "# kura page trace ({kind:?}): one page id per line");
        let slot = match kind {
            TraceKind::Requests => &self.requests,
            TraceKind::Reads => &self.reads,
        };
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
        self.on.store(true, Ordering::Release);
        Ok(())
    }

    pub fn stop(&self) -> StorageResult<()> {
        self.on.store(false, Ordering::Release);
        for slot in [&self.requests, &self.reads] {
            if let Some(mut f) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                f.flush()
                    .map_err(|e| StorageError::io(Path::new("trace"), "flush trace", e))?;
            }
        }
        Ok(())
    }

    fn record(&self, slot: &Mutex<Option<BufWriter<File>>>, page: u64) {
        if self.on.load(Ordering::Relaxed) {
            if let Some(f) = slot.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                let _ = writeln!(f, "{page}");
            }
        }
    }

    #[inline]
    pub fn request(&self, page: u64) {
        // Checked here, inline: the fix path pays one load when tracing is off.
        if self.on.load(Ordering::Relaxed) {
            self.record(&self.requests, page)
        }
    }

    pub fn read(&self, page: u64) {
        self.record(&self.reads, page)
    }
}
