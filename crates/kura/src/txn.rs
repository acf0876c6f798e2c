//! Transactions of a session — `BEGIN [ISOLATION LEVEL ...] [READ ONLY]`,
//! `COMMIT`, `ROLLBACK`, `SET TRANSACTION` — on the storage's single
//! shadow-paged write transaction: a transaction's statements see each other's
//! changes, other sessions see only what was committed, and a rollback leaves
//! no trace. A statement that fails inside a transaction aborts it, as in
//! PostgreSQL (SQLSTATE 25P02 until `ROLLBACK` or `ROLLBACK TO SAVEPOINT`).
//!
//! Savepoints (`SAVEPOINT`, `RELEASE [SAVEPOINT]`, `ROLLBACK TO [SAVEPOINT]`)
//! record the write transaction's state ([`kura_storage::TxnSavepoint`]) and
//! the catalog the transaction read then; going back to one puts both back.
//! A savepoint taken before the transaction first wrote records nothing:
//! going back to it lets go of the write transaction altogether. While the
//! transaction has savepoints, a failed statement keeps its (half-changed)
//! write transaction, so that `ROLLBACK TO` can recover it — the way drivers
//! (psycopg's nested transactions, JDBC, SQLAlchemy's `begin_nested`) carry
//! on after an error.
//!
//! Concurrency control never loses a commit. Writers are serialised by the
//! storage's one write transaction, and every statement that writes reads the
//! rows it changes *after* it holds that transaction, from the latest committed
//! state: an UPDATE that waited for another writer re-reads the rows and
//! re-checks its WHERE on what that writer committed (PostgreSQL's READ
//! COMMITTED rule, here for the whole statement). At REPEATABLE READ and
//! SERIALIZABLE a transaction reads one snapshot taken at its first statement;
//! when it first writes, any commit since that snapshot makes it fail with
//! 40001 (first committer wins) instead of writing over what it did not see.
//! Because writers hold the one write transaction until they end, no wait can
//! form a cycle: there are no deadlocks to detect. A wait honours
//! `lock_timeout` (55P03), `statement_timeout` and cancellation (57014).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use kura_common::settings::Settings;
use kura_storage::{Catalog, Storage, TxnSavepoint, WriteTxn};

use crate::cancel::CancelHandle;
use crate::error::{KuraError, KuraResult};

/// The isolation level of a transaction, PostgreSQL's names. READ UNCOMMITTED
/// behaves as READ COMMITTED, as in PostgreSQL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isolation {
    #[default]
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// A level by its SQL name (`read committed`, `repeatable read`, ...).
    pub fn parse(name: &str) -> Option<Isolation> {
        let words: Vec<String> = name
            .split(|c: char| c.is_whitespace() || c == '_' || c == '-')
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect();
        match words.join(" ").as_str() {
            "read uncommitted" | "read committed" => Some(Isolation::ReadCommitted),
            "repeatable read" => Some(Isolation::RepeatableRead),
            "serializable" => Some(Isolation::Serializable),
            _ => None,
        }
    }

    /// The level's name as `SHOW transaction_isolation` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The level of a parsed `ISOLATION LEVEL ...` clause.
    pub(crate) fn from_ast(level: &sqlparser::ast::TransactionIsolationLevel) -> KuraResult<Self> {
        use sqlparser::ast::TransactionIsolationLevel as L;
        Ok(match level {
            L::ReadUncommitted | L::ReadCommitted => Isolation::ReadCommitted,
            L::RepeatableRead => Isolation::RepeatableRead,
            L::Serializable => Isolation::Serializable,
            other => {
                return Err(KuraError::Unsupported(format!(
                    "isolation level {other} (kura has READ COMMITTED, REPEATABLE READ and SERIALIZABLE)"
                )))
            }
        })
    }

    /// True when the transaction reads one snapshot for all its statements.
    fn keeps_snapshot(self) -> bool {
        self >= Isolation::RepeatableRead
    }
}

