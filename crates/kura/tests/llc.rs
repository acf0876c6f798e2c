//! LLC partitioning by memory object through SQL (paper 000), against a resctrl
//! tree laid out in a temporary directory: `SET llc_protect` warms an index and
//! protects it, `SET llc_classes = on` moves workers into the streaming or the
//! sensitive group per pipeline, and nothing of kura's stays behind. Without
//! resctrl the object is only warmed and the software scan policy works.

use std::fs;
use std::path::Path;

use kura::{Database, OpenOptions};

fn fake_resctrl(root: &Path) {
    let l3 = root.join("info/L3");
    fs::create_dir_all(&l3).unwrap();
    for (name, value) in [
        ("cbm_mask", "ffff"),
        ("min_cbm_bits", "1"),
        ("num_closids", "16"),
        ("shareable_bits", "0"),
    ] {
        fs::write(l3.join(name), format!("{value}\n")).unwrap();
    }
    fs::write(root.join("info/last_cmd_status"), "ok\n").unwrap();
    fs::write(root.join("schemata"), "L3:0=ffff\n").unwrap();
    fs::write(root.join("tasks"), "").unwrap();
}

/// `big` (1,000,000 rows: bit-packed, 2.5 MB of keys and 1.25 MB of values, each
/// more than the 1 MiB "LLC") and
/// `small` (1,000 rows) with an index on its key.
fn load(db: &Database) {
    let mut s = db.session();
    s.execute("CREATE TABLE d (x BIGINT)").unwrap();
    s.execute("INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9)")
        .unwrap();
    s.execute("CREATE TABLE big (k BIGINT, v BIGINT)").unwrap();
    s.execute(
        "INSERT INTO big SELECT k, k % 1000 FROM (SELECT a.x + 10 * b.x + 100 * c.x \
         + 1000 * e.x + 10000 * f.x + 100000 * g.x AS k \
         FROM d a, d b, d c, d e, d f, d g) t",
    )
    .unwrap();
    s.execute("CREATE TABLE small (k BIGINT, v BIGINT)")
        .unwrap();
    s.execute(
        "INSERT INTO small SELECT a.x + 10 * b.x + 100 * c.x, \
         2 * (a.x + 10 * b.x + 100 * c.x) FROM d a, d b, d c",
    )
    .unwrap();
    s.execute("CREATE INDEX small_k ON small (k)").unwrap();
}

