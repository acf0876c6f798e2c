//! Property (fuzz) tests of the decoders that read bytes from disk: column pages,
//! long-value and overflow pages, B+tree index nodes, index keys, header slots
//! and table metadata. Fed arbitrary bytes and damaged valid pages, each must
//! return an error or a consistent result, never panic. A few hundred cases run
//! in `cargo test`; `PROPTEST_CASES=100000 cargo test -p kura-storage --test
//! fuzz_decoders` runs longer.

use kura_common::{DataType, Value, Vector};
use kura_storage::file::header::{self, Header, SLOT_SIZE};
use kura_storage::file::FORMAT_VERSION;
use kura_storage::index::{key, node};
use kura_storage::table::encode;
use kura_storage::TableMeta;
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

const TYPES: [DataType; 9] = [
    DataType::Boolean,
    DataType::Integer,
    DataType::BigInt,
    DataType::Double,
    DataType::Decimal {
        precision: 12,
        scale: 2,
    },
    DataType::Decimal {
        precision: 30,
        scale: 4,
    },
    DataType::Date,
    DataType::Varchar(None),
    DataType::Char(5),
];

/// A value of `dt` drawn from `x`.
fn value(dt: DataType, x: u64) -> Value {
    if x.is_multiple_of(7) {
        return Value::Null;
    }
    match dt {
        DataType::Boolean => Value::Boolean(x.is_multiple_of(2)),
        DataType::Integer => Value::Integer(x as i32),
        DataType::BigInt => Value::BigInt(x as i64),
        DataType::Double => Value::Double(x as f64 / 3.0),
        DataType::Decimal { scale, .. } => Value::Decimal((x % 1_000_000_000) as i128, scale),
        DataType::Date => Value::Date((x % 40_000) as i32),
        _ => Value::Text("é".repeat((x % 9) as usize) + &"z".repeat((x % 5) as usize)),
    }
}

/// A valid column page of `dt` holding values drawn from `seeds`, or a
/// long-value page, with `flips` (position, xor) applied.
fn damaged_page(dt: DataType, seeds: &[u64], flips: &[(usize, u8)], payload: usize) -> Vec<u8> {
    let vals: Vec<Value> = seeds.iter().map(|&s| value(dt, s)).collect();
    let v = Vector::from_values(dt, &vals).unwrap();
    let n = encode::rows_that_fit(&v, 0, payload);
    let mut page = vec![0u8; payload];
    if n == 0 || seeds.first().is_some_and(|s| s % 11 == 0) {
        encode::encode_long(&vec![b'q'; payload * 2], 42, &mut page);
    } else {
        encode::encode(&v, 0, n, &mut page);
    }
    for &(at, x) in flips {
        let i = at % payload;
        page[i] ^= x;
    }
    page
}

/// Decodes rows `from..to` into a vector that may already hold rows; checks
/// the vector is consistent afterwards, and unchanged on error.
fn decode_checked(page: &[u8], dt: DataType, from: usize, to: usize, prefill: usize) {
    let mut out = Vector::new(dt, 0);
    for i in 0..prefill {
        if i % 2 == 0 {
            out.push_null();
        } else {
            out.append(&Vector::from_values(dt, &[value(dt, i as u64 * 7 + 1)]).unwrap());
        }
    }
    let before = out.len();
    let validity_before = out.validity.as_ref().map(Vec::len);
    match encode::decode_into(page, dt, from, to, &mut out) {
        Ok(()) => assert_eq!(out.len(), before + (to - from)),
        Err(_) => {
            assert_eq!(out.len(), before, "a failed decode changed the vector");
            assert_eq!(out.validity.as_ref().map(Vec::len), validity_before);
        }
    }
    if let Some(v) = &out.validity {
        assert_eq!(v.len(), out.len(), "validity out of step with the values");
    }
    for i in 0..out.len() {
        let _ = out.get_value(i);
    }
}

