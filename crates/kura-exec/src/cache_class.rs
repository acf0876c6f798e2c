//! Per-pipeline LLC classes (paper 000's future work, as SAP HANA does per operator):
//! each pipeline is classified from its footprint — data it streams once versus
//! structures it reuses (an index, a hash table) — as cache-sensitive or streaming,
//! and a worker enters the class's cache group while it runs that pipeline. The
//! group switch itself is a hook ([`ClassSwitch`]) the façade fills with resctrl;
//! where CAT is absent a software policy ([`ScanPolicy`]) acts on streaming
//! pipelines instead.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The two classes of service a worker runs pipelines in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheClass {
    /// Reuses data that fits the LLC: index probes, hash tables that fit, small
    /// tables read again and again. Gets the full (or protected-free) mask.
    Sensitive,
    /// Reads more data than the LLC holds, once: a small mask, so it cannot evict
    /// the sensitive work's lines.
    Streaming,
}

impl CacheClass {
    pub fn name(self) -> &'static str {
        match self {
            CacheClass::Sensitive => "sensitive",
            CacheClass::Streaming => "streaming",
        }
    }
}

/// What a pipeline touches, estimated before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes read once in order (a scan's column pages).
    pub streamed: u64,
    /// Bytes of structures probed again and again (an index's nodes, a hash table).
    pub reused: u64,
}

/// Streaming when it streams more than the LLC holds and reuses nothing that fits
/// it; every other pipeline is sensitive (what it reads could stay cached).
pub fn classify(footprint: Footprint, llc_bytes: u64) -> CacheClass {
    let reuses_what_fits = footprint.reused > 0 && footprint.reused <= llc_bytes;
    if footprint.streamed > llc_bytes && !reuses_what_fits {
        CacheClass::Streaming
    } else {
        CacheClass::Sensitive
    }
}

/// Moves the calling worker thread into a class's cache group.
pub trait ClassSwitch: Send + Sync {
    /// Called on the worker thread; an error is reported once and the pipeline
    /// runs on in whatever group the thread is in (partitioning is an optimisation).
    fn enter(&self, class: CacheClass) -> Result<(), String>;
}

/// What streaming pipelines do where no cache allocation exists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanPolicy {
    /// Nothing special.
    #[default]
    Normal,
    /// After a morsel of a streaming pipeline, flush its pages' lines from every
    /// cache level (`clflushopt`), so that they leave before they age into the LLC
    /// (on a victim LLC, as AMD's, clean lines flushed from L2 never enter it).
    Flush,
}

impl ScanPolicy {
    pub fn parse(value: &str) -> Option<ScanPolicy> {
        match value.trim().to_ascii_lowercase().as_str() {
            "normal" | "off" => Some(ScanPolicy::Normal),
            "flush" => Some(ScanPolicy::Flush),
            _ => None,
        }
    }
}

/// Warm-and-protect of a running join's hash table (paper 000's method applied
/// to an object that exists only while a query runs): told when a join's table
/// is built, it may warm the table into the LLC and protect it.
pub trait HashTableHook: Send + Sync {
    /// `keys` names the build keys (e.g. `orders.o_orderkey`), `bytes` is the
    /// table's memory and `warm` reads every cache line of it once (returning
    /// the lines read). The returned guard lives as long as the table: dropping
    /// it ends the protection.
    fn built(
        &self,
        keys: &str,
        bytes: u64,
        warm: &dyn Fn() -> u64,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>>;
}

/// The cache-class side of an [`crate::ExecContext`]: the LLC size to classify
/// against, the switch (if classes are on), the software policy and the hook
/// that protects a join's hash table.
#[derive(Clone, Default)]
pub struct CacheClasses {
    pub llc_bytes: u64,
    pub switch: Option<Arc<dyn ClassSwitch>>,
    pub scan_policy: ScanPolicy,
    /// Counters shared by every clone.
    pub counters: Arc<ClassCounters>,
    /// Set while `llc_protect` names a hash join's keys.
    pub hash_tables: Option<Arc<dyn HashTableHook>>,
}

/// What classification did in one query (or over a database's lifetime).
#[derive(Debug, Default)]
pub struct ClassCounters {
    pub sensitive_pipelines: AtomicU64,
    pub streaming_pipelines: AtomicU64,
    /// Group switches actually made (a thread already in the class is not moved).
    pub switches: AtomicU64,
    pub switch_nanos: AtomicU64,
    pub switch_errors: AtomicU64,
    /// Bytes of pages flushed by [`ScanPolicy::Flush`].
    pub flushed_bytes: AtomicU64,
    /// Hash tables of running joins warmed (and, with CAT, protected).
    pub protected_tables: AtomicU64,
}

impl CacheClasses {
    /// Whether pipelines need classifying at all.
    pub fn active(&self) -> bool {
        self.llc_bytes > 0 && (self.switch.is_some() || self.scan_policy != ScanPolicy::Normal)
    }

