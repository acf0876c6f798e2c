//! The two header slots that name the committed state: their layout, their
//! checksums, and how opening tells an interrupted commit from a damaged one.
//!
//! # Layout
//!
//! Page 0 holds two 4 KiB slots, slot 0 at file offset 0 and slot 1 at 4096.
//! Commit number `g` is always written to slot `g % 2`, so the slot not being
//! written holds the previous commit. A slot is eight 512-byte sectors; every
//! sector carries its own CRC-32 (over the rest of the sector), the magic, its
//! slot number, its sector number and the whole header (format version, commit
//! number, page size, catalog root, page count); the rest of each sector is
//! zero padding, checksummed like everything else, so the eight checksums
//! together cover every byte of the slot.
//!
//! # Commit protocol
//!
//! A commit writes its new pages (never a page the committed state uses), syncs
//! them, then writes the whole slot `g % 2` and syncs again. Commit `g` is
//! acknowledged only after that second sync, when all eight sectors of its slot
//! are on disk holding its header.
//!
//! # Why per-sector checksums
//!
//! A single checksum over the slot cannot tell the two failures apart that must
//! be treated oppositely:
//!
//! * a crash while slot `g % 2` was being written (a torn write): commit `g` was
//!   never acknowledged, the other slot's commit `g - 1` is the right state and
//!   nothing committed is lost — the database must open as usual;
//! * damage to the slot of an acknowledged commit `g` (a flipped bit, a bad
//!   sector): opening the other slot would silently lose commit `g` — the open
//!   must fail and name the slot, unless the user asks for that fallback.
//!
//! Disks write a 512-byte sector atomically, so a torn slot write leaves every
//! sector intact but holding either the old or the new content: the sectors'
//! headers *disagree*. Damage after a completed write instead makes some
//! sectors fail their checksum while every intact one holds the same header.
//! That header's commit number, compared with the other slot's, says whether
//! the damaged slot was the active one (higher) or the spare (lower). A flipped
//! byte in a commit number fails that sector's checksum, so the number is read
//! from the other seven sectors; only when no sector is intact is the number
//! unknown, and then the slot might be the newer one, so the open fails as well.
//!
//! Sectors are compared by their whole header, not only the commit number,
//! because one commit number can be written to a slot twice with different
//! contents: after an interrupted commit (or a failed header write) the next
//! commit reuses the number, and after a header recovery the damaged slot is
//! rewritten with the number of the commit it lost. A write torn between two
//! such versions must read as interrupted; with commit numbers alone it would
//! pass as complete and could name a catalog whose pages the second attempt
//! has since reused.
//!
//! The classification errs on the side of an error: a write torn *inside* a
//! sector (a disk that breaks sector atomicity) looks like damage to the new
//! slot and is reported as such; the recovery option then opens commit `g - 1`,
//! which is exactly the state before the interrupted commit.
//!
//! # Recovery
//!
//! With header recovery requested, a damaged active slot is given up: the other
//! slot's commit opens, a warning names the lost commit, and once that state's
//! catalog has loaded the damaged slot is rewritten with it (as the next commit
//! number) so the file opens normally afterwards. The older state is only as
//! good as its pages: a commit interrupted before its header write may have
//! reused pages that only the older state still referenced, and reading those
//! fails their checksums or shows that commit's contents.

use super::aligned::AlignedBuf;
use super::{PageId, FORMAT_VERSION, OLDEST_FORMAT_VERSION};

/// Bytes of one header slot.
pub const SLOT_SIZE: usize = 4096;
/// Bytes of one sector of a slot (the unit a disk writes atomically).
const SECTOR: usize = 512;
/// Sectors per slot.
const SECTORS: usize = SLOT_SIZE / SECTOR;
/// Identifies a kura database file (unchanged since format version 1).
pub const MAGIC: &[u8; 8] = b"KURADB\0\x01";

/// The committed root of the database, as recorded in a header slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub page_size: u32,
    /// The commit number: incremented by every commit, which writes slot
    /// `generation % 2`.
    pub generation: u64,
    /// First page of the catalog blob, 0 for an empty catalog.
    pub catalog_root: PageId,
    /// Pages in use by the committed state's file extent (the file may be longer
    /// after an interrupted load; those pages are unreferenced and reused).
    pub page_count: u64,
}

impl Header {
    /// The slot this header is written to.
    pub fn slot(&self) -> usize {
        (self.generation % 2) as usize
    }

