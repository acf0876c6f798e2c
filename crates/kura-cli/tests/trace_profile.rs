//! End to end: `kura trace profile --query tpch:6` at SF 0.01 under Valgrind's
//! lackey — the simulated profile names lineitem's columns and kura's functions
//! with misses. Needs Valgrind (CI installs it); without it, outside CI, the test
//! says so and passes.

use std::process::Command;

fn valgrind_present() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn q6_profile_names_lineitem_columns_and_kura_functions() {
    if !valgrind_present() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install valgrind (scripts/test.sh does)"
        );
        eprintln!("valgrind is not installed: skipping the simulated-profile test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpch.db");
    let json = dir.path().join("q6.json");
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args([
            "trace", "profile", "--query", "tpch:6", "--sf", "0.01", "--top", "20",
        ])
        .arg("--db")
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Top functions by simulated misses"),
        "{stdout}"
    );
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let misses = |row: &serde_json::Value| -> Vec<u64> {
        row["misses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    // Q6 reads these four columns of lineitem, through the buffer pool.
    for col in ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"] {
        let row = p["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| {
                o["object"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("lineitem.{col}"))
            })
            .unwrap_or_else(|| panic!("no object lineitem.{col}:\n{stdout}"));
        assert_eq!(row["kind"], "buffer page");
        let m = misses(row);
        assert!(m[0] > 0 && *m.last().unwrap() > 0, "{col}: {m:?}");
    }
    // kura's own code appears among the functions, symbolized, with misses.
    let kura_rows: Vec<&serde_json::Value> = p["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["module"] == "kura" && misses(f)[0] > 0)
        .collect();
    assert!(!kura_rows.is_empty(), "{stdout}");
    assert!(
        kura_rows
            .iter()
            .all(|f| !f["function"].as_str().unwrap().starts_with("kura+0x")),
        "unsymbolized: {stdout}"
    );
    // The trace was restricted to the query: one class, and far fewer accesses
    // than instructions of a whole run would give.
    assert_eq!(p["classes"].as_array().unwrap().len(), 1);
    let levels = p["levels"].as_array().unwrap();
    assert!(levels.len() >= 2);
    let l1 = &levels[0];
    assert!(l1["misses"].as_u64().unwrap() > 0);
    assert_eq!(
        l1["misses"].as_u64().unwrap(),
        l1["compulsory"].as_u64().unwrap()
            + l1["capacity"].as_u64().unwrap()
            + l1["conflict"].as_u64().unwrap()
    );

    // A query that fails gives one line naming the error.
    let bad = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["trace", "profile", "-c", "SELECT nope FROM lineitem"])
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("ERROR: ") && last.contains("nope"),
        "{err}"
    );
}

#[test]
fn a_missing_valgrind_is_one_line_saying_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    // An existing (empty) database, so the run reaches the Valgrind check.
    let made = Command::new(env!("CARGO_BIN_EXE_kura"))
        .arg("--db")
        .arg(&db)
        .args(["-c", "CREATE TABLE t (a INTEGER)"])
        .output()
        .unwrap();
    assert!(made.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["trace", "profile", "-c", "SELECT a FROM t", "--valgrind"])
        .arg(dir.path().join("no-such-valgrind"))
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("apt-get install valgrind"), "{err}");
}
