//! Protocol errors are answered as PostgreSQL answers them, over a raw
//! socket: an unknown message type, a frame whose length is negative, too
//! small, over the limit or disagrees with its body, garbage instead of a
//! startup packet, plaintext slipped in before a TLS handshake, and malformed
//! SCRAM messages each get an ErrorResponse (FATAL 08P01, or 28P01 for a
//! wrong proof) before the connection closes. The server never panics on
//! them, does not allocate what a huge length announces, and still logs in a
//! well-behaved client afterwards.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use common::TestServer;
use kura::FileAccess;
use kura_server::{Auth, Credentials, Tls};
use tokio_rustls::rustls;

/// Panics on the server's threads, counted by a hook installed once for the
/// binary: tokio's workers and the unnamed thread each server runs on (the
/// clients here run on the test threads, named after their test).
fn server_panics() -> usize {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().map(str::to_owned);
            if name.is_none_or(|n| n.starts_with("tokio-")) {
                COUNT.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
    COUNT.load(Ordering::SeqCst)
}

fn startup(user: &str) -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec(); // protocol 3.0
    for (k, v) in [("user", user), ("database", "kura")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    m
}

/// A typed frontend message with an honest length.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A typed frontend message whose length field says `len`.
fn lying(kind: u8, len: i32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn connect(addr: SocketAddr) -> TcpStream {
    let sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock
}

/// One backend message: its type and body.
fn read_message(sock: &mut impl Read) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    sock.read_exact(&mut head).ok()?;
    let len = i32::from_be_bytes(head[1..].try_into().unwrap());
    assert!((4..1 << 20).contains(&len), "backend length {len}");
    let mut body = vec![0; len as usize - 4];
    sock.read_exact(&mut body).ok()?;
    Some((head[0], body))
}

/// Reads messages until the server closes the connection; fails if it does
/// not within the read timeout.
fn read_to_close(sock: &mut impl Read) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let mut head = [0u8; 5];
        match sock.read(&mut head[..1]) {
            Ok(0) => return out,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!("the server neither answered nor closed: {e}; so far {out:?}"),
        }
        sock.read_exact(&mut head[1..]).expect("a whole header");
        let len = i32::from_be_bytes(head[1..].try_into().unwrap());
        let mut body = vec![0; len as usize - 4];
        sock.read_exact(&mut body).expect("a whole body");
        out.push((head[0], body));
    }
}

/// The fields of an ErrorResponse body.
fn fields(body: &[u8]) -> HashMap<u8, String> {
    body.split(|&b| b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| (f[0], String::from_utf8_lossy(&f[1..]).into_owned()))
        .collect()
}

/// The last message is an ErrorResponse with severity FATAL and one of
/// `codes`; returns its message text.
fn assert_fatal(what: &str, reply: &[(u8, Vec<u8>)], codes: &[&str]) -> String {
    let Some((kind, body)) = reply.last() else {
        panic!("{what}: closed without an ErrorResponse");
    };
    assert_eq!(*kind, b'E', "{what}: last message {reply:?}");
    let f = fields(body);
    assert_eq!(
        f.get(&b'S').map(String::as_str),
        Some("FATAL"),
        "{what}: {f:?}"
    );
    let code = f.get(&b'C').cloned().unwrap_or_default();
    assert!(codes.contains(&code.as_str()), "{what}: code {code}: {f:?}");
    f.get(&b'M').cloned().unwrap_or_default()
}

/// Sends `bytes` on a fresh connection and reads until it closes.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut sock = connect(addr);
    sock.write_all(bytes).unwrap();
    read_to_close(&mut sock)
}

/// A trust login and then `bad`, answered with FATAL 08P01 and a close.
fn after_login(s: &TestServer, what: &str, bad: &[u8]) -> String {
    let mut bytes = startup("tester");
    bytes.extend_from_slice(bad);
    let reply = exchange(s.addr, &bytes);
    assert_eq!(reply.first().map(|m| m.0), Some(b'R'), "{what}: {reply:?}");
    assert!(reply.iter().any(|m| m.0 == b'Z'), "{what}: not logged in");
    let after_ready = reply.iter().rposition(|m| m.0 == b'Z').unwrap();
    assert_eq!(reply.len(), after_ready + 2, "{what}: {reply:?}");
    assert_fatal(what, &reply, &["08P01"])
}

