//! TLS for client connections (rustls): the server's certificate chain and
//! key, read from PEM files, and the acceptor pgwire runs the handshake with.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;

use crate::error::{ServerError, ServerResult};

/// A server certificate and key, ready to accept TLS connections.
#[derive(Clone)]
pub struct Tls {
    pub(crate) acceptor: TlsAcceptor,
    /// The certificate chain as PEM: SCRAM-SHA-256-PLUS binds the exchange to it.
    pub(crate) cert_pem: Arc<Vec<u8>>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tls { .. }")
    }
}

impl Tls {
    /// Reads a PEM certificate chain (server certificate first) and a PEM
    /// private key (PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(cert: &Path, key: &Path) -> ServerResult<Tls> {
        let read = |p: &Path| {
            std::fs::read(p)
                .map_err(|e| ServerError::Config(format!("cannot read {}: {e}", p.display())))
        };
        Self::from_pem(&read(cert)?, &read(key)?).map_err(|e| match e {
            ServerError::Config(m) => ServerError::Config(format!(
                "{m} (certificate {}, key {})",
                cert.display(),
                key.display()
            )),
            e => e,
        })
    }

    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> ServerResult<Tls> {
        let bad = |m: String| ServerError::Config(m);
        let certs = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("bad PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate found".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| bad(format!("no usable PEM private key: {e}")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(format!("TLS setup: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| bad(format!("certificate and key do not fit: {e}")))?;
        // PostgreSQL 17 clients may start TLS directly (sslnegotiation=direct);
        // they must then agree on this protocol name.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            cert_pem: Arc::new(cert_pem.to_vec()),
        })
    }
}
