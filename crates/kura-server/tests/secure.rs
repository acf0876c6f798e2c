//! A server safe on a network: SCRAM-SHA-256 passwords (psql and
//! tokio-postgres log in with the right one, get 28P01 with a wrong one or an
//! unknown user), TLS with a certificate made here (sslmode=require,
//! verify-full and SCRAM channel binding), TLS required, a clean refusal when
//! TLS is asked of a server without it, no remote listening without passwords,
//! and connections that never log in closed after the authentication timeout.

mod common;

use std::io::Read;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::TestServer;
use kura::FileAccess;
use kura_server::{Auth, Credentials, KuraEngine, Server, ServerConfig, Tls, Verifier};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;
use tokio_rustls::rustls;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `psql` with a connection string and `PGPASSWORD`; returns stdout,
/// stderr and success.
fn psql(conninfo: &str, password: Option<&str>, sql: &str) -> (String, String, bool) {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-A", "-t", "-d", conninfo, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "10")
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    let out = cmd
        .output()
        .expect("psql is installed (apt-get install postgresql-client)");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn conninfo(s: &TestServer, user: &str, extra: &str) -> String {
    format!(
        "host=127.0.0.1 port={} user={user} dbname=kura {extra}",
        s.addr.port()
    )
}

/// Two users: alice from a cleartext line, bob from a PostgreSQL verifier.
fn credentials() -> Credentials {
    let bob = Verifier::from_password("b0b's pw").to_postgres();
    Credentials::parse_password_file(&format!("alice:wonder land\nbob:{bob}\n")).unwrap()
}

fn server(auth: Auth, tls: Option<Tls>, tls_required: bool) -> TestServer {
    TestServer::start_with(
        auth,
        move |config, _| {
            config.tls = tls;
            config.tls_required = tls_required;
            FileAccess::Denied
        },
        |db| common::exec(db, "create table t (x integer); insert into t values (7)"),
    )
}

/// A self-signed certificate for 127.0.0.1 and localhost: (cert PEM, key PEM).
fn self_signed() -> (String, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("certificate");
    (ck.cert.pem(), ck.key_pair.serialize_pem())
}

fn tls_from(cert: &str, key: &str) -> Tls {
    Tls::from_pem(cert.as_bytes(), key.as_bytes()).expect("TLS setup")
}

/// A tokio-postgres TLS connector trusting only `cert`.
fn rustls_connector(cert: &str) -> tokio_postgres_rustls::MakeRustlsConnect {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_slice_iter(cert.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

fn code(e: &tokio_postgres::Error) -> Option<SqlState> {
    e.code().cloned()
}

#[test]
fn scram_with_psql_right_and_wrong_passwords() {
    let s = server(Auth::Scram(Arc::new(credentials())), None, false);
    let (out, err, ok) = psql(
        &conninfo(&s, "alice", ""),
        Some("wonder land"),
        "select x from t",
    );
    assert!(ok, "{err}");
    assert_eq!(out, "7");
    let (out, err, ok) = psql(&conninfo(&s, "bob", ""), Some("b0b's pw"), "select 1");
    assert!(ok, "{err}");
    assert_eq!(out, "1");
    for (user, pw) in [
        ("alice", "wonderland"),
        ("bob", "wonder land"),
        ("eve", "x"),
    ] {
        let (_, err, ok) = psql(&conninfo(&s, user, ""), Some(pw), "select 1");
        assert!(!ok, "{user} got in with a wrong password");
        assert!(
            err.contains(&format!(
                "password authentication failed for user \"{user}\""
            )),
            "{user}: {err}"
        );
    }
    // No password at all: psql cannot answer the challenge.
    let (_, err, ok) = psql(&conninfo(&s, "alice", ""), None, "select 1");
    assert!(!ok);
    assert!(err.contains("password"), "{err}");
}

#[test]
fn scram_with_tokio_postgres_gives_28p01() {
    let s = server(Auth::Scram(Arc::new(credentials())), None, false);
    rt().block_on(async {
        let (c, conn) =
            tokio_postgres::connect(&conninfo(&s, "alice", "password='wonder land'"), NoTls)
                .await
                .expect("right password");
        tokio::spawn(conn);
        let n: i32 = c.query_one("select x from t", &[]).await.unwrap().get(0);
        assert_eq!(n, 7);
        for (user, pw) in [("alice", "wrong"), ("mallory", "wonder land")] {
            let e =
                tokio_postgres::connect(&conninfo(&s, user, &format!("password='{pw}'")), NoTls)
                    .await
                    .err()
                    .expect("refused");
            assert_eq!(code(&e), Some(SqlState::INVALID_PASSWORD), "{user}: {e}");
        }
    });
}

#[test]
fn tls_with_psql_and_tokio_postgres() {
    let (cert, key) = self_signed();
    let dir = tempfile::tempdir().unwrap();
    let cert_file = dir.path().join("server.crt");
    std::fs::write(&cert_file, &cert).unwrap();
    let s = server(
        Auth::Scram(Arc::new(credentials())),
        Some(tls_from(&cert, &key)),
        false,
    );
    // sslmode=require encrypts; verify-full also checks the certificate names
    // 127.0.0.1; channel_binding=require insists on SCRAM-SHA-256-PLUS, bound to
    // this TLS connection.
    let extras = [
        "sslmode=require".to_string(),
        format!("sslmode=verify-full sslrootcert={}", cert_file.display()),
        "sslmode=require channel_binding=require".to_string(),
    ];
    for extra in &extras {
        let (out, err, ok) = psql(
            &conninfo(&s, "alice", extra),
            Some("wonder land"),
            "select 1",
        );
        assert!(ok, "{extra}: {err}");
        assert_eq!(out, "1", "{extra}");
    }
    // A wrong password on TLS is still 28P01; a plain client still gets in.
    let (_, err, ok) = psql(
        &conninfo(&s, "alice", "sslmode=require"),
        Some("nope"),
        "select 1",
    );
    assert!(
        !ok && err.contains("password authentication failed"),
        "{err}"
    );
    let (out, err, ok) = psql(
        &conninfo(&s, "bob", "sslmode=disable"),
        Some("b0b's pw"),
        "select 1",
    );
    assert!(ok, "{err}");
    assert_eq!(out, "1");
    rt().block_on(async {
        let tls = rustls_connector(&cert);
        let (c, conn) = tokio_postgres::connect(
            &conninfo(&s, "alice", "password='wonder land' sslmode=require"),
            tls.clone(),
        )
        .await
        .expect("TLS connection");
        tokio::spawn(conn);
        let n: i32 = c.query_one("select x from t", &[]).await.unwrap().get(0);
        assert_eq!(n, 7);
        // A certificate the client does not trust: the handshake fails.
        let (other, _) = self_signed();
        let e = tokio_postgres::connect(
            &conninfo(&s, "alice", "password='wonder land' sslmode=require"),
            rustls_connector(&other),
        )
        .await
        .err()
        .expect("untrusted certificate refused");
        assert!(e.code().is_none(), "a TLS error, not a server error: {e}");
    });
}

#[test]
fn tls_required_refuses_plain_clients() {
    let (cert, key) = self_signed();
    let s = server(Auth::Trust, Some(tls_from(&cert, &key)), true);
    let (_, err, ok) = psql(&conninfo(&s, "tester", "sslmode=disable"), None, "select 1");
    assert!(!ok);
    assert!(err.contains("requires TLS"), "{err}");
    rt().block_on(async {
        let e = tokio_postgres::connect(&conninfo(&s, "tester", ""), NoTls)
            .await
            .err()
            .expect("plain refused");
        assert_eq!(
            code(&e),
            Some(SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
        );
    });
    let (out, err, ok) = psql(&conninfo(&s, "tester", "sslmode=require"), None, "select 1");
    assert!(ok, "{err}");
    assert_eq!(out, "1");
}

#[test]
fn sslmode_require_without_tls_fails_cleanly() {
    let s = server(Auth::Trust, None, false);
    let (_, err, ok) = psql(&conninfo(&s, "tester", "sslmode=require"), None, "select 1");
    assert!(!ok);
    assert!(err.contains("does not support SSL"), "{err}");
    // The refusal left the server serving.
    let (out, err, ok) = psql(&conninfo(&s, "tester", "sslmode=prefer"), None, "select 1");
    assert!(ok, "{err}");
    assert_eq!(out, "1");
}

#[test]
fn bad_certificate_files_are_refused_with_a_message() {
    let (cert, key) = self_signed();
    let (_, other_key) = self_signed();
    let e = Tls::from_pem(cert.as_bytes(), other_key.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("do not fit"), "{e}");
    let e = Tls::from_pem(b"not a certificate", key.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("no PEM certificate"), "{e}");
    let e = Tls::from_pem(cert.as_bytes(), b"").unwrap_err();
    assert!(e.to_string().contains("private key"), "{e}");
}

#[test]
fn no_remote_listening_without_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let db = kura::Database::open(&dir.path().join("t.db"), Default::default()).unwrap();
    let engine = Arc::new(KuraEngine::new(db));
    rt().block_on(async {
        let config = ServerConfig::new("0.0.0.0:0".parse().unwrap());
        let Err(e) = Server::bind(engine.clone(), config.clone()).await else {
            panic!("bound a remote address without passwords");
        };
        assert!(e.to_string().contains("without passwords"), "{e}");
        let mut with_password = config.clone();
        with_password.auth = Auth::Scram(Arc::new(Credentials::single(None, "pw")));
        assert!(Server::bind(engine.clone(), with_password).await.is_ok());
        let mut insecure = config;
        insecure.allow_remote_without_password = true;
        assert!(Server::bind(engine.clone(), insecure).await.is_ok());
    });
}

#[test]
fn connections_that_never_log_in_are_closed_after_the_auth_timeout() {
    let s = TestServer::start_with(
        Auth::Scram(Arc::new(credentials())),
        |config, _| {
            config.auth_timeout = Duration::from_secs(1);
            FileAccess::Denied
        },
        |_| {},
    );
    // Silent, half a startup packet, and a startup left at the password prompt.
    let silent: &[u8] = b"";
    let half: &[u8] = b"\x00\x00\x00\x28\x00\x03";
    let mut at_prompt = Vec::new();
    let body = b"\x00\x03\x00\x00user\x00alice\x00\x00";
    at_prompt.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    at_prompt.extend_from_slice(body);
    let started = Instant::now();
    let mut socks: Vec<std::net::TcpStream> = [silent, half, &at_prompt]
        .iter()
        .map(|bytes| {
            let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
            std::io::Write::write_all(&mut sock, bytes).unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            sock
        })
        .collect();
    for (i, sock) in socks.iter_mut().enumerate() {
        let mut buf = Vec::new();
        // Closed by the server: read ends (EOF or reset) well before 10 s.
        let _ = sock.read_to_end(&mut buf);
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_secs(5),
            "connection {i} still open after {waited:?}"
        );
        if i == 2 {
            assert_eq!(buf.first(), Some(&b'R'), "the SASL challenge came first");
        }
    }
    assert!(started.elapsed() >= Duration::from_millis(900));
    // An authenticated session is not timed out while idle.
    rt().block_on(async {
        let (c, conn) =
            tokio_postgres::connect(&conninfo(&s, "alice", "password='wonder land'"), NoTls)
                .await
                .unwrap();
        tokio::spawn(conn);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c.simple_query("select 1").await.expect("idle session kept");
    });
}

/// Raises this process's soft limit on open files to its hard limit (the test
/// holds both ends of its connections).
fn raise_open_files_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    lim.rlim_cur
}

#[test]
fn a_thousand_half_open_connections_do_not_lock_a_client_out() {
    let limit = raise_open_files_limit();
    // Two descriptors a connection (both ends live here), and room to spare.
    let flood = 1_000.min((limit.saturating_sub(200) / 2) as usize);
    assert!(flood >= 400, "only {limit} open files allowed");
    let s = TestServer::start_with(
        Auth::Scram(Arc::new(credentials())),
        |config, _| {
            config.max_connections = 10;
            FileAccess::Denied
        },
        |_| {},
    );
    // Each sends 3 bytes of a startup packet and then nothing.
    let socks: Vec<std::net::TcpStream> = (0..flood)
        .map(|_| {
            let mut sock = std::net::TcpStream::connect(s.addr).unwrap();
            std::io::Write::write_all(&mut sock, b"\x00\x00\x00").unwrap();
            sock
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for attempt in 0..3 {
            let started = Instant::now();
            let conn = format!(
                "host=127.0.0.1 port={} user=alice password='wonder land' dbname=kura",
                s.addr.port()
            );
            let (client, connection) = tokio_postgres::connect(&conn, NoTls)
                .await
                .unwrap_or_else(|e| panic!("attempt {attempt}: locked out: {e}"));
            tokio::spawn(connection);
            let v: i32 = client.query_one("select 1", &[]).await.unwrap().get(0);
            assert_eq!(v, 1);
            let took = started.elapsed();
            assert!(took < Duration::from_secs(1), "login took {took:?}");
        }
    });
    drop(socks);
}

#[test]
fn only_a_superuser_changes_database_wide_settings() {
    let s = TestServer::trust(|_| {});
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let connect = |user: &'static str| {
            let conn = format!(
                "host=127.0.0.1 port={} user={user} dbname=kura",
                s.addr.port()
            );
            async move {
                let (client, connection) = tokio_postgres::connect(&conn, NoTls).await.unwrap();
                tokio::spawn(connection);
                client
            }
        };
        let tester = connect("tester").await;
        for sql in [
            "SET tier2 = '1MB'",
            "SET resident_indexes = 'all'",
            "SET buffer_policy = 'lru'",
            "SET llc_protect = 'none'",
        ] {
            let err = tester.batch_execute(sql).await.unwrap_err();
            assert_eq!(
                err.code(),
                Some(&SqlState::INSUFFICIENT_PRIVILEGE),
                "{sql}: {err:?}"
            );
        }
        // Its own session's settings stay its own to change.
        tester
            .batch_execute("SET execution_mode = 'serial'; SET memory_limit = '1GB'")
            .await
            .unwrap();
        let row = tester.simple_query("SHOW is_superuser").await.unwrap();
        assert!(
            matches!(&row[1], tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("off"))
        );
        let v: String = tester
            .query_one("select current_setting('is_superuser')", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(v, "off");
        let admin = connect("kura").await;
        admin
            .batch_execute("SET tier2 = '1MB'; SET tier2 = 'off'")
            .await
            .unwrap();
        let row = admin.simple_query("SHOW is_superuser").await.unwrap();
        assert!(
            matches!(&row[1], tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("on"))
        );
    });
}
