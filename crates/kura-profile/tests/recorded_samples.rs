//! The hardware sampling path on recorded sample files (tests/data, written by
//! make_samples.py from the documented layouts): PEBS load-latency and AMD IBS
//! op records parse to the samples listed there, and the top miss-site table
//! (paper 002, tables 5–6) counts them per function. Samples placed inside the
//! memory objects of a real run (q3_run.json: TPC-H Q3's registry log and
//! operator switches) are attributed to kura's named objects by time.

use kura_cache::cpu::Geometry;
use kura_profile::analyze::miss_sites;
use kura_profile::missclass::classify;
use kura_profile::objects::RecordedRun;
use kura_profile::records::{parse_ibs_op, parse_stream, sample_type as st, Sample};
use kura_profile::report::{DataObjectRow, Profile};
use kura_profile::run::{fill_object_tables, Window};
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

    // Miss classes from the sampled addresses, on a given geometry: five L1d
    // misses, two of them LLC misses; each is a first touch or a repeat.
    let l1 = Geometry::new(1, 32 << 10, 8, 64).unwrap();
    let llc = Geometry::new(3, 32 << 20, 16, 64).unwrap();
    let classes = classify(&samples, &[l1, llc], 5);
    let by: Vec<(&str, u64)> = classes
        .iter()
        .map(|c| (c.level.as_str(), c.misses))
        .collect();
    assert_eq!(by, [("L1d", 5), ("LLC", 2)]);
    for c in &classes {
        assert_eq!(c.first_touches + c.repeats, c.misses, "{c:?}");
        let distinct: std::collections::HashSet<u64> = samples
            .iter()
            .filter(|s| {
                if c.level == "L1d" {
                    s.l1_miss()
                } else {
                    s.llc_miss()
                }
            })
            .map(|s| s.addr.unwrap() / 64)
            .collect();
        assert_eq!(c.first_touches, distinct.len() as u64, "{c:?}");
    }
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

/// The object tables of `samples` attributed against the recorded Q3 run, as a
/// live profile builds them.
fn attribute_q3(samples: &[Sample]) -> Profile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/q3_run.json");
    let run = RecordedRun::load(&path).unwrap();
    let ops = run.operators();
    let mut p = Profile::default();
    let window = Window {
        start: 0,
        end: u64::MAX,
        query: "tpch:3",
        operators: &ops,
    };
    fill_object_tables(&mut p, samples, &run.registry, &[window]);
    p
}

fn object<'a>(rows: &'a [DataObjectRow], name: &str) -> &'a DataObjectRow {
    rows.iter()
        .find(|r| r.object == name)
        .unwrap_or_else(|| panic!("no row {name} in {rows:#?}"))
}

/// (loads, L1 misses, LLC misses) of the (operator, object) row whose
/// operator label starts with `op`.
fn pair(rows: &[DataObjectRow], op: &str, name: &str) -> Option<(u64, u64, u64)> {
    rows.iter()
        .find(|r| r.object == name && r.operator.as_deref().unwrap_or("").starts_with(op))
        .map(|r| (r.loads, r.l1_misses, r.llc_misses))
}

const PRICE: &str = "lineitem.l_extendedprice (column pages)";
const CHAIN: &str = "chain array (hash join build on orders.o_orderkey)";
const SLOTS: &str = "hash table (hash join build on orders.o_orderkey)";
const CUSTOMER: &str = "hash table (hash join build on customer.c_custkey)";
const GROUPS: &str = "group table (hash aggregation on lineitem.l_orderkey, orders.o_orderdate, orders.o_shippriority)";

