//! The on-page layout of B+tree nodes (paper 003): slotted leaf pages with one
//! shared key prefix per page, and inner pages of child page ids with shortened
//! separator keys. Nodes are written once by the bulk builder and then only read,
//! so the layout is packed (no free space management).
//!
//! Payload layout (after the 16-byte page header, which carries the checksum):
//! ```text
//! 0..2   magic "BT"          2      level (0 = leaf)      3  offset width (2 or 4)
//! 4..8   count (entries of a leaf, children of an inner node)
//! 8..16  next leaf (0 = last)      16..24 previous leaf (0 = first)
//! 24..26 prefix length (leaves)    26..32 reserved
//! leaf:  prefix bytes, offsets[count + 1], entry suffixes
//! inner: child ids (u64)[count], offsets[count + 1], separators (separator 0 is empty)
//! ```
//! Offsets are relative to the start of the data area that follows them; their
//! width is 2 bytes for payloads up to 64 KiB and 4 bytes above.

use std::cmp::Ordering;

use super::key::{entry_row_id, ROW_ID_BYTES};
use crate::file::PageId;

pub const MAGIC: &[u8; 2] = b"BT";
pub const HEADER: usize = 32;

/// Offset width for a payload of `payload` bytes.
pub fn offset_width(payload: usize) -> usize {
    if payload <= u16::MAX as usize {
        2
    } else {
        4
    }
}

/// Why a page is not a valid node (the caller adds path and page id).
pub type NodeError = String;

