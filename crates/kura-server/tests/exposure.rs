//! A server safe to expose: clients read server files with COPY only below the
//! directory the server was given (never by default, never through `..` or a
//! symbolic link), and connections beyond `max_connections` are refused with
//! PostgreSQL's 53300.

mod common;

use common::TestServer;
use kura::FileAccess;
use kura_server::Auth;
use tokio_postgres::{Client, NoTls};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(s: &TestServer) -> Result<Client, tokio_postgres::Error> {
    let (client, conn) = tokio_postgres::connect(&s.conn_str(), NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

fn code(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_string())
        .unwrap_or_else(|| e.to_string())
}

#[test]
fn server_files_are_off_by_default() {
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("t.tbl");
    std::fs::write(&file, "1\n2\n").unwrap();
    let s = TestServer::trust(|db| common::exec(db, "create table t (x integer)"));
    rt().block_on(async {
        let c = connect(&s).await.unwrap();
        let e = c
            .simple_query(&format!("copy t from '{}'", file.display()))
            .await
            .unwrap_err();
        assert_eq!(code(&e), "42501", "{e}");
        let e = c
            .simple_query("copy t from '/etc/passwd'")
            .await
            .unwrap_err();
        assert_eq!(code(&e), "42501", "{e}");
        let n = c.query_one("select count(*) from t", &[]).await.unwrap();
        assert_eq!(n.get::<_, i64>(0), 0);
    });
}

#[test]
fn copy_dir_allows_only_files_below_it() {
    let s = TestServer::start_with(
        Auth::Trust,
        |_, dir| {
            let data = dir.join("data");
            std::fs::create_dir(&data).unwrap();
            std::fs::write(data.join("in.tbl"), "1\n2\n").unwrap();
            std::fs::write(dir.join("secret.tbl"), "99\n").unwrap();
            std::os::unix::fs::symlink(dir.join("secret.tbl"), data.join("link.tbl")).unwrap();
            FileAccess::under(&data).unwrap()
        },
        |db| common::exec(db, "create table t (x integer)"),
    );
    let data = s.dir.path().join("data");
    rt().block_on(async {
        let c = connect(&s).await.unwrap();
        // A name relative to the directory, and an absolute one inside it.
        c.simple_query("copy t from 'in.tbl'").await.unwrap();
        c.simple_query(&format!("copy t from '{}'", data.join("in.tbl").display()))
            .await
            .unwrap();
        for outside in ["../secret.tbl", "link.tbl", "/etc/passwd"] {
            let e = c
                .simple_query(&format!("copy t from '{outside}'"))
                .await
                .unwrap_err();
            assert_eq!(code(&e), "42501", "{outside}: {e}");
        }
        let n = c.query_one("select count(*) from t", &[]).await.unwrap();
        assert_eq!(n.get::<_, i64>(0), 4);
        // EXPORT DATABASE writes server files: never for a client. IMPORT DATABASE reads
        // them: only below the directory.
        let e = c.simple_query("export database 'out'").await.unwrap_err();
        assert_eq!(code(&e), "42501", "{e}");
        assert!(!data.join("out").exists());
        let e = c.simple_query("import database '..'").await.unwrap_err();
        assert_eq!(code(&e), "42501", "{e}");
    });
    // An export made beside the server is imported by its client.
    let dump = data.join("dump");
    std::fs::create_dir(&dump).unwrap();
    std::fs::write(dump.join("schema.sql"), "CREATE TABLE u (x INTEGER);\n").unwrap();
    std::fs::write(dump.join("u.csv"), "x\n7\n").unwrap();
    std::fs::write(
        dump.join("load.sql"),
        "COPY u FROM 'elsewhere/u.csv' (FORMAT 'csv', header 1);\n",
    )
    .unwrap();
    rt().block_on(async {
        let c = connect(&s).await.unwrap();
        c.simple_query("import database 'dump'").await.unwrap();
        let n = c.query_one("select sum(x) from u", &[]).await.unwrap();
        assert_eq!(n.get::<_, i64>(0), 7);
    });
}

#[test]
fn connections_beyond_the_limit_are_refused() {
    let s = TestServer::start_with(
        Auth::Trust,
        |config, _| {
            config.max_connections = 2;
            FileAccess::Denied
        },
        |_| {},
    );
    rt().block_on(async {
        let a = connect(&s).await.unwrap();
        let b = connect(&s).await.unwrap();
        let Err(e) = connect(&s).await else {
            panic!("a third connection is refused");
        };
        assert_eq!(code(&e), "53300", "{e}");
        // The two still work; closing one makes room.
        a.simple_query("select 1").await.unwrap();
        drop(a);
        let mut c = None;
        for _ in 0..100 {
            if let Ok(client) = connect(&s).await {
                c = Some(client);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let c = c.expect("a connection after one closed");
        c.simple_query("select 1").await.unwrap();
        b.simple_query("select 1").await.unwrap();
    });
}
