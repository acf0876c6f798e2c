//! The storage engine as one object: the database file, its buffer manager and
//! the committed catalog, plus write transactions that commit atomically by
//! shadow paging — new pages first, fsync, then the header switch, fsync.
//! One write transaction at a time; it may span many statements, each of which
//! sees the ones before it ([`WriteTxn::snapshot`]), and rolls back by being dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, Weak};
use std::time::{Duration, Instant};

use kura_common::Batch;

use crate::blob::{read_blob, write_blob, write_blob_into};
use crate::buffer::BufferManager;
use crate::catalog::{normalize, Catalog, CatalogFile, IndexEntry, Schema, TableEntry, ViewDef};
use crate::error::{StorageError, StorageResult};
use crate::file::{DbFile, Header, PageId, DEFAULT_PAGE_SIZE};
use crate::index::{
    build_covering_for_table,
    from_table::{include_columns, key_columns},
    BTreeIndex,
};
use crate::rules::{ForeignKey, TableRules};
use crate::sequence::{SeqState, SequenceEntry, SequenceValues, TxnSequences};
use crate::table::meta::TableMeta;
use crate::table::writer::TableAppender;
use crate::table::Table;
use crate::txn_io::PageIo;

mod savepoint;
mod sequences;

pub use savepoint::TxnSavepoint;

/// How to open a database.
#[derive(Debug, Clone)]
pub struct StorageOptions {
    /// Page size for a new database (an existing one keeps its own).
    pub page_size: usize,
    /// Buffer pool size in bytes.
    pub buffer_bytes: u64,
    /// O_DIRECT I/O (default) or buffered I/O through the OS page cache.
    pub direct_io: bool,
    /// Replacement policy name (kura-cache).
    pub buffer_policy: String,
    /// When the newest header slot is damaged, open the older commit instead
    /// of refusing (the newest commit is given up, with a warning).
    pub recover_header: bool,
    /// A second buffer tier below the pool (compressed pages in DRAM); `None`
    /// (the default) = none.
    pub tier2: Option<crate::buffer::TierConfig>,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            page_size: DEFAULT_PAGE_SIZE,
            buffer_bytes: default_buffer_bytes(),
            direct_io: true,
            buffer_policy: "clock".to_string(),
            recover_header: false,
            tier2: None,
        }
    }
}

/// A quarter of physical memory, at least 64 MiB: room for the working set while
/// leaving memory for hash tables and sorts.
pub fn default_buffer_bytes() -> u64 {
    physical_memory()
        .map(|m| (m / 4).max(64 << 20))
        .unwrap_or(1 << 30)
}

/// Bytes of physical memory, when the OS tells.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

struct WriterState {
    header: Header,
    /// Pages freed by commits, held back while a reader might still read them.
    quarantine: Vec<Quarantine>,
}

/// Pages one commit freed, and who could still read them: the catalog snapshot
/// the commit replaced and every table handle it dropped. The pages become
/// reusable once all of those are gone — a scan holding only a `Table` keeps
/// its pages safe from a concurrent DROP followed by a load.
struct Quarantine {
    pages: Vec<PageId>,
    snapshot: Weak<Catalog>,
    tables: Vec<Weak<Table>>,
}

impl Quarantine {
    fn still_read(&self) -> bool {
        self.snapshot.strong_count() > 0 || self.tables.iter().any(|t| t.strong_count() > 0)
    }
}

/// An open database.
pub struct Storage {
    /// This storage itself, for the transactions it hands out.
    me: Weak<Storage>,
    file: Arc<DbFile>,
    bm: Arc<BufferManager>,
    current: RwLock<Arc<Catalog>>,
    /// The writer's state: `None` while a write transaction holds it.
    writer: Mutex<Option<WriterState>>,
    /// Signalled when a write transaction ends.
    writer_free: Condvar,
    /// Committed extent of the file in pages.
    committed_pages: AtomicU64,
    /// Warnings from opening (about the header slots).
    open_warnings: Vec<String>,
    /// The indexes held resident in the pool (`SET resident_indexes`).
    resident: Mutex<crate::resident::ResidentSpec>,
    /// The values of the sequences (outside transactions).
    sequences: SequenceValues,
}

