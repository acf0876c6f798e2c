//! LLC partitioning by memory object (paper 000) for one database: warm a named
//! object (an index's nodes, a column, the hash table of a running join) into
//! the last-level cache and protect it with CAT, and per-pipeline cache classes — through kura-rdt where resctrl
//! exists; where it does not, the object is only warmed and the software scan
//! policy is what remains (the status says so in one line).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kura_cache::cpu::{geometry::data_hierarchy, read_sysfs, SYSFS_CACHE_DIR};
use kura_common::settings::Settings;
use kura_exec::cache_class::{
    CacheClass, CacheClasses, ClassCounters, ClassSwitch, HashTableHook, ScanPolicy,
};
use kura_rdt::{detect, Class, Detection, Partition, ProtectMasks, Resctrl};
use kura_storage::Storage;

use crate::error::{KuraError, KuraResult};

/// Ways the streaming class may fill when classes are on (HANA gives scans a
/// small mask; two ways is the smallest most CPUs accept).
const STREAMING_WAYS: u32 = 2;

/// The last-level cache of this machine in bytes, from sysfs (0 if unknown).
pub fn llc_bytes() -> u64 {
    read_sysfs(Path::new(SYSFS_CACHE_DIR))
        .ok()
        .and_then(|c| data_hierarchy(&c).last().map(|g| g.size))
        .unwrap_or(0)
}

/// A protected (or, without CAT, only warmed) object.
#[derive(Clone, Debug)]
pub struct Protected {
    pub object: String,
    pub pages: usize,
    pub bytes: u64,
    /// Cache lines read to warm it.
    pub lines: u64,
    pub warm_time: Duration,
    /// The way masks, where CAT protects it.
    pub masks: Option<ProtectMasks>,
}

/// What `kura cache status` prints.
#[derive(Clone, Debug)]
pub struct LlcStatus {
    /// One line: resctrl and CAT, or why not and what kura does instead.
    pub detection: String,
    pub cat: bool,
    pub llc_bytes: u64,
    pub protected: Option<Protected>,
    /// kura's resctrl groups now.
    pub groups: Vec<String>,
    /// The hash join key `llc_protect` waits for (`hash_join:KEY`), if any.
    pub armed: Option<String>,
    /// The last hash table protected (kept after its query ended).
    pub last_hash_table: Option<Protected>,
}

/// The prefix of `llc_protect` values naming a hash join's build key.
pub const HASH_JOIN_PREFIX: &str = "hash_join:";

/// The database's LLC control; shared by every session.
pub struct Llc {
    root: PathBuf,
    llc_bytes: u64,
    partition: Mutex<Option<Partition>>,
    protected: Mutex<Option<Protected>>,
    /// The build key whose hash tables are protected while their queries run.
    armed: Mutex<Option<String>>,
    last_hash_table: Mutex<Option<Protected>>,
    /// Numbers each protection, so a finished join ends only its own.
    generation: AtomicU64,
    /// Classification counters over the database's lifetime.
    pub counters: Arc<ClassCounters>,
}

impl Llc {
    /// `root` is the resctrl mount (normally [`kura_rdt::DEFAULT_ROOT`]).
    pub fn new(root: &Path) -> Llc {
        Llc {
            root: root.to_path_buf(),
            llc_bytes: llc_bytes(),
            partition: Mutex::new(None),
            protected: Mutex::new(None),
            armed: Mutex::new(None),
            last_hash_table: Mutex::new(None),
            generation: AtomicU64::new(0),
            counters: Arc::new(ClassCounters::default()),
        }
    }

    /// As [`Llc::new`] with a given LLC size (tests, simulated machines).
    pub fn with_llc_bytes(root: &Path, llc_bytes: u64) -> Llc {
        Llc {
            llc_bytes,
            ..Llc::new(root)
        }
    }

    pub fn llc_bytes(&self) -> u64 {
        self.llc_bytes
    }

    fn detection(&self) -> Detection {
        detect(&self.root)
    }