/// An open transaction block.
pub(crate) struct OpenTxn {
    pub isolation: Isolation,
    pub read_only: bool,
    /// The write transaction, taken at the first write so that a transaction
    /// that only reads never holds other writers up (drivers open one around
    /// every query when autocommit is off).
    writer: Option<Box<WriteTxn>>,
    /// The catalog the transaction's statements read: after its first write
    /// the writer's own view; before it, at REPEATABLE READ and above, the
    /// snapshot its first statement took; else none (each statement reads the
    /// latest commit).
    snapshot: Option<Arc<Catalog>>,
    /// Statements that only appended rows ([`appends_only`]) ran since
    /// `snapshot` was taken: it lacks their rows (nothing else). The next
    /// statement that may read rows brings it up to date first ([`refresh`]).
    stale: bool,
    /// A statement has run (`SET TRANSACTION ISOLATION LEVEL` must come first).
    pub started: bool,
    /// A statement of this transaction is inside [`Tx::write`] now.
    writing: bool,
    /// Savepoints, oldest first (names may repeat: the newest one counts).
    savepoints: Vec<Savepoint>,
}

/// One savepoint of an open transaction.
struct Savepoint {
    name: String,
    /// The write transaction's state then; `None` when the transaction had
    /// not written yet.
    writer: Option<TxnSavepoint>,
    /// The catalog the transaction's statements read then.
    snapshot: Option<Arc<Catalog>>,
    /// The session's cursor count then (cursors declared since close when
    /// the transaction goes back here).
    cursors: u64,
}

impl OpenTxn {
    /// The newest savepoint called `name`.
    fn find(&self, name: &str) -> KuraResult<usize> {
        self.savepoints
            .iter()
            .rposition(|s| s.name == name)
            .ok_or_else(|| KuraError::State {
                sqlstate: "3B001",
                message: format!("savepoint \"{name}\" does not exist"),
            })
    }

    /// Whether a failed statement must leave the write transaction in place
    /// for a `ROLLBACK TO` to recover: some savepoint holds its state.
    fn keeps_writer(&self) -> bool {
        self.savepoints.iter().any(|s| s.writer.is_some())
    }

    /// Goes back to savepoint `at` (which stays; later ones go).
    fn rollback_to(&mut self, at: usize) {
        self.savepoints.truncate(at + 1);
        // The savepoint's view was up to date when it was taken.
        self.stale = false;
        let sp = &self.savepoints[at];
        match (&sp.writer, &mut self.writer) {
            (Some(saved), Some(writer)) => {
                writer.rollback_to(saved);
                self.snapshot = sp.snapshot.clone();
            }
            (Some(_), None) => {
                // Cannot happen: a writer, once taken, stays until the
                // transaction ends or goes back to before it was taken.
                tracing::error!("internal error: savepoint state without its write transaction");
                self.snapshot = sp.snapshot.clone();
            }
            (None, writer) => {
                // Taken before the first write: nothing written since stays.
                // At REPEATABLE READ and above the transaction keeps reading
                // the snapshot it read before its first write, which is what
                // the write transaction started from (a newer commit would
                // have refused the write: 40001).
                if let Some(w) = writer.take() {
                    self.snapshot = self.isolation.keeps_snapshot().then(|| w.base().clone());
                }
            }
        }
    }
}

/// Where a session stands.
#[derive(Default)]
pub(crate) enum TxnState {
    /// Autocommit: every statement commits on its own.
    #[default]
    Idle,
    /// An autocommit statement holds the write transaction (inside [`Tx::write`]).
    Writing,
    /// Between `BEGIN` and `COMMIT`/`ROLLBACK`.
    Open(OpenTxn),
    /// A statement failed inside the transaction: only `COMMIT` or
    /// `ROLLBACK` (both roll back) end it, or `ROLLBACK TO SAVEPOINT`
    /// recovers it. With savepoints the transaction's state is kept here for
    /// that; without, its changes are gone at once (and the write lock is
    /// free), only its modes stay (for `AND CHAIN`).
    Failed(OpenTxn),
}

