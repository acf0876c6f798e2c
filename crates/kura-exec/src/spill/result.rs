//! An operator's result written to a temporary file as it is made, and read
//! back as a source a block a morsel: a spilled aggregation's groups then need
//! not fit in memory beside the operators that read them.

use kura_common::{Batch, DataType};

use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::expr::compact_batch;
use crate::pipeline::{Emit, Source};
use crate::spill::SpillFile;

/// Result rows on disk, in the order they were added.
pub struct ResultFile {
    file: Option<SpillFile>,
    /// The columns' types, from the first rows added.
    types: Vec<DataType>,
    rows: usize,
    /// The plan node charged with the bytes written (EXPLAIN ANALYZE).
    node: usize,
}

impl ResultFile {
    pub fn new(node: usize) -> ResultFile {
        ResultFile {
            file: None,
            types: Vec::new(),
            rows: 0,
            node,
        }
    }

    /// Appends `batch`'s rows (the file is made at the first rows).
    pub fn add(&mut self, batch: Batch, ctx: &ExecContext) -> ExecResult<()> {
        let batch = compact_batch(batch);
        if batch.num_rows == 0 {
            return Ok(());
        }
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                self.types = batch.columns.iter().map(|c| c.data_type).collect();
                ctx.record(self.node, |s| s.spill_files += 1);
                self.file.insert(SpillFile::create(&ctx.spill)?)
            }
        };
        let bytes = file.write(&batch.columns, batch.num_rows)?;
        ctx.record(self.node, |s| s.spilled_bytes += bytes);
        self.rows += batch.num_rows;
        Ok(())
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Every row, read back into memory (for callers that want batches).
    pub fn read_all(&self) -> ExecResult<Vec<Batch>> {
        (0..self.morsels()).map(|i| self.block(i)).collect()
    }

    fn block(&self, i: usize) -> ExecResult<Batch> {
        let Some(file) = &self.file else {
            return Ok(Batch::with_rows(0));
        };
        let (columns, rows) = file.read_block(i, &self.types)?;
        Ok(if columns.is_empty() {
            Batch::with_rows(rows)
        } else {
            Batch::new(columns)
        })
    }
}

impl Source for ResultFile {
    fn morsels(&self) -> usize {
        self.file.as_ref().map_or(0, |f| f.blocks() as usize)
    }

    fn produce(&self, morsel: usize, ctx: &ExecContext, emit: &mut Emit) -> ExecResult<()> {
        ctx.check_cancel()?;
        emit(self.block(morsel)?)?;
        Ok(())
    }
}
