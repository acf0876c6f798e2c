//! Several doubly-linked lists of block ids sharing one node arena (indices, not
//! pointers). Policies keep an id → node index map beside it, so moving a block
//! between queues (LRU → ghost, A1in → Am, ...) is O(1) and allocation-free once the
//! arena has grown to its working size.

pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub(crate) struct Node<T> {
    pub id: u64,
    prev: u32,
    next: u32,
    /// Which list the node is on (a policy-defined tag).
    pub list: u8,
    pub data: T,
}

/// `front` is the newest / most recently used end, `back` the oldest.
#[derive(Clone, Debug)]
pub(crate) struct Lists<T> {
    nodes: Vec<Node<T>>,
    free_head: u32,
    heads: Vec<u32>,
    tails: Vec<u32>,
    lens: Vec<usize>,
}

impl<T> Lists<T> {
    pub fn new(lists: usize, capacity: usize) -> Self {
        Self {
            nodes: Vec::with_capacity(capacity),
            free_head: NIL,
            heads: vec![NIL; lists],
            tails: vec![NIL; lists],
            lens: vec![0; lists],
        }
    }

    /// Creates an unlinked node (not on any list until pushed).
    pub fn alloc(&mut self, id: u64, data: T) -> u32 {
        let node = Node {
            id,
            prev: NIL,
            next: NIL,
            list: u8::MAX,
            data,
        };
        if self.free_head != NIL {
            let idx = self.free_head;
            self.free_head = self.nodes[idx as usize].next;
            self.nodes[idx as usize] = node;
            idx
        } else {
            let idx = u32::try_from(self.nodes.len()).expect("more than 2^32 cached blocks");
            self.nodes.push(node);
            idx
        }
    }

    /// Unlinks (if linked) and recycles a node.
    pub fn release(&mut self, idx: u32) {
        if self.nodes[idx as usize].list != u8::MAX {
            self.unlink(idx);
        }
        self.nodes[idx as usize].next = self.free_head;
        self.free_head = idx;
    }

    #[inline]
    pub fn node(&self, idx: u32) -> &Node<T> {
        &self.nodes[idx as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, idx: u32) -> &mut Node<T> {
        &mut self.nodes[idx as usize]
    }

    #[inline]
    pub fn len(&self, list: u8) -> usize {
        self.lens[list as usize]
    }

    #[inline]
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn front(&self, list: u8) -> u32 {
        self.heads[list as usize]
    }

    #[inline]
    pub fn back(&self, list: u8) -> u32 {
        self.tails[list as usize]
    }

    /// The neighbour towards the front (newer end).
    #[inline]
    pub fn newer(&self, idx: u32) -> u32 {
        self.nodes[idx as usize].prev
    }

    /// The neighbour towards the back (older end).
    #[inline]
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn older(&self, idx: u32) -> u32 {
        self.nodes[idx as usize].next
    }

    #[inline]
    pub fn unlink(&mut self, idx: u32) {
        let (prev, next, list) = {
            let n = &self.nodes[idx as usize];
            (n.prev, n.next, n.list)
        };
        debug_assert!(list != u8::MAX, "unlinking a node that is on no list");
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        } else {
            self.heads[list as usize] = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        } else {
            self.tails[list as usize] = prev;
        }
        self.lens[list as usize] -= 1;
        let n = &mut self.nodes[idx as usize];
        n.prev = NIL;
        n.next = NIL;
        n.list = u8::MAX;
    }

    #[inline]
    pub fn push_front(&mut self, list: u8, idx: u32) {
        let head = self.heads[list as usize];
        {
            let n = &mut self.nodes[idx as usize];
            n.prev = NIL;
            n.next = head;
            n.list = list;
        }
        if head != NIL {
            self.nodes[head as usize].prev = idx;
        } else {
            self.tails[list as usize] = idx;
        }
        self.heads[list as usize] = idx;
        self.lens[list as usize] += 1;
    }

    #[inline]
    pub fn push_back(&mut self, list: u8, idx: u32) {
        let tail = self.tails[list as usize];
        {
            let n = &mut self.nodes[idx as usize];
            n.prev = tail;
            n.next = NIL;
            n.list = list;
        }
        if tail != NIL {
            self.nodes[tail as usize].next = idx;
        } else {
            self.heads[list as usize] = idx;
        }
        self.tails[list as usize] = idx;
        self.lens[list as usize] += 1;
    }

    /// Moves a linked node to the front of `list` (possibly the list it is on).
    #[inline]
    pub fn move_to_front(&mut self, list: u8, idx: u32) {
        if self.heads[list as usize] == idx {
            return;
        }
        self.unlink(idx);
        self.push_front(list, idx);
    }

    /// First node from the back of `list` whose id satisfies `pred`, walking towards
    /// the front. Skipped nodes stay where they are.
    #[inline]
    pub fn find_from_back(&self, list: u8, pred: &mut dyn FnMut(u64) -> bool) -> Option<u32> {
        let mut cur = self.tails[list as usize];
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if pred(n.id) {
                return Some(cur);
            }
            cur = n.prev;
        }
        None
    }

    /// Like [`Self::find_from_back`], walking from the front towards the back.
    #[inline]
    pub fn find_from_front(&self, list: u8, pred: &mut dyn FnMut(u64) -> bool) -> Option<u32> {
        let mut cur = self.heads[list as usize];
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if pred(n.id) {
                return Some(cur);
            }
            cur = n.next;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(l: &Lists<()>, list: u8) -> Vec<u64> {
        let mut out = Vec::new();
        let mut cur = l.front(list);
        while cur != NIL {
            out.push(l.node(cur).id);
            cur = l.older(cur);
        }
        out
    }

    #[test]
    fn push_move_unlink_and_reuse() {
        let mut l = Lists::<()>::new(2, 4);
        let a = l.alloc(1, ());
        let b = l.alloc(2, ());
        let c = l.alloc(3, ());
        l.push_front(0, a);
        l.push_front(0, b);
        l.push_back(0, c);
        assert_eq!(ids(&l, 0), vec![2, 1, 3]);
        l.move_to_front(1, c);
        assert_eq!(ids(&l, 0), vec![2, 1]);
        assert_eq!(ids(&l, 1), vec![3]);
        assert_eq!((l.len(0), l.len(1)), (2, 1));
        l.release(b);
        assert_eq!(ids(&l, 0), vec![1]);
        let d = l.alloc(4, ());
        assert_eq!(d, b, "released slot is reused");
        l.push_back(0, d);
        assert_eq!(ids(&l, 0), vec![1, 4]);
        assert_eq!(l.find_from_back(0, &mut |id| id != 4), Some(a));
        assert_eq!(l.find_from_front(0, &mut |id| id == 4), Some(d));
    }
}
