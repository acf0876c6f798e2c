//! pgjdbc (from Maven Central) via the small Maven project in `tests/jdbc`:
//! connect, PreparedStatement with parameters, ResultSet types (BigDecimal,
//! Date, String), errors; Q6 with typed parameters on TPC-H data.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{answers_dir, load_tpch, TestServer};

const TABLE: &str = "create table t (i integer, b bigint, d decimal(15,2), dt date, v varchar(20), x integer, y integer, ok boolean)";
const ROWS: &str = "1|10000000000|12.34|1995-03-15|alpha|0|0|true\n2|-7|-0.05|2000-01-01|beta|0|0|false\n3|0|1|1970-01-01|g|0|0|true\n";

/// Both tests build and run the same Maven project, whose `target/` they would
/// otherwise overwrite under each other (surefire's booter jar vanished mid-run).
static MAVEN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mvn_test(port: u16, extra: &[String]) {
    let _one_at_a_time = MAVEN.lock().unwrap_or_else(|e| e.into_inner());
    let project = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/jdbc");
    let out = Command::new("mvn")
        .current_dir(&project)
        .args(["-q", "-B", "test", &format!("-Dkura.port={port}")])
        .args(extra)
        .output()
        .expect("mvn is installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "mvn test failed:\n{stdout}");
}

fn with_table(db: &kura::Database, dir: &std::path::Path) {
    let file = dir.join("t.tbl");
    std::fs::write(&file, ROWS).unwrap();
    common::exec(db, TABLE);
    common::exec(db, &format!("copy t from '{}'", file.display()));
}

#[test]
fn pgjdbc_connects_prepares_and_reads_types() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::trust(|db| with_table(db, dir.path()));
    mvn_test(s.addr.port(), &[]);
}

#[test]
fn pgjdbc_tpch_q6_with_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::trust(|db| {
        load_tpch(db, 0.01);
        with_table(db, dir.path());
    });
    mvn_test(
        s.addr.port(),
        &[
            "-Dkura.tpch=true".into(),
            format!("-Dkura.answers={}", answers_dir("0.01").display()),
        ],
    );
}

/// DatabaseMetaData over the system catalogs (`CatalogJdbcTest`).
#[test]
fn pgjdbc_database_metadata() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table lineitem (l_orderkey integer not null, l_comment varchar(44), \
             l_extendedprice decimal(15,2), l_shipdate date);\
             create index li_ok on lineitem (l_orderkey);\
             create view v1 as select l_orderkey from lineitem;\
             create table orders (o_orderkey integer primary key);\
             create table shipments (s_id integer, s_order integer references orders (o_orderkey), \
             primary key (s_order, s_id));\
             create unique index shipments_sid on shipments (s_id)",
        );
    });
    mvn_test(
        s.addr.port(),
        &[
            "-Dkura.catalog=true".into(),
            "-Dtest=CatalogJdbcTest".into(),
        ],
    );
}
