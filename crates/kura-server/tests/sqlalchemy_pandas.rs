//! SQLAlchemy 2 (psycopg 3) and pandas against the server, in the shared
//! Python environment (see `common::python`): connecting without AUTOCOMMIT,
//! the inspector (keys, indexes, references, constraints, `MetaData.reflect`),
//! `pd.read_sql`, `pd.read_sql_table`, `DataFrame.to_sql` of 100,000 rows of
//! every common type read back equal (and how fast), `if_exists='replace'`,
//! and `begin_nested`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::python::python;
use common::TestServer;

/// TPC-H's nation table (its 25 rows, five per region), with its key.
const NATIONS: &str = "(0,'ALGERIA',0),(1,'ARGENTINA',1),(2,'BRAZIL',1),(3,'CANADA',1),\
    (4,'EGYPT',4),(5,'ETHIOPIA',0),(6,'FRANCE',3),(7,'GERMANY',3),(8,'INDIA',2),\
    (9,'INDONESIA',2),(10,'IRAN',4),(11,'IRAQ',4),(12,'JAPAN',2),(13,'JORDAN',4),\
    (14,'KENYA',0),(15,'MOROCCO',0),(16,'MOZAMBIQUE',0),(17,'PERU',1),(18,'CHINA',2),\
    (19,'ROMANIA',3),(20,'SAUDI ARABIA',4),(21,'VIETNAM',2),(22,'RUSSIA',3),\
    (23,'UNITED KINGDOM',3),(24,'UNITED STATES',1)";

#[test]
fn sqlalchemy_and_pandas_reflect_read_write_and_nest() {
    let s = TestServer::trust(|db| {
        common::exec(
            db,
            "create table nation (n_nationkey integer primary key, \
             n_name varchar(25) not null, n_regionkey integer)",
        );
        common::exec(db, &format!("insert into nation values {NATIONS}"));
        common::exec(db, "create index nation_region on nation (n_regionkey)");
        common::exec(db, "create view nation_names as select n_name from nation");
        common::exec(
            db,
            "create table city (id integer, nation integer references nation (n_nationkey), \
             name text unique, pop bigint check (pop > 0), primary key (id, nation))",
        );
        common::exec(db, "create unique index city_pop on city (pop, name)");
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_sqlalchemy.py");
    let out = Command::new(python())
        .arg(script)
        .args(["--port", &s.addr.port().to_string(), "--rows", "100000"])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "SQLAlchemy/pandas checks failed:\n{stdout}"
    );
}