/// A normal login and query through a real client.
fn still_serves(s: &TestServer, user: &str, password: Option<&str>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = format!(
            "host=127.0.0.1 port={} user={user} dbname=kura",
            s.addr.port()
        );
        if let Some(p) = password {
            conn.push_str(&format!(" password='{p}'"));
        }
        let (c, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
            .await
            .expect("a normal login");
        tokio::spawn(connection);
        let n: i32 = c.query_one("select 1 + 1", &[]).await.unwrap().get(0);
        assert_eq!(n, 2);
    });
}

#[test]
fn unknown_message_types_are_fatal_protocol_violations() {
    let before = server_panics();
    let s = TestServer::trust(|_| {});
    for (kind, text) in [
        (b'Z', "invalid frontend message type 90"),
        (0x01, "invalid frontend message type 1"),
        (b'p', "invalid frontend message type 112"),
        (b'R', "invalid frontend message type 82"),
    ] {
        let m = after_login(&s, "unknown type", &message(kind, b"IT\0"));
        assert_eq!(m, text);
    }
    // The type alone is enough: PostgreSQL answers before reading a length.
    let mut sock = connect(s.addr);
    sock.write_all(&startup("tester")).unwrap();
    while read_message(&mut sock).expect("login").0 != b'Z' {}
    sock.write_all(b"Z").unwrap();
    let m = assert_fatal("a lone type byte", &read_to_close(&mut sock), &["08P01"]);
    assert_eq!(m, "invalid frontend message type 90");
    still_serves(&s, "tester", None);
    assert_eq!(server_panics(), before, "the server panicked");
}

#[test]
fn frames_with_bad_lengths_or_bodies_are_fatal_protocol_violations() {
    let before = server_panics();
    let s = TestServer::trust(|_| {});
    for (what, bad, text) in [
        ("length 3", lying(b'Q', 3, b"x\0"), "invalid message length"),
        ("length 0", lying(b'S', 0, b""), "invalid message length"),
        (
            "negative length",
            lying(b'Q', -5, b"select 1\0"),
            "invalid message length",
        ),
        (
            "length i32::MIN",
            lying(b'd', i32::MIN, b""),
            "invalid message length",
        ),
        // Sync and the other short messages are limited to 10,000 bytes.
        (
            "a 20 kB Sync",
            lying(b'S', 20_000, b""),
            "invalid message length",
        ),
        (
            "a 1 GB Query",
            lying(b'Q', 1 << 30, b"select"),
            "invalid message length",
        ),
        (
            "a 2 GB Bind",
            lying(b'B', i32::MAX, b""),
            "invalid message length",
        ),
        (
            "Sync with a body",
            message(b'S', b"junk"),
            "invalid message format",
        ),
        (
            "Query without its NUL",
            message(b'Q', b"select 1"),
            "invalid message format",
        ),
        (
            "Query with bytes after its NUL",
            message(b'Q', b"select 1\0x"),
            "invalid message format",
        ),
        (
            "Execute cut short",
            message(b'E', b"nope\0\0\0"),
            "invalid message format",
        ),
        (
            "Parse with a parameter count past its end",
            message(b'P', b"\0select $1\0\x7f\xff\0\0\0\x17"),
            "invalid message format",
        ),
        (
            "Bind with a value length past its end",
            message(b'B', b"\0\0\0\0\0\x01\x7f\xff\xff\xff\0\0"),
            "invalid message format",
        ),
        (
            "Bind with a negative value length",
            message(b'B', b"\0\0\0\0\0\x01\xff\xff\xff\xfe\0\0"),
            "invalid message format",
        ),
        (
            "Describe of neither statement nor portal",
            message(b'D', b"X\0"),
            "invalid DESCRIBE message subtype 88",
        ),
        (
            "Close of neither statement nor portal",
            message(b'C', b"X\0"),
            "invalid CLOSE message subtype 88",
        ),
    ] {
        let m = after_login(&s, what, &bad);
        assert_eq!(m, text, "{what}");
    }
    // A message whose length is honest but split over several writes is
    // fine: the checks wait for the whole frame.
    let mut sock = connect(s.addr);
    sock.write_all(&startup("tester")).unwrap();
    while read_message(&mut sock).expect("login").0 != b'Z' {}
    let q = message(b'Q', b"select 42\0");
    for b in &q {
        sock.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut got = Vec::new();
    while let Some((kind, body)) = read_message(&mut sock) {
        got.push(kind);
        if kind == b'D' {
            assert!(body.ends_with(b"42"), "{body:?}");
        }
        if kind == b'Z' {
            break;
        }
    }
    assert_eq!(got, b"TDCZ");
    still_serves(&s, "tester", None);
    assert_eq!(server_panics(), before, "the server panicked");
}

/// The server's resident memory (the server runs in this process).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn huge_declared_lengths_are_not_allocated() {
    let before = server_panics();
    let s = TestServer::trust(|_| {});
    still_serves(&s, "tester", None);
    let rss_before = rss_kib();
    // Over the limit: refused at once, before any of it is sent.
    for _ in 0..20 {
        let m = after_login(&s, "1 GB", &lying(b'Q', 1 << 30, b"select"));
        assert_eq!(m, "invalid message length");
        let m = after_login(&s, "1 GB of copy data", &lying(b'd', 0x4000_0000, b"abc"));
        assert_eq!(m, "invalid message length");
    }
    // Under the limit, as PostgreSQL allows: the server waits for the bytes
    // without reserving what the header announces.
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut sock = connect(s.addr);
        sock.write_all(&startup("tester")).unwrap();
        while read_message(&mut sock).expect("login").0 != b'Z' {}
        sock.write_all(&lying(b'Q', 0x3fff_0000, b"select "))
            .unwrap();
        held.push(sock);
    }
    std::thread::sleep(Duration::from_millis(300));
    let rss_after = rss_kib();
    assert!(
        rss_after < rss_before + 64 * 1024,
        "memory grew from {rss_before} KiB to {rss_after} KiB"
    );
    drop(held);
    still_serves(&s, "tester", None);
    assert_eq!(server_panics(), before, "the server panicked");
}

