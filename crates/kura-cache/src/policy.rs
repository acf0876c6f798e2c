//! The replacement-policy trait every cache in kura goes through: the buffer
//! manager's frames and the simulator's levels alike (paper 004).

/// Identifier of a cached block (a page number, a 4 KiB block of a trace).
pub type BlockId = u64;

/// A replacement policy over block ids. The policy only tracks *which* ids are
/// resident and in what order they should go; the caller owns the data.
///
/// Contract: `insert` is called only for a non-resident id while `len() <
/// capacity()` (the caller evicts first); `access` only for a resident id.
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
}
