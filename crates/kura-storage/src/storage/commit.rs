//! Committing a write transaction: the catalog as the transaction sees it, tables
//! materialized, indexes rebuilt, pages written and freed, and the writer handed on; a
//! transaction dropped without commit discards its pages.

use super::*;

/// Every page of a table's data, including those its appender wrote in this
/// transaction (an appender starts from the table's metadata and only adds
/// pages, so its final metadata names them all).
pub(super) fn all_pages(io: &mut PageIo, t: &mut TxnTable) -> StorageResult<Vec<PageId>> {
    let meta = match t.appender.take() {
        Some(a) => a.finish(io)?,
        None => (*t.meta).clone(),
    };
    Ok(meta.pages().collect())
}

impl Drop for WriteTxn {
    /// Ends the transaction (committed or not) and lets the next writer in.
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        if !self.committed {
            self.storage.sequences.forget(&self.sequences.created);
            // The pages written are referenced by nothing now, and the next
            // writer will reuse their ids: cached copies must not be read back.
            for page in state.header.page_count..self.io.next_page() {
                self.storage.bm.invalidate(page);
            }
            for &page in &self.io.reused {
                self.storage.bm.invalidate(page);
            }
        }
        *self.storage.lock_writer() = Some(state);
        self.storage.writer_free.notify_one();
    }
}

impl WriteTxn {
    /// Writes what the transaction's next statement must read of what it
    /// changed so far, without committing it, and returns the catalog as this
    /// transaction sees it. Cheap enough to run after every statement: rows
    /// appended to a table stay in its open row group (its last pages are
    /// written provisionally, see [`TableAppender::view`]), table metadata is
    /// written only at a commit or savepoint, and of the indexes of changed
    /// tables only the unique ones are rebuilt now — they check their keys
    /// here (23505); the others are rebuilt at the commit (or the next
    /// savepoint) and until then listed but not read, marked stale.
    pub fn snapshot(&mut self) -> StorageResult<Arc<Catalog>> {
        for (name, t) in self.tables.iter_mut() {
            if t.committed.is_some() && t.appender.is_none() {
                t.view = None;
                continue;
            }
            let meta = match t.appender.as_mut() {
                Some(a) => a.view(&mut self.io)?,
                None => t.meta.clone(),
            };
            let stale = t
                .view
                .as_ref()
                .is_none_or(|v| !Arc::ptr_eq(v.meta(), &meta));
            if stale {
                t.view = Some(Arc::new(Table::new(
                    name.clone(),
                    t.schema.clone(),
                    meta,
                    0,
                    self.storage.bm.clone(),
                )));
            }
        }
        // Table pages must be on disk before index builds read them back.
        self.io.flush()?;
        for (name, (def, tree)) in self.indexes.iter_mut() {
            if tree.is_some() || !def.unique {
                continue;
            }
            let table = self
                .tables
                .get(&def.table)
                .and_then(|t| t.current())
                .ok_or_else(|| StorageError::NoSuchTable(def.table.clone()))?;
            *tree = Some(rebuild(&table, name, def, &mut self.io)?);
        }
        self.io.flush()?;
        Ok(Arc::new(self.catalog_now(
            self.base.generation,
            self.base.blob_pages.clone(),
            Vec::new(),
        )))
    }