#[test]
fn garbage_instead_of_a_startup_packet_is_a_fatal_protocol_violation() {
    let before = server_panics();
    let s = TestServer::trust(|_| {});
    let with_len = |len: i32, rest: &[u8]| {
        let mut m = len.to_be_bytes().to_vec();
        m.extend_from_slice(rest);
        m
    };
    for (what, bytes, text) in [
        (
            "an HTTP request",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            "invalid length of startup packet",
        ),
        (
            "length 4",
            with_len(4, b"\0\0\0\0"),
            "invalid length of startup packet",
        ),
        (
            "length -1",
            with_len(-1, &[0; 8]),
            "invalid length of startup packet",
        ),
        (
            "length 1 GB",
            with_len(1 << 30, &startup("tester")[4..]),
            "invalid length of startup packet",
        ),
        (
            "parameters past the terminator",
            with_len(13, b"\0\x03\0\0\0junk"),
            "invalid startup packet layout: expected terminator as last byte",
        ),
        (
            "protocol 9.9",
            with_len(9, b"\0\x09\0\x09\0"),
            "unsupported frontend protocol",
        ),
    ] {
        let reply = exchange(s.addr, &bytes);
        assert_eq!(reply.len(), 1, "{what}: {reply:?}");
        let m = assert_fatal(what, &reply, &["08P01", "0A000"]);
        assert!(m.starts_with(text), "{what}: {m}");
    }
    still_serves(&s, "tester", None);
    assert_eq!(server_panics(), before, "the server panicked");
}

/// A TLS client that trusts any certificate (the test made the one served).
#[derive(Debug)]
struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[test]
fn plaintext_sent_before_the_tls_handshake_is_refused() {
    let before = server_panics();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let tls = Tls::from_pem(
        ck.cert.pem().as_bytes(),
        ck.key_pair.serialize_pem().as_bytes(),
    )
    .expect("TLS setup");
    let s = TestServer::start_with(
        Auth::Trust,
        move |config, _| {
            config.tls = Some(tls);
            FileAccess::Denied
        },
        |_| {},
    );
    // SSLRequest with a startup packet right behind it, in the clear: a man in
    // the middle could have put it there, and it must not count as sent over
    // TLS (PostgreSQL's CVE-2021-23214).
    let mut sock = connect(s.addr);
    let mut bytes = 8i32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&80877103i32.to_be_bytes());
    bytes.extend_from_slice(&startup("tester"));
    sock.write_all(&bytes).unwrap();
    let mut answer = [0u8; 1];
    sock.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"S");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let reply = read_to_close(&mut tls);
    assert_eq!(reply.len(), 1, "{reply:?}");
    let m = assert_fatal("plaintext before TLS", &reply, &["08P01"]);
    assert_eq!(m, "received unencrypted data after SSL request");
    assert_eq!(server_panics(), before, "the server panicked");
}

