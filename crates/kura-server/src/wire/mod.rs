//! The connection loop around pgwire's pieces, reading and checking each frontend frame before pgwire decodes it.

// `pgwire::tokio::process_socket` ends the connection silently when its
// decoder fails (an unknown type, a bad length) and offers no hook for it:
// its ErrorHandler sees only the handlers' errors. This is the library's loop
// rebuilt from its public pieces (negotiate_tls, process_message,
// process_error), except that it reads the socket itself, so that each frame
// is checked (see `frame`) before pgwire decodes it and a malformed one is
// answered with FATAL, as PostgreSQL answers it.

mod frame;

use std::io;

use bytes::BytesMut;
use futures::SinkExt;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_FATAL};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{
    negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec,
};
use pgwire::tokio::TlsAcceptor;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::codec::{Decoder, Framed};

use frame::{Phase, Violation};

/// Room made in the buffer for each read from the socket (tokio-util's default).
const READ_CHUNK: usize = 8 * 1024;

type Socket<S> = Framed<MaybeTls, PgWireMessageServerCodec<S>>;

/// Serves one client connection to its end.
pub(crate) async fn process_socket<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    handlers: H,
) -> io::Result<()> {
    let Some(mut socket) = negotiate_tls(tcp, tls).await? else {
        // A TLS handshake without TLS configured: PostgreSQL closes silently.
        return Ok(());
    };
    // Bytes read with the SSLRequest came in the clear, yet pgwire would
    // decode them as sent over TLS: a man in the middle could have put them
    // there (PostgreSQL's CVE-2021-23214).
    let mut buf = std::mem::take(socket.read_buffer_mut());
    if socket.is_secure() && !buf.is_empty() {
        let v = Violation::protocol("received unencrypted data after SSL request");
        return refuse(&mut socket, v).await;
    }
    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    loop {
        let message = match read_message(&mut socket, &mut buf).await? {
            Read::Message(m) => m,
            Read::Closed => return Ok(()),
            Read::Refused(v) => return refuse(&mut socket, v).await,
        };
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let is_cancel = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let in_extended_query = match socket.state() {
            pgwire::api::PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let handled = process_message(
            message,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut e) = handled {
            errors.on_error(&socket, &mut e);
            if e.is_fatal() {
                // Not pgwire's process_error: it follows a FATAL error with
                // ReadyForQuery, which PostgreSQL never sends.
                let info = ErrorInfo::from(e);
                socket
                    .send(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await?;
                return socket.close().await;
            }
            process_error(&mut socket, e, in_extended_query).await?;
        }
        if is_cancel {
            return Ok(());
        }
    }
}

enum Read {
    Message(PgWireFrontendMessage),
    /// The client closed the connection (mid-frame, maybe).
    Closed,
    Refused(Violation),
}

/// Reads until `buf` holds a whole frame that passes the checks, and decodes
/// exactly that frame: the bytes are read once into `buf` and split off it,
/// never copied.
async fn read_message<S>(socket: &mut Socket<S>, buf: &mut BytesMut) -> io::Result<Read> {
    loop {
        let phase = Phase::of(socket.state());
        let len = match frame::next_frame(buf, phase) {
            Ok(Some(len)) => len,
            Ok(None) => {
                buf.reserve(READ_CHUNK);
                if socket.get_mut().read_buf(buf).await? == 0 {
                    return Ok(Read::Closed);
                }
                continue;
            }
            Err(v) => return Ok(Read::Refused(v)),
        };
        let mut frame = buf.split_to(len);
        return Ok(match socket.codec_mut().decode(&mut frame) {
            // pgwire reads a 3.0 CancelRequest's key as 4 bytes whatever the
            // length says; the key check decides.
            Ok(Some(m @ PgWireFrontendMessage::CancelRequest(_))) => Read::Message(m),
            Ok(Some(m)) if frame.is_empty() => Read::Message(m),
            Ok(_) => Read::Refused(Violation::format(phase)),
            Err(e) => Read::Refused(decode_error(e)),
        });
    }
}

/// A pgwire decoder's complaint about a frame that passed the checks.
fn decode_error(e: PgWireError) -> Violation {
    tracing::debug!("frontend message refused by the decoder: {e}");
    Violation::protocol("invalid message format")
}

/// Ends the connection with FATAL, as PostgreSQL does on a protocol violation.
async fn refuse<S>(socket: &mut Socket<S>, v: Violation) -> io::Result<()> {
    tracing::info!(peer = %socket.socket_addr(), "closing the connection: {}", v.message);
    let mut info = ErrorInfo::new(SEVERITY_FATAL.into(), v.code.into(), v.message);
    info.severity_nonlocalized = Some(SEVERITY_FATAL.into());
    socket
        .send(PgWireBackendMessage::ErrorResponse(info.into()))
        .await?;
    socket.close().await
}
