//! The 3C miss model (Hill & Smith; paper 002's proposal): a miss is *compulsory* on
//! a line's first touch, *capacity* if a fully-associative LRU cache of the same size
//! would have missed too, else *conflict* — the set mapping, not the size, lost it.
//!
//! One table answers both questions: per line, "never seen", "seen, not in the
//! shadow", or its slot in the shadow's LRU list. Lines are grouped in pages of
//! 4096 neighbours, each a directly indexed array, found through a hash map with
//! the last page remembered — address streams touch neighbouring lines, so most
//! lookups index an array instead of hashing, and one lookup serves the seen-set
//! and the shadow at once.

use crate::util::idmap::{id_map_with_capacity, IdMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissClass {
    Compulsory,
    Capacity,
    Conflict,
    /// Classification is off for this level.
    Unclassified,
}

/// Lines per page of the table.
const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;
/// Table value of a line never seen.
const NEVER: u32 = u32::MAX;
/// Table value of a line seen but not in the shadow.
const OUT: u32 = u32::MAX - 1;
/// No slot (end of the shadow's list).
const NIL: u32 = u32::MAX;

/// Entries of the recently-used-page cache.
const RECENT: usize = 16;

/// Pages kept before the table checks that they are not mostly empty.
const SPARSE_CHECK_PAGES: usize = 256;

/// Line → [`NEVER`], [`OUT`] or a shadow slot: page by page while the lines are
/// dense enough; hashed line by line once pages would be mostly empty (scattered
/// addresses would otherwise cost a page per line).
enum LineTable {
    Paged {
        index: IdMap<u32>,
        pages: Vec<Box<[u32]>>,
        /// Pages looked up recently and their positions in `pages`, by the low bits
        /// of the page number (a small direct-mapped cache in front of `index`).
        recent: Box<[(u64, u32); RECENT]>,
    },
    Hashed(IdMap<u32>),
}

impl LineTable {
    fn new() -> Self {
        LineTable::Paged {
            index: id_map_with_capacity(64),
            pages: Vec::new(),
            recent: Box::new([(u64::MAX, 0); RECENT]),
        }
    }

    /// The entry of `line` ([`NEVER`] on first use). `distinct` (lines seen) lets
    /// a new page check that pages are not mostly empty.
    #[inline]
    fn entry(&mut self, line: u64, distinct: usize) -> &mut u32 {
        if let LineTable::Paged {
            index,
            pages,
            recent,
        } = self
        {
            let page = line >> PAGE_BITS;
            let cached = &mut recent[page as usize % RECENT];
            let known = match *cached {
                (p, at) if p == page => Some(at as usize),
                _ => index.get(&page).map(|&at| at as usize),
            };
            let sparse = pages.len() >= SPARSE_CHECK_PAGES && pages.len() * PAGE > 16 * distinct;
            if known.is_some() || !sparse {
                let at = known.unwrap_or_else(|| {
                    pages.push(vec![NEVER; PAGE].into_boxed_slice());
                    index.insert(page, (pages.len() - 1) as u32);
                    pages.len() - 1
                });
                *cached = (page, at as u32);
                // Re-borrow through the match so the entry outlives this block.
                let LineTable::Paged { pages, .. } = self else {
                    unreachable!()
                };
                return &mut pages[at][line as usize & (PAGE - 1)];
            }
            self.switch_to_hashing();
        }
        match self {
            LineTable::Hashed(map) => map.entry(line).or_insert(NEVER),
            LineTable::Paged { .. } => unreachable!("switched to hashing above"),
        }
    }

    /// Moves every seen line from the pages into a hash map.
    fn switch_to_hashing(&mut self) {
        if let LineTable::Paged { index, pages, .. } = self {
            let mut map = id_map_with_capacity(pages.len() * 16);
            for (&page, &at) in index.iter() {
                for (i, &v) in pages[at as usize].iter().enumerate() {
                    if v != NEVER {
                        map.insert(page << PAGE_BITS | i as u64, v);
                    }
                }
            }
            *self = LineTable::Hashed(map);
        }
    }

    fn get(&self, line: u64) -> u32 {
        match self {
            LineTable::Paged { index, pages, .. } => index
                .get(&(line >> PAGE_BITS))
                .map_or(NEVER, |&at| pages[at as usize][line as usize & (PAGE - 1)]),
            LineTable::Hashed(map) => map.get(&line).copied().unwrap_or(NEVER),
        }
    }
}

/// Watches the line stream reaching one level.
pub struct Classifier {
    table: LineTable,
    /// Lines ever seen.
    distinct: usize,
    /// The fully-associative LRU shadow with the level's number of lines: a doubly
    /// linked list over slots, most recent at `head`.
    lines: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    capacity: usize,
}

impl Classifier {
    pub fn new(lines: usize) -> Self {
        Self {
            table: LineTable::new(),
            distinct: 0,
            lines: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NIL,
            tail: NIL,
            // Slots are u32 below the two table markers.
            capacity: lines.clamp(1, OUT as usize - 1),
        }
    }

    fn unlink(&mut self, slot: u32) {
        let (p, n) = (self.prev[slot as usize], self.next[slot as usize]);
        match p {
            NIL => self.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NIL => self.tail = p,
            n => self.prev[n as usize] = p,
        }
    }

    fn push_front(&mut self, slot: u32) {
        self.prev[slot as usize] = NIL;
        self.next[slot as usize] = self.head;
        match self.head {
            NIL => self.tail = slot,
            h => self.prev[h as usize] = slot,
        }
        self.head = slot;
    }

    /// Records an access to `line`; for a miss of the real cache, says which kind.
    #[inline]
    pub fn observe(&mut self, line: u64, missed: bool) -> Option<MissClass> {
        let state = *self.table.entry(line, self.distinct);
        let first = state == NEVER;
        let shadow_hit = state < OUT;
        if shadow_hit {
            if self.head != state {
                self.unlink(state);
                self.push_front(state);
            }
        } else {
            if first {
                self.distinct += 1;
            }
            let slot = if self.lines.len() < self.capacity {
                self.lines.push(line);
                self.prev.push(NIL);
                self.next.push(NIL);
                (self.lines.len() - 1) as u32
            } else {
                // The least recent line leaves the shadow (it stays seen).
                let slot = self.tail;
                self.unlink(slot);
                let evicted = self.lines[slot as usize];
                *self.table.entry(evicted, self.distinct) = OUT;
                self.lines[slot as usize] = line;
                slot
            };
            self.push_front(slot);
            *self.table.entry(line, self.distinct) = slot;
        }
        missed.then_some(if first {
            MissClass::Compulsory
        } else if !shadow_hit {
            MissClass::Capacity
        } else {
            MissClass::Conflict
        })
    }

    /// Empties the shadow (the real cache was flushed); first touches are kept.
    pub fn flush(&mut self) {
        for i in 0..self.lines.len() {
            let line = self.lines[i];
            *self.table.entry(line, self.distinct) = OUT;
        }
        self.lines.clear();
        self.prev.clear();
        self.next.clear();
        (self.head, self.tail) = (NIL, NIL);
    }

    /// Lines touched so far.
    pub fn distinct_lines(&self) -> usize {
        self.distinct
    }

    /// Whether the fully-associative shadow holds `line` (for tests and reports).
    pub fn shadow_holds(&self, line: u64) -> bool {
        self.table.get(line) < OUT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_is_lru_and_seen_lines_stay_seen() {
        let mut c = Classifier::new(2);
        assert_eq!(c.observe(1, true), Some(MissClass::Compulsory));
        assert_eq!(c.observe(2, true), Some(MissClass::Compulsory));
        assert_eq!(c.observe(1, true), Some(MissClass::Conflict)); // in the shadow
        assert_eq!(c.observe(3, false), None); // a hit: not classified, 2 leaves
        assert!(c.shadow_holds(1) && c.shadow_holds(3) && !c.shadow_holds(2));
        assert_eq!(c.observe(2, true), Some(MissClass::Capacity));
        // lines far apart live on different pages
        assert_eq!(c.observe(1 << 40, true), Some(MissClass::Compulsory));
        assert_eq!(c.distinct_lines(), 4);
        c.flush();
        assert!(!c.shadow_holds(2));
        assert_eq!(c.observe(2, true), Some(MissClass::Capacity));
        assert_eq!(c.observe(2, true), Some(MissClass::Conflict));
    }

    #[test]
    fn scattered_lines_switch_the_table_to_hashing_with_the_same_answers() {
        let mut c = Classifier::new(100);
        // one line per page: pages would be almost empty
        let line = |i: u64| i << 20 | i;
        for i in 0..1000 {
            assert_eq!(c.observe(line(i), true), Some(MissClass::Compulsory));
        }
        assert!(matches!(c.table, LineTable::Hashed(_)));
        assert_eq!(c.observe(line(999), true), Some(MissClass::Conflict));
        assert_eq!(c.observe(line(0), true), Some(MissClass::Capacity));
        assert!(c.shadow_holds(line(0)) && !c.shadow_holds(line(1)));
        assert_eq!(c.distinct_lines(), 1000);
    }
}
