//! `kura bench llc --recorded` end to end on a small cache geometry (a sysfs
//! layout in a temporary directory), tables 4-5 and 9: A, the index join and B
//! run under Valgrind's lackey, the recorded stream is replayed with CAT
//! semantics, and protecting A's column or the join's index keeps its lines in
//! the LLC. Needs Valgrind (CI installs it).

use std::process::Command;

fn valgrind_present() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn cache(root: &std::path::Path, i: usize, level: u8, kind: &str, size: &str, ways: u32) {
    kura_cache::cpu::geometry::write_sysfs_cache(root, i, level, kind, size, ways).unwrap();
}

#[test]
fn protecting_the_column_keeps_it_in_the_simulated_llc() {
    if !valgrind_present() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install valgrind (scripts/test.sh does)"
        );
        eprintln!("valgrind is not installed: skipping the recorded LLC test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let geo = dir.path().join("cache");
    cache(&geo, 0, 1, "Data", "4K", 4);
    cache(&geo, 1, 1, "Instruction", "4K", 4);
    cache(&geo, 2, 2, "Unified", "16K", 4);
    cache(&geo, 3, 3, "Unified", "64K", 8);
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args([
            "bench",
            "llc",
            "--recorded",
            "--tables",
            "4-5,9",
            "--reps",
            "2",
        ])
        .arg("--geometry")
        .arg(&geo)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("L3 64 KiB, 8-way"), "{stdout}");
    let csv = std::fs::read_to_string(out_dir.join("llc_recorded.csv")).unwrap();
    let rows: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 9, "{csv}");
    let num = |r: &Vec<String>, i: usize| -> u64 { r[i].parse().unwrap() };
    for (table, pattern, object) in [
        ("4-5", "interleaved", "A: its column"),
        ("4-5", "blocks", "A: its column"),
        ("9", "alternated with B", "index join: its index"),
    ] {
        let col = rows
            .iter()
            .find(|r| r[0] == table && r[1] == pattern && r[2] == object)
            .unwrap_or_else(|| panic!("no {object} row for {pattern}: {csv}"));
        // Off, B's scan and the query's own other memory push the object out
        // between runs; on, its lines stay in the protected ways.
        let (misses_off, misses_on) = (num(col, 4), num(col, 6));
        assert!(num(col, 3) > 0, "{csv}");
        assert!(misses_on < misses_off, "{table} {pattern}: {csv}");
        // The same accesses were replayed both ways.
        for r in rows.iter().filter(|r| r[0] == table && r[1] == pattern) {
            assert!(num(r, 3) > 0 && num(r, 5) > 0, "{csv}");
        }
    }
    // The scratch database is removed.
    assert!(!out_dir.join("llc-recorded.db").exists());
}
