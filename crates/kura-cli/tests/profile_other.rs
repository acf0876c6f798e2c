//! `kura profile` on programs other than kura's own queries: `-- COMMAND` traces a
//! whole program (here a shell that starts kura twice) under lackey and names its
//! functions with simulated misses per level; `--pid` samples a running process
//! from outside. Bad combinations are refused in one line.

mod common;

use common::*;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_command_and_its_children_are_profiled_with_simulated_misses() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let json = dir.path().join("p.json");
    let exe = env!("CARGO_BIN_EXE_kura");
    let sql = "SELECT sum(x * 7 % 13) FROM generate_series(1, 5000) AS t(x)";
    // A shell that forks and executes kura twice: three processes at least.
    let script = format!(
        "'{exe}' --db '{db}' -c \"{sql}\" > /dev/null && '{exe}' --db '{db}' -c \"{sql}\" > /dev/null",
        db = db.display()
    );
    let out = run_ok(
        &db,
        &[
            "profile",
            "--top",
            "5",
            "--group",
            "kura=kura_",
            "-o",
            json.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let text = stdout(&out);
    assert!(text.contains("Top 5 functions by L1d misses"), "{text}");
    assert!(text.contains("Processes"), "{text}");
    let kura_runs = text
        .lines()
        .filter(|l| l.contains(exe) && l.contains("--db"))
        .count();
    assert!(kura_runs >= 2, "{text}");
    // kura's own functions are named and carry misses.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let group = &saved["groups"][0];
    assert_eq!(group["name"], "kura");
    assert!(group["values"][1].as_u64().unwrap() > 0, "{group}");
    assert!(group["functions"].as_array().unwrap().len() > 10, "{group}");
}

#[test]
fn a_running_process_is_sampled_by_pid() {
    let mut busy = std::process::Command::new("sh")
        .arg("-c")
        .arg("i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done")
        .spawn()
        .unwrap();
    let pid = busy.id().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let out = kura()
        .arg("--db")
        .arg(&db)
        .args([
            "profile",
            "--pid",
            &pid,
            "--seconds",
            "0.5",
            "--period",
            "1000000",
        ])
        .output()
        .unwrap();
    let _ = busy.kill();
    let _ = busy.wait();
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("sampled process {pid}")), "{text}");
    let samples: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("totals: "))
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(samples > 50, "{text}");
    assert!(
        text.contains("libc.so.6") || text.contains("dash"),
        "{text}"
    );
}

#[test]
fn bad_combinations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    for (args, expect) in [
        (
            vec!["profile", "--count", "--", "true"],
            "--count applies to profiling queries",
        ),
        (
            vec!["profile", "--sample", "--", "true"],
            "use --pid PID with --sample",
        ),
        (
            vec!["profile", "--pid", "1", "--simulate"],
            "started under Valgrind",
        ),
        (
            vec!["profile", "--pid", "1", "--seconds", "0"],
            "must be above 0",
        ),
        (
            vec!["profile", "--group", "x", "--", "true"],
            "NAME=PATTERN",
        ),
        (
            vec!["profile", "--pid", "4294967294"],
            "no process 4294967294",
        ),
    ] {
        let out = kura().arg("--db").arg(&db).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
