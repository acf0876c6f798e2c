//! The counting path as on a CPU with a PMU, driven by recorded counter values (a
//! fake source): the operator marks of a query charge each operator its own
//! counts, and the report shows IPC and misses per 1,000 instructions per
//! operator and pipeline. (A test binary of its own: the probe is process-wide.)

use std::sync::Arc;

use kura_common::probe;
use kura_profile::counters::FakeSource;
use kura_profile::events::{Event, Pmu};
use kura_profile::run::{profile, Options, Step};

#[test]
fn recorded_hardware_counts_give_per_operator_ipc_and_mpki() {
    let pmu = Pmu {
        hardware: true,
        ibs_op: None,
    };
    assert_eq!(pmu.counting_group(), Event::HARDWARE_GROUP.to_vec());
    // Cumulative values of the 8 hardware events at each read: cycles,
    // instructions, cache refs, cache misses, L1D, LLC, dTLB, branch misses.
    let row = |k: u64| vec![1000 * k, 2000 * k, 100 * k, 10 * k, 40 * k, 4 * k, k, 2 * k];
    let rows = vec![row(0), row(1), row(3), row(6), row(10), row(15)];
    let opts = Options {
        pmu,
        sample: None,
        source: Arc::new(FakeSource::new(rows)),
        top: 10,
        source_root: None,
        page_names: None,
    };
    let mut steps = vec![Step {
        name: "q".into(),
        run: Box::new(|| {
            // What kura-exec does for a scan feeding a filter into an aggregate.
            std::thread::spawn(|| {
                probe::name(3, "table_scan: lineitem");
                probe::name(2, "filter");
                let _scan = probe::enter(3, 1); // opens the thread's group: read 0
                let _filter = probe::enter(2, 1); // scan charged read1 − read0
                drop(_filter); // filter charged read2 − read1
            })
            .join()
            .map_err(|_| "worker panicked".to_string())
        }),
    }];
    let p = profile(&mut steps, &opts).unwrap();
    assert_eq!(p.mode, "counting");
    assert!(p.note.is_none(), "a PMU machine prints no note");
    let q = &p.queries[0];
    let op = |label: &str| {
        q.operators
            .iter()
            .find(|o| o.label.contains(label))
            .unwrap()
    };
    // scan: read1 − read0 = row(1), then read3 − read2 = row(3): row(4) in all.
    let scan = op("lineitem");
    assert_eq!(scan.counts.get(Event::Cycles), Some(4_000));
    assert_eq!(scan.counts.get(Event::Instructions), Some(8_000));
    let m = scan.counts.metrics();
    assert!((m.ipc.unwrap() - 2.0).abs() < 1e-9);
    assert!((m.mpki[&Event::L1dReadMisses] - 20.0).abs() < 1e-9);
    assert!((m.cache_miss_rate.unwrap() - 0.1).abs() < 1e-9);
    let filter = op("filter");
    assert_eq!(filter.counts.get(Event::Cycles), Some(2_000));
    // Both ran in pipeline 1.
    assert_eq!(q.pipelines[0].node, Some(1));
    assert_eq!(q.pipelines[0].counts.get(Event::Cycles), Some(6_000));
    let text = p.render(10);
    assert!(
        text.contains("IPC") && text.contains("L1D miss/ki"),
        "{text}"
    );
}
