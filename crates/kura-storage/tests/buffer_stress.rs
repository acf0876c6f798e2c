//! Many threads fixing pages of a pool far smaller than the file, while others
//! invalidate pages (as a write or rollback does), hold pages resident and read
//! ahead: every guard must show its own page's bytes, and afterwards no frame may
//! stay pinned, leak or disagree with the page table and the policy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kura_storage::file::page::{seal, PageKind};
use kura_storage::file::DbFile;
use kura_storage::{BufferManager, FixAttempt};

const PAGES: u64 = 400;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn stamp(page: u64) -> u64 {
    page.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x6b75_7261
}

/// A file of `PAGES` sealed pages, each carrying its id and a stamp of it.
fn file(dir: &std::path::Path) -> (Arc<DbFile>, u64) {
    let path = dir.join("stress.db");
    let (f, _) = DbFile::open(&path, 16384, false).unwrap();
    let first = f.len_pages().unwrap();
    let ps = f.page_size();
    let mut buf = vec![0u8; ps];
    for p in first..first + PAGES {
        buf.fill(0);
        buf[16..24].copy_from_slice(&p.to_le_bytes());
        buf[ps - 8..].copy_from_slice(&stamp(p).to_le_bytes());
        seal(&mut buf, PageKind::Blob, p);
        f.write_pages(p, &buf).unwrap();
    }
    (Arc::new(f), first)
}

fn check(g: &[u8], page: u64) {
    let n = g.len();
    assert_eq!(u64::from_le_bytes(g[..8].try_into().unwrap()), page);
    assert_eq!(
        u64::from_le_bytes(g[n - 8..].try_into().unwrap()),
        stamp(page)
    );
}

fn stress(policy: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (file, first) = file(dir.path());
    let bm = BufferManager::new(file, 80, policy).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let mut readers = Vec::new();
        for t in 0..4u64 {
            let bm = bm.clone();
            readers.push(s.spawn(move || {
                let mut rng = Rng(t * 7919 + 13);
                let mut held = Vec::new();
                for i in 0..40_000u64 {
                    // A hot set, so that hits race with evictions of neighbours.
                    let page = first
                        + if i % 2 == 0 {
                            rng.below(24)
                        } else {
                            rng.below(PAGES)
                        };
                    let g = if i % 5 == 0 {
                        match bm.try_fix(page).unwrap() {
                            FixAttempt::Hit(g) => g,
                            FixAttempt::Miss(mut ticket) => {
                                let r = bm.file().read_page_raw(page, ticket.buffer());
                                bm.complete(ticket, r).unwrap()
                            }
                            FixAttempt::InFlight(w) => match w.wait() {
                                Some(g) => g,
                                None => bm.fix(page).unwrap(),
                            },
                        }
                    } else {
                        bm.fix(page).unwrap()
                    };
                    check(&g, page);
                    assert_eq!(g.page(), page);
                    // Hold a few pages for a while (pins across other fixes).
                    held.push(g);
                    if held.len() > 3 {
                        let g = held.remove(rng.below(4) as usize);
                        check(&g, g.page());
                    }
                }
            }));
        }
        {
            let (bm, stop) = (bm.clone(), stop.clone());
            s.spawn(move || {
                let mut rng = Rng(99);
                while !stop.load(Ordering::Relaxed) {
                    bm.invalidate(first + rng.below(32));
                    if rng.below(8) == 0 {
                        bm.prefetch_sync(&[first + rng.below(PAGES), first + rng.below(PAGES)]);
                    }
                    if rng.below(64) == 0 {
                        let pages: Vec<u64> = (0..4).map(|_| first + rng.below(PAGES)).collect();
                        bm.make_resident(&pages).unwrap();
                        bm.release_resident();
                    }
                    std::thread::yield_now();
                }
            });
        }
        let joined: Vec<_> = readers.into_iter().map(|r| r.join()).collect();
        // Stop the invalidating thread before reporting a reader's failure, or
        // the scope would wait for it forever.
        stop.store(true, Ordering::Relaxed);
        for r in joined {
            if let Err(e) = r {
                std::panic::resume_unwind(e);
            }
        }
    });
    assert_eq!(bm.pinned_frames(), 0, "{policy}: frames left pinned");
    bm.check_consistency()
        .unwrap_or_else(|e| panic!("{policy}: {e}"));
    let s = bm.stats();
    assert_eq!(s.fixes, s.hits + s.misses, "{policy}: {s:?}");
    assert!(s.misses > 1000 && s.hits > 1000, "{policy}: {s:?}");
    // Every page still reads right.
    for p in first..first + PAGES {
        check(&bm.fix(p).unwrap(), p);
    }
    bm.check_consistency()
        .unwrap_or_else(|e| panic!("{policy}: {e}"));
}

#[test]
fn concurrent_fixes_invalidations_and_resident_pages_keep_the_pool_consistent() {
    for policy in ["clock", "lru", "fifo", "arc", "sieve", "2q"] {
        stress(policy);
    }
}

/// With one thread, hits reported off the hit path (CLOCK-like policies once per
/// eviction round, the others in batches) leave the policy exactly where serving
/// every request in order leaves it: the pool misses exactly where `kura
/// cachesim`'s policy code misses on the same page stream.
#[test]
fn one_thread_misses_exactly_where_the_simulated_policy_misses() {
    let dir = tempfile::tempdir().unwrap();
    let (file, first) = file(dir.path());
    for &policy in kura_cache::POLICY_NAMES.iter().filter(|&&p| p != "fix") {
        let frames = 48;
        let bm = BufferManager::new(file.clone(), frames, policy).unwrap();
        let mut sim = kura_cache::make_policy(policy, frames).unwrap();
        let mut rng = Rng(4242);
        for step in 0..30_000u64 {
            let page = first
                + if step % 3 == 0 {
                    rng.below(PAGES)
                } else {
                    rng.below(64)
                };
            let before = bm.stats().misses;
            let g = bm.fix(page).unwrap();
            check(&g, page);
            drop(g);
            let missed = bm.stats().misses > before;
            let simulated = !kura_cache::serve(sim.as_mut(), page).is_hit();
            assert_eq!(missed, simulated, "{policy}: request {step} (page {page})");
        }
        bm.check_consistency().unwrap();
    }
}