    pub fn count(&self, class: CacheClass) {
        let c = match class {
            CacheClass::Sensitive => &self.counters.sensitive_pipelines,
            CacheClass::Streaming => &self.counters.streaming_pipelines,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Puts the calling thread into `class` unless it is there already.
    pub fn enter(&self, class: CacheClass) {
        let Some(switch) = &self.switch else {
            return;
        };
        // A thread remembers the class it was last moved to (by this switch), so
        // the morsels of one pipeline cost one `tasks` write per worker, not one each.
        let id = Arc::as_ptr(switch) as *const () as usize;
        if CURRENT.with(|c| c.get()) == Some((id, class)) {
            return;
        }
        let t0 = std::time::Instant::now();
        match switch.enter(class) {
            Ok(()) => {
                CURRENT.with(|c| c.set(Some((id, class))));
                self.counters.switches.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .switch_nanos
                    .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                if self.counters.switch_errors.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!("cache class switch failed: {e}");
                }
            }
        }
    }
}

thread_local! {
    static CURRENT: Cell<Option<(usize, CacheClass)>> = const { Cell::new(None) };
}

/// Flushes every cache line of `bytes` from all cache levels.
pub fn flush_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        const LINE: usize = 64;
        let start = bytes.as_ptr() as usize & !(LINE - 1);
        let end = bytes.as_ptr() as usize + bytes.len();
        let mut p = start;
        while p < end {
            // SAFETY: clflush takes any mapped address; every line flushed
            // here overlaps `bytes`, which is mapped for the borrow. clflush (not
            // clflushopt) because every x86-64 CPU has it.
            unsafe { std::arch::x86_64::_mm_clflush(p as *const u8) };
            p += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    const LLC: u64 = 32 << 20;

    #[test]
    fn scans_larger_than_the_llc_stream_the_rest_is_sensitive() {
        let fp = |streamed, reused| Footprint { streamed, reused };
        assert_eq!(classify(fp(100 << 20, 0), LLC), CacheClass::Streaming);
        assert_eq!(classify(fp(8 << 20, 0), LLC), CacheClass::Sensitive);
        // a big probe side over a hash table that fits: the table is worth caching
        assert_eq!(classify(fp(100 << 20, 4 << 20), LLC), CacheClass::Sensitive);
        // a hash table larger than the LLC helps nobody by being cached
        assert_eq!(
            classify(fp(100 << 20, 64 << 20), LLC),
            CacheClass::Streaming
        );
        assert_eq!(classify(fp(0, 4 << 20), LLC), CacheClass::Sensitive);
    }

    struct Recorder(Mutex<Vec<CacheClass>>, bool);
    impl ClassSwitch for Recorder {
        fn enter(&self, class: CacheClass) -> Result<(), String> {
            self.0.lock().unwrap().push(class);
            if self.1 {
                Err("no such group".into())
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_thread_is_moved_only_when_its_class_changes() {
        let rec = Arc::new(Recorder(Mutex::new(Vec::new()), false));
        let classes = CacheClasses {
            llc_bytes: LLC,
            switch: Some(rec.clone()),
            ..Default::default()
        };
        assert!(classes.active());
        for class in [
            CacheClass::Streaming,
            CacheClass::Streaming,
            CacheClass::Sensitive,
            CacheClass::Sensitive,
            CacheClass::Streaming,
        ] {
            classes.enter(class);
        }
        assert_eq!(
            *rec.0.lock().unwrap(),
            vec![
                CacheClass::Streaming,
                CacheClass::Sensitive,
                CacheClass::Streaming
            ]
        );
        assert_eq!(classes.counters.switches.load(Ordering::Relaxed), 3);
        // another thread starts in no class: it is moved on its first pipeline
        let c2 = classes.clone();
        std::thread::spawn(move || c2.enter(CacheClass::Streaming))
            .join()
            .unwrap();
        assert_eq!(rec.0.lock().unwrap().len(), 4);
    }

    #[test]
    fn a_failing_switch_is_counted_and_retried() {
        let rec = Arc::new(Recorder(Mutex::new(Vec::new()), true));
        let classes = CacheClasses {
            llc_bytes: LLC,
            switch: Some(rec.clone()),
            ..Default::default()
        };
        classes.enter(CacheClass::Streaming);
        classes.enter(CacheClass::Streaming);
        assert_eq!(classes.counters.switch_errors.load(Ordering::Relaxed), 2);
        assert_eq!(classes.counters.switches.load(Ordering::Relaxed), 0);
        assert!(!CacheClasses::default().active());
        assert_eq!(ScanPolicy::parse("FLUSH"), Some(ScanPolicy::Flush));
        assert_eq!(ScanPolicy::parse("nta"), None);
    }

    #[test]
    fn flushing_keeps_the_data() {
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        flush_lines(&data[3..9_000]);
        assert_eq!(data[8_999], (8_999u32) as u8);
    }
}