    /// The 4 KiB image of this header's slot.
    pub fn encode(&self) -> AlignedBuf {
        let slot = self.slot();
        let mut b = AlignedBuf::new(SLOT_SIZE);
        for (k, s) in b.chunks_mut(SECTOR).enumerate() {
            s[4..12].copy_from_slice(MAGIC);
            s[12..16].copy_from_slice(&self.version.to_le_bytes());
            s[16..24].copy_from_slice(&self.generation.to_le_bytes());
            s[24] = slot as u8;
            s[25] = k as u8;
            s[32..36].copy_from_slice(&self.page_size.to_le_bytes());
            s[36..44].copy_from_slice(&self.catalog_root.to_le_bytes());
            s[44..52].copy_from_slice(&self.page_count.to_le_bytes());
            let crc = crc32fast::hash(&s[4..]);
            s[0..4].copy_from_slice(&crc.to_le_bytes());
        }
        b
    }
}

/// What one slot holds, as read at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Every sector intact and holding the same header.
    Valid(Header),
    /// Intact sectors hold different headers: a write of this slot never
    /// completed; `newest` is the highest commit number among them (the
    /// commit that was being written).
    Interrupted { newest: u64, bad: Vec<usize> },
    /// Some sectors (`bad`) fail their checksum; the intact ones, if any, all
    /// hold the header of commit `generation`.
    Damaged {
        generation: Option<u64>,
        bad: Vec<usize>,
    },
    /// A kura header of another format version.
    OtherVersion(u32),
    /// No kura header at all.
    Foreign,
}

/// Classifies the 4 KiB image `b` of slot `index`.
pub fn decode(index: usize, b: &[u8]) -> Slot {
    debug_assert_eq!(b.len(), SLOT_SIZE);
    if let Some(v) = decode_v1(b) {
        return Slot::OtherVersion(v);
    }
    let mut intact: Vec<Header> = Vec::new();
    let mut bad = Vec::new();
    let mut any_magic = false;
    for (k, s) in b.chunks(SECTOR).enumerate() {
        any_magic |= &s[4..12] == MAGIC;
        match decode_sector(index, k, s) {
            Ok(h) => intact.push(h),
            Err(Some(v)) => return Slot::OtherVersion(v),
            Err(None) => bad.push(k),
        }
    }
    if !any_magic {
        return Slot::Foreign;
    }
    // One complete write leaves the same header in every intact sector.
    if intact.iter().any(|h| *h != intact[0]) {
        let newest = intact
            .iter()
            .map(|h| h.generation)
            .max()
            .unwrap_or_default();
        return Slot::Interrupted { newest, bad };
    }
    match intact.first() {
        Some(h) if bad.is_empty() => Slot::Valid(*h),
        h => Slot::Damaged {
            generation: h.map(|h| h.generation),
            bad,
        },
    }
}

/// The header in sector `k` of slot `index` if the sector is intact;
/// `Err(Some(v))` for an intact sector of format version `v`.
fn decode_sector(index: usize, k: usize, s: &[u8]) -> Result<Header, Option<u32>> {
    let crc = u32::from_le_bytes(s[0..4].try_into().unwrap());
    if crc != crc32fast::hash(&s[4..]) || &s[4..12] != MAGIC {
        return Err(None);
    }
    let u32_at = |o: usize| u32::from_le_bytes(s[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(s[o..o + 8].try_into().unwrap());
    let version = u32_at(12);
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Some(version));
    }
    let header = Header {
        version,
        generation: u64_at(16),
        page_size: u32_at(32),
        catalog_root: u64_at(36),
        page_count: u64_at(44),
    };
    // A sector that is intact but in the wrong place (or names a commit that
    // does not belong in this slot) counts as damage, not as a commit.
    if s[24] as usize != index || s[25] as usize != k || header.slot() != index {
        return Err(None);
    }
    Ok(header)
}

/// The version of a format-1 slot (one CRC over the whole slot).
fn decode_v1(b: &[u8]) -> Option<u32> {
    let crc = u32::from_le_bytes(b[0..4].try_into().unwrap());
    if crc != crc32fast::hash(&b[4..SLOT_SIZE]) || &b[4..12] != MAGIC {
        return None;
    }
    Some(u32::from_le_bytes(b[12..16].try_into().unwrap()))
}

/// The outcome of choosing between the two slots.
#[derive(Debug)]
pub struct Chosen {
    pub header: Header,
    /// Things the user should know (a damaged spare slot, an interrupted
    /// commit, a recovery).
    pub warnings: Vec<String>,
    /// A header to write once the opened state has loaded: the recovered state,
    /// over the damaged slot, so later opens need no recovery.
    pub repair: Option<Header>,
}

/// Why the database cannot be opened.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a kura database at all.
    NotADatabase(String),
    /// A kura database of format version `.0`, which this build does not read.
    Version(u32),
    /// A kura database whose header needs attention.
    Damaged(String),
}

