//! Sequences (`CREATE SEQUENCE`, `serial`, identity columns). A sequence's
//! definition is catalog state (format 8) and changes transactionally; its
//! values do not: as in PostgreSQL, `nextval` is never rolled back, so no two
//! callers ever get the same value, committed or not.
//!
//! Values are made durable ahead of use. Before handing out a value past what
//! is on disk, a whole batch is reserved: the state a crash would restart from
//! is written to one of two sequence pages (taken in turn, each carrying a
//! generation and the page checksum, so a torn write leaves the other one
//! valid) and synced. A crash therefore skips at most one batch of values
//! (PostgreSQL skips up to 32); a clean close writes the exact state. The
//! batch grows while values are drawn quickly, so a bulk INSERT of a million
//! `serial` rows costs tens of syncs, not a million.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use kura_common::DataType;

use crate::error::{StorageError, StorageResult};
use crate::file::aligned::AlignedBuf;
use crate::file::page::{seal, PageKind, PAGE_HEADER};
use crate::file::{DbFile, PageId};

/// A sequence as `CREATE SEQUENCE` (or a `serial` / identity column) defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceDef {
    pub name: String,
    /// Never reused within a database: values on the sequence pages are
    /// matched to their sequence by it.
    pub id: u64,
    /// The type of its values: INTEGER (also for `smallint`) or BIGINT.
    pub data_type: DataType,
    /// Its SQL type: `smallint`, `integer` or `bigint`.
    pub type_name: String,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cycle: bool,
    /// The column whose sequence this is (`serial`, identity, `OWNED BY`): it
    /// is dropped with the column's table.
    pub owned_by: Option<OwnedBy>,
    pub identity: Option<Identity>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedBy {
    pub table: String,
    pub column: String,
}

/// The kind of an identity column (`GENERATED ALWAYS | BY DEFAULT AS IDENTITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Identity {
    Always,
    ByDefault,
}

/// Where a sequence stands: its last value, and whether that value was
/// handed out (`false` right after creation or `setval(s, v, false)`: the
/// next value is `last` itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqState {
    pub last: i64,
    pub called: bool,
}

/// A sequence in the catalog: its definition and the state a reopening
/// starts from when the sequence pages do not name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceEntry {
    pub def: SequenceDef,
    pub state: SeqState,
}

impl SequenceDef {
    /// The state of a new sequence: its next value is `start`.
    pub fn initial_state(&self) -> SeqState {
        SeqState {
            last: self.start,
            called: false,
        }
    }

    /// The value after `state`, or `None` past the bounds without CYCLE.
    pub fn next_after(&self, state: SeqState) -> Option<i64> {
        if !state.called {
            return Some(state.last);
        }
        match state.last.checked_add(self.increment) {
            Some(v) if v >= self.min && v <= self.max => Some(v),
            _ if self.cycle => Some(if self.increment > 0 {
                self.min
            } else {
                self.max
            }),
            _ => None,
        }
    }

    /// The next `n` values after `state` and the state after them; past the
    /// bounds of a sequence without CYCLE, PostgreSQL's error (2200H).
    pub fn advance(&self, state: SeqState, n: usize) -> StorageResult<(Vec<i64>, SeqState)> {
        let mut out = Vec::with_capacity(n);
        let mut s = state;
        for _ in 0..n {
            let Some(v) = self.next_after(s) else {
                let (which, bound) = if self.increment > 0 {
                    ("maximum", self.max)
                } else {
                    ("minimum", self.min)
                };
                return Err(StorageError::Sequence {
                    code: "2200H",
                    message: format!(
                        "nextval: reached {which} value of sequence \"{}\" ({bound})",
                        self.name
                    ),
                });
            };
            s = SeqState {
                last: v,
                called: true,
            };
            out.push(v);
        }
        Ok((out, s))
    }

