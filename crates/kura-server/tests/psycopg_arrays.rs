//! Arrays through the server with psycopg 3 and SQLAlchemy (from PyPI, in a
//! virtual environment this test creates): Python lists as `= any(%s)`
//! parameters in text and binary form, array results read back as lists, and
//! SQLAlchemy's inspector over kura's catalogs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::python::python;
use common::TestServer;

fn run(py: &Path, port: u16) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_arrays.py");
    let out = Command::new(py)
        .arg(script)
        .args(["--port", &port.to_string()])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "array checks failed:\n{stdout}");
}

/// TPC-H's nation table (its 25 rows, five per region).
const NATIONS: &str = "(0,'ALGERIA',0),(1,'ARGENTINA',1),(2,'BRAZIL',1),(3,'CANADA',1),\
    (4,'EGYPT',4),(5,'ETHIOPIA',0),(6,'FRANCE',3),(7,'GERMANY',3),(8,'INDIA',2),\
    (9,'INDONESIA',2),(10,'IRAN',4),(11,'IRAQ',4),(12,'JAPAN',2),(13,'JORDAN',4),\
    (14,'KENYA',0),(15,'MOROCCO',0),(16,'MOZAMBIQUE',0),(17,'PERU',1),(18,'CHINA',2),\
    (19,'ROMANIA',3),(20,'SAUDI ARABIA',4),(21,'VIETNAM',2),(22,'RUSSIA',3),\
    (23,'UNITED KINGDOM',3),(24,'UNITED STATES',1)";

#[test]
fn psycopg_lists_and_sqlalchemy_inspector() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table nation (n_nationkey integer, n_name varchar(25), n_regionkey integer)",
        );
        common::exec(db, &format!("insert into nation values {NATIONS}"));
    });
    run(python(), s.addr.port());
}
