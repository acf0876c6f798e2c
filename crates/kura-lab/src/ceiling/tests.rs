//! The ceiling on a fake device with a fixed service rate (one read at a time, each
//! taking 1/R s, half as fast for its first second — a cold device): a query reading
//! through the same device can then not show more than 100 % of the ceiling beyond
//! the measured spread. Without the warm-up the same check fails, which is what the
//! warm-up is for.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

/// Reads per second the fake device serves once warm.
const RATE: f64 = 4000.0;

struct FakeDevice {
    born: Instant,
    cold_for: Duration,
    next_free: Mutex<Instant>,
}

impl FakeDevice {
    fn new(cold_for: Duration) -> Arc<Self> {
        let now = Instant::now();
        Arc::new(FakeDevice {
            born: now,
            cold_for,
            next_free: Mutex::new(now),
        })
    }

    /// Queues one read behind those in service; returns when it completes.
    fn read(&self) -> Instant {
        let done = {
            let mut free = self.next_free.lock().unwrap();
            let start = (*free).max(Instant::now());
            let mut service = Duration::from_secs_f64(1.0 / RATE);
            if start < self.born + self.cold_for {
                service *= 2;
            }
            *free = start + service;
            *free
        };
        if let Some(wait) = done.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        done
    }

    /// Reads per second completed by `depth` concurrent readers within `duration`.
    fn run(self: &Arc<Self>, depth: usize, duration: Duration) -> f64 {
        let deadline = Instant::now() + duration;
        let threads: Vec<_> = (0..depth)
            .map(|_| {
                let dev = self.clone();
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        if dev.read() > deadline {
                            break;
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let reads: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        reads as f64 / duration.as_secs_f64()
    }
}

struct FakeProbe(Arc<FakeDevice>);

impl Probe for FakeProbe {
    fn iops(&self, depth: usize, duration: Duration) -> LabResult<f64> {
        Ok(self.0.run(depth, duration))
    }
}

#[test]
fn a_query_cannot_exceed_the_ceiling_beyond_its_spread() {
    let device = FakeDevice::new(Duration::from_millis(800));
    let plan = Plan {
        depths: vec![1, 4, 16],
        warmup: Duration::from_millis(1000),
        duration: Duration::from_millis(150),
        reps: 3,
    };
    let ceiling = measure(&FakeProbe(device.clone()), &plan, &mut |_, _| {}).unwrap();
    // The knee: depth 1 pays the sleep's overshoot, deeper queues keep the device busy.
    let (qd1, qd16) = (
        ceiling.median_at(1).unwrap(),
        ceiling.median_at(16).unwrap(),
    );
    assert!(qd16 > 0.9 * RATE && qd16 <= RATE * 1.01, "QD 16: {qd16}");
    assert!(qd1 <= qd16, "QD 1 {qd1} above QD 16 {qd16}");
    assert!(ceiling.at_best().depth > 1);
    // A "query" as fast as the device allows, through the same device.
    let query = device.run(32, Duration::from_millis(300));
    let pct = ceiling.percent(query);
    assert!(
        pct <= ceiling.percent_limit() + 1.0,
        "query at {pct:.1} % of a ceiling of {:.0} (spread up to {:.1} %)",
        ceiling.iops(),
        ceiling.percent_limit()
    );
    assert!(pct > 90.0, "the query ran at the device's rate: {pct:.1} %");
}

#[test]
fn without_the_warm_up_a_cold_device_gives_a_ceiling_queries_exceed() {
    let device = FakeDevice::new(Duration::from_millis(600));
    let plan = Plan {
        depths: vec![16],
        warmup: Duration::ZERO,
        duration: Duration::from_millis(200),
        reps: 1,
    };
    let ceiling = measure(&FakeProbe(device.clone()), &plan, &mut |_, _| {}).unwrap();
    std::thread::sleep(Duration::from_millis(450));
    let query = device.run(32, Duration::from_millis(200));
    assert!(
        ceiling.percent(query) > ceiling.percent_limit() + 50.0,
        "a cold ceiling must be too low: {:.0} vs query {query:.0}",
        ceiling.iops()
    );
}

#[test]
fn sweep_statistics_and_csv() {
    let d = DepthResult {
        depth: 4,
        samples: vec![300.0, 100.0, 200.0, 400.0],
    };
    assert_eq!(d.median(), 250.0);
    assert_eq!((d.min(), d.max()), (100.0, 400.0));
    let c = Ceiling {
        sweep: vec![
            DepthResult {
                depth: 1,
                samples: vec![50.0],
            },
            d,
        ],
        best: 1,
    };
    assert_eq!(c.iops(), 250.0);
    assert_eq!(c.percent_limit(), 160.0);
    assert_eq!(
        c.csv(),
        "queue_depth,median_iops,min_iops,max_iops,samples\n1,50,50,50,50\n4,250,100,400,300 100 200 400\n"
    );
    assert!(measure(
        &FakeProbe(FakeDevice::new(Duration::ZERO)),
        &Plan {
            depths: vec![],
            ..Plan::standard(0.1, 1)
        },
        &mut |_, _| {}
    )
    .is_err());
}
