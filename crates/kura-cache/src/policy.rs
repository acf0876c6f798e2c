//! The replacement-policy trait every cache in kura goes through: the buffer
//! manager's frames and the simulator's levels alike (paper 004).

/// Identifier of a cached block (a page number, a 4 KiB block of a trace).
pub type BlockId = u64;

/// What a hit means to a policy, so that a concurrent cache (the buffer pool) can
/// keep its bookkeeping off the hit path where that changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitKind {
    /// A hit changes nothing (FIFO, RAND): it need not be reported at all.
    Ignored,
    /// A hit sets a flag that only eviction clears (CLOCK, SIEVE): any number of
    /// hits between two evictions is the same as one, so reporting one per
    /// block and eviction round, in any order, gives the same evictions.
    Idempotent,
    /// Every hit and its order count (LRU, MRU, LFU, 2Q, MQ, ARC, S3-FIFO, density).
    Ordered,
}

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

    /// What a hit means to this policy (see [`HitKind`]); the safe default is
    /// that every hit counts, in order.
    fn hit_kind(&self) -> HitKind {
        HitKind::Ordered
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::SplitMix64;

    /// What [`HitKind`] promises a concurrent cache: for `Ignored` policies hits
    /// may be dropped, for `Idempotent` ones repeated hits between two misses may
    /// be collapsed and reported late in any order — the hits and victims stay
    /// those of serving every request in order.
    #[test]
    fn hit_kinds_keep_the_victims_of_in_order_service() {
        for &name in crate::POLICY_NAMES {
            let mut exact = crate::make_policy(name, 64).unwrap();
            let kind = exact.hit_kind();
            if kind == HitKind::Ordered || name == "fix" {
                continue;
            }
            let mut lazy = crate::make_policy(name, 64).unwrap();
            let mut pending: Vec<BlockId> = Vec::new();
            let mut rng = SplitMix64::new(7);
            for step in 0..50_000 {
                // Hot and cold ids, so both hits and evictions are frequent.
                let id = if rng.next_u64().is_multiple_of(3) {
                    rng.next_u64() % 40
                } else {
                    rng.next_u64() % 400
                };
                let want = serve(exact.as_mut(), id);
                let got = if lazy.contains(id) {
                    if kind == HitKind::Idempotent && !pending.contains(&id) {
                        pending.push(id);
                    }
                    Outcome::Hit
                } else {
                    // Reported late, newest first, each once.
                    for p in pending.drain(..).rev() {
                        lazy.touch(p);
                    }
                    serve(lazy.as_mut(), id)
                };
                assert_eq!(got, want, "{name}: request {step} (block {id})");
            }
        }
    }
}