    /// The partition, created on first use; `None` where resctrl is absent.
    fn with_partition<T>(
        &self,
        f: impl FnOnce(&mut Partition) -> Result<T, kura_rdt::RdtError>,
    ) -> KuraResult<Option<T>> {
        let mut slot = self.partition.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            if let Detection::Absent(_) = self.detection() {
                return Ok(None);
            }
            let rdt = Resctrl::open(&self.root).map_err(rdt_error)?;
            *slot = Some(Partition::new(rdt, STREAMING_WAYS).map_err(rdt_error)?);
        }
        let p = slot.as_mut().expect("set above");
        f(p).map(Some).map_err(rdt_error)
    }

    pub fn status(&self) -> LlcStatus {
        let detection = self.detection();
        let cat = matches!(detection, Detection::Available(_));
        let line = match &detection {
            Detection::Available(_) => detection.summary(),
            Detection::Absent(why) => format!(
                "{why}; kura instead warms objects without protecting them and offers SET llc_scan_policy = 'flush' for streaming pipelines"
            ),
        };
        let groups = self
            .partition
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|p| {
                p.resctrl()
                    .groups()
                    .iter()
                    .map(|g| g.name().to_string())
                    .collect()
            })
            .unwrap_or_default();
        LlcStatus {
            detection: line,
            cat,
            llc_bytes: self.llc_bytes,
            protected: self.protected().clone(),
            groups,
            armed: lock(&self.armed).clone(),
            last_hash_table: lock(&self.last_hash_table).clone(),
        }
    }

    fn protected(&self) -> std::sync::MutexGuard<'_, Option<Protected>> {
        self.protected.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Warms `object` (`index:NAME`, `column:TABLE.COLUMN`) into the LLC by reading
    /// every cache line of its pages and, with CAT, protects it: the warming thread
    /// fills only the object's ways, then every thread of kura loses them.
    ///
    /// `hash_join:KEY` arms the protection of a hash join's table instead: it
    /// exists only while a query runs, so each join building on `KEY` (a
    /// column, or `table.column`) warms and protects its table once built, until
    /// the table is dropped. Nothing is protected until then (`pages` 0).
    pub fn protect(&self, storage: &Storage, object: &str) -> KuraResult<Protected> {
        if let Some(key) = strip_prefix_ci(object, HASH_JOIN_PREFIX) {
            let key = key.trim();
            if key.is_empty() || key.contains(char::is_whitespace) || key.contains(',') {
                return Err(KuraError::Invalid(format!(
                    "llc_protect: {HASH_JOIN_PREFIX} needs one build key column, e.g. {HASH_JOIN_PREFIX}o_orderkey or {HASH_JOIN_PREFIX}orders.o_orderkey"
                )));
            }
            self.release()?;
            *lock(&self.armed) = Some(key.to_string());
            return Ok(Protected {
                object: object.to_string(),
                pages: 0,
                bytes: 0,
                lines: 0,
                warm_time: Duration::ZERO,
                masks: None,
            });
        }
        let pages = storage.object_pages(object)?;
        let bytes = (pages.len() * storage.page_size()) as u64;
        if self.llc_bytes > 0 && bytes > self.llc_bytes {
            return Err(KuraError::Invalid(format!(
                "{object} is {bytes} bytes, more than the {} byte LLC: it cannot be kept there",
                self.llc_bytes
            )));
        }
        *lock(&self.armed) = None;
        self.warm_and_protect(object, pages.len(), bytes, &|| touch_pages(storage, &pages))
            .map(|(p, _)| p)
    }

    /// Paper 000's method: the calling thread alone fills the object's ways
    /// while it reads every line of it, then every thread of kura loses them.
    /// Also returns the protection's number (a later one supersedes it).
    fn warm_and_protect(
        &self,
        object: &str,
        pages: usize,
        bytes: u64,
        warm: &dyn Fn() -> KuraResult<u64>,
    ) -> KuraResult<(Protected, u64)> {
        let tid = kura_rdt::current_tid();
        let llc = self.llc_bytes.max(bytes);
        let masks = self.with_partition(|p| {
            p.release()?;
            p.begin_warm(tid, bytes, llc)
        })?;
        let t0 = Instant::now();
        let lines = warm()?;
        let warm_time = t0.elapsed();
        if masks.is_some() {
            let threads = kura_rdt::process_threads().map_err(rdt_error)?;
            self.with_partition(|p| p.protect(&threads))?;
        }
        let protected = Protected {
            object: object.to_string(),
            pages,
            bytes,
            lines,
            warm_time,
            masks,
        };
        *self.protected() = Some(protected.clone());
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        Ok((protected, generation))
    }

    /// Ends protection: all ways to everyone again.
    pub fn release(&self) -> KuraResult<()> {
        self.release_ways()?;
        *lock(&self.armed) = None;
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Gives the protected ways back (if a partition was ever made) and forgets
    /// what was protected.
    fn release_ways(&self) -> KuraResult<()> {
        if lock(&self.partition).is_some() {
            self.with_partition(|p| p.release())?;
        }
        *self.protected() = None;
        Ok(())
    }

    /// Removes the resctrl groups crashed kura processes left behind (opening
    /// resctrl does it); the names removed. Nothing to do without resctrl.
    pub fn remove_stale_groups(&self) -> KuraResult<Vec<String>> {
        if let Detection::Absent(_) = self.detection() {
            return Ok(Vec::new());
        }
        let slot = self.partition.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            // This process holds the lock and cleaned up when it opened.
            return Ok(Vec::new());
        }
        let rdt = Resctrl::open(&self.root).map_err(rdt_error)?;
        Ok(rdt.stale_removed().to_vec())
    }

    /// The cache-class part of a query's context, from the session's settings.
    pub fn classes(self: &Arc<Self>, settings: &Settings) -> CacheClasses {
        let scan_policy = ScanPolicy::parse(&settings.value("llc_scan_policy")).unwrap_or_default();
        let switch: Option<Arc<dyn ClassSwitch>> = (settings.flag("llc_classes")
            && matches!(self.detection(), Detection::Available(_)))
        .then(|| Arc::new(GroupSwitch(self.clone())) as Arc<dyn ClassSwitch>);
        let hash_tables = lock(&self.armed).clone().map(|key| {
            Arc::new(HashProtector {
                llc: self.clone(),
                key,
            }) as Arc<dyn HashTableHook>
        });
        CacheClasses {
            llc_bytes: self.llc_bytes,
            switch,
            scan_policy,
            counters: self.counters.clone(),
            hash_tables,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Whether a join's build keys (`t.a, t.b` or `a`) include `key` (`a` or `t.a`).
fn keys_match(keys: &str, key: &str) -> bool {
    keys.split(',').map(str::trim).any(|k| {
        k.eq_ignore_ascii_case(key)
            || (k.len() > key.len()
                && k.as_bytes()[k.len() - key.len() - 1] == b'.'
                && k.get(k.len() - key.len()..)
                    .is_some_and(|tail| tail.eq_ignore_ascii_case(key)))
    })
}

/// Protects the hash table of each join that builds on `key`, while it lives.
struct HashProtector {
    llc: Arc<Llc>,
    key: String,
}

impl HashTableHook for HashProtector {
    fn built(
        &self,
        keys: &str,
        bytes: u64,
        warm: &dyn Fn() -> u64,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        if !keys_match(keys, &self.key) {
            return None;
        }
        let llc = &self.llc;
        let object = format!("hash table of the join on {keys}");
        if llc.llc_bytes > 0 && bytes > llc.llc_bytes {
            tracing::warn!(
                "llc_protect: the {object} is {bytes} bytes, more than the {} byte LLC: not protected",
                llc.llc_bytes
            );
            return None;
        }
        match llc.warm_and_protect(&object, 0, bytes, &|| Ok(warm())) {
            Ok((p, generation)) => {
                llc.counters
                    .protected_tables
                    .fetch_add(1, Ordering::Relaxed);
                *lock(&llc.last_hash_table) = Some(p);
                Some(Box::new(HashProtection {
                    llc: llc.clone(),
                    generation,
                }))
            }
            Err(e) => {
                tracing::warn!("llc_protect: the {object}: {e}");
                None
            }
        }
    }
}

/// Ends a hash table's protection when the table is dropped, unless another
/// protection replaced it meanwhile.
struct HashProtection {
    llc: Arc<Llc>,
    generation: u64,
}

impl Drop for HashProtection {
    fn drop(&mut self) {
        let llc = &self.llc;
        if llc.generation.load(Ordering::Acquire) != self.generation {
            return;
        }
        if let Err(e) = llc.release_ways() {
            tracing::warn!("llc_protect: ending a hash table's protection: {e}");
            *llc.protected() = None;
        }
    }
}

/// Moves the calling worker into the resctrl group of a class.
struct GroupSwitch(Arc<Llc>);

impl ClassSwitch for GroupSwitch {
    fn enter(&self, class: CacheClass) -> Result<(), String> {
        let class = match class {
            CacheClass::Sensitive => Class::Sensitive,
            CacheClass::Streaming => Class::Streaming,
        };
        let tid = kura_rdt::current_tid();
        self.0
            .with_partition(|p| p.enter(tid, class))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// Reads one byte of every cache line of `pages` (fixing each in the pool);
/// returns the lines read.
fn touch_pages(storage: &Storage, pages: &[kura_storage::PageId]) -> KuraResult<u64> {
    let bm = storage.buffer();
    let mut lines = 0u64;
    let mut sum = 0u8;
    for &page in pages {
        let guard = bm.fix(page)?;
        for line in guard.chunks(64) {
            sum = sum.wrapping_add(line[0]);
            lines += 1;
        }
    }
    // Keeps the reads from being optimised away.
    std::hint::black_box(sum);
    Ok(lines)
}

fn rdt_error(e: kura_rdt::RdtError) -> KuraError {
    KuraError::Invalid(format!("cache partitioning: {e}"))
}
