//! Paper 003's I/O ceiling (§ 5, the microbenchmark its figures compare query read
//! rates against): this disk's random-read IOPS with O_DIRECT at chosen queue depths,
//! through the runtime's own io_uring read path (`kura bench iops`).

use std::fs::File;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kura_exec::runtime::{buffer, open_direct, read_at, spawn, BoxError, Runtime, RuntimeConfig};

use crate::error::{At, LabError, LabResult};

/// What to measure: a temporary file of `size` bytes in `dir`, read at random in
/// blocks of `block` bytes at each queue depth for `seconds`.
#[derive(Debug, Clone)]
pub struct Config {
    pub size: u64,
    pub dir: PathBuf,
    pub seconds: f64,
    pub depths: Vec<usize>,
    pub block: usize,
    /// Worker threads (0: one per core).
    pub workers: usize,
}

/// The measurement at one queue depth.
#[derive(Debug, Clone, Copy)]
pub struct IopsResult {
    pub depth: usize,
    pub reads: u64,
    pub elapsed: Duration,
    pub iops: f64,
    pub mb_per_s: f64,
}

/// Runs the benchmark and writes one line per queue depth to `out`.
pub fn run(args: &Config, out: &mut dyn Write) -> LabResult<Vec<IopsResult>> {
    if args.block == 0 || !args.block.is_multiple_of(4096) {
        return Err(LabError::Invalid(format!(
            "--block must be a positive multiple of 4096, got {}",
            args.block
        )));
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        return Err(LabError::Invalid(format!(
            "--seconds must be positive, got {}",
            args.seconds
        )));
    }
    if args.depths.is_empty() || args.depths.contains(&0) {
        return Err(LabError::Invalid(
            "--depths needs positive queue depths".to_string(),
        ));
    }
    let blocks = args.size / args.block as u64;
    if blocks == 0 {
        return Err(LabError::Invalid(format!(
            "--size {} is smaller than one block of {} bytes",
            args.size, args.block
        )));
    }
    let test_file = TestFile::create(&args.dir, blocks * args.block as u64)?;
    let runtime = Runtime::new(RuntimeConfig {
        workers: args.workers,
        ..RuntimeConfig::default()
    })?;
    let path_kind = if runtime.uses_io_uring() {
        "io_uring"
    } else {
        "synchronous pread (io_uring unavailable)"
    };
    let mut results = Vec::new();
    writeln!(
        out,
        "kura bench iops: {} file in {}, {} KiB random reads, O_DIRECT, {path_kind} on {} workers, {:.1} s per depth",
        format_size(blocks * args.block as u64),
        args.dir.display(),
        args.block / 1024,
        runtime.workers(),
        args.seconds
    )
    .at("writing the report")?;
    let file = Arc::new(test_file.open_direct()?);
    for &depth in &args.depths {
        let r = measure(
            &runtime,
            &file,
            blocks,
            args.block,
            depth,
            Duration::from_secs_f64(args.seconds),
        )?;
        writeln!(
            out,
            "QD {:>3}: {:>10.0} IOPS  {:>9.1} MB/s  ({} reads in {:.2} s)",
            r.depth,
            r.iops,
            r.mb_per_s,
            r.reads,
            r.elapsed.as_secs_f64()
        )
        .at("writing the report")?;
        results.push(r);
    }
    Ok(results)
}