impl Storage {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path, opts: StorageOptions) -> StorageResult<Arc<Storage>> {
        let (file, opened) =
            DbFile::open_with(path, opts.page_size, opts.direct_io, opts.recover_header)?;
        let header = opened.header;
        let file = Arc::new(file);
        let frames = (opts.buffer_bytes / file.page_size() as u64).max(8) as usize;
        let bm = BufferManager::new(file.clone(), frames, &opts.buffer_policy)?;
        if opts.tier2.is_some() {
            bm.set_tier(opts.tier2.clone())?;
        }
        let catalog = load_catalog(&file, &bm, &header)?;
        // A recovered state is made the committed one only now that its catalog
        // has loaded; a recovery that fails leaves the file as it was.
        if let Some(repair) = opened.repair {
            file.write_header(&repair)?;
        }
        let mut warnings = opened.warnings;
        let entries: Vec<SequenceEntry> = catalog.sequences.values().cloned().collect();
        let sequences = SequenceValues::open(
            file.clone(),
            &entries,
            catalog.sequence_pages,
            &mut warnings,
        );
        for w in &warnings {
            tracing::warn!("{}: {w}", path.display());
        }
        let storage = Arc::new_cyclic(|me| Storage {
            me: me.clone(),
            file,
            bm,
            current: RwLock::new(Arc::new(catalog)),
            writer: Mutex::new(Some(WriterState {
                header,
                quarantine: Vec::new(),
            })),
            writer_free: Condvar::new(),
            committed_pages: AtomicU64::new(header.page_count),
            open_warnings: warnings,
            resident: Mutex::new(Default::default()),
            sequences,
        });
        storage.refresh_objects();
        Ok(storage)
    }

    /// Tells the buffer pool which table column or index each page belongs to
    /// (the access-density policy ranks objects). A map that cannot be built
    /// (a damaged index node) only costs the policy its objects: a warning.
    fn refresh_objects(&self) {
        match crate::resident::object_map(&self.file, &self.catalog()) {
            Ok(map) => self.bm.set_objects(Arc::new(map)),
            Err(e) => tracing::warn!("buffer objects not mapped: {e}"),
        }
    }

    /// The pages of a named memory object, for warming it into the CPU cache
    /// (paper 000): `index:NAME` is every interior and leaf node of the index
    /// (not the rows it points to), `column:TABLE.COLUMN` the column's data and
    /// overflow pages.
    pub fn object_pages(&self, object: &str) -> StorageResult<Vec<PageId>> {
        let catalog = self.catalog();
        let bad = || {
            StorageError::Invalid(format!(
                "\"{object}\" names no object: use index:NAME or column:TABLE.COLUMN"
            ))
        };
        let (kind, name) = object.split_once(':').ok_or_else(bad)?;
        let name = name.trim();
        match kind.trim().to_ascii_lowercase().as_str() {
            "index" => {
                let entry = catalog
                    .index(name)
                    .ok_or_else(|| StorageError::NoSuchIndex(name.to_string()))?;
                let (interior, leaves) = crate::resident::index_pages(&self.file, &entry.tree)?;
                Ok(interior.into_iter().chain(leaves).collect())
            }
            "column" => {
                let (table_name, column) = name.split_once('.').ok_or_else(bad)?;
                let table = catalog
                    .table(table_name)
                    .ok_or_else(|| StorageError::NoSuchTable(table_name.to_string()))?;
                let at = table
                    .schema()
                    .columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(column))
                    .ok_or_else(|| {
                        StorageError::Invalid(format!(
                            "column \"{column}\" of table \"{table_name}\" does not exist"
                        ))
                    })?;
                let meta = &table.meta().columns[at];
                Ok(meta
                    .zones
                    .iter()
                    .map(|z| z.page)
                    .chain(meta.overflow.iter().copied())
                    .collect())
            }
            _ => Err(bad()),
        }
    }

    /// Holds the pages of the named indexes in the buffer pool (`all`, `none`,
    /// or `idx1,idx2`, `interior:` before any of them for interior nodes only;
    /// see [`crate::resident::parse_resident`]), interior nodes first, replacing the previous resident set; returns the pages held. A set
    /// too large for the pool is refused before anything changes. Applies to the
    /// indexes committed now; a dropped index's pages leave with it.
    pub fn set_resident_indexes(&self, spec: &str) -> StorageResult<usize> {
        let catalog = self.catalog();
        let spec = crate::resident::parse_resident(spec, &catalog)?;
        let pages = crate::resident::resident_pages(&self.file, &catalog, &spec)?;
        let frames = self.bm.capacity();
        let reserve = crate::buffer::frames_reserved_for_queries(frames);
        if pages.len() > frames - reserve {
            return Err(StorageError::ResidentTooLarge {
                pages: pages.len() as u64,
                frames,
                reserve,
            });
        }
        self.bm.release_resident();
        let mut held = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        *held = Default::default();
        let n = self.bm.make_resident(&pages)?;
        *held = spec;
        Ok(n)
    }

    /// After a commit: a dropped resident index leaves the resident set (its
    /// frames are released; the other indexes stay held).
    fn refresh_resident(&self) {
        let catalog = self.catalog();
        let mut held = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if held.indexes.iter().all(|n| catalog.index(n).is_some()) {
            return;
        }
        held.indexes.retain(|n| catalog.index(n).is_some());
        self.bm.release_resident();
        let pinned = crate::resident::resident_pages(&self.file, &catalog, &held)
            .and_then(|pages| self.bm.make_resident(&pages));
        if let Err(e) = pinned {
            tracing::warn!("resident indexes released: {e}");
            *held = Default::default();
            self.bm.release_resident();
        }
    }

    /// Checks that the committed state accounts for every page of the file
    /// exactly once: each page after the header belongs to one table column,
    /// table metadata blob, index or the catalog's blob, or is on the free
    /// list. A page counted twice would be overwritten while in use; one not
    /// counted is leaked for good. Returns what is wrong, one line a page.
    pub fn check_pages(&self) -> StorageResult<Vec<String>> {
        let catalog = self.catalog();
        let mut owner: BTreeMap<PageId, String> = BTreeMap::new();
        let mut problems = Vec::new();
        let mut claim = |page: PageId, what: String| {
            if page == 0 || page >= self.page_count() {
                problems.push(format!("page {page} of {what} is outside the file"));
            } else if let Some(first) = owner.insert(page, what.clone()) {
                problems.push(format!("page {page} belongs to {first} and to {what}"));
            }
        };
        for (name, table) in &catalog.tables {
            for page in table.meta().pages() {
                claim(page, format!("table {name}"));
            }
        }
        for (name, blob) in &catalog.table_blobs {
            for &page in blob {
                claim(page, format!("the metadata of table {name}"));
            }
        }
        for (name, index) in &catalog.indexes {
            for page in index.tree.pages(&self.bm)? {
                claim(page, format!("index {name}"));
            }
        }
        for &page in &catalog.blob_pages {
            claim(page, "the catalog".to_string());
        }
        for &page in &catalog.free_pages {
            claim(page, "the free list".to_string());
        }
        for page in 1..self.page_count() {
            if !owner.contains_key(&page) {
                problems.push(format!("page {page} is neither used nor free"));
            }
        }
        Ok(problems)
    }

    /// What opening found worth a warning: a damaged spare header slot, an
    /// interrupted commit, or a header recovery that gave up a commit.
    pub fn open_warnings(&self) -> &[String] {
        &self.open_warnings
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn page_size(&self) -> usize {
        self.file.page_size()
    }

    /// The last committed catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn buffer(&self) -> &Arc<BufferManager> {
        &self.bm
    }

    /// Committed extent of the file in pages.
    pub fn page_count(&self) -> u64 {
        self.committed_pages.load(Ordering::Acquire)
    }

    /// The next `n` values of sequence `id` (named `name` in errors). Never
    /// rolled back; durable before they are returned.
    pub fn next_sequence_values(&self, id: u64, name: &str, n: usize) -> StorageResult<Vec<i64>> {
        self.sequences.next_values(id, name, n)
    }

    /// `setval`: sequence `id` continues after `value` (at `value` when
    /// `called` is false). Never rolled back.
    pub fn set_sequence(&self, id: u64, name: &str, value: i64, called: bool) -> StorageResult<()> {
        self.sequences.set(id, name, value, called)
    }

    /// Where sequence `id` stands now.
    pub fn sequence_state(&self, id: u64) -> Option<SeqState> {
        self.sequences.state(id)
    }

    fn lock_writer(&self) -> MutexGuard<'_, Option<WriterState>> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the (single) write transaction; waits while another one is open.
    pub fn begin(&self) -> StorageResult<WriteTxn> {
        loop {
            if let Some(txn) = self.try_begin(Duration::from_secs(3600))? {
                return Ok(txn);
            }
        }
    }

    /// Starts the write transaction if it becomes free within `wait`; `None`
    /// when another transaction still holds it then (the caller decides
    /// whether to wait longer, give up or report).
    pub fn try_begin(&self, wait: Duration) -> StorageResult<Option<WriteTxn>> {
        let deadline = Instant::now() + wait;
        let mut slot = self.lock_writer();
        let state = loop {
            if let Some(state) = slot.take() {
                break state;
            }
            let left = match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => return Ok(None),
            };
            slot = self
                .writer_free
                .wait_timeout(slot, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        };
        drop(slot);
        Ok(Some(self.start(state)))
    }

    fn start(&self, mut w: WriterState) -> WriteTxn {
        let storage = self
            .me
            .upgrade()
            .expect("a live storage hands out transactions");
        let base = self.catalog();
        w.quarantine.retain(Quarantine::still_read);
        let blocked: BTreeSet<PageId> = w
            .quarantine
            .iter()
            .flat_map(|q| q.pages.iter().copied())
            .collect();
        let reusable: BTreeSet<PageId> = base
            .free_pages
            .iter()
            .copied()
            .filter(|p| !blocked.contains(p))
            .collect();
        let io = PageIo::new(
            self.file.clone(),
            self.bm.clone(),
            reusable,
            w.header.page_count,
        );
        let tables = base
            .tables
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    TxnTable {
                        schema: t.schema().clone(),
                        meta: t.meta().clone(),
                        committed: Some(t.clone()),
                        view: None,
                        appender: None,
                    },
                )
            })
            .collect();
        let indexes = base
            .indexes
            .iter()
            .map(|(n, e)| {
                let def = TxnIndex {
                    table: e.table.clone(),
                    columns: e.columns.clone(),
                    include: e.include.clone(),
                    unique: e.unique,
                };
                (n.clone(), (def, Some(e.tree.clone())))
            })
            .collect();
        WriteTxn {
            storage,
            state: Some(w),
            views: base.views.clone(),
            indexes,
            rules: base.rules.clone(),
            sequences: TxnSequences::of(&base),
            blobs: base.table_blobs.clone(),
            base,
            tables,
            io,
            freed: Vec::new(),
            dropped: Vec::new(),
            committed: false,
        }
    }
}

