//! `kura profile` end to end on this machine (the software path where there is no
//! PMU): TPC-H Q6 at SF 0.01 counted per operator, sampled with cpu-clock (kura's
//! own functions and operators named), saved as JSON and diffed; bad input gives
//! one-line errors. The default profile with the simulated cache is tested in
//! `trace_profile.rs`.

mod common;

use common::*;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fails_with(db: &std::path::Path, args: &[&str], expect: &str) {
    let out = kura().arg("--db").arg(db).args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("ERROR:"))
        .unwrap_or_else(|| panic!("{args:?}: no error line in {err}"));
    assert!(line.contains(expect), "{args:?}: {line}");
    assert_eq!(err.lines().filter(|l| l.starts_with("ERROR")).count(), 1);
}

#[test]
fn profiles_tpch_q6_counting_sampling_json_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpch.db");
    run_ok(&db, &["tpch", "load", "--sf", "0.01"]);

    // Counting: per query and per operator, the scan of lineitem among them.
    let out = run_ok(&db, &["profile", "--query", "tpch:6", "--count"]);
    let text = stdout(&out);
    assert!(text.contains("== tpch:Q6"), "{text}");
    assert!(
        text.contains("per operator") && text.contains("lineitem"),
        "{text}"
    );

    // Sampling: enough samples over 40 runs of Q6 at 100 µs of CPU each.
    let a = dir.path().join("a.json");
    let out = run_ok(
        &db,
        &[
            "profile",
            "--query",
            "tpch:6",
            "--sample",
            "--period",
            "100000",
            "--repeat",
            "40",
            "-o",
            a.to_str().unwrap(),
        ],
    );
    let text = stdout(&out);
    assert!(text.contains("samples of cpu-clock"), "{text}");
    let profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    assert_eq!(profile["mode"], "sampling");
    let functions: Vec<&str> = profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(
        functions
            .iter()
            .any(|f| f.starts_with("kura_exec::") || f.starts_with("kura_storage::")),
        "no kura function among {functions:?}"
    );
    // The samples of the scan are attributed to the scan operator of the plan.
    let ops = profile["queries"][0]["operators"].as_array().unwrap();
    let scan = ops
        .iter()
        .find(|o| o["label"].as_str().unwrap().contains("lineitem"))
        .unwrap_or_else(|| panic!("no lineitem operator in {ops:?}"));
    assert!(scan["samples"].as_u64().unwrap() > 0);
    let lines = profile["lines"].as_array().unwrap();
    assert!(lines
        .iter()
        .any(|l| l["line"].as_str().unwrap().starts_with("crates/kura")));

    // Diff of two saved profiles.
    let b = dir.path().join("b.json");
    run_ok(
        &db,
        &[
            "profile",
            "--query",
            "tpch:6",
            "--sample",
            "--period",
            "100000",
            "-o",
            b.to_str().unwrap(),
        ],
    );
    let out = run_ok(
        &db,
        &[
            "profile",
            "--diff",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
    );
    assert!(stdout(&out).contains("per function"), "{}", stdout(&out));
}

#[test]
fn bad_input_gives_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    fails_with(
        &db,
        &["profile", "-c", "SELECT 1", "--sample", "cycels"],
        "unknown event 'cycels'",
    );
    fails_with(
        &db,
        &["profile", "-c", "SELECT 1", "--sample", "--period", "0"],
        "at least 1",
    );
    fails_with(&db, &["profile", "-c", "SELECT * FROM nosuch"], "nosuch");
    fails_with(
        &db,
        &["profile", "--query", "tpch:99"],
        "no TPC-H query '99'",
    );
    fails_with(&db, &["profile"], "nothing to profile");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "[]").unwrap();
    fails_with(
        &db,
        &[
            "profile",
            "--diff",
            junk.to_str().unwrap(),
            junk.to_str().unwrap(),
        ],
        "not a kura profile",
    );
    // Hardware events are refused in one line where there is no PMU.
    if !kura_profile::Pmu::this_machine().hardware {
        fails_with(
            &db,
            &["profile", "-c", "SELECT 1", "--sample", "cycles"],
            "needs a hardware PMU",
        );
    }
}
