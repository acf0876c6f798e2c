//! Doubly-linked lists threaded through an array indexed by dense block id: the
//! id *is* the node, so a lookup, a move to the front and an unlink touch one
//! 8-byte entry per block and its neighbours — no id → node table to consult first.

/// Bits of a link that hold an id; the top three hold the list tag.
const ID_BITS: u32 = 29;
const ID_MASK: u32 = (1 << ID_BITS) - 1;
/// "No id" (end of a list).
pub(crate) const NIL: u32 = ID_MASK;
/// Largest id universe the lists can hold.
pub(crate) const MAX_UNIVERSE: usize = NIL as usize;
/// `list` tag of an id that is on no list.
pub(crate) const NONE: u8 = 7;

/// 8 bytes per id, so eight ids share a cache line: `prev`, and `next` with the
/// id's list tag in its top bits.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Link {
    pub prev: u32,
    tagged_next: u32,
}

impl Link {
    #[inline(always)]
    const fn new(prev: u32, next: u32, list: u8) -> Self {
        Self {
            prev,
            tagged_next: (list as u32) << ID_BITS | next,
        }
    }

    #[inline(always)]
    pub fn next(&self) -> u32 {
        self.tagged_next & ID_MASK
    }

    #[inline(always)]
    pub fn list(&self) -> u8 {
        (self.tagged_next >> ID_BITS) as u8
    }

    #[inline(always)]
    fn set_next(&mut self, next: u32) {
        self.tagged_next = (self.tagged_next & !ID_MASK) | next;
    }
}

/// All ones: prev and next NIL, tag NONE — so a fresh array is a memset.
const UNLINKED: Link = Link::new(NIL, NIL, NONE);

/// `LISTS` lists over ids `0..universe`; `front` = newest end, `back` = oldest.
#[derive(Clone, Debug)]
pub(crate) struct DenseLists<const LISTS: usize> {
    links: Vec<Link>,
    heads: [u32; LISTS],
    tails: [u32; LISTS],
    lens: [usize; LISTS],
}

impl<const LISTS: usize> DenseLists<LISTS> {
    pub fn new(universe: usize) -> Self {
        assert!(universe <= MAX_UNIVERSE && LISTS < NONE as usize);
        Self {
            links: vec![UNLINKED; universe],
            heads: [NIL; LISTS],
            tails: [NIL; LISTS],
            lens: [0; LISTS],
        }
    }

    /// Which list `id` is on, [`NONE`] if none.
    #[inline(always)]
    pub fn list_of(&self, id: u32) -> u8 {
        self.links[id as usize].list()
    }

    #[inline(always)]
    pub fn len(&self, list: u8) -> usize {
        self.lens[list as usize]
    }

    #[inline(always)]
    pub fn front(&self, list: u8) -> u32 {
        self.heads[list as usize]
    }

    #[inline(always)]
    pub fn back(&self, list: u8) -> u32 {
        self.tails[list as usize]
    }

    #[inline(always)]
    pub fn newer(&self, id: u32) -> u32 {
        self.links[id as usize].prev
    }

    #[inline(always)]
    #[cfg(test)]
    pub fn link(&self, id: u32) -> &Link {
        &self.links[id as usize]
    }

    /// Prefetch hint for the entry of `id`.
    #[inline(always)]
    pub fn prefetch(&self, id: u32) {
        super::prefetch(self.links.as_ptr().wrapping_add(id as usize));
    }

    /// Prefetch hint for the neighbours of `id` (a move or unlink writes them).
    #[inline(always)]
    pub fn prefetch_neighbours(&self, id: u32) {
        let l = self.links[id as usize];
        if l.prev != NIL {
            self.prefetch(l.prev);
        }
        if l.next() != NIL {
            self.prefetch(l.next());
        }
    }

    #[inline(always)]
    pub fn unlink(&mut self, id: u32) {
        let link = self.links[id as usize];
        let (prev, next, list) = (link.prev, link.next(), link.list());
        debug_assert!(list != NONE, "unlinking an id on no list");
        if prev != NIL {
            self.links[prev as usize].set_next(next);
        } else {
            self.heads[list as usize] = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else {
            self.tails[list as usize] = prev;
        }
        self.lens[list as usize] -= 1;
        self.links[id as usize] = UNLINKED;
    }

    #[inline(always)]
    pub fn push_front(&mut self, list: u8, id: u32) {
        let head = self.heads[list as usize];
        self.links[id as usize] = Link::new(NIL, head, list);
        if head != NIL {
            self.links[head as usize].prev = id;
        } else {
            self.tails[list as usize] = id;
        }
        self.heads[list as usize] = id;
        self.lens[list as usize] += 1;
    }

    #[inline(always)]
    pub fn push_back(&mut self, list: u8, id: u32) {
        let tail = self.tails[list as usize];
        self.links[id as usize] = Link::new(tail, NIL, list);
        if tail != NIL {
            self.links[tail as usize].set_next(id);
        } else {
            self.heads[list as usize] = id;
        }
        self.tails[list as usize] = id;
        self.lens[list as usize] += 1;
    }

    /// Moves a linked id to the front of `list` (possibly the list it is on).
    #[inline(always)]
    pub fn move_to_front(&mut self, list: u8, id: u32) {
        if self.heads[list as usize] == id {
            return;
        }
        self.unlink(id);
        self.push_front(list, id);
    }

    /// Unlinks and returns the back of `list`, if any.
    #[inline(always)]
    pub fn pop_back(&mut self, list: u8) -> Option<u32> {
        let id = self.tails[list as usize];
        if id == NIL {
            return None;
        }
        self.unlink(id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(l: &DenseLists<2>, list: u8) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cur = l.front(list);
        while cur != NIL {
            out.push(cur);
            cur = l.link(cur).next();
        }
        out
    }

    #[test]
    fn push_move_unlink() {
        let mut l = DenseLists::<2>::new(8);
        l.push_front(0, 1);
        l.push_front(0, 2);
        l.push_back(0, 3);
        assert_eq!(ids(&l, 0), vec![2, 1, 3]);
        l.move_to_front(1, 3);
        assert_eq!((ids(&l, 0), ids(&l, 1)), (vec![2, 1], vec![3]));
        assert_eq!(
            (l.len(0), l.len(1), l.list_of(3), l.list_of(5)),
            (2, 1, 1, NONE)
        );
        assert_eq!(l.pop_back(0), Some(1));
        assert_eq!(ids(&l, 0), vec![2]);
        assert_eq!(l.newer(2), NIL);
        l.unlink(2);
        assert_eq!((l.pop_back(0), l.back(0)), (None, NIL));
    }
}
