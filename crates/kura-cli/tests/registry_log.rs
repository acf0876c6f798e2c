//! A memory-object registry log from a real run: TPC-H Q3 at SF 0.01, in this
//! process, from a cold buffer pool, with the registry on and the operator
//! switches logged. The log must be in time order, name the lineitem pages Q3
//! reads by column, and free every hash table it registers. With
//! `KURA_WRITE_RECORDED_RUN=FILE` the run is also written there: kura-profile's
//! recorded-sample tests read such a file (tests/data/q3_run.json, whose
//! samples `make_samples.py` places inside its objects).

use std::sync::Arc;

use kura::{Database, OpenOptions};
use kura_common::memobj::{self, Event, ObjectKind};
use kura_common::probe;
use kura_profile::attribution::OperatorObserver;
use kura_profile::objects::{ObjectLog, RecordedRun};

fn open(path: &std::path::Path) -> Database {
    Database::open(
        path,
        OpenOptions {
            buffer_bytes: Some(64 << 20),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn q3_registry_log_is_timed_and_names_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tpch.db");
    {
        let db = open(&path);
        let mut session = db.session();
        session.set_progress(None);
        kura::tpch::load(
            &mut session,
            kura::tpch::load::Source::Generate(0.01),
            &|_, _| {},
        )
        .unwrap();
    }
    // Reopened: a cold pool, so every page Q3 reads is registered as it comes in.
    let db = open(&path);
    let mut session = db.session();
    let observer = Arc::new(OperatorObserver::new(None, true));
    let installed = probe::install(observer.clone()).expect("no other observer here");
    memobj::take_timed_log();
    memobj::enable(true);
    let q3 = kura::tpch::run::query_text("3").unwrap();
    let rows = kura::stack::on_statement_stack(|| session.execute(q3)).unwrap();
    memobj::enable(false);
    drop(installed);
    drop(rows);
    let storage = db.storage();
    let name =
        kura_storage::resident::page_namer(storage.buffer().file(), &storage.catalog()).unwrap();
    let mut log = ObjectLog::take(Some(&name));
    // The machine's memory map and executable path stay out of the data file.
    log.maps.clear();
    log.exe.clear();
    let ops = observer.take();

    assert!(
        log.events.windows(2).all(|w| w[0].time <= w[1].time),
        "log order is time order"
    );
    let mapped = |pred: &dyn Fn(&memobj::Object) -> bool| {
        log.events
            .iter()
            .filter(|t| matches!(&t.event, Event::Map { object, .. } if pred(object)))
            .count()
    };
    for col in [
        "lineitem.l_extendedprice",
        "lineitem.l_discount",
        "lineitem.l_orderkey",
    ] {
        let n = mapped(&|o| o.kind == ObjectKind::BufferFrame && o.name == col);
        assert!(n > 0, "no page of {col} was registered");
    }
    // Every hash table's ranges are given back when its join ends.
    let mut tables = 0;
    for (i, t) in log.events.iter().enumerate() {
        if let Event::Map { object, start, .. } = &t.event {
            if object.kind != ObjectKind::HashTable {
                continue;
            }
            tables += 1;
            let op = object.operator.as_deref().unwrap_or("");
            assert!(op.starts_with("hash join build on"), "{op}");
            assert!(
                log.events[i..]
                    .iter()
                    .any(|u| matches!(u.event, Event::Unmap { start: s, .. } if s == *start)),
                "{} of {op} is never unregistered",
                object.name
            );
        }
    }
    assert!(tables > 0, "Q3's joins registered no hash table");
    assert!(
        ops.names
            .values()
            .any(|l| l.to_lowercase().contains("join")),
        "{:?}",
        ops.names
    );
    assert!(!ops.transitions.is_empty());
    if let Some(out) = std::env::var_os("KURA_WRITE_RECORDED_RUN") {
        RecordedRun::new(log, &ops)
            .save(std::path::Path::new(&out))
            .unwrap();
    }
}
