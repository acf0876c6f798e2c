//! Paper 002's experiment end to end on a small pgbench run: PostgreSQL 15 under
//! lackey, every transaction committed by a backend per client inside the counted
//! region, tables 5-6 with the paper's sites ranked, and the lock groups measured.

use kura_lab::pgbench_profile::{self as pp, Config};

#[test]
fn a_small_pgbench_run_gives_tables_5_and_6_and_the_lock_shares() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::paper(dir.path().join("out"), 3);
    cfg.clients = 3;
    // A port of its own, so a concurrent run elsewhere does not collide.
    cfg.port = 54000 + (std::process::id() % 1000) as u16;
    let mut progress = Vec::new();
    let outcome = pp::run(&cfg, &mut progress).expect("the pgbench profile runs");
    let (holds, line) = pp::premise(
        &cfg,
        &outcome.profile,
        outcome.transactions,
        outcome.backends,
    );
    assert!(holds, "{line}\n{}", outcome.report);
    assert!(
        outcome.report.starts_with("premise holds"),
        "{}",
        outcome.report
    );
    assert!(outcome.report.contains("Table 5") && outcome.report.contains("Table 6"));
    let p = &outcome.profile;
    let l1 = p.metric("L1d").unwrap();
    let l2 = p.metric("L2").unwrap();
    assert!(
        p.totals[l1] > p.totals[l2] && p.totals[l2] > 0,
        "{:?}",
        p.totals
    );
    assert_eq!(p.top_functions(l1, 10).len(), 10);
    // The backends' hash tables miss (the paper's hash_search site).
    let ranks = pp::paper_ranks(p, l1);
    assert!(
        ranks
            .iter()
            .any(|r| r.starts_with("hash_search") && !r.contains("no misses")),
        "{ranks:?}"
    );
    // The lock groups were reached and are a share of the whole.
    let lw = &p.groups[0];
    assert!(lw.values[0] > 0 && lw.shares[0] < 0.5, "{lw:?}");
    for f in [
        "pgbench_profile.txt",
        "pgbench_profile.csv",
        "pgbench_profile.json",
    ] {
        assert!(cfg.out.join(f).is_file(), "{f}");
    }
}