/// A table as the transaction sees it.
struct TxnTable {
    schema: Schema,
    meta: Arc<TableMeta>,
    /// The committed table, while this transaction has not changed it; after
    /// [`WriteTxn::materialize`], the table with its metadata written.
    committed: Option<Arc<Table>>,
    /// The table as the transaction's next statement reads it when it has
    /// changed: what [`WriteTxn::snapshot`] made, its metadata not written.
    view: Option<Arc<Table>>,
    appender: Option<TableAppender>,
}

impl TxnTable {
    /// The table as the transaction's statements read it now: the committed
    /// (or materialized) one unless rows were appended since, else the view.
    fn current(&self) -> Option<Arc<Table>> {
        match (&self.committed, &self.appender) {
            (Some(t), None) => Some(t.clone()),
            _ => self.view.clone(),
        }
    }

    /// A copy for a savepoint, taken when the table is materialized (an
    /// appender holds unwritten rows and is never copied).
    fn saved(&self) -> TxnTable {
        debug_assert!(
            self.appender.is_none(),
            "savepoints copy materialized tables"
        );
        TxnTable {
            schema: self.schema.clone(),
            meta: self.meta.clone(),
            committed: self.committed.clone(),
            view: None,
            appender: None,
        }
    }
}

/// An index as the transaction sees it; its tree is `None` while it must be
/// (re)built at commit.
#[derive(Clone)]
struct TxnIndex {
    table: String,
    columns: Vec<String>,
    /// Included columns of a covering index (empty for a plain one).
    include: Vec<String>,
    unique: bool,
}