/// File offset and extent of slot `i`, for messages.
fn where_slot(i: usize) -> String {
    format!(
        "header slot {i} (file offset {}..{})",
        i * SLOT_SIZE,
        (i + 1) * SLOT_SIZE
    )
}

/// The damaged sectors of slot `i`, with their file offsets, for messages.
fn describe_bad(i: usize, bad: &[usize]) -> String {
    let list: Vec<String> = bad
        .iter()
        .map(|k| {
            let off = i * SLOT_SIZE + k * SECTOR;
            format!("{k} at offset {off}")
        })
        .collect();
    format!(
        "{} of {SECTORS} sectors fail their checksum ({})",
        bad.len(),
        list.join(", ")
    )
}

/// Picks the committed header from the two slots; `recover` allows falling
/// back to the older slot when the newest one is damaged.
pub fn choose(slots: [Slot; 2], recover: bool) -> Result<Chosen, Refusal> {
    if let Some(v) = slots.iter().find_map(|s| match s {
        Slot::OtherVersion(v) => Some(*v),
        _ => None,
    }) {
        return Err(Refusal::Version(v));
    }
    let valid: Vec<(usize, Header)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Slot::Valid(h) => Some((i, *h)),
            _ => None,
        })
        .collect();
    match valid.as_slice() {
        [(_, a), (_, b)] => Ok(Chosen {
            header: if a.generation >= b.generation { *a } else { *b },
            warnings: Vec::new(),
            repair: None,
        }),
        [(j, h)] => {
            let i = 1 - j;
            other_slot_not_valid(i, &slots[i], *j, *h, recover)
        }
        _ => {
            if slots.iter().all(|s| *s == Slot::Foreign) {
                return Err(Refusal::NotADatabase("no kura header".into()));
            }
            let each: Vec<String> = slots
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{} {}", where_slot(i), state(i, s)))
                .collect();
            Err(Refusal::Damaged(format!(
                "neither header slot is intact, so the committed state cannot be found: {}",
                each.join("; ")
            )))
        }
    }
}

/// What is wrong with a slot that is not valid, for messages.
fn state(i: usize, s: &Slot) -> String {
    match s {
        Slot::Valid(h) => format!("holds commit {}", h.generation),
        Slot::Interrupted { newest, .. } => {
            format!("holds an interrupted write of commit {newest}")
        }
        Slot::Damaged {
            generation: Some(g),
            bad,
        } => format!("holds commit {g} but {}", describe_bad(i, bad)),
        Slot::Damaged {
            generation: None,
            bad,
        } => format!(
            "is damaged and its commit number is unreadable: {}",
            describe_bad(i, bad)
        ),
        Slot::OtherVersion(v) => format!("has format version {v}"),
        Slot::Foreign => "holds no kura header".into(),
    }
}