#[test]
fn pebs_samples_of_a_real_q3_name_its_columns_and_hash_tables() {
    let types = st::IP | st::TID | st::TIME | st::ADDR | st::CALLCHAIN | st::WEIGHT | st::DATA_SRC;
    let samples = parse_stream(&data("pebs_q3.bin"), types, |_, _| Ok(())).unwrap();
    assert_eq!(samples.len(), 10);
    let p = attribute_q3(&samples);
    let price = object(&p.objects, PRICE);
    assert_eq!(
        (
            price.kind.as_str(),
            price.loads,
            price.l1_misses,
            price.llc_misses
        ),
        ("buffer page", 4, 3, 2)
    );
    assert_eq!(price.mean_latency, Some((5.0 + 250.0 + 45.0 + 230.0) / 4.0));
    let chain = object(&p.objects, CHAIN);
    assert_eq!(
        (
            chain.kind.as_str(),
            chain.loads,
            chain.l1_misses,
            chain.llc_misses
        ),
        ("hash table", 2, 2, 1)
    );
    assert_eq!(chain.mean_latency, Some(157.0));
    assert_eq!(object(&p.objects, SLOTS).loads, 1);
    // One address, two owners: the customer join's table while it lived, the
    // aggregation's group table after.
    assert_eq!(object(&p.objects, CUSTOMER).loads, 1);
    let groups = object(&p.objects, GROUPS);
    assert_eq!(
        (groups.kind.as_str(), groups.llc_misses),
        ("aggregation table", 1)
    );
    // The chain array's address after the join freed it is nobody's.
    assert_eq!(object(&p.objects, "unregistered memory").loads, 1);
    assert_eq!(p.objects.len(), 6);
    assert_eq!(p.objects[0].object, PRICE, "most L1 misses first");
    assert_eq!(p.objects.iter().map(|r| r.loads).sum::<u64>(), 10);
    // Per (operator, object): the operator the sampled thread ran then.
    assert_eq!(
        pair(&p.operator_objects, "#5 table_scan: lineitem", PRICE),
        Some((4, 3, 2))
    );
    assert_eq!(
        pair(&p.operator_objects, "#4 hash_join", CHAIN),
        Some((2, 2, 1))
    );
    assert_eq!(
        pair(&p.operator_objects, "#6 hash_join", CUSTOMER),
        Some((1, 1, 0))
    );
    assert_eq!(
        pair(&p.operator_objects, "#3 hash_aggregate", GROUPS),
        Some((1, 1, 1))
    );
    assert_eq!(
        pair(
            &p.operator_objects,
            "(outside operators)",
            "unregistered memory"
        ),
        Some((1, 1, 0))
    );
    let text = p.render(20);
    assert!(
        text.contains("loads per data object") && text.contains(PRICE),
        "{text}"
    );
}

#[test]
fn ibs_samples_of_a_real_q3_name_its_columns_and_hash_tables() {
    let types = st::IP | st::TID | st::TIME | st::RAW;
    let samples = parse_stream(&data("ibs_q3.bin"), types, |raw, s| {
        parse_ibs_op(raw)?.fill(s);
        Ok(())
    })
    .unwrap();
    assert_eq!(samples.len(), 5);
    let p = attribute_q3(&samples);
    let price = object(&p.objects, PRICE);
    assert_eq!((price.loads, price.l1_misses, price.llc_misses), (2, 1, 1));
    assert_eq!(price.mean_latency, Some(320.0));
    let chain = object(&p.objects, CHAIN);
    assert_eq!((chain.loads, chain.l1_misses, chain.llc_misses), (1, 1, 0));
    let groups = object(&p.objects, GROUPS);
    assert_eq!((groups.loads, groups.mean_latency), (1, Some(90.0)));
    assert_eq!(p.objects.len(), 3, "the op without an address is left out");
    assert_eq!(
        pair(&p.operator_objects, "#5 table_scan: lineitem", PRICE),
        Some((2, 1, 1))
    );
    // Served by L3 (IbsOpData2 source 2): an L1 miss, not an LLC miss.
    assert_eq!(
        pair(&p.operator_objects, "#3 hash_aggregate", GROUPS),
        Some((1, 1, 0))
    );
}