    /// Brings every table and index up to date on disk (not yet committed):
    /// after it, each table has a `committed` handle and each index a tree.
    pub(super) fn materialize(&mut self) -> StorageResult<()> {
        for (name, t) in self.tables.iter_mut() {
            t.view = None;
            if let Some(a) = t.appender.take() {
                t.meta = Arc::new(a.finish(&mut self.io)?);
                t.committed = None;
            }
            if t.committed.is_some() {
                continue;
            }
            if let Some(old) = self.blobs.remove(name) {
                self.freed.extend(old);
            }
            let bytes = t
                .meta
                .to_bytes()
                .map_err(|e| StorageError::Invalid(format!("encoding table metadata: {e}")))?;
            let (root, pages) = write_blob(&mut self.io, &bytes, false)?;
            t.committed = Some(Arc::new(Table::new(
                name.clone(),
                t.schema.clone(),
                t.meta.clone(),
                root,
                self.storage.bm.clone(),
            )));
            self.blobs.insert(name.clone(), pages);
        }
        // Table pages must be on disk before index builds read them back.
        self.io.flush()?;
        for (name, (def, tree)) in self.indexes.iter_mut() {
            if tree.is_some() {
                continue;
            }
            let table = self
                .tables
                .get(&def.table)
                .and_then(|t| t.committed.clone())
                .ok_or_else(|| StorageError::NoSuchTable(def.table.clone()))?;
            *tree = Some(rebuild(&table, name, def, &mut self.io)?);
        }
        self.io.flush()
    }

    /// The catalog of the materialized state.
    pub(super) fn catalog_now(
        &self,
        generation: u64,
        blob_pages: Vec<PageId>,
        free_pages: Vec<PageId>,
    ) -> Catalog {
        Catalog {
            generation,
            tables: self
                .tables
                .iter()
                .map(|(n, t)| (n.clone(), t.current().expect("materialized")))
                .collect(),
            views: self.views.clone(),
            indexes: self.index_entries(),
            rules: self.rules.clone(),
            sequences: self.sequences.entries.clone(),
            sequence_pages: self.sequences.pages,
            next_sequence_id: self.sequences.next_id,
            table_blobs: self.blobs.clone(),
            blob_pages,
            free_pages,
        }
    }

    pub(super) fn index_entries(&self) -> BTreeMap<String, IndexEntry> {
        self.indexes
            .iter()
            .map(|(name, (def, tree))| {
                (
                    name.clone(),
                    IndexEntry {
                        name: name.clone(),
                        table: def.table.clone(),
                        columns: def.columns.clone(),
                        unique: def.unique,
                        // Only a snapshot leaves trees unbuilt (never a unique one).
                        tree: tree
                            .clone()
                            .unwrap_or_else(|| BTreeIndex::stale(def.unique)),
                        include: def.include.clone(),
                        stale: tree.is_none(),
                    },
                )
            })
            .collect()
    }

