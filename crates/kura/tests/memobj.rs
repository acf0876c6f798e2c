//! The memory profiler's registry (`kura_common::memobj`) names what a query
//! touches: buffer frames, hash join and aggregation tables, sort buffers, and the
//! out-of-order runtime's I/O buffers — and names nothing while profiling is off.
//! Its own test binary: the registry is process-wide.

use kura::{Database, OpenOptions};
use kura_common::memobj::{self, Event, ObjectKind};

fn kinds(log: &[Event]) -> Vec<(ObjectKind, String)> {
    log.iter()
        .filter_map(|e| match e {
            Event::Map { object, .. } => Some((object.kind, object.name.clone())),
            Event::Unmap { .. } => None,
        })
        .collect()
}

#[test]
fn a_query_names_its_frames_tables_and_sort_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let opts = OpenOptions {
        buffer_bytes: Some(64 << 20),
        ..OpenOptions::default()
    };
    let db = Database::open(&dir.path().join("m.kura"), opts).unwrap();
    let mut s = db.session();
    s.execute("CREATE TABLE t (k INTEGER, v INTEGER, name VARCHAR)")
        .unwrap();
    let rows: Vec<String> = (0..5000)
        .map(|i| format!("({i}, {}, 'n{}')", i % 97, i % 13))
        .collect();
    s.execute(&format!("INSERT INTO t VALUES {}", rows.join(",")))
        .unwrap();
    let query = "SELECT a.v, count(*) FROM t a JOIN t b ON a.k = b.v \
                 GROUP BY a.v ORDER BY a.v";
    let sorted = "SELECT name, k FROM t ORDER BY name, k DESC";

    // Off: nothing is logged.
    memobj::enable(false);
    let _ = memobj::take_log();
    s.execute(query).unwrap();
    assert!(memobj::take_log().is_empty());

    for mode in ["serial", "static", "ooo"] {
        s.execute(&format!("SET execution_mode = '{mode}'"))
            .unwrap();
        memobj::enable(true);
        s.execute(query).unwrap();
        s.execute(sorted).unwrap();
        memobj::enable(false);
        let log = memobj::take_log();
        let named = kinds(&log);
        for kind in [
            ObjectKind::HashTable,
            ObjectKind::AggregateTable,
            ObjectKind::SortBuffer,
        ] {
            assert!(
                named.iter().any(|(k, _)| *k == kind),
                "{mode}: no {kind:?} in {named:?}"
            );
        }
        for what in [
            "sort buffer: input rows",
            "sort buffer: keys",
            "sort buffer: permutation",
        ] {
            assert!(named.iter().any(|(_, n)| n == what), "{mode}: no {what}");
        }
        // Every sort buffer named is released when its run is sorted.
        let maps = log
            .iter()
            .filter(
                |e| matches!(e, Event::Map { object, .. } if object.kind == ObjectKind::SortBuffer),
            )
            .count();
        assert!(maps > 0);
        let mut map = memobj::ObjectMap::new();
        for e in &log {
            map.apply(e);
        }
        for e in &log {
            if let Event::Map { start, object, .. } = e {
                if object.kind == ObjectKind::SortBuffer {
                    let live = map.lookup(*start).map(|id| map.object(id).kind);
                    assert_ne!(live, Some(ObjectKind::SortBuffer), "{mode}: still named");
                }
            }
        }
    }
}