impl TxnState {
    /// A statement failed: an open transaction is aborted.
    pub(crate) fn fail(&mut self) {
        match std::mem::take(self) {
            TxnState::Open(mut open) => {
                open.writing = false;
                if open.savepoints.is_empty() {
                    open.writer = None;
                    open.snapshot = None;
                    open.stale = false;
                }
                *self = TxnState::Failed(open);
            }
            other => *self = other,
        }
    }
}

/// A session's temporary tables: their private storage, made at the first
/// `CREATE TEMP TABLE` (see `temp`), and that storage's transaction state, which
/// follows the session's transaction.
#[derive(Default)]
pub(crate) struct TempTables {
    storage: OnceLock<Arc<Storage>>,
    pub(crate) state: Mutex<TxnState>,
}

impl TempTables {
    pub(crate) fn storage(&self) -> Option<&Arc<Storage>> {
        self.storage.get()
    }

    /// Whether a statement is writing the private storage now.
    pub(crate) fn writing(&self) -> bool {
        is_writing(&self.lock())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TxnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The private storage, opened by `open` now if the session has none yet.
    pub(crate) fn storage_or_open(
        &self,
        open: impl FnOnce() -> KuraResult<Arc<Storage>>,
    ) -> KuraResult<&Arc<Storage>> {
        if let Some(s) = self.storage.get() {
            return Ok(s);
        }
        let _ = self.storage.set(open()?);
        self.storage
            .get()
            .ok_or_else(|| KuraError::Internal("temporary storage not set".into()))
    }
}

/// How often a statement waiting for another session's write transaction
/// checks for cancellation and its time limits.
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// What one statement reads and writes: the committed database in autocommit
/// mode, the open transaction's state inside `BEGIN ... COMMIT`.
#[derive(Clone, Copy)]
pub(crate) struct Tx<'a> {
    pub storage: &'a Arc<Storage>,
    pub state: &'a Mutex<TxnState>,
    pub cancel: &'a CancelHandle,
    pub settings: &'a Settings,
    /// The session's temporary tables.
    pub temp: &'a TempTables,
}