/// Random reads of `block` bytes over `blocks` blocks of `file` by `depth`
/// concurrent tasks (each keeping one read in flight) for `duration`. The clock
/// starts inside the runtime, when the first task is spawned, and only reads that
/// complete within `duration` count — so a late start (a busy worker) or the tail
/// of reads still in flight at the end cannot bias the rate.
pub fn measure(
    runtime: &Runtime,
    file: &Arc<File>,
    blocks: u64,
    block: usize,
    depth: usize,
    duration: Duration,
) -> LabResult<IopsResult> {
    let reads = Arc::new(AtomicU64::new(0));
    let (file, counter) = (file.clone(), reads.clone());
    runtime
        .block_on(async move {
            let deadline = Instant::now() + duration;
            for task in 0..depth {
                let (file, counter) = (file.clone(), counter.clone());
                spawn(async move {
                    let fd = file.as_raw_fd();
                    let mut rng = XorShift::new(task as u64 + 1);
                    let mut buf = buffer(block);
                    let mut done = 0u64;
                    loop {
                        let offset = rng.below(blocks) * block as u64;
                        let (result, back) = read_at(fd, offset, buf).await;
                        buf = back;
                        let n = result?;
                        if n != block {
                            return Err(
                                format!("short read of {n} bytes at offset {offset}").into()
                            );
                        }
                        if Instant::now() > deadline {
                            break;
                        }
                        done += 1;
                    }
                    counter.fetch_add(done, Ordering::Relaxed);
                    Ok::<(), BoxError>(())
                });
            }
            Ok::<(), BoxError>(())
        })
        .at("read failed")?;
    let reads = reads.load(Ordering::Relaxed);
    let secs = duration.as_secs_f64();
    Ok(IopsResult {
        depth,
        reads,
        elapsed: duration,
        iops: reads as f64 / secs,
        mb_per_s: reads as f64 * block as f64 / 1e6 / secs,
    })
}

/// The benchmark's data file, removed when dropped (also on errors).
struct TestFile {
    path: PathBuf,
}

impl TestFile {
    fn create(dir: &Path, size: u64) -> LabResult<TestFile> {
        let path = dir.join(format!("kura-bench-iops-{}.tmp", std::process::id()));
        let test_file = TestFile { path };
        let mut file = File::create(&test_file.path)
            .at(format_args!("cannot create {}", test_file.path.display()))?;
        // Random content, so no layer below can shortcut zero or repeated blocks.
        let mut rng = XorShift::new(0x6b75_7261);
        let mut chunk = vec![0u8; 1 << 20];
        let mut written = 0u64;
        while written < size {
            let n = (size - written).min(chunk.len() as u64) as usize;
            for word in chunk[..n].chunks_mut(8) {
                let bytes = rng.next().to_le_bytes();
                word.copy_from_slice(&bytes[..word.len()]);
            }
            file.write_all(&chunk[..n])
                .at(format_args!("cannot write {}", test_file.path.display()))?;
            written += n as u64;
        }
        file.sync_all()
            .at(format_args!("cannot sync {}", test_file.path.display()))?;
        Ok(test_file)
    }

    fn open_direct(&self) -> LabResult<File> {
        open_direct(&self.path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Unsupported {
                LabError::NoDirectIo(e)
            } else {
                LabError::IoAt {
                    what: format!("cannot open {} with O_DIRECT", self.path.display()),
                    source: e,
                }
            }
        })
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A small fast PRNG for offsets (quality is not a concern here).
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn format_size(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    if bytes as f64 >= GIB {
        format!("{:.2} GiB", bytes as f64 / GIB)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_runs_on_a_small_file_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("kura-bench-iops-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let result = run(
            &Config {
                size: 4 << 20,
                dir: dir.clone(),
                seconds: 0.2,
                depths: vec![1, 8],
                block: 4096,
                workers: 2,
            },
            &mut std::io::sink(),
        );
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Ok(r) => assert_eq!(r.len(), 2),
            // Some CI file systems refuse O_DIRECT; that must be a clear error.
            Err(e) => assert!(e.to_string().contains("O_DIRECT"), "unexpected error: {e}"),
        }
        assert_eq!(leftovers, 0, "the test file must be removed");
    }

    #[test]
    fn invalid_arguments_are_errors() {
        let args = Config {
            size: 1 << 20,
            dir: PathBuf::from("."),
            seconds: 1.0,
            depths: vec![1],
            block: 1000,
            workers: 1,
        };
        assert!(run(&args, &mut std::io::sink())
            .unwrap_err()
            .to_string()
            .contains("--block"));
        assert!(run(
            &Config {
                depths: vec![0],
                block: 4096,
                ..args.clone()
            },
            &mut std::io::sink()
        )
        .unwrap_err()
        .to_string()
        .contains("--depths"));
        assert!(run(
            &Config {
                seconds: 0.0,
                block: 4096,
                ..args.clone()
            },
            &mut std::io::sink()
        )
        .unwrap_err()
        .to_string()
        .contains("--seconds"));
        assert!(run(
            &Config {
                block: 4096,
                size: 100,
                ..args
            },
            &mut std::io::sink()
        )
        .unwrap_err()
        .to_string()
        .contains("--size"));
    }
}