/// A read-only view of a node's payload.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    page: &'a [u8],
    level: u8,
    width: usize,
    count: usize,
    /// Start of the offsets array.
    offs: usize,
    /// Start of the data area.
    data: usize,
    prefix: &'a [u8],
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl<'a> Node<'a> {
    /// Checks the header and offsets' frame and returns the view.
    pub fn parse(page: &'a [u8]) -> Result<Node<'a>, NodeError> {
        if page.len() < HEADER || &page[0..2] != MAGIC {
            return Err("not a B+tree index node".into());
        }
        let level = page[2];
        let width = page[3] as usize;
        if width != 2 && width != 4 {
            return Err(format!("index node has offset width {width}"));
        }
        let count = u32::from_le_bytes(page[4..8].try_into().unwrap()) as usize;
        let prefix_len = u16::from_le_bytes(page[24..26].try_into().unwrap()) as usize;
        let (prefix, offs) = if level == 0 {
            (
                page.get(HEADER..HEADER + prefix_len)
                    .ok_or("index leaf prefix exceeds the page")?,
                HEADER + prefix_len,
            )
        } else {
            (&page[0..0], HEADER + 8 * count)
        };
        let data = offs + width * (count + 1);
        if data > page.len() {
            return Err(format!(
                "index node claims {count} entries, more than the page holds"
            ));
        }
        let node = Node {
            page,
            level,
            width,
            count,
            offs,
            data,
            prefix,
        };
        // O(1) checks only: the page checksum already vouches for the contents, and
        // a node is parsed on every visit. Accessors below never panic on bad offsets.
        if data + node.offset(count) > page.len() {
            return Err("index node offsets exceed the page".into());
        }
        Ok(node)
    }

    pub fn level(&self) -> u8 {
        self.level
    }

    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }

    /// Entries of a leaf, children of an inner node.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn next_leaf(&self) -> Option<PageId> {
        Some(read_u64(self.page, 8)).filter(|&p| p != 0)
    }

    pub fn prev_leaf(&self) -> Option<PageId> {
        Some(read_u64(self.page, 16)).filter(|&p| p != 0)
    }

    fn offset(&self, i: usize) -> usize {
        let at = self.offs + i * self.width;
        if self.width == 2 {
            u16::from_le_bytes(self.page[at..at + 2].try_into().unwrap()) as usize
        } else {
            u32::from_le_bytes(self.page[at..at + 4].try_into().unwrap()) as usize
        }
    }

    /// The stored bytes of slot `i` (an entry's suffix after the leaf prefix, or a
    /// separator).
    fn slot(&self, i: usize) -> &'a [u8] {
        self.page
            .get(self.data + self.offset(i)..self.data + self.offset(i + 1))
            .unwrap_or(&[])
    }

    /// Shared prefix of every entry in a leaf.
    pub fn prefix(&self) -> &'a [u8] {
        self.prefix
    }

    /// Suffix of entry `i` of a leaf (the entry is `prefix() ++ suffix(i)`).
    pub fn suffix(&self, i: usize) -> &'a [u8] {
        self.slot(i)
    }

    /// Full bytes of leaf entry `i`.
    pub fn entry(&self, i: usize) -> Vec<u8> {
        let mut e = self.prefix.to_vec();
        e.extend_from_slice(self.slot(i));
        e
    }

    /// Row id of leaf entry `i` (its last 8 bytes; the suffix always holds them
    /// because entries of one leaf are distinct).
    pub fn row_id(&self, i: usize) -> u64 {
        let s = self.slot(i);
        if s.len() >= ROW_ID_BYTES {
            entry_row_id(s)
        } else {
            let e = self.entry(i);
            if e.len() >= ROW_ID_BYTES {
                entry_row_id(&e)
            } else {
                u64::MAX
            }
        }
    }

    /// Child `i` of an inner node.
    pub fn child(&self, i: usize) -> PageId {
        read_u64(self.page, HEADER + 8 * i)
    }

    /// Separator `i` of an inner node: every entry of child `i` is ≥ it and every
    /// entry of child `i - 1` is < it. Separator 0 is empty (no lower limit).
    pub fn separator(&self, i: usize) -> &'a [u8] {
        self.slot(i)
    }

    /// Position of the first leaf entry ≥ `probe` (`count()` if none).
    pub fn lower_bound(&self, probe: &[u8]) -> usize {
        // The shared prefix decides for the whole leaf unless the probe runs past it.
        let p = self.prefix;
        let n = p.len().min(probe.len());
        match cmp_bytes(&p[..n], &probe[..n]) {
            Ordering::Less => return self.count,
            Ordering::Greater => return 0,
            Ordering::Equal if probe.len() < p.len() => return 0,
            Ordering::Equal => {}
        }
        let rest = &probe[p.len()..];
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cmp_bytes(self.slot(mid), rest) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Compares leaf entry `i` with `probe`.
    pub fn cmp_entry(&self, i: usize, probe: &[u8]) -> Ordering {
        let p = self.prefix;
        let n = p.len().min(probe.len());
        match cmp_bytes(&p[..n], &probe[..n]) {
            Ordering::Equal if probe.len() >= p.len() => cmp_bytes(self.slot(i), &probe[p.len()..]),
            // The probe is a proper prefix of the shared prefix: every entry is larger.
            Ordering::Equal => Ordering::Greater,
            o => o,
        }
    }

    /// Whether leaf entry `i` starts with `probe`.
    pub fn entry_starts_with(&self, i: usize, probe: &[u8]) -> bool {
        let p = self.prefix;
        if probe.len() <= p.len() {
            p.starts_with(probe)
        } else {
            probe.starts_with(p) && self.slot(i).starts_with(&probe[p.len()..])
        }
    }

    /// Index of the child of an inner node that holds the first entry ≥ `probe`
    /// (or, if no entry is ≥ `probe` in this subtree, its last child).
    pub fn child_for(&self, probe: &[u8]) -> usize {
        // Last child whose separator is ≤ probe; separator 0 is the lower limit.
        let (mut lo, mut hi) = (1, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cmp_bytes(self.separator(mid), probe) != Ordering::Greater {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - 1
    }
}

/// Byte-string order (as `<[u8]>::cmp`), eight bytes at a time: keys are short,
/// and this beats a `memcmp` call per comparison in node searches.
#[inline]
pub fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().unwrap());
        let y = u64::from_be_bytes(b[i..i + 8].try_into().unwrap());
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// Serialises a leaf: `entries` share `prefix` (already stripped from them).
pub fn write_leaf(buf: &mut [u8], prefix: &[u8], suffixes: &[&[u8]], next: PageId, prev: PageId) {
    let width = offset_width(buf.len());
    write_header(buf, 0, width, suffixes.len(), next, prev);
    buf[24..26].copy_from_slice(&(prefix.len() as u16).to_le_bytes());
    buf[HEADER..HEADER + prefix.len()].copy_from_slice(prefix);
    write_slots(buf, HEADER + prefix.len(), width, suffixes);
}

/// Serialises an inner node of `level` with `children` and their separators
/// (`separators[0]` is ignored and stored empty).
pub fn write_inner(buf: &mut [u8], level: u8, children: &[PageId], separators: &[&[u8]]) {
    let width = offset_width(buf.len());
    write_header(buf, level, width, children.len(), 0, 0);
    for (i, c) in children.iter().enumerate() {
        buf[HEADER + 8 * i..HEADER + 8 * i + 8].copy_from_slice(&c.to_le_bytes());
    }
    let mut seps: Vec<&[u8]> = separators.to_vec();
    if let Some(first) = seps.first_mut() {
        *first = &[];
    }
    write_slots(buf, HEADER + 8 * children.len(), width, &seps);
}

fn write_header(buf: &mut [u8], level: u8, width: usize, count: usize, next: PageId, prev: PageId) {
    buf[0..2].copy_from_slice(MAGIC);
    buf[2] = level;
    buf[3] = width as u8;
    buf[4..8].copy_from_slice(&(count as u32).to_le_bytes());
    buf[8..16].copy_from_slice(&next.to_le_bytes());
    buf[16..24].copy_from_slice(&prev.to_le_bytes());
}

fn write_slots(buf: &mut [u8], offs: usize, width: usize, slots: &[&[u8]]) {
    let data = offs + width * (slots.len() + 1);
    let mut at = 0usize;
    let put_off = |buf: &mut [u8], i: usize, v: usize| {
        let p = offs + i * width;
        if width == 2 {
            buf[p..p + 2].copy_from_slice(&(v as u16).to_le_bytes());
        } else {
            buf[p..p + 4].copy_from_slice(&(v as u32).to_le_bytes());
        }
    };
    for (i, s) in slots.iter().enumerate() {
        put_off(buf, i, at);
        buf[data + at..data + at + s.len()].copy_from_slice(s);
        at += s.len();
    }
    put_off(buf, slots.len(), at);
}

/// Bytes a leaf needs for `n` entries of total length `total` sharing `prefix` bytes.
pub fn leaf_size(width: usize, n: usize, total: usize, prefix: usize) -> usize {
    HEADER + prefix + width * (n + 1) + (total - n * prefix)
}

/// Bytes an inner node needs for `n` children with separators totalling `total`.
pub fn inner_size(width: usize, n: usize, total: usize) -> usize {
    HEADER + 8 * n + width * (n + 1) + total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_round_trip_and_search() {
        let entries: Vec<Vec<u8>> = (0u8..10)
            .map(|i| vec![1, 2, 3, i * 2, 0, 0, 0, 0, 0, 0, 0, i])
            .collect();
        let mut buf = vec![0u8; 8192 - 16];
        let suffixes: Vec<&[u8]> = entries.iter().map(|e| &e[3..]).collect();
        write_leaf(&mut buf, &[1, 2, 3], &suffixes, 77, 5);
        let n = Node::parse(&buf).unwrap();
        assert!(n.is_leaf());
        assert_eq!(
            (n.count(), n.next_leaf(), n.prev_leaf()),
            (10, Some(77), Some(5))
        );
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(&n.entry(i), e);
            assert_eq!(n.row_id(i), i as u64);
        }
        assert_eq!(n.lower_bound(&[1, 2, 3, 4]), 2);
        assert_eq!(n.lower_bound(&[1, 2, 3, 5]), 3);
        assert_eq!(n.lower_bound(&[1, 2]), 0);
        assert_eq!(n.lower_bound(&[1, 2, 4]), 10);
        assert_eq!(n.lower_bound(&[0]), 0);
    }

    #[test]
    fn inner_child_choice() {
        let mut buf = vec![0u8; 8192 - 16];
        let seps: [&[u8]; 3] = [b"", b"d", b"m"];
        write_inner(&mut buf, 1, &[10, 11, 12], &seps);
        let n = Node::parse(&buf).unwrap();
        assert_eq!(n.level(), 1);
        assert_eq!(n.child_for(b"a"), 0);
        assert_eq!(n.child_for(b"d"), 1);
        assert_eq!(n.child_for(b"lzz"), 1);
        assert_eq!(n.child_for(b"z"), 2);
        assert_eq!(n.child(2), 12);
    }

    #[test]
    fn cmp_bytes_is_slice_order() {
        let samples: [&[u8]; 9] = [
            b"",
            b"a",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghijklmnopq",
            b"b",
            b"\xff",
        ];
        for a in samples {
            for b in samples {
                assert_eq!(cmp_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn garbage_is_rejected() {
        let buf = vec![0u8; 100];
        assert!(Node::parse(&buf).is_err());
        let mut buf = vec![0u8; 8192 - 16];
        write_leaf(&mut buf, &[], &[&[1u8; 9][..]], 0, 0);
        buf[4..8].copy_from_slice(&u32::MAX.to_le_bytes()); // more entries than fit
        assert!(Node::parse(&buf).is_err());
    }
}