impl<'a> Tx<'a> {
    /// The transaction of the session's temporary storage, if it has one.
    pub fn temp_tx(&self) -> Option<Tx<'a>> {
        let storage = self.temp.storage()?;
        if !Arc::ptr_eq(storage, self.storage) {
            let main = self.lock();
            follow(&main, &mut self.temp.lock());
        }
        Some(Tx {
            storage,
            state: &self.temp.state,
            ..*self
        })
    }

    /// Whether the session is in a `READ ONLY` transaction block (which may
    /// still write temporary tables, but not create or drop them).
    pub fn read_only_block(&self) -> bool {
        matches!(&*self.lock(), TxnState::Open(open) if open.read_only)
    }

    /// The catalog of the session's temporary tables, if it has any.
    pub fn temp_catalog(&self) -> Option<Arc<Catalog>> {
        self.temp_tx().map(|t| t.catalog())
    }

    /// Whether `name` is one of the session's temporary tables.
    pub fn is_temp(&self, name: &str) -> bool {
        self.temp_catalog().is_some_and(|c| c.table(name).is_some())
    }

    /// The transaction that writes table `name`: the temporary storage's for
    /// a temporary table (which hides a permanent one of its name).
    pub fn for_table(&self, name: &str) -> Tx<'a> {
        match self.temp_tx() {
            Some(t) if t.catalog().table(name).is_some() => t,
            _ => *self,
        }
    }

    /// Table `name` as a statement sees it: a temporary one first.
    pub fn table(&self, name: &str) -> Option<Arc<kura_storage::Table>> {
        self.temp_catalog()
            .and_then(|c| c.table(name))
            .or_else(|| self.catalog().table(name))
    }

    fn lock(&self) -> MutexGuard<'a, TxnState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Inside `BEGIN … COMMIT` (including a failed transaction).
    pub fn in_block(&self) -> bool {
        matches!(*self.lock(), TxnState::Open(_) | TxnState::Failed(_))
    }

    /// The catalog a statement reads. Inside a transaction at REPEATABLE READ
    /// or above, the first call takes the snapshot every later statement reads.
    pub fn catalog(&self) -> Arc<Catalog> {
        let mut state = self.lock();
        if let TxnState::Open(open) = &mut *state {
            open.started = true;
            if let Some(s) = &open.snapshot {
                return s.clone();
            }
            let latest = self.storage.catalog();
            if open.isolation.keeps_snapshot() {
                open.snapshot = Some(latest.clone());
            }
            return latest;
        }
        // Autocommit (also while holding the write transaction, when the
        // latest commit is what the transaction started from).
        self.storage.catalog()
    }

    /// Runs `f` on the write transaction: inside `BEGIN` on the session's own
    /// (taken now if this is its first write), else on a new one committed
    /// when `f` succeeds. Changes of a failed `f` are never committed.
    ///
    /// Whatever `f` reads through [`Tx::catalog`] is read while the write
    /// transaction is held — the latest commit plus the transaction's own
    /// changes — so a statement must compute the rows it writes inside `f`,
    /// never from what it read before (that is how writes were lost).
    pub fn write<T>(&self, f: impl FnOnce(&mut WriteTxn) -> KuraResult<T>) -> KuraResult<T> {
        self.write_as(true, f)
    }

    /// [`Tx::write`] for a statement that only appends rows computed from no
    /// table ([`appends_only`]). Inside `BEGIN` the transaction's view is not
    /// brought up to date after it: the next statement that may read rows
    /// does that ([`refresh`]), so a run of many one-row INSERTs costs what
    /// their rows cost, not a view of the table each.
    pub fn append_rows<T>(&self, f: impl FnOnce(&mut WriteTxn) -> KuraResult<T>) -> KuraResult<T> {
        self.write_as(false, f)
    }

    /// [`Tx::write`]; `view`: whether the transaction's view is brought up
    /// to date after `f`.
    fn write_as<T>(
        &self,
        view: bool,
        f: impl FnOnce(&mut WriteTxn) -> KuraResult<T>,
    ) -> KuraResult<T> {
        let open = {
            let mut state = self.lock();
            match &mut *state {
                TxnState::Idle => {
                    if self.settings.flag("default_transaction_read_only") {
                        return Err(read_only_error());
                    }
                    *state = TxnState::Writing;
                    None
                }
                TxnState::Open(open) => {
                    if open.read_only {
                        return Err(read_only_error());
                    }
                    if open.writing {
                        return Err(nested_write());
                    }
                    open.writing = true;
                    open.started = true;
                    Some((open.writer.take(), open.isolation, open.snapshot.clone()))
                }
                TxnState::Writing => return Err(nested_write()),
                TxnState::Failed(_) => return Err(KuraError::InFailedTransaction),
            }
        };
        match open {
            None => {
                let r = self.acquire().and_then(|mut txn| {
                    let out = f(&mut txn)?;
                    txn.commit()?;
                    Ok(out)
                });
                let mut state = self.lock();
                if matches!(*state, TxnState::Writing) {
                    *state = TxnState::Idle;
                }
                r
            }
            Some((writer, isolation, snapshot)) => {
                let r = self
                    .open_writer(writer, isolation, snapshot)
                    .map(|mut txn| {
                        let r = f(&mut txn).and_then(|out| {
                            let after = if view { Some(txn.snapshot()?) } else { None };
                            Ok((out, after))
                        });
                        (txn, r)
                    });
                let mut state = self.lock();
                let TxnState::Open(open) = &mut *state else {
                    return Err(KuraError::Internal(
                        "the transaction ended while a statement wrote".into(),
                    ));
                };
                open.writing = false;
                let (txn, r) = r?;
                match r {
                    Ok((out, after)) => {
                        open.writer = Some(txn);
                        match after {
                            Some(view) => {
                                open.snapshot = Some(view);
                                open.stale = false;
                            }
                            None => open.stale = true,
                        }
                        Ok(out)
                    }
                    Err(e) => {
                        // The session marks itself failed. A savepoint's
                        // `ROLLBACK TO` needs the write transaction back,
                        // half-changed as it is; else it is dropped here
                        // (rolled back), freeing the write lock at once.
                        if open.keeps_writer() {
                            open.writer = Some(txn);
                        } else {
                            // Its view goes with it: a `ROLLBACK TO` a
                            // savepoint taken before it must not read pages
                            // the next writer may reuse. What the transaction
                            // read before it first wrote is what the write
                            // transaction started from.
                            open.snapshot = isolation.keeps_snapshot().then(|| txn.base().clone());
                        }
                        Err(e)
                    }
                }
            }
        }
    }

    /// The open transaction's write transaction: the one it holds, or a new
    /// one, taken now. At REPEATABLE READ and above a commit since the
    /// transaction's snapshot refuses it (40001): its writes would rest on
    /// rows it did not see. Once taken, statements read the writer's view.
    fn open_writer(
        &self,
        writer: Option<Box<WriteTxn>>,
        isolation: Isolation,
        snapshot: Option<Arc<Catalog>>,
    ) -> KuraResult<Box<WriteTxn>> {
        if let Some(txn) = writer {
            return Ok(txn);
        }
        let mut txn = Box::new(self.acquire()?);
        if let Some(seen) = snapshot.filter(|_| isolation.keeps_snapshot()) {
            if seen.generation() != txn.base().generation() {
                return Err(KuraError::State {
                    sqlstate: "40001",
                    message: format!(
                        "could not serialize access due to concurrent update: another \
                         transaction committed after this {} transaction's snapshot; \
                         retry the transaction",
                        isolation.name().to_ascii_uppercase()
                    ),
                });
            }
        }
        let view = txn.snapshot()?;
        if let TxnState::Open(open) = &mut *self.lock() {
            open.snapshot = Some(view);
        }
        Ok(txn)
    }

    /// Takes the write transaction, waiting while another session holds it;
    /// the wait ends with the statement's cancellation, its time limit or
    /// `lock_timeout`.
    fn acquire(&self) -> KuraResult<WriteTxn> {
        let deadline = lock_timeout(self.settings).map(|d| Instant::now() + d);
        loop {
            self.cancel.check()?;
            let slice = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(KuraError::State {
                            sqlstate: "55P03",
                            message: "canceling statement due to lock timeout: another \
                                      transaction holds the write lock"
                                .into(),
                        });
                    }
                    left.min(WAIT_SLICE)
                }
                None => WAIT_SLICE,
            };
            if let Some(txn) = self.storage.try_begin(slice)? {
                return Ok(txn);
            }
        }
    }
}