fn open(path: &Path, root: &Path) -> Database {
    Database::open(
        path,
        OpenOptions {
            resctrl_root: Some(root.to_path_buf()),
            llc_bytes: Some(1 << 20),
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

fn kura_groups(root: &Path) -> Vec<String> {
    let mut g: Vec<String> = fs::read_dir(root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kura-"))
        .collect();
    g.sort();
    g
}

fn tids(path: &Path) -> Vec<u32> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect()
}

#[test]
fn protect_and_classes_with_resctrl() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("resctrl");
    fake_resctrl(&root);
    let pid = std::process::id();
    {
        let db = open(&dir.path().join("llc.kura"), &root);
        load(&db);
        let mut s = db.session();
        assert!(db.llc().status().cat);

        s.execute("SET llc_protect = 'index:small_k'").unwrap();
        let status = db.llc().status();
        let p = status.protected.expect("protected");
        assert!(p.pages >= 1 && p.lines == p.bytes / 64, "{p:?}");
        let masks = p.masks.expect("CAT masks");
        // one 64 KiB way of the 1 MiB model holds the index
        assert_eq!((masks.protected, masks.others), (0x8000, 0x7fff));
        let group = |n: &str| root.join(format!("kura-{pid}-{n}"));
        assert_eq!(
            fs::read_to_string(group("sensitive").join("schemata")).unwrap(),
            "L3:0=7fff\n"
        );
        // the warming thread went through the protect group; all threads then
        // were put in the sensitive group, without the protected way
        assert_eq!(tids(&group("protect").join("tasks")).len(), 1);
        assert!(!tids(&group("sensitive").join("tasks")).is_empty());
        assert!(s.execute("SET llc_protect = 'index:nope'").is_err());
        assert!(
            s.execute("SET llc_protect = 'column:big.k'").is_err(),
            "2.5 MB > LLC"
        );

        s.execute("SET llc_classes = on").unwrap();
        let before = tids(&group("streaming").join("tasks")).len();
        let rows = s.execute("SELECT sum(v) FROM big").unwrap().rows();
        assert!(
            format!("{:?}", rows[0][0]).contains("499500000"),
            "{rows:?}"
        );
        let streamed = tids(&group("streaming").join("tasks")).len();
        assert!(
            streamed > before,
            "a scan larger than the LLC runs streaming"
        );
        let c = &db.llc().counters;
        let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        assert!(n(&c.streaming_pipelines) >= 1 && n(&c.switches) >= 1);
        let sens = n(&c.sensitive_pipelines);
        s.execute("SELECT count(*) FROM small WHERE v > 10")
            .unwrap();
        assert!(
            n(&c.sensitive_pipelines) > sens,
            "a small table is sensitive"
        );

        s.execute("SET llc_protect = none").unwrap();
        assert!(!group("protect").exists());
        assert_eq!(
            fs::read_to_string(group("sensitive").join("schemata")).unwrap(),
            "L3:0=ffff\n"
        );
        drop(s);
    }
    assert!(kura_groups(&root).is_empty(), "{:?}", kura_groups(&root));
    assert_eq!(
        fs::read_to_string(root.join("schemata")).unwrap(),
        "L3:0=ffff\n"
    );
}

#[test]
fn without_resctrl_objects_are_warmed_and_scans_can_flush() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("no-resctrl");
    let db = open(&dir.path().join("llc.kura"), &root);
    load(&db);
    let status = db.llc().status();
    assert!(!status.cat);
    assert!(
        status.detection.contains("not mounted") && status.detection.contains("llc_scan_policy"),
        "{}",
        status.detection
    );
    let mut s = db.session();
    s.execute("SET llc_protect = 'column:small.v'").unwrap();
    let p = db.llc().status().protected.unwrap();
    assert!(p.masks.is_none() && p.lines > 0);
    // classes need CAT: on is accepted, nothing is switched
    s.execute("SET llc_classes = on").unwrap();
    let normal = s
        .execute("SELECT sum(v), count(*) FROM big")
        .unwrap()
        .rows();
    s.execute("SET llc_scan_policy = 'flush'").unwrap();
    let flushed = s
        .execute("SELECT sum(v), count(*) FROM big")
        .unwrap()
        .rows();
    assert_eq!(format!("{normal:?}"), format!("{flushed:?}"));
    let c = &db.llc().counters;
    let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    assert!(n(&c.flushed_bytes) > 1 << 20, "{}", n(&c.flushed_bytes));
    assert_eq!(n(&c.switches), 0);
    let before = n(&c.flushed_bytes);
    s.execute("SELECT sum(v) FROM small").unwrap();
    assert_eq!(
        n(&c.flushed_bytes),
        before,
        "a sensitive pipeline is not flushed"
    );
    assert!(s.execute("SET llc_scan_policy = 'nta'").is_err());
}

#[test]
fn a_running_joins_hash_table_is_warmed_protected_and_released() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("resctrl");
    fake_resctrl(&root);
    let pid = std::process::id();
    {
        let db = open(&dir.path().join("llc.kura"), &root);
        load(&db);
        let mut s = db.session();
        // A hash join (no index plans) building on small.k, probed by big.
        s.execute("SET enable_index = off").unwrap();
        let join = "SELECT count(*), sum(small.v) FROM big JOIN small ON big.k = small.k";
        let expected = s.execute(join).unwrap().rows();
        assert!(db.llc().status().last_hash_table.is_none());

        assert!(s.execute("SET llc_protect = 'hash_join:'").is_err());
        s.execute("SET llc_protect = 'hash_join:k'").unwrap();
        let status = db.llc().status();
        assert_eq!(status.armed.as_deref(), Some("k"));
        assert!(status.protected.is_none(), "nothing built yet");
        let rows = s.execute(join).unwrap().rows();
        assert_eq!(format!("{rows:?}"), format!("{expected:?}"));
        let status = db.llc().status();
        let p = status
            .last_hash_table
            .expect("the join's table was protected");
        assert!(p.object.ends_with("on small.k"), "{p:?}");
        assert!(p.bytes > 0 && p.lines >= p.bytes / 64, "{p:?}");
        assert!(p.masks.is_some(), "CAT masks: {p:?}");
        // The query ended: its table is gone, and so is the protection.
        assert!(status.protected.is_none(), "{:?}", status.protected);
        let group = |n: &str| root.join(format!("kura-{pid}-{n}"));
        assert!(!group("protect").exists());
        assert_eq!(
            fs::read_to_string(group("sensitive").join("schemata")).unwrap(),
            "L3:0=ffff\n"
        );
        let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(n(&db.llc().counters.protected_tables), 1);

        // A join on another key is left alone.
        s.execute("SELECT count(*) FROM big b1 JOIN small s1 ON b1.v = s1.v")
            .unwrap();
        assert_eq!(n(&db.llc().counters.protected_tables), 1);

        s.execute("SET llc_protect = none").unwrap();
        assert!(db.llc().status().armed.is_none());
        s.execute(join).unwrap();
        assert_eq!(n(&db.llc().counters.protected_tables), 1);
    }
    assert!(kura_groups(&root).is_empty(), "{:?}", kura_groups(&root));
}

#[test]
fn without_resctrl_a_joins_hash_table_is_warmed() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir.path().join("llc.kura"), &dir.path().join("no-resctrl"));
    load(&db);
    let mut s = db.session();
    s.execute("SET enable_index = off").unwrap();
    s.execute("SET llc_protect = 'hash_join:small.k'").unwrap();
    s.execute("SELECT count(*) FROM big JOIN small ON big.k = small.k")
        .unwrap();
    let p = db.llc().status().last_hash_table.expect("warmed");
    assert!(p.masks.is_none() && p.lines > 0, "{p:?}");
}