    /// Makes every change durable and visible, atomically.
    pub fn commit(mut self) -> StorageResult<()> {
        self.materialize()?;
        let storage = self.storage.clone();
        self.freed.extend(self.base.blob_pages.iter().copied());
        let mut file_data = CatalogFile {
            tables: self
                .tables
                .iter()
                .map(|(name, t)| TableEntry {
                    name: name.clone(),
                    schema: t.schema.clone(),
                    meta_root: t.committed.as_ref().expect("materialized").meta_root(),
                })
                .collect(),
            views: self.views.values().cloned().collect(),
            free_pages: self.free_list(),
            indexes: self.index_entries().into_values().collect(),
            covering: Vec::new(),
            rules: self.rules.values().cloned().collect(),
            sequences: Vec::new(),
            sequence_pages: Vec::new(),
            next_sequence_id: self.sequences.next_id,
        };
        file_data.covering = CatalogFile::covering_of(&file_data.indexes);
        // Each sequence as a crash would restart it now; its current value
        // lives on the sequence pages.
        for e in self.sequences.entries.values_mut() {
            if let Some(state) = storage.sequences.catalog_state(e.def.id) {
                e.state = state;
            }
        }
        file_data.sequences = self.sequences.entries.values().cloned().collect();
        if self.sequences.pages.is_none() && !self.sequences.entries.is_empty() {
            let pages = [self.io.alloc(), self.io.alloc()];
            self.write_first_sequence_pages(pages)?;
            self.sequences.pages = Some(pages);
        }
        file_data.sequence_pages = self.sequences.pages.map_or(Vec::new(), |p| p.to_vec());
        // The catalog's own pages are taken first (from free pages when there are
        // some), then the free list is recomputed without them: dropping entries
        // only shrinks the encoding, so the pages taken always suffice.
        let encode = |d: &CatalogFile| {
            postcard::to_stdvec(d)
                .map_err(|e| StorageError::Invalid(format!("encoding catalog: {e}")))
        };
        let pages_needed = crate::blob::pages_for(self.io.page_size(), encode(&file_data)?.len());
        let blob_pages: Vec<PageId> = (0..pages_needed).map(|_| self.io.alloc()).collect();
        file_data.free_pages = self.free_list();
        let bytes = encode(&file_data)?;
        let root = write_blob_into(&mut self.io, &bytes, &blob_pages)?;
        self.io.flush()?;
        storage.file.sync()?;
        let previous = self.state.as_ref().expect("an open transaction").header;
        // Committing writes the current format: this commit may hold pages
        // (long values) an older build could not read.
        let header = Header {
            version: crate::file::FORMAT_VERSION,
            generation: previous.generation + 1,
            catalog_root: root,
            page_count: self.io.next_page(),
            ..previous
        };
        storage.file.write_header(&header)?;
        self.committed = true;
        // Before the new catalog is visible, so that no value of a new
        // sequence is drawn without being made durable first.
        let (created, gone) = self.sequences.outcome();
        storage
            .sequences
            .committed(&created, &gone, self.sequences.pages);
        storage
            .committed_pages
            .store(header.page_count, Ordering::Release);
        let catalog = self.catalog_now(header.generation, blob_pages, file_data.free_pages);
        let old = std::mem::replace(
            &mut *storage.current.write().unwrap_or_else(|p| p.into_inner()),
            Arc::new(catalog),
        );
        let quarantine = Quarantine {
            pages: std::mem::take(&mut self.freed),
            snapshot: Arc::downgrade(&old),
            tables: std::mem::take(&mut self.dropped),
        };
        let state = self.state.as_mut().expect("an open transaction");
        state.header = header;
        state.quarantine.push(quarantine);
        storage.refresh_objects();
        storage.refresh_resident();
        Ok(())
    }

    /// Writes both sequence pages for the first time, with the states the
    /// catalog records (generations 0 and 1), so that one of them is always
    /// valid.
    pub(super) fn write_first_sequence_pages(&mut self, pages: [PageId; 2]) -> StorageResult<()> {
        self.io.flush()?;
        let records: Vec<(u64, SeqState)> = self
            .sequences
            .entries
            .values()
            .map(|e| (e.def.id, e.state))
            .collect();
        let mut buf = crate::file::aligned::AlignedBuf::new(self.io.page_size());
        for (generation, page) in pages.into_iter().enumerate() {
            crate::sequence::encode_page(&mut buf, page, generation as u64, &records)?;
            self.storage.file.write_pages(page, &buf)?;
        }
        Ok(())
    }

    /// The free list as of now: the committed one minus the free pages this
    /// transaction reused, plus the pages it freed.
    pub(super) fn free_list(&self) -> Vec<PageId> {
        let reused: BTreeSet<PageId> = self.io.reused.iter().copied().collect();
        let mut free: BTreeSet<PageId> = self
            .base
            .free_pages
            .iter()
            .copied()
            .filter(|p| !reused.contains(p))
            .collect();
        free.extend(self.freed.iter().copied());
        free.into_iter().collect()
    }
}

/// Rebuilds index `name` (`def`) from `table`'s rows. A failure is of rows
/// this transaction added, not of the index's creation.
fn rebuild(
    table: &Table,
    name: &str,
    def: &TxnIndex,
    io: &mut PageIo,
) -> StorageResult<BTreeIndex> {
    key_columns(table, &def.columns)?;
    include_columns(table, &def.include)?;
    let built = build_covering_for_table(
        table,
        name,
        &def.columns,
        &def.include,
        def.unique,
        io,
        &mut |_, _| {},
    );
    built.map_err(|e| match e {
        StorageError::UniqueViolation {
            index,
            columns,
            values,
            ..
        } => StorageError::UniqueViolation {
            index,
            columns,
            values,
            creating: false,
        },
        e => e,
    })
}
