//! LLC partitioning by memory object (paper 000) for one database: warm a named
//! object (an index's nodes, a column) into the last-level cache and protect it
//! with CAT, and per-pipeline cache classes — through kura-rdt where resctrl
//! exists; where it does not, the object is only warmed and the software scan
//! policy is what remains (the status says so in one line).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kura_cache::cpu::{geometry::data_hierarchy, read_sysfs, SYSFS_CACHE_DIR};
use kura_common::settings::Settings;
use kura_exec::cache_class::{CacheClass, CacheClasses, ClassCounters, ClassSwitch, ScanPolicy};
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
}

/// The database's LLC control; shared by every session.
pub struct Llc {
    root: PathBuf,
    llc_bytes: u64,
    partition: Mutex<Option<Partition>>,
    protected: Mutex<Option<Protected>>,
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
        }
    }

    fn protected(&self) -> std::sync::MutexGuard<'_, Option<Protected>> {
        self.protected.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Warms `object` (`index:NAME`, `column:TABLE.COLUMN`) into the LLC by reading
    /// every cache line of its pages and, with CAT, protects it: the warming thread
    /// fills only the object's ways, then every thread of kura loses them.
    pub fn protect(&self, storage: &Storage, object: &str) -> KuraResult<Protected> {
        let pages = storage.object_pages(object)?;
        let bytes = (pages.len() * storage.page_size()) as u64;
        if self.llc_bytes > 0 && bytes > self.llc_bytes {
            return Err(KuraError::Invalid(format!(
                "{object} is {bytes} bytes, more than the {} byte LLC: it cannot be kept there",
                self.llc_bytes
            )));
        }
        let tid = kura_rdt::current_tid();
        let llc = self.llc_bytes.max(bytes);
        let masks = self.with_partition(|p| {
            p.release()?;
            p.begin_warm(tid, bytes, llc)
        })?;
        let t0 = Instant::now();
        let lines = touch_pages(storage, &pages)?;
        let warm_time = t0.elapsed();
        if masks.is_some() {
            let threads = kura_rdt::process_threads().map_err(rdt_error)?;
            self.with_partition(|p| p.protect(&threads))?;
        }
        let protected = Protected {
            object: object.to_string(),
            pages: pages.len(),
            bytes,
            lines,
            warm_time,
            masks,
        };
        *self.protected() = Some(protected.clone());
        Ok(protected)
    }

    /// Ends protection: all ways to everyone again.
    pub fn release(&self) -> KuraResult<()> {
        let had_partition = self
            .partition
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        if had_partition {
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
        let switch: Option<Arc<dyn ClassSwitch>> = (settings.value("llc_classes") == "on"
            && matches!(self.detection(), Detection::Available(_)))
        .then(|| Arc::new(GroupSwitch(self.clone())) as Arc<dyn ClassSwitch>);
        CacheClasses {
            llc_bytes: self.llc_bytes,
            switch,
            scan_policy,
            counters: self.counters.clone(),
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