/// The one open write transaction. Dropping it without `commit` discards every
/// change (its pages are simply never referenced) and lets the next writer in.
pub struct WriteTxn {
    storage: Arc<Storage>,
    /// The writer's state, handed back when the transaction ends.
    state: Option<WriterState>,
    base: Arc<Catalog>,
    tables: BTreeMap<String, TxnTable>,
    views: BTreeMap<String, ViewDef>,
    indexes: BTreeMap<String, (TxnIndex, Option<BTreeIndex>)>,
    /// Defaults and constraints, by table.
    rules: BTreeMap<String, TableRules>,
    sequences: TxnSequences,
    /// Pages of each table's metadata blob as of now.
    blobs: BTreeMap<String, Vec<PageId>>,
    io: PageIo,
    freed: Vec<PageId>,
    /// Committed tables this transaction dropped (their readers may still run).
    dropped: Vec<Weak<Table>>,
    committed: bool,
}

impl WriteTxn {
    /// The catalog this transaction started from.
    pub fn base(&self) -> &Arc<Catalog> {
        &self.base
    }

    pub fn has_table(&self, name: &str) -> bool {
        self.tables.contains_key(&normalize(name))
    }

    pub fn has_view(&self, name: &str) -> bool {
        self.views.contains_key(&normalize(name))
    }