fn any_type() -> impl Strategy<Value = DataType> {
    (0..TYPES.len()).prop_map(|i| TYPES[i])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn column_pages_of_random_bytes(
        page in prop::collection::vec(any::<u8>(), 0..600),
        dt in any_type(),
        from in 0usize..300,
        len in 0usize..300,
        prefill in 0usize..4,
    ) {
        decode_checked(&page, dt, from, from + len, prefill);
        let _ = encode::decode_long(&page);
        let _ = encode::decode_overflow(&page);
        let _ = encode::row_count(&page);
        let _ = encode::is_long(&page);
    }

    #[test]
    fn damaged_column_pages(
        dt in any_type(),
        read_as in any_type(),
        seeds in prop::collection::vec(any::<u64>(), 1..400),
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..6),
        payload in prop::sample::select(vec![512usize, 4096, 16368]),
        from in 0usize..500,
        len in 0usize..500,
        prefill in 0usize..3,
    ) {
        let page = damaged_page(dt, &seeds, &flips, payload);
        let n = encode::row_count(&page);
        // Read inside the recorded rows most of the time, anywhere otherwise.
        let (from, to) = if n > 0 && from % 4 != 0 {
            let a = from % n;
            (a, (a + len).min(n))
        } else {
            (from, from + len)
        };
        decode_checked(&page, dt, from, to, prefill);
        // Read back as another type: an error, never a panic.
        decode_checked(&page, read_as, from, to, prefill);
        if let Ok((l, next, inline)) = encode::decode_long(&page) {
            assert!(l > inline.len() && next != 0);
        }
    }

    #[test]
    fn index_nodes(
        leaf in any::<bool>(),
        entries in prop::collection::vec(prop::collection::vec(any::<u8>(), 8..40), 0..60),
        prefix in prop::collection::vec(any::<u8>(), 0..12),
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..6),
        raw in prop::option::of(prop::collection::vec(any::<u8>(), 0..300)),
        probe in prop::collection::vec(any::<u8>(), 0..48),
        payload in prop::sample::select(vec![1024usize, 16368, 70000]),
    ) {
        let page = match raw {
            // Random bytes, usually behind a valid magic so parsing goes further.
            Some(mut b) => {
                if b.len() >= 2 && b[0] % 4 != 0 {
                    b[0..2].copy_from_slice(node::MAGIC);
                }
                b
            }
            None => {
                let mut buf = vec![0u8; payload];
                let mut sorted = entries.clone();
                sorted.sort();
                let mut slots: Vec<&[u8]> = sorted.iter().map(|e| e.as_slice()).collect();
                let w = node::offset_width(payload);
                let need = |slots: &[&[u8]]| {
                    let total = slots.iter().map(|s| s.len()).sum::<usize>();
                    if leaf {
                        node::leaf_size(w, slots.len(), total, 0) + prefix.len()
                    } else {
                        node::inner_size(w, slots.len(), total)
                    }
                };
                while need(&slots) > payload {
                    slots.pop();
                }
                if leaf {
                    node::write_leaf(&mut buf, &prefix, &slots, 7, 3);
                } else {
                    let children: Vec<u64> = (0..slots.len() as u64).map(|c| c + 100).collect();
                    node::write_inner(&mut buf, 1, &children, &slots);
                }
                for &(at, x) in &flips {
                    let i = at % payload;
                    buf[i] ^= x;
                }
                buf
            }
        };
        if let Ok(n) = node::Node::parse(&page) {
            let shown = n.count().min(200);
            for i in 0..shown {
                if n.is_leaf() {
                    let _ = n.entry(i);
                    let _ = n.row_id(i);
                    let _ = n.suffix(i);
                    let _ = n.cmp_entry(i, &probe);
                    let _ = n.entry_starts_with(i, &probe);
                } else {
                    let _ = n.child(i);
                    let _ = n.separator(i);
                }
            }
            let _ = (n.next_leaf(), n.prev_leaf(), n.prefix(), n.level());
            if n.is_leaf() {
                assert!(n.lower_bound(&probe) <= n.count());
            } else if n.count() > 0 {
                assert!(n.child_for(&probe) < n.count());
            }
        }
    }

    #[test]
    fn index_keys(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        types in prop::collection::vec(any_type(), 1..4),
    ) {
        let _ = key::decode_key(&types, &bytes);
    }

    #[test]
    fn header_slots(
        generation in 1u64..1000,
        flips in prop::collection::vec((0usize..SLOT_SIZE, 1u8..=255), 0..8),
        other_flips in prop::collection::vec((0usize..SLOT_SIZE, 1u8..=255), 0..3),
        raw in prop::option::of(prop::collection::vec(any::<u8>(), SLOT_SIZE..=SLOT_SIZE)),
        recover in any::<bool>(),
    ) {
        let h = |g: u64| Header {
            version: FORMAT_VERSION,
            page_size: 16384,
            generation: g,
            catalog_root: 3,
            page_count: 9,
        };
        let raw_was_none = raw.is_none();
        let mut a = match raw {
            Some(b) => b,
            None => h(generation).encode().to_vec(),
        };
        for &(at, x) in &flips {
            a[at] ^= x;
        }
        let mut b = h(generation + 1).encode().to_vec();
        for &(at, x) in &other_flips {
            b[at] ^= x;
        }
        let i = (generation % 2) as usize;
        let mut slots = [Vec::new(), Vec::new()];
        slots[i] = a;
        slots[1 - i] = b;
        let undamaged = raw_was_none && flips.is_empty() && other_flips.is_empty();
        let decoded = [header::decode(0, &slots[0]), header::decode(1, &slots[1])];
        match header::choose(decoded, recover) {
            Ok(chosen) if undamaged => assert_eq!(chosen.header, h(generation + 1)),
            Ok(chosen) => {
                // Whatever opens is one of the two commits (or its repair).
                let g = chosen.header.generation;
                assert!(g == generation || g == generation + 1 || chosen.repair.is_some()
                    || g == generation + 2, "opened commit {g}");
            }
            Err(e) => assert!(!undamaged, "undamaged slots refused: {e:?}"),
        }
    }

    #[test]
    fn table_metadata(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(meta) = TableMeta::from_bytes(&bytes) {
            let _ = meta.pages().count();
        }
    }
}

/// A column page decodes exactly what was encoded (the fuzz tests above only
/// ask for no panics; this keeps them honest about valid input).
#[test]
fn valid_pages_round_trip_for_every_type() {
    for dt in TYPES {
        let seeds: Vec<u64> = (0..300).map(|i| i * 2654435761).collect();
        let vals: Vec<Value> = seeds.iter().map(|&s| value(dt, s)).collect();
        let v = Vector::from_values(dt, &vals).unwrap();
        let n = encode::rows_that_fit(&v, 0, 4096);
        assert!(n > 0);
        let mut page = vec![0u8; 4096];
        encode::encode(&v, 0, n, &mut page);
        let mut out = Vector::new(dt, 0);
        encode::decode_into(&page, dt, 0, n, &mut out).unwrap();
        for (i, want) in vals.iter().enumerate().take(n) {
            assert_eq!(&out.get_value(i), want, "{dt} row {i}");
        }
    }
}
