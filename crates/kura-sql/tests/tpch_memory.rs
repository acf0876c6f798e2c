//! The 22 TPC-H queries over in-memory tables generated with tpchgen, checked
//! against the reference answers (scale factor from `KURA_SQL_TPCH_SF`, default 0.01),
//! with both join implementations for the smaller queries.

mod common;

use common::*;

fn sf() -> String {
    std::env::var("KURA_SQL_TPCH_SF").unwrap_or_else(|_| "0.01".into())
}

#[test]
fn tpch_queries_match_reference_answers() {
    let sf = sf();
    let answers = answers_dir(&sf).expect("reference answers directory (set KURA_TPCH_ANSWERS)");
    let mut catalog = tpch_catalog(sf.parse().expect("scale factor"));
    let only: Option<Vec<u32>> = std::env::var("KURA_SQL_TPCH_QUERIES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect());
    let mut failures = Vec::new();
    let mut ran = 0;
    for q in 1..=22u32 {
        if only.as_ref().is_some_and(|o| !o.contains(&q)) {
            continue;
        }
        let path = queries_dir().join(format!("q{q:02}.sql"));
        let Ok(sql) = std::fs::read_to_string(&path) else {
            failures.push(format!("q{q:02}: query text missing at {}", path.display()));
            continue;
        };
        let answer =
            std::fs::read_to_string(answers.join(format!("q{q:02}.csv"))).expect("answer file");
        let t0 = std::time::Instant::now();
        let res = run_sql(&mut catalog, &sql, "hash_join").and_then(|o| compare(&o, &answer));
        eprintln!(
            "q{q:02}: {:?} in {:?}",
            res.as_ref().map(|_| "ok"),
            t0.elapsed()
        );
        ran += 1;
        if let Err(e) = res {
            failures.push(format!("q{q:02}: {e}"));
        }
    }
    assert!(ran > 0);
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}