    pub fn has_index(&self, name: &str) -> bool {
        self.indexes.contains_key(&normalize(name))
    }

    /// Schema of a table as this transaction sees it.
    pub fn schema(&self, name: &str) -> Option<&Schema> {
        self.tables.get(&normalize(name)).map(|t| &t.schema)
    }

    /// The defaults and constraints of a table as this transaction sees them.
    pub fn rules(&self, table: &str) -> Option<&TableRules> {
        self.rules.get(&normalize(table))
    }

    /// Replaces the defaults and constraints of `table` (which must exist).
    /// The indexes of its key constraints are created separately.
    pub fn set_rules(&mut self, table: &str, mut rules: TableRules) -> StorageResult<()> {
        let key = normalize(table);
        if !self.tables.contains_key(&key) {
            return Err(StorageError::NoSuchTable(key));
        }
        rules.table = key.clone();
        if rules.is_empty() {
            self.rules.remove(&key);
        } else {
            self.rules.insert(key, rules);
        }
        Ok(())
    }

    /// The foreign keys of other tables (or the table itself) that reference
    /// `table`, with the referencing table's name.
    pub fn referencing(&self, table: &str) -> Vec<(String, ForeignKey)> {
        referencing(&self.rules, table)
    }

    pub fn create_table(&mut self, name: &str, schema: Schema) -> StorageResult<()> {
        let key = normalize(name);
        if self.tables.contains_key(&key) {
            return Err(StorageError::TableExists(key));
        }
        // One namespace for every relation, as PostgreSQL's pg_class.
        if self.views.contains_key(&key)
            || self.indexes.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        if schema.is_empty() {
            return Err(StorageError::Invalid(format!(
                "table \"{key}\" must have at least one column"
            )));
        }
        let mut seen = BTreeSet::new();
        for c in &schema.columns {
            if !seen.insert(normalize(&c.name)) {
                return Err(StorageError::Invalid(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
        }
        let meta = Arc::new(TableMeta::empty(schema.len()));
        self.tables.insert(
            key,
            TxnTable {
                schema,
                meta,
                committed: None,
                view: None,
                appender: None,
            },
        );
        Ok(())
    }

    pub fn drop_table(&mut self, name: &str) -> StorageResult<()> {
        let key = normalize(name);
        if let Some((other, fk)) = referencing(&self.rules, &key)
            .into_iter()
            .find(|(other, _)| *other != key)
        {
            return Err(StorageError::DependentObjects(format!(
                "cannot drop table {key} because constraint {} on table {other} depends on it",
                fk.name
            )));
        }
        let mut t = self
            .tables
            .remove(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        self.rules.remove(&key);
        // A table's serial and identity sequences go with it.
        for seq in self.sequences.owned_by(&key) {
            self.sequences.remove(&seq);
        }
        let on_table: Vec<String> = self
            .indexes
            .iter()
            .filter(|(_, (d, _))| d.table == key)
            .map(|(n, _)| n.clone())
            .collect();
        for name in on_table {
            self.drop_index_of_dropped_table(&name)?;
        }
        self.freed.extend(all_pages(&mut self.io, &mut t)?);
        if let Some(table) = &t.committed {
            self.dropped.push(Arc::downgrade(table));
        }
        if let Some(blob) = self.blobs.remove(&key) {
            self.freed.extend(blob);
        }
        Ok(())
    }

    /// Empties a table, keeping its schema and its indexes (rebuilt from what
    /// is appended next). UPDATE and DELETE rewrite a table this way.
    pub fn truncate(&mut self, name: &str) -> StorageResult<()> {
        let key = normalize(name);
        let t = self
            .tables
            .get_mut(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        self.freed.extend(all_pages(&mut self.io, t)?);
        t.appender = None;
        if let Some(table) = t.committed.take() {
            // Readers may still scan it; its pages wait in quarantine.
            self.dropped.push(Arc::downgrade(&table));
        }
        t.meta = Arc::new(TableMeta::empty(t.schema.len()));
        self.outdate_indexes(&key)
    }

    /// Frees the trees of a table's indexes: they are rebuilt at commit (bulk
    /// loading keeps them compact).
    fn outdate_indexes(&mut self, table: &str) -> StorageResult<()> {
        let bm = self.storage.bm.clone();
        for (def, tree) in self.indexes.values_mut() {
            if def.table == table {
                if let Some(old) = tree.take() {
                    self.freed.extend(old.pages(&bm)?);
                }
            }
        }
        Ok(())
    }

    /// Appends a batch to a table; returns the rows appended.
    pub fn append(&mut self, name: &str, batch: &Batch) -> StorageResult<u64> {
        let key = normalize(name);
        let t = self
            .tables
            .get_mut(&key)
            .ok_or_else(|| StorageError::NoSuchTable(key.clone()))?;
        if t.appender.is_none() {
            t.appender = Some(TableAppender::new(
                &key,
                t.schema.clone(),
                (*t.meta).clone(),
            ));
        }
        let rows = t.appender.as_mut().unwrap().append(&mut self.io, batch)?;
        self.outdate_indexes(&key)?;
        Ok(rows)
    }

    /// Creates index `name` on `columns` of `table` (`unique`: no two rows with
    /// equal keys free of NULLs). Built now from the committed rows when the table
    /// is unchanged in this transaction, else at commit; `progress(rows_done,
    /// rows_total)` reports the build as it goes.
    pub fn create_index(
        &mut self,
        name: &str,
        table: &str,
        columns: &[String],
        unique: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> StorageResult<()> {
        self.create_covering_index(name, table, columns, &[], unique, progress)
    }

    /// [`Self::create_index`] for a covering index: its entries also store the
    /// columns `include` (`CREATE INDEX ... INCLUDE (...)`), so plans that need
    /// only key and included columns read no table page. Uniqueness is checked
    /// on the key columns alone.
    pub fn create_covering_index(
        &mut self,
        name: &str,
        table: &str,
        columns: &[String],
        include: &[String],
        unique: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> StorageResult<()> {
        let key = normalize(name);
        if self.indexes.contains_key(&key)
            || self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        let tkey = normalize(table);
        let t = self
            .tables
            .get(&tkey)
            .ok_or_else(|| StorageError::NoSuchTable(tkey.clone()))?;
        // Interval keys would order by span but compare by their three fields:
        // refused until the key encoding gives equal spans equal keys.
        for c in columns {
            if let Some(col) = t.schema.index_of(c).map(|i| &t.schema.columns[i]) {
                if col.data_type == kura_common::DataType::Interval {
                    return Err(StorageError::Unsupported(format!(
                        "an index or key on interval column \"{c}\""
                    )));
                }
            }
        }
        let def = TxnIndex {
            table: tkey,
            columns: columns.to_vec(),
            include: include.to_vec(),
            unique,
        };
        let tree = match (&t.committed, &t.appender) {
            (Some(committed), None) => Some(build_covering_for_table(
                committed,
                &key,
                columns,
                include,
                unique,
                &mut self.io,
                progress,
            )?),
            _ => {
                for c in columns {
                    if t.schema.index_of(c).is_none() {
                        return Err(StorageError::Invalid(format!(
                            "column \"{c}\" does not exist in table \"{}\"",
                            def.table
                        )));
                    }
                }
                let mut seen = Vec::new();
                for c in include {
                    let Some(i) = t.schema.index_of(c) else {
                        return Err(StorageError::Invalid(format!(
                            "included column \"{c}\" does not exist in table \"{}\"",
                            def.table
                        )));
                    };
                    if seen.contains(&i) {
                        return Err(StorageError::Invalid(format!(
                            "column \"{c}\" is included twice"
                        )));
                    }
                    seen.push(i);
                }
                None
            }
        };
        self.indexes.insert(key, (def, tree));
        Ok(())
    }

    /// Drops an index; one that backs a PRIMARY KEY or UNIQUE constraint is
    /// dropped only with its table.
    pub fn drop_index(&mut self, name: &str) -> StorageResult<()> {
        let key = normalize(name);
        if let Some(rules) = self
            .indexes
            .get(&key)
            .and_then(|(def, _)| self.rules.get(&def.table))
        {
            if rules.keys.iter().any(|k| k.name == key) {
                return Err(StorageError::DependentObjects(format!(
                    "cannot drop index {key} because constraint {key} on table {} requires it",
                    rules.table
                )));
            }
        }
        self.drop_index_of_dropped_table(&key)
    }

    fn drop_index_of_dropped_table(&mut self, key: &str) -> StorageResult<()> {
        let key = key.to_string();
        let (_, tree) = self
            .indexes
            .remove(&key)
            .ok_or_else(|| StorageError::NoSuchIndex(key.clone()))?;
        if let Some(tree) = tree {
            self.freed.extend(tree.pages(&self.storage.bm)?);
        }
        Ok(())
    }

    pub fn create_view(
        &mut self,
        name: &str,
        sql: &str,
        columns: Vec<String>,
    ) -> StorageResult<()> {
        let key = normalize(name);
        if self.tables.contains_key(&key)
            || self.views.contains_key(&key)
            || self.sequences.entries.contains_key(&key)
        {
            return Err(StorageError::RelationExists(key));
        }
        self.views.insert(
            key.clone(),
            ViewDef {
                name: key,
                sql: sql.to_string(),
                columns,
            },
        );
        Ok(())
    }

    pub fn drop_view(&mut self, name: &str) -> StorageResult<()> {
        let key = normalize(name);
        self.views
            .remove(&key)
            .map(|_| ())
            .ok_or(StorageError::NoSuchView(key))
    }

    /// Pages written so far by this transaction.
    pub fn pages_written(&self) -> u64 {
        self.io.pages_written()
    }

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
    fn materialize(&mut self) -> StorageResult<()> {
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
    fn catalog_now(
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

    fn index_entries(&self) -> BTreeMap<String, IndexEntry> {
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
    fn write_first_sequence_pages(&mut self, pages: [PageId; 2]) -> StorageResult<()> {
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
    fn free_list(&self) -> Vec<PageId> {
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

/// Every page of a table's data, including those its appender wrote in this
/// transaction (an appender starts from the table's metadata and only adds
/// pages, so its final metadata names them all).
fn all_pages(io: &mut PageIo, t: &mut TxnTable) -> StorageResult<Vec<PageId>> {
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

fn load_catalog(
    file: &Arc<DbFile>,
    bm: &Arc<BufferManager>,
    header: &Header,
) -> StorageResult<Catalog> {
    let mut catalog = Catalog::empty(header.generation);
    if header.catalog_root == 0 {
        return Ok(catalog);
    }
    let (bytes, pages) = read_blob(file, header.catalog_root)?;
    // A catalog written before indexes (or covering indexes) existed lacks the
    // last fields.
    let data = CatalogFile::decode(&bytes).map_err(|e| StorageError::Corrupt {
        path: file.path().to_path_buf(),
        page: header.catalog_root,
        what: format!("catalog does not decode: {e}"),
    })?;
    for entry in data.tables {
        let (bytes, blob) = read_blob(file, entry.meta_root)?;
        let meta = TableMeta::from_bytes(&bytes).map_err(|e| StorageError::Corrupt {
            path: file.path().to_path_buf(),
            page: entry.meta_root,
            what: format!("metadata of table {} does not decode: {e}", entry.name),
        })?;
        let table = Table::new(
            entry.name.clone(),
            entry.schema,
            Arc::new(meta),
            entry.meta_root,
            bm.clone(),
        );
        catalog.tables.insert(entry.name.clone(), Arc::new(table));
        catalog.table_blobs.insert(entry.name, blob);
    }
    catalog.views = data
        .views
        .into_iter()
        .map(|v| (v.name.clone(), v))
        .collect();
    catalog.indexes = data
        .indexes
        .into_iter()
        .map(|i| (i.name.clone(), i))
        .collect();
    catalog.rules = data
        .rules
        .into_iter()
        .map(|r| (r.table.clone(), r))
        .collect();
    catalog.sequences = data
        .sequences
        .into_iter()
        .map(|e| (e.def.name.clone(), e))
        .collect();
    catalog.sequence_pages = match data.sequence_pages[..] {
        [a, b] => Some([a, b]),
        _ => None,
    };
    catalog.next_sequence_id = data.next_sequence_id.max(1);
    catalog.blob_pages = pages;
    catalog.free_pages = data.free_pages;
    Ok(catalog)
}

/// The foreign keys in `rules` that reference `table`, with their table.
fn referencing(rules: &BTreeMap<String, TableRules>, table: &str) -> Vec<(String, ForeignKey)> {
    let table = normalize(table);
    rules
        .values()
        .flat_map(|r| {
            r.foreign_keys
                .iter()
                .filter(|f| f.ref_table == table)
                .map(|f| (r.table.clone(), f.clone()))
        })
        .collect()
}