    /// The state after up to `n` more values (fewer where the bounds stop a
    /// sequence without CYCLE).
    fn ahead(&self, state: SeqState, n: u64) -> SeqState {
        let mut s = state;
        for _ in 0..n {
            match self.next_after(s) {
                Some(v) => {
                    s = SeqState {
                        last: v,
                        called: true,
                    }
                }
                None => break,
            }
        }
        s
    }

    /// Checks `value` for `setval` (22003 outside the bounds).
    pub fn check_bounds(&self, value: i64) -> StorageResult<()> {
        if value < self.min || value > self.max {
            return Err(StorageError::Sequence {
                code: "22003",
                message: format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    self.name, self.min, self.max
                ),
            });
        }
        Ok(())
    }
}

/// Values reserved per sync at first; the batch doubles while reservations
/// come quickly, up to [`MAX_BATCH`].
const MIN_BATCH: u64 = 32;
const MAX_BATCH: u64 = 1 << 16;
/// Reservations closer together than this grow the batch.
const QUICK: Duration = Duration::from_millis(200);
/// Marks a sequence page's payload.
const MAGIC: &[u8; 4] = b"KSEQ";
/// Bytes of one sequence's record on a page: id, last value, called.
const RECORD: usize = 17;

/// How many sequences the sequence pages hold at `page_size`.
pub fn capacity(page_size: usize) -> usize {
    (page_size - PAGE_HEADER - 16) / RECORD
}

/// One sequence's values, as this process hands them out.
struct Live {
    def: SequenceDef,
    state: SeqState,
    /// The state a crash restarts from (what the sequence pages or the
    /// catalog hold).
    persisted: SeqState,
    /// Values that may still be handed out before `persisted` must move.
    ahead: u64,
    /// Committed: its values must be durable before they are handed out. A
    /// sequence created by an open transaction vanishes with it if it rolls
    /// back, and its state is written by the commit.
    durable: bool,
    /// Values per reservation now.
    batch: u64,
    last_reserve: Option<Instant>,
}

struct Values {
    live: HashMap<u64, Live>,
    /// The two sequence pages, once a commit has allocated them.
    pages: Option<[PageId; 2]>,
    /// The generation of the last page written (page `generation % 2`).
    generation: u64,
}

/// The values of every sequence of an open database.
pub(crate) struct SequenceValues {
    file: Arc<DbFile>,
    inner: Mutex<Values>,
}