/// Slot `j` holds `h`; slot `i` is not valid. Decides whether opening `h` is
/// safe, needs the user's consent, or is only worth a warning.
fn other_slot_not_valid(
    i: usize,
    other: &Slot,
    j: usize,
    h: Header,
    recover: bool,
) -> Result<Chosen, Refusal> {
    let g = h.generation;
    let open = |warning: String| {
        Ok(Chosen {
            header: h,
            warnings: vec![warning],
            repair: None,
        })
    };
    // The commit the damaged slot may hold that `h` does not have.
    let lost = match other {
        Slot::Interrupted { newest, .. } if *newest == g + 1 => {
            return open(format!(
                "{} holds an interrupted write of commit {newest}: that commit never completed, \
                 so the database opens at commit {g} (slot {j}) and nothing committed is lost; \
                 the next commit rewrites the slot",
                where_slot(i)
            ));
        }
        Slot::Interrupted { newest, .. }
        | Slot::Damaged {
            generation: Some(newest),
            ..
        } if *newest < g => {
            return open(format!(
                "{} (the spare slot, with the older commit {newest}) is damaged: {}; \
                 the database opens normally at commit {g} (slot {j}) and the next commit \
                 rewrites the damaged slot",
                where_slot(i),
                state(i, other)
            ));
        }
        Slot::Damaged {
            generation: Some(n),
            ..
        }
        | Slot::Interrupted { newest: n, .. } => format!("commit {n}"),
        _ => format!(
            "whatever commit it held (commit {} if it was the newest)",
            g + 1
        ),
    };
    let what = format!(
        "{} {}, and slot {j} holds only commit {g}",
        where_slot(i),
        state(i, other)
    );
    if !recover {
        return Err(Refusal::Damaged(format!(
            "{what}. Opening commit {g} would lose {lost}, so the database is not opened; \
             to open commit {g} anyway and give up {lost}, use header recovery \
             (--recover-header)"
        )));
    }
    let repair = Header {
        generation: g + 1,
        ..h
    };
    Ok(Chosen {
        header: repair,
        warnings: vec![format!(
            "header recovery: {what}. Opened commit {g}; {lost} is lost. Slot {i} was rewritten \
             with this state as commit {}",
            g + 1
        )],
        repair: Some(repair),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(generation: u64) -> Header {
        Header {
            version: FORMAT_VERSION,
            page_size: 16384,
            generation,
            catalog_root: 7,
            page_count: 9,
        }
    }

    fn slots(a: &[u8], b: &[u8]) -> [Slot; 2] {
        [decode(0, a), decode(1, b)]
    }

    #[test]
    fn encode_decode_round_trip_and_slot_parity() {
        let h = header(5);
        assert_eq!(h.slot(), 1);
        assert_eq!(decode(1, &h.encode()), Slot::Valid(h));
        // The same image in the wrong slot is not a valid header there.
        assert!(matches!(
            decode(0, &h.encode()),
            Slot::Damaged {
                generation: None,
                ..
            }
        ));
    }

    #[test]
    fn every_sector_mix_of_a_torn_write_is_an_interrupted_commit() {
        let old = header(4).encode().to_vec();
        let new = header(6).encode().to_vec();
        let spare = header(5).encode().to_vec();
        for mask in 1..(1u32 << SECTORS) - 1 {
            let mut torn = old.clone();
            for k in 0..SECTORS {
                if mask & (1 << k) != 0 {
                    torn[k * SECTOR..(k + 1) * SECTOR]
                        .copy_from_slice(&new[k * SECTOR..(k + 1) * SECTOR]);
                }
            }
            let chosen = choose(slots(&torn, &spare), false).unwrap();
            assert_eq!(chosen.header, header(5), "mask {mask:#x}");
            assert!(chosen.warnings[0].contains("interrupted write of commit 6"));
            assert!(chosen.repair.is_none());
        }
    }

    #[test]
    fn sectors_of_two_writes_of_one_commit_number_are_not_one_header() {
        let first = header(6).encode().to_vec();
        let second = Header {
            catalog_root: 8,
            ..header(6)
        }
        .encode()
        .to_vec();
        let spare = header(5).encode().to_vec();
        let mut mixed = first.clone();
        mixed[SLOT_SIZE - SECTOR..].copy_from_slice(&second[SLOT_SIZE - SECTOR..]);
        assert_eq!(
            decode(0, &mixed),
            Slot::Interrupted {
                newest: 6,
                bad: vec![]
            }
        );
        let chosen = choose(slots(&mixed, &spare), false).unwrap();
        assert_eq!(chosen.header, header(5));
    }

    #[test]
    fn damaged_active_slot_needs_recovery() {
        let mut active = header(6).encode().to_vec();
        let spare = header(5).encode().to_vec();
        active[100] ^= 1;
        match choose(slots(&active, &spare), false) {
            Err(Refusal::Damaged(m)) => {
                assert!(m.contains("header slot 0 (file offset 0..4096)"), "{m}");
                assert!(m.contains("commit 6"), "{m}");
                assert!(m.contains("--recover-header"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        let chosen = choose(slots(&active, &spare), true).unwrap();
        assert_eq!(chosen.header.generation, 6);
        assert_eq!(chosen.header.catalog_root, 7);
        assert_eq!(chosen.repair, Some(chosen.header));
        assert!(chosen.warnings[0].contains("commit 6 is lost"));
    }

    #[test]
    fn damaged_spare_slot_opens_with_a_warning() {
        let active = header(6).encode().to_vec();
        let mut spare = header(5).encode().to_vec();
        spare[4096 - 1] ^= 0x80;
        let chosen = choose(slots(&active, &spare), false).unwrap();
        assert_eq!(chosen.header, header(6));
        assert!(chosen.warnings[0].contains("spare slot"));
    }

    #[test]
    fn unreadable_commit_number_is_not_guessed() {
        let active = header(6).encode().to_vec();
        let spare = vec![0u8; SLOT_SIZE];
        let mut wiped = spare.clone();
        wiped[4..12].copy_from_slice(MAGIC);
        assert!(matches!(
            choose(slots(&active, &wiped), false),
            Err(Refusal::Damaged(_))
        ));
        assert!(matches!(
            choose(slots(&active, &spare), false),
            Err(Refusal::Damaged(_))
        ));
        assert!(matches!(
            choose(slots(&spare, &spare), false),
            Err(Refusal::NotADatabase(_))
        ));
    }
}
