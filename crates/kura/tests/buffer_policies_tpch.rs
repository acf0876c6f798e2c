//! The buffer manager under pressure cannot change an answer: TPC-H SF 0.01 with
//! paper 003's indexes, every query and (A)–(D), in the three execution modes over
//! a 3 MiB pool (far smaller than the data) under every buffer policy, each answer
//! checked against the reference answers; afterwards no frame stays pinned.

use kura::tpch::load::Source;
use kura::tpch::run::{answers_dir, run_queries, CheckStatus, QUERY_IDS};
use kura::{Database, OpenOptions};

#[test]
fn every_policy_and_mode_with_a_small_buffer_gives_the_reference_answers() {
    let answers = answers_dir(0.01).expect(
        "reference answers for SF 0.01 (shared/tpch/answers beside the repository, or KURA_TPCH_ANSWERS)",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tpch.kura");
    {
        let db = Database::open(&path, OpenOptions::default()).unwrap();
        let mut s = db.session();
        kura::tpch::load(&mut s, Source::Generate(0.01), &|_, _| {}).unwrap();
        kura::tpch::load::create_indexes(&mut s, &|_| {}).unwrap();
    }
    let db = Database::open(
        &path,
        OpenOptions {
            buffer_bytes: Some(3 << 20),
            buffered_io: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let mut session = db.session();
    session.execute("SET enable_index = on").unwrap();
    let ids: Vec<String> = QUERY_IDS.iter().map(|s| s.to_string()).collect();
    let mut failures = Vec::new();
    let policies = kura_cache::POLICY_NAMES.iter().filter(|&&p| p != "fix");
    for policy in policies {
        session
            .execute(&format!("SET buffer_policy = '{policy}'"))
            .unwrap();
        for mode in ["serial", "static", "ooo"] {
            session
                .execute(&format!("SET execution_mode = '{mode}'"))
                .unwrap();
            let runs = run_queries(&mut session, &ids, Some(&answers), 1)
                .unwrap_or_else(|e| panic!("{policy} {mode}: {e}"));
            for run in &runs {
                if run.status != CheckStatus::Passed {
                    failures.push(format!("{policy} {mode} {}: {}", run.label(), run.status));
                }
            }
            assert_eq!(
                db.storage().buffer().pinned_frames(),
                0,
                "{policy} {mode}: frames left pinned"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