impl SequenceValues {
    /// The values after opening: each committed sequence from the newest
    /// valid sequence page, else from the catalog; `warnings` gets a line when
    /// neither page is readable.
    pub(crate) fn open(
        file: Arc<DbFile>,
        entries: &[SequenceEntry],
        pages: Option<[PageId; 2]>,
        warnings: &mut Vec<String>,
    ) -> SequenceValues {
        let mut generation = 0;
        let mut on_page: HashMap<u64, SeqState> = HashMap::new();
        if let Some(pages) = pages {
            let mut best: Option<(u64, HashMap<u64, SeqState>)> = None;
            for p in pages {
                if let Some((g, states)) = read_page(&file, p) {
                    if best.as_ref().is_none_or(|(bg, _)| g > *bg) {
                        best = Some((g, states));
                    }
                }
            }
            match best {
                Some((g, states)) => {
                    generation = g;
                    on_page = states;
                }
                None => warnings.push(format!(
                    "both sequence pages ({} and {}) are damaged: sequences restart from \
                     their last committed state and may repeat values handed out since",
                    pages[0], pages[1]
                )),
            }
        }
        let live = entries
            .iter()
            .map(|e| {
                let state = on_page.get(&e.def.id).copied().unwrap_or(e.state);
                (e.def.id, Live::new(e.def.clone(), state, true))
            })
            .collect();
        SequenceValues {
            file,
            inner: Mutex::new(Values {
                live,
                pages,
                generation,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Values> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next `n` values of sequence `id`.
    pub(crate) fn next_values(&self, id: u64, name: &str, n: usize) -> StorageResult<Vec<i64>> {
        let mut v = self.lock();
        let live = v.live.get_mut(&id).ok_or_else(|| gone(name))?;
        let (values, state) = live.def.advance(live.state, n)?;
        let mut reserve = false;
        if live.durable {
            if (n as u64) <= live.ahead {
                live.ahead -= n as u64;
            } else {
                let now = Instant::now();
                if live.last_reserve.is_some_and(|t| now - t < QUICK) {
                    live.batch = (live.batch * 2).min(MAX_BATCH);
                } else {
                    live.batch = MIN_BATCH;
                }
                live.last_reserve = Some(now);
                live.persisted = live.def.ahead(state, live.batch);
                live.ahead = live.batch;
                reserve = true;
            }
        }
        live.state = state;
        if reserve {
            self.write(&mut v)?;
        }
        Ok(values)
    }

    /// Sets sequence `id` (`setval`): its next value is `value + increment`,
    /// or `value` itself when `called` is false. Durable at once.
    pub(crate) fn set(&self, id: u64, name: &str, value: i64, called: bool) -> StorageResult<()> {
        let mut v = self.lock();
        let live = v.live.get_mut(&id).ok_or_else(|| gone(name))?;
        live.def.check_bounds(value)?;
        live.state = SeqState {
            last: value,
            called,
        };
        if live.durable {
            live.persisted = live.state;
            live.ahead = 0;
            self.write(&mut v)?;
        }
        Ok(())
    }

    /// The state of sequence `id` now (`pg_sequences.last_value`), if it exists.
    pub(crate) fn state(&self, id: u64) -> Option<SeqState> {
        self.lock().live.get(&id).map(|l| l.state)
    }

    /// A sequence created by an open transaction: usable at once, forgotten
    /// if the transaction rolls back ([`Self::forget`]).
    pub(crate) fn register(&self, def: SequenceDef) {
        let state = def.initial_state();
        self.lock()
            .live
            .insert(def.id, Live::new(def, state, false));
    }

    pub(crate) fn forget(&self, ids: &[u64]) {
        let mut v = self.lock();
        for id in ids {
            v.live.remove(id);
        }
    }

    /// The state a commit records in the catalog for sequence `id`: what a
    /// crash would restart it from.
    pub(crate) fn catalog_state(&self, id: u64) -> Option<SeqState> {
        self.lock()
            .live
            .get(&id)
            .map(|l| if l.durable { l.persisted } else { l.state })
    }

    /// After a commit switched the header: its new sequences become durable
    /// (their state is in the catalog just written), dropped ones go, and the
    /// sequence pages are known.
    pub(crate) fn committed(&self, created: &[u64], dropped: &[u64], pages: Option<[PageId; 2]>) {
        let mut v = self.lock();
        for id in dropped {
            v.live.remove(id);
        }
        for id in created {
            if let Some(l) = v.live.get_mut(id) {
                l.durable = true;
                l.persisted = l.state;
                l.ahead = 0;
            }
        }
        if v.pages.is_none() {
            v.pages = pages;
        }
    }

    /// Writes every durable sequence's `persisted` state to the next
    /// sequence page and syncs it.
    fn write(&self, v: &mut Values) -> StorageResult<()> {
        let Some(pages) = v.pages else {
            return Err(StorageError::Invalid(
                "sequence pages missing for a committed sequence".into(),
            ));
        };
        let generation = v.generation + 1;
        let page = pages[(generation % 2) as usize];
        let records: Vec<(u64, SeqState)> = v
            .live
            .iter()
            .filter(|(_, l)| l.durable)
            .map(|(id, l)| (*id, l.persisted))
            .collect();
        let ps = self.file.page_size();
        let mut buf = AlignedBuf::new(ps);
        encode_page(&mut buf, page, generation, &records)?;
        self.file.write_pages(page, &buf)?;
        self.file.sync()?;
        v.generation = generation;
        Ok(())
    }
}

impl Drop for SequenceValues {
    /// A clean close writes the exact states, so reopening skips no value.
    fn drop(&mut self) {
        let mut v = self.lock();
        let mut moved = false;
        for l in v.live.values_mut() {
            if l.durable && l.persisted != l.state {
                l.persisted = l.state;
                moved = true;
            }
        }
        if moved {
            if let Err(e) = self.write(&mut v) {
                tracing::warn!("sequence values not saved at close: {e}");
            }
        }
    }
}

impl Live {
    fn new(def: SequenceDef, state: SeqState, durable: bool) -> Live {
        Live {
            def,
            state,
            persisted: state,
            ahead: 0,
            durable,
            batch: MIN_BATCH,
            last_reserve: None,
        }
    }
}

fn gone(name: &str) -> StorageError {
    StorageError::Sequence {
        code: "42P01",
        message: format!("relation \"{name}\" does not exist"),
    }
}

/// Fills `buf` (one page) with a sequence page: magic, generation, count,
/// then one record per sequence.
pub(crate) fn encode_page(
    buf: &mut [u8],
    page: PageId,
    generation: u64,
    records: &[(u64, SeqState)],
) -> StorageResult<()> {
    if records.len() > capacity(buf.len()) {
        return Err(StorageError::TooLarge(format!(
            "too many sequences: a database holds at most {}",
            capacity(buf.len())
        )));
    }
    buf.fill(0);
    let p = &mut buf[PAGE_HEADER..];
    p[0..4].copy_from_slice(MAGIC);
    p[4..12].copy_from_slice(&generation.to_le_bytes());
    p[12..16].copy_from_slice(&(records.len() as u32).to_le_bytes());
    for (k, (id, s)) in records.iter().enumerate() {
        let r = &mut p[16 + k * RECORD..16 + (k + 1) * RECORD];
        r[0..8].copy_from_slice(&id.to_le_bytes());
        r[8..16].copy_from_slice(&s.last.to_le_bytes());
        r[16] = s.called as u8;
    }
    seal(buf, PageKind::Sequences, page);
    Ok(())
}

/// A sequence page's generation and states, or `None` when it is not a valid
/// sequence page (never written, torn, damaged).
fn read_page(file: &DbFile, page: PageId) -> Option<(u64, HashMap<u64, SeqState>)> {
    let mut buf = AlignedBuf::new(file.page_size());
    file.read_page(page, &mut buf).ok()?;
    decode_page(&buf)
}

fn decode_page(buf: &[u8]) -> Option<(u64, HashMap<u64, SeqState>)> {
    if crate::file::page::kind(buf) != Some(PageKind::Sequences) {
        return None;
    }
    let p = &buf[PAGE_HEADER..];
    if &p[0..4] != MAGIC {
        return None;
    }
    let generation = u64::from_le_bytes(p[4..12].try_into().ok()?);
    let count = u32::from_le_bytes(p[12..16].try_into().ok()?) as usize;
    if count > capacity(buf.len()) {
        return None;
    }
    let states = (0..count)
        .map(|k| {
            let r = &p[16 + k * RECORD..16 + (k + 1) * RECORD];
            let id = u64::from_le_bytes(r[0..8].try_into().unwrap());
            let last = i64::from_le_bytes(r[8..16].try_into().unwrap());
            (
                id,
                SeqState {
                    last,
                    called: r[16] != 0,
                },
            )
        })
        .collect();
    Some((generation, states))
}

/// The sequences as a write transaction sees them.
#[derive(Clone)]
pub(crate) struct TxnSequences {
    pub entries: std::collections::BTreeMap<String, SequenceEntry>,
    /// Created by this transaction (forgotten if it rolls back).
    pub created: Vec<u64>,
    /// Committed sequences this transaction dropped.
    pub dropped: Vec<u64>,
    pub next_id: u64,
    pub pages: Option<[PageId; 2]>,
}

impl TxnSequences {
    pub(crate) fn of(catalog: &crate::Catalog) -> TxnSequences {
        TxnSequences {
            entries: catalog.sequences.clone(),
            created: Vec::new(),
            dropped: Vec::new(),
            next_id: catalog.next_sequence_id,
            pages: catalog.sequence_pages,
        }
    }

    /// Removes sequence `name`, noting it for the commit.
    pub(crate) fn remove(&mut self, name: &str) -> Option<SequenceEntry> {
        let e = self.entries.remove(name)?;
        if !self.created.contains(&e.def.id) {
            self.dropped.push(e.def.id);
        }
        Some(e)
    }

    /// For the commit: the sequences this transaction created and kept, and
    /// those that are gone (dropped, or created and dropped again).
    pub(crate) fn outcome(&self) -> (Vec<u64>, Vec<u64>) {
        let live: std::collections::BTreeSet<u64> =
            self.entries.values().map(|e| e.def.id).collect();
        let (kept, gone): (Vec<u64>, Vec<u64>) =
            self.created.iter().partition(|id| live.contains(id));
        (kept, self.dropped.iter().copied().chain(gone).collect())
    }

    /// The sequences owned by a column of `table`.
    pub(crate) fn owned_by(&self, table: &str) -> Vec<String> {
        self.entries
            .values()
            .filter(|e| e.def.owned_by.as_ref().is_some_and(|o| o.table == table))
            .map(|e| e.def.name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(increment: i64, min: i64, max: i64, cycle: bool) -> SequenceDef {
        SequenceDef {
            name: "s".into(),
            id: 1,
            data_type: DataType::BigInt,
            type_name: "bigint".into(),
            start: if increment > 0 { min } else { max },
            increment,
            min,
            max,
            cycle,
            owned_by: None,
            identity: None,
        }
    }

    #[test]
    fn values_follow_increment_bounds_and_cycle() {
        let d = def(2, 1, 6, false);
        let (v, s) = d.advance(d.initial_state(), 3).unwrap();
        assert_eq!(v, vec![1, 3, 5]);
        let e = d.advance(s, 1).unwrap_err();
        assert!(e.to_string().contains("reached maximum value"), "{e}");
        let c = def(2, 1, 6, true);
        let (v, _) = c.advance(c.initial_state(), 5).unwrap();
        assert_eq!(v, vec![1, 3, 5, 1, 3]);
        let down = def(-1, 1, 3, false);
        let (v, s) = down.advance(down.initial_state(), 3).unwrap();
        assert_eq!(v, vec![3, 2, 1]);
        assert!(down.advance(s, 1).is_err());
        // Near i64::MAX the addition must not overflow.
        let big = def(i64::MAX, 0, i64::MAX, false);
        let (v, s) = big.advance(big.initial_state(), 2).unwrap();
        assert_eq!(v, vec![0, i64::MAX]);
        assert!(big.advance(s, 1).is_err());
    }

    #[test]
    fn reservation_stops_at_the_bound() {
        let d = def(1, 1, 10, false);
        let s = d.ahead(d.initial_state(), 100);
        assert_eq!(s.last, 10);
    }

    #[test]
    fn pages_round_trip_and_reject_damage() {
        let mut buf = vec![0u8; 4096];
        let recs = vec![
            (
                7,
                SeqState {
                    last: -5,
                    called: true,
                },
            ),
            (
                9,
                SeqState {
                    last: 1,
                    called: false,
                },
            ),
        ];
        encode_page(&mut buf, 3, 42, &recs).unwrap();
        assert!(crate::file::page::verify(&buf).is_ok());
        let (g, states) = decode_page(&buf).unwrap();
        assert_eq!(g, 42);
        assert_eq!(states[&7], recs[0].1);
        assert_eq!(states[&9], recs[1].1);
        let too_many: Vec<_> = (0..capacity(4096) as u64 + 1)
            .map(|i| (i, recs[0].1))
            .collect();
        assert!(encode_page(&mut buf, 3, 1, &too_many).is_err());
    }
}