/// A SCRAM conversation over a raw socket, up to the point of interest.
struct Scram {
    sock: TcpStream,
    client_nonce: String,
}

impl Scram {
    /// Connects as `user` and reads the server's AuthenticationSASL.
    fn start(addr: SocketAddr, user: &str) -> Scram {
        let mut sock = connect(addr);
        sock.write_all(&startup(user)).unwrap();
        let (kind, body) = read_message(&mut sock).expect("AuthenticationSASL");
        assert_eq!((kind, &body[..4]), (b'R', &10i32.to_be_bytes()[..]));
        Scram {
            sock,
            client_nonce: "rOprNGfwEbeRWgbNEkqO".into(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).unwrap();
    }

    /// Sends a proper SASLInitialResponse and returns the server's nonce.
    fn first(&mut self) -> String {
        let client_first = format!("n,,n=,r={}", self.client_nonce);
        self.send(&initial_response(
            "SCRAM-SHA-256",
            Some(client_first.as_bytes()),
        ));
        let (kind, body) = read_message(&mut self.sock).expect("SASLContinue");
        assert_eq!((kind, &body[..4]), (b'R', &11i32.to_be_bytes()[..]));
        let server_first = std::str::from_utf8(&body[4..]).unwrap();
        let nonce = server_first
            .split(',')
            .find_map(|a| a.strip_prefix("r="))
            .expect("r=");
        assert!(nonce.starts_with(&self.client_nonce));
        nonce.to_string()
    }

    fn close(mut self) -> Vec<(u8, Vec<u8>)> {
        read_to_close(&mut self.sock)
    }
}

/// `template` with its NONCE, if any, replaced by `nonce`.
fn with_nonce(template: &[u8], nonce: &str) -> Vec<u8> {
    match template.windows(5).position(|w| w == b"NONCE") {
        Some(at) => [&template[..at], nonce.as_bytes(), &template[at + 5..]].concat(),
        None => template.to_vec(),
    }
}

/// A SASLInitialResponse: the mechanism, then the length (-1: none) and data.
fn initial_response(mechanism: &str, data: Option<&[u8]>) -> Vec<u8> {
    let mut body = mechanism.as_bytes().to_vec();
    body.push(0);
    match data {
        Some(d) => {
            body.extend_from_slice(&(d.len() as i32).to_be_bytes());
            body.extend_from_slice(d);
        }
        None => body.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    message(b'p', &body)
}

#[test]
fn malformed_scram_messages_are_refused_without_panics() {
    let before = server_panics();
    let credentials = Credentials::single(Some("alice"), "secret");
    let s = TestServer::start(Auth::Scram(Arc::new(credentials)), |_| {});
    let auth = ["08P01", "28P01"];

    // The SASLInitialResponse itself.
    let raw = |mech: &[u8], tail: &[u8]| {
        let mut body = mech.to_vec();
        body.extend_from_slice(tail);
        message(b'p', &body)
    };
    let client_first = b"n,,n=,r=abc";
    let initial: Vec<(&str, Vec<u8>)> = vec![
        ("empty", message(b'p', b"")),
        ("mechanism without its NUL", raw(b"SCRAM-SHA-256", b"")),
        ("no data length", raw(b"SCRAM-SHA-256\0", b"")),
        ("a cut data length", raw(b"SCRAM-SHA-256\0", b"\0\0")),
        (
            "data longer than sent",
            raw(b"SCRAM-SHA-256\0", b"\0\0\0\x40n,,n=,r=abc"),
        ),
        (
            "a negative data length",
            raw(b"SCRAM-SHA-256\0", b"\xff\xff\xff\xf0n,,n=,r=abc"),
        ),
        ("bytes after the data", {
            let mut t = (client_first.len() as i32).to_be_bytes().to_vec();
            t.extend_from_slice(client_first);
            t.extend_from_slice(b"junk");
            raw(b"SCRAM-SHA-256\0", &t)
        }),
        ("no data", initial_response("SCRAM-SHA-256", None)),
        ("empty data", initial_response("SCRAM-SHA-256", Some(b""))),
        (
            "an unknown mechanism",
            initial_response("SCRAM-SHA-1", Some(client_first)),
        ),
        (
            "a mechanism not UTF-8",
            raw(b"SCRAM-\xff\0", b"\0\0\0\x0bn,,n=,r=abc"),
        ),
        (
            "client-first not UTF-8",
            initial_response("SCRAM-SHA-256", Some(b"n,,n=,r=\xff\xfe")),
        ),
        (
            "client-first without r=",
            initial_response("SCRAM-SHA-256", Some(b"n,,n=")),
        ),
        (
            "client-first of one field",
            initial_response("SCRAM-SHA-256", Some(b"n")),
        ),
        (
            "channel binding on plain TCP",
            initial_response("SCRAM-SHA-256", Some(b"p=tls-server-end-point,,n=,r=abc")),
        ),
        // Only the header and a little: the server answers without reading on.
        (
            "a 1 MB client-first",
            lying(b'p', 1 << 20, b"SCRAM-SHA-256\0\0\x0f\xff\xf8n,,"),
        ),
        (
            "a 9 kB client-first",
            initial_response("SCRAM-SHA-256", Some(&[b'x'; 9000])),
        ),
    ];
    for (what, bytes) in &initial {
        let mut c = Scram::start(s.addr, "alice");
        c.send(bytes);
        let reply = c.close();
        assert_eq!(reply.len(), 1, "{what}: {reply:?}");
        assert_fatal(what, &reply, &auth);
    }

    // The client-final message, after a proper client-first; NONCE stands
    // for the nonce the server chose.
    let proof = STANDARD.encode([7u8; 32]);
    let finals: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("not UTF-8", b"c=biws,r=NONCE,p=\xff\xfe".to_vec()),
        ("without r=", format!("c=biws,p={proof}").into_bytes()),
        ("without p=", b"c=biws,r=NONCE".to_vec()),
        (
            "a proof not base64",
            b"c=biws,r=NONCE,p=!!not base64!!".to_vec(),
        ),
        (
            "a short proof",
            format!("c=biws,r=NONCE,p={}", STANDARD.encode([7u8; 5])).into_bytes(),
        ),
        (
            "a wrong nonce",
            format!("c=biws,r=someoneelse,p={proof}").into_bytes(),
        ),
        (
            "a wrong channel binding",
            format!("c=eSws,r=NONCE,p={proof}").into_bytes(),
        ),
        (
            "a wrong proof",
            format!("c=biws,r=NONCE,p={proof}").into_bytes(),
        ),
        (
            "a 9 kB proof",
            format!("c=biws,r=NONCE,p={}", "A".repeat(9000)).into_bytes(),
        ),
        ("a 1 MB message", vec![b'x'; 1 << 20]),
    ];
    for (what, template) in &finals {
        let mut c = Scram::start(s.addr, "alice");
        let nonce = c.first();
        let body = with_nonce(template, &nonce);
        if body.len() > 10_000 {
            // Only the header and a little: the server answers without
            // reading on (unread bytes would reset the connection).
            c.send(&lying(b'p', body.len() as i32 + 4, &body[..64]));
        } else {
            c.send(&message(b'p', &body));
        }
        let reply = c.close();
        assert_eq!(reply.len(), 1, "{what}: {reply:?}");
        let m = assert_fatal(what, &reply, &auth);
        if *what == "a wrong proof" {
            assert_eq!(m, "password authentication failed for user \"alice\"");
        }
        if *what == "a 1 MB message" {
            assert_eq!(m, "invalid message length");
        }
    }
    // The exchange may not be skipped or repeated.
    let mut c = Scram::start(s.addr, "alice");
    c.send(&message(b'Q', b"select 1\0"));
    let m = assert_fatal("a query during authentication", &c.close(), &["08P01"]);
    assert_eq!(m, "expected password response, got message type 81");
    let mut c = Scram::start(s.addr, "alice");
    c.first();
    c.send(&initial_response("SCRAM-SHA-256", Some(client_first)));
    assert_fatal("client-first twice", &c.close(), &auth);

    still_serves(&s, "alice", Some("secret"));
    assert_eq!(server_panics(), before, "the server panicked");
}
