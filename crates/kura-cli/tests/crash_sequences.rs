//! Sequences survive SIGKILL without handing a value out twice: `kura`
//! processes drawing `nextval` (and inserting `serial` rows) are killed at
//! random moments; after every kill the next value is above every value any
//! process printed, and the serial keys of the committed rows are distinct.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use kura::{Database, OpenOptions, Value};

const KILLS: usize = 12;

fn int(v: &Value) -> i64 {
    match v {
        Value::BigInt(x) => *x,
        Value::Integer(x) => *x as i64,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn sigkill_never_repeats_a_sequence_value() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("seq.kura");
    run_ok(
        &db_path,
        &[
            "-c",
            "CREATE SEQUENCE s; CREATE TABLE t (id SERIAL PRIMARY KEY, v INTEGER)",
        ],
    );
    // Each statement prints one value; inserts draw from t's sequence too.
    let script: Vec<String> = (0..3000)
        .map(|i| {
            if i % 10 == 9 {
                "INSERT INTO t (v) SELECT 1 FROM (VALUES (1), (2), (3)) AS x(a)".to_string()
            } else {
                "SELECT nextval('s')".to_string()
            }
        })
        .collect();
    let script = script.join("; ");
    let mut rng = Rng::new(0x5E0_1234);
    let mut highest_seen = 0i64;
    for round in 0..KILLS {
        let mut child = kura()
            .args(["--format", "csv", "--db"])
            .arg(&db_path)
            .arg("-c")
            .arg(&script)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Read values until a random count, then kill while it runs on.
        let stop_after = 5 + rng.below(400) as usize;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < stop_after {
            let Some(Ok(line)) = lines.next() else { break };
            if let Ok(v) = line.trim().parse::<i64>() {
                assert!(
                    v > highest_seen,
                    "round {round}: value {v} handed out again"
                );
                highest_seen = v;
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(20)));
        let _ = child.kill(); // SIGKILL
                              // Values printed after the last read were handed out too.
        for line in lines.map_while(Result::ok) {
            if let Ok(v) = line.trim().parse::<i64>() {
                highest_seen = highest_seen.max(v);
            }
        }
        child.wait().unwrap();
        let db = Database::open(
            &db_path,
            OpenOptions {
                buffer_bytes: Some(4 << 20),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("round {round}: open after kill: {e}"));
        let mut session = db.session();
        let next = int(&session.execute("SELECT nextval('s')").unwrap().rows()[0][0]);
        assert!(
            next > highest_seen,
            "round {round}: nextval after the kill is {next}, but {highest_seen} was handed out"
        );
        highest_seen = next;
        let r = session
            .execute("SELECT count(*), count(DISTINCT id) FROM t")
            .unwrap();
        assert_eq!(
            r.rows()[0][0],
            r.rows()[0][1],
            "round {round}: serial keys repeat"
        );
    }
}
