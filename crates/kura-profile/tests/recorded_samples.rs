//! The hardware sampling path on recorded sample files (tests/data, written by
//! make_samples.py from the documented layouts): PEBS load-latency and AMD IBS
//! op records parse to the samples listed there, and the top miss-site table
//! (paper 002, tables 5–6) counts them per function.

use kura_profile::analyze::miss_sites;
use kura_profile::records::{parse_ibs_op, parse_stream, sample_type as st, Sample};
use kura_profile::symbolize::TableSymbolizer;

fn data(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn symbols() -> TableSymbolizer {
    TableSymbolizer(vec![
        (
            0x401000,
            "kura_exec::ops::join::hash::JoinProbeOp::probe".into(),
            Some("crates/kura-exec/src/ops/join/hash.rs:120".into()),
        ),
        (
            0x402000,
            "kura_exec::ops::aggregate::AggregateSink::consume".into(),
            Some("crates/kura-exec/src/ops/aggregate.rs:88".into()),
        ),
    ])
}

#[test]
fn pebs_load_latency_records_parse_and_rank_miss_sites() {
    let types = st::IP | st::TID | st::TIME | st::ADDR | st::CALLCHAIN | st::WEIGHT | st::DATA_SRC;
    let samples = parse_stream(&data("pebs_load_latency.bin"), types, |_, _| Ok(())).unwrap();
    // Six samples; the MMAP record is skipped.
    assert_eq!(samples.len(), 6);
    assert_eq!(
        samples[1],
        Sample {
            ip: 0x401010,
            tid: 100,
            time: 2_000,
            addr: Some(0x7f00_0000_1040),
            level: Some("RAM".into()),
            latency: Some(210),
            callchain: vec![0x500000],
        }
    );
    let levels: Vec<&str> = samples
        .iter()
        .map(|s| s.level.as_deref().unwrap())
        .collect();
    assert_eq!(levels, ["L1", "RAM", "L3", "RAM", "L2", "LFB"]);
    let sites = miss_sites(&samples, &mut symbols());
    assert_eq!(sites.len(), 2);
    // The aggregate's three loads all missed L1 (RAM, L2, LFB); the probe's two of three.
    let agg = &sites[0];
    assert_eq!(
        agg.function,
        "kura_exec::ops::aggregate::AggregateSink::consume"
    );
    assert_eq!((agg.loads, agg.l1_misses, agg.llc_misses), (3, 3, 1));
    assert!((agg.mean_latency.unwrap() - (230.0 + 14.0 + 9.0) / 3.0).abs() < 1e-9);
    let probe = &sites[1];
    assert_eq!((probe.loads, probe.l1_misses, probe.llc_misses), (3, 2, 1));
    assert_eq!(
        probe.line.as_deref(),
        Some("crates/kura-exec/src/ops/join/hash.rs:120")
    );
}

#[test]
fn ibs_op_records_parse_and_rank_miss_sites() {
    let types = st::IP | st::TID | st::TIME | st::RAW;
    let samples = parse_stream(&data("ibs_op.bin"), types, |raw, s| {
        parse_ibs_op(raw)?.fill(s);
        Ok(())
    })
    .unwrap();
    assert_eq!(samples.len(), 5);
    let levels: Vec<Option<&str>> = samples.iter().map(|s| s.level.as_deref()).collect();
    assert_eq!(
        levels,
        [Some("L1"), Some("RAM"), Some("L2"), Some("L3"), None],
        "the last op is not a load"
    );
    assert_eq!(samples[1].latency, Some(320));
    assert_eq!(samples[1].addr, Some(0x7f00_0001_0040));
    assert_eq!(samples[4].addr, None, "no valid linear address");
    let sites = miss_sites(&samples, &mut symbols());
    let probe = &sites[0];
    assert_eq!(
        probe.function,
        "kura_exec::ops::join::hash::JoinProbeOp::probe"
    );
    assert_eq!((probe.loads, probe.l1_misses, probe.llc_misses), (3, 2, 1));
    let agg = &sites[1];
    assert_eq!((agg.loads, agg.l1_misses, agg.llc_misses), (1, 1, 0));
    assert_eq!(agg.mean_latency, Some(90.0));
}