/// `lock_timeout`; `None` when a wait for the write lock is unbounded.
fn lock_timeout(settings: &Settings) -> Option<Duration> {
    settings.lock_timeout()
}

fn read_only_error() -> KuraError {
    KuraError::State {
        sqlstate: "25006",
        message: "cannot execute a write in a read-only transaction".into(),
    }
}

fn nested_write() -> KuraError {
    KuraError::Internal("a statement wrote while it was already writing".into())
}

/// `BEGIN`: PostgreSQL answers a nested one with a warning and stays put.
pub(crate) fn begin(
    state: &mut TxnState,
    isolation: Isolation,
    read_only: bool,
) -> Option<&'static str> {
    match state {
        TxnState::Idle => {
            *state = TxnState::Open(OpenTxn {
                isolation,
                read_only,
                writer: None,
                snapshot: None,
                stale: false,
                started: false,
                writing: false,
                savepoints: Vec::new(),
            });
            None
        }
        _ => Some("there is already a transaction in progress"),
    }
}

/// `COMMIT`: makes the transaction's writes durable and visible; the tag says
/// what happened (`ROLLBACK` for a failed transaction, as in PostgreSQL).
pub(crate) fn commit(state: &mut TxnState) -> KuraResult<(&'static str, Option<&'static str>)> {
    match std::mem::take(state) {
        TxnState::Idle | TxnState::Writing => {
            Ok(("COMMIT", Some("there is no transaction in progress")))
        }
        TxnState::Open(open) => {
            if let Some(txn) = open.writer {
                txn.commit()?;
            }
            Ok(("COMMIT", None))
        }
        TxnState::Failed(_) => Ok(("ROLLBACK", None)),
    }
}

