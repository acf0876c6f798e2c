//! The second buffer tier (compressed pages below the pool): the engine's page
//! trace replayed by the simulator with the same two-level configuration gives
//! the same hits per level, demotions and disk reads (LRU at both levels,
//! inclusive and exclusive); pages served from the tier are the pages on disk;
//! a byte-sized tier stays within its size; and no tier leaves the counters at 0.
//! The same for the OS page-cache tier, whose pages the kernel holds: the
//! kernel keeps no more of the file than the tier lists.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use kura_cache::sim::{simulate, simulate_reference};
use kura_cache::{Level, Mode, SimConfig};
use kura_common::{Batch, DataType, Value, Vector};
use kura_storage::{
    BufferManager, PageId, Schema, Storage, TierCapacity, TierConfig, TierKind, TraceKind,
};

const ROWS: usize = 60_000;
const POOL: usize = 16;
const TIER_PAGES: usize = 24;

fn build(dir: &Path) -> PathBuf {
    let path = dir.join("tier.kura");
    let storage = open(&path);
    let mut rng = Rng::new(17);
    let k: Vec<Value> = (0..ROWS as i64).map(Value::BigInt).collect();
    let s: Vec<Value> = (0..ROWS)
        .map(|i| Value::Text(format!("row{i}-{}", rng.below(1000))))
        .collect();
    let cols = vec![
        Vector::from_values(DataType::BigInt, &k).unwrap(),
        Vector::from_values(DataType::Varchar(None), &s).unwrap(),
    ];
    let mut txn = storage.begin().unwrap();
    txn.create_table(
        "t",
        Schema::new(vec![
            col("k", DataType::BigInt, false),
            col("s", DataType::Varchar(None), false),
        ]),
    )
    .unwrap();
    txn.append("t", &Batch::new(cols)).unwrap();
    txn.commit().unwrap();
    path
}

/// The table's data pages, as the storage's own pool is asked for them by a scan.
fn table_pages(storage: &Arc<Storage>, dir: &Path) -> Vec<PageId> {
    let bm = storage.buffer();
    let trace = dir.join("scan.trace");
    bm.start_trace(TraceKind::Requests, &trace).unwrap();
    let table = storage.catalog().table("t").unwrap();
    let mut rng = Rng::new(3);
    for c in 0..2 {
        read_column(&table, c, &mut rng);
    }
    bm.stop_trace().unwrap();
    let mut pages = kura_cache::trace::text::read(&trace, 1).unwrap().requests;
    pages.sort_unstable();
    pages.dedup();
    std::fs::remove_file(&trace).unwrap();
    pages
}

/// A scan of every page, random fixes with a hot fifth, and a second scan.
fn workload(pages: &[PageId]) -> Vec<PageId> {
    let mut rng = Rng::new(11);
    let mut out: Vec<PageId> = pages.to_vec();
    let hot = (pages.len() / 5).max(1) as u64;
    for _ in 0..3000 {
        let i = if rng.chance(0.6) {
            rng.below(hot)
        } else {
            rng.below(pages.len() as u64)
        };
        out.push(pages[i as usize]);
    }
    out.extend_from_slice(pages);
    out
}

