//! The cost of a page fix (issue 17, after vmcache and paper 003's index plans,
//! `kura bench fix`): nanoseconds per buffer hit with one and two threads over
//! sequential and random page ids, misses per second through the runtime's
//! io_uring path, and the warm index fetches of queries (B) and (C).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use kura::tpch::run::query_text;
use kura::{Database, OpenOptions};
use kura_exec::runtime::{fix_async, shared_runtime, spawn, BoxError};
use kura_storage::file::page::{seal, PageKind};
use kura_storage::file::DbFile;
use kura_storage::BufferManager;

use crate::error::{At, LabError, LabResult};

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Directory for the scratch page file (removed afterwards).
    pub dir: PathBuf,
    /// Pages of the scratch file; every one of them fits the pool for the hit runs.
    pub pages: u64,
    /// Replacement policies to measure the hit path with.
    pub policies: Vec<String>,
    /// Seconds of each hit measurement (one thread count, one pattern, one run).
    pub seconds: f64,
    /// Runs of each hit measurement; the median is reported.
    pub reps: usize,
    /// Seconds of the miss-rate measurement.
    pub miss_seconds: f64,
    /// Asynchronous fixes in flight during the miss-rate measurement.
    pub depth: usize,
    /// A TPC-H database with paper 003's indexes for the warm (B) and (C) runs;
    /// `None` leaves them out.
    pub db: Option<PathBuf>,
    /// Warm runs of each query; the median is reported.
    pub query_reps: usize,
}

impl Config {
    /// A short run: 1,024 pages, CLOCK and LRU, 0.3 s per point, 5 runs.
    pub fn quick(dir: PathBuf) -> Config {
        Config {
            dir,
            pages: 1024,
            policies: vec!["clock".into(), "lru".into()],
            seconds: 0.3,
            reps: 5,
            miss_seconds: 1.0,
            depth: 64,
            db: None,
            query_reps: 5,
        }
    }
}

/// One hit measurement: nanoseconds per fix seen by each thread, and fixes per
/// second of all threads together.
#[derive(Debug, Clone, Copy)]
pub struct HitPoint {
    pub ns_per_fix: f64,
    pub fixes_per_sec: f64,
    /// CPU nanoseconds per fix (each thread's own CPU clock): unlike wall time,
    /// not inflated when other processes share the cores.
    pub cpu_ns_per_fix: f64,
}

/// CPU time of the calling thread, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A row of the hit table.
#[derive(Debug, Clone)]
pub struct HitRow {
    pub policy: String,
    pub pattern: &'static str,
    pub threads: usize,
    pub point: HitPoint,
}

/// Everything the study measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub hits: Vec<HitRow>,
    pub misses_per_sec: f64,
    /// (query, median warm seconds, fixes per run, ns per fix).
    pub queries: Vec<(String, f64, u64, f64)>,
    /// Work of two threads of pure arithmetic over one thread's.
    pub alu_scaling: f64,
}

impl Report {
    /// Fixes per second of 2 threads over 1, for a policy and pattern.
    pub fn scaling(&self, policy: &str, pattern: Pattern) -> Option<f64> {
        let rate = |threads| {
            self.hits
                .iter()
                .find(|h| h.policy == policy && h.pattern == pattern.name() && h.threads == threads)
                .map(|h| h.point.fixes_per_sec)
        };
        Some(rate(2)? / rate(1)?)
    }
}

/// Two threads of register-only arithmetic against one: what the cores give
/// when nothing is shared (a VM's two vCPUs may be one core's hyperthreads).
pub fn alu_scaling(duration: Duration) -> f64 {
    let work = |threads: usize| -> f64 {
        let total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..threads {
                let total = &total;
                s.spawn(move || {
                    let mut x = XorShift::new(t as u64 + 1);
                    let began = Instant::now();
                    let mut n = 0u64;
                    while began.elapsed() < duration {
                        for _ in 0..4096 {
                            std::hint::black_box(x.below(1 << 20));
                        }
                        n += 4096;
                    }
                    total.fetch_add(n, Ordering::Relaxed);
                });
            }
        });
        total.load(Ordering::Relaxed) as f64
    };
    let one = work(1);
    work(2) / one.max(1.0)
}