/// `ROLLBACK`: forgets the transaction's writes.
pub(crate) fn rollback(state: &mut TxnState) -> Option<&'static str> {
    match std::mem::take(state) {
        TxnState::Idle | TxnState::Writing => Some("there is no transaction in progress"),
        _ => None,
    }
}

/// `SAVEPOINT name`: records the transaction's state now.
pub(crate) fn savepoint(state: &mut TxnState, name: &str, cursors: u64) -> KuraResult<()> {
    let open = open_block(state, "SAVEPOINT")?;
    if open.writing {
        return Err(nested_write());
    }
    let writer = match open.writer.as_mut() {
        Some(w) => {
            let saved = w.savepoint()?;
            // The view of what the savepoint keeps (its pages are final now).
            open.snapshot = Some(w.snapshot()?);
            open.stale = false;
            Some(saved)
        }
        None => None,
    };
    open.savepoints.push(Savepoint {
        name: name.to_string(),
        writer,
        snapshot: open.snapshot.clone(),
        cursors,
    });
    Ok(())
}

/// `RELEASE SAVEPOINT name`: forgets the newest savepoint of that name and
/// every later one; the changes since stay part of the transaction.
pub(crate) fn release(state: &mut TxnState, name: &str) -> KuraResult<()> {
    let open = open_block(state, "RELEASE SAVEPOINT")?;
    let at = open.find(name)?;
    open.savepoints.truncate(at);
    Ok(())
}

/// `ROLLBACK TO SAVEPOINT name`: undoes everything since the newest
/// savepoint of that name, which stays (later ones go). Recovers a failed
/// transaction. Returns the cursor count the savepoint recorded.
pub(crate) fn rollback_to(state: &mut TxnState, name: &str) -> KuraResult<u64> {
    let open = match state {
        TxnState::Failed(open) => open,
        _ => open_block(state, "ROLLBACK TO SAVEPOINT")?,
    };
    let at = open.find(name)?;
    open.rollback_to(at);
    let cursors = open.savepoints[at].cursors;
    // The transaction is recovered (and an open one stays open).
    *state = match std::mem::take(state) {
        TxnState::Failed(open) => TxnState::Open(open),
        other => other,
    };
    Ok(cursors)
}

/// The open transaction block a savepoint statement `what` works on.
fn open_block<'s>(state: &'s mut TxnState, what: &str) -> KuraResult<&'s mut OpenTxn> {
    match state {
        TxnState::Open(open) => Ok(open),
        TxnState::Failed(_) => Err(KuraError::InFailedTransaction),
        TxnState::Idle | TxnState::Writing => Err(KuraError::State {
            sqlstate: "25P01",
            message: format!("{what} can only be used in transaction blocks"),
        }),
    }
}

