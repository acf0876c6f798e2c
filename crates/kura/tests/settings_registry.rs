//! The settings registry (`kura_common::settings::SETTINGS`) is the truth about
//! kura's settings: `SET` checks values by their type, `SHOW`, `SHOW ALL` and
//! `pg_settings` list every setting with its type and scope, server settings
//! are the open database's and refused by `SET` (55P02), a database-wide
//! setting is one value every session reads, and the README's settings table
//! is the one the registry renders.

use kura::{Database, OpenOptions, Session};
use kura_common::settings::{markdown_table, SETTINGS};

fn open(opts: OpenOptions) -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("s.kura"), opts).unwrap();
    (dir, db)
}

fn one(s: &mut Session, sql: &str) -> String {
    let r = s.execute(sql).unwrap();
    let rows = r.rows();
    assert_eq!(rows.len(), 1, "{sql}");
    rows[0]
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn server_settings_are_the_open_databases_and_read_only() {
    let (_dir, db) = open(OpenOptions {
        buffer_bytes: Some(8 << 20),
        max_memory: Some(1 << 30),
        ..Default::default()
    });
    let mut s = db.session();
    assert_eq!(one(&mut s, "SHOW shared_buffers"), "8mb");
    assert_eq!(one(&mut s, "SHOW max_memory"), "1gb");
    assert_eq!(
        one(&mut s, "SELECT current_setting('shared_buffers')"),
        "8mb"
    );
    for sql in [
        "SET shared_buffers = '16MB'",
        "SET max_memory TO '2GB'",
        "RESET shared_buffers",
        "SET shared_buffers TO DEFAULT",
    ] {
        let e = s.execute(sql).unwrap_err();
        assert_eq!(e.sqlstate(), "55P02", "{sql}");
        assert!(
            e.to_string()
                .contains("cannot be changed without restarting the server"),
            "{sql}: {e}"
        );
    }
    // Not even a superuser changes it, and the value stays.
    assert_eq!(one(&mut s, "SHOW shared_buffers"), "8mb");
    assert_eq!(
        one(
            &mut s,
            "SELECT setting, unit, context, vartype, source, boot_val IS NOT NULL \
             FROM pg_settings WHERE name = 'shared_buffers'"
        ),
        format!("{}|B|postmaster|integer|command line|t", 8 << 20)
    );
    // SHOW ALL lists them.
    let all = s.execute("SHOW ALL").unwrap();
    let names: Vec<String> = all.rows().iter().map(|r| r[0].to_string()).collect();
    assert_eq!(names.len(), SETTINGS.len());
    assert!(names.iter().any(|n| n == "shared_buffers"));
    assert!(names.iter().any(|n| n == "max_memory"));
}

#[test]
fn pg_settings_shows_types_scopes_and_choices() {
    let (_dir, db) = open(OpenOptions::default());
    let mut s = db.session();
    let row = |s: &mut Session, name: &str| {
        one(
            s,
            &format!(
                "SELECT setting, unit, context, vartype, source, min_val, max_val, \
                 enumvals, boot_val, reset_val FROM pg_settings WHERE name = '{name}'"
            ),
        )
    };
    assert_eq!(
        row(&mut s, "execution_mode"),
        "ooo||user|enum|default|||{serial,static,ooo}|ooo|ooo"
    );
    assert_eq!(
        row(&mut s, "enable_index"),
        "on||user|bool|default||||on|on"
    );
    s.execute("SET enable_index = false").unwrap();
    s.execute("SET memory_limit = '64MB'").unwrap();
    assert_eq!(
        row(&mut s, "enable_index"),
        "off||user|bool|session||||on|on"
    );
    assert_eq!(
        row(&mut s, "memory_limit"),
        format!(
            "{}|B|user|integer|session|0|{}||{}|{}",
            64 << 20,
            i64::MAX,
            4u64 << 30,
            4u64 << 30
        )
    );
    assert_eq!(
        row(&mut s, "statement_timeout"),
        "0|ms|user|integer|default|0|2147483647||0|0"
    );
    assert_eq!(
        row(&mut s, "prefetch_window"),
        "64||user|integer|default|1|65536||64|64"
    );
    assert_eq!(
        row(&mut s, "tier2"),
        format!("-1|B|superuser|integer|default|-1|{}||-1|-1", i64::MAX)
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT context, vartype FROM pg_settings WHERE name = 'buffer_policy'"
        ),
        "superuser|string"
    );
    // psql's `\dconfig` and JDBC read enumvals as text[].
    assert_eq!(
        one(
            &mut s,
            "SELECT enumvals[2] FROM pg_settings WHERE name = 'tier2_kind'"
        ),
        "page_cache"
    );
    // Existing columns keep their place; the client parameters are there too.
    assert_eq!(
        one(
            &mut s,
            "SELECT setting, context, vartype FROM pg_settings WHERE name = 'max_index_keys'"
        ),
        "32|user|string"
    );
}

#[test]
fn a_database_wide_setting_is_one_value_for_every_session() {
    let (_dir, db) = open(OpenOptions {
        buffer_policy: Some("lru".into()),
        ..Default::default()
    });
    let mut a = db.session();
    let mut b = db.session();
    // The startup option, not the registry's default.
    assert_eq!(one(&mut a, "SHOW buffer_policy"), "lru");
    a.execute("SET buffer_policy = 'arc'").unwrap();
    assert_eq!(one(&mut b, "SHOW buffer_policy"), "arc");
    assert_eq!(
        one(
            &mut b,
            "SELECT setting, source FROM pg_settings WHERE name = 'buffer_policy'"
        ),
        "arc|database"
    );
    assert_eq!(db.storage().buffer().policy_name(), "arc");
    // A policy the pool does not know is refused and changes nothing.
    assert!(a.execute("SET buffer_policy = 'no_such_policy'").is_err());
    assert_eq!(one(&mut b, "SHOW buffer_policy"), "arc");
    // A new session reads the database's value too.
    let mut c = db.session();
    assert_eq!(one(&mut c, "SHOW buffer_policy"), "arc");
    // A session setting stays the session's.
    a.execute("SET execution_mode = 'serial'").unwrap();
    assert_eq!(one(&mut b, "SHOW execution_mode"), "ooo");
    // Booleans take PostgreSQL's spellings.
    for (v, shown) in [("yes", "on"), ("0", "off"), ("TRUE", "on"), ("of", "off")] {
        a.execute(&format!("SET enable_seqscan = '{v}'")).unwrap();
        assert_eq!(one(&mut a, "SHOW enable_seqscan"), shown);
    }
    let e = a.execute("SET enable_seqscan = 'maybe'").unwrap_err();
    assert_eq!(e.sqlstate(), "22023");
}

/// The README's table between its markers; set KURA_UPDATE_README=1 to
/// rewrite it from the registry.
#[test]
fn readme_settings_table_is_the_registrys() {
    const BEGIN: &str = "<!-- settings table: made from kura_common::settings::SETTINGS -->\n";
    const END: &str = "<!-- end of settings table -->";
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README has the settings table's begin marker")
        + BEGIN.len();
    let end = readme[start..]
        .find(END)
        .expect("README has the end marker")
        + start;
    let table = markdown_table();
    if readme[start..end] != table {
        if std::env::var_os("KURA_UPDATE_README").is_some() {
            let updated = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, updated).unwrap();
        } else {
            panic!("README's settings table differs from the settings registry; run this test with KURA_UPDATE_README=1");
        }
    }
}