fn agreement(mode: Mode, kind: TierKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    assert!(
        pages.len() > POOL + TIER_PAGES,
        "the table must fit neither level: {} pages",
        pages.len()
    );
    let requests = workload(&pages);

    // A fresh, empty pool over the same file, as the simulator starts empty.
    let bm = BufferManager::new(storage.buffer().file().clone(), POOL, "lru").unwrap();
    bm.set_tier(Some(
        TierConfig::new(TierCapacity::Pages(TIER_PAGES), mode).with_kind(kind),
    ))
    .unwrap();
    let trace = dir.path().join("engine.trace");
    bm.start_trace(TraceKind::Requests, &trace).unwrap();
    for &p in &requests {
        let g = bm.fix(p).unwrap();
        // The page, wherever it came from, is the page on disk.
        assert_eq!(g.page(), p);
        drop(g);
    }
    bm.stop_trace().unwrap();
    let engine = bm.stats();
    bm.check_consistency().unwrap();
    // The kernel dropped none of the page-cache tier's pages on its own (then
    // the engine would read from disk where the simulator hits).
    assert_eq!(engine.tier_lost, 0, "{kind:?} {mode:?}");

    let recorded = kura_cache::trace::text::read(&trace, 1).unwrap().requests;
    assert_eq!(recorded, requests, "the trace is the requests made");
    let config = SimConfig::two_level(Level::new("lru", POOL), Level::new("lru", TIER_PAGES), mode);
    for sim in [
        simulate(&config, &recorded, 0).unwrap(),
        simulate_reference(&config, &recorded, 0).unwrap(),
    ] {
        assert_eq!(engine.fixes, sim.requests, "{mode:?}");
        assert_eq!(engine.hits, sim.upper_hits, "{mode:?}: pool hits");
        assert_eq!(engine.misses, sim.lower_requests, "{mode:?}: pool misses");
        assert_eq!(engine.tier_hits, sim.lower_hits, "{mode:?}: tier hits");
        assert_eq!(
            engine.tier_misses,
            sim.lower_requests - sim.lower_hits,
            "{mode:?}: tier misses"
        );
        assert_eq!(
            engine.pages_read,
            sim.lower_requests - sim.lower_hits,
            "{mode:?}: disk reads"
        );
        assert_eq!(engine.tier_demotions, sim.demotions, "{mode:?}: demotions");
    }
    // The check has teeth: both levels served something.
    assert!(engine.hits > 0 && engine.tier_hits > 0, "{engine:?}");
    assert!(engine.tier_pages as usize <= TIER_PAGES);
    match mode {
        Mode::Exclusive => assert!(engine.tier_demotions > 0 && engine.tier_inserts == 0),
        Mode::Inclusive => assert!(engine.tier_inserts > 0 && engine.tier_demotions == 0),
    }
    std::fs::remove_file(&trace).unwrap();

    // Every page read back through the tiny pool and tier is the page on disk.
    let reference = BufferManager::new(storage.buffer().file().clone(), 4096, "lru").unwrap();
    for &p in requests.iter().rev().take(200) {
        assert_eq!(
            &*bm.fix(p).unwrap(),
            &*reference.fix(p).unwrap(),
            "page {p}"
        );
    }
}

#[test]
fn engine_and_simulator_agree_exclusive() {
    agreement(Mode::Exclusive, TierKind::Compressed);
}

#[test]
fn engine_and_simulator_agree_inclusive() {
    agreement(Mode::Inclusive, TierKind::Compressed);
}

#[test]
fn engine_and_simulator_agree_exclusive_page_cache() {
    agreement(Mode::Exclusive, TierKind::PageCache);
}

#[test]
fn engine_and_simulator_agree_inclusive_page_cache() {
    agreement(Mode::Inclusive, TierKind::PageCache);
}

/// How many of the file's pages the kernel holds in its page cache (any part
/// of them), by `mincore` over a shared mapping.
fn kernel_cached_pages(path: &Path, page_size: usize) -> usize {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a read-only shared mapping of a file we keep open, unmapped below.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED);
    let os_page = 4096;
    let mut vec = vec![0u8; len.div_ceil(os_page)];
    // SAFETY: `vec` has one byte per OS page of the mapping.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(addr, len) };
    assert_eq!(rc, 0);
    vec.chunks(page_size / os_page)
        .filter(|c| c.iter().any(|b| b & 1 == 1))
        .count()
}

