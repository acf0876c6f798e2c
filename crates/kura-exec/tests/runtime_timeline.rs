//! The timeline recorder: CPU busy % and IOPS per interval, exported as CSV.

use std::os::unix::io::AsRawFd;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kura_exec::runtime::{buffer, read_exact_at, spawn, BoxError, Runtime, RuntimeConfig};

fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test exceeded {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("test body panicked"),
    }
}

/// CPU time consumed by the calling thread.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "thread CPU clock unavailable");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        workers: 2,
        timeline_interval: Duration::from_millis(20),
        ..RuntimeConfig::default()
    })
    .expect("runtime starts")
}

#[test]
fn timeline_shows_cpu_work_and_idle_time() {
    bounded(60, || {
        let rt = runtime();
        assert!(rt.stop_timeline().is_none(), "nothing recorded yet");
        let recording_started = Instant::now();
        rt.start_timeline();
        // 150 ms of CPU time on each of the two workers (however long that
        // takes on a loaded machine), then 200 ms idle.
        let parts: Vec<_> = (0..2)
            .map(|_| {
                || {
                    let start = thread_cpu_time();
                    let mut x = 1u64;
                    while thread_cpu_time() - start < Duration::from_millis(150) {
                        for _ in 0..1000 {
                            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
                        }
                    }
                    Ok::<u64, BoxError>(x)
                }
            })
            .collect();
        rt.run_static(parts).expect("work runs");
        let busy_until = recording_started.elapsed();
        std::thread::sleep(Duration::from_millis(200));
        let timeline = rt.stop_timeline().expect("recording");
        let shown: Vec<String> = timeline
            .samples
            .iter()
            .map(|s| format!("{:.0}ms:{:.0}%", s.at.as_secs_f64() * 1e3, s.cpu_busy_pct))
            .collect();
        assert!(timeline.samples.len() >= 5, "too few samples: {shown:?}");
        // Integrated over time, the busy % gives the CPU time spent: the 300 ms
        // of work plus a little runtime overhead.
        let mut previous = Duration::ZERO;
        let cpu_seconds: f64 = timeline
            .samples
            .iter()
            .map(|s| {
                let width = (s.at - previous).as_secs_f64();
                previous = s.at;
                s.cpu_busy_pct / 100.0 * width
            })
            .sum();
        assert!(
            (0.29..0.40).contains(&cpu_seconds),
            "recorded {cpu_seconds:.3} CPU seconds for 0.3 s of work: {shown:?}"
        );
        // Intervals that began well after the work ended show (almost) no CPU.
        let mut previous = Duration::ZERO;
        for s in &timeline.samples {
            if previous > busy_until + Duration::from_millis(10) {
                assert!(s.cpu_busy_pct < 20.0, "idle time shows as busy: {shown:?}");
            }
            previous = s.at;
        }
        assert!(timeline.mean_cpu_busy_pct() > 5.0);
        let csv = timeline.to_csv();
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("seconds,cpu_busy_pct,iops,in_flight"));
        assert_eq!(lines.count(), timeline.samples.len());
        assert!(timeline.samples.windows(2).all(|w| w[0].at < w[1].at));
    });
}

#[test]
fn timeline_counts_reads_per_second() {
    bounded(60, || {
        let dir =
            std::env::temp_dir().join(format!("kura-runtime-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("data.bin");
        std::fs::write(&path, vec![7u8; 64 * 4096]).expect("write");
        let file = Arc::new(std::fs::File::open(&path).expect("open"));
        let rt = runtime();
        rt.start_timeline();
        let reads = 5000u64;
        let f = file.clone();
        rt.block_on(async move {
            for k in 0..reads {
                let f = f.clone();
                spawn(async move {
                    let buf = read_exact_at(f.as_raw_fd(), (k % 64) * 4096, buffer(4096)).await?;
                    if buf[4095] != 7 {
                        return Err("wrong byte".into());
                    }
                    Ok::<(), BoxError>(())
                });
            }
            Ok::<(), BoxError>(())
        })
        .expect("reads run");
        std::thread::sleep(Duration::from_millis(30));
        let timeline = rt.stop_timeline().expect("recording");
        let _ = std::fs::remove_dir_all(&dir);
        let total: f64 = {
            let mut previous = Duration::ZERO;
            timeline
                .samples
                .iter()
                .map(|s| {
                    let width = (s.at - previous).as_secs_f64();
                    previous = s.at;
                    s.iops * width
                })
                .sum()
        };
        assert!(
            (total - reads as f64).abs() < 1.0,
            "timeline counted {total} reads of {reads}"
        );
        assert!(timeline.mean_iops() > 0.0);
    });
}

#[test]
fn timeline_counts_serial_work_on_the_callers_thread() {
    bounded(60, || {
        let rt = runtime();
        rt.start_timeline();
        rt.run_serial(async {
            let start = thread_cpu_time();
            let mut x = 1u64;
            while thread_cpu_time() - start < Duration::from_millis(100) {
                for _ in 0..1000 {
                    x = std::hint::black_box(x.wrapping_mul(5).wrapping_add(3));
                }
            }
            Ok::<u64, BoxError>(x)
        })
        .expect("serial work runs");
        // CPU the caller's thread spends after the serial run is not the runtime's.
        let start = thread_cpu_time();
        while thread_cpu_time() - start < Duration::from_millis(100) {
            std::hint::black_box(start);
        }
        let timeline = rt.stop_timeline().expect("recording");
        let mut previous = Duration::ZERO;
        let cpu_seconds: f64 = timeline
            .samples
            .iter()
            .map(|s| {
                let width = (s.at - previous).as_secs_f64();
                previous = s.at;
                s.cpu_busy_pct / 100.0 * width
            })
            .sum();
        assert!(
            (0.095..0.15).contains(&cpu_seconds),
            "recorded {cpu_seconds:.3} CPU seconds for 0.1 s of serial work"
        );
    });
}
