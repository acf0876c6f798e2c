//! Where each row of a window's sorted input stands: its partition and peer
//! group, and where each begins and ends (what the frame and value functions read).

use std::cmp::Ordering;

use kura_common::Vector;

use super::sort_run::cmp_rows;
use crate::plan::SortKey;

/// Where each sorted row stands: its partition, its peer group (rows equal on
/// partition and order keys) and whether it starts a partition or a peer group;
/// where each partition and peer group begins and ends (indexed by their ids).
pub(super) struct Layout {
    pub partition: Vec<u32>,
    pub peer: Vec<u32>,
    pub partition_start: Vec<bool>,
    pub peer_start: Vec<bool>,
    pub part_begin: Vec<u32>,
    pub part_end: Vec<u32>,
    pub group_begin: Vec<u32>,
    pub group_end: Vec<u32>,
}

impl Layout {
    /// The layout of `rows` sorted rows whose evaluated keys are `vals`: the
    /// first `np` keys partition, the rest order.
    pub fn of(keys: &[SortKey], np: usize, vals: &[Vector], rows: usize) -> Layout {
        let mut l = Layout {
            partition: Vec::with_capacity(rows),
            peer: Vec::with_capacity(rows),
            partition_start: Vec::with_capacity(rows),
            peer_start: Vec::with_capacity(rows),
            part_begin: Vec::new(),
            part_end: Vec::new(),
            group_begin: Vec::new(),
            group_end: Vec::new(),
        };
        let (mut group, mut part) = (0u32, 0u32);
        for i in 0..rows {
            let (new_partition, new_peer) = if i == 0 {
                (true, true)
            } else {
                let p = cmp_rows(&keys[..np], &vals[..np], i - 1, &vals[..np], i);
                // NULLs compare equal here, so they form one partition and are peers,
                // as in PostgreSQL.
                let np_ = p != Ordering::Equal;
                let o = np_
                    || cmp_rows(&keys[np..], &vals[np..], i - 1, &vals[np..], i) != Ordering::Equal;
                (np_, o)
            };
            if i > 0 && new_peer {
                group += 1;
            }
            if i > 0 && new_partition {
                part += 1;
            }
            l.partition.push(part);
            l.peer.push(group);
            l.partition_start.push(new_partition);
            l.peer_start.push(new_peer);
            if new_partition {
                l.part_end.extend(l.part_begin.last().map(|_| i as u32));
                l.part_begin.push(i as u32);
            }
            if new_peer {
                l.group_end.extend(l.group_begin.last().map(|_| i as u32));
                l.group_begin.push(i as u32);
            }
        }
        if rows > 0 {
            l.part_end.push(rows as u32);
            l.group_end.push(rows as u32);
        }
        l
    }
}