#[test]
fn the_kernel_holds_only_what_the_page_cache_tier_lists() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let requests = workload(&pages);
    let file = storage.buffer().file().clone();
    let page_size = file.page_size();
    for mode in [Mode::Inclusive, Mode::Exclusive] {
        let bm = BufferManager::new(file.clone(), POOL, "lru").unwrap();
        bm.set_tier(Some(
            TierConfig::new(TierCapacity::Pages(TIER_PAGES), mode).with_kind(TierKind::PageCache),
        ))
        .unwrap();
        for &p in &requests {
            bm.fix(p).unwrap();
        }
        let s = bm.stats();
        assert!(
            s.tier_hits > 0 && s.tier_pages as usize == TIER_PAGES,
            "{mode:?}: {s:?}"
        );
        // Demoted pages are written back by now, so the kernel may drop them.
        file.sync().unwrap();
        let held = kernel_cached_pages(&path, page_size);
        match mode {
            // Every page read went through the cache; the tier's victims left it.
            Mode::Inclusive => assert!(held <= TIER_PAGES, "{mode:?}: kernel holds {held}"),
            // A page moved up while its demotion was still being written back
            // cannot be dropped at once; none is held twice otherwise.
            Mode::Exclusive => assert!(held <= TIER_PAGES + POOL, "{mode:?}: kernel holds {held}"),
        }
        assert!(
            held > 0,
            "{mode:?}: the tier's pages are in the kernel's cache"
        );
        // Invalidation drops the kernel's copy too.
        for &p in &pages {
            bm.invalidate(p);
        }
        assert_eq!(bm.stats().tier_pages, 0);
        if mode == Mode::Inclusive {
            let held = kernel_cached_pages(&path, page_size);
            assert_eq!(held, 0, "{mode:?}: kernel holds {held} after invalidation");
        }
        bm.check_consistency().unwrap();
        // Removing the tier leaves nothing of it behind either.
        bm.set_tier(None).unwrap();
    }
}

#[test]
fn exclusive_reads_less_from_disk_than_inclusive_on_this_trace() {
    // With the pool and tier together larger than the hot set but the tier no
    // larger than the pool, duplicates cost inclusive caching disk reads.
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let requests = workload(&pages);
    let reads = |mode| {
        let bm = BufferManager::new(storage.buffer().file().clone(), POOL, "lru").unwrap();
        bm.set_tier(Some(TierConfig::new(TierCapacity::Pages(POOL), mode)))
            .unwrap();
        for &p in &requests {
            bm.fix(p).unwrap();
        }
        bm.stats().pages_read
    };
    let (inc, exc) = (reads(Mode::Inclusive), reads(Mode::Exclusive));
    assert!(exc < inc, "exclusive {exc} vs inclusive {inc} disk reads");
}

#[test]
fn byte_sized_tier_stays_within_its_size_and_invalidate_drops_images() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let bm = BufferManager::new(storage.buffer().file().clone(), POOL, "lru").unwrap();
    let cap = 40_000;
    bm.set_tier(Some(TierConfig::new(
        TierCapacity::Bytes(cap),
        Mode::Exclusive,
    )))
    .unwrap();
    for &p in &pages {
        bm.fix(p).unwrap();
        assert!(bm.stats().tier_bytes <= cap);
    }
    let s = bm.stats();
    assert!(s.tier_pages > 0 && s.tier_bytes > 0, "{s:?}");
    // Compressed: more pages than raw 16 KiB pages would fit.
    assert!(s.tier_bytes < s.tier_pages * bm.page_size() as u64, "{s:?}");
    for &p in &pages {
        bm.invalidate(p);
    }
    assert_eq!(bm.stats().tier_pages, 0);
    assert_eq!(bm.stats().tier_bytes, 0);
    bm.check_consistency().unwrap();

    // Without a tier nothing is counted and every miss is a disk read.
    let plain = BufferManager::new(storage.buffer().file().clone(), POOL, "lru").unwrap();
    for &p in pages.iter().chain(&pages) {
        plain.fix(p).unwrap();
    }
    let s = plain.stats();
    assert_eq!((s.tier_hits, s.tier_misses, s.tier_pages), (0, 0, 0));
    assert_eq!(s.pages_read, s.misses);
}

