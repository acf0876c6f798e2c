//! The lackey parser on a real recorded trace (trimmed): `kura trace child`
//! running `SELECT count(*) FROM region`, with its marker page's stores.

use kura_profile::simulated::{Parser, TraceAccess};

const TRACE: &str = include_str!("data/lackey-select-count.trace");

fn marker() -> u64 {
    let first = TRACE.lines().next().unwrap();
    let hex = first
        .split("kura-trace-marker ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    u64::from_str_radix(hex, 16).unwrap()
}

fn parse() -> (Parser, Vec<TraceAccess>) {
    let mut p = Parser::new(marker());
    let accesses = TRACE.lines().filter_map(|l| p.line(l.as_bytes())).collect();
    (p, accesses)
}

/// Data lines between the first start store and the stop store, found with
/// plain string handling (not the parser's).
fn expected_region() -> Vec<(u64, u64, bool)> {
    let m = marker();
    let mut ip = 0;
    let mut inside = false;
    let mut out = Vec::new();
    for l in TRACE.lines() {
        let fields: Vec<&str> = l.split_whitespace().collect();
        if fields.len() != 2 || !["I", "L", "S", "M"].contains(&fields[0]) {
            continue;
        }
        let addr = u64::from_str_radix(fields[1].split(',').next().unwrap(), 16).unwrap();
        match fields[0] {
            "I" => ip = addr,
            "S" | "M" if addr >= m && addr < m + 4096 => {
                if addr == m {
                    inside = true;
                } else if addr == m + 1 {
                    inside = false;
                }
            }
            kind if inside => out.push((ip, addr, kind != "L")),
            _ => {}
        }
    }
    out
}

#[test]
fn the_region_of_a_real_trace_parses_with_instruction_addresses_and_markers() {
    let (p, accesses) = parse();
    let s = p.stats();
    assert_eq!(s.malformed, 0, "every line is a lackey record or a message");
    assert_eq!(s.regions, 1);
    assert_eq!(s.class_switches, 1, "one query: class 0");
    assert!(s.events >= 1, "the query's buffer frames were registered");
    let expected = expected_region();
    assert!(
        expected.len() > 1000,
        "the trimmed region still has accesses"
    );
    let got: Vec<(u64, u64, bool)> = accesses
        .iter()
        .map(|a| (a.ip, a.addr, a.is_write))
        .collect();
    assert_eq!(got, expected);
    assert!(accesses
        .iter()
        .all(|a| a.class == 0 && a.size > 0 && a.ip != 0));
    // Epochs only grow, and reach the number of events seen in the region.
    assert!(accesses.windows(2).all(|w| w[0].epoch <= w[1].epoch));
    assert_eq!(u64::from(accesses.last().unwrap().epoch), s.events);
}

#[test]
fn without_the_marker_every_access_counts_and_marker_stores_are_plain_stores() {
    let mut p = Parser::whole_trace();
    let all = TRACE.lines().filter_map(|l| p.line(l.as_bytes())).count();
    let (_, region) = parse();
    assert!(all > region.len());
    assert_eq!(p.stats().regions, 0);
}