/// What the hit table says about two-thread scaling, in a line per policy.
pub fn scaling_findings(r: &Report) -> Vec<String> {
    let mut policies: Vec<&str> = r.hits.iter().map(|h| h.policy.as_str()).collect();
    policies.dedup();
    policies
        .into_iter()
        .filter_map(|p| {
            let seq = r.scaling(p, Pattern::Sequential)?;
            let own = r.scaling(p, Pattern::Partitioned)?;
            let why = if own < 0.8 * r.alu_scaling {
                "even without shared frames the threads do not scale as the cores do: the hit \
                 path itself serializes them (a policy that keeps exact order applies every \
                 hit, in per-thread batches, under the pool's lock)"
            } else if own > seq * 1.2 {
                "every frame's pin word is written by both threads in turn (a coherence miss \
                 per fix); with a range of its own each thread keeps its frames in its own cache"
            } else {
                "sharing frames costs little here; the limit is the machine's own scaling"
            };
            Some(format!(
                "{p}: 2-thread hit scaling {seq:.2}x sequential (both threads walk all pages), \
                 {own:.2}x own range, arithmetic alone {:.2}x: {why}",
                r.alu_scaling
            ))
        })
        .collect()
}

/// A page file of `pages` sealed pages, removed when dropped.
struct Scratch {
    path: PathBuf,
    first: u64,
}

impl Scratch {
    fn create(dir: &Path, pages: u64) -> LabResult<Scratch> {
        std::fs::create_dir_all(dir).at(dir.display())?;
        let path = dir.join(format!("kura-bench-fix-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let (file, _) = DbFile::open(&path, kura_storage::DEFAULT_PAGE_SIZE, false)?;
        let scratch = Scratch {
            path,
            first: file.len_pages()?,
        };
        let ps = file.page_size();
        let chunk = 64u64;
        let mut buf = vec![0u8; ps * chunk as usize];
        let mut p = 0;
        while p < pages {
            let n = chunk.min(pages - p);
            for i in 0..n {
                let page = &mut buf[i as usize * ps..(i as usize + 1) * ps];
                page[16..24].copy_from_slice(&(scratch.first + p + i).to_le_bytes());
                seal(page, PageKind::Blob, scratch.first + p + i);
            }
            file.write_pages(scratch.first + p, &buf[..n as usize * ps])?;
            p += n;
        }
        file.sync()?;
        Ok(scratch)
    }

    fn open(&self, direct: bool) -> LabResult<Arc<DbFile>> {
        let (file, _) = DbFile::open(&self.path, kura_storage::DEFAULT_PAGE_SIZE, direct)?;
        Ok(Arc::new(file))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A small fast generator of page indexes (quality is not a concern here).
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 32) * n) >> 32
    }
}

/// The order in which the threads of a hit run fix pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every thread walks all pages in order, each from its own starting point:
    /// every frame is pinned by both threads in turn.
    Sequential,
    /// Each thread walks its own range of the pages in order (as a parallel scan
    /// hands each worker its own pages): no frame is shared.
    Partitioned,
    /// Page ids drawn at random over all pages.
    Random,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Sequential => "sequential",
            Pattern::Partitioned => "own range",
            Pattern::Random => "random",
        }
    }
}

