//! Access density (paper 001's closing proposal): keep the pages of the objects
//! (a table column, an index) with the most accesses per byte of the object, so a
//! small hot index survives a scan of a large cold table. Accesses are aged by
//! halving every `capacity` requests, so an object that stops being used loses
//! its place. The victim is the least recently used evictable page of the object
//! with the lowest density; ties go to the object used longest ago.
//!
//! Which object a block belongs to comes from an [`ObjectMap`] the owner installs
//! ([`Policy::set_objects`]: the buffer manager maps every column and index page).
//! A block the map does not name belongs to its extent of [`EXTENT_BLOCKS`]
//! consecutive ids, so a plain trace (`kura cachesim`) still has objects.
//! Cost: O(1) per hit, O(objects with resident pages) per eviction.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::policy::{BlockId, Policy};
use crate::util::idmap::{id_map_with_capacity, IdMap};

/// Blocks per implicit object when the map names none.
pub const EXTENT_BLOCKS: u64 = 64;

/// Object keys of implicit extents have this bit set, so they never collide with
/// the map's object numbers.
const EXTENT_KEY: u64 = 1 << 63;

/// Which object each block belongs to, and each object's size in blocks.
#[derive(Debug, Clone, Default)]
pub struct ObjectMap {
    of: IdMap<u32>,
    sizes: Vec<u64>,
    names: Vec<String>,
}

impl ObjectMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an object made of `blocks`; returns its number. A block named twice
    /// stays with its first object.
    pub fn add(
        &mut self,
        name: impl Into<String>,
        blocks: impl IntoIterator<Item = BlockId>,
    ) -> u32 {
        let obj = self.sizes.len() as u32;
        let mut size = 0;
        for b in blocks {
            if let hashbrown::hash_map::Entry::Vacant(v) = self.of.entry(b) {
                v.insert(obj);
                size += 1;
            }
        }
        self.sizes.push(size.max(1));
        self.names.push(name.into());
        obj
    }

    /// The object of `block`, if the map names it.
    pub fn object_of(&self, block: BlockId) -> Option<u32> {
        self.of.get(&block).copied()
    }

    /// Size in blocks of object `obj`.
    pub fn size(&self, obj: u32) -> u64 {
        self.sizes.get(obj as usize).copied().unwrap_or(1)
    }

    /// The number of the object named `name`, if the map has one.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|i| i as u32)
    }

    pub fn name(&self, obj: u32) -> Option<&str> {
        self.names.get(obj as usize).map(String::as_str)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Blocks named by the map.
    pub fn blocks(&self) -> usize {
        self.of.len()
    }
}

struct Obj {
    /// Aged access count.
    hits: f64,
    size: f64,
    /// Resident pages in use order (front = least recent); entries whose stamp
    /// no longer matches the page's are stale and skipped.
    queue: VecDeque<(BlockId, u64)>,
    resident: usize,
    last_use: u64,
}

pub struct Density {
    capacity: usize,
    objects: Arc<ObjectMap>,
    /// Resident block → (object key, stamp of its newest queue entry).
    pages: IdMap<(u64, u64)>,
    objs: IdMap<Obj>,
    clock: u64,
    /// Requests since the counts were last halved.
    since_aging: usize,
}

impl Density {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            objects: Arc::new(ObjectMap::new()),
            pages: id_map_with_capacity(capacity),
            objs: id_map_with_capacity(64),
            clock: 0,
            since_aging: 0,
        }
    }

    fn key_of(&self, id: BlockId) -> (u64, u64) {
        match self.objects.object_of(id) {
            Some(o) => (u64::from(o), self.objects.size(o)),
            None => (EXTENT_KEY | (id / EXTENT_BLOCKS), EXTENT_BLOCKS),
        }
    }

    /// Counts one access to `id`'s object and makes `id` its most recent page.
    fn record(&mut self, id: BlockId, key: u64, size: u64) {
        self.clock += 1;
        let now = self.clock;
        let obj = self.objs.entry(key).or_insert_with(|| Obj {
            hits: 0.0,
            size: size as f64,
            queue: VecDeque::new(),
            resident: 0,
            last_use: 0,
        });
        obj.hits += 1.0;
        obj.last_use = now;
        obj.queue.push_back((id, now));
        // Hits leave stale entries behind; compact before they outweigh the live ones.
        if obj.queue.len() > 2 * obj.resident + 16 {
            let pages = &self.pages;
            obj.queue
                .retain(|&(b, s)| pages.get(&b).is_some_and(|&(_, cur)| cur == s));
        }
        self.age();
    }

    /// Halves every object's count once per `capacity` requests (aging), and
    /// forgets objects that have neither pages nor history left.
    fn age(&mut self) {
        self.since_aging += 1;
        if self.since_aging < self.capacity.max(16) {
            return;
        }
        self.since_aging = 0;
        self.objs.retain(|_, o| {
            o.hits /= 2.0;
            o.resident > 0 || o.hits >= 0.5
        });
    }

    fn density(o: &Obj) -> f64 {
        o.hits / o.size
    }
}

impl Policy for Density {
    fn name(&self) -> &'static str {
        "density"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.pages.len()
    }

    fn contains(&self, id: BlockId) -> bool {
        self.pages.contains_key(&id)
    }

    fn access(&mut self, id: BlockId) {
        let Some(&(key, _)) = self.pages.get(&id) else {
            return;
        };
        let size = self.objs.get(&key).map_or(1, |o| o.size as u64);
        // The new stamp goes in first, so a compaction in `record` keeps the entry.
        if let Some(p) = self.pages.get_mut(&id) {
            p.1 = self.clock + 1;
        }
        self.record(id, key, size);
    }

    fn insert(&mut self, id: BlockId) {
        let (key, size) = self.key_of(id);
        // The page must be in `pages` with its new stamp before `record` may compact.
        self.pages.insert(id, (key, self.clock + 1));
        self.record(id, key, size);
        if let Some(o) = self.objs.get_mut(&key) {
            o.resident += 1;
        }
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(BlockId) -> bool) -> Option<BlockId> {
        let mut order: Vec<(f64, u64, u64)> = self
            .objs
            .iter()
            .filter(|(_, o)| o.resident > 0)
            .map(|(&k, o)| (Self::density(o), o.last_use, k))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, _, key) in order {
            let pages = &mut self.pages;
            let Some(obj) = self.objs.get_mut(&key) else {
                continue;
            };
            let mut victim = None;
            for (i, &(b, s)) in obj.queue.iter().enumerate() {
                let live = pages.get(&b).is_some_and(|&(_, cur)| cur == s);
                if live && evictable(b) {
                    victim = Some((i, b));
                    break;
                }
            }
            if let Some((i, b)) = victim {
                obj.queue.remove(i);
                obj.resident -= 1;
                pages.remove(&b);
                return Some(b);
            }
        }
        None
    }

    fn remove(&mut self, id: BlockId) -> bool {
        match self.pages.remove(&id) {
            Some((key, _)) => {
                if let Some(o) = self.objs.get_mut(&key) {
                    o.resident -= 1;
                }
                true
            }
            None => false,
        }
    }

    fn set_objects(&mut self, objects: Arc<ObjectMap>) {
        self.objects = objects;
        // Resident pages keep the object they were counted under until they
        // leave; new pages are filed by the new map.
    }
}
