//! End to end: `kura profile --query tpch:6` at SF 0.01 with the simulated cache
//! (the queries traced under Valgrind's lackey) — it names lineitem's columns and
//! kura's functions with misses, and prints the samples and the overhead table. Needs Valgrind (CI installs it); without it, outside CI, the test
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
    let kura = || Command::new(env!("CARGO_BIN_EXE_kura"));
    let made = kura()
        .arg("--db")
        .arg(&db)
        .args(["tpch", "load", "--sf", "0.01"])
        .output()
        .unwrap();
    assert!(made.status.success());
    // With no flag: on a machine without PMU (CI's) that is cpu-clock samples,
    // the overhead table and the simulated cache; where there is a PMU the same
    // is asked for by name.
    let mut profile = kura();
    profile
        .arg("--db")
        .arg(&db)
        .args(["profile", "--query", "tpch:6", "--top", "20", "--runs", "3"])
        .arg("--json")
        .arg(&json);
    if kura_profile::Pmu::this_machine().hardware {
        profile.args(["--sample", "cpu-clock", "--simulate"]);
    }
    let out = profile.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for table in [
        "samples of cpu-clock",
        "overhead:",
        "Simulated cache levels (misses by 3C class)",
        "Top functions by simulated misses",
        "Top data objects by simulated misses",
    ] {
        assert!(stdout.contains(table), "no '{table}' in:\n{stdout}");
    }
    let p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(p["mode"], "sampling");
    assert!(p["overhead"].as_array().unwrap().len() >= 3, "{p}");
    let sim = &p["simulated"];
    // Q6 reads these four columns of lineitem, through the buffer pool: each is a
    // named data object with misses at the first and the last level.
    for col in ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"] {
        let name = format!("lineitem.{col} (column pages)");
        let row = sim["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no object {name}:\n{stdout}"));
        assert!(
            row["count"].as_u64().unwrap() > 0 && row["first_level"].as_u64().unwrap() > 0,
            "{col}: {row}"
        );
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&name) && l.contains("buffer page")),
            "{stdout}"
        );
    }
    // kura's own code appears among the functions, symbolized, with misses.
    let functions = sim["functions"].as_array().unwrap();
    assert!(
        functions.iter().any(|f| {
            let name = f["name"].as_str().unwrap();
            name.starts_with("kura") && f["first_level"].as_u64().unwrap() > 0
        }),
        "{stdout}"
    );
    assert!(
        functions
            .iter()
            .all(|f| !f["name"].as_str().unwrap().starts_with("kura+0x")),
        "unsymbolized: {stdout}"
    );
    // Miss classes of the last level add up to its misses.
    let count = |rows: &serde_json::Value| -> u64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["count"].as_u64().unwrap())
            .sum()
    };
    let levels = sim["levels"].as_array().unwrap();
    assert!(levels.len() >= 2);
    let last = levels.last().unwrap()["count"].as_u64().unwrap();
    assert!(last > 0);
    assert_eq!(count(&sim["miss_classes"]), last);

    // A diff of the profile with itself names the simulated tables, unchanged.
    let diff = kura()
        .args(["profile", "--diff"])
        .arg(&json)
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(diff.status.success());
    assert!(
        text.contains("simulated last-level misses per data object") && text.contains("+0.0 %"),
        "{text}"
    );

    // A query that fails in the traced child gives one line naming the error.
    let bad = kura()
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
