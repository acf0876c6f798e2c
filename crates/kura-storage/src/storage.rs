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
use crate::catalog::{Catalog, CatalogFile, IndexEntry, Schema, TableEntry, ViewDef};
use crate::error::{StorageError, StorageResult};
use crate::file::{DbFile, Header, PageId, DEFAULT_PAGE_SIZE};
use crate::index::{
    build_covering_for_table,
    from_table::{include_columns, key_columns},
    BTreeIndex,
};
use crate::memory::physical_memory;
use crate::rules::{ForeignKey, TableRules};
use crate::sequence::{SeqState, SequenceEntry, SequenceValues, TxnSequences};
use crate::table::meta::TableMeta;
use crate::table::writer::TableAppender;
use crate::table::Table;
use crate::txn_io::PageIo;

mod analyze;
mod commit;
mod ddl;
mod savepoint;
mod sequences;

use commit::all_pages;

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
        self.tables.contains_key(name)
    }

    pub fn has_view(&self, name: &str) -> bool {
        self.views.contains_key(name)
    }

    pub fn has_index(&self, name: &str) -> bool {
        self.indexes.contains_key(name)
    }

    /// Schema of a table as this transaction sees it.
    pub fn schema(&self, name: &str) -> Option<&Schema> {
        self.tables.get(name).map(|t| &t.schema)
    }

    /// The defaults and constraints of a table as this transaction sees them.
    pub fn rules(&self, table: &str) -> Option<&TableRules> {
        self.rules.get(table)
    }

    /// The foreign keys of other tables (or the table itself) that reference
    /// `table`, with the referencing table's name.
    pub fn referencing(&self, table: &str) -> Vec<(String, ForeignKey)> {
        referencing(&self.rules, table)
    }

    /// Appends a batch to a table; returns the rows appended.
    pub fn append(&mut self, name: &str, batch: &Batch) -> StorageResult<u64> {
        let key = name.to_string();
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

    /// Pages written so far by this transaction.
    pub fn pages_written(&self) -> u64 {
        self.io.pages_written()
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
    let table = table.to_string();
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