/// Fixes resident pages from `threads` threads for `duration` in `pattern`'s
/// order. Each fix reads one byte of the page, as a reader would.
pub fn hit_run(
    bm: &Arc<BufferManager>,
    first: u64,
    pages: u64,
    threads: usize,
    pattern: Pattern,
    duration: Duration,
) -> LabResult<HitPoint> {
    let random = pattern == Pattern::Random;
    let start = Arc::new(Barrier::new(threads));
    let total = Arc::new(AtomicU64::new(0));
    let ns_sum = Arc::new(AtomicU64::new(0));
    let cpu_sum = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(std::sync::Mutex::new(None::<kura_storage::StorageError>));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (bm, start, total, ns_sum, cpu_sum, failed) = (
                bm.clone(),
                start.clone(),
                total.clone(),
                ns_sum.clone(),
                cpu_sum.clone(),
                failed.clone(),
            );
            s.spawn(move || {
                let mut rng = XorShift::new(t as u64 + 7);
                let mut next = t as u64 * pages / threads as u64;
                // The range this thread walks: all pages, or its own share.
                let (lo, hi) = if pattern == Pattern::Partitioned {
                    (next, (t as u64 + 1) * pages / threads as u64)
                } else {
                    (0, pages)
                };
                let mut sink = 0u64;
                start.wait();
                let began = Instant::now();
                let cpu0 = thread_cpu_ns();
                let mut done = 0u64;
                'outer: loop {
                    // Check the clock every 4,096 fixes: reading it costs as much as a fix.
                    for _ in 0..4096 {
                        let idx = if random {
                            rng.below(pages)
                        } else {
                            next = if next + 1 >= hi { lo } else { next + 1 };
                            next
                        };
                        match bm.fix(first + idx) {
                            Ok(g) => sink = sink.wrapping_add(g[0] as u64),
                            Err(e) => {
                                *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                                break 'outer;
                            }
                        }
                    }
                    done += 4096;
                    if began.elapsed() >= duration {
                        break;
                    }
                }
                let ns = began.elapsed().as_nanos() as u64;
                cpu_sum.fetch_add(thread_cpu_ns().saturating_sub(cpu0), Ordering::Relaxed);
                std::hint::black_box(sink);
                total.fetch_add(done, Ordering::Relaxed);
                ns_sum.fetch_add(ns, Ordering::Relaxed);
            });
        }
    });
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(LabError::StorageAt {
            what: "fix failed".into(),
            source: Box::new(e),
        });
    }
    let total = total.load(Ordering::Relaxed).max(1) as f64;
    let ns = ns_sum.load(Ordering::Relaxed) as f64;
    // Each thread's own rate: its time over its fixes, averaged over threads.
    let ns_per_fix = ns / total;
    let secs = ns / threads as f64 / 1e9;
    Ok(HitPoint {
        ns_per_fix,
        fixes_per_sec: total / secs,
        cpu_ns_per_fix: cpu_sum.load(Ordering::Relaxed) as f64 / total,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// Random misses through the shared runtime's asynchronous fix path (io_uring
/// where available), O_DIRECT, over a pool of a sixteenth of the pages.
fn miss_run(scratch: &Scratch, pages: u64, cfg: &Config) -> LabResult<f64> {
    let file = scratch.open(true)?;
    let bm = BufferManager::new(file, (pages / 16).max(64) as usize, "clock")?;
    let rt = shared_runtime()?;
    let before = bm.stats();
    let duration = Duration::from_secs_f64(cfg.miss_seconds);
    let started = Instant::now();
    let first = scratch.first;
    let depth = cfg.depth.max(1);
    let bm2 = bm.clone();
    rt.block_on(async move {
        let deadline = Instant::now() + duration;
        for task in 0..depth {
            let bm = bm2.clone();
            spawn(async move {
                let mut rng = XorShift::new(task as u64 + 101);
                while Instant::now() < deadline {
                    let g = fix_async(&bm, first + rng.below(pages)).await?;
                    std::hint::black_box(g[0]);
                }
                Ok::<(), BoxError>(())
            });
        }
        Ok::<(), BoxError>(())
    })
    .at("asynchronous fix failed")?;
    let secs = started.elapsed().as_secs_f64();
    let s = bm.stats().since(&before);
    Ok(s.misses as f64 / secs.max(1e-9))
}

/// Warm runs of an index query: median seconds, fixes per run, ns per fix.
fn query_run(db_path: &Path, id: &str, reps: usize) -> LabResult<(f64, u64, f64)> {
    let sql = query_text(id).ok_or_else(|| LabError::Invalid(format!("unknown query {id}")))?;
    let db = Database::open(
        db_path,
        OpenOptions {
            buffered_io: true,
            ..OpenOptions::default()
        },
    )?;
    let mut session = db.session();
    // Warm-up: every page the query needs is then resident.
    session.execute(sql)?;
    let mut times = Vec::new();
    let mut fixes = 0;
    for _ in 0..reps.max(1) {
        let before = db.storage().buffer().stats();
        let t = Instant::now();
        session.execute(sql)?;
        times.push(t.elapsed().as_secs_f64());
        fixes = db.storage().buffer().stats().since(&before).fixes;
    }
    let secs = median(times);
    Ok((secs, fixes, secs * 1e9 / fixes.max(1) as f64))
}

/// Runs the study and prints its tables to `out`.
pub fn run(cfg: &Config, out: &mut dyn Write) -> LabResult<Report> {
    if cfg.pages < 64 {
        return Err(LabError::Invalid(format!(
            "--pages must be at least 64, got {}",
            cfg.pages
        )));
    }
    if !(cfg.seconds > 0.0 && cfg.miss_seconds > 0.0) {
        return Err(LabError::Invalid("--seconds must be positive".into()));
    }
    let scratch = Scratch::create(&cfg.dir, cfg.pages)?;
    let mut report = Report::default();
    writeln!(
        out,
        "kura bench fix: {} pages of 16 KiB, all resident; {:.2} s per point, median of {} runs",
        cfg.pages, cfg.seconds, cfg.reps
    )?;
    writeln!(
        out,
        "(ns per fix: wall time per fix on each thread; CPU ns/fix: the thread's CPU time per fix; \
         CPU scaling = threads x CPU ns/fix of 1 thread / CPU ns/fix)"
    )?;
    writeln!(
        out,
        "{:<8} {:<10} {:>7} {:>12} {:>14} {:>9} {:>12} {:>12}",
        "policy",
        "pattern",
        "threads",
        "ns per fix",
        "fixes/s",
        "scaling",
        "CPU ns/fix",
        "CPU scaling"
    )?;
    for policy in &cfg.policies {
        let bm = BufferManager::new(scratch.open(false)?, cfg.pages as usize + 64, policy)?;
        for p in 0..cfg.pages {
            drop(bm.fix(scratch.first + p)?);
        }
        for pattern in [Pattern::Sequential, Pattern::Partitioned, Pattern::Random] {
            let (mut one, mut one_cpu) = (f64::NAN, f64::NAN);
            for threads in [1usize, 2] {
                let mut ns = Vec::new();
                let mut rate = Vec::new();
                let mut cpu = Vec::new();
                for _ in 0..cfg.reps.max(1) {
                    let p = hit_run(
                        &bm,
                        scratch.first,
                        cfg.pages,
                        threads,
                        pattern,
                        Duration::from_secs_f64(cfg.seconds),
                    )?;
                    ns.push(p.ns_per_fix);
                    rate.push(p.fixes_per_sec);
                    cpu.push(p.cpu_ns_per_fix);
                }
                let point = HitPoint {
                    ns_per_fix: median(ns),
                    fixes_per_sec: median(rate),
                    cpu_ns_per_fix: median(cpu),
                };
                if threads == 1 {
                    one = point.fixes_per_sec;
                    one_cpu = point.cpu_ns_per_fix;
                }
                writeln!(
                    out,
                    "{:<8} {:<10} {:>7} {:>12.1} {:>14.0} {:>8.2}x {:>12.1} {:>11.2}x",
                    policy,
                    pattern.name(),
                    threads,
                    point.ns_per_fix,
                    point.fixes_per_sec,
                    point.fixes_per_sec / one,
                    point.cpu_ns_per_fix,
                    // What the threads would do together if each kept its CPU cost
                    // per fix and had a core of its own.
                    threads as f64 * one_cpu / point.cpu_ns_per_fix
                )?;
                report.hits.push(HitRow {
                    policy: policy.clone(),
                    pattern: pattern.name(),
                    threads,
                    point,
                });
            }
        }
        if bm.pinned_frames() != 0 {
            return Err(LabError::Check(format!(
                "{} frames still pinned after the hit runs",
                bm.pinned_frames()
            )));
        }
    }
    // The machine's own two-thread scaling, and what the patterns say about the
    // difference between sequential and own-range walks.
    let alu: Vec<f64> = (0..cfg.reps.max(1))
        .map(|_| alu_scaling(Duration::from_secs_f64(cfg.seconds)))
        .collect();
    report.alu_scaling = median(alu);
    writeln!(
        out,
        "this machine: 2 threads of pure arithmetic do {:.2}x the work of one",
        report.alu_scaling
    )?;
    for line in scaling_findings(&report) {
        writeln!(out, "{line}")?;
    }
    let rt = shared_runtime()?;
    report.misses_per_sec = miss_run(&scratch, cfg.pages, cfg)?;
    writeln!(
        out,
        "misses: {:.0} per second (random pages, O_DIRECT, {} fixes in flight, {} workers, {})",
        report.misses_per_sec,
        cfg.depth,
        rt.workers(),
        if rt.uses_io_uring() {
            "io_uring"
        } else {
            "synchronous reads"
        }
    )?;
    if let Some(db) = &cfg.db {
        if !db.exists() {
            return Err(LabError::Missing(format!(
                "no database at {0}: load one first (kura --db {0} tpch load --sf 0.1 --indexes)",
                db.display()
            )));
        }
        writeln!(
            out,
            "warm index fetch on {} (out-of-order mode, {} workers), median of {} runs:",
            db.display(),
            rt.workers(),
            cfg.query_reps
        )?;
        for id in ["b", "c"] {
            let (secs, fixes, ns) = query_run(db, id, cfg.query_reps)?;
            writeln!(
                out,
                "({})  {:>9.3} ms  {:>9} fixes  {:>8.1} ns per fix",
                id.to_uppercase(),
                secs * 1e3,
                fixes,
                ns
            )?;
            report.queries.push((id.to_uppercase(), secs, fixes, ns));
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_measures_every_point() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::quick(dir.path().to_path_buf());
        cfg.pages = 128;
        cfg.seconds = 0.01;
        cfg.reps = 1;
        cfg.miss_seconds = 0.05;
        cfg.depth = 4;
        let mut out = Vec::new();
        let r = run(&cfg, &mut out).unwrap();
        assert_eq!(r.hits.len(), 2 * 3 * 2);
        assert!(r.alu_scaling > 0.0);
        assert!(r.hits.iter().all(|h| h.point.ns_per_fix > 0.0));
        assert!(r.misses_per_sec > 0.0);
        assert!(String::from_utf8(out).unwrap().contains("misses:"));
    }
}