/// The savepoints of a transaction, oldest first, as markers that record
/// nothing: a transaction that joins the session's one now (the temporary
/// tables' part, begun at its first use) had not written at any of them.
pub(crate) fn savepoint_markers(state: &TxnState) -> Vec<String> {
    match state {
        TxnState::Open(open) | TxnState::Failed(open) => {
            open.savepoints.iter().map(|s| s.name.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// Sets the savepoints of a transaction that just began to `names`, as
/// markers (see [`savepoint_markers`]).
pub(crate) fn set_savepoint_markers(state: &mut TxnState, names: Vec<String>) {
    if let TxnState::Open(open) = state {
        open.savepoints = names
            .into_iter()
            .map(|name| Savepoint {
                name,
                writer: None,
                snapshot: None,
                cursors: 0,
            })
            .collect();
    }
}

/// Brings the private storage's state in line with the session's transaction
/// before it is used: a `BEGIN` since opens it too, a failed statement fails it.
/// (COMMIT and ROLLBACK end it explicitly: see `temp::end_transaction`.)
fn follow(main: &TxnState, temp: &mut TxnState) {
    match (main, &*temp) {
        (TxnState::Open(open), TxnState::Idle) => {
            // Writes to temporary tables are allowed in a read-only
            // transaction, as in PostgreSQL.
            begin(temp, open.isolation, false);
            // The savepoints so far, as markers: going back to one of them
            // forgets everything this part writes.
            set_savepoint_markers(temp, savepoint_markers(main));
        }
        (TxnState::Failed(_), TxnState::Open(_)) => temp.fail(),
        // A transaction ended without its temporary part (cannot happen:
        // the session's COMMIT and ROLLBACK end both); it is not kept open.
        (TxnState::Idle, TxnState::Open(_) | TxnState::Failed(_)) => *temp = TxnState::Idle,
        _ => {}
    }
}

/// After a statement: an error inside a transaction aborts it; an autocommit
/// write that panicked lets go of its mark.
pub(crate) fn after_statement<T>(state: &mut TxnState, r: &KuraResult<T>) {
    match state {
        TxnState::Open(_) if r.is_err() => state.fail(),
        TxnState::Open(open) => open.writing = false,
        TxnState::Writing => *state = TxnState::Idle,
        _ => {}
    }
}

/// Whether a statement holds the write transaction of this state now.
pub(crate) fn is_writing(state: &TxnState) -> bool {
    match state {
        TxnState::Writing => true,
        TxnState::Open(open) => open.writing,
        _ => false,
    }
}

/// Before a statement that may read rows: brings the open transaction's view
/// up to date with the rows that statements which only appended left out of
/// it (see [`Tx::append_rows`]).
pub(crate) fn refresh(state: &mut TxnState) -> KuraResult<()> {
    if let TxnState::Open(open) = state {
        if open.stale && !open.writing {
            if let Some(w) = open.writer.as_mut() {
                open.snapshot = Some(w.snapshot()?);
            }
            open.stale = false;
        }
    }
    Ok(())
}

/// Whether `stmt` only appends rows computed from no table: `INSERT ...
/// VALUES` (or `DEFAULT VALUES`) without ON CONFLICT, a WITH clause or a
/// subquery anywhere (its rows, its RETURNING). Such a statement reads no
/// row the transaction wrote before, so it needs no view of them.
pub(crate) fn appends_only(stmt: &sqlparser::ast::Statement) -> bool {
    use sqlparser::ast::{visit_expressions, Expr, SetExpr, Statement};
    let Statement::Insert(ins) = stmt else {
        return false;
    };
    if ins.on.is_some() {
        return false;
    }
    if let Some(q) = &ins.source {
        if q.with.is_some() || !matches!(*q.body, SetExpr::Values(_)) {
            return false;
        }
    }
    let reads = visit_expressions(stmt, |e| match e {
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    });
    reads.is_continue()
}

/// Before a statement: a failed transaction refuses everything but its end.
pub(crate) fn check_not_failed(state: &TxnState) -> KuraResult<()> {
    match state {
        TxnState::Failed(_) => Err(KuraError::InFailedTransaction),
        _ => Ok(()),
    }
}