#[test]
fn concurrent_fixes_through_a_tier_return_the_pages_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let file = storage.buffer().file().clone();
    let reference = BufferManager::new(file.clone(), 4096, "lru").unwrap();
    for (mode, kind) in [
        (Mode::Exclusive, TierKind::Compressed),
        (Mode::Inclusive, TierKind::Compressed),
        (Mode::Exclusive, TierKind::PageCache),
        (Mode::Inclusive, TierKind::PageCache),
    ] {
        let bm = BufferManager::new(file.clone(), POOL, "clock").unwrap();
        bm.set_tier(Some(
            TierConfig::new(TierCapacity::Pages(TIER_PAGES), mode).with_kind(kind),
        ))
        .unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (bm, reference, pages) = (&bm, &reference, &pages);
                s.spawn(move || {
                    let mut rng = Rng::new(100 + t);
                    for _ in 0..1500 {
                        let p = pages[rng.below(pages.len() as u64) as usize];
                        let got = bm.fix(p).unwrap();
                        assert_eq!(
                            &*got,
                            &*reference.fix(p).unwrap(),
                            "{kind:?} {mode:?}: page {p}"
                        );
                    }
                });
            }
        });
        let s = bm.stats();
        assert!(s.tier_hits > 0, "{kind:?} {mode:?}: {s:?}");
        assert_eq!(bm.pinned_frames(), 0);
        bm.check_consistency().unwrap();
    }
}

#[test]
fn a_page_cache_tier_is_refused_over_buffered_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let mut opts = options(64, "lru");
    opts.direct_io = false;
    let storage = Storage::open(&path, opts).unwrap();
    let err = storage
        .buffer()
        .set_tier(Some(
            TierConfig::new(TierCapacity::Pages(8), Mode::Exclusive).with_kind(TierKind::PageCache),
        ))
        .unwrap_err()
        .to_string();
    assert!(err.contains("O_DIRECT"), "{err}");
    assert!(storage.buffer().tier_config().is_none());
}

#[test]
fn fixes_count_exactly_with_more_threads_than_owned_slots() {
    // Threads with a slot of their own count with a plain load and store;
    // those beyond the owned slots share one counted with read-modify-writes.
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "clock")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let bm = BufferManager::new(storage.buffer().file().clone(), 4096, "clock").unwrap();
    let before = bm.stats().fixes;
    let (threads, per_thread) = (48u64, 2_000u64);
    let start = std::sync::Barrier::new(threads as usize);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (bm, pages, start) = (&bm, &pages, &start);
            s.spawn(move || {
                start.wait();
                let mut rng = Rng::new(t + 1);
                for _ in 0..per_thread {
                    drop(
                        bm.fix(pages[rng.below(pages.len() as u64) as usize])
                            .unwrap(),
                    );
                }
            });
        }
    });
    let s = bm.stats();
    assert_eq!(s.fixes - before, threads * per_thread, "{s:?}");
    assert_eq!(s.hits + s.misses, s.fixes);
}

#[test]
fn every_tier_policy_of_either_kind_serves_the_pages_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path());
    let storage = Storage::open(&path, options(4096, "lru")).unwrap();
    let pages = table_pages(&storage, dir.path());
    let requests = workload(&pages);
    let file = storage.buffer().file().clone();
    let reference = BufferManager::new(file.clone(), 4096, "lru").unwrap();
    let mut failures = Vec::new();
    for &policy in kura_cache::POLICY_NAMES {
        for kind in [TierKind::Compressed, TierKind::PageCache] {
            for mode in [Mode::Exclusive, Mode::Inclusive] {
                let bm = BufferManager::new(file.clone(), POOL, "clock").unwrap();
                let mut config =
                    TierConfig::new(TierCapacity::Pages(TIER_PAGES), mode).with_kind(kind);
                config.policy = policy.to_string();
                bm.set_tier(Some(config)).unwrap();
                for &p in &requests {
                    if *bm.fix(p).unwrap() != *reference.fix(p).unwrap() {
                        failures.push(format!("{policy} {kind:?} {mode:?}: page {p}"));
                    }
                }
                let s = bm.stats();
                // A policy may refuse to hold pages ("fix" admits none), never
                // more than the tier's size.
                assert!(
                    s.tier_pages as usize <= TIER_PAGES,
                    "{policy} {kind:?} {mode:?}: {s:?}"
                );
                assert_eq!(
                    s.pages_read + s.tier_hits,
                    s.misses,
                    "{policy} {kind:?} {mode:?}"
                );
                bm.check_consistency()
                    .unwrap_or_else(|e| panic!("{policy} {kind:?} {mode:?}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
