//! The client's SASLInitialResponse parsed here, and SCRAM's errors said in PostgreSQL's words.

// pgwire's own parser of this message panics when the data length is missing
// or runs past the message's end; handed an already parsed message, its SCRAM
// exchange uses it as is.

use bytes::BytesMut;
use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_FATAL};
use pgwire::messages::startup::{PasswordMessageFamily, SASLInitialResponse};

/// The first password message of the exchange, parsed: the mechanism's name,
/// then the length of the client's first message (-1: none) and the message,
/// which must end the body.
pub(super) fn initial_response(
    msg: PasswordMessageFamily,
) -> Result<PasswordMessageFamily, PgWireError> {
    let mut body = match msg {
        PasswordMessageFamily::Raw(body) => body,
        parsed => return Ok(parsed),
    };
    let nul = body
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(malformed_initial_response)?;
    if body.len() < nul + 5 {
        return Err(malformed_initial_response());
    }
    let head = body.split_to(nul + 5);
    let auth_method = String::from_utf8_lossy(&head[..nul]).into_owned();
    let len = i32::from_be_bytes(head[nul + 1..].try_into().expect("4 bytes"));
    let data = match len {
        -1 if body.is_empty() => None,
        _ if usize::try_from(len) == Ok(body.len()) => Some(BytesMut::freeze(body)),
        _ => return Err(malformed_initial_response()),
    };
    Ok(PasswordMessageFamily::SASLInitialResponse(
        SASLInitialResponse::new(auth_method, data),
    ))
}

fn malformed_initial_response() -> PgWireError {
    fatal("08P01", "malformed SASLInitialResponse message")
}

/// The error the client gets for a failed exchange (other than a wrong
/// password), and what is logged of it: pgwire's own text quotes the client's
/// message, which is neither PostgreSQL's answer nor fit for the log.
pub(super) fn exchange_error(e: PgWireError) -> PgWireError {
    match e {
        PgWireError::InvalidScramMessage(_) => fatal("08P01", "malformed SCRAM message"),
        PgWireError::UnsupportedSASLAuthMethod(_) => fatal(
            "08P01",
            "client selected an invalid SASL authentication mechanism",
        ),
        other => other,
    }
}

fn fatal(code: &str, message: &str) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_FATAL.into(),
        code.into(),
        message.into(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &[u8]) -> Result<(String, Option<Vec<u8>>), String> {
        match initial_response(PasswordMessageFamily::Raw(BytesMut::from(body))) {
            Ok(PasswordMessageFamily::SASLInitialResponse(r)) => {
                Ok((r.auth_method, r.data.map(|d| d.to_vec())))
            }
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn well_formed_initial_responses() {
        assert_eq!(
            parse(b"SCRAM-SHA-256\0\0\0\0\x03n,,"),
            Ok(("SCRAM-SHA-256".into(), Some(b"n,,".to_vec())))
        );
        assert_eq!(
            parse(b"SCRAM-SHA-256\0\xff\xff\xff\xff"),
            Ok(("SCRAM-SHA-256".into(), None))
        );
        assert_eq!(parse(b"X\0\0\0\0\0"), Ok(("X".into(), Some(vec![]))));
    }

    #[test]
    fn malformed_initial_responses_are_errors() {
        for body in [
            &b""[..],
            b"SCRAM-SHA-256",
            b"SCRAM-SHA-256\0",
            b"SCRAM-SHA-256\0\0\0",
            b"SCRAM-SHA-256\0\0\0\0\x40n,,",
            b"SCRAM-SHA-256\0\0\0\0\x01n,,",
            b"SCRAM-SHA-256\0\xff\xff\xff\xf0n,,",
            b"SCRAM-SHA-256\0\xff\xff\xff\xffn,,",
        ] {
            let e = parse(body).unwrap_err();
            assert!(e.contains("malformed SASLInitialResponse"), "{body:?}: {e}");
        }
    }
}
