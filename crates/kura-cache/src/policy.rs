//! The replacement-policy trait every cache in kura goes through: the buffer
//! manager's frames and the simulator's levels alike (paper 004).

/// Identifier of a cached block (a page number, a 4 KiB block of a trace).
pub type BlockId = u64;

/// A replacement policy over block ids. The policy only tracks *which* ids are
/// resident and in what order they should go; the caller owns the data.
///
/// Contract: `insert` is called only for a non-resident id while `len() <
/// capacity()` (the caller evicts first); `access` only for a resident id.
///
/// A miss is therefore served as: `if len() == capacity() { evict_for(id, ..) }`,
/// then `insert(id)`. Callers that do not know the incoming id may call `evict`;
/// only ARC uses the id (its adaptation must happen before the victim is chosen).
pub trait Policy: Send {
    /// Short lower-case name (`"lru"`, `"clock"`, ...), as accepted by [`crate::make_policy`].
    fn name(&self) -> &'static str;
    /// Maximum number of resident blocks.
    fn capacity(&self) -> usize;
    /// Number of resident blocks.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn contains(&self, id: BlockId) -> bool;
    /// Records a hit on a resident block.
    fn access(&mut self, id: BlockId);
    /// Makes a non-resident block resident.
    fn insert(&mut self, id: BlockId);
    /// Chooses a victim among resident blocks for which `evictable` returns true
    /// (the buffer manager passes "not pinned"), removes it and returns it.
    /// `None` if no resident block is evictable.
    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId>;
    /// Drops a block (invalidated page); returns whether it was resident.
    fn remove(&mut self, id: BlockId) -> bool;

    /// A request on the hot path: if `id` is resident, records the hit (as
    /// [`Policy::access`]) and returns true; otherwise changes nothing. Policies
    /// override it to look the id up once instead of twice.
    #[inline]
    fn touch(&mut self, id: BlockId) -> bool {
        if self.contains(id) {
            self.access(id);
            true
        } else {
            false
        }
    }

    /// Like [`Policy::evict`], made room for `incoming` (non-resident), which the
    /// caller inserts next. Policies whose choice depends on the incoming block's
    /// history (ARC's ghost lists) override it; the others just evict.
    fn evict_for(
        &mut self,
        incoming: BlockId,
        evictable: &mut dyn FnMut(BlockId) -> bool,
    ) -> Option<BlockId> {
        let _ = incoming;
        self.evict(evictable)
    }

    /// Inserts a block demoted from an upper cache at this policy's
    /// least-likely-to-be-evicted position (paper 004's exclusive caching). For most
    /// policies that is where `insert` puts a block anyway; MRU differs.
    fn insert_protected(&mut self, id: BlockId) {
        self.insert(id);
    }

    /// Whether a miss may be cached at all. Only FIX says no (once full, it never
    /// replaces: a miss is served without caching). Simulators check it before
    /// evicting; the buffer manager never gets FIX (see [`crate::make_buffer_policy`]).
    fn admits(&self) -> bool {
        true
    }

    /// Tells the policy which object (table column, index) each block belongs
    /// to. Only the access-density policy uses it; the others ignore it.
    fn set_objects(&mut self, objects: std::sync::Arc<crate::policies::ObjectMap>) {
        let _ = objects;
    }
}

/// What serving one request through a single cache did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    /// The block was not resident. `victim` is the block evicted to make room;
    /// `cached` is false only when the policy declined the block (FIX when full).
    Miss {
        victim: Option<BlockId>,
        cached: bool,
    },
}

impl Outcome {
    pub fn is_hit(self) -> bool {
        matches!(self, Outcome::Hit)
    }
}

/// Serves one request through a single cache, every block evictable: a hit is
/// recorded, a miss evicts if full and caches the block. This is the protocol the
/// simulator and the tests drive every policy with.
#[inline]
pub fn serve(policy: &mut dyn Policy, id: BlockId) -> Outcome {
    if policy.touch(id) {
        return Outcome::Hit;
    }
    if !policy.admits() {
        return Outcome::Miss {
            victim: None,
            cached: false,
        };
    }
    let victim = if policy.len() >= policy.capacity() {
        match policy.evict_for(id, &mut |_| true) {
            Some(v) => Some(v),
            // Nothing could go: serve without caching rather than overfill.
            None => {
                return Outcome::Miss {
                    victim: None,
                    cached: false,
                }
            }
        }
    } else {
        None
    };
    policy.insert(id);
    Outcome::Miss {
        victim,
        cached: true,
    }
}
